"""M-step: the tabular closed form, the c -> 0 limit, the k3 estimator, the dual update."""

import numpy as np
import pytest
import torch

from optzoo.copro import CoProLoss, copro_loss, k3_kl, tabular_m_step


def _fit_tabular(q, pi_old, coef, steps=400):
    """Minimise copro_loss over a softmax policy on n actions (each action one 'sample')."""
    q_t = torch.as_tensor(q, dtype=torch.float64)[None]
    old = torch.log(torch.as_tensor(pi_old, dtype=torch.float64))
    theta = old.clone().requires_grad_(True)
    opt = torch.optim.LBFGS([theta], lr=1, max_iter=steps, tolerance_grad=1e-14, tolerance_change=1e-16,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        logp = torch.log_softmax(theta, -1)
        kl = (old.exp() * (old - logp)).sum()          # exact KL(pi_old || pi)
        loss = copro_loss(logp[None], old[None], q=q_t, coef=coef, kl=kl)
        loss.backward()
        return loss

    opt.step(closure)
    return torch.softmax(theta, -1).detach().numpy()


@pytest.mark.parametrize("coef", [0.0, 0.5, 1.0, 4.0])
def test_tabular_closed_form(coef):
    rng = np.random.default_rng(0)
    q = rng.dirichlet(np.ones(5))
    pi_old = rng.dirichlet(np.ones(5))
    pi = _fit_tabular(q, pi_old, coef)
    assert np.abs(pi - tabular_m_step(q, pi_old, coef=coef)).max() < 1e-6
    assert np.allclose(tabular_m_step(q, pi_old, coef=coef), (q + coef * pi_old) / (1 + coef))


def test_small_coef_reaches_q():
    q = np.array([0.6, 0.3, 0.1, 1e-3, 1e-3])
    q = q / q.sum()
    assert np.abs(_fit_tabular(q, np.full(5, 0.2), 1e-6) - q).max() < 1e-4


def test_k3_is_unbiased_for_kl():
    g = torch.Generator().manual_seed(0)
    lo = torch.log_softmax(torch.randn(6, dtype=torch.float64, generator=g), -1)
    ln = torch.log_softmax(torch.randn(6, dtype=torch.float64, generator=g), -1)
    idx = torch.multinomial(lo.exp(), 200_000, replacement=True, generator=g)
    est = k3_kl(ln[idx][None, None].expand(1, 1, -1), lo[idx][None, None].expand(1, 1, -1))
    exact = (lo.exp() * (lo - ln)).sum()
    assert abs(float(est) - float(exact)) < 0.02 * float(exact) + 1e-3


def test_loss_gradient_is_weighted_nll():
    logp = torch.log(torch.tensor([[0.2, 0.3, 0.5]], dtype=torch.float64)).requires_grad_(True)
    q = torch.tensor([[0.5, 0.25, 0.25]], dtype=torch.float64)
    loss = copro_loss(logp, logp.detach(), q=q, coef=0.0)
    loss.backward()
    assert torch.allclose(logp.grad, -q)  # nonnegative advantages: no sample is pushed down
    mask = torch.tensor([[[1, 1, 0], [1, 0, 0]]], dtype=torch.bool)
    lp = torch.zeros(1, 2, 3, dtype=torch.float64)
    lp[0, 0, :2] = -1.0
    lp[0, 1, 0] = -3.0
    val = copro_loss(lp, lp, q=torch.tensor([[0.5, 0.5]], dtype=torch.float64), mask=mask, coef=1.0)
    assert torch.isclose(val, torch.tensor(2.0, dtype=torch.float64))  # token-averaged, KL 0


def test_coproloss_module_and_dual_step():
    m = CoProLoss(trust_region="kl_constraint", coef=1.0, kl_bound=0.01, coef_lr=10.0)
    assert m.dual_step(0.11) == pytest.approx(2.0)
    assert m.dual_step(0.0) == pytest.approx(1.9)
    assert m.dual_step(-1.0) == 0.0  # clipped at 0
    sd = m.state_dict()
    m2 = CoProLoss(trust_region="kl_constraint", coef=5.0)
    m2.load_state_dict(sd)
    assert float(m2.coef) == 0.0
    fixed = CoProLoss(coef=0.7)
    assert fixed.dual_step(1.0) == pytest.approx(0.7)  # kl_penalty keeps c
    x = torch.zeros(2, 3, dtype=torch.float64)
    fixed(x, x, q=torch.full((2, 3), 1 / 3, dtype=torch.float64))
    assert set(fixed.last_stats) == {"nll", "kl"}


def test_tabular_m_step_keeps_torch_and_its_precision():
    """December trial D18: float64 torch input came back as a float32 numpy array."""
    from optzoo.copro import tabular_m_step

    q = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)
    out = tabular_m_step(q, torch.full((3,), 1 / 3, dtype=torch.float64), coef=1.0)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    assert torch.allclose(out, (q + 1 / 3) / 2, atol=0, rtol=1e-15)
