"""Property tests of the incentive decomposition, the band and reward calibration (spec s.4)."""

import math
import warnings

import pytest
import torch

from optzoo.reward_calibration import (
    LOSS_TYPES,
    PreferenceLoss,
    RewardCalibrator,
    band_edges,
    disentanglement_band,
    first_order_change,
    incentives,
    pairwise_loss,
    preference_loss,
)
from optzoo.reward_calibration.testbed import LogLinearPolicy, band_sign_check

torch.set_num_threads(1)


def _point(seed, n=6):
    g = torch.Generator().manual_seed(seed)
    zw = -5 + torch.randn(n, generator=g, dtype=torch.float64)
    zl = -5 + torch.randn(n, generator=g, dtype=torch.float64)
    rw = -5 + torch.randn(n, generator=g, dtype=torch.float64)
    rl = -5 + torch.randn(n, generator=g, dtype=torch.float64)
    lens = torch.randint(3, 12, (n,), generator=g).double()
    return zw, zl, rw, rl, lens, lens.flip(0)


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_incentives_match_autograd(loss_type, seed):
    zw, zl, rw, rl, lw, ll = _point(seed)
    kw = dict(loss_type=loss_type, beta=0.7, tau=0.3, gamma=1.0, len_w=lw, len_l=ll)
    zw_, zl_ = zw.clone().requires_grad_(True), zl.clone().requires_grad_(True)
    gw, gl = torch.autograd.grad(pairwise_loss(zw_, zl_, rw, rl, **kw).sum(), (zw_, zl_))
    d_w, d_l = incentives(zw, zl, rw, rl, **kw)
    torch.testing.assert_close(d_w, -gw)
    torch.testing.assert_close(d_l, gl)


def test_ipo_incentive_sign_and_dpo_ratio_one():
    z = torch.zeros(3)
    d_w, d_l = incentives(z + 10, z, z, z, loss_type="ipo", tau=0.1)  # overshoot: m~ > 5
    assert bool((d_w < 0).all()) and torch.equal(d_w, d_l)
    d_w, d_l = incentives(torch.randn(5), torch.randn(5), torch.randn(5), torch.randn(5))
    assert torch.equal(d_w, d_l)  # DPO: r = 1


def _linear_setup(seed, n=1):
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(5, generator=g, dtype=torch.float64, requires_grad=True)
    xw = torch.randn(n, 5, generator=g, dtype=torch.float64)
    xl = xw + 0.3 * torch.randn(n, 5, generator=g, dtype=torch.float64)
    return theta, xw, xl


@pytest.mark.parametrize("loss_type", ["dpo", "ipo", "bce", "cpo"])
def test_forward_invariance_and_gradient_rescaling(loss_type):
    theta, xw, xl = _linear_setup(3)
    ref_w, ref_l = torch.zeros(1, dtype=torch.float64), torch.full((1,), 0.2, dtype=torch.float64)
    zw, zl = xw @ theta, xl @ theta
    base, _ = preference_loss(zw, zl, ref_w, ref_l, loss_type=loss_type)
    calib = RewardCalibrator([theta], ema_beta=0.0)
    rc, info = preference_loss(zw, zl, ref_w, ref_l, loss_type=loss_type, calibrator=calib)
    assert info["applied"]
    assert float(rc) == pytest.approx(float(base), abs=1e-12)  # value unchanged
    g_rc = torch.autograd.grad(rc, theta)[0]
    a = info["alpha"]
    d_w, d_l = incentives(zw, zl, ref_w, ref_l, loss_type=loss_type)
    expect = -a * d_w[0] * xw[0] + d_l[0] / a * xl[0]
    torch.testing.assert_close(g_rc, expect)
    # ema_beta = 0, phi = all parameters, batch 1: a^2 r = r* exactly, inside the band.
    s_w, s_l = xw[0], xl[0]
    r, r_star = float(d_w[0] / d_l[0]), float(s_l.norm() / s_w.norm())
    assert a * a * r == pytest.approx(r_star, rel=1e-10)
    band = disentanglement_band(s_w, s_l)
    if band.rho > 0:
        assert band.contains(a * a * r)


