"""Statistics over seeds: means, bootstrap confidence intervals, paired comparisons, and the
rule that turns an interval into a verdict.

Verdicts in optzoo are never decided by one run: a claim is ``reproduced`` when the whole
confidence interval of the (paired) effect lies on the claimed side of the threshold,
``not reproduced`` when it lies wholly on the other side, and ``inconclusive`` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Interval",
    "bootstrap_ci",
    "mean_ci",
    "paired_ci",
    "verdict_from_interval",
    "verdict_all",
    "REPRODUCED",
    "NOT_REPRODUCED",
    "INCONCLUSIVE",
]

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided confidence interval over ``n`` observations."""

    estimate: float
    low: float
    high: float
    n: int
    level: float = 0.95

    def __str__(self) -> str:
        return f"{self.estimate:.4g} [{self.low:.4g}, {self.high:.4g}] (n={self.n})"

    def to_dict(self) -> dict:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n,
                "level": self.level}


def _as_1d(values: Sequence[float], name: str) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError(f"The {name!r} argument must hold at least one value. Got an empty sequence.")
    if not np.isfinite(x).all():
        raise ValueError(f"The {name!r} argument must contain only finite values. Got {x.tolist()!r}.")
    return x


def bootstrap_ci(
    values: Sequence[float],
    *,
    stat: Callable[[np.ndarray], float] = np.mean,
    level: float = 0.95,
    n_boot: int = 10_000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of ``stat`` over ``values``.

    With a single value the interval collapses to the point (the caller's judge should then
    say ``inconclusive``; :func:`verdict_from_interval` does so for ``n < min_n``).
    """
    x = _as_1d(values, "values")
    est = float(stat(x))
    if x.size == 1:
        return Interval(est, est, est, 1, level)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    boots = np.apply_along_axis(stat, 1, x[idx]) if stat is not np.mean else x[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(boots, [alpha, 1.0 - alpha])
    return Interval(est, float(lo), float(hi), int(x.size), level)


def mean_ci(values: Sequence[float], *, level: float = 0.95) -> Interval:
    """Student-t interval of the mean (exact for normal data; used for small seed counts)."""
    from scipy import stats as st

    x = _as_1d(values, "values")
    m = float(x.mean())
    if x.size == 1:
        return Interval(m, m, m, 1, level)
    half = float(st.t.ppf(0.5 + level / 2.0, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return Interval(m, m - half, m + half, int(x.size), level)


def paired_ci(
    a: Sequence[float],
    b: Sequence[float],
    *,
    transform: str = "diff",
    level: float = 0.95,
    n_boot: int = 10_000,
    seed: int = 0,
) -> Interval:
    """Interval of the mean paired effect of ``a`` over ``b``.

    ``transform``: ``"diff"`` (a - b) or ``"logratio"`` (log(a / b), for positive metrics).
    Pairs must come from the same instance (same graph, seed, budget).
    """
    x, y = _as_1d(a, "a"), _as_1d(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"paired_ci needs equal lengths. Got {x.size} and {y.size}.")
    if transform == "diff":
        d = x - y
    elif transform == "logratio":
        if (x <= 0).any() or (y <= 0).any():
            raise ValueError("paired_ci with transform='logratio' needs positive values.")
        d = np.log(x) - np.log(y)
    else:
        raise ValueError(f"The 'transform' argument of paired_ci must be 'diff' or 'logratio'. Got {transform!r}.")
    return bootstrap_ci(d, level=level, n_boot=n_boot, seed=seed)


def verdict_from_interval(
    interval: Interval, *, threshold: float = 0.0, higher_is_better: bool = True, min_n: int = 2
) -> str:
    """``reproduced`` if the interval lies wholly on the claimed side of ``threshold``,
    ``not reproduced`` if wholly on the other side, ``inconclusive`` otherwise or if fewer
    than ``min_n`` observations back it."""
    if interval.n < min_n:
        return INCONCLUSIVE
    lo, hi = (interval.low, interval.high) if higher_is_better else (-interval.high, -interval.low)
    t = threshold if higher_is_better else -threshold
    if lo > t:
        return REPRODUCED
    if hi < t:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def verdict_all(holds: Sequence[bool]) -> str:
    """For deterministic claims: ``reproduced`` iff it held on every instance (and there was
    at least one), ``not reproduced`` on any counterexample."""
    holds = [bool(h) for h in holds]
    if not holds:
        return INCONCLUSIVE
    return REPRODUCED if all(holds) else NOT_REPRODUCED
