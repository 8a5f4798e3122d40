"""Smoke reproduction: run, judge, figures."""

import dataclasses

import numpy as np

from optzoo.coarsening import repro
from optzoo.repro.claim import VERDICTS, NullProgress

# smaller than SCALES["smoke"] in the number of steps only, to keep the folder under a minute
CFG = dataclasses.replace(repro.SCALES["smoke"], steps=1, fb_steps=1)


def test_smoke_run_judge_figures(tmp_path):
    per_seed = [repro.run(CFG, s, NullProgress()) for s in (0, 1)]
    verdicts = repro.judge(per_seed)
    assert {v.claim for v in verdicts} == {c.id for c in repro.CLAIMS}
    assert all(v.verdict in VERDICTS for v in verdicts)
    for r in per_seed:
        for s in repro.STREAMS:
            assert np.all(np.array(r[s]["acnr.time"]) > 0)
            assert np.all(np.array(r[s]["fgc.test_acc"]) >= 0)
    paths = repro.figures(per_seed, tmp_path)
    assert paths and all(p.exists() for p in paths)


def test_run_deterministic_metrics():
    a = repro.run(CFG, 3, NullProgress())
    b = repro.run(CFG, 3, NullProgress())
    for s in repro.STREAMS:
        assert a[s]["acnr.test_acc"] == b[s]["acnr.test_acc"]
        assert a[s]["fgc.epsilon_bound"] == b[s]["fgc.epsilon_bound"]
