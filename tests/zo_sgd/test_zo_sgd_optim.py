"""ZOSGD: the seed trick, restoration, the estimator's laws (spec 6-8), skipped steps, and the
optimizer's step against the kernel it induces."""

import math
import warnings

import pytest
import torch

from optzoo import NotConvergedWarning
from optzoo.zo_sgd import ZOSGD, zo_directions, zo_projections, zo_sgd_update

F64 = torch.float64


def test_directions_regenerate_from_the_seed():
    ps = [torch.zeros(3, 4), torch.zeros(5, dtype=F64)]
    a = zo_directions(ps, seed=1, step=2, index=0)
    b = zo_directions(ps, seed=1, step=2, index=0)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert [x.dtype for x in a] == [torch.float32, F64]
    c = zo_directions(ps, seed=1, step=3, index=0)
    assert not torch.equal(a[0], c[0])
    r = zo_directions(ps, seed=1, step=2, index=0, distribution="rademacher")
    assert set(torch.cat([x.reshape(-1).double() for x in r]).tolist()) <= {-1.0, 1.0}


@pytest.mark.parametrize("P", [1, 3])
@pytest.mark.parametrize("restore", ["arithmetic", "exact"])
def test_perturbation_restores_the_weights(restore, P):
    # spec 7: a constant loss gives c_p = 0, so what is left after a step is the restoration
    g = torch.Generator().manual_seed(0)
    w = torch.nn.Parameter(0.02 * torch.randn(10000, generator=g))
    w0 = w.detach().clone()
    seen = []

    def closure():
        seen.append(w.detach().clone())
        return torch.tensor(1.0)

    opt = ZOSGD([w], lr=1.0, num_perturbations=P, restore=restore, seed=4)
    opt.step(closure)
    assert len(seen) == 2 * P  # 2P forward passes
    assert (seen[0] - w0).abs().max() > 1e-4  # it did perturb
    if restore == "exact":
        assert torch.equal(w.detach(), w0)  # bit for bit
    else:
        assert (w.detach() - w0).abs().max() < 1e-6  # MeZO's +eps, -2 eps, +eps: a few ulps


def test_mezo_step_equals_the_pure_update():
    """P = 1 with in-place arithmetic restores and updates in one fused pass
    (theta - eps u + (eps - lr c) u): the same step as zo_sgd_update's, to a few ulps."""
    g = torch.Generator().manual_seed(3)
    A = torch.randn(6, 6, generator=g)
    w = torch.nn.Parameter(torch.randn(6, generator=g))
    v = torch.nn.Parameter(torch.randn(2, 3, generator=g))
    w0, v0 = w.detach().clone(), v.detach().clone()

    def closure():
        return (A @ w).square().sum() + v.square().sum()

    opt = ZOSGD([{"params": [w], "lr": 0.01}, {"params": [v], "lr": 0.03}], eps=1e-3, seed=5)
    opt.step(closure)
    c = opt.state[w]["last_projected_grads"]
    (dw,) = zo_sgd_update([w0], c, lr=0.01, seed=5, step=0)
    (_, dv) = zo_sgd_update([w0, v0], c, lr=0.03, seed=5, step=0)
    torch.testing.assert_close(w.detach(), w0 + dw, rtol=0, atol=1e-6)
    torch.testing.assert_close(v.detach(), v0 + dv, rtol=0, atol=1e-6)
    assert not torch.equal(w.detach(), w0)


def test_mezo_step_restores_on_a_raising_or_nonfinite_closure():
    w = torch.nn.Parameter(torch.linspace(-1, 1, 50))
    w0 = w.detach().clone()
    calls = []

    def boom():
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("closure failed")
        return w.sum()

    opt = ZOSGD([w], lr=0.1, seed=0)
    with pytest.raises(RuntimeError, match="closure failed"):
        opt.step(boom)
    assert (w.detach() - w0).abs().max() < 1e-6
    with pytest.warns(NotConvergedWarning, match="skipped"):
        opt.step(lambda: torch.tensor(float("nan")))
    assert (w.detach() - w0).abs().max() < 1e-6 and opt.skipped_steps == 1


def test_coordinate_directions_recover_the_gradient_exactly():
    # spec 6: with U = sqrt(d) I (P = d), (1/P) sum_p (g.u_p) u_p = g to rounding
    d = 7
    g = torch.randn(d, dtype=F64, generator=torch.Generator().manual_seed(1))
    U = math.sqrt(d) * torch.eye(d, dtype=F64)
    ghat = (U * (U.T @ g)[None, :]).sum(1) / d
    torch.testing.assert_close(ghat, g, rtol=0, atol=1e-14)


def test_gradient_error_law_on_a_linear_loss():
    # spec 8: E||g_hat - g||^2 = (d + 1) ||g||^2 / P (Gaussian), within 4 standard errors
    d, P, n = 20, 4, 600
    a = torch.randn(d, dtype=F64, generator=torch.Generator().manual_seed(2))
    w = [torch.zeros(d, dtype=F64)]
    vals = []
    for k in range(n):
        c = [float(zo_directions(w, seed=3, step=k, index=i)[0] @ a) for i in range(P)]
        ghat = -zo_sgd_update(w, c, lr=1.0, seed=3, step=k)[0]
        vals.append(float(((ghat - a) ** 2).sum() / (a ** 2).sum()))
    t = torch.tensor(vals)
    assert abs(float(t.mean()) - (d + 1) / P) < 4 * float(t.std()) / math.sqrt(n)


