"""Spec section 4, properties 1, 2, 3, 5, 6, 8, 11: the relaxation's facts."""

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optzoo._core.graph import edges_within
from optzoo.dks import local_max_test, mip_dks, pairwise_round, read_graph, upper_bounds
from optzoo.dks.relaxation import (
    fw_gap,
    gradient,
    lipschitz,
    objective,
    pair_endpoints,
    topk_indices,
)


def _gnp(n, p, seed):
    g = nx.gnp_random_graph(n, p, seed=seed)
    if g.number_of_edges() == 0:
        g.add_edge(0, 1)
    return read_graph(g)


def _feasible_fractional(rng, n, k):
    u = rng.random(n) ** 2
    x = k * u / u.sum()
    if x.max() > 1:
        a = (1 - k / n) / (x.max() - k / n)
        x = a * x + (1 - a) * (k / n)
    return x


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), lam=st.floats(0, 3))
def test_loading_shift_on_binary_points(seed, lam):  # property 1
    rng = np.random.default_rng(seed)
    g = _gnp(15, 0.3, seed)
    k = int(rng.integers(1, 15))
    x = np.zeros(15)
    x[rng.choice(15, k, replace=False)] = 1
    assert objective(g.adj, x, lam) - objective(g.adj, x, 0.0) == pytest.approx(lam * k / 2, abs=1e-12)
    assert objective(g.adj, x, 0.0) == edges_within(g.adj, np.flatnonzero(x))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), lam=st.floats(1.0, 3.0), weighted=st.booleans())
def test_pairwise_rounding_never_lowers_f(seed, lam, weighted):  # property 2
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 25))
    g = _gnp(n, 0.3, seed)
    adj = g.adj
    if weighted:
        adj = adj.copy()
        adj.data = rng.uniform(0.1, 2.0, adj.data.size)
        adj = (adj + adj.T) / 2
        lam = lam * float(adj.data.max())  # lam >= max weight
    k = int(rng.integers(1, n))
    x = _feasible_fractional(rng, n, k)
    y = pairwise_round(adj, x, lam)
    assert set(np.unique(y)) <= {0.0, 1.0} and y.sum() == k
    assert objective(adj, y, lam) >= objective(adj, x, lam) - 1e-9


def test_not_tight_below_one_on_complete_graph():  # property 3, spec numbers
    a = read_graph(nx.complete_graph(5)).adj
    x = np.full(5, 3 / 5)
    best = max(objective(a, np.isin(np.arange(5), c).astype(float), 0.5)
               for c in itertools.combinations(range(5), 3))
    assert objective(a, x, 0.5) == pytest.approx(4.05) and best == pytest.approx(3.75)
    assert objective(a, x, 0.5) > best
    best1 = 3 + 1.0 * 3 / 2
    assert objective(a, x, 1.0) == pytest.approx(4.5) == best1


def test_saddle_curvature_and_escape_on_clique():  # property 5
    k, lam = 4, 1.5
    g = read_graph(nx.complete_graph(k + 1))
    x = np.full(k + 1, k / (k + 1))
    gr = gradient(g.adj, x, lam)
    gap, _ = fw_gap(gr, x, k)
    assert gap == pytest.approx(0, abs=1e-12)  # stationary
    u = np.zeros(k + 1)
    u[0], u[1] = 1, -1
    curv = u @ (g.adj @ u + lam * u)
    assert curv == pytest.approx(2 * (lam - 1)) and curv > 0
    (t_lo, gl), (t_hi, gh) = pair_endpoints(x[0], x[1], gr[0], gr[1], 1.0, lam)
    assert max(gl, gh) > 0
    t = t_hi if gh >= gl else t_lo
    assert objective(g.adj, x + t * u, lam) > objective(g.adj, x, lam)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_swap_identity_and_local_max(seed):  # property 6 (identity part; SE-FW part elsewhere)
    rng = np.random.default_rng(seed)
    g = _gnp(14, 0.35, seed)
    k = int(rng.integers(2, 13))
    S = rng.choice(14, k, replace=False)
    i = int(S[0])
    j = int(rng.choice(np.setdiff1d(np.arange(14), S)))
    T = np.append(S[S != i], j)
    inS = np.zeros(14)
    inS[S] = 1
    deg_s = g.adj @ inS
    assert edges_within(g.adj, T) - edges_within(g.adj, S) == pytest.approx(
        deg_s[j] - deg_s[i] - g.adj[i, j])


