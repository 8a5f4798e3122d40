"""Op-amp model sanity (spec section 4) and the optional ngspice backend."""

import numpy as np
import pytest

from optzoo.copro.opamp import (
    OpAmpSpec,
    decode_levels,
    ngspice_available,
    opamp_evaluate,
    opamp_metrics,
    opamp_spice,
)

BASE = np.array([10.0, 10.0, 10.0, 50.0, 50.0, 20e-6, 1e-12])


def _vary(col, values):
    x = np.repeat(BASE[None], len(values), 0)
    x[:, col] = values
    return x


def test_stage_gain_scales_as_inverse_sqrt_current():
    m = opamp_metrics(_vary(5, [10e-6, 40e-6]))
    ratio = m["stage_gains"][0] / m["stage_gains"][1]
    assert np.allclose(ratio, 2.0)  # 4x current -> each stage gain / 2


def test_pm_rises_and_sr_falls_with_cc_power_linear():
    cc = np.linspace(0.3e-12, 5e-12, 12)
    m = opamp_metrics(_vary(6, cc))
    assert (np.diff(m["pm_deg"]) > 0).all()
    assert (np.diff(m["sr"]) <= 1e-9).all()
    gm1 = np.sqrt(2 * 200e-6 * 10 * 20e-6 / 2)
    gm6 = m["stage_gains"][:, 1] * 0.18 * m["i6"]
    assert np.allclose(gm1 / cc / (gm6 / cc), gm1 / gm6)  # omega / z does not depend on Cc
    i5 = np.array([10e-6, 20e-6, 40e-6])
    p = opamp_metrics(_vary(5, i5))["power_w"]
    assert np.allclose(np.diff(p) / np.diff(i5), (p[1] - p[0]) / (i5[1] - i5[0]))
    assert np.allclose(p, 1.8 * i5 * (1 + 50 / 10))


def test_evaluate_shapes_and_feasibility_convention():
    x = decode_levels(np.random.default_rng(0).integers(0, 16, (500, 7)))
    F, g = opamp_evaluate(x, OpAmpSpec())
    assert F.shape == (500, 3) and g.shape == (500, 7)
    m = opamp_metrics(x, OpAmpSpec())
    assert np.array_equal(g[:, 0] <= 0, m["pm_deg"] >= 60.0)
    assert np.isfinite(F).all() and np.isfinite(g).all()
    assert np.allclose(decode_levels(np.array([[0] * 7, [15] * 7]))[:, 0], [1.0, 200.0])


@pytest.mark.skipif(not ngspice_available(), reason="ngspice binary not installed")
def test_spice_agrees_with_square_law():
    rng = np.random.default_rng(0)
    x = decode_levels(rng.integers(3, 13, (20, 7)))
    s = opamp_spice(x)
    m = opamp_metrics(x)
    ok = np.isfinite(s["gain_db"])
    assert ok.mean() > 0.5
    assert np.median(np.abs(s["power_w"][ok] / m["power_w"][ok] - 1)) < 0.2
    # the square-law gain ignores the (1 + lambda V_DS) terms: a couple of dB on most designs
    assert np.median(np.abs(s["gain_db"][ok] - m["gain_db"][ok])) < 3.0
