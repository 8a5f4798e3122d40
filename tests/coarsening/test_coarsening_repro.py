"""Smoke reproduction on records (run, claims, controls, figures) and the claims on synthetic
records: each claim of kind "claim" reproduced by the method and not by its control."""

import dataclasses

import numpy as np
import pytest

from optzoo import papers
from optzoo.coarsening import repro
from optzoo.repro.evidence import Record, run_in_process
from optzoo.repro.judging import check_claims, judge_claims


@pytest.fixture(scope="module")
def smoke_runs():
    return run_in_process(repro, "smoke")


def _vals(seed, metric, arm, part=None):
    return {(r.part, r.instance): r.value for r in seed
            if r.metric == metric and r.arm == arm and (part is None or r.part == part)}


def test_contract_and_headline():
    check_claims(repro.CLAIMS)
    ids = {c.id for c in repro.CLAIMS}
    assert set(repro.HEADLINE) <= ids
    assert all(next(c for c in repro.CLAIMS if c.id == h).kind == "claim" for h in repro.HEADLINE)
    paper = next(p for p in papers.PAPERS if p.slug == "coarsening")
    assert tuple(paper.headline_claims) == tuple(repro.HEADLINE)
    assert not hasattr(repro, "judge")


def test_smoke_run_claims_figures(smoke_runs, tmp_path):
    verdicts = judge_claims(repro.CLAIMS, smoke_runs, scale="smoke", notes=repro.notes(smoke_runs))
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    for v in verdicts:
        assert not v.summary.startswith("its evidence could not be read"), v.summary
        if v.kind == "claim":
            assert v.control is not None and "could not be read" not in v.control.summary
    for seed in smoke_runs:
        assert all(v >= 0 for v in _vals(seed, "test_acc", "fgc").values())
        assert all(v > 0 for v in _vals(seed, "peak_mib", "fgc").values())
    paths = repro.figures(smoke_runs, tmp_path)
    assert paths and all(p.exists() for p in paths)


def test_arms_share_events_and_the_incremental_arm_is_the_main_rule(smoke_runs):
    """Every accuracy arm is scored on the same steps; 'incremental' is DIGC on growth, ACNR on
    rewiring (the same numbers); the naive control reuses the previous coarsening."""
    for seed in smoke_runs:
        inc = _vals(seed, "test_acc", "incremental")
        for arm in ("digc", "acnr", "naive", "fgc", "random", "full_graph", "heavy_edge", "louvain"):
            assert set(_vals(seed, "test_acc", arm)) == set(inc)
        for part, rule in repro._MAIN.items():
            a, b = _vals(seed, "test_acc", "incremental", part), _vals(seed, "test_acc", rule, part)
            assert a == b
            ea, eb = _vals(seed, "epsilon", "incremental", part), _vals(seed, "epsilon", rule, part)
            assert ea == eb
        # scaling streams: the three arms on the same steps of the same snapshots
        t = _vals(seed, "cpu_time", "incremental")
        assert set(t) == set(_vals(seed, "cpu_time", "fgc")) == set(_vals(seed, "cpu_time", "restart"))
        assert all(v >= 1 for v in _vals(seed, "iterations", "incremental").values())


