"""The counting Markov-noise oracle.

A :class:`MarkovOracle` couples a function :math:`F(x, z)` with a chain (``state``,
``sample(n)``, ``advance(n)``). Its contract, which is the point of this package:

* ``pair(x1, x2)`` returns :math:`(F(x_1,Z_T), F(x_2,Z_T))` at the **same** state, then
  advances the clock **once**; ``pairs(X1, X2)`` does this for ``n`` consecutive states;
* ``value(x)`` / ``values(X)``: one-point feedback, one state per evaluation;
* ``gradient(x)`` / ``gradients(X)``: first-order feedback when a gradient is given
  (used by the baselines);
* every function value is counted in ``calls``, every gradient in ``grad_calls``, every
  chain tick in ``samples``; non-finite values raise ``ValueError``.

Library SPSA (noisyopt, nevergrad) calls the objective twice in a row; against this oracle
through :meth:`MarkovOracle.__call__` the two calls fall on consecutive, different states,
which is exactly how a user would run them.
"""

from __future__ import annotations

import numpy as np

from optzoo._core.validation import check_int, fail, returned_real

__all__ = ["MarkovOracle"]

_OWNER = "MarkovOracle"


class MarkovOracle:
    """Zero-order (and optionally first-order) oracle driven by a Markov chain.

    Parameters
    ----------
    fun : ``fun(x, z) -> float``; with ``vectorized=True``, ``fun(X, Z) -> (n,)`` for a batch
        of points ``X`` of shape (n, d) and states ``Z`` of shape (n, ...).
    chain : any object with ``state``, ``sample(n)`` and ``advance(n)`` (see ``chains``).
    dim : dimension of ``x`` (checked against every query).
    grad : optional ``grad(x, z) -> (d,)`` (or ``(X, Z) -> (n, d)`` when vectorized).

    >>> import numpy as np
    >>> from optzoo.markov_zo import StickyChain, MarkovOracle
    >>> ch = StickyChain([-1.0, 1.0], stay_prob=0.9, seed=0)
    >>> orc = MarkovOracle(lambda x, z: 0.5 * float(np.sum((x - z) ** 2)), ch, dim=2)
    >>> a, b = orc.pair(np.zeros(2), np.ones(2))
    >>> orc.calls, orc.samples
    (2, 1)
    """

    def __init__(self, fun, chain, *, dim: int, grad=None, vectorized: bool = False):
        if not callable(fun):
            fail("fun", _OWNER, "a callable fun(x, z)", fun, exc=TypeError)
        for attr in ("state", "sample", "advance"):
            if not hasattr(chain, attr):
                raise TypeError(f"The 'chain' argument of {_OWNER} must have 'state', 'sample' and "
                                f"'advance' (see optzoo.markov_zo.chains). Got {type(chain).__name__}.")
        if grad is not None and not callable(grad):
            fail("grad", _OWNER, "a callable grad(x, z) or None", grad, exc=TypeError)
        self.fun, self.chain, self.grad = fun, chain, grad
        self.dim = check_int("dim", dim, owner=_OWNER, low=1)
        self.vectorized = bool(vectorized)
        self.calls = 0
        self.grad_calls = 0
        self.samples = 0

    # -- internals -----------------------------------------------------------------------
    def _points(self, X, name: str) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.dim:
            raise ValueError(f"The {name!r} argument of {_OWNER} must have shape (n, {self.dim}) "
                             f"or ({self.dim},) to match the oracle's dimension. Got {X.shape}.")
        return X

    def _eval(self, X: np.ndarray, Z) -> np.ndarray:
        if self.vectorized:
            raw = self.fun(X, Z)
            try:
                out = np.asarray(raw, dtype=float).reshape(-1)
            except (TypeError, ValueError):
                fail("fun", _OWNER, f"a vectorized callable returning {X.shape[0]} real numbers",
                     type(raw).__name__, exc=TypeError)
        else:
            rule = "a callable F(x, z) returning one real number"
            out = np.array([returned_real("fun", self.fun(x, z), owner=_OWNER, rule=rule)
                            for x, z in zip(X, Z, strict=False)])
        if out.shape[0] != X.shape[0]:
            fail("fun", _OWNER, f"returning {X.shape[0]} values for {X.shape[0]} points", out.shape)
        if not np.isfinite(out).all():
            raise ValueError(f"The 'fun' argument of {_OWNER} must return finite values. "
                             f"Got NaN or inf at sample {int(np.argmin(np.isfinite(out)))} of the batch.")
        return out

    # -- zero-order feedback ---------------------------------------------------------------
    def values(self, X) -> np.ndarray:
        """One-point feedback: ``F(X[i], Z_{T+i})``, ``n`` ticks, ``n`` calls."""
        X = self._points(X, "X")
        Z = self.chain.sample(X.shape[0])
        self.samples += X.shape[0]
        self.calls += X.shape[0]
        return self._eval(X, Z)

    def pairs(self, X1, X2) -> tuple[np.ndarray, np.ndarray]:
        """Two-point feedback: ``F(X1[i], Z_{T+i})`` and ``F(X2[i], Z_{T+i})``; ``n`` ticks."""
        return self.same_state(X1, X2, _names=("X1", "X2"))

    def same_state(self, *Xs, _names=None) -> tuple[np.ndarray, ...]:
        """``F(Xs[j][i], Z_{T+i})`` for every ``j``: row ``i`` of every array on the same state.

        ``n`` ticks and ``len(Xs) * n`` calls. Used by :func:`markov_zo_minimize` to probe the
        curvature (three and more points on one state) for its default step.
        """
        names = _names or tuple(f"X{j + 1}" for j in range(len(Xs)))
        arrs = [self._points(X, nm) for X, nm in zip(Xs, names, strict=True)]
        for X, nm in zip(arrs[1:], names[1:], strict=True):
            if X.shape != arrs[0].shape:
                raise ValueError(f"The {nm!r} argument of {_OWNER}.{'pairs' if _names else 'same_state'} "
                                 f"must have the shape of {names[0]}, {arrs[0].shape}. Got {X.shape}.")
        n = arrs[0].shape[0]
        Z = self.chain.sample(n)
        self.samples += n
        self.calls += len(arrs) * n
        out = self._eval(np.concatenate(arrs), np.concatenate([Z] * len(arrs)))
        return tuple(out[j * n:(j + 1) * n] for j in range(len(arrs)))

    def pair(self, x1, x2) -> tuple[float, float]:
        a, b = self.pairs(x1, x2)
        return float(a[0]), float(b[0])

    def value(self, x) -> float:
        return float(self.values(x)[0])

    def __call__(self, x, *args, **kwargs) -> float:
        """Plain ``f(x)``: one call, one tick (what a library optimizer sees)."""
        return self.value(x)

    # -- first-order feedback (baselines) ------------------------------------------------------
    def gradients(self, X) -> np.ndarray:
        if self.grad is None:
            raise TypeError(f"{_OWNER}.gradients needs a 'grad' callable; this oracle has none.")
        X = self._points(X, "X")
        Z = self.chain.sample(X.shape[0])
        self.samples += X.shape[0]
        self.grad_calls += X.shape[0]
        if self.vectorized:
            G = np.asarray(self.grad(X, Z), dtype=float)
        else:
            G = np.stack([np.asarray(self.grad(x, z), dtype=float) for x, z in zip(X, Z, strict=False)])
        if G.shape != X.shape or not np.isfinite(G).all():
            raise ValueError(f"The 'grad' argument of {_OWNER} must return finite arrays of shape "
                             f"{X.shape}. Got shape {G.shape} or non-finite values.")
        return G

    def gradient(self, x) -> np.ndarray:
        return self.gradients(x)[0]

    def cost(self, grad_cost: float = 1.0) -> float:
        """Total charge: function values plus ``grad_cost`` per gradient (``d+1`` for FD parity)."""
        return self.calls + grad_cost * self.grad_calls
