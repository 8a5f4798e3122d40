"""The smoke reproduction runs, its verdicts are well formed, its figures are written."""

from optzoo.copro.repro import CLAIMS, SCALES, figures, judge, run
from optzoo.repro.claim import CLAIM_WORDS, NullProgress


def test_smoke_reproduction(tmp_path):
    cfg = SCALES["smoke"]
    per_seed = [run(cfg, s, NullProgress()) for s in range(cfg.seeds)]
    r = per_seed[0]["regimes"]["scarcity"]
    assert set(r) >= {"copro", "grpo", "random_search"}
    assert 0.0 <= r["copro"]["hv"] <= 1.0 and 0.0 <= r["copro"]["feasible_rate"] <= 1.0
    again = run(cfg, 0, NullProgress())
    assert again["regimes"]["scarcity"]["copro"]["hv"] == r["copro"]["hv"]  # same seed, same result
    verdicts = judge(per_seed)
    assert [v.claim for v in verdicts] == [c.id for c in CLAIMS]
    assert all(v.verdict in CLAIM_WORDS for v in verdicts)
    paths = figures(per_seed, tmp_path)
    assert paths and all(p.exists() for p in paths)
    assert SCALES["quick"].seeds >= 5
