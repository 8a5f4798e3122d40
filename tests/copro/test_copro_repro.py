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


def test_igd_plus_orders_arms_and_penalises_no_feasible_sample(monkeypatch):
    import numpy as np

    from optzoo._core.rng import np_rng
    from optzoo.copro.repro import opamp_task as T

    monkeypatch.setattr(T, "IGD_REF_BUDGET", 2000)
    held = T.sample_specs("loose", 1, np_rng(90000, "copro", "eval", "benign", "heldout"))
    lv = np_rng(90000, "igd-test").integers(0, T.N_LEVELS, (400, 7))
    F, g = T.opamp_evaluate(T.decode_levels(lv, T.N_LEVELS), held[0][0])
    assert (g <= 0).all(1).sum() >= 4
    half = (F[:200], g[:200])
    none = (F[:5], np.ones_like(g[:5]))  # every sample infeasible
    igd = T.igd_plus("benign", 90000, held, {"more": [(F, g)], "half": [half], "none": [none]},
                     n_specs=1)
    # a superset of samples is never farther from the front; no feasible sample is the worst
    assert 0.0 <= igd["more"] <= igd["half"] < igd["none"]
    assert np.isfinite(igd["none"])


def test_task_b_is_run_for_every_arm_and_judged(tmp_path):
    from dataclasses import replace

    from optzoo.copro.repro.toolworld import TaskBConfig

    tb = TaskBConfig(iters=4, n_queries=2, G=4, eval_queries=2, eval_k=8, eval_every=2)
    cfg = replace(SCALES["smoke"], arms=("copro", "grpo"), lr_grid=(1e-3, 1e-2),
                  tune_iters=2, task_b=tb)
    per_seed = [run(cfg, s, NullProgress()) for s in range(2)]
    t = per_seed[0]["task_b"]
    assert set(t) == {"copro", "grpo", "random_search"}
    assert t["copro"]["lr"] in (1e-3, 1e-2) and set(t["copro"]["tune_scores"]) == {"0.001", "0.01"}
    assert all(0.0 <= t[a]["hv"] <= 1.0 for a in t)
    v = {x.claim: x for x in judge(per_seed)}["c1_tool_use"]
    assert v.verdict in CLAIM_WORDS and "task_b/copro" in v.numbers
    assert (tmp_path / "task_b_hv.png") in figures(per_seed, tmp_path)
