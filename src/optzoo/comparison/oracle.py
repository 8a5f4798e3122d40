"""The counting comparison oracle.

The paper's oracle (Wang, Zhang, Tao, Zhang, Li, arXiv 2606.27082, exact from the abstract):

.. math:: O_f(x, y) = 1 \\text{ if } f(x) \\ge f(y), \\text{ else } 0,

either answer being allowed on a tie. :class:`ComparisonOracle` is the only way the methods
of this package (and the baselines of its reproduction) learn anything about ``f``: every
pairwise comparison is counted in :attr:`ComparisonOracle.ncomparisons`, a batched call of
``k`` pairs counts ``k``. Ties are broken by a seeded coin, so the methods never see one.

Two sources:

* ``ComparisonOracle(f)`` wraps a value function (benchmarking): ``f(x) -> float``, or with
  ``vectorized=True`` ``f(X) -> (k,)`` for points ``X`` of shape ``(k, n)``.
* ``ComparisonOracle.from_comparator(compare)`` wraps a comparator (real use: a human rater,
  an LLM judge, a reward model): ``compare(x, y)`` returns ``True``/``1`` when ``f(x) > f(y)``
  (``x`` is worse), ``False``/``-1`` when ``x`` is better, ``0`` for a tie (a bool cannot say
  tie: it is taken as strict).
"""

from __future__ import annotations

import numbers

import numpy as np

from optzoo._core.rng import np_rng
from optzoo._core.validation import check_bool, check_int, fail

__all__ = ["ComparisonOracle"]

_OWNER = "ComparisonOracle"