def test_dpo_alpha_is_sqrt_r_star_and_displacement_case():
    theta = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    s_w = torch.tensor([1.0, 0.0], dtype=torch.float64)
    s_l = torch.tensor([2.0, 0.5], dtype=torch.float64)  # rho r* > 1: DPO displaces
    zw, zl = (s_w @ theta)[None], (s_l @ theta)[None]
    calib = RewardCalibrator([theta], ema_beta=0.0)
    _, info = preference_loss(zw, zl, torch.zeros(1), torch.zeros(1), calibrator=calib)
    assert info["alpha"] == pytest.approx(math.sqrt(float(s_l.norm() / s_w.norm())))
    band = disentanglement_band(s_w, s_l)
    assert band.lower > 1.0  # r = 1 lies below the band
    dzw, dzl = first_order_change(0.05, 0.05, s_w, s_l, lr=1.0)
    assert dzw < 0 and dzl < 0
    a = info["alpha"]
    dzw, dzl = first_order_change(0.05 * a, 0.05 / a, s_w, s_l, lr=1.0)
    assert dzw > 0 > dzl


def test_joint_clip_keeps_r_star_and_ema_first_value():
    theta, xw, xl = _linear_setup(5)
    zw, zl = xw @ theta, xl @ theta
    d = torch.ones(1, dtype=torch.float64)
    a = RewardCalibrator([theta], ema_beta=0.5).statistics(zw, zl, d, d)
    b = RewardCalibrator([theta], ema_beta=0.5, joint_clip=1e-3).statistics(zw, zl, d, d)
    assert a["r_star_hat"] == pytest.approx(b["r_star_hat"], rel=1e-12)
    c = RewardCalibrator([theta], ema_beta=0.5)
    c.update(2.0, 1.0, torch.ones(3), 2 * torch.ones(3))
    assert c.state["log_dw"] == pytest.approx(math.log(2.0))  # first value initialises
    c.update(8.0, 1.0, torch.ones(3), 2 * torch.ones(3))
    assert c.state["log_dw"] == pytest.approx(0.5 * math.log(2.0) + 0.5 * math.log(8.0))


def test_rc_noop_without_grad_or_training_and_skip_warns():
    theta, xw, xl = _linear_setup(7)
    calib = RewardCalibrator([theta])
    with torch.no_grad():
        zw, zl = xw @ theta, xl @ theta
        _, info = preference_loss(zw, zl, torch.zeros(1), torch.zeros(1), calibrator=calib)
    assert not info["applied"] and calib.state["steps"] == 0
    zw, zl = xw @ theta, xl @ theta
    out = calib.calibrate(zw, zl, torch.ones(1), torch.ones(1), training=False)
    assert out[0] is zw
    # SLiC with the hinge inactive (margin >> gamma) and lam = 0: d = 0 -> skip and warn.
    big = zw + 100.0
    with pytest.warns(RuntimeWarning, match="skipped"):
        _, info = preference_loss(big, zl, loss_type="slic", lam=0.0, calibrator=calib)
    assert not info["applied"] and calib.state["skipped"] == 1
    with pytest.warns(RuntimeWarning, match="skipped"):  # IPO overshoot: d < 0
        preference_loss(big, zl, torch.zeros(1), torch.zeros(1), loss_type="ipo",
                        calibrator=calib)


def test_band_predictions_exact_on_loglinear_testbed():
    res = band_sign_check(0, n_cases=600)
    assert res["agree_w"] == 1.0 and res["agree_l"] == 1.0
    assert res["n_checked_w"] > 500 and res["rho_nonpos_ok"] and res["calibrated_in_band"]
    assert res["max_err_over_eta2"] < 1.0
    assert 0 < res["frac_displacing_dpo"] < 1


def test_loglinear_first_order_matches_to_eta_squared():
    g = torch.Generator().manual_seed(0)
    pol = LogLinearPolicy(torch.randn(1, 20, 4, generator=g), torch.zeros(1, 4))
    y_w, y_l = torch.tensor([0]), torch.tensor([1])
    s_w, s_l = pol.scores(y_w), pol.scores(y_l)
    errs = []
    for lr in (1e-2, 1e-3):
        p = LogLinearPolicy(pol.features, pol.theta)
        dzw, _ = p.step(y_w, y_l, torch.ones(1), torch.ones(1), lr=lr)
        pred, _ = first_order_change(1.0, 1.0, s_w[0], s_l[0], lr=lr)
        errs.append(abs(float(dzw) - pred))
    assert errs[1] < errs[0] / 50  # quadratic: 10x smaller step, ~100x smaller error


def test_determinism():
    assert band_sign_check(3, n_cases=200) == band_sign_check(3, n_cases=200)


