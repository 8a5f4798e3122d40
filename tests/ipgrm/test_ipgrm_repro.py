"""Smoke reproduction of IP-GRM on records: every claim judged by the harness, the drift
claim's control differs only in whose response the rubric read, synthetic records show the
claim can hold, fail and be reproduced by its control too; token checks are exact."""

import dataclasses
import json

import pytest

from optzoo.ipgrm import HFJudge, IPGRMReward, PrincipleCache, make_question, repro
from optzoo.ipgrm.repro.throughput import (
    PIPELINES,
    Lengths,
    build_timing_model,
    expected_counts,
    run_pipeline,
)
from optzoo.repro.claim import CHECK_WORDS, CLAIM_WORDS, NullProgress
from optzoo.repro.evidence import Record, as_records, run_in_process
from optzoo.repro.judging import check_claims, headline_status, judge_claims


def test_token_counts_match_cost_model():
    m = build_timing_model(n_layer=1, n_embd=16, n_head=2, vocab=64, n_positions=64)
    L = Lengths(4, 8, 5, 6)
    for k in PIPELINES:
        for share in (False, True):
            o = run_pipeline(k, m, n_prompts=2, group=3, lengths=L, prefix_sharing=share)
            e = expected_counts(k, 2, 3, L, prefix_sharing=share)
            assert (o["prefill_tokens"], o["decoded_tokens"]) == (e["prefill_tokens"], e["decoded_tokens"])


def test_hf_judge_batched_toy():
    from optzoo.tinylm import load_tiny_lm

    model, tok = load_tiny_lm("toy")
    j = HFJudge(model, tok, max_tokens_principles=4, max_tokens_judge=4, max_q_chars=60, max_r_chars=40)
    f = IPGRMReward(j, cache=PrincipleCache("step"), default_score=5.0, num_generations=2)
    q = make_question(0, ["w01", "w02", "w03"], 4, 8)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = f([q, q], ["w01 w02", "w03"])
    assert len(out) == 2 and j.calls["principles"] == 1


@pytest.fixture(scope="module")
def per_seed():
    assert 2 <= repro.SCALES["smoke"].seeds <= 3 and repro.SCALES["quick"].seeds >= 5
    return run_in_process(repro)


def _by(vs):
    return {v.claim: v for v in vs}


def test_room_contract():
    check_claims(repro.CLAIMS)
    assert repro.MAX_THREADS == 1  # E2's findings are CPU times: one thread per unit
    kinds = {c.id: c.kind for c in repro.CLAIMS}
    assert [c for c, k in kinds.items() if k == "claim"] == ["drift_real"]
    assert repro.HEADLINE == ("drift_real",)
    assert {"cache_faster", "naive_slower", "gain_grows_with_g", "cost_model", "hacking", "gold_falls",
            "drift_135m", "real_judge_informative"} == {c for c, k in kinds.items() if k == "finding"}
    by = {c.id: c for c in repro.CLAIMS}
    assert by["drift_real"].scales == ("full",) and by["drift_135m"].scales == ("quick",)
    assert by["drift_real"].evidence == by["drift_135m"].evidence
    assert dict(by["drift_real"].control.arms) == {"own_rubric": "other_rubric"}


def test_smoke_judge_and_figures(per_seed, tmp_path):
    vs = judge_claims(repro.CLAIMS, per_seed, scale="smoke", notes=repro.notes(per_seed))
    assert [v.claim for v in vs] == [c.id for c in repro.CLAIMS]
    for v, c in zip(vs, repro.CLAIMS, strict=True):
        assert v.kind == c.kind and v.verdict in (CHECK_WORDS if c.kind == "check" else CLAIM_WORDS)
        assert "could not be read" not in v.summary, c.id
        if v.control is not None:
            assert "could not be read" not in v.control.summary, c.id
    by = _by(vs)
    # the SmolLM2 judge does not run at smoke: the headline is untested there, never faked
    assert not by["drift_real"].measured and headline_status(vs, repro.HEADLINE) == "untested at this scale"
    for c in ("cache_fewer_tokens", "naive_more_prefill", "token_gain_grows", "drift_protocol"):
        assert by[c].verdict == "passed", c
    for c in ("cache_fewer_tokens", "naive_more_prefill", "token_gain_grows"):  # exact: counted once
        assert by[c].parts[0].level is None
    assert all(p.exists() for p in repro.figures(per_seed, tmp_path))


def test_hacking_control_removes_only_the_injected_drift(per_seed):
    c = next(c for c in repro.CLAIMS if c.id == "hacking")
    assert set(c.control.arms) == {"coupled@2.0", "ip_cache@2.0"}
    assert {k.split("@")[0]: v.split("@")[0] for k, v in c.control.arms.items()} == {
        "coupled": "coupled", "ip_cache": "ip_cache"}
    got, ctl = c.evidence.collect(per_seed), c.evidence.collect(per_seed, c.control.arms)
    assert set(got) == set(ctl) == {"gold", "hack"}


def test_rerun_is_identical_except_times(per_seed):
    again = repro.run(repro.SCALES["smoke"], 0, NullProgress())
    timed = ("cpu_ms", "wall_ms", "cpu_ms_plain", "wall_ms_plain", "cost_model_error", "cost_model_error_plain",
             "cpu_s_e123", "cpu_s_real")
    keep = [r for r in per_seed[0] if r.metric not in timed]
    assert keep == [r for r in as_records(json.loads(json.dumps([dataclasses.asdict(r) for r in again])))
                    if r.metric not in timed]


def _drift_records(own: float, other: float, n_seeds: int = 8, n_pairs: int = 3):
    import numpy as np

    out = []
    for s in range(n_seeds):
        rng = np.random.default_rng(s)
        recs = []
        for i in range(n_pairs):
            recs.append(Record("", "p0", f"pair{i}", "discrimination", 0.3 + 0.05 * rng.standard_normal()))
            for part in ("plus", "minus"):
                recs.append(Record(part, "own_rubric", f"pair{i}", "drift_rel", own + 0.01 * rng.standard_normal()))
                recs.append(Record(part, "other_rubric", f"pair{i}", "drift_rel",
                                   other + 0.01 * rng.standard_normal()))
        out.append(recs)
    return out


@pytest.mark.parametrize("own, other, status", [(0.05, 0.0, "reproduced"), (0.05, 0.05, "cannot fail"),
                                                 (-0.05, 0.0, "not reproduced")])
def test_drift_claim_can_hold_fail_and_be_matched_by_its_control(own, other, status):
    claims = [c for c in repro.CLAIMS if c.id in ("drift_real", "drift_135m", "real_judge_informative")]
    full = _by(judge_claims(claims, _drift_records(own, other), scale="full"))
    assert full["drift_real"].status == status
    assert headline_status(list(full.values()), repro.HEADLINE) == (
        "undecided" if status == "cannot fail" else status)
    assert not full["drift_135m"].measured  # quick's finding, not measured at full
    quick = _by(judge_claims(claims, _drift_records(own, other), scale="quick"))
    assert not quick["drift_real"].measured and quick["drift_135m"].measured
    assert headline_status(list(quick.values()), repro.HEADLINE) == "untested at this scale"
