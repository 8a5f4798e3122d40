"""Spec section 4, properties 4, 6, 7, 10, 12 and determinism: FW and SE-FW behaviour."""

import itertools

import networkx as nx
import numpy as np
import pytest

from optzoo._core.graph import edges_within
from optzoo.dks import (
    NotConvergedWarning,
    frank_wolfe,
    local_max_test,
    read_graph,
    se_frank_wolfe,
)
from optzoo.dks.frank_wolfe import NumpyOps, fw_core, random_start
from optzoo.dks.relaxation import lipschitz, objective


def _brute(g, k):
    return max(edges_within(g.adj, np.array(c)) for c in itertools.combinations(range(g.n), k))


def _small(seed, n=10, p=0.4):
    G = nx.gnp_random_graph(n, p, seed=seed)
    G.add_edge(0, 1)
    return read_graph(G)


@pytest.mark.parametrize("seed", range(6))
def test_brute_force_small_graphs(seed, capsys):  # property 4
    g = _small(seed)
    hits = total = 0
    for k in range(2, g.n):
        res = se_frank_wolfe(g, k, lam=1.5, seed=seed)
        opt = _brute(g, k)
        assert res.integral and res.final_gap <= 1e-10 * (1 + abs(res.f_relaxed))
        assert res.fun <= opt
        L, _ = lipschitz(g.adj, 1.5)
        for r in range(20):  # logged, not asserted
            out = fw_core(NumpyOps(g.adj, 1.5), k, 1.5, L, x0=random_start(g.n, k, r),
                          record=False)
            hits += edges_within(g.adj, out["nodes"]) == opt
            total += 1
    print(f"seed {seed}: random starts reached the optimum {hits}/{total}")


@pytest.mark.parametrize("lam", [1.5, 2.5])
def test_output_is_strict_local_max_for_noninteger_lam(lam):  # property 6
    g = read_graph(nx.Graph(nx.les_miserables_graph().edges()))
    for k in (5, 12, 30):
        res = se_frank_wolfe(g, k, lam=lam)
        assert res.integral
        S = res.node_indices
        assert local_max_test(g.adj, S, lam)["strict"]
        x = np.zeros(g.n)
        x[S] = 1
        f0 = objective(g.adj, x, lam)
        t = 1e-4
        for i in S[:5]:
            for j in np.setdiff1d(np.arange(g.n), S)[:40]:
                y = x.copy()
                y[i] -= t
                y[j] += t
                assert objective(g.adj, y, lam) < f0


@pytest.mark.parametrize("step", ["short", "exact"])
@pytest.mark.parametrize("seed", range(3))
def test_monotone_and_gap_rate(step, seed):  # property 7
    g = read_graph(nx.powerlaw_cluster_graph(300, 4, 0.3, seed=seed))
    k, lam = 20, 1.0
    res = se_frank_wolfe(g, k, lam=lam, step=step, seed=seed)
    f = np.array(res.f_trace)
    assert np.all(np.diff(f) >= -1e-9 * (1 + np.abs(f[1:])))
    gaps = np.array(res.gap_trace)
    assert np.all(gaps >= 0)
    h0 = res.upper_bound + lam * k / 2 - f[0]
    C = max(2 * h0, res.L * 2 * k)
    t = np.arange(gaps.size)
    assert np.all(np.minimum.accumulate(gaps) <= C / np.sqrt(t + 1))


def test_escapes_fire_and_raise_f():
    res = se_frank_wolfe(nx.complete_graph(5), 3, lam=1.5)
    assert res.n_escapes >= 1
    for e in res.escapes:
        assert e["curvature"] > 0 and e["f_after"] > e["f_before"]


@pytest.mark.parametrize("G,k,lam,edges", [
    (nx.complete_graph(5), 3, 1.0, 3), (nx.complete_graph(5), 3, 1.5, 3),
    (nx.cycle_graph(8), 4, 1.0, 3), (nx.cycle_graph(8), 4, 1.5, 2),
])
def test_known_cases(G, k, lam, edges):  # property 12
    assert se_frank_wolfe(G, k, lam=lam).fun == edges


def test_planted_clique_recovered():
    rng = np.random.default_rng(0)
    G = nx.gnp_random_graph(300, 0.02, seed=0)
    clique = rng.choice(300, 15, replace=False).tolist()
    G.add_edges_from(itertools.combinations(clique, 2))
    res = se_frank_wolfe(G, 15)
    assert sorted(res.x.tolist()) == sorted(clique)


def test_relabelling_and_duplicates_invariance():  # property 10
    G = nx.powerlaw_cluster_graph(120, 3, 0.4, seed=1)
    e = np.array(G.edges())
    base = se_frank_wolfe(e, 10)
    perm = {i: 1000 + 7 * i for i in range(120)}
    rel = se_frank_wolfe(np.vectorize(perm.get)(e), 10)
    assert sorted(perm[v] for v in base.x.tolist()) == sorted(rel.x.tolist())
    dup = se_frank_wolfe(np.concatenate([e, e[:, ::-1], e[:30]]), 10)
    assert np.array_equal(dup.x, base.x) and dup.fun == base.fun


def test_determinism_same_seed():
    G = nx.powerlaw_cluster_graph(200, 3, 0.3, seed=5)
    a, b = se_frank_wolfe(G, 12, seed=3), se_frank_wolfe(G, 12, seed=3)
    assert np.array_equal(a.x, b.x) and a.gap_trace == b.gap_trace and a.L == b.L


def test_max_iter_gives_user_limit_and_warning():
    G = nx.powerlaw_cluster_graph(200, 3, 0.3, seed=5)
    with pytest.warns(NotConvergedWarning, match="max_iter=1"):
        res = frank_wolfe(G, 12, max_iter=1)
    assert str(res.status) == "user_limit" and len(res.x) == 12 and not res.success


def test_plain_fw_may_stop_fractional_on_symmetric_graph():
    res = frank_wolfe(nx.complete_graph(5), 3)
    assert res.stop_reason == "fractional_stationary" and res.n_escapes == 0 and res.fun == 3


def test_torch_fw_path_matches_numpy():
    G = nx.powerlaw_cluster_graph(150, 3, 0.3, seed=2)
    for k, lam in ((8, 1.0), (15, 1.5)):
        a = se_frank_wolfe(G, k, lam=lam)
        b = se_frank_wolfe(G, k, lam=lam, device="cpu")
        assert b.extra["device"] == "cpu" and b.fun == a.fun and b.integral
    c = se_frank_wolfe(nx.cycle_graph(8), 4, device="cpu")
    assert c.fun == 3


def test_x0_validation():
    with pytest.raises(ValueError, match=r"The 'x0' argument of se_frank_wolfe must be"):
        se_frank_wolfe(nx.complete_graph(5), 3, x0=np.ones(5))
