"""Smoke reproduction: runs, judges every claim, draws figures; same seed, same numbers."""

import json

import pytest

from optzoo._core.stats import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED
from optzoo.momentum_tracking import repro
from optzoo.repro.claim import NullProgress


@pytest.fixture(scope="module")
def per_seed():
    cfg = repro.SCALES["smoke"]
    return [json.loads(json.dumps(repro.run(cfg, s, NullProgress()))) for s in (0, 1)]


def test_smoke_judge_and_figures(per_seed, tmp_path):
    verdicts = repro.judge(per_seed)
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert all(v.verdict in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE) and v.summary for v in verdicts)
    paths = repro.figures(per_seed, tmp_path)
    assert len(paths) == 5 and all(p.exists() and p.stat().st_size > 0 for p in paths)
    # exact parts of the smoke run: transient and additivity are exact to rounding
    for r in per_seed:
        assert max(r["decomposition"]["transient_rel_err"]) < 1e-8
        assert r["decomposition"]["additivity_max_abs"] < 1e-9
        assert r["amplification"]["rel_err_vs_exact"] < 1e-3


def test_single_seed_is_inconclusive(per_seed):
    assert all(v.verdict == INCONCLUSIVE for v in repro.judge(per_seed[:1]))


def test_same_seed_same_output(per_seed):
    cfg = repro.SCALES["smoke"]
    from optzoo.momentum_tracking.repro import _c3

    again = json.loads(json.dumps(_c3(cfg, 0)))
    assert again == per_seed[0]["sgd_wins_drift"]
