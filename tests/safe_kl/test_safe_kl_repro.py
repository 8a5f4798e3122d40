"""The reproduction on records: smoke run, the claims' contract, controls, claims that can
fail (synthetic records in two worlds), and the identities moved out of the claims (Jensen's
bias of minibatch-LSE, F - F_rho ~ rho, the control's biased estimator)."""

import ast
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from optzoo._core.io import to_jsonable
from optzoo.repro.claim import VERDICTS, NullProgress
from optzoo.repro.evidence import Record, as_records
from optzoo.repro.judging import check_claims, headline_status, judge_claims
from optzoo.safe_kl import (
    exact_logsumexp,
    minibatch_logsumexp,
    repro,
    safe_alpha,
    safe_kl_logsumexp,
)

HEADLINE = ("sgd_gap", "stable_dro")


@pytest.fixture(scope="module")
def smoke():
    cfg = repro.SCALES["smoke"]
    return [repro.run(cfg, s, NullProgress()) for s in range(cfg.seeds)]


def test_scales_carry_seeds():
    assert repro.SCALES["smoke"].seeds in (2, 3)
    assert repro.SCALES["quick"].seeds >= 5
    assert repro.SCALES["full"].seeds > repro.SCALES["quick"].seeds
    for cfg in repro.SCALES.values():
        assert repro.RHO in cfg.rhos and cfg.sgd_rho == repro.RHO and cfg.epochs > 0
        assert set(cfg.sgd_datasets) <= set(cfg.datasets)
        assert 1.0 in cfg.c_lr_mults  # POT's default lr is always on the OT grid


def test_smoke_reproduction(smoke, tmp_path):
    check_claims(repro.CLAIMS)
    assert set(HEADLINE) == set(repro.HEADLINE)
    assert all(c.kind == "claim" for c in repro.CLAIMS if c.id in HEADLINE)
    back = [as_records(json.loads(json.dumps(to_jsonable(seed)))) for seed in smoke]
    assert [[(r.part, r.arm, r.instance, r.metric) for r in s] for s in back] == \
        [[(r.part, r.arm, r.instance, r.metric) for r in s] for s in smoke]
    again = repro.run(repro.SCALES["smoke"], 0, NullProgress())
    assert [(r.metric, r.arm, r.part, r.instance, r.value) for r in again] == \
        [(r.metric, r.arm, r.part, r.instance, r.value) for r in smoke[0]]  # seeded
    verdicts = judge_claims(repro.CLAIMS, smoke, scale="smoke", notes=repro.notes(smoke))
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert [v.kind for v in verdicts] == [c.kind for c in repro.CLAIMS]
    by_id = {v.claim: v for v in verdicts}
    for c in repro.CLAIMS:
        v = by_id[c.id]
        assert v.verdict in VERDICTS and v.summary and v.rule
        assert "could not be read" not in v.summary, v.summary
        if c.kind == "claim":  # every claim has its control judged on the same units
            assert v.control is not None and v.control.verdict in VERDICTS and v.control_removes
            assert "could not be read" not in v.control.summary, v.control.summary
    # the headline's stability half: Safe-KL stays finite, its control (SumExp) overflows at
    # lam = 0.01 at every lr even at smoke, so the two verdicts differ
    assert by_id["stable_dro"].verdict == "reproduced"
    assert by_id["stable_dro"].control.verdict == "not reproduced"
    assert headline_status(verdicts, repro.HEADLINE) in ("reproduced", "not reproduced", "undecided")
    # sgd_gap parts: every (data set, batch) of the scale
    cfg = repro.SCALES["smoke"]
    assert {p.name for p in by_id["sgd_gap"].parts} == {f"{d}/b{b}" for d in cfg.sgd_datasets for b in cfg.batches}
    paths = repro.figures(smoke, tmp_path)
    assert paths and all(p.exists() and p.stat().st_size > 0 for p in paths)


def _world(paper_right: bool, control_too: bool = False, n: int = 6) -> list[list[Record]]:
    """sgd_gap records in two worlds: Safe-KL's gap 10x below (right) or 3x above (wrong)
    minibatch-LSE's; the control (alpha per batch) like LSE unless ``control_too``."""
    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        seed = []
        for part in ("diabetes/b200", "diabetes/b10", "synthetic/b10"):
            g = 1e-2 * math.exp(0.1 * rng.normal())
            f = 0.1 if paper_right else 3.0
            fc = f if control_too else 1.0
            for arm, v in ((repro.LSE, g), (repro.SAFE, f * g * math.exp(0.1 * rng.normal())),
                           (repro.SAFE_BATCH, fc * g * math.exp(0.1 * rng.normal()))):
                seed.append(Record(part, arm, "eval_order", "sgd_gap", v))
        out.append(seed)
    return out


