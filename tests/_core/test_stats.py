import numpy as np
import pytest

from optzoo._core.stats import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Interval,
    bootstrap_ci,
    mean_ci,
    paired_ci,
    verdict_all,
    verdict_from_interval,
)


def test_bootstrap_ci_covers_mean_and_is_deterministic():
    x = np.random.default_rng(1).normal(2.0, 1.0, 200)
    a, b = bootstrap_ci(x, seed=3), bootstrap_ci(x, seed=3)
    assert a == b
    assert a.low < x.mean() < a.high
    assert a.low < 2.0 < a.high


def test_mean_ci_coverage_is_near_nominal():
    rng = np.random.default_rng(0)
    cover = 0
    for _ in range(400):
        ci = mean_ci(rng.normal(0, 1, 10))
        cover += ci.low < 0 < ci.high
    assert 0.91 < cover / 400 < 0.99


def test_paired_ci_diff_and_logratio():
    a, b = [2.0, 4.0, 8.0], [1.0, 2.0, 4.0]
    assert paired_ci(a, b).estimate == pytest.approx(np.mean([1, 2, 4]))
    lr = paired_ci(a, b, transform="logratio")
    assert lr.estimate == pytest.approx(np.log(2)) and lr.low == pytest.approx(np.log(2))
    with pytest.raises(ValueError, match="positive"):
        paired_ci([0.0], [1.0], transform="logratio")
    with pytest.raises(ValueError, match="equal lengths"):
        paired_ci([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        paired_ci([np.nan], [1.0])


def test_verdict_rules():
    assert verdict_from_interval(Interval(1, 0.5, 1.5, 5)) == REPRODUCED
    assert verdict_from_interval(Interval(-1, -1.5, -0.5, 5)) == NOT_REPRODUCED
    assert verdict_from_interval(Interval(0, -0.5, 0.5, 5)) == INCONCLUSIVE
    assert verdict_from_interval(Interval(1, 1, 1, 1)) == INCONCLUSIVE  # one seed never decides
    assert verdict_from_interval(Interval(-1, -1.5, -0.5, 5), higher_is_better=False) == REPRODUCED
    assert verdict_from_interval(Interval(0.95, 0.92, 0.97, 5), threshold=0.9) == REPRODUCED
    assert verdict_all([True, True]) == REPRODUCED
    assert verdict_all([True, False]) == NOT_REPRODUCED
    assert verdict_all([]) == INCONCLUSIVE