def test_preference_loss_module_and_doc_values():
    crit = PreferenceLoss("simpo")
    z = torch.zeros(2, requires_grad=True)
    loss, info = crit(z, z - 2.0, len_w=torch.full((2,), 4.0), len_l=torch.full((2,), 4.0))
    assert float(loss) == pytest.approx(-math.log(1 / (1 + math.exp(-(0.1 * 0.5 - 1.0)))))
    assert set(info) >= {"d_w", "d_l"}


# ---- bad input ---------------------------------------------------------------------------

def test_error_mismatched_shapes():
    with pytest.raises(ValueError, match=r"'z_l' argument of preference_loss must be a tensor "
                                         r"with the same shape"):
        preference_loss(torch.zeros(3), torch.zeros(4), torch.zeros(3), torch.zeros(3))


def test_error_non_finite():
    with pytest.raises(ValueError, match="'z_w' argument of incentives must be a tensor of "
                                         "finite values"):
        incentives(torch.tensor([float("nan")]), torch.zeros(1), torch.zeros(1), torch.zeros(1))
    with pytest.raises(ValueError, match="'z_l_ref'.*finite"):
        preference_loss(torch.zeros(1), torch.zeros(1), torch.zeros(1),
                        torch.tensor([float("inf")]))


def test_error_unknown_loss_lists_known():
    with pytest.raises(ValueError, match="'loss_type' argument of preference_loss must be one "
                                         "of 'dpo', 'ipo', 'simpo', 'cpo', 'slic', 'bce'"):
        preference_loss(torch.zeros(1), torch.zeros(1), torch.zeros(1), torch.zeros(1),
                        loss_type="kto")


def test_error_rho_outside_unit_interval():
    for bad in (0.0, -0.3, 1.5):
        with pytest.raises(ValueError, match=r"'rho' argument of band_edges must be a finite "
                                             r"real number in \(0, 1\]"):
            band_edges(1.0, bad)


def test_error_other_arguments():
    with pytest.raises(ValueError, match="'len_w' argument of preference_loss"):
        preference_loss(torch.zeros(1), torch.zeros(1), loss_type="simpo")
    with pytest.raises(ValueError, match="'z_w_ref' argument of preference_loss"):
        preference_loss(torch.zeros(1), torch.zeros(1), loss_type="dpo")
    with pytest.raises(ValueError, match="'beta' argument of preference_loss"):
        preference_loss(torch.zeros(1), torch.zeros(1), torch.zeros(1), torch.zeros(1),
                        beta=-1.0)
    with pytest.raises(TypeError, match="'z_w' argument of preference_loss must be a torch"):
        preference_loss([0.0], torch.zeros(1), torch.zeros(1), torch.zeros(1))
    with pytest.raises(TypeError, match=r"The 'calibrator' argument of preference_loss must be a "
                                        r"RewardCalibrator .*Got 'yes'\."):  # trial 2, item 8
        preference_loss(torch.zeros(1), torch.zeros(1), torch.zeros(1), torch.zeros(1),
                        calibrator="yes")
    with pytest.raises(ValueError, match="'params' argument of RewardCalibrator must be a "
                                         "non-empty"):
        RewardCalibrator([])
    with pytest.raises(ValueError, match="'params' argument of RewardCalibrator must be tensors "
                                         "with requires_grad=True"):
        RewardCalibrator([torch.zeros(2)])
    w = torch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="'ema_beta' argument of RewardCalibrator"):
        RewardCalibrator([w], ema_beta=1.0)
    with pytest.raises(ValueError, match="'eps' argument of RewardCalibrator"):
        RewardCalibrator([w], eps=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="unbounded"):
            disentanglement_band(torch.tensor([1.0, 0.0]), torch.tensor([-1.0, 0.2]))


@pytest.mark.parametrize("loss_type", ["dpo", "cpo"])
def test_preference_loss_empty_batch_is_an_error_not_nan(loss_type):  # issue 17, item 5
    z = torch.zeros(0, requires_grad=True)
    ref = torch.zeros(0)
    with pytest.raises(ValueError, match=r"The 'z_w' argument of preference_loss must be a "
                                         r"non-empty batch .*Got 'shape \(0,\)'\."):
        preference_loss(z, z, ref, ref, loss_type=loss_type)
    with pytest.raises(ValueError, match="non-empty batch"):
        PreferenceLoss(loss_type)(z, z, ref, ref)
