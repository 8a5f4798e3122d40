"""markov_zo: default step from the smoothness constant, budget status, divergence rule,
MarkovZOSGD state in param_groups / self.state / state_dict."""

import copy
import warnings

import numpy as np
import pytest
import torch

from optzoo import NotConvergedWarning, Status
from optzoo.markov_zo import (
    MarkovOracle,
    MarkovZOSGD,
    StickyChain,
    estimate_smoothness,
    markov_sgd_minimize,
    markov_zo_minimize,
    spsa_minimize,
)


def _ridge(n=200, d=10, lam=0.1, seed=0):
    """Standardised ridge regression, the row index driven by a sticky chain."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, d)) @ rng.normal(size=(d, d))
    A = (A - A.mean(0)) / A.std(0)
    b = A @ rng.normal(size=d) + 0.1 * rng.normal(size=n)
    b = (b - b.mean()) / b.std()
    xstar = np.linalg.solve(A.T @ A / n + lam * np.eye(d), A.T @ b / n)

    def F(X, Z):
        i = Z.astype(int)
        return 0.5 * (np.einsum("ij,ij->i", A[i], X) - b[i]) ** 2 + 0.5 * lam * (X * X).sum(1)

    orc = MarkovOracle(F, StickyChain(np.arange(n), stay_prob=0.5, seed=0), dim=d, vectorized=True)
    return orc, xstar, lam, A


def test_default_step_on_standardised_ridge_converges_instead_of_blowing_up():
    # before: k0 = 4d ignored L, |x| reached 4e14 and the status was user_limit, no warning
    orc, xstar, lam, _ = _ridge()
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotConvergedWarning)
        res = markov_zo_minimize(orc, np.zeros(10), mu=lam, max_calls=50_000, seed=0)
    assert res.status is Status.BUDGET and res.success
    assert np.linalg.norm(res.x - xstar) < 0.5 * np.linalg.norm(xstar)
    assert 5.0 < res.smoothness < 20.0  # per-row L = |a_z|^2 = 10 on average
    assert res.nfev >= 50_000


def test_ignoring_the_smoothness_is_reported_as_divergence_with_a_warning():
    orc, _, lam, _ = _ridge()
    with pytest.warns(NotConvergedWarning, match="diverged at iteration"):
        res = markov_zo_minimize(orc, np.zeros(10), mu=lam, smoothness=lam, max_calls=50_000, seed=0)
    assert res.status is Status.DIVERGED and not res.success
    assert np.isfinite(res.x).all() and np.linalg.norm(res.x) < 1e9


@pytest.mark.parametrize("d,tau,stay", [(5, None, 0.9), (10, 5, None)])
def test_docs_examples_converge_with_the_default_step(d, tau, stay):
    # the docstring example (d = 5) and the docs/papers/markov_zo.md API example (d = 10, tau = 5)
    c = np.ones(d) / np.sqrt(d)
    ch = (StickyChain([-1.0, 1.0], stay_prob=stay, seed=0) if tau is None
          else StickyChain.with_mixing_time([-1.0, 1.0], tau, seed=0))
    orc = MarkovOracle(lambda X, Z: 0.5 * ((X - Z[:, None] * c) ** 2).sum(1), ch, dim=d,
                       vectorized=True)
    res = markov_zo_minimize(orc, np.ones(d), mu=1.0, max_calls=20_000, seed=0)
    assert res.status is Status.BUDGET and res.success
    assert float(np.sum(res.x ** 2)) < 0.05 * d
    assert 1.0 <= res.smoothness < 2.0  # H = I: L = 1


def test_estimate_smoothness_on_known_hessians():
    orc = MarkovOracle(lambda X, Z: 1.5 * (X ** 2).sum(1) + Z, StickyChain([0.0, 1.0], 0.5),
                       dim=20, vectorized=True)
    est = estimate_smoothness(orc, np.ones(20), probes=64, seed=1)
    assert est == pytest.approx(3.0, rel=0.3) and orc.calls == 5 * 64 and orc.samples == 64
    orc, _, _, A = _ridge()
    est = estimate_smoothness(orc, np.zeros(10), probes=256, seed=1)
    r2 = (A ** 2).sum(1)  # H_z = a a^T + lam I: E|H e|^2 / E e'He ~ E|a|^4 / E|a|^2 (+ lam)
    assert est == pytest.approx(float((r2 ** 2).mean() / r2.mean()) + 0.1, rel=0.3)
    assert est <= float(r2.max()) + 0.1
    with pytest.raises(TypeError, match="'oracle' argument of estimate_smoothness"):
        estimate_smoothness(object(), np.zeros(2))


def test_fixed_budget_baselines_report_budget_used():
    orc, _, lam, _ = _ridge(d=4)
    assert spsa_minimize(orc, np.zeros(4), max_iter=50, a=0.01, seed=0).status is Status.BUDGET
    r = markov_sgd_minimize(MarkovOracle(lambda x, z: float(x @ x), StickyChain([0.0], 0.0), dim=2,
                                         grad=lambda x, z: 2 * x), np.ones(2), lr=0.1, max_iter=5)
    assert r.status is Status.BUDGET and r.success



def test_old_iteration_keywords_warn_and_give_the_same_run():
    """``iterations=`` / ``niter=`` (before December 2026) map to ``max_iter`` for one release."""
    orc = lambda: MarkovOracle(lambda x, z: float(x @ x), StickyChain([0.0], 0.0), dim=2,  # noqa: E731
                               grad=lambda x, z: 2 * x)
    new = spsa_minimize(orc(), np.ones(2), max_iter=20, a=0.01, seed=0)
    with pytest.warns(FutureWarning, match="'niter' argument of spsa_minimize was renamed to 'max_iter'"):
        old = spsa_minimize(orc(), np.ones(2), niter=20, a=0.01, seed=0)
    assert np.array_equal(new.x, old.x) and old.nit == 20
    for fn, kw in ((markov_zo_minimize, {}), (markov_sgd_minimize, {})):
        new = fn(orc(), np.ones(2), lr=0.1, max_iter=7, seed=0, **kw)
        with pytest.warns(FutureWarning, match=f"'iterations' argument of {fn.__name__} was renamed to 'max_iter'"):
            old = fn(orc(), np.ones(2), lr=0.1, iterations=7, seed=0, **kw)
        assert np.array_equal(new.x, old.x) and old.nit == new.nit == 7

def test_spsa_divergence_is_detected_by_growth():
    orc = MarkovOracle(lambda x, z: float(-(x @ x)), StickyChain([0.0], 0.0), dim=2)
    with pytest.warns(NotConvergedWarning, match="spsa_minimize: diverged"):
        r = spsa_minimize(orc, np.ones(2), max_iter=500, a=1.0, seed=0)
    assert r.status is Status.DIVERGED and r.nit < 500


def _zo_problem():
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(4))
    b = torch.nn.Parameter(torch.randn(2))
    ch = StickyChain([-0.5, 0.5], stay_prob=0.7, seed=3)
    def closure(z):
        return 0.5 * ((w - z) ** 2).sum() + (b ** 2).sum()
    return [w, b], ch, closure


def test_markov_zo_sgd_state_dict_round_trip_gives_identical_trajectory():
    params, ch, closure = _zo_problem()
    opt = MarkovZOSGD([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.02}], lr=0.05,
                      stream=ch, max_level=8, seed=4)
    for _ in range(7):
        opt.step(closure)
    sd = copy.deepcopy(opt.state_dict())
    assert sd["param_groups"][0]["smoothing"] == 1e-3 and sd["param_groups"][1]["lr"] == 0.02
    assert sd["state"][0]["step"] == 7 and sd["markov_zo"]["step"] == 7
    saved = [p.detach().clone() for p in params]
    ch2 = copy.deepcopy(ch)  # the stream is the user's data source, saved beside the optimizer
    ref = [opt.step(closure) for _ in range(6)]
    ref_params = [p.detach().clone() for p in params]

    w2 = torch.nn.Parameter(saved[0].clone())
    b2 = torch.nn.Parameter(saved[1].clone())
    def closure2(z):
        return 0.5 * ((w2 - z) ** 2).sum() + (b2 ** 2).sum()
    fresh = MarkovZOSGD([{"params": [w2]}, {"params": [b2]}], lr=0.9, stream=ch2, seed=99)
    fresh.load_state_dict(sd)
    out = [fresh.step(closure2) for _ in range(6)]
    assert out == ref
    assert torch.equal(w2, ref_params[0]) and torch.equal(b2, ref_params[1])
    assert fresh.calls == opt.calls and fresh.samples == opt.samples
    assert fresh.param_groups[1]["lr"] == 0.02 and fresh.seed == 4


def test_markov_zo_sgd_errors():
    params, ch, closure = _zo_problem()
    opt = MarkovZOSGD([{"params": [params[0]]}, {"params": [params[1]], "smoothing": 0.1}],
                      lr=0.05, stream=ch)
    with pytest.raises(ValueError, match="'smoothing' argument of MarkovZOSGD must be the same in every"):
        opt.step(closure)
    with pytest.raises(ValueError, match="must come from MarkovZOSGD.state_dict"):
        opt.load_state_dict(torch.optim.SGD(params, lr=0.1).state_dict())
