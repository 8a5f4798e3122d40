"""Test families with known constants (spec section 3), vectorized over rows.

1. Ramp: ``f(x) = 2 eps logcosh(y_1) + |y_{2:n}|^2 / 2`` with ``y = Q x`` (a seeded random
   rotation Q, so no method can exploit coordinates), ``y_1(0) = D / eps``, ``y_{2:n}(0)`` a
   random vector of norm ``eps / 4``. Declared ``L = 1``, ``rho = 1`` (valid for eps <= 1/2),
   ``delta_f = f(x0)`` (inf f = 0). It needs about ``D/eps^2`` normalized-gradient steps of
   length ``eps/2`` and ``D/eps^1.5`` trust-region steps of length ``sqrt(eps)``: the
   worst-case exponents of both bounds.
2. Separable cosine: ``f(x) = sum_i (y_i^2 / 2 + a cos y_i)``, ``a = 2`` (rotated), ``L = 1 + a``,
   ``rho = a``; inf f is known in closed form per coordinate.
3. Quadratics ``f = x'Ax/2 + b'x`` (``rho = 0``): exact tests of the subroutines.
4. Valley (OURS, for the headline claim and its control): the ramp with an ill-conditioned
   transverse quadratic, ``f(x) = 2 eps logcosh(y_1) + sum_i lam_i y_i^2 / 2`` over
   ``i = 2..n``, ``lam = geomspace(Lam, 1, n - 1)`` (``Lam = 10``; n = 2 gets ``Lam``), and a
   transverse start of norm ``t0 = 1`` (not ``eps / 4``). Declared ``L = Lam``, ``rho = 1``.
   A method must settle a transverse quadratic of curvature up to ``Lam`` to reach
   ``|grad f| <= eps``: with trust-radius steps ``sqrt(eps)`` this needs the curvature.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.stats import special_ortho_group

from optzoo._core.rng import np_rng


@dataclass
class Problem:
    name: str
    n: int
    eps: float
    Q: np.ndarray
    x0: np.ndarray
    L: float
    rho: float
    inf_f: float
    kind: str
    a: float = 0.0
    lam: np.ndarray | None = None   # transverse curvatures (ramp / valley); None: all 1

    def f(self, X):
        X = np.atleast_2d(X)
        Y = X @ self.Q.T
        if self.kind in ("ramp", "valley"):
            y1 = np.abs(Y[:, 0])
            logcosh = y1 + np.log1p(np.exp(-2.0 * y1)) - np.log(2.0)
            return 2.0 * self.eps * logcosh + 0.5 * (self._lam * Y[:, 1:] ** 2).sum(1)
        return (0.5 * Y ** 2 + self.a * np.cos(Y)).sum(1) - self.inf_f

    def grad(self, X):
        X = np.atleast_2d(X)
        Y = X @ self.Q.T
        if self.kind in ("ramp", "valley"):
            G = Y.copy()
            G[:, 1:] *= self._lam
            G[:, 0] = 2.0 * self.eps * np.tanh(Y[:, 0])
        else:
            G = Y - self.a * np.sin(Y)
        return G @ self.Q

    @property
    def _lam(self):
        return 1.0 if self.lam is None else self.lam

    def grad_norm(self, X):
        return np.linalg.norm(self.grad(X), axis=1)

    @property
    def delta_f(self) -> float:
        return float(self.f(self.x0)[0])


def _rotation(n, rng):
    return np.eye(1) if n == 1 else special_ortho_group.rvs(n, random_state=rng)


def ramp(n: int, eps: float, seed: int, *, D: float = 1.0) -> Problem:
    rng = np_rng(seed, "ramp", n, eps)
    Q = _rotation(n, rng)
    y = np.zeros(n)
    y[0] = D / eps
    if n > 1:
        z = rng.normal(size=n - 1)
        y[1:] = 0.25 * eps * z / np.linalg.norm(z)
    return Problem("ramp", n, eps, Q, Q.T @ y, L=1.0, rho=1.0, inf_f=0.0, kind="ramp")


def valley(n: int, eps: float, seed: int, *, lam_max: float = 10.0, t0: float = 1.0,
           D: float = 1.0) -> Problem:
    """The valley family (ours; see the module docstring)."""
    rng = np_rng(seed, "valley", n, eps)
    Q = _rotation(n, rng)
    y = np.zeros(n)
    y[0] = D / eps
    lam = np.geomspace(lam_max, 1.0, n - 1) if n > 1 else np.zeros(0)
    if n > 1:
        z = rng.normal(size=n - 1)
        y[1:] = t0 * z / np.linalg.norm(z)
    return Problem("valley", n, eps, Q, Q.T @ y, L=max(1.0, lam_max), rho=1.0, inf_f=0.0,
                   kind="valley", lam=lam)


def cosine(n: int, eps: float, seed: int, *, a: float = 2.0) -> Problem:
    rng = np_rng(seed, "cosine", n, eps)
    Q = _rotation(n, rng)
    one = minimize_scalar(lambda t: 0.5 * t * t + a * np.cos(t), bounds=(0.0, 3.0), method="bounded",
                          options={"xatol": 1e-12}).fun
    y0 = rng.uniform(-4.0, 4.0, size=n)
    return Problem("cosine", n, eps, Q, Q.T @ y0, L=1.0 + a, rho=a, inf_f=float(n * one),
                   kind="cosine", a=a)


def quadratic(n: int, seed: int, *, cond: float = 10.0):
    """(A, b) with A symmetric positive definite of condition number ``cond``."""
    rng = np_rng(seed, "quadratic", n)
    Q = _rotation(n, rng)
    ev = np.geomspace(1.0, cond, n)
    return (Q * ev) @ Q.T, rng.normal(size=n)
