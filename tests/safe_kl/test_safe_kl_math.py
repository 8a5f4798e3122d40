"""Property tests of the Safe-KL LogSumExp (spec section 4)."""

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from optzoo.safe_kl import (
    exact_logsumexp,
    f_rho,
    kappa_rho,
    kl_dro_loss,
    safe_alpha,
    safe_kl_divergence,
    safe_kl_logsumexp,
    sumexp_loss,
)

torch.set_num_threads(1)


def _phi(seed=0, n=1000, scale=2.0):
    return torch.as_tensor(np.random.default_rng(seed).normal(0, scale, size=n))


def test_conjugate_form_equals_bisection_value():
    phi = _phi(1, n=30, scale=1.5).numpy()
    rho, n = 0.1, 30
    g = float(safe_kl_logsumexp(torch.as_tensor(phi), rho=rho))
    # max over densities t in [0, 1/rho] with mean 1 of mean(phi t) - mean f_rho(t)
    obj = lambda t: -(np.mean(phi * t) - np.mean(f_rho(np.clip(t, 0, 1 / rho), rho)))  # noqa: E731
    res = minimize(obj, np.ones(n), method="SLSQP", bounds=[(0, 1 / rho)] * n,
                   constraints=[{"type": "eq", "fun": lambda t: t.mean() - 1}],
                   options=dict(ftol=1e-14, maxiter=1000))
    assert abs(-res.fun - g) < 1e-6


def test_below_lse_monotone_in_rho_and_close():
    phi = _phi()
    F = float(exact_logsumexp(phi))
    vals = [float(safe_kl_logsumexp(phi, rho=r, normalized=True)) for r in (0.1, 1e-2, 1e-3, 1e-4)]
    assert all(v <= F for v in vals)
    assert all(a < b for a, b in zip(vals, vals[1:], strict=False))
    assert F - vals[2] < 1e-2
    # the unnormalised G_rho differs by exactly kappa_rho and stays below F + kappa_rho
    g = float(safe_kl_logsumexp(phi, rho=1e-3))
    assert g - vals[2] == pytest.approx(kappa_rho(1e-3), abs=1e-12)
    assert g <= F + kappa_rho(1e-3)


@pytest.mark.filterwarnings("ignore:rho=")
def test_spike_numbers():
    phi = torch.zeros(100, dtype=torch.float64)
    phi[0] = 50.0
    assert float(exact_logsumexp(phi)) == pytest.approx(50 - math.log(100))
    got = [float(safe_kl_logsumexp(phi, rho=r, normalized=True)) for r in (0.5, 0.1, 0.01, 1e-3)]
    assert got == pytest.approx([0.99, 4.77, 44.40, 45.34], abs=6e-3)


def test_cvar_limit():
    x = _phi(3, n=10_000, scale=1.0)
    cvar = float(x.sort().values[-1000:].mean())
    v = float(safe_kl_logsumexp(x, rho=0.1, tau=1e-3, normalized=True))
    assert abs(v - cvar) < 5e-3


def test_shift_equivariance():
    phi = _phi(4, n=200)
    for c in (-3.0, 7.5):
        assert float(safe_kl_logsumexp(phi + c, rho=1e-2)) == pytest.approx(float(safe_kl_logsumexp(phi, rho=1e-2)) + c, abs=1e-9)
        assert float(safe_alpha(phi + c, rho=1e-2)) == pytest.approx(float(safe_alpha(phi, rho=1e-2)) + c, abs=1e-9)


def test_gradient_weights_and_envelope():
    phi = _phi(5, n=300).requires_grad_()
    rho = 1e-2
    val = safe_kl_logsumexp(phi, rho=rho)
    (g,) = torch.autograd.grad(val, phi)
    a = safe_alpha(phi.detach(), rho=rho)
    expect = torch.sigmoid(phi.detach() - a + math.log(rho)) / (300 * rho)
    assert torch.allclose(g, expect, atol=1e-12)
    assert float(g.min()) > 0 and float(g.max()) < 1 / (300 * rho)
    assert float(g.sum()) == pytest.approx(1.0, abs=1e-9)
    # envelope: surrogate gradient at alpha* equals the gradient of the exact value (finite differences)
    e = torch.zeros(300, dtype=torch.float64)
    e[7] = 1e-6
    fd = (float(safe_kl_logsumexp(phi.detach() + e, rho=rho)) - float(safe_kl_logsumexp(phi.detach() - e, rho=rho))) / 2e-6
    assert fd == pytest.approx(float(g[7]), rel=1e-5)


