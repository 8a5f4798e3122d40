"""Graphs for the DkS reproduction: planted G(n,p) / SBM, LFR, Holme-Kim, networkx classics,
symmetric stress graphs and ego-Facebook (from the project's shared data folder).

Every generator takes the seed, so each seed of the reproduction sees fresh random graphs.
Nothing is downloaded; when ego-Facebook is absent a Holme-Kim graph of the same size
stands in and the caller records that the fallback was used.
"""

from __future__ import annotations

import numpy as np

from optzoo._core.graph import Graph, read_graph
from optzoo._core.rng import derive_seed
from optzoo.repro.data import find_data_file

__all__ = ["FACEBOOK", "LANDSCAPE_TAG", "facebook", "large_graph", "named_graph", "planted_graph",
           "planted_near_clique", "regular_graph"]

FACEBOOK = "ego-facebook.txt"
#: The seed tag of the landscape families (issue 37): graphs drawn under it were never seen
#: when the SE-FW escape trigger was redesigned (after quick seed 2's planted G(150, p)), so
#: the verdicts on them are on fresh instances at every seed, seed 2 included.
LANDSCAPE_TAG = "landscape-2026-12"


def _unweighted(g) -> Graph:
    import networkx as nx

    h = nx.Graph()
    h.add_nodes_from(g.nodes)
    h.add_edges_from(g.edges())
    return read_graph(h)


def named_graph(name: str) -> Graph:
    import networkx as nx

    if name == "K5":
        return read_graph(nx.complete_graph(5))
    if name == "C8":
        return read_graph(nx.cycle_graph(8))
    if name == "K7":
        return read_graph(nx.complete_graph(7))
    if name == "petersen":  # vertex-transitive: the uniform start is a stationary point
        return read_graph(nx.petersen_graph())
    if name == "K6_in_sparse":  # K_{k+1} (k = 5) hanging off a sparse tree: a symmetric core
        g = nx.random_labeled_tree(40, seed=1)
        g.add_edges_from((40 + i, 40 + j) for i in range(6) for j in range(i + 1, 6))
        g.add_edge(0, 40)
        return read_graph(g)
    makers = {
        "karate": nx.karate_club_graph,
        "les_miserables": nx.les_miserables_graph,
        "florentine": nx.florentine_families_graph,
        "davis": lambda: nx.bipartite.projected_graph(
            nx.davis_southern_women_graph(),
            [n for n, d in nx.davis_southern_women_graph().nodes(data=True) if d["bipartite"] == 0]),
    }
    return _unweighted(makers[name]())  # weights dropped: DkS counts edges


def planted_graph(kind: str, n: int, k0: int, seed: int) -> Graph:
    """G(n, p) or a 3-block SBM with a planted dense block of ``k0`` nodes at random labels."""
    import networkx as nx

    s = derive_seed(seed, "planted", kind, n)
    rng = np.random.default_rng(s)
    if kind == "gnp":
        g = nx.gnp_random_graph(n, 6.0 / n, seed=s)
        members = rng.choice(n, size=k0, replace=False)
        iu = np.triu_indices(k0, 1)
        keep = rng.random(iu[0].size) < 0.8
        g.add_edges_from(zip(members[iu[0][keep]].tolist(), members[iu[1][keep]].tolist(),
                             strict=True))
    elif kind == "sbm":
        rest = n - k0
        sizes = [k0, rest // 2, rest - rest // 2]
        probs = [[0.6, 0.03, 0.03], [0.03, 0.12, 0.02], [0.03, 0.02, 0.12]]
        g = nx.stochastic_block_model(sizes, probs, seed=s)
        g = nx.relabel_nodes(g, dict(zip(range(n), rng.permutation(n).tolist(), strict=True)))
    else:
        raise ValueError(f"unknown planted kind {kind!r}")
    return _unweighted(g)


def large_graph(kind: str, n: int, seed: int) -> tuple[Graph, str]:
    """LFR (falls back to Holme-Kim if networkx's generator fails), Holme-Kim or relaxed
    caveman; returns the graph and the generator actually used."""
    import networkx as nx

    s = derive_seed(seed, "large", kind, n)
    if kind == "lfr":
        try:
            g = nx.LFR_benchmark_graph(n, 2.5, 1.5, 0.1, average_degree=12, max_degree=60,
                                       min_community=20, max_community=120, seed=s,
                                       max_iters=500)
            g.remove_edges_from(nx.selfloop_edges(g))
            return _unweighted(g), "lfr"
        except (nx.ExceededMaxIterations, nx.NetworkXError):
            kind = "holme_kim"
    if kind == "holme_kim":
        return _unweighted(nx.powerlaw_cluster_graph(n, 6, 0.3, seed=s)), "holme_kim"
    if kind == "caveman":
        return _unweighted(nx.relaxed_caveman_graph(n // 25, 25, 0.2, seed=s)), "caveman"
    raise ValueError(f"unknown large graph kind {kind!r}")


def facebook(seed: int) -> tuple[Graph, bool]:
    """ego-Facebook if present (a fixed graph: the same in every seed), else a Holme-Kim
    stand-in of similar size from a fixed seed (so it is the same in every seed too)."""
    path = find_data_file(FACEBOOK)
    if path is not None:
        return read_graph(path), False
    import networkx as nx

    g = nx.powerlaw_cluster_graph(4039, 22, 0.5, seed=derive_seed(0, "facebook-fallback"))
    return _unweighted(g), True


def regular_graph(n: int, d: int, seed: int) -> Graph:
    """A random d-regular graph (ours, issue 37): every node has the same degree, so the
    uniform start (k/n)1 is a non-integral stationary point (all gradients equal) and a saddle
    is met at the start of every run; drawn under :data:`LANDSCAPE_TAG`."""
    import networkx as nx

    return read_graph(nx.random_regular_graph(d, n, seed=derive_seed(seed, LANDSCAPE_TAG, "regular", n, d)))


def planted_near_clique(n: int, k0: int, seed: int, *, max_weight: int = 1,
                        density: float = 0.8) -> Graph:
    """G(n, 6/n) plus a planted block of ``k0`` nodes with edge probability ``density`` (ours,
    issue 37), drawn under :data:`LANDSCAPE_TAG`. Used with k < k0: for lam below the block's
    weighted density, spreading x over the block beats every k-subset (the relaxation is not
    tight), so a control without loading can show it. ``max_weight`` > 1: every edge gets an
    integer weight drawn uniformly from 1..max_weight (a weighted graph; tightness then needs
    lam >= max w, our inference)."""
    import networkx as nx

    s = derive_seed(seed, LANDSCAPE_TAG, "planted", n, k0, max_weight)
    rng = np.random.default_rng(s)
    g = nx.gnp_random_graph(n, 6.0 / n, seed=s)
    members = rng.choice(n, size=k0, replace=False)
    iu = np.triu_indices(k0, 1)
    keep = rng.random(iu[0].size) < density
    g.add_edges_from(zip(members[iu[0][keep]].tolist(), members[iu[1][keep]].tolist(), strict=True))
    if max_weight > 1:
        for u, v in sorted(g.edges()):
            g[u][v]["weight"] = float(rng.integers(1, max_weight + 1))
        return read_graph(g)
    return _unweighted(g)