def test_local_max_test_tie_caveat():
    # C8, S = {7, 0, 1, 4} at lam = 1: stationary with a tie, and swapping 4 -> 6 gains an edge.
    a = read_graph(nx.cycle_graph(8)).adj
    r = local_max_test(a, np.array([0, 1, 4, 7]), 1.0)
    assert r["stationary"] and not r["strict"] and not r["tie_second_order"]
    r = local_max_test(a, np.array([0, 1, 2, 3]), 1.5)
    assert r["strict"]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), k=st.integers(1, 11))
def test_lmo_matches_linprog(seed, k):  # property 8
    from scipy.optimize import linprog

    rng = np.random.default_rng(seed)
    gvec = rng.integers(-3, 4, size=12).astype(float)  # integer values: many ties
    s = topk_indices(gvec, k)
    assert s.size == k and np.all(np.diff(s) > 0)
    lp = linprog(-gvec, A_eq=np.ones((1, 12)), b_eq=[k], bounds=[(0, 1)] * 12)
    assert gvec[s].sum() == pytest.approx(-lp.fun)
    # ties go to the lower index
    thr = np.sort(gvec)[::-1][k - 1]
    tied = np.flatnonzero(gvec == thr)
    chosen = np.intersect1d(s, tied)
    assert np.array_equal(chosen, tied[: chosen.size])


@pytest.mark.parametrize("seed", range(4))
def test_bounds_and_lipschitz(seed):  # property 11
    g = _gnp(30, 0.25, seed)
    lam = 1.0
    L, how = lipschitz(g.adj, lam, seed=seed)
    ev = np.linalg.eigvalsh(g.adj.toarray())
    assert how == "eigsh"
    assert L == pytest.approx(ev[-1] + lam, rel=1e-6) and L >= ev[-1] + lam
    assert ev[-1] >= abs(ev[0]) - 1e-9  # Perron-Frobenius
    for k in (3, 6):
        opt = mip_dks(g, k, time_limit=30)
        ub = upper_bounds(g, k, seed=seed)
        assert str(opt.status) == "optimal"
        for name, v in ub.items():
            assert v >= opt.fun - 1e-9, name


def test_gershgorin_fallback_is_upper_bound():
    g = _gnp(40, 0.2, 3)
    L, how = lipschitz(g.adj, 1.0, method="gershgorin")
    assert how == "gershgorin" and L >= np.linalg.eigvalsh(g.adj.toarray())[-1] + 1.0


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), lam=st.floats(1.0, 3.0))
def test_pair_curvature_is_constant_anywhere(seed, lam):
    """Why `dichotomy` is a check, not a claim (review 2026-12): the second difference of f along
    e_i - e_j is 2(lam - A_ij) at *any* point, stationary or not, so "curvature > 0 at the
    non-integral stationary points met" holds for lam > 1 whatever the landscape."""
    rng = np.random.default_rng(seed)
    g = _gnp(12, 0.4, seed)
    x = _feasible_fractional(rng, 12, 5)  # a random point, in general not stationary
    i, j = (int(v) for v in rng.choice(12, 2, replace=False))
    u = np.zeros(12)
    u[i], u[j] = 1.0, -1.0
    h = 1e-3
    f0, fp, fm = (objective(g.adj, x + s * h * u, lam) for s in (0, 1, -1))
    assert (fp - 2 * f0 + fm) / h**2 == pytest.approx(2 * (lam - g.adj[i, j]), rel=1e-5, abs=1e-6)
