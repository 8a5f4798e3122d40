"""TSP and portfolio (the full-scale problems): exact licence-free models against brute force,
closed-form KKT references and PyEPO's data layout; bad input."""

import itertools

import numpy as np
import pyepo
import pytest
import torch

from optzoo.dfl import (
    PortfolioModel,
    TSPModel,
    portfolio_model,
    precompute,
    pyepo_model,
    tsp_model,
    tsp_tour,
)
from optzoo.dfl.models import _risk_active_kkt


def _edges(n):
    return list(itertools.combinations(range(n), 2))


def _tour_cost(c, tour):
    idx = {e: k for k, e in enumerate(_edges(len(tour) - 1))}
    return sum(c[idx[(min(a, b), max(a, b))]] for a, b in zip(tour[:-1], tour[1:], strict=True))


def _brute_tsp(c, n):
    return min(_tour_cost(c, (0, *p, 0)) for p in itertools.permutations(range(1, n)))


def test_edge_layout_matches_pyepo():
    # PyEPO's tspABBase: edges = combinations(nodes, 2); genData: pdist order (the same)
    from scipy.spatial.distance import pdist, squareform

    for n in (3, 5, 10):
        assert tsp_model(n).edges == _edges(n)
        assert tsp_model(n).num_cost == n * (n - 1) // 2
        D = squareform(pdist(np.random.default_rng(n).standard_normal((n, 2))))
        assert np.allclose([D[i, j] for i, j in _edges(n)],
                           pdist(np.random.default_rng(n).standard_normal((n, 2))))
    _, c = pyepo.data.tsp.genData(4, 3, 7, deg=2, noise_width=0.5, seed=1)
    assert c.shape == (4, 21)


