"""Interval primitives over replications: Student-t intervals of a mean, paired effects, and a
percentile bootstrap that refuses samples too small for it to be valid.

The verdict rules (what an interval means for a claim) live in one place:
:mod:`optzoo.repro.judging`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Interval", "MIN_BOOTSTRAP_N", "bootstrap_ci", "mean_ci", "t_quantile"]

#: Below this many observations a percentile bootstrap under-covers badly (with 3 values it
#: returns their min and max: about 75% coverage for a nominal 95%); use :func:`mean_ci`.
MIN_BOOTSTRAP_N = 20


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided confidence interval over ``n`` observations, and the
    method that produced it (``"t"`` or ``"bootstrap"``)."""

    estimate: float
    low: float
    high: float
    n: int
    level: float = 0.95
    method: str = "t"

    def __str__(self) -> str:
        return (f"{self.estimate:.4g} [{self.low:.4g}, {self.high:.4g}] "
                f"({100 * self.level:g}% {self.method}, n={self.n})")

    def to_dict(self) -> dict:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n,
                "level": self.level, "method": self.method}


def _as_1d(values: Sequence[float], name: str) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError(f"The {name!r} argument must hold at least one value. Got an empty sequence.")
    if not np.isfinite(x).all():
        raise ValueError(f"The {name!r} argument must contain only finite values. Got {x.tolist()!r}.")
    return x


def _check_level(level: float, owner: str) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"The 'level' argument of {owner} must be in (0, 1). Got {level!r}.")


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, df: int) -> float:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom (cached: judging calls
    it for the same few (level, seeds) pairs many times)."""
    from scipy import stats as st

    return float(st.t.ppf(q, df))


def mean_ci(values: Sequence[float], *, level: float = 0.95) -> Interval:
    """Student-t interval of the mean (exact for normal data; the default for few seeds).
    A single value gives a zero-width interval with ``n=1``, which decides nothing."""
    _check_level(level, "mean_ci")
    x = _as_1d(values, "values")
    m = float(x.mean())
    if x.size == 1:
        return Interval(m, m, m, 1, level)
    half = t_quantile(0.5 + level / 2.0, x.size - 1) * float(x.std(ddof=1)) / float(np.sqrt(x.size))
    return Interval(m, m - half, m + half, int(x.size), level)


def bootstrap_ci(
    values: Sequence[float],
    *,
    stat: Callable[[np.ndarray], float] = np.mean,
    level: float = 0.95,
    n_boot: int = 10_000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of ``stat`` over ``values`` (at least
    :data:`MIN_BOOTSTRAP_N` values; for fewer use :func:`mean_ci`)."""
    _check_level(level, "bootstrap_ci")
    x = _as_1d(values, "values")
    if x.size < MIN_BOOTSTRAP_N:
        raise ValueError(
            f"The 'values' argument of bootstrap_ci must hold at least {MIN_BOOTSTRAP_N} values "
            f"for a percentile bootstrap to reach its level. Got {x.size}; use mean_ci."
        )
    est = float(stat(x))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    boots = np.apply_along_axis(stat, 1, x[idx]) if stat is not np.mean else x[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(boots, [alpha, 1.0 - alpha])
    return Interval(est, float(lo), float(hi), int(x.size), level, "bootstrap")
