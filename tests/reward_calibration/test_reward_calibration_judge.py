"""judge() on synthetic per-seed metrics: the claims can fail, and can hold."""

import numpy as np
import pytest

from optzoo.reward_calibration import repro


def _arm(rng, dz_w, dz_l, acc, gold):
    return {"dz_w": dz_w + 0.05 * rng.standard_normal(), "dz_l": dz_l + 0.05 * rng.standard_normal(),
            "displaced": float(dz_w < 0), "accuracy": acc + 0.002 * rng.standard_normal(),
            "gold": gold + 0.05 * rng.standard_normal(), "trace": {}, "wall_s": 0.0, "skipped": 0}


def _per_seed(rc_good: bool, n=8):
    out = []
    for s in range(n):
        rng = np.random.default_rng(s)
        arms = {}
        for lt in repro.LOSSES:
            arms[f"{lt}_k1_base"] = _arm(rng, -3.0, -8.0, 0.90, -10.0)
            arms[f"{lt}_k1_rc"] = (_arm(rng, 0.5, -6.0, 0.91, -9.0) if rc_good
                                   else _arm(rng, -5.0, 1.0, 0.70, -12.0))
        arms["dpo_k10_base"] = _arm(rng, -1.0, -9.0, 0.99, -10.0)
        arms["dpo_k10_rc"] = _arm(rng, -1.0 if rc_good else 2.0, -9.0, 0.99, -10.0)
        arms["dpo_k1_base_nll"] = _arm(rng, 0.2 if rc_good else 1.0, -5.0, 0.90, -9.5)
        out.append({"seed": s, "arms": arms,
                    "parity": {"loss_abs_diff": 1e-8, "grad_rel_diff": 1e-7},
                    "testbed": {"agree_w": 1.0, "agree_l": 1.0, "rho_nonpos_ok": True,
                                "calibrated_in_band": True, "calibrated_disentangled": 1.0,
                                "max_err_over_eta2": 0.5, "n_checked_w": 10, "n_checked_l": 10}})
    return out


def _by(per_seed):
    vs = repro.judge(per_seed)
    assert [v.claim for v in vs] == [c.id for c in repro.CLAIMS]
    return {v.claim: v for v in vs}


def test_rc_clearly_worse_fails_claims():
    by = _by(_per_seed(rc_good=False))
    claims = [v for v in by.values() if v.kind == "claim"]
    assert any(v.verdict == "not reproduced" for v in claims)
    for cid in ("rc_dpo", "rc_ipo", "rc_simpo", "rc_suppresses_loser", "rc_raises_winner_vs_base",
                "rc_accuracy", "low_overlap_control", "gold_reward"):
        assert by[cid].verdict == "not reproduced", cid
    assert by["vs_rpo_alpha"].verdict == "not reproduced"
    assert by["trl_parity"].verdict == "passed" and by["band_exact"].verdict == "passed"


def test_rc_clearly_better_reproduces_claims():
    by = _by(_per_seed(rc_good=True))
    for cid in ("base_displaces", "rc_dpo", "rc_ipo", "rc_simpo", "rc_suppresses_loser",
                "rc_raises_winner_vs_base", "rc_accuracy", "low_overlap_control", "gold_reward"):
        assert by[cid].verdict == "reproduced", cid
    assert by["vs_rpo_alpha"].kind == "finding" and by["vs_rpo_alpha"].verdict == "reproduced"


def test_parity_failure_fails_the_check():
    ps = _per_seed(rc_good=True)
    ps[3]["parity"]["grad_rel_diff"] = 1e-2
    by = _by(ps)
    assert by["trl_parity"].verdict == "failed" and by["trl_parity"].kind == "check"


def test_classification_and_margins():
    kinds = {c.id: c.kind for c in repro.CLAIMS}
    assert kinds["trl_parity"] == kinds["band_exact"] == "check"
    low = next(c for c in repro.CLAIMS if c.id == "low_overlap_control")
    assert low.direction == "equivalent" and low.margin > 0
    with pytest.raises(ValueError, match="at least one seed"):
        repro.judge([])