@pytest.mark.parametrize("formulation", ["MTZ", "DFJ"])
def test_tsp_optimum_equals_brute_force(formulation):
    rng = np.random.default_rng(0)
    for n in range(3, 8):
        m = tsp_model(n, formulation=formulation)
        _, gen = pyepo.data.tsp.genData(3, 3, n, deg=4, noise_width=0.5, seed=n)
        costs = [*gen, rng.uniform(0, 1, n * (n - 1) // 2),
                 rng.standard_normal(n * (n - 1) // 2)]    # negative costs too (SPO+'s 2c^ - c)
        for c in costs:
            m.setObj(c)
            w, z = m.solve()
            tour = m.getTour(w)                     # raises unless one Hamiltonian cycle
            assert sorted(tour[:-1]) == list(range(n)) and tour[0] == tour[-1] == 0
            assert w.sum() == n and set(np.unique(w)) <= {0.0, 1.0}
            assert z == pytest.approx(float(np.asarray(c, float) @ w), abs=1e-5)
            assert z == pytest.approx(_brute_tsp(np.asarray(c, float), n), abs=1e-5)


def test_elkai_heuristic_is_never_better():
    elkai = pytest.importorskip("elkai")
    n = 10
    _, c = pyepo.data.tsp.genData(6, 5, n, deg=4, noise_width=0.5, seed=2)
    m, mtz = tsp_model(n, formulation="DFJ"), tsp_model(n)
    for row in c:
        m.setObj(row)
        w, z = m.solve()
        D = np.zeros((n, n))
        for k, (i, j) in enumerate(m.edges):
            D[i, j] = D[j, i] = row[k]
        tour = elkai.DistanceMatrix(D.tolist()).solve_tsp()
        assert _tour_cost(row, tour) >= z - 1e-4
    mtz.setObj(c[0])
    m.setObj(c[0])
    assert mtz.solve()[1] == pytest.approx(m.solve()[1], abs=1e-4)


def test_tsp_is_a_pyepo_model_for_its_losses():
    x, c = pyepo.data.tsp.genData(12, 3, 6, deg=2, noise_width=0.5, seed=3)
    m = tsp_model(6, formulation="DFJ")
    ds, calls, _ = precompute(m, x, c)
    assert calls == 12 and isinstance(m, pyepo.model.opt.optModel)
    loss = pyepo.func.SPOPlus(m, processes=1)(torch.randn(12, 15), ds.costs, ds.sols, ds.objs)
    assert torch.isfinite(loss)
    assert isinstance(pyepo_model("tsp", 5, backend="highs"), TSPModel)


def test_tsp_tour_rejects_subtours():
    n = 6
    w = np.zeros(15)
    idx = {e: k for k, e in enumerate(_edges(n))}
    for e in [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5)]:
        w[idx[e]] = 1
    with pytest.raises(ValueError, match=r"'sol' argument of tsp_tour must be one Hamiltonian cycle"):
        tsp_tour(w, n)


# ---------------------------------------------------------------- portfolio

def _exact_portfolio(m, c):
    """Global optimum by enumerating every support (small n): the best feasible vertex, or
    the closed-form risk-active KKT point of some support that meets every KKT condition."""
    n = len(c)
    best = -np.inf
    for k in range(n):
        if m.covariance[k, k] <= m.risk_level:
            best = max(best, c[k])
    for r in range(1, n + 1):
        for S in itertools.combinations(range(n), r):
            sup = np.zeros(n, bool)
            sup[list(S)] = True
            out = _risk_active_kkt(c, m.covariance, m.risk_level, sup)
            if out is not None:
                best = max(best, float(c @ out[0]))
    return best


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7])
def test_enumerated_tours_are_every_tour_once(n):
    import math

    from optzoo.dfl import enumerate_tsp_tours

    T = enumerate_tsp_tours(n)
    assert T.shape == (math.factorial(n - 1) // 2, n * (n - 1) // 2)
    assert len(np.unique(T, axis=0)) == len(T)
    tours = {tuple(tsp_tour(row, n)) for row in T}           # each row one Hamiltonian cycle
    assert len(tours) == len(T)


def test_enumerated_tour_oracle_equals_the_milp_and_brute_force():
    from optzoo.dfl import FeasibleSetModel, enumerate_tsp_tours

    rng = np.random.default_rng(3)
    for n in (5, 7):
        oracle, dfj = FeasibleSetModel(enumerate_tsp_tours(n)), tsp_model(n, formulation="DFJ")
        _, gen = pyepo.data.tsp.genData(4, 3, n, deg=6, noise_width=0.5, seed=n)
        for c in [*gen, rng.standard_normal(n * (n - 1) // 2)]:
            oracle.setObj(c)
            dfj.setObj(c)
            (w, z), (w2, z2) = oracle.solve(), dfj.solve()
            assert z == pytest.approx(z2, abs=1e-9)
            assert z == pytest.approx(_brute_tsp(c, n), rel=1e-6)   # brute force sums float32
            assert np.array_equal(w, w2)
    # the full-scale size: the same decisions as HiGHS DFJ on PyEPO data (deg 6) and on the
    # negative costs SPO+ produces (2 c_hat - c)
    oracle, dfj = FeasibleSetModel(enumerate_tsp_tours(9)), tsp_model(9, formulation="DFJ")
    _, gen = pyepo.data.tsp.genData(6, 5, 9, deg=6, noise_width=0.5, seed=11)
    for c in [*gen, 2 * rng.standard_normal(36) - gen[0]]:
        oracle.setObj(c)
        dfj.setObj(c)
        assert np.array_equal(oracle.solve()[0], dfj.solve()[0])


def test_enumerated_tours_refuse_too_many():
    from optzoo.dfl import enumerate_tsp_tours

    with pytest.raises(ValueError, match=r"'max_points' argument of enumerate_tsp_tours"):
        enumerate_tsp_tours(11)                               # 10!/2 = 1,814,400 tours
    with pytest.raises(ValueError, match=r"'max_points' argument of enumerate_tsp_tours"):
        enumerate_tsp_tours(6, max_points=59)                 # 5!/2 = 60 tours
    assert len(enumerate_tsp_tours(6, max_points=60)) == 60
    with pytest.raises(ValueError, match=r"'num_nodes' argument of enumerate_tsp_tours"):
        enumerate_tsp_tours(2)


def test_portfolio_follows_pyepo_problem():
    cov, _, r = pyepo.data.portfolio.genData(5, 3, 6, deg=2, noise_level=1, seed=4)
    m = portfolio_model(cov)
    assert int(m.modelSense) == int(pyepo.EPO.MAXIMIZE) and m.num_cost == 6
    assert m.risk_level == pytest.approx(2.25 * np.mean(cov))  # PyEPO's risk_level
    m.setObj(r[0])
    w, z = m.solve()
    assert w.sum() == pytest.approx(1.0, abs=1e-6) and (w >= 0).all()
    assert w @ cov @ w <= m.risk_level * (1 + 1e-6)
    assert isinstance(pyepo_model("portfolio", cov, backend="highs"), PortfolioModel)


@pytest.mark.parametrize("n", [3, 5, 7])
def test_portfolio_optimum_equals_support_enumeration_and_kkt(n):
    cov, _, r = pyepo.data.portfolio.genData(20, 5, n, deg=4, noise_level=1, seed=10 + n)
    m = portfolio_model(cov)
    rng = np.random.default_rng(n)
    for c in [*r.astype(float), *(0.1 * rng.standard_normal((10, n)))]:
        m.setObj(c)
        w, z = m.solve()
        s = np.abs(c).max()
        assert z == pytest.approx(_exact_portfolio(m, c), abs=1e-6 * s)
        assert m.kkt_residual(w.astype(float))["max"] < 1e-5


def test_portfolio_n3_against_a_dense_grid():
    cov, _, r = pyepo.data.portfolio.genData(6, 3, 3, deg=2, noise_level=1, seed=21)
    m = portfolio_model(cov)
    t = np.linspace(0, 1, 1201)
    a, b = np.meshgrid(t, t)
    P = np.stack([a.ravel(), b.ravel(), 1 - a.ravel() - b.ravel()], 1)
    P = P[P[:, 2] >= 0]
    P = P[np.einsum("ij,jk,ik->i", P, cov, P) <= m.risk_level]
    for c in r.astype(float):
        m.setObj(c)
        _, z = m.solve()
        grid = float((P @ c).max())
        assert z >= grid - 1e-9                     # never worse than any feasible grid point
        assert z - grid <= 2e-3 * np.abs(c).max()   # and the grid gets close to it


def test_portfolio_kkt_residual_flags_a_suboptimal_point():
    cov, _, r = pyepo.data.portfolio.genData(2, 3, 5, deg=1, noise_level=1, seed=5)
    m = portfolio_model(cov)
    m.setObj(r[0])
    w, _ = m.solve()
    u = np.full(5, 0.2)                             # feasible, not optimal
    assert m.kkt_residual(w.astype(float))["max"] < 1e-6
    assert m.kkt_residual(u)["max"] > 1e-3


def test_portfolio_with_pyepo_losses_and_regret():
    cov, x, r = pyepo.data.portfolio.genData(16, 3, 8, deg=2, noise_level=1, seed=6)
    m = portfolio_model(cov)
    ds, _, _ = precompute(m, x, r)
    loss = pyepo.func.SPOPlus(m, processes=1)(torch.randn(16, 8), ds.costs, ds.sols, ds.objs)
    assert torch.isfinite(loss)
    lin = torch.nn.Linear(3, 8)
    reg = pyepo.metric.regret(lin, m, torch.utils.data.DataLoader(ds, batch_size=8))
    assert reg >= -1e-6


BAD = [
    ("tsp nodes", lambda: tsp_model(2), ValueError,
     r"'num_nodes' argument of TSPModel must be an int in \[3, inf\]. Got 2"),
    ("tsp nodes type", lambda: tsp_model(4.0), TypeError, r"'num_nodes' argument of TSPModel"),
    ("tsp formulation", lambda: tsp_model(4, formulation="GG"), ValueError,
     r"'formulation' argument of TSPModel must be one of 'MTZ', 'DFJ'"),
    ("tsp cost length", lambda: tsp_model(4).setObj(np.ones(5)), ValueError,
     r"'c' argument of TSPModel.setObj must be a cost vector of length 6"),
    ("tsp nan", lambda: tsp_model(4).setObj(np.full(6, np.nan)), ValueError,
     r"'c' argument of TSPModel.setObj must contain only finite values"),
    ("cov not square", lambda: portfolio_model(np.ones((2, 3))), ValueError,
     r"'covariance' argument of PortfolioModel must be a square"),
    ("cov not psd", lambda: portfolio_model(np.array([[1.0, 2.0], [2.0, 1.0]])), ValueError,
     r"'covariance' argument of PortfolioModel must be positive semi-definite"),
    ("cov not symmetric", lambda: portfolio_model(np.array([[1.0, 0.5], [0.0, 1.0]])), ValueError,
     r"'covariance' argument of PortfolioModel must be symmetric"),
    ("cov nan", lambda: portfolio_model(np.full((2, 2), np.nan)), ValueError,
     r"'covariance' argument of PortfolioModel"),
    ("gamma 0", lambda: portfolio_model(np.eye(2), 0.0), ValueError,
     r"'gamma' argument of PortfolioModel must be a finite real number in \(0, inf\)"),
    ("gamma negative", lambda: portfolio_model(np.eye(2), -1.0), ValueError,
     r"'gamma' argument of PortfolioModel"),
    ("gamma too small", lambda: portfolio_model(np.eye(3), 0.5), ValueError,
     r"'gamma' argument of PortfolioModel must be large enough"),
    ("portfolio cost length", lambda: portfolio_model(np.eye(3)).setObj(np.ones(2)), ValueError,
     r"'c' argument of PortfolioModel.setObj must be a cost vector of length 3"),
]


@pytest.mark.parametrize("call,exc,match", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_full_scale_lists_tsp_and_portfolio_and_a_tiny_run_works():
    import dataclasses
    import json

    from optzoo.dfl import repro
    from optzoo.dfl.repro import Config
    from optzoo.dfl.repro.experiment import ASSETS, TSP_NODES, make_data
    from optzoo.repro.claim import NullProgress
    from optzoo.repro.judging import judge_claims

    full = repro.SCALES["full"]
    cells = repro._cells(full)
    # TSP and portfolio at the degrees where the claims are judged, every method on each
    assert {(p, d) for p, d, _ in cells if p in ("tsp", "portfolio")} == \
        {(p, d) for p in ("tsp", "portfolio") for d in (4, 6)}
    assert {p for p, _, _ in cells} == {"shortest_path", "knapsack", "tsp", "portfolio"}
    assert full.seeds >= 5 and len(full.methods) == 9 and full.lrs == repro.SCALES["quick"].lrs
    for scale in ("smoke", "quick"):
        assert {p for p, _ in repro.SCALES[scale].problems} == {"shortest_path", "knapsack"}
    # portfolio 50 assets (spec P4); TSP 9 nodes, one below the spec's P3 (see SCALES)
    assert (TSP_NODES, ASSETS) == (9, 50)
    _, c, tsp_oracle, tsp_factory = make_data("tsp", 4, 4, 90000)
    assert tsp_oracle.num_cost == tsp_factory().num_cost == c.shape[1] == 36
    x, c, oracle, factory = make_data("portfolio", 8, 4, 90000)
    cov, x2, c2 = pyepo.data.portfolio.genData(8, 5, ASSETS, deg=4, noise_level=1.0,
                                               seed=_seed("portfolio", 4))
    assert np.array_equal(x, x2) and np.array_equal(c, c2) and np.allclose(oracle.covariance, cov)
    cfg = Config(problems=(("tsp", 4), ("portfolio", 4, 15)), n_train=10, n_test=8, epochs=1,
                 lrs=(1e-2,), methods=("mse", "spo", "pfyl", "A", "B"), pfyl_samples=1,
                 time_n=8, time_epochs_free=1,
                 time_rounds=1, time_methods=("mse", "spo", "A", "B"), mixtures=2, seeds=2)
    per_seed = [repro.run(cfg, s, NullProgress()) for s in (90000, 90001)]
    rows = [[dataclasses.asdict(r) for r in seed] for seed in per_seed]
    assert json.loads(json.dumps(rows, allow_nan=False)) == rows
    for seed in per_seed:
        reg = [r for r in seed if r.metric == "test_regret"]
        assert {r.part for r in reg} == {"tsp deg=4", "portfolio deg=4"}
        assert all(r.value >= 1e-9 for r in reg)
        assert all(r.value == 0 for r in seed if r.metric == "loop_solver_calls" and r.arm in ("mse", "A", "B"))
    assert len(judge_claims(repro.CLAIMS, per_seed)) == len(repro.CLAIMS)


def _seed(problem, deg, seed=90000):
    from optzoo._core.rng import derive_seed

    return derive_seed(seed, "data", problem, deg) % (2 ** 31)
