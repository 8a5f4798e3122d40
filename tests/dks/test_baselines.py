"""Baselines: MIP vs brute force (property 9), peeling, TPM, eigenvector, restarts."""

import itertools

import networkx as nx
import numpy as np
import pytest

from optzoo._core.graph import edges_within
from optzoo.dks import (
    eigenvector_topk,
    greedy_peeling,
    mip_dks,
    random_restart_fw,
    read_graph,
    truncated_power,
)
from optzoo.dks.baselines import peeling_order


def _brute(g, k):
    return max(edges_within(g.adj, np.array(c)) for c in itertools.combinations(range(g.n), k))


@pytest.mark.parametrize("seed", range(3))
def test_mip_matches_brute_force(seed):  # property 9
    G = nx.gnp_random_graph(11, 0.35, seed=seed)
    G.add_edge(0, 1)
    g = read_graph(G)
    for k in (2, 4, 7):
        res = mip_dks(g, k, time_limit=30)
        assert str(res.status) == "optimal" and res.fun == _brute(g, k)
        # the reported count is recomputed from the edge list
        sub = G.subgraph(res.x.tolist())
        assert sub.number_of_edges() == res.fun


def test_mip_time_limit_reports_gap_or_no_incumbent():
    G = nx.stochastic_block_model([15, 90, 95], [[0.6, .03, .03], [.03, .12, .02], [.03, .02, .12]],
                                  seed=0)
    res = mip_dks(G, 15, time_limit=0.2)
    assert str(res.status) in ("inaccurate", "user_limit", "optimal")
    if str(res.status) == "inaccurate":
        assert res.mip_gap is not None and res.mip_gap > 0
    if str(res.status) == "user_limit":
        assert np.isnan(res.fun) and len(res.x) == 0


def _reference_peel(G, k):
    """Slow reference: delete a min-degree node (lowest label among ties) until k remain."""
    H = G.copy()
    while H.number_of_nodes() > k:
        v = min(H.nodes, key=lambda u: (H.degree(u), u))
        H.remove_node(v)
    return H.number_of_edges()


@pytest.mark.parametrize("seed", range(4))
def test_peeling_properties(seed):
    G = nx.powerlaw_cluster_graph(80, 3, 0.3, seed=seed)
    g = read_graph(G)
    order = peeling_order(g.adj)
    assert sorted(order.tolist()) == list(range(80))
    # every deletion removes a node of minimum current degree
    H = G.copy()
    for v in order[:-1]:
        assert H.degree(int(v)) == min(d for _, d in H.degree())
        H.remove_node(int(v))
    for k in (5, 20):
        res = greedy_peeling(g, k)
        assert len(res.x) == k
        # tie-breaks may differ from the slow reference; both are valid peels
        assert abs(res.fun - _reference_peel(G, k)) <= 0.25 * max(res.fun, 1) + 3


def _fifo_reference_order(adj, stop_at=0):
    """The documented tie rule, written independently: delete the node with the smallest
    (degree, time it reached that degree, id), times 0 at the start (O(n^2), small graphs)."""
    n = adj.shape[0]
    deg = np.diff(adj.indptr).astype(np.int64)
    stamp = np.zeros(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    clock, out = 0, []
    for _ in range(n - stop_at):
        cand = np.flatnonzero(alive)
        v = int(cand[np.lexsort((cand, stamp[cand], deg[cand]))[0]])
        out.append(v)
        alive[v] = False
        for u in adj.indices[adj.indptr[v]:adj.indptr[v + 1]]:
            if alive[u]:
                clock += 1
                deg[u] -= 1
                stamp[u] = clock
    return np.array(out, dtype=np.int64)


def _tie_heavy_graphs():
    yield "cycle", nx.cycle_graph(30)
    yield "complete", nx.complete_graph(12)
    yield "petersen", nx.petersen_graph()
    yield "regular", nx.random_regular_graph(4, 60, seed=1)
    yield "star+path", nx.disjoint_union(nx.star_graph(9), nx.path_graph(15))
    yield "grid", nx.convert_node_labels_to_integers(nx.grid_2d_graph(7, 9))
    yield "isolated", nx.disjoint_union(nx.gnp_random_graph(40, 0.1, seed=2), nx.empty_graph(5))
    for seed in range(3):
        yield f"powerlaw{seed}", nx.powerlaw_cluster_graph(150, 3, 0.3, seed=seed)


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_peeling_order_matches_the_tie_rule(backend):
    if backend == "numba":
        pytest.importorskip("numba")
    for name, G in _tie_heavy_graphs():
        g = read_graph(G)
        for stop in (0, 7):
            ref = _fifo_reference_order(g.adj, stop)
            got = peeling_order(g.adj, stop_at=stop, backend=backend)
            assert np.array_equal(got, ref), (name, stop)


def test_peeling_backends_identical_on_a_larger_graph():
    pytest.importorskip("numba")
    rng = np.random.default_rng(5)
    e = rng.integers(0, 3000, size=(20000, 2))
    e = e[e[:, 0] != e[:, 1]]
    g = read_graph(e)
    assert g.adj.nnz >= 20_000  # "auto" picks numba here
    a = peeling_order(g.adj, stop_at=50, backend="python")
    assert np.array_equal(a, peeling_order(g.adj, stop_at=50, backend="numba"))
    assert np.array_equal(a, peeling_order(g.adj, stop_at=50))


def test_peeling_order_backend_is_checked():
    g = read_graph(nx.path_graph(4))
    with pytest.raises(ValueError, match="'backend' argument of peeling_order"):
        peeling_order(g.adj, backend="cython")


def test_tpm_and_eigen_on_planted_clique():
    rng = np.random.default_rng(1)
    G = nx.gnp_random_graph(200, 0.03, seed=1)
    clique = rng.choice(200, 12, replace=False).tolist()
    G.add_edges_from(itertools.combinations(clique, 2))
    for fn in (truncated_power, eigenvector_topk, greedy_peeling):
        assert sorted(fn(G, 12).x.tolist()) == sorted(clique), fn.__name__


def test_random_restart_uses_budget_and_never_loses_to_first_run():
    G = nx.powerlaw_cluster_graph(300, 3, 0.3, seed=3)
    from optzoo.dks import se_frank_wolfe

    base = se_frank_wolfe(G, 15)
    rr = random_restart_fw(G, 15, time_budget=0.2, seed=0)
    assert rr.restarts >= 2 and rr.fun >= base.fun
