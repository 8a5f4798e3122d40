"""Errors, modules, OT solver, determinism and the smoke reproduction."""

import numpy as np
import pytest
import torch
from torch import nn

from optzoo.safe_kl import (
    KLDROLoss,
    SafeLogSumExp,
    exact_logsumexp,
    safe_kl_logsumexp,
    semi_dual_objective,
    semidiscrete_eot,
)

torch.set_num_threads(1)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(rho=0.0), ValueError, r"'rho' argument of safe_kl_logsumexp must be a finite real number in \(0, 1\). Got 0.0"),
    (dict(rho=-1.0), ValueError, r"'rho' argument"),
    (dict(rho=1.5), ValueError, r"'rho' argument"),
    (dict(rho="a"), TypeError, r"'rho' argument"),
    (dict(tau=0.0), ValueError, r"'tau' argument"),
])
def test_bad_hyperparameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        safe_kl_logsumexp(torch.zeros(3), **kwargs)


def test_bad_scores_and_shapes():
    with pytest.raises(ValueError, match="'scores' argument of safe_kl_logsumexp must be non-empty"):
        safe_kl_logsumexp(torch.zeros(0), rho=0.01)
    with pytest.raises(ValueError, match="must be finite"):
        safe_kl_logsumexp(torch.tensor([0.0, float("nan")]), rho=0.01)
    with pytest.raises(ValueError, match="must be finite"):
        exact_logsumexp(torch.tensor([0.0, float("inf")]))
    with pytest.raises(ValueError, match="'weights' argument .* of length 3"):
        safe_kl_logsumexp(torch.zeros(3), rho=0.01, weights=torch.ones(2) / 2)
    with pytest.raises(ValueError, match="summing to 1"):
        safe_kl_logsumexp(torch.zeros(3), rho=0.01, weights=torch.ones(3))
    with pytest.raises(ValueError, match="'alpha' argument .* broadcastable"):
        safe_kl_logsumexp(torch.zeros(4, 3), torch.zeros(5), rho=0.01)
    with pytest.raises(TypeError, match="'scores' argument"):
        safe_kl_logsumexp("abc", rho=0.01)
    with pytest.raises(ValueError, match="'estimator' argument of KLDROLoss"):
        KLDROLoss(estimator="foo")
    # trial 2, item 8: an alpha that widens the output, a negative group size, a bad sampler
    with pytest.raises(ValueError, match=r"The 'alpha' argument of safe_kl_logsumexp must be a scalar or "
                                         r"broadcastable to \(\)\. Got \(5,\)\."):
        safe_kl_logsumexp(torch.zeros(10), torch.zeros(5), rho=0.01)
    with pytest.raises(ValueError, match=r"The 'groups' argument of SafeLogSumExp must be a tuple of "
                                         r"positive ints"):
        SafeLogSumExp(groups=(-1,))
    with pytest.raises(TypeError, match=r"The 'source' argument of semidiscrete_eot must be a sampler "
                                        r"source\(n, generator\) returning an \(n, 2\) array.*Got 'NoneType'"):
        semidiscrete_eot(lambda n, g: None, torch.randn(5, 2), max_iter=3)
    with pytest.raises(ValueError, match=r"The 'source' argument of semidiscrete_eot must be a sampler.*"
                                         r"Got 'shape \(4, 3\)'"):
        semidiscrete_eot(lambda n, g: torch.zeros(n, 3), torch.randn(5, 2), max_iter=3, batch_size=4)


def test_large_rho_warns():
    with pytest.warns(UserWarning, match="caps the worst-case density"):
        safe_kl_logsumexp(torch.zeros(3), rho=0.5)


def test_module_trains_to_exact_value():
    g = torch.Generator().manual_seed(0)
    s = torch.randn(200, generator=g, dtype=torch.float64) * 2
    m = SafeLogSumExp(rho=0.05).double()
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    for _ in range(3000):
        opt.zero_grad()
        m(s).backward()
        opt.step()
    assert float(m(s).detach()) == pytest.approx(float(m.exact(s)), abs=1e-6)
    assert 0 < m.saturation < 1
    m.reset_alpha(s)
    assert float(m(s).detach()) == pytest.approx(float(m.exact(s)), abs=1e-12)


