"""TALDA as a real torch optimizer: hyperparameters in param_groups, state in self.state[p],
a mid-run state_dict round trip, the step is talda_update; minimax divergence by growth."""

import copy

import pytest
import torch

from optzoo import NotConvergedWarning, Status
from optzoo.talda import TALDA, TwoSidedPL, minimax_solve, talda_solve
from optzoo.talda import optim as talda_optim

QC = TwoSidedPL(2.0, 2.0, 2.0, 2.0, 0.3)


def _players(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.nn.Parameter(torch.randn(3, generator=g, dtype=torch.float64))
    x2 = torch.nn.Parameter(torch.randn(2, generator=g, dtype=torch.float64))
    y = torch.nn.Parameter(torch.randn(3, generator=g, dtype=torch.float64))
    return [x, x2], [y]


def _closure(opt, mins, maxs):
    def closure():
        opt.zero_grad()
        x, x2 = mins
        (y,) = maxs
        loss = (x**2).sum() + 0.5 * (x2**4).sum() + 0.3 * (x * y).sum() - (y**2).sum()
        loss.backward()
        return loss
    return closure


@pytest.mark.parametrize("make", [
    lambda a, b: TALDA(a, b, lr_min=0.1, lr_max=0.2, coupling=0.3),
    lambda a, b: TALDA.from_constants(a, b, QC),
])
def test_talda_mid_run_state_dict_round_trip_gives_identical_trajectory(make):
    mins, maxs = _players()
    opt = make(mins, maxs)
    for _ in range(5):
        opt.step(_closure(opt, mins, maxs))
    sd = copy.deepcopy(opt.state_dict())
    assert "talda" not in opt.state and sd["state"][0]["step"] == 5
    assert {"lr_min", "lr_max", "coupling", "constants"} <= set(sd["param_groups"][0])
    saved = [p.detach().clone() for p in mins + maxs]
    for _ in range(6):
        opt.step(_closure(opt, mins, maxs))
    ref, ref_diag = [p.detach().clone() for p in mins + maxs], opt.diagnostics

    m2 = [torch.nn.Parameter(s.clone()) for s in saved[:2]]
    y2 = [torch.nn.Parameter(saved[2].clone())]
    fresh = TALDA(m2, y2)  # other hyperparameters: the state_dict must bring them
    fresh.load_state_dict(sd)
    for _ in range(6):
        fresh.step(_closure(fresh, m2, y2))
    assert all(torch.equal(a, b) for a, b in zip(m2 + y2, ref, strict=True))
    assert fresh.diagnostics == ref_diag and fresh.diagnostics["step"] == 11


def test_talda_step_calls_talda_update(monkeypatch):
    calls = []
    real = talda_optim.talda_update

    def spy(*a, **k):
        calls.append(k)
        return real(*a, **k)

    monkeypatch.setattr(talda_optim, "talda_update", spy)
    mins, maxs = _players()
    opt = TALDA(mins, maxs, lr_min=0.1, lr_max=0.2, coupling=0.3)
    closure = _closure(opt, mins, maxs)
    closure()
    gx = torch.cat([p.grad.reshape(-1) for p in mins])
    gy = maxs[0].grad.reshape(-1)
    dx, dy, eta, _ = real(gx, gy, M=10.0, K=0.3, L_y=5.0, lam=0.0)
    before = [p.detach().clone() for p in mins + maxs]
    opt.step()
    assert len(calls) == 1 and calls[0]["K"] == 0.3
    assert torch.allclose(torch.cat([(p - b).reshape(-1) for p, b in zip(mins, before, strict=False)]), dx)
    assert torch.allclose(maxs[0] - before[2], dy)
    assert opt.diagnostics["x_step"] == pytest.approx(float(eta))


def test_talda_zero_x_gradient_in_float32_is_not_nan():
    x = torch.nn.Parameter(torch.zeros(2))
    y = torch.nn.Parameter(torch.ones(2))
    opt = TALDA([x], [y])
    x.grad, y.grad = torch.zeros(2), torch.ones(2)
    opt.step()
    assert torch.isfinite(x).all() and opt.diagnostics["x_step"] == 0.0


@pytest.mark.parametrize("solve", [
    lambda f, x, y: talda_solve(f, x, y, lr_min=0.5, lr_max=0.5, coupling=0.0, tol=0.0, max_iter=500),
    lambda f, x, y: minimax_solve(f, x, y, method="gda", lr_x=0.5, lr_y=0.5, tol=0.0, max_iter=500),
])
def test_minimax_growth_beyond_the_bound_is_divergence(solve):
    # f = -x^2 - y^2 ... x descends a concave function: |x| grows geometrically but stays finite
    f = lambda x, y: -(x**2).sum() + (y**2).sum()  # noqa: E731
    with pytest.warns(NotConvergedWarning, match="diverged at iteration"):
        res = solve(f, torch.ones(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64))
    assert res.status is Status.DIVERGED and not res.success and res.nit < 100
