"""The vectorised simulator against torch.optim and against the exact theory."""

import numpy as np
import pytest
import torch

from optzoo.momentum_tracking import (
    DriftingQuadratic,
    run_tracking,
    simulate,
    stationary_mse,
    tracking_error,
    worst_case_drift_gain,
)

torch.set_num_threads(1)

FACTORIES = {
    "torch": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "ema": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.9),
    "nesterov": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
}


@pytest.mark.parametrize("drift", ["random_walk", "constant", "adversarial", "switch"])
@pytest.mark.parametrize("form", ["torch", "ema", "nesterov"])
def test_simulator_equals_torch_optim(form, drift):
    env = DriftingQuadratic(3, kappa=10.0, drift=drift, drift_scale=0.05, noise_var=0.5, period=50, seed=4)
    h = simulate(env, lr=[0.05, 0.1], momentum=[0.5, 0.9], form=form, steps=300, seeds=3, burn_in=100)
    ref = run_tracking(FACTORIES[form], env, steps=300, seeds=3, burn_in=100)
    assert ref.forms == [form] and ref.momentum == [0.9]
    torch.testing.assert_close(h.errors[:, 1], ref.errors[:, 0], rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(h.mse_steady[:, 1], ref.mse_steady[:, 0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("form", ["torch", "ema", "nesterov"])
def test_monte_carlo_pins_the_parametrisation(form):
    env = DriftingQuadratic(curvatures=[1.0], drift_scale=0.01, noise_var=1.0, init_error=0.0, seed=1)
    h = simulate(env, lr=0.1, momentum=0.8, form=form, steps=8000, seeds=32, burn_in=500)
    exact = float(stationary_mse(1.0, 0.1, 0.8, noise_var=1.0, drift_var=0.01, form=form).total)
    assert float(h.mse_steady.mean()) == pytest.approx(exact, rel=0.03)
    others = [float(stationary_mse(1.0, 0.1, 0.8, noise_var=1.0, drift_var=0.01, form=f).total)
              for f in ("torch", "ema", "nesterov") if f != form]
    assert all(abs(o / exact - 1) > 0.1 for o in others)  # the check can tell the forms apart


def test_exact_decomposition_pathwise_and_transient():
    env = DriftingQuadratic(4, kappa=5.0, drift_scale=0.02, noise_var=0.5, init_error=1.5, seed=2)
    kw = dict(lr=[0.2, 0.2, 0.2], momentum=[0.0, 0.7, 0.7], form=["torch", "ema", "nesterov"],
              steps=400, seeds=3, burn_in=0)
    full = simulate(env, **kw)
    tr = simulate(env.replace(noise_var=0.0, drift_scale=0.0), **kw)
    no = simulate(env.replace(init_error=0.0, drift_scale=0.0), **kw)
    dr = simulate(env.replace(init_error=0.0, noise_var=0.0), **kw)
    torch.testing.assert_close(full.final_error, tr.final_error + no.final_error + dr.final_error,
                               rtol=0, atol=1e-12)
    mu = env.curvatures.numpy()
    for g, (b, f) in enumerate(zip(kw["momentum"], kw["form"], strict=False)):
        dec = tracking_error(mu, 0.2, b, noise_var=0.5, drift_var=0.02, init_error=1.5, steps=400, form=f)
        np.testing.assert_allclose(tr.errors[0, g].numpy(), dec.transient, rtol=1e-9, atol=1e-300)


def test_adversarial_run_reaches_worst_case_gain():
    env = DriftingQuadratic(curvatures=[1.0], drift="adversarial", drift_scale=1.0, noise_var=0.0,
                            init_error=0.0)
    h = simulate(env, lr=[0.1, 0.1], momentum=[0.0, 0.9], steps=3000, seeds=1, burn_in=0)
    gains = worst_case_drift_gain(1.0, 0.1, [0.0, 0.9])
    np.testing.assert_allclose(h.final_error[0, :, 0].abs().numpy(), gains, rtol=1e-8)


def test_beta_zero_same_in_every_form_and_determinism():
    env = DriftingQuadratic(3, drift_scale=0.01, seed=7)
    h = simulate(env, lr=0.3, momentum=0.0, form=["torch", "ema", "nesterov"], steps=200, seeds=2)
    torch.testing.assert_close(h.errors[:, 0], h.errors[:, 1], rtol=0, atol=0)
    torch.testing.assert_close(h.errors[:, 0], h.errors[:, 2], rtol=0, atol=0)
    h2 = simulate(env, lr=0.3, momentum=0.0, form=["torch", "ema", "nesterov"], steps=200, seeds=2)
    assert torch.equal(h.errors, h2.errors)
    h3 = simulate(env.replace(seed=8), lr=0.3, momentum=0.0, steps=200, seeds=2)
    assert not torch.equal(h.errors[:, :1], h3.errors)


def test_run_tracking_flags_divergence():
    env = DriftingQuadratic(2, seed=0)
    with pytest.warns(RuntimeWarning, match="diverged"):
        h = run_tracking(lambda p: torch.optim.SGD(p, lr=5.0, momentum=0.9), env, steps=2000, seeds=2)
    assert h.diverged.all()


@pytest.mark.parametrize("call, exc, match", [
    (lambda env: simulate(env, lr=4.0, momentum=0.9), ValueError,
     r"'lr' argument of simulate must be in \(0, 3\.8\) for momentum=0\.9.*stable range"),
    (lambda env: simulate(env, lr=0.1, momentum=1.0), ValueError, r"'momentum'.*\[0, 1\)\. Got 1\.0"),
    (lambda env: simulate(env, lr=[0.1, 0.2], momentum=[0.1, 0.2, 0.3]), ValueError, r"'lr' argument of simulate"),
    (lambda env: simulate("env", lr=0.1), TypeError, r"'env' argument of simulate must be a DriftingQuadratic"),
    (lambda env: run_tracking(lambda p: "x", env, steps=10), TypeError, r"returning a torch\.optim\.Optimizer"),
    (lambda env: run_tracking(lambda p: torch.optim.SGD([{"params": p}, {"params": [torch.zeros(1, requires_grad=True)]}], lr=0.1),
                              env, steps=10), ValueError, "exactly one param group"),
    (lambda env: DriftingQuadratic(3, curvatures=[1.0, -1.0]), ValueError, r"'curvatures'.*Got -1\.0"),
    (lambda env: DriftingQuadratic(3, drift="brownian"), ValueError, r"'drift' argument of DriftingQuadratic"),
    (lambda env: DriftingQuadratic(3, noise_var=float("inf")), ValueError, r"'noise_var'.*Got inf"),
    (lambda env: simulate(env, lr=0.1, device="banana"), ValueError,  # trial 2, item 8
     r"The 'device' argument of simulate must be a torch device available on this machine"),
])
def test_bad_input(call, exc, match):
    env = DriftingQuadratic(2, seed=0)
    with pytest.raises(exc, match=match):
        call(env)


def test_d_and_curvatures_must_agree():  # issue 17, item 5: d = 2 was set silently
    with pytest.raises(ValueError, match=r"The 'curvatures' argument of DriftingQuadratic must be "
                                         r"of length d = 3 .*Got '2 values'\."):
        DriftingQuadratic(3, curvatures=[1.0, 2.0])
    assert DriftingQuadratic(2, curvatures=[1.0, 2.0]).d == 2
    assert DriftingQuadratic(curvatures=[1.0, 2.0]).d == 2
    assert DriftingQuadratic().d == 20
    iso = DriftingQuadratic(3, curvatures=0.5)
    assert iso.d == 3 and iso.curvatures.tolist() == [0.5, 0.5, 0.5]
