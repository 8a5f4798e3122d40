"""Property tests from the spec (section 4): estimators, chains, MLMC, variance law, semantics."""

import math

import numpy as np
import pytest

from optzoo.markov_zo import (
    AR1Chain,
    FiniteChain,
    MarkovOracle,
    StickyChain,
    batch_error,
    expected_batch_cost,
    markov_sgd_minimize,
    markov_zo_minimize,
    mlmc_error,
    mlmc_weights,
    one_point_estimates,
    sphere_directions,
    spsa_minimize,
    two_point_estimates,
    v_b,
)
from optzoo.markov_zo.repro.bank import _Chains


def _quad_oracle(d, chain, sigma=1.0, grad=False):
    c = np.ones(d) * sigma / math.sqrt(d)
    f = lambda X, Z: 0.5 * ((X - Z[:, None] * c) ** 2).sum(1)  # noqa: E731
    g = (lambda X, Z: X - Z[:, None] * c) if grad else None  # noqa: E731
    return MarkovOracle(f, chain, dim=d, vectorized=True, grad=g), c


def test_two_point_exact_on_quadratic():
    rng = np.random.default_rng(0)
    d, t = 7, 1e-3
    A = rng.standard_normal((d, d))
    A = A @ A.T
    x, e = rng.standard_normal(d), sphere_directions(5, d, rng)
    F = lambda y: 0.5 * y @ A @ y  # noqa: E731
    fp = np.array([F(x + t * ei) for ei in e])
    fm = np.array([F(x - t * ei) for ei in e])
    g = two_point_estimates(fp, fm, e, t)
    exact = d * (e @ (A @ x))[:, None] * e
    np.testing.assert_allclose(g, exact, rtol=1e-9, atol=1e-9)


def test_two_point_unbiased_and_second_moment_linear():
    rng = np.random.default_rng(1)
    d, n, t = 6, 200_000, 0.3
    a = rng.standard_normal(d)
    e = sphere_directions(n, d, rng)
    g = two_point_estimates((x := e @ a * t) + 0.0, -x, e, t)  # F linear: F(x+te)-F(x-te)=2t<a,e>
    se = g.std(0) / math.sqrt(n)
    assert np.all(np.abs(g.mean(0) - a) < 4.5 * se)
    # E|g|^2 = d |a|^2 for every t when F is linear
    assert abs((g ** 2).sum(1).mean() / (d * a @ a) - 1) < 0.02


def test_one_point_unbiased_on_quadratic():
    rng = np.random.default_rng(2)
    d, n, t = 4, 400_000, 0.5
    x = np.array([1.0, -0.5, 0.2, 0.3])
    e = sphere_directions(n, d, rng)
    fp = 0.5 * ((x + t * e) ** 2).sum(1)
    g = one_point_estimates(fp, e, t)
    se = g.std(0) / math.sqrt(n)
    assert np.all(np.abs(g.mean(0) - x) < 4.5 * se)


def test_sticky_chain_stationary_autocorr_and_tv():
    ch = StickyChain([-1.0, 1.0], stay_prob=0.8, seed=3)
    z = ch.sample(200_000)
    assert abs(z.mean()) < 0.03
    for k in (1, 3):
        assert abs(np.mean(z[:-k] * z[k:]) - 0.8 ** k) < 0.03
    P = ch.transition_matrix()
    for t in (1, 4, 9):
        Q = np.linalg.matrix_power(P, t)
        tv = 0.5 * np.abs(Q - ch.pi).sum(1).max()
        assert tv == pytest.approx(ch.tv_distance(t), rel=1e-12)
    assert ch.mixing_time == math.ceil(math.log(2) / math.log(1 / 0.8))
    for tau in (1, 2, 7, 30, 300):
        assert StickyChain.with_mixing_time([-1.0, 1.0], tau).mixing_time == tau
        assert StickyChain.with_mixing_time([0.0, 1.0, 2.0], tau).mixing_time == tau


