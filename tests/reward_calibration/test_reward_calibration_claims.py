"""The room's claims on records: declared evidence, controls (RC switched off), kinds, headline."""

import numpy as np
import pytest
import torch

from optzoo.papers import PAPERS
from optzoo.repro.evidence import Record
from optzoo.repro.judging import check_claims, headline_status, judge_claims
from optzoo.reward_calibration import RewardCalibrator, repro

PAPER_CLAIMS = ("rc_dpo", "rc_ipo", "rc_simpo", "rc_winner_after_transient",
                "rc_raises_winner_vs_base", "gold_reward")


def _arm(rng, part, arm, dz_w, dz_l, acc, gold, late):
    vals = {"dz_w": dz_w, "dz_l": dz_l, "accuracy": acc, "gold": gold, "dz_w_late": late,
            "displaced": float(dz_w < 0)}
    noise = {"accuracy": 0.002, "displaced": 0.0}
    return [Record(part, arm, "heldout", m, v + noise.get(m, 0.05) * rng.standard_normal())
            for m, v in vals.items()]


def _records(rc_good: bool, n=8):
    out = []
    for s in range(n):
        rng = np.random.default_rng(s)
        recs = []
        for lt in repro.LOSSES:
            recs += _arm(rng, lt, "base", -3.0, -8.0, 0.90, -10.0, -1.0)
            recs += (_arm(rng, lt, "rc", 0.5, -6.0, 0.91, -9.0, 0.3) if rc_good
                     else _arm(rng, lt, "rc", -5.0, 1.0, 0.70, -12.0, -2.0))
        recs += _arm(rng, "dpo", "base_k10", -1.0, -9.0, 0.99, -10.0, 0.0)
        recs += _arm(rng, "dpo", "rc_k10", -1.0 if rc_good else 2.0, -9.0, 0.99, -10.0, 0.0)
        recs += _arm(rng, "dpo", "nll", 0.2 if rc_good else 1.0, -5.0, 0.90, -9.5, 0.0)
        recs += [Record("", "ours", "batch", "trl_parity", 1.0),
                 Record("", "ours", "testbed", "band_exact", 1.0)]
        out.append(recs)
    return out


def _by(per_seed):
    vs = judge_claims(repro.CLAIMS, per_seed, scale="quick", notes=repro.notes(per_seed))
    assert [v.claim for v in vs] == [c.id for c in repro.CLAIMS]
    return {v.claim: v for v in vs}


def test_contract_kinds_and_headline():
    check_claims(repro.CLAIMS)
    kinds = {c.id: c.kind for c in repro.CLAIMS}
    assert {i for i, k in kinds.items() if k == "claim"} == set(PAPER_CLAIMS)
    assert kinds["rc_suppresses_loser"] == "check"  # near-automatic (issue 40)
    assert kinds["trl_parity"] == kinds["band_exact"] == "check"
    for cid in ("base_displaces", "rc_accuracy", "low_overlap_control", "vs_rpo_alpha"):
        assert kinds[cid] == "finding", cid
    for c in repro.CLAIMS:
        if c.kind == "claim":
            assert c.source.startswith("abstract")
            assert dict(c.control.arms) == {"rc": "base"}
    paper = next(p for p in PAPERS if p.slug == "reward_calibration")
    assert tuple(repro.HEADLINE) == tuple(paper.headline_claims)
    assert set(repro.HEADLINE) <= set(PAPER_CLAIMS)


def test_method_reproduces_and_its_control_does_not():
    by = _by(_records(rc_good=True))
    for cid in PAPER_CLAIMS:
        assert by[cid].verdict == "reproduced", cid
        assert by[cid].control is not None and by[cid].control.verdict != "reproduced", cid
        assert by[cid].status == "reproduced", cid
    for cid in ("base_displaces", "rc_accuracy", "low_overlap_control", "vs_rpo_alpha"):
        assert by[cid].verdict == "reproduced", cid
    assert by["rc_suppresses_loser"].verdict == "passed"
    assert by["trl_parity"].verdict == by["band_exact"].verdict == "passed"
    vs = list(by.values())
    assert headline_status(vs, repro.HEADLINE) == "reproduced"


def test_rc_clearly_worse_fails_claims():
    by = _by(_records(rc_good=False))
    for cid in (*PAPER_CLAIMS, "rc_accuracy", "low_overlap_control", "vs_rpo_alpha"):
        assert by[cid].verdict == "not reproduced", cid
    assert by["rc_suppresses_loser"].verdict == "failed"
    assert headline_status(list(by.values()), repro.HEADLINE) == "not reproduced"


def test_a_failed_check_record_fails_the_check():
    ps = _records(rc_good=True)
    ps[3] = [Record("", "ours", "batch", "trl_parity", 0.0) if r.metric == "trl_parity" else r
             for r in ps[3]]
    assert _by(ps)["trl_parity"].verdict == "failed"


def test_control_arm_differs_only_in_calibration():
    for scale in ("smoke", "quick", "full"):
        arms = repro.training_arms(repro.SCALES[scale])
        rc = [a for a in arms if a["rc"]]
        assert rc
        for a in rc:
            twins = [b for b in arms if b == dict(a, rc=False)]
            assert len(twins) == 1, a


def test_rc_never_flips_the_loser_incentive():
    """Why rc_suppresses_loser is a check: RC scales the loser's gradient by 1/alpha > 0."""
    g = torch.Generator().manual_seed(0)
    for alpha in (0.05, 0.5, 1.0, 3.0, 40.0):
        z_w = torch.randn(6, generator=g, requires_grad=True)
        z_l = torch.randn(6, generator=g, requires_grad=True)
        w_rc, l_rc = RewardCalibrator.rescale(z_w, z_l, alpha)
        assert torch.allclose(w_rc, z_w) and torch.allclose(l_rc, z_l)  # values unchanged
        c_w, c_l = torch.randn(6, generator=g), torch.randn(6, generator=g)
        gw, gl = torch.autograd.grad((c_w * w_rc + c_l * l_rc).sum(), (z_w, z_l))
        assert torch.allclose(gw, alpha * c_w) and torch.allclose(gl, c_l / alpha)
        assert torch.equal(torch.sign(gl), torch.sign(c_l))


def test_missing_arms_leave_claims_undecided_not_crashed():
    ps = [[r for r in seed if r.arm != "nll"] for seed in _records(rc_good=True)]
    by = _by(ps)
    assert by["vs_rpo_alpha"].verdict == "inconclusive" and "could not be read" in by["vs_rpo_alpha"].summary
    with pytest.raises(ValueError):
        check_claims([*repro.CLAIMS, repro.CLAIMS[0]])
