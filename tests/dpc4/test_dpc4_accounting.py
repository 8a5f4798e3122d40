"""Accounting: the spec's full-batch vectors, cross-checks, calibration, hard stop."""


import numpy as np
import pytest

from optzoo.dpc4 import (
    PrivacyBudgetExceeded,
    PrivacyLedger,
    calibrate,
    gaussian_dp_epsilon,
    rdp_epsilon,
)

VECTORS = [  # (schedule, mu, exact GDP eps, RDP eps by Opacus' formula), delta = 1e-5
    ([20.0] * 50, 0.3536, 1.3565, 1.4781),
    ([5.0] * 10, 0.6325, 2.5944, 2.8137),
    (list(np.linspace(10.0, 40.0, 100)), 0.5029, 2.0058, 2.1795),
]


@pytest.mark.parametrize("z, mu, exact, rdp", VECTORS)
def test_full_batch_vectors(z, mu, exact, rdp):
    from opacus.accountants import RDPAccountant

    assert np.sqrt(np.sum(np.asarray(z) ** -2.0)) == pytest.approx(mu, abs=1e-4)
    ours = rdp_epsilon(z, 1.0, delta=1e-5)
    acc = RDPAccountant()
    for zt in z:
        acc.step(noise_multiplier=zt, sample_rate=1.0)
    assert ours == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
    assert ours == pytest.approx(rdp, abs=1e-3)
    ex = gaussian_dp_epsilon(z, delta=1e-5)
    assert ex == pytest.approx(exact, abs=1e-3)
    assert ours >= ex
    led = PrivacyLedger(delta=1e-5)
    for zt in z:
        led.charge([(zt, 1.0)], sensitivity=1.0, noise_std=zt)
    assert led.epsilon() == pytest.approx(ours, rel=1e-9)
    # second accountant (PRV upper bound) within its stated error of the exact value, and below RDP
    prv = led.cross_check_epsilon(eps_error=0.01)
    assert abs(prv - ex) <= 0.01 + 1e-3
    assert prv <= ours + 1e-9


def test_subsampled_cross_check_and_monotonicity():
    e = {}
    for z in (0.8, 1.2):
        for T in (100, 400):
            for q in (0.01, 0.05):
                e[z, T, q] = rdp_epsilon([z] * T, q, delta=1e-5)
    assert e[1.2, 100, 0.01] < e[0.8, 100, 0.01]  # decreasing in z
    assert e[1.2, 100, 0.01] < e[1.2, 400, 0.01]  # increasing in T
    assert e[1.2, 100, 0.01] < e[1.2, 100, 0.05]  # increasing in q
    led = PrivacyLedger(delta=1e-5)
    led.history = [(1.2, 0.05, 400)]
    prv = led.cross_check_epsilon(eps_error=0.01)
    assert prv <= led.epsilon() + 1e-9  # the tighter accountant is not looser than RDP
    assert led.epsilon() - prv < 0.5 * led.epsilon()  # and in the same range


@pytest.mark.parametrize("shape", ["constant", "increasing"])
def test_calibrate_hits_target(shape):
    steps = 200 if shape == "constant" else 8  # few distinct multipliers: exact two-phase path
    s = calibrate(2.0, delta=1e-5, steps=steps, sample_rate=0.02, shape=shape)
    assert s.epsilon <= 2.0
    z = np.asarray(s.noise_multipliers)
    assert rdp_epsilon(z, 0.02, delta=1e-5) == pytest.approx(s.epsilon, rel=1e-9)
    # tolerance on z: 0.3% less noise already breaks the budget
    assert rdp_epsilon(z * 0.997, 0.02, delta=1e-5) > 2.0
    if shape == "increasing":
        assert z[-1] == pytest.approx(2 * z[0])


def test_calibrate_feedback_terms_are_charged_full_batch():
    s = calibrate(1.0, delta=1e-5, steps=100, sample_rate=0.02, feedback_ratio=1.0)
    led = PrivacyLedger(delta=1e-5)
    for t in range(100):
        led.charge(s.entries(t), sensitivity=[1, 1], noise_std=[1, 1])
    assert led.epsilon() == pytest.approx(s.epsilon, rel=1e-9) and s.epsilon <= 1.0
    plain = calibrate(1.0, delta=1e-5, steps=100, sample_rate=0.02)
    assert s[0] > 5 * plain[0]  # no amplification for the hidden-state term


def test_hard_stop_before_exceeding():
    led = PrivacyLedger(delta=1e-5, epsilon_budget=1.0)
    steps = 0
    with pytest.raises(PrivacyBudgetExceeded, match="budget exhausted"):
        for _ in range(10_000):
            led.charge([(2.0, 0.05)], sensitivity=1.0, noise_std=2.0)
            steps += 1
    assert steps > 10 and led.epsilon() <= 1.0 and led.steps == steps
    assert led.report()[-1]["z"] == [2.0]


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(target_epsilon=0.0), ValueError, "'target_epsilon' argument of calibrate"),
    (dict(target_epsilon=-1.0), ValueError, r"in \(0, inf\)"),
    (dict(delta=1.0), ValueError, "'delta' argument of calibrate"),
    (dict(delta=0.0), ValueError, "'delta'"),
    (dict(sample_rate=0.0), ValueError, "'sample_rate' argument of calibrate .* \\(0, 1\\]"),
    (dict(sample_rate=1.5), ValueError, "'sample_rate'"),
    (dict(steps=0), ValueError, "'steps'"),
    (dict(target_epsilon=float("nan")), ValueError, "finite"),
    (dict(shape="cosine"), ValueError, "'shape'"),
])
def test_calibrate_bad_inputs(kwargs, exc, match):
    args = dict(target_epsilon=1.0, delta=1e-5, steps=10, sample_rate=0.1) | kwargs
    eps = args.pop("target_epsilon")
    with pytest.raises(exc, match=match):
        calibrate(eps, **args)


def test_ledger_delta_warning_and_bad_entries():
    with pytest.warns(UserWarning, match="delta"):
        PrivacyLedger(delta=0.01, num_records=500)
    with pytest.raises(ValueError, match="'delta' argument of PrivacyLedger"):
        PrivacyLedger(delta=1.5)
    led = PrivacyLedger(delta=1e-5)
    with pytest.raises(ValueError, match="noise_multipliers"):
        led.charge([(float("nan"), 0.1)], sensitivity=1.0, noise_std=1.0)
    with pytest.raises(ValueError, match="sample_rates"):
        led.charge([(1.0, 0.0)], sensitivity=1.0, noise_std=1.0)


def test_gaussian_dp_epsilon_edges():
    """Opacus' eps_from_mu brackets epsilon in [0, 500]: delta above delta(0) gives 0, noise too
    small for that bracket is refused by name instead of a raw brentq error."""
    assert gaussian_dp_epsilon([1e6], delta=0.5) == 0.0
    with pytest.raises(ValueError, match=r"'noise_multipliers' argument of gaussian_dp_epsilon must be "
                                         r"noise large enough for epsilon <= 500"):
        gaussian_dp_epsilon([1e-3], delta=1e-5)


def test_no_release_spends_nothing():
    """An empty schedule (zero releases) has epsilon 0; delta is still checked."""
    assert rdp_epsilon([], 0.1, delta=1e-5) == 0.0
    assert gaussian_dp_epsilon([], delta=1e-5) == 0.0
    with pytest.raises(ValueError, match="'delta' argument of rdp_epsilon"):
        rdp_epsilon([], 0.1, delta=0.0)