def test_finite_chain_matches_sticky_and_ar1_proxy():
    st = StickyChain([0.0, 1.0, 2.0], stay_prob=0.7, pi=[0.2, 0.3, 0.5], seed=0)
    fc = FiniteChain(st.transition_matrix(), states=st.states, seed=0)
    np.testing.assert_allclose(fc.pi, st.pi, atol=1e-12)
    assert fc.mixing_time == st.mixing_time
    ar = AR1Chain(0.9, seed=0)
    assert ar.mixing_time == math.ceil(math.log(2) / math.log(1 / 0.9))
    assert not ar.uniformly_ergodic and st.uniformly_ergodic
    z = ar.sample(100_000)[:, 0]
    assert abs(np.mean(z[:-1] * z[1:]) - 0.9) < 0.03


def test_mlmc_expected_cost():
    for (B, M, want) in ((1, 8, 3.125), (4, 64, 24.0625), (2, 100, 12.03125)):
        assert expected_batch_cost(B, M) == pytest.approx(want)
        rng = np.random.default_rng(B)
        J = rng.geometric(0.5, size=200_000)
        n = np.where(2.0 ** J <= M, 2.0 ** J * B, B)
        assert abs(n.mean() / want - 1) < 0.01


def test_mlmc_mean_equals_top_level_by_enumeration():
    # 3-state chain from a fixed start: E[G] = E[g^{jmax}] exactly (matrix powers).
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.3, 0.3, 0.4]])
    h = np.array([1.0, -2.0, 5.0])
    B, M = 2, 16
    jmax = 4
    powers = [np.linalg.matrix_power(P, i) @ h for i in range(2 ** jmax * B)]
    def expect(w):
        return sum(wi * powers[i] for i, wi in enumerate(w))
    EG = sum(2.0 ** (-j) * expect(mlmc_weights(j, B, M)) for j in range(1, jmax + 1))
    EG = EG + 2.0 ** (-jmax) * expect(mlmc_weights(jmax + 1, B, M))
    top = expect(np.full(2 ** jmax * B, 1.0 / (2 ** jmax * B)))
    np.testing.assert_allclose(EG, top, rtol=1e-12)


@pytest.mark.parametrize("d,rho,b", [(10, 0.5, 8), (10, 0.9, 8), (30, 0.95, 16)])
def test_variance_law(d, rho, b):
    rng = np.random.default_rng(int(rho * 100) + d)
    n, t = 6000, 1e-3
    x = np.ones(d) / math.sqrt(d)
    c = np.ones(d) / math.sqrt(d)
    Z = _Chains(np.full(n, rho), rng).path(np.full(n, b), b)
    E = sphere_directions(n * b, d, rng)
    zf = Z.ravel()[:, None]
    fp = 0.5 * ((x + t * E - zf * c) ** 2).sum(1)
    fm = 0.5 * ((x - t * E - zf * c) ** 2).sum(1)
    g = two_point_estimates(fp, fm, E, t).reshape(n, b, d).mean(1)
    meas = ((g - x) ** 2).sum(1).mean()
    assert meas == pytest.approx(batch_error(b, d=d, x_sq=1.0, sigma_sq=1.0, rho=rho), rel=0.05)
    # first order: only the Markov term, sigma^2 V_b
    fo = ((-Z[..., None] * c).mean(1) ** 2).sum(1).mean()
    assert fo == pytest.approx(v_b(b, rho), rel=0.06)
    assert batch_error(b, d=d, x_sq=1.0, sigma_sq=1.0, rho=rho, zero_order=False) == \
        pytest.approx(v_b(b, rho))


def test_markov_share_vanishes_with_dimension():
    share = [v_b(64, 0.9) / batch_error(64, d=d, x_sq=0.0, sigma_sq=1.0, rho=0.9)
             for d in (10, 100, 1000)]
    assert share[0] > share[1] > share[2] and share[2] < 0.03
    assert mlmc_error(d=50, x_sq=0, sigma_sq=1, rho=0.0, batch=1, max_level=64) > 0


def test_same_state_semantics_and_counting():
    seen = []
    ch = StickyChain(np.arange(50.0), stay_prob=0.0, seed=0)  # fresh state almost every tick
    orc = MarkovOracle(lambda x, z: seen.append(float(z)) or 0.0, ch, dim=2)
    orc.pair(np.zeros(2), np.ones(2))
    orc.pairs(np.zeros((3, 2)), np.ones((3, 2)))
    assert seen[0] == seen[1]
    assert seen[2:5] == seen[5:8]  # batch: X1 rows then X2 rows, same states
    assert orc.calls == 8 and orc.samples == 4
    orc.value(np.zeros(2))
    assert orc.calls == 9 and orc.samples == 5