def test_finite_difference_step_approaches_the_jvp_step():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
    X = torch.randn(6, 3, dtype=F64)
    start = [p.detach().clone() for p in net.parameters()]

    def after(method, eps=1e-3):
        with torch.no_grad():
            for p, s in zip(net.parameters(), start, strict=True):
                p.copy_(s)
        opt = ZOSGD(net.parameters(), lr=0.1, eps=eps, num_perturbations=2, seed=5, method=method,
                    module=net, restore="exact")
        opt.step(lambda: (net(X) ** 2).mean())
        return torch.cat([p.detach().reshape(-1) for p in net.parameters()])

    ref = after("jvp")
    e1, e2 = [float((after("finite_difference", e) - ref).abs().max()) for e in (1e-2, 5e-3)]
    assert 3.0 < e1 / e2 < 5.0


def test_nonfinite_loss_skips_the_step_with_a_warning_and_a_counter():
    w = torch.nn.Parameter(torch.ones(3))
    opt = ZOSGD([w], lr=0.1, seed=0, restore="exact")
    with pytest.warns(NotConvergedWarning, match="skipped") as rec:
        opt.step(lambda: torch.tensor(float("inf")))
    assert rec[0].filename == __file__  # the user's line, not torch.no_grad's wrapper (trial D12)
    assert torch.equal(w.detach(), torch.ones(3)) and opt.skipped_steps == 1
    opt.step(lambda: (w ** 2).sum())
    assert opt.skipped_steps == 1 and not torch.equal(w.detach(), torch.ones(3))
    assert opt.state_dict()["state"][0]["skipped"] == 1


def test_zosgd_step_moves_outputs_by_the_zo_kernel():
    # the optimizer and the kernel share directions: one jvp step changes the outputs by
    # -eta K_ZO G + O(eta^2), K_ZO from zo_projections with the optimizer's seed (step 0)
    from optzoo.tinylm import tiny_gpt2

    model = tiny_gpt2(12, n_layer=1, n_embd=8, n_head=2, n_positions=8, seed=0).double()
    model.set_attn_implementation("eager")
    x = torch.randint(3, 12, (3, 5), generator=torch.Generator().manual_seed(1))
    y = torch.tensor([3, 4, 5])
    P, seed, lr = 8, 7, 1e-4
    z0 = model(x).logits[:, -1].detach()
    G = torch.softmax(z0, 1) - torch.nn.functional.one_hot(y, 12).to(F64)
    Kzo = zo_projections(model, x, num_perturbations=P, seed=seed).kernel()
    opt = ZOSGD(model.parameters(), lr=lr, num_perturbations=P, seed=seed, method="jvp", module=model)
    opt.step(lambda: torch.nn.functional.cross_entropy(model(x).logits[:, -1], y, reduction="sum"))
    dz = model(x).logits[:, -1].detach() - z0
    pred = -lr * (Kzo @ G.reshape(-1)).reshape(3, 12)
    assert float((dz - pred).norm() / pred.norm()) < 1e-2


def test_mezo_fine_tuning_on_the_icl_checkpoint_runs():
    # the docs' example, a few steps: forward passes only, finite losses, weights move
    import numpy as np

    from optzoo.tinylm import icl_batch, load_tiny_lm

    model, _ = load_tiny_lm("icl")
    b = icl_batch(16, k=4, family="shifted", seed=0)
    ids, labels = torch.as_tensor(b.input_ids), torch.as_tensor(b.labels) + 3
    opt = ZOSGD(model.parameters(), lr=1e-3, eps=1e-3, num_perturbations=1, seed=0)
    w0 = model.transformer.h[0].mlp.c_fc.weight.detach().clone()

    def closure():
        return torch.nn.functional.cross_entropy(model(ids).logits[:, -1], labels)

    with warnings.catch_warnings():
        warnings.simplefilter("error", NotConvergedWarning)
        losses = [float(opt.step(closure)) for _ in range(5)]
    assert np.isfinite(losses).all() and opt.state_dict()["state"][0]["calls"] == 10
    assert not torch.equal(model.transformer.h[0].mlp.c_fc.weight, w0)


def test_param_groups_must_share_the_joint_direction_settings():
    a, b = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
    opt = ZOSGD([{"params": [a], "lr": 0.1}, {"params": [b], "eps": 1e-2}], lr=0.2)
    with pytest.raises(ValueError, match=r"'eps' argument of ZOSGD must be the same in every param group"):
        opt.step(lambda: (a ** 2).sum() + (b ** 2).sum())
    opt = ZOSGD([{"params": [a], "lr": 0.0 + 1e-9}, {"params": [b]}], lr=0.2, num_perturbations=2)
    opt.step(lambda: (a ** 2).sum() + (b ** 2).sum())
    assert (a.detach() - 1).abs().max() < 1e-6 < (b.detach() - 1).abs().max()