def test_restart_control_runs_fgc_at_the_updates_budget():
    """The control of the speed and memory claims differs from FGC from scratch only in its
    budget (the update's iteration count), and from the update in reusing nothing."""
    cfg = dataclasses.replace(repro.SCALES["smoke"], scale_fgc=(2, 2), scale=(
        ("sbm-growth", "sbm", 600, 40, 1, "digc", 12),))
    recs = repro._scale_stream(cfg, cfg.scale[0], 0, repro_progress(), {})
    key = ("sbm-growth", "step1")
    nit = _vals(recs, "iterations", "incremental")[key]
    assert nit >= 1
    # the same FGC (start, weights, inner steps) as the "fgc" arm; only the rounds differ
    assert _vals(recs, "iterations", "fgc")[key] == 2 * 2
    assert _vals(recs, "iterations", "restart")[key] == -(-nit // 2) * 2
    assert {r.arm for r in recs if r.metric == "cpu_time"} == {"incremental", "fgc", "restart"}


def repro_progress():
    from optzoo.repro.claim import NullProgress

    return NullProgress()


def test_sbm_scaling_streams_share_one_fit_and_take_their_k():
    """Full's 10^5-node streams in miniature: an "sbm" source with an explicit k, DIGC and
    ACNR from one shared fit; the records carry k, the nodes and ACNR's refine counts."""
    cfg = dataclasses.replace(repro.SCALES["smoke"], scale_fgc=(2, 2), scale=(
        ("sbm-growth", "sbm", 600, 40, 1, "digc", 12), ("sbm-rewire", "sbm", 600, 40, 1, "acnr", 12)))
    cache: dict = {}
    recs = [r for s in cfg.scale for r in repro._scale_stream(cfg, s, 0, repro_progress(), cache)]
    assert len(cache) == 1  # one fit for both streams
    (_, _, _, fitted), = cache.values()
    assert fitted.state.k == 12 and fitted.state.node_ids.size == 600  # the shared fit is not updated
    k = _vals(recs, "k", "incremental")
    assert set(k.values()) == {12}
    nodes = _vals(recs, "nodes", "incremental")
    assert nodes[("sbm-growth", "step1")] == 640 and nodes[("sbm-rewire", "step1")] < 640
    ref = _vals(recs, "refined", "incremental")
    assert list(ref) == [("sbm-rewire", "step1")] and 0 < ref[("sbm-rewire", "step1")] < 600
    note = repro.notes([recs])["update_speed"]
    assert "sbm-rewire: " in note and "ACNR refined" in note


def _world(paper_right: bool, n_seeds: int = 6) -> list[list[Record]]:
    """Synthetic records in run()'s shape. paper_right: the update is fast, light and as
    accurate as FGC, and its controls (restart, naive) are not; else the update is slow and
    degrades accuracy while the controls do as the paper says."""
    rng = np.random.default_rng(3)
    out = []
    for _ in range(n_seeds):
        recs = []
        for part in repro.STREAMS:
            for t in range(1, 3):
                inst = f"step{t}"
                f = 90 + rng.normal(0, 0.3)
                acc = {"fgc": f, "full_graph": f + 0.5, "random": f - 20,
                       "incremental": f + (0.5 if paper_right else -8) + rng.normal(0, 0.3),
                       "naive": f + (-8 if paper_right else 0.5) + rng.normal(0, 0.3)}
                acc["digc"] = acc["acnr"] = acc["incremental"]
                for arm, v in acc.items():
                    recs.append(Record(part, arm, inst, "test_acc", v))
                e = 0.4 + rng.normal(0, 0.01)
                for arm, v in (("incremental", e), ("fgc", e), ("random", 0.6), ("naive", e)):
                    recs.append(Record(part, arm, inst, "epsilon", v))
                for arm in ("incremental", "fgc"):
                    recs.append(Record("", "certificates", f"{part}/{arm}/{inst}", "certificate_valid", 1.0))
        for name in ("fb-growth", "fb-rewire"):
            for t in range(1, 3):
                inst = f"step{t}"
                tf, mf = 10 * np.exp(rng.normal(0, 0.05)), 100 * np.exp(rng.normal(0, 0.05))
                good, bad = (0.02, 2.0) if paper_right else (2.0, 0.02)
                for arm, ft, fm in (("incremental", good, good), ("restart", bad, bad), ("fgc", 1, 1)):
                    recs.append(Record(name, arm, inst, "cpu_time", tf * ft))
                    recs.append(Record(name, arm, inst, "peak_mib", mf * fm))
        out.append(recs)
    return out


@pytest.mark.parametrize("paper_right", [True, False])
def test_claims_can_fail_and_controls_differ(paper_right):
    by = {v.claim: v for v in judge_claims(repro.CLAIMS, _world(paper_right), scale="quick")}
    for c in repro.CLAIMS:
        if c.kind != "claim":
            continue
        v = by[c.id]
        if paper_right:
            assert v.verdict == "reproduced" and v.control.verdict == "not reproduced", (c.id, v.summary)
            assert v.status == "reproduced"
        else:
            assert v.verdict == "not reproduced" and v.control.verdict == "reproduced", (c.id, v.summary)
    assert by["certificate_valid"].verdict == "passed"
    assert by["anchor_beats_random"].verdict == "passed"


def test_scales():
    assert repro.SCALES["smoke"].seeds in (2, 3)
    assert repro.SCALES["quick"].seeds >= 5 and repro.SCALES["full"].seeds > repro.SCALES["quick"].seeds
    # speed and memory are judged on scaling streams only: >= 2,000 nodes at quick, 1e5 at full
    assert min(s[2] for s in repro.SCALES["quick"].scale) >= 2000
    assert max(s[2] for s in repro.SCALES["full"].scale) >= 100_000