class ComparisonOracle:
    """Pairwise comparisons of ``f`` with a counter; methods never see ``f`` values.

    Parameters
    ----------
    f : the value function (see the module docstring); it is never shown to the methods.
    vectorized : ``f`` takes a (k, n) array and returns k values.
    seed : seed of the tie-breaking coin (ties are rare on generic problems).
    dim : optional dimension checked against every query.

    >>> import numpy as np
    >>> orc = ComparisonOracle(lambda x: float(np.sum(x ** 2)))
    >>> bool(orc(np.ones(2), np.zeros(2)))      # O_f(x, y) = [f(x) >= f(y)]
    True
    >>> orc.greater(np.ones((3, 2)), np.zeros((3, 2))).tolist(), orc.ncomparisons
    ([True, True, True], 4)
    """

    def __init__(self, f, *, vectorized: bool = False, seed: int = 0, dim: int | None = None):
        if not callable(f):
            fail("f", _OWNER, "a callable f(x) -> float", f, exc=TypeError)
        self.f = f
        self._compare = None
        self.vectorized = check_bool("vectorized", vectorized, owner=_OWNER)
        self.seed = check_int("seed", seed, owner=_OWNER, low=0)
        self.dim = None if dim is None else check_int("dim", dim, owner=_OWNER, low=1)
        self._coin = np_rng(self.seed, "tie-break")
        self.ncomparisons = 0
        self.nbatches = 0
        self.nties = 0

    @classmethod
    def from_comparator(cls, compare, *, dim: int | None = None, seed: int = 0,
                        vectorized: bool = False) -> ComparisonOracle:
        """An oracle over a comparator ``compare(x, y)`` (sign of ``f(x) - f(y)``, see above);
        with ``vectorized=True`` it takes two (k, n) arrays and returns k signs."""
        if not callable(compare):
            fail("compare", f"{_OWNER}.from_comparator", "a callable compare(x, y)", compare,
                 exc=TypeError)
        orc = cls(lambda x: 0.0, vectorized=vectorized, seed=seed, dim=dim)
        orc.f = None
        orc._compare = compare
        return orc

    @property
    def has_values(self) -> bool:
        """True when the oracle wraps a value function (so an evaluator may read ``f``)."""
        return self.f is not None

    # -- internals -------------------------------------------------------------------------
    def _points(self, X, name: str) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or (self.dim is not None and X.shape[1] != self.dim):
            want = "(k, n)" if self.dim is None else f"(k, {self.dim}) or ({self.dim},)"
            raise ValueError(f"The {name!r} argument of {_OWNER} must have shape {want}. "
                             f"Got {X.shape}.")
        return X

    def values(self, X) -> np.ndarray:
        """``f`` at the rows of ``X`` (uncounted: for evaluators and reports, never for methods)."""
        if self.f is None:
            raise TypeError(f"{_OWNER}.values needs a value function; this oracle wraps a comparator.")
        X = self._points(X, "X")
        if self.vectorized:
            out = np.asarray(self.f(X))
            if out.dtype.kind not in "iuf":
                fail("f", _OWNER, "a function returning real values (vectorized=True)",
                     f"an array of dtype {out.dtype}", exc=TypeError)
            out = out.astype(float)
            if out.shape not in ((X.shape[0],), (X.shape[0], 1)):
                fail("f", _OWNER, f"a function returning {X.shape[0]} values for {X.shape[0]} points "
                     "(vectorized=True)", f"an array of shape {out.shape}")
            out = out.reshape(-1)
        else:
            vals = []
            for x in X:
                v = self.f(x)
                if isinstance(v, np.ndarray) and v.size == 1:
                    v = v.reshape(())[()]
                if isinstance(v, bool) or not isinstance(v, numbers.Real):
                    fail("f", _OWNER, "a function returning a real scalar", v, exc=TypeError)
                vals.append(float(v))
            out = np.asarray(vals, dtype=float)
        if not np.isfinite(out).all():
            i = int(np.argmin(np.isfinite(out)))
            raise ValueError(f"The 'f' argument of {_OWNER} must return finite values. Got "
                             f"{float(out[i])!r} at point {i} of the batch, x = {X[i].tolist()!r}"[:300] + ".")
        return out

    def _signs(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        if self._compare is None:
            d = self.values(np.concatenate([X, Y]))
            k = X.shape[0]
            return np.sign(d[:k] - d[k:])
        if self.vectorized:
            s = np.asarray(self._compare(X, Y))
        else:
            s = np.asarray([self._compare(x, y) for x, y in zip(X, Y, strict=True)])
        s = s.reshape(-1)
        if s.dtype == bool:
            return np.where(s, 1.0, -1.0)
        if s.dtype.kind not in "iuf":
            fail("compare", _OWNER, "a comparator returning a bool or a value in {-1, 0, 1} per pair",
                 s[:1].tolist() if s.size else s.dtype, exc=TypeError)
        s = s.astype(float)
        if s.shape[0] != X.shape[0] or not np.isin(s, (-1.0, 0.0, 1.0)).all():
            bad = s[~np.isin(s, (-1.0, 0.0, 1.0))][:1].tolist() if s.shape[0] == X.shape[0] else s.shape
            fail("compare", _OWNER, "a comparator returning a bool or a value in {-1, 0, 1} per pair",
                 bad)
        return s

    # -- the oracle --------------------------------------------------------------------------
    def greater(self, X, Y) -> np.ndarray:
        """Batched strict comparisons: ``f(X[i]) > f(Y[i])`` for each row, ties broken by the
        seeded coin. Counts ``k`` comparisons for ``k`` rows."""
        X, Y = self._points(X, "X"), self._points(Y, "Y")
        if X.shape != Y.shape:
            raise ValueError(f"The 'Y' argument of {_OWNER}.greater must have the shape of X, "
                             f"{X.shape}. Got {Y.shape}.")
        s = self._signs(X, Y)
        ties = s == 0
        if ties.any():
            self.nties += int(ties.sum())
            s = s.copy()
            s[ties] = np.where(self._coin.random(int(ties.sum())) < 0.5, -1.0, 1.0)
        self.ncomparisons += X.shape[0]
        self.nbatches += 1
        return s > 0

    def __call__(self, x, y) -> bool:
        """The paper's ``O_f(x, y)``: True when ``f(x) >= f(y)`` (a tie goes either way)."""
        return bool(self.greater(x, y)[0])

    def cmp(self, x, y) -> int:
        """``-1`` if ``f(x) < f(y)`` else ``1`` (ties by the coin): for ``functools.cmp_to_key``."""
        return 1 if self(x, y) else -1

    def reset(self) -> None:
        """Zero the counters (the tie-breaking coin continues)."""
        self.ncomparisons = self.nbatches = self.nties = 0

    def __repr__(self) -> str:
        src = "comparator" if self._compare is not None else "value function"
        return (f"ComparisonOracle({src}, ncomparisons={self.ncomparisons}, "
                f"batches={self.nbatches}, ties={self.nties})")