def test_kl_dro_wrapper_minibatch_training_reduces_true_objective():
    g = torch.Generator().manual_seed(1)
    X = torch.randn(256, 3, generator=g)
    y = X @ torch.tensor([1.0, -2.0, 0.5]) + 0.3 * torch.randn(256, generator=g)
    model = nn.Linear(3, 1)
    crit = KLDROLoss(lam=1.0, rho=1e-2)
    opt = torch.optim.SGD(list(model.parameters()) + list(crit.parameters()), lr=2e-3, momentum=0.9)
    start = float(crit.objective(((model(X).squeeze(-1) - y) ** 2).detach()))
    for _ in range(30):
        perm = torch.randperm(256, generator=g)
        for j in range(0, 256, 16):
            b = perm[j:j + 16]
            opt.zero_grad()
            crit((model(X[b]).squeeze(-1) - y[b]) ** 2).backward()
            opt.step()
    end = float(crit.objective(((model(X).squeeze(-1) - y) ** 2).detach()))
    assert end < 0.2 * start


def test_ot_solver_matches_ground_truth_and_sinkhorn():
    import ot

    from optzoo.safe_kl.repro.ot import _mixture, ground_truth

    rng = np.random.default_rng(0)
    xs, yt = _mixture(rng, 150), _mixture(rng, 20, shift=0.5)
    eps = 0.5
    v_star, d_star, C = ground_truth(xs, yt, eps)
    a, b = np.full(150, 1 / 150), np.full(20, 1 / 20)
    _, log = ot.sinkhorn(a, b, C, eps, method="sinkhorn_log", numItermax=20000, stopThr=1e-11, log=True)
    assert semi_dual_objective(eps * log["log_v"], xs, yt, eps=eps) == pytest.approx(d_star, abs=1e-6)
    res = semidiscrete_eot(xs, yt, eps=eps, rho=1e-3, max_iter=600, batch_size=50, seed=0)
    gap = d_star - semi_dual_objective(res.x, xs, yt, eps=eps)
    assert 0 <= gap < 0.05
    # tiny eps: finite and deterministic
    r1 = semidiscrete_eot(xs, yt, eps=1e-3, max_iter=30, batch_size=10, seed=3)
    r2 = semidiscrete_eot(xs, yt, eps=1e-3, max_iter=30, batch_size=10, seed=3)
    assert np.isfinite(r1.x).all() and np.array_equal(r1.x, r2.x)
    # n_iter= (before December 2026) still works for one release, with a FutureWarning
    with pytest.warns(FutureWarning, match="'n_iter' argument of semidiscrete_eot was renamed to 'max_iter'"):
        r3 = semidiscrete_eot(xs, yt, eps=1e-3, n_iter=30, batch_size=10, seed=3)
    assert np.array_equal(r1.x, r3.x) and r3.nit == 30
    with pytest.raises(ValueError, match="'eps' argument of semidiscrete_eot"):
        semidiscrete_eot(xs, yt, eps=0.0)


@pytest.mark.parametrize("estimator", ["safe", "sumexp", "minibatch", "erm"])
def test_kldro_loss_column_of_losses_gives_a_scalar(estimator):  # issue 17, item 5
    # (b, 1) is what reduction="none" gives for a one-output model: a vector came back before.
    crit = KLDROLoss(lam=1.0, rho=1e-2, estimator=estimator)
    losses = torch.rand(16, generator=torch.Generator().manual_seed(0))
    col = crit(losses[:, None])
    assert col.shape == () and torch.equal(col, crit(losses))
    with pytest.raises(ValueError, match=r"The 'per_sample_losses' argument of KLDROLoss must be "
                                         r"a 1-D tensor .*Got 'shape \(4, 4\)'\."):
        crit(losses.reshape(4, 4))
