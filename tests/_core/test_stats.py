import numpy as np
import pytest

from optzoo._core.stats import MIN_BOOTSTRAP_N, bootstrap_ci, mean_ci


def test_bootstrap_ci_covers_mean_and_is_deterministic():
    x = np.random.default_rng(1).normal(2.0, 1.0, 200)
    a, b = bootstrap_ci(x, seed=3), bootstrap_ci(x, seed=3)
    assert a == b and a.method == "bootstrap"
    assert a.low < x.mean() < a.high
    assert a.low < 2.0 < a.high


def test_bootstrap_refuses_samples_too_small_for_its_level():
    # with 3 values the percentile bootstrap is [min, max]: about 75% coverage, not 95%
    with pytest.raises(ValueError, match=f"at least {MIN_BOOTSTRAP_N} values"):
        bootstrap_ci([1.0, 2.0, 3.0])


def test_mean_ci_coverage_is_near_nominal():
    rng = np.random.default_rng(0)
    cover = 0
    for _ in range(2000):
        ci = mean_ci(rng.normal(0, 1, 3))
        cover += ci.low < 0 < ci.high
    assert 0.93 < cover / 2000 < 0.97  # exact for normal data even with 3 seeds


def test_mean_ci_errors():
    with pytest.raises(ValueError, match="finite"):
        mean_ci([np.nan, 1.0])
    with pytest.raises(ValueError, match="'level' argument of mean_ci"):
        mean_ci([1.0, 2.0], level=1.5)