def test_joint_convexity_midpoint_and_hessian_psd():
    rng = np.random.default_rng(6)
    X = torch.as_tensor(rng.normal(size=(50, 3)))
    y = torch.as_tensor(rng.normal(size=50))

    def L(theta):
        w, a = theta[:3], theta[3]
        return kl_dro_loss((X @ w - y) ** 2, a, rho=0.05)

    for _ in range(20):
        t1, t2 = torch.as_tensor(rng.normal(size=4)), torch.as_tensor(rng.normal(size=4))
        # (X w - y)^2 is convex and the softplus form is convex nondecreasing in it
        assert float(L((t1 + t2) / 2)) <= 0.5 * (float(L(t1)) + float(L(t2))) + 1e-12
    H = torch.autograd.functional.hessian(L, torch.as_tensor(rng.normal(size=4)))
    assert float(torch.linalg.eigvalsh(H).min()) > -1e-10


def test_no_overflow_float32_while_sumexp_overflows():
    s = torch.tensor([1e4, 0.0, 5.0], dtype=torch.float32, requires_grad=True)
    a = torch.zeros((), requires_grad=True)
    loss = safe_kl_logsumexp(s, a, rho=1e-2)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(s.grad).all() and torch.isfinite(a.grad)
    assert not torch.isfinite(sumexp_loss(s.detach(), 0.0))


def test_minibatch_gradient_is_unbiased():
    rng = np.random.default_rng(7)
    s = torch.as_tensor(rng.normal(size=12) * 3)
    a = torch.tensor(0.3, dtype=torch.float64)
    sr, ar = s.clone().requires_grad_(), a.clone().requires_grad_()
    gs_full, ga_full = torch.autograd.grad(safe_kl_logsumexp(sr, ar, rho=0.05), [sr, ar])
    gs, ga = torch.zeros_like(s), torch.zeros((), dtype=torch.float64)
    # uniform sampling of one of 4 disjoint batches of 3: the expected gradient is the average
    for b in range(4):
        sr, ar = s.clone().requires_grad_(), a.clone().requires_grad_()
        g1, g2 = torch.autograd.grad(safe_kl_logsumexp(sr[3 * b:3 * b + 3], ar, rho=0.05), [sr, ar])
        gs += g1 / 4
        ga += g2 / 4
    assert torch.allclose(gs, gs_full, atol=1e-14) and torch.allclose(ga, ga_full, atol=1e-14)


def test_conjugacy_and_kappa():
    rho = 0.2
    s = np.linspace(-4, 4, 41)
    g = np.log1p(rho * np.exp(s)) / rho
    for t in np.linspace(0.01, 1 / rho - 0.01, 30):
        assert np.all(f_rho(t, rho) + g >= t * s - 1e-12)
    t_star = np.exp(s) / (1 + rho * np.exp(s))
    assert np.allclose(f_rho(t_star, rho) + g, t_star * s, atol=1e-10)
    ks = [kappa_rho(r) for r in (0.5, 0.1, 1e-3, 1e-6)]
    assert all(0 < k < 1 for k in ks) and ks[-1] == pytest.approx(1.0, abs=1e-5)
    assert all(a < b for a, b in zip(ks, ks[1:], strict=False))


def test_divergence_dominates_kl_and_caps():
    rng = np.random.default_rng(8)
    q = rng.dirichlet(np.ones(10))
    p = rng.dirichlet(np.ones(10))
    kl = float(np.sum(p * np.log(p / q)))
    rho = 0.01
    if np.max(p / q) < 1 / rho:
        assert safe_kl_divergence(p, q, rho=rho) >= kl - 1e-12
    assert safe_kl_divergence(q, q, rho=rho) == pytest.approx(0.0, abs=1e-12)
    spike = np.zeros(10)
    spike[0] = 1.0
    assert safe_kl_divergence(spike, np.full(10, 0.1), rho=0.5) == float("inf")


def test_weights_and_groups():
    s = torch.as_tensor(np.random.default_rng(9).normal(size=(4, 6)))
    w = torch.full((6,), 1 / 6, dtype=torch.float64)
    assert torch.allclose(safe_kl_logsumexp(s, rho=0.01, weights=w), safe_kl_logsumexp(s, rho=0.01))
    a = torch.zeros(4, dtype=torch.float64)
    assert safe_kl_logsumexp(s, a, rho=0.01).shape == (4,)
    assert torch.allclose(exact_logsumexp(s, dim=0), torch.logsumexp(s, 0) - math.log(4))