def test_convergence_tau_free_for_small_tau():
    d, K = 20, 40_000
    errs = {}
    for tau in (1, 2, 6):
        e = []
        for s in range(3):
            orc, _ = _quad_oracle(d, StickyChain.with_mixing_time([-1.0, 1.0], tau, seed=s))
            r = markov_zo_minimize(orc, np.ones(d), mu=1.0, max_calls=K, max_level=64, seed=s)
            e.append(np.sum(r.x ** 2))
        errs[tau] = np.mean(e)
    # C calibrated at tau=1 holds for tau <= d/3 (up to a factor 2 of Monte Carlo slack)
    C = errs[1] * K / (d + 3)
    for tau in (2, 6):
        assert errs[tau] <= 2 * C * (d + 3 * tau) / K


def test_determinism_and_baselines_reach_optimum():
    d = 5
    out = []
    for _ in range(2):
        orc, _ = _quad_oracle(d, StickyChain([-1.0, 1.0], stay_prob=0.7, seed=4), grad=True)
        r = markov_zo_minimize(orc, np.ones(d), mu=1.0, max_calls=5000, seed=7,
                               record_every=10)
        out.append(r.x)
    np.testing.assert_array_equal(out[0], out[1])
    assert r.nfev >= 5000 and r.history["calls"][-1] == r.nfev
    orc, _ = _quad_oracle(d, StickyChain([-1.0, 1.0], stay_prob=0.7, seed=4), grad=True)
    r = markov_sgd_minimize(orc, np.ones(d), mu=1.0, max_cost=3000, seed=0)
    assert np.sum(r.x ** 2) < 0.05
    r = spsa_minimize(orc, np.ones(d), max_iter=3000, a=0.5, c=1.0, seed=0)
    assert np.sum(r.x ** 2) < 0.2 and r.nfev == 6001


def test_spsa_identical_to_noisyopt():
    """spsa_minimize is noisyopt.minimizeSPSA (paired) draw for draw, without touching numpy's
    global RNG (noisyopt draws from it: the reference run seeds it here)."""
    noisyopt = pytest.importorskip("noisyopt")
    orc, _ = _quad_oracle(4, StickyChain([-1.0, 1.0], stay_prob=0.9, seed=1))
    state = np.random.get_state()[1][:5].copy()
    ours = spsa_minimize(orc, np.ones(4), max_iter=200, a=0.5, c=1.0, seed=3)
    assert np.array_equal(np.random.get_state()[1][:5], state)  # global RNG untouched
    ref_orc, _ = _quad_oracle(4, StickyChain([-1.0, 1.0], stay_prob=0.9, seed=1))
    np.random.seed(3)
    ref = noisyopt.minimizeSPSA(ref_orc, np.ones(4), niter=200, paired=True, a=0.5, c=1.0)
    np.testing.assert_allclose(ours.x, ref.x, rtol=1e-12)
    assert orc.calls == ref_orc.calls == 401


def test_torch_optimizer_matches_functional_semantics():
    import torch

    from optzoo.markov_zo import MarkovZOSGD

    w = torch.nn.Parameter(torch.ones(4, dtype=torch.float64))
    ch = StickyChain([-0.1, 0.1], stay_prob=0.9, seed=0)
    seen = []

    def closure(z):
        seen.append(z)
        return 0.5 * ((w - z) ** 2).sum()

    opt = MarkovZOSGD([w], lr=0.02, stream=ch, smoothing=1e-3, batching="fixed", batch=3, seed=0)
    before = w.detach().clone()
    opt.step(closure)
    assert seen[0] == seen[1] and seen[2] == seen[3] and len(seen) == 6
    assert torch.equal(w.detach(), w.detach()) and not torch.equal(before, w.detach())
    assert opt.state[w]["calls"] == 6 and opt.state[w]["samples"] == 3
    for _ in range(400):
        opt.step(lambda z: 0.5 * ((w - z) ** 2).sum())
    assert float(w.detach().norm()) < 0.3
