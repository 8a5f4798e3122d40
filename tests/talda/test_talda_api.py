"""User-facing API of optzoo.talda: solvers, optimizers, errors, bookkeeping, symmetry."""

import math

import numpy as np
import pytest
import torch

from optzoo._core.result import Status
from optzoo.talda import (
    AGDA,
    GDA,
    TALDA,
    ExtraGradient,
    NotConvergedWarning,
    OptimisticGDA,
    TwoSidedPL,
    lyapunov_terms,
    minimax_solve,
    talda_solve,
    theory_steps,
)
from optzoo.talda._engine import run_batch
from optzoo.talda.problems import quadratic, robust_ls, sine_family, yang2d

D = torch.float64


def t(*v):
    return torch.tensor(v, dtype=D)


def quad(x, y):
    return (x**2).sum() + 0.3 * (x * y).sum() - (y**2).sum()


QC = TwoSidedPL(2.0, 2.0, 2.0, 2.0, 0.3)


@pytest.mark.parametrize("make", [yang2d, lambda: sine_family(0.3), lambda: quadratic(0.3),
                                  lambda: robust_ls(10.0)])
def test_numpy_gradients_match_autograd(make):
    p = make()
    x, y = p.inits(np.random.default_rng(0), 1)
    xt = torch.tensor(x[0], requires_grad=True)
    yt = torch.tensor(y[0], requires_grad=True)
    val = p.torch_f(xt, yt)
    gx, gy = torch.autograd.grad(val, (xt, yt))
    ngx, ngy = p.grad(x, y)
    assert float(val.detach()) == pytest.approx(float(p.f(x, y)[0]), rel=1e-12, abs=1e-12)
    assert np.allclose(gx.numpy(), ngx[0], atol=1e-12) and np.allclose(gy.numpy(), ngy[0], atol=1e-12)


def test_solver_matches_batched_engine_and_counts_calls():
    p = yang2d()
    calls = []

    def f(x, y):
        calls.append(1)
        return p.torch_f(x, y)

    res = talda_solve(f, t(1.5), t(-1.0), constants=p.constants)
    out = run_batch(p, "talda", [1.0], [1.0], np.array([[1.5]]), np.array([[-1.0]]), max_iter=10_000,
                    terms=lyapunov_terms(p.constants))
    assert res.status == Status.CONVERGED and res.success
    assert res.nfev == len(calls) == res.nit + 1 == res.n_grad_evals == out["calls"][0]
    assert np.allclose(res.history["grad_norm"], out["norms"][:, 0], rtol=1e-9, atol=1e-15)
    S = np.array(res.history["surrogate"])
    assert (np.diff(S) <= 0).all() and len(S) == res.nit + 1 and len(res.history["x_step"]) == res.nit


@pytest.mark.parametrize("method,per", [("gda", 1), ("ttgda", 1), ("ogda", 1), ("agda", 2), ("eg", 2)])
def test_baselines_match_engine_and_count_calls(method, per):
    q = quadratic(0.3, seed=0)
    x, y = q.inits(np.random.default_rng(1), 1)
    calls = []

    def f(a, b):
        calls.append(1)
        return q.torch_f(a, b)

    res = minimax_solve(f, torch.tensor(x[0]), torch.tensor(y[0]), method=method, max_iter=20_000,
                        lr_x=0.5, lr_y=0.7)
    a, b = (res.lr_x, res.lr_y)
    out = run_batch(q, method, [a], [b], x, y, max_iter=20_000)
    assert res.status == Status.CONVERGED
    assert res.nfev == len(calls) == per * res.nit + 1 == out["calls"][0]
    assert np.allclose(res.history["grad_norm"], out["norms"][:, 0], rtol=1e-8, atol=1e-15)


def test_agda_theory_steps_and_not_converged_warning():
    with pytest.warns(NotConvergedWarning):
        res = minimax_solve(quad, t(1.0), t(1.0), method="agda", constants=QC, max_iter=5)
    assert res.status == Status.USER_LIMIT and res.nit == 5
    assert res.lr_x == pytest.approx(QC.mu_y**2 / (18 * QC.ell**3)) and res.lr_y == pytest.approx(1 / QC.ell)
    assert theory_steps("ttgda", QC) == pytest.approx((1 / QC.L_y / (QC.L_y / QC.mu_y) ** 2, 1 / QC.L_y))



