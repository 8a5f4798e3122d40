"""The licence-free models: HiGHS LP/MILP against exact enumeration, PyEPO's arc order and
generators, regret against pyepo.metric.regret, and the back-end errors."""

import numpy as np
import pyepo
import pytest
import torch

from optzoo.dfl import (
    FeasibleSetModel,
    LinearProgramModel,
    decision_regret,
    enumerate_grid_paths,
    enumerate_knapsack,
    grid_arcs,
    knapsack_model,
    precompute,
    pyepo_model,
    shortest_path_model,
)


def test_grid_arcs_match_pyepo_and_path_count():
    from pyepo.model.utils import _get_grid_arcs

    for grid in [(2, 3), (5, 5), (3, 4)]:
        assert grid_arcs(grid) == _get_grid_arcs(grid)
    paths = enumerate_grid_paths((5, 5))
    assert paths.shape == (70, 40) and np.all(paths.sum(1) == 8)
    assert len(np.unique(paths, axis=0)) == 70


def test_highs_lp_and_milp_agree_with_enumeration():
    rng = np.random.default_rng(0)
    _, c = pyepo.data.shortestpath.genData(30, 5, (5, 5), deg=4, noise_width=0.5, seed=3)
    sp, en = shortest_path_model((5, 5)), FeasibleSetModel(enumerate_grid_paths((5, 5)))
    W, _, v = pyepo.data.knapsack.genData(20, 5, 12, dim=2, deg=4, noise_width=0.5, seed=3)
    ks, ke = knapsack_model(W, 10.0), FeasibleSetModel(enumerate_knapsack(W, 10.0), sense="max")
    cases = [(sp, en, row) for row in c] + [(sp, en, rng.standard_normal(40)) for _ in range(10)]
    cases += [(ks, ke, row + 0.01 * rng.standard_normal(12)) for row in v]
    cases += [(ks, ke, rng.standard_normal(12)) for _ in range(10)]  # negative values: subsets
    for a, b, cost in cases:
        a.setObj(cost)
        b.setObj(cost)
        (wa, za), (wb, zb) = a.solve(), b.solve()
        assert za == pytest.approx(zb, rel=1e-7, abs=1e-7)
        assert np.array_equal(wa, wb)


def test_knapsack_enumeration_is_every_feasible_subset():
    W = np.array([[3.0, 4.0, 5.0, 6.0], [2.0, 2.0, 6.0, 1.0]])
    sets = enumerate_knapsack(W, [9.0, 7.0])
    brute = [np.array(b, float) for b in np.ndindex(2, 2, 2, 2)
             if (W @ np.array(b) <= [9.0, 7.0]).all()]
    assert {tuple(s) for s in sets} == {tuple(b) for b in brute}


def test_user_lp_from_matrices_is_a_pyepo_model():
    m = LinearProgramModel(3, A_ub=[[1.0, 1.0, 1.0]], b_ub=[2.0], ub=1.0, sense="max")
    assert isinstance(m, pyepo.model.opt.optModel) and m.num_cost == 3
    m.setObj([1.0, 3.0, 2.0])
    w, z = m.solve()
    assert w.tolist() == [0.0, 1.0, 1.0] and z == 5.0
    m2 = m.addConstr([0.0, 1.0, 1.0], 1.0)
    m2.setObj([1.0, 3.0, 2.0])
    assert m2.solve()[1] == 4.0


def test_regret_properties_and_pyepo_metric():
    x, c = pyepo.data.shortestpath.genData(40, 5, (5, 5), deg=4, noise_width=0.5, seed=5)
    m = FeasibleSetModel(enumerate_grid_paths((5, 5)))
    ds, calls, _ = precompute(m, x, c)
    assert calls == 40
    assert decision_regret(ds.costs, ds.costs, ds.objs, m) == pytest.approx(0.0, abs=1e-6)
    g = torch.Generator().manual_seed(0)
    pred = torch.randn(40, 40, generator=g)
    r = decision_regret(pred, ds.costs, ds.objs, m, reduction="none")
    assert (r >= -1e-5).all() and r.max() > 0
    r2 = decision_regret(3.7 * pred, ds.costs, ds.objs, m, reduction="none")
    assert np.allclose(r, r2)  # w*(a c) = w*(c) for a > 0
    lin = torch.nn.Linear(5, 40)
    loader = torch.utils.data.DataLoader(ds, batch_size=16)
    with torch.no_grad():
        p = lin(ds.feats)
    for red in ("normalized", "sum", "mean"):
        ours = decision_regret(p, ds.costs, ds.objs, m, reduction=red)
        theirs = pyepo.metric.regret(lin, m, loader, reduction=red)
        assert ours == pytest.approx(float(theirs), rel=1e-4, abs=1e-6)


def test_knapsack_regret_sign_for_maximisation():
    W, x, c = pyepo.data.knapsack.genData(20, 5, 10, dim=2, deg=2, noise_width=0.5, seed=2)
    m = FeasibleSetModel(enumerate_knapsack(W, 12.0), sense="max")
    ds, _, _ = precompute(m, x, c)
    r = decision_regret(-ds.costs, ds.costs, ds.objs, m, reduction="none")
    assert (r >= -1e-5).all() and r.sum() > 0


def test_missing_backend_names_the_extra():
    import importlib.util

    if importlib.util.find_spec("ortools") is not None:
        pytest.skip("ortools is installed here")
    with pytest.raises(ImportError, match=r"pyepo\[ortools\]"):
        pyepo_model("shortest_path", (5, 5), backend="ortools")


def test_backend_must_be_named_and_highs_needs_nothing():
    with pytest.raises(TypeError):
        pyepo_model("shortest_path", (5, 5))  # no silent Gurobi default
    m = pyepo_model("shortest_path", (3, 3), backend="highs")
    assert isinstance(m, pyepo.model.opt.optModel) and m.num_cost == 12
    with pytest.raises(ValueError, match=r"'backend' argument of pyepo_model must be one of"):
        pyepo_model("shortest_path", (3, 3), backend="cplex")


def test_cost_vector_fast_path_still_rejects_nan_and_inf():
    """setObj's fast path for float arrays (what PyEPO's losses pass) keeps the finiteness rule:
    NaN, inf and inf - inf raise; finite costs whose sum overflows are accepted."""
    m = FeasibleSetModel(np.eye(3))
    for bad in ([1.0, np.nan, 0.0], [np.inf, 0.0, 0.0], [np.inf, -np.inf, 0.0]):
        for dtype in (np.float64, np.float32):
            with pytest.raises(ValueError, match="'c' argument of FeasibleSetModel.setObj must contain only finite"):
                m.setObj(np.array(bad, dtype=dtype))
    big = np.array([1e308, 1e308, -1.0])                     # sum overflows, entries finite
    m.setObj(big)
    assert m.solve()[1] == -1.0
    m.setObj(np.array([3.0, 1.0, 2.0], dtype=np.float32))   # float32 rows become float64
    assert m._c.dtype == np.float64 and m.solve()[1] == 1.0
