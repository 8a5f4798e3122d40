"""Smoke reproduction: run, judge, figures."""

from optzoo.markov_zo import repro
from optzoo.repro.claim import VERDICTS, NullProgress


def test_smoke_reproduction(tmp_path):
    cfg = repro.SCALES["smoke"]
    per_seed = [repro.run(cfg, s, NullProgress()) for s in (0, 1)]
    again = repro.run(cfg, 0, NullProgress())
    assert again["sweep"] == per_seed[0]["sweep"]  # same seed, same numbers
    verdicts = repro.judge(per_seed)
    assert {v.claim for v in verdicts} == {c.id for c in repro.CLAIMS}
    assert all(v.verdict in VERDICTS and v.summary for v in verdicts)
    paths = repro.figures(per_seed, tmp_path)
    assert paths and all(p.exists() and p.stat().st_size > 0 for p in paths)
    assert set(repro.SCALES) >= {"smoke", "quick", "full"}
