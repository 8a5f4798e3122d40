"""Smoke reproduction (run, judge, figures) and the judge on synthetic per-seed metrics."""

import json

import numpy as np
import pytest

from optzoo.coarsening import repro
from optzoo.repro.claim import NullProgress, Verdict


@pytest.fixture(scope="module")
def smoke_runs():
    return [repro.run(repro.SCALES["smoke"], s, NullProgress()) for s in (0, 1)]


def test_smoke_run_judge_figures(smoke_runs, tmp_path):
    json.dumps(smoke_runs)
    verdicts = repro.judge(smoke_runs)
    assert all(isinstance(v, Verdict) for v in verdicts)
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert [v.kind for v in verdicts] == [c.kind for c in repro.CLAIMS]
    for r in smoke_runs:
        for s in repro.STREAMS:
            assert np.all(np.array(r[s]["fgc.test_acc"]) >= 0)
        for rec in r["scale"].values():
            assert np.all(np.array(rec["inc.time"]) >= 0) and np.all(np.array(rec["fgc.mem"]) > 0)
    paths = repro.figures(smoke_runs, tmp_path)
    assert paths and all(p.exists() for p in paths)


def test_run_deterministic_metrics(smoke_runs):
    b = repro.run(repro.SCALES["smoke"], 0, NullProgress())
    for s in repro.STREAMS:
        assert smoke_runs[0][s]["acnr.test_acc"] == b[s]["acnr.test_acc"]
        assert smoke_runs[0][s]["fgc.epsilon_bound"] == b[s]["fgc.epsilon_bound"]


def test_scales():
    assert repro.SCALES["smoke"].seeds in (2, 3)
    assert repro.SCALES["quick"].seeds >= 5 and repro.SCALES["full"].seeds > repro.SCALES["quick"].seeds
    # speed and memory are judged on scaling streams only: >= 2,000 nodes at quick, 1e5 at full
    assert min(s[2] for s in repro.SCALES["quick"].scale) >= 2000
    assert max(s[2] for s in repro.SCALES["full"].scale) >= 100_000


def test_sbm_scaling_streams_share_one_fit_and_take_their_k():
    """Full's 10^5-node streams in miniature: an "sbm" source with an explicit k, DIGC and
    ACNR from one shared fit; the records carry k, the arrivals and ACNR's refine counts."""
    import dataclasses

    cfg = dataclasses.replace(repro.SCALES["smoke"], scale_fgc=(2, 2), scale=(
        ("sbm-growth", "sbm", 600, 40, 1, "digc", 12), ("sbm-rewire", "sbm", 600, 40, 1, "acnr", 12)))
    cache: dict = {}
    recs = {s[0]: repro._scale_stream(cfg, s, 0, NullProgress(), cache) for s in cfg.scale}
    assert len(cache) == 1  # one fit for both streams
    (_, _, _, fitted), = cache.values()
    assert fitted.state.k == 12 and fitted.state.node_ids.size == 600  # the shared fit is not updated
    g, r = recs["sbm-growth"], recs["sbm-rewire"]
    assert g["k"] == r["k"] == 12 and g["add"] == 40 and g["refined"] == []
    assert g["p"] == [640] and r["p"][0] < 640  # the rewiring stream also deletes nodes
    assert len(r["refined"]) == 1 and 0 < r["refined"][0] < 600
    note = repro._refined_note([{"scale": recs}], list(recs))
    assert note.startswith("; sbm-rewire: ACNR refined ") and "sbm-growth" not in note


def _synthetic(better: bool, n_seeds: int = 6) -> list[dict]:
    """Per-seed records in the shape run() returns, incremental clearly better / worse."""
    rng = np.random.default_rng(3)
    out = []
    for _ in range(n_seeds):
        r = {}
        for s in repro.STREAMS:
            steps = 3
            fgc_acc = 90 + rng.normal(0, 0.3, steps)
            inc = fgc_acc + (1.0 if better else -8.0) + rng.normal(0, 0.3, steps)
            other = fgc_acc + (-0.5 if better else 5.0) + rng.normal(0, 0.3, steps)
            e_f = 0.4 + rng.normal(0, 0.01, steps)
            e_i = e_f * (0.95 if better else 2.5)
            e_r = np.full(steps, 0.6 if better else 0.3) + rng.normal(0, 0.01, steps)
            main, alt = (("digc", "acnr") if s == "growth" else ("acnr", "digc"))
            rec = {f"{main}.test_acc": inc.tolist(), f"{alt}.test_acc": other.tolist(),
                   "fgc.test_acc": fgc_acc.tolist(), "random.epsilon": e_r.tolist()}
            for m, e in ((main, e_i), (alt, e_i), ("fgc", e_f)):
                rec[f"{m}.epsilon"] = e.tolist()
                rec[f"{m}.epsilon_tight"] = (e + 0.1).tolist()
                rec[f"{m}.epsilon_bound"] = (e + 0.5).tolist()
            r[s] = rec
        scale = {}
        for name, rule in (("fb-growth", "digc"), ("fb-rewire", "acnr")):
            t_f = 10 * np.exp(rng.normal(0, 0.05, 2))
            m_f = 100 * np.exp(rng.normal(0, 0.05, 2))
            f = 0.02 if better else 3.0
            scale[name] = {"rule": rule, "p": [2200, 2400], "inc.time": (t_f * f).tolist(), "fgc.time": t_f.tolist(),
                           "inc.mem": (m_f * (0.2 if better else 2.0)).tolist(), "fgc.mem": m_f.tolist()}
        r["scale"] = scale
        out.append(r)
    return out


def test_claims_can_fail_when_incremental_is_clearly_worse():
    verdicts = repro.judge(_synthetic(better=False))
    claims = {v.claim: v.verdict for v in verdicts if v.kind == "claim"}
    assert "not reproduced" in claims.values()
    assert all(v == "not reproduced" for v in claims.values()), claims


def test_claims_hold_when_incremental_is_clearly_better():
    verdicts = repro.judge(_synthetic(better=True))
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert all(v.verdict in ("reproduced", "passed") for v in verdicts), [(v.claim, v.verdict) for v in verdicts]