def _sgd_claim():
    return [c for c in repro.CLAIMS if c.id == "sgd_gap"]


def test_sgd_gap_can_fail_and_hold_and_its_control_can_fail():
    right = judge_claims(_sgd_claim(), _world(True))[0]
    wrong = judge_claims(_sgd_claim(), _world(False))[0]
    assert right.verdict == "reproduced" and right.control.verdict != "reproduced"
    assert right.status == "reproduced"
    assert wrong.verdict == "not reproduced"
    both = judge_claims(_sgd_claim(), _world(True, control_too=True))[0]
    assert both.verdict == "reproduced" and both.control.verdict == "reproduced"
    assert both.status != "reproduced"  # reproduced under its control too: not counted


def test_sgd_gap_one_bad_batch_fails_the_claim():
    per_seed = _world(True)
    for seed in per_seed:
        for i, r in enumerate(seed):
            if r.part == "diabetes/b200" and r.arm == repro.SAFE:
                seed[i] = Record(r.part, r.arm, r.instance, r.metric, 30 * r.value)
    v = judge_claims(_sgd_claim(), per_seed)[0]
    assert v.verdict == "not reproduced"


def test_diverged_sgd_arm_is_nan_with_a_warning():
    A = {"datasets": {"diabetes": {"batches": {"10": {"bias_gap": {repro.LSE: 0.1, repro.SAFE: 0.01},
                                                      "sgd": {repro.SAFE: {"status": "diverged",
                                                                           "gap": float("nan"), "lr": 1.0,
                                                                           "failed_lrs": 11,
                                                                           "gap_curve": [0.1, float("inf")]}}}}}}}
    with pytest.warns(RuntimeWarning, match=repro.SAFE):
        recs = repro._records_A(A)
    gap = [r for r in recs if r.metric == "sgd_gap"]
    assert len(gap) == 1 and math.isnan(gap[0].value)


def test_minibatch_lse_bias_grows_as_batch_shrinks_jensen():
    # the check lse_bias_grows as an identity: the expectation of minibatch-LSE over every
    # batch of size b (without replacement) increases with b and equals LSE at b = n
    s = torch.as_tensor(np.random.default_rng(3).normal(0, 2, size=7))
    full = float(exact_logsumexp(s))
    means = []
    for b in range(1, 8):
        idx = torch.as_tensor(list(itertools.combinations(range(7), b)))
        means.append(float(minibatch_logsumexp(s[idx], dim=-1).mean()))
    assert all(a < b_ + 1e-12 for a, b_ in zip(means, means[1:], strict=False))
    assert means[-1] == pytest.approx(full, abs=1e-12) and means[0] < full


def test_control_estimator_is_biased_and_safe_is_not():
    # shared alpha: the mean over all batches of the surrogate is the full-data surrogate
    # (unbiased); alpha solved per batch (the control): the mean is below the full G_rho
    s = torch.as_tensor(np.random.default_rng(4).normal(0, 2, size=8))
    idx = torch.as_tensor(list(itertools.combinations(range(8), 2)))
    a = safe_alpha(s, rho=0.01)
    full = float(safe_kl_logsumexp(s, a, rho=0.01))
    assert float(safe_kl_logsumexp(s[idx], a, rho=0.01, dim=-1).mean()) == pytest.approx(full, abs=1e-10)
    per_batch = safe_kl_logsumexp(s[idx], safe_alpha(s[idx], rho=0.01, dim=-1), rho=0.01, dim=-1)
    assert float(per_batch.mean()) < full - 1e-3
    assert torch.allclose(per_batch, safe_kl_logsumexp(s[idx], None, rho=0.01, dim=-1), atol=1e-9)


def test_approx_gap_is_order_rho():
    # the check approx_order_rho as a unit test
    phi = torch.as_tensor(np.random.default_rng(5).normal(0, 2, size=1000))
    F = float(exact_logsumexp(phi))
    rhos = [1e-2, 1e-3, 1e-4]
    gaps = [F - float(safe_kl_logsumexp(phi, rho=r, normalized=True)) for r in rhos]
    assert min(gaps) >= 0
    assert 0.8 <= np.polyfit(np.log(rhos), np.log(gaps), 1)[0] <= 1.2


def test_library_does_not_import_repro_nor_set_threads():
    root = Path(repro.__file__).parents[1]
    for f in root.glob("*.py"):
        tree = ast.parse(f.read_text())
        mods = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        mods += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not any("safe_kl.repro" in m for m in mods), f
    for f in Path(repro.__file__).parent.glob("*.py"):
        assert "set_num_threads" not in f.read_text(), f
