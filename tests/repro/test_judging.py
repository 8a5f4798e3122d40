"""The one judging layer: calibration at the threshold, the combination rule, equivalence,
deterministic instances, and the generated wording."""

import numpy as np
import pytest

from optzoo.repro.claim import Claim
from optzoo.repro.judging import combine, deterministic, judge, paired, rule_text, seeds_to_decide

GREATER = Claim("g", "effect is positive", "per-seed effect", direction="greater", threshold=0.0)
LESS = Claim("l", "effect below 1", "per-seed effect", direction="less", threshold=1.0)
EQUIV = Claim("e", "no difference", "per-seed difference", direction="equivalent", threshold=0.0, margin=0.5)
NONINF = Claim("n", "not worse by more than 0.1", "per-seed gain", direction="noninferior", threshold=0.0,
               margin=0.1)
ALL = Claim("a", "holds everywhere", "per instance", direction="all", kind="check", unit="instance")


def _false_rate(claim, mean, n_seeds=5, parts=1, trials=2000, sd=1.0, dist="normal"):
    """Fraction of simulated studies called `reproduced` when the truth is `mean` in every part."""
    rng = np.random.default_rng(12345)
    hits = 0
    for _ in range(trials):
        if dist == "normal":
            x = rng.normal(mean, sd, size=(parts, n_seeds))
        else:  # skewed: centred exponential
            x = mean + sd * (rng.exponential(1.0, size=(parts, n_seeds)) - 1.0)
        ev = x[0] if parts == 1 else {f"p{i}": x[i] for i in range(parts)}
        hits += judge(claim, ev).verdict == "reproduced"
    return hits / trials


@pytest.mark.parametrize("n_seeds", [3, 5, 10])
def test_false_reproduced_rate_at_the_threshold_is_at_most_nominal(n_seeds):
    rate = _false_rate(GREATER, 0.0, n_seeds=n_seeds)
    # the two-sided 95% rule calls a null effect "reproduced" with probability 2.5%
    assert rate <= 0.05 and rate == pytest.approx(0.025, abs=0.015)
    assert _false_rate(LESS, 1.0, n_seeds=n_seeds) <= 0.05


def test_false_rate_holds_for_skewed_data_and_many_parts():
    assert _false_rate(GREATER, 0.0, n_seeds=8, dist="skewed") <= 0.05
    # several parts at the threshold: all must hold, so the claim is even harder to pass
    assert _false_rate(GREATER, 0.0, parts=4, trials=1000) <= 0.05


def test_equivalence_false_rate_at_the_margin_is_at_most_nominal():
    for edge in (-0.5, 0.5):
        assert _false_rate(EQUIV, edge, n_seeds=10, sd=0.3) <= 0.05 + 0.01  # TOST: at most alpha
    assert _false_rate(NONINF, -0.1, n_seeds=6, sd=0.2) <= 0.05


def test_power_when_the_effect_is_real():
    # the rule can pass: a clear effect with 5 seeds is reproduced almost always
    assert _false_rate(GREATER, 2.0, n_seeds=5, trials=500) > 0.9


def test_combination_rule():
    assert combine(GREATER, ["reproduced", "reproduced"]) == "reproduced"
    assert combine(GREATER, ["reproduced", "not reproduced"]) == "not reproduced"
    assert combine(GREATER, ["reproduced", "inconclusive"]) == "inconclusive"
    assert combine(GREATER, ["not reproduced", "inconclusive"]) == "not reproduced"
    assert combine(GREATER, []) == "inconclusive"
    good = [1.0, 1.2, 0.9, 1.1, 1.05]
    bad = [-1.0, -1.2, -0.9, -1.1, -1.05]
    v = judge(GREATER, {"task_a": good, "task_b": bad})
    assert v.verdict == "not reproduced"  # a pooled mean (about 0) would have hidden task_b
    assert [p.verdict for p in v.parts] == ["reproduced", "not reproduced"]
    assert "2 parts" in v.rule and "Bonferroni" in v.rule


def test_multiplicity_correction_widens_the_wrong_side_interval():
    x = [-0.3, -0.5, -0.2, -0.4, -0.35]
    one = judge(GREATER, x)
    many = judge(GREATER, {f"p{i}": x for i in range(10)})
    assert one.verdict == "not reproduced"
    p = many.parts[0]
    assert p.adj_low < p.low and p.adj_high > p.high
    assert p.high == pytest.approx(one.parts[0].high)  # the printed 95% interval is the same