@pytest.mark.parametrize("solve", ["talda", "minimax"])
def test_budget_stop_warns_through_the_one_helper_at_the_caller(solve):
    """The budget stop goes through optzoo._core.result.warn_not_converged (talda's own helper of
    that name, with another signature, is gone): same sentence in the warning and the message."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if solve == "talda":
            res = talda_solve(quad, t(1.0), t(1.0), constants=QC, max_iter=3)
        else:
            res = minimax_solve(quad, t(1.0), t(1.0), method="agda", constants=QC, max_iter=3)
    (w,) = [c for c in caught if c.category is NotConvergedWarning]
    owner = "talda_solve" if solve == "talda" else "minimax_solve"
    assert res.status == Status.USER_LIMIT and res.message == str(w.message)
    assert res.message.startswith(f"{owner}: |grad f| = ") and res.message.endswith("after 3 iterations")
    assert w.filename == __file__


@pytest.mark.parametrize("method", ["gda", "eg", "ogda"])
def test_mirror_symmetry(method):
    f = yang2d().torch_f

    def g(u, v):
        return -f(v, u)

    r1 = minimax_solve(f, t(0.7), t(-0.4), method=method, lr_x=0.05, lr_y=0.02, max_iter=30)
    r2 = minimax_solve(g, t(-0.4), t(0.7), method=method, lr_x=0.02, lr_y=0.05, max_iter=30, tol=0.0)
    assert torch.allclose(r1.x, r2.y) and torch.allclose(r1.y, r2.x)


def test_talda_is_deliberately_asymmetric():
    p = yang2d()
    c = p.constants
    mirrored = TwoSidedPL(c.mu_y, c.mu_x, c.L_y, c.L_x, c.L_xy)
    r1 = talda_solve(p.torch_f, t(0.7), t(-0.4), constants=c, max_iter=20, tol=0.0)
    r2 = talda_solve(lambda u, v: -p.torch_f(v, u), t(-0.4), t(0.7), constants=mirrored, max_iter=20, tol=0.0)
    assert not torch.allclose(r1.x, r2.y)  # x is certified, y takes a fixed step: no mirror


def test_practical_mode_and_scaled_mode():
    res = talda_solve(quad, t(1.0, 2.0), t(-1.0, 0.5), lr_min=0.2, lr_max=0.4, coupling=0.1)
    assert res.status == Status.CONVERGED and res.history["surrogate"] == [] and not res.certified
    res = talda_solve(quad, t(1.0), t(1.0), constants=QC, x_scale=2.0)
    assert res.success and not res.certified and res.history["surrogate"] == res.history["W"]


# errors ------------------------------------------------------------------------------------
def test_non_scalar_objective():
    with pytest.raises(ValueError, match="'f' argument of talda_solve must return a 0-dim"):
        talda_solve(lambda x, y: x * y, t(1.0, 2.0), t(1.0, 2.0), constants=QC)
    with pytest.raises(TypeError, match="must return a 0-dim torch tensor. Got float"):
        minimax_solve(lambda x, y: 1.0, t(1.0), t(1.0), lr_x=0.1, lr_y=0.1)


@pytest.mark.parametrize("bad", [torch.tensor([1, 2]), [1.0, 2.0], np.array([1, 2])])
def test_start_must_be_floating(bad):
    with pytest.raises(TypeError, match="'x0' argument of talda_solve must be a floating"):
        talda_solve(quad, bad, t(1.0, 2.0), constants=QC)
    with pytest.raises(TypeError, match="'y0' argument of minimax_solve must be a floating"):
        minimax_solve(quad, t(1.0, 2.0), bad, lr_x=0.1, lr_y=0.1)


@pytest.mark.parametrize("kw,name", [({"lr_x": -1.0, "lr_y": 0.1}, "lr_x"), ({"lr_x": 0.1, "lr_y": 0.0}, "lr_y")])
def test_step_sizes_must_be_positive(kw, name):
    with pytest.raises(ValueError, match=rf"The '{name}' argument of minimax_solve must be a finite real number in \(0, inf\)"):
        minimax_solve(quad, t(1.0), t(1.0), method="gda", **kw)
    with pytest.raises(ValueError, match="'lr_min' argument of talda_solve"):
        talda_solve(quad, t(1.0), t(1.0), lr_min=-1.0, lr_max=0.1, coupling=0.1)
    with pytest.raises(ValueError, match="'lr_min' argument of TALDA"):
        TALDA([torch.zeros(1, requires_grad=True)], [torch.zeros(1, requires_grad=True)], lr_min=0.0)


def test_theory_needs_constants_and_valid_constants():
    with pytest.raises(ValueError, match="'constants' argument of minimax_solve must be a TwoSidedPL when"):
        minimax_solve(quad, t(1.0), t(1.0), method="agda")
    with pytest.raises(ValueError, match="theory steps exist for 'agda' and 'ttgda' only"):
        minimax_solve(quad, t(1.0), t(1.0), method="eg", constants=QC)
    with pytest.raises(ValueError, match="missing: lr_max, coupling"):
        talda_solve(quad, t(1.0), t(1.0), lr_min=0.1)
    with pytest.raises(ValueError, match="'constants' argument of talda_solve must be a TwoSidedPL"):
        talda_solve(quad, t(1.0), t(1.0))
    with pytest.raises(ValueError, match="'mu_x' argument of TwoSidedPL must be <= L_x"):
        TwoSidedPL(3.0, 1.0, 2.0, 2.0, 0.0)
    with pytest.raises(ValueError, match="'method' argument of minimax_solve must be one of"):
        minimax_solve(quad, t(1.0), t(1.0), method="adam", lr_x=0.1, lr_y=0.1)


@pytest.mark.parametrize("solver", ["talda", "agda", "eg"])
def test_nan_objective_diverges_with_message(solver):
    def f(x, y):
        v = quad(x, y)
        return v * float("nan") if float(x.abs().max()) < 0.5 else v

    if solver == "talda":
        res = talda_solve(f, t(1.0), t(1.0), constants=QC)
    else:
        res = minimax_solve(f, t(1.0), t(1.0), method=solver, lr_x=0.2, lr_y=0.2)
    assert res.status == Status.DIVERGED and not res.success
    assert re.search(r"NaN/inf at iteration [1-9]", res.message)
    res = talda_solve(lambda x, y: quad(x, y) / 0.0, t(1.0), t(1.0), constants=QC)
    assert res.status == Status.DIVERGED and "iteration 0" in res.message


# optimizers --------------------------------------------------------------------------------
def _train(opt_factory, steps=300):
    x = torch.nn.Parameter(t(1.0, -2.0))
    y = torch.nn.Parameter(t(0.5, 1.5))
    opt = opt_factory([x], [y])

    def closure():
        opt.zero_grad()
        loss = quad(x, y)
        loss.backward()
        return loss

    for _ in range(steps):
        opt.step(closure)
    return float(torch.cat([x, y]).abs().max()), opt


@pytest.mark.parametrize("factory", [
    lambda a, b: TALDA(a, b, lr_min=0.2, lr_max=0.4, coupling=0.1),
    lambda a, b: TALDA.from_constants(a, b, QC),
    lambda a, b: GDA(a, b, lr_min=0.2, lr_max=0.2),
    lambda a, b: AGDA(a, b, lr_min=0.2, lr_max=0.4),
    lambda a, b: ExtraGradient(a, b, lr_min=0.2, lr_max=0.2),
    lambda a, b: OptimisticGDA(a, b, lr_min=0.1, lr_max=0.1),
])
def test_optimizers_converge_to_saddle(factory):
    err, _ = _train(factory)
    assert err < 1e-8


def test_optimizer_matches_solver_and_tracks_surrogate():
    x0, y0 = t(1.0, -2.0), t(0.5, 1.5)
    res = talda_solve(quad, x0, y0, constants=QC, max_iter=7, tol=0.0)
    _, opt = _train(lambda a, b: TALDA.from_constants(a, b, QC), steps=7)
    x = opt.param_groups[0]["params"][0]
    assert torch.allclose(x.detach(), res.x)
    assert opt.diagnostics["surrogate"] == pytest.approx(res.history["surrogate"][6])
    assert opt.state[x]["surrogate"] == opt.diagnostics["surrogate"]  # kept in self.state[p]
    assert "talda" not in opt.state  # no string key in the per-parameter state


def test_optimizer_state_dict_round_trip_and_errors():
    _, opt = _train(lambda a, b: OptimisticGDA(a, b, lr_min=0.1, lr_max=0.1), steps=3)
    sd = opt.state_dict()
    ps = opt.param_groups[0]["params"], opt.param_groups[1]["params"]
    opt2 = OptimisticGDA(*ps, lr_min=0.1, lr_max=0.1)
    opt2.load_state_dict(sd)
    assert torch.equal(opt2.state[ps[0][0]]["prev_grad"], opt.state[ps[0][0]]["prev_grad"])
    p = torch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="'min_params' argument of GDA must be a non-empty"):
        GDA([], [p])
    with pytest.raises(ValueError, match="'max_params' argument of TALDA must be disjoint"):
        TALDA([p], [p])
    with pytest.raises(ValueError, match="'closure' argument of AGDA.step must be a callable"):
        AGDA([p], [torch.zeros(1, requires_grad=True)]).step()
    assert math.isnan(TALDA([p], [torch.zeros(1, requires_grad=True)]).diagnostics["rho"])


import re  # noqa: E402  (used by the NaN test above)
