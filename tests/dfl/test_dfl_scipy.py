"""LinearProgramModel.from_scipy: a user's scipy LP / MILP (LinearConstraint, Bounds,
integrality) as a PyEPO model, checked against scipy.optimize.milp and linprog themselves."""

import numpy as np
import pyepo
import pytest
import scipy.sparse as sp
import torch
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from optzoo.dfl import LinearProgramModel, precompute


def _random_lp(rng, n=6, m=4):
    """A bounded feasible LP: two-sided rows, one equality row, box bounds around a point."""
    x0 = rng.uniform(0.2, 0.8, n)
    A = rng.standard_normal((m, n))
    lo, hi = A @ x0 - rng.uniform(0.1, 1, m), A @ x0 + rng.uniform(0.1, 1, m)
    hi[0] = np.inf                      # one-sided row
    E = rng.standard_normal((1, n))
    cons = [LinearConstraint(A, lo, hi), LinearConstraint(sp.csr_matrix(E), E @ x0, E @ x0)]
    return cons, Bounds(np.zeros(n), np.ones(n))


@pytest.mark.parametrize("sense", ["min", "max"])
def test_lp_matches_milp_and_linprog(sense):
    rng = np.random.default_rng(1)
    for _ in range(8):
        cons, bounds = _random_lp(rng)
        model = LinearProgramModel.from_scipy(cons, bounds=bounds, sense=sense)
        assert model.num_cost == 6
        c = rng.standard_normal(6)
        model.setObj(c)
        w, z = model.solve()
        s = 1.0 if sense == "min" else -1.0
        ref = milp(s * c, constraints=cons, bounds=bounds)
        assert ref.success and z == pytest.approx(s * ref.fun, abs=1e-6)
        A, lo, hi = cons[0].A, cons[0].lb, cons[0].ub
        E = cons[1].A.toarray()
        fin = np.isfinite(hi)
        lp = linprog(s * c, A_ub=np.vstack([A[fin], -A]), b_ub=np.concatenate([hi[fin], -lo]),
                     A_eq=E, b_eq=cons[1].lb, bounds=list(zip(bounds.lb, bounds.ub, strict=True)))
        assert lp.success and z == pytest.approx(s * lp.fun, abs=1e-6)
        # the returned decision is feasible for the scipy constraints and attains z
        w = w.astype(float)
        assert np.all(A @ w >= lo - 1e-5) and np.all(A @ w <= hi + 1e-5)
        assert E @ w == pytest.approx(cons[1].lb, abs=1e-5)
        assert float(c @ w) == pytest.approx(z, abs=1e-5)


def test_milp_with_tuple_constraints_matches_milp():
    rng = np.random.default_rng(2)
    for _ in range(8):
        W = rng.uniform(1, 5, (2, 8))
        cap = W.sum(1) / 2
        integ = np.array([1, 1, 1, 1, 1, 1, 0, 0])
        model = LinearProgramModel.from_scipy((W, -np.inf, cap), bounds=(0, 1), integrality=integ,
                                              sense="max")
        c = rng.uniform(0, 1, 8)
        model.setObj(c)
        w, z = model.solve()
        ref = milp(-c, constraints=(W, -np.inf, cap), bounds=Bounds(0, 1), integrality=integ)
        assert z == pytest.approx(-ref.fun, abs=1e-6)
        assert np.all(w[:6] == np.round(w[:6])) and np.all(W @ w <= cap + 1e-6)


def test_default_bounds_are_milps_and_relax_drops_integrality():
    # min c^T w, w >= 0 (milp's default bounds), sum w >= 1.5, w integer -> z = 2 * min(c)
    con = LinearConstraint(np.ones((1, 3)), 1.5, np.inf)
    m = LinearProgramModel.from_scipy(con, integrality=1)
    assert np.all(m.lb == 0) and np.all(np.isinf(m.ub))
    m.setObj(np.array([2.0, 1.0, 3.0]))
    assert m.solve()[1] == pytest.approx(2.0)
    r = m.relax()
    r.setObj(np.array([2.0, 1.0, 3.0]))
    assert r.solve()[1] == pytest.approx(1.5)
    free = LinearProgramModel.from_scipy(num_vars=2, bounds=(None, 4), sense="max")
    free.setObj(np.array([1.0, 2.0]))
    assert free.solve()[1] == pytest.approx(12.0)


def test_scipy_model_trains_with_pyepo():
    rng = np.random.default_rng(3)
    cons, bounds = _random_lp(rng)
    model = LinearProgramModel.from_scipy(cons, bounds=bounds)
    x, c = rng.standard_normal((12, 3)), rng.standard_normal((12, 6))
    ds, calls, _ = precompute(model, x, c)
    assert calls == 12 and ds.sols.shape == (12, 6)
    spo = pyepo.func.SPOPlus(model, processes=1)
    net = torch.nn.Linear(3, 6)
    loss = spo(net(ds.feats), ds.costs, ds.sols, ds.objs)
    loss.backward()
    assert torch.isfinite(loss) and net.weight.grad is not None


@pytest.mark.parametrize("kwargs, exc, pattern", [
    ({"constraints": [LinearConstraint(np.ones((1, 3)), 0, 1), LinearConstraint(np.ones((1, 4)), 0, 1)]},
     ValueError, r"'constraints' argument of LinearProgramModel.from_scipy must be matrices with the same number of columns"),
    ({"constraints": LinearConstraint(np.ones((1, 3)), 0, 1), "num_vars": 4},
     ValueError, r"'constraints' .* must be matrices with 4 columns \(num_vars\)\. Got '3 columns'"),
    ({"constraints": (np.ones((2, 3)), [2.0, 0.0], [1.0, 1.0])},
     ValueError, r"'constraints' .* must be lb <= ub row by row\. Got 'item 0, row 0"),
    ({"constraints": (np.ones((2, 3)), [0, 0, 0], 1.0)},
     ValueError, r"'constraints' .* must be lb and ub with one value per row \(2 rows in item 0\)"),
    ({"constraints": (np.ones((1, 2)), np.nan, 1.0)}, ValueError, r"non-NaN sides"),
    ({"constraints": "A <= b"}, TypeError, r"'constraints' .* must be a LinearConstraint"),
    ({"constraints": [np.ones((1, 2))]}, TypeError, r"LinearConstraint objects or \(A, lb, ub\) tuples"),
    ({}, ValueError, r"'num_vars' argument of LinearProgramModel.from_scipy must be given when"),
    ({"num_vars": 2, "bounds": 3.0}, TypeError, r"'bounds' .* must be a scipy.optimize.Bounds"),
    ({"num_vars": 2, "bounds": Bounds([0, 0, 0], 1)}, ValueError,
     r"'lb' argument of LinearProgramModel must be a scalar or one value per variable \(length 2\)"),
    ({"num_vars": 2, "integrality": [1, 1, 1]}, ValueError,
     r"'integrality' argument of LinearProgramModel must be a scalar or one value per variable"),
    ({"num_vars": 2, "integrality": 2}, ValueError, r"'integrality' .* must be 0 \(continuous\) or 1"),
    ({"num_vars": 2, "sense": "maximise"}, ValueError, r"'sense' argument of LinearProgramModel"),
])
def test_from_scipy_bad_input(kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        LinearProgramModel.from_scipy(**kwargs)
