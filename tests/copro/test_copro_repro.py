"""The smoke reproduction runs, its verdicts are well formed, its figures are written."""

from optzoo.copro.repro import CLAIMS, SCALES, figures, judge, run
from optzoo.repro.claim import CLAIM_WORDS, NullProgress


def test_smoke_reproduction(tmp_path):
    cfg = SCALES["smoke"]
    per_seed = [run(cfg, s, NullProgress()) for s in range(cfg.seeds)]
    r = per_seed[0]["regimes"]["scarcity"]
    assert set(r) >= {"copro", "grpo", "random_search", "nsga2"}
    assert 0.0 <= r["copro"]["hv"] <= 1.0 and 0.0 <= r["copro"]["feasible_rate"] <= 1.0
    assert 0.0 <= r["nsga2"]["hv"] <= 1.0 and r["nsga2"]["budget_per_spec"] == r["random_search"]["budget_per_spec"]
    again = run(cfg, 0, NullProgress())
    for arm in ("copro", "nsga2"):  # same seed, same result
        assert again["regimes"]["scarcity"][arm]["hv"] == r[arm]["hv"]
    verdicts = judge(per_seed)
    assert [v.claim for v in verdicts] == [c.id for c in CLAIMS]
    assert all(v.verdict in CLAIM_WORDS for v in verdicts)
    paths = figures(per_seed, tmp_path)
    assert paths and all(p.exists() for p in paths)
    assert SCALES["quick"].seeds >= 5


def test_nsga2_reference_uses_exactly_its_budget_and_beats_random_search():
    import numpy as np

    from optzoo._core.rng import np_rng
    from optzoo.copro.repro import opamp_task as T

    cfg = SCALES["quick"]
    held = T.sample_specs("loose", 4, np_rng(90000, "copro", "eval", "benign", "heldout"))
    seen = []
    real = T.opamp_evaluate

    def counting(x, spec):
        seen.append(len(x))
        return real(x, spec)

    T.opamp_evaluate = counting
    try:
        nsga = T.nsga2_search("benign", cfg, 90000, 400, eval_specs=held)
    finally:
        T.opamp_evaluate = real
    assert sum(seen) >= 4 * 400  # pymoo may overshoot its last generation; only 400 per spec count
    rand = T.random_search("benign", cfg, 90000, 400, eval_specs=held)
    assert 0.0 < rand < nsga <= 1.0 and np.isfinite(nsga)