def test_equivalence_decisions():
    assert judge(EQUIV, [0.05, -0.05, 0.02, 0.0, 0.01]).verdict == "reproduced"
    assert judge(EQUIV, [2.0, 2.1, 1.9, 2.05, 1.95]).verdict == "not reproduced"
    v = judge(EQUIV, [0.4, 0.6, 0.3, 0.7, 0.5])
    assert v.verdict == "inconclusive"
    assert v.parts[0].level == pytest.approx(0.90)  # TOST at 5% prints the 90% interval
    # a straddling interval is never called equivalent
    assert judge(EQUIV, [0.0, 3.0, -3.0, 1.0, -1.0]).verdict == "inconclusive"


def test_deterministic_instances_count_once():
    s = deterministic([3.0, 3.0, 3.0, 3.0])
    v = judge(GREATER, s)
    assert v.verdict == "reproduced" and v.parts[0].n == 1 and v.parts[0].level is None
    assert judge(GREATER, deterministic([-1.0] * 3)).verdict == "not reproduced"
    assert judge(GREATER, deterministic([0.0] * 3)).verdict == "inconclusive"  # a tie
    with pytest.raises(ValueError, match="equal across seeds"):
        deterministic([1.0, 2.0])


def test_a_claim_not_measured_at_this_scale_is_undecided():
    v = judge(GREATER, None, note="judged at full only")
    assert v.verdict == "inconclusive" and not v.parts and "not measured" in v.summary
    assert not v.measured  # a claim this scale does not measure is not counted
    assert "full only" in v.summary and v.rule == rule_text(GREATER)


def test_one_seed_of_a_random_quantity_decides_nothing():
    v = judge(GREATER, [5.0])
    assert v.verdict == "inconclusive"


def test_universal_statements_and_check_words():
    assert judge(ALL, [True, True, True]).verdict == "passed"
    v = judge(ALL, [True, False, True])
    assert v.verdict == "failed" and v.parts[0].held == 2 and v.kind == "check"
    assert judge(ALL, []).verdict == "inconclusive"


def test_inconclusive_reports_half_width_and_seeds_needed():
    rng = np.random.default_rng(0)
    x = rng.normal(0.3, 1.0, 5)
    v = judge(GREATER, x)
    assert v.verdict == "inconclusive"
    assert v.half_width == pytest.approx((v.parts[0].high - v.parts[0].low) / 2)
    assert v.seeds_needed is not None and v.seeds_needed > 5
    # with that many seeds at the same mean and spread, the half-width is below the distance
    n, sd, est = v.seeds_needed, v.parts[0].sd, v.parts[0].estimate
    from scipy import stats

    assert stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n) < abs(est)
    assert stats.t.ppf(0.975, n - 2) * sd / np.sqrt(n - 1) >= abs(est)
    assert seeds_to_decide(1.0, 0.0, 0.975, 5) is None


def test_wording_is_generated_from_the_fields():
    v = judge(NONINF, [0.0, 0.01, -0.01, 0.02, 0.0])
    assert "0 - margin 0.1 = -0.1" in v.rule and v.verdict == "reproduced"
    assert v.summary.startswith("per-seed gain:")
    assert "above 0" in rule_text(GREATER)
    assert "inside (-0.5, 0.5)" in rule_text(EQUIV)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="'kind' argument of Claim"):
        Claim("x", "s", "m", kind="belief")
    with pytest.raises(ValueError, match="'direction' argument of Claim"):
        Claim("x", "s", "m", direction="bigger")
    with pytest.raises(ValueError, match="'margin' argument of Claim 'x' must be > 0"):
        Claim("x", "s", "m", direction="equivalent")
    with pytest.raises(ValueError, match="'level' argument of judge"):
        judge(GREATER, [1.0, 2.0], level=0.3)
    with pytest.raises(ValueError, match="equal lengths"):
        paired([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="positive"):
        paired([0.0], [1.0], "logratio")
    assert paired([2.0, 4.0], [1.0, 2.0], "logratio") == pytest.approx([np.log(2)] * 2)


def test_a_non_finite_part_is_marked_and_the_other_parts_are_judged():
    v = judge(GREATER, {"ok": [1.0, 1.1, 0.9, 1.2, 1.0], "diverged": [1.0, float("nan"), 1.0, 1.1, 0.9]})
    ok, bad = v.parts
    assert ok.verdict == "reproduced" and bad.verdict == "inconclusive" and bad.nonfinite == 1
    assert v.verdict == "inconclusive" and v.seeds_needed is None
    assert "diverged run" in v.summary


def test_an_exact_tie_never_asks_for_more_seeds():
    # the December review's case: a tie part plus a random part gave "about 1222 seeds"
    v = judge(GREATER, {"named": deterministic([0.0] * 5), "random": [0.01, -0.02, 0.03, 0.0, -0.01]})
    assert v.verdict == "inconclusive" and v.tie and v.seeds_needed is None
