"""Normalized-gradient and normalized-Hessian estimation from comparisons.

Paper: Wang, Zhang, Tao, Zhang, Li, "Finding Stationary Points by Comparisons", ICML 2026,
arXiv 2606.27082. Fidelity: **reconstructed**. The abstract states the costs (normalized
Hessian to accuracy delta in O~(n^2 log(1/delta)) comparisons; the companion paper:
normalized gradient in O(n log(1/delta))); the routines below are OUR constructions with
those costs, not transcriptions (the paper's routines were not available).

The exact primitive (derived, spec P1): for a unit ``u`` and radius ``r``, Taylor with a
rho-Lipschitz Hessian gives :math:`f(x+ru)-f(x-ru) = 2r\\langle\\nabla f(x),u\\rangle + R`,
:math:`|R|\\le\\rho r^3/3`, so one comparison returns
:math:`\\operatorname{sign}\\langle\\nabla f(x),u\\rangle` whenever
:math:`|\\langle\\nabla f(x),u\\rangle| > \\rho r^2/6`.

``normalized_gradient`` (after Zhang & Li 2024's comparison-based gradient estimation):
signs of the n coordinates (n comparisons), a knockout tournament for
:math:`i^*=\\arg\\max_i|g_i|` (n-1), and for every other coordinate a bisection of
:math:`\\alpha_i = g_i/g_{i^*}\\in[-1,1]` on :math:`\\operatorname{sign}\\langle g, e_i -
\\alpha e_{i^*}\\rangle`; :math:`\\hat g = \\alpha/\\|\\alpha\\|`. Cost
:math:`n + (n-1)(1 + \\lceil\\log_2(\\sqrt n/\\delta)\\rceil)`.

``normalized_hessian`` (INFERRED mechanism, ours): directional derivatives at displaced
points. With :math:`q_1=\\hat g`, an orthonormal completion :math:`q_2..q_n` and probes
:math:`u_1=q_1`, :math:`u_k=q_1+q_k`, every probe has :math:`\\langle\\hat g,u_k\\rangle=1`, and

.. math:: \\psi_{kl}(h) = \\langle\\nabla f(x+h u_l), u_k\\rangle
          = \\|\\nabla f\\|\\,(1 + h\\,S_{kl}) + O(\\rho h^2),
          \\qquad S = U^\\top \\frac{\\nabla^2 f}{\\|\\nabla f\\|} U .

The sign of :math:`\\psi` is one comparison (P1 at :math:`x+hu_l`); its root
:math:`h^*=-1/S_{kl}` is found by bisection on :math:`\\log|h|` in
:math:`[2^{-30}s, s]` (``span`` s), after two comparisons at :math:`\\pm s` decide its side
(no root within the span: :math:`|S_{kl}|<1/s`, set to 0). This measures
:math:`M=\\nabla^2 f/\\|\\nabla f\\|` itself, so the ratio :math:`\\|\\nabla f\\|/\\|\\nabla^2 f\\|`
(the spec's separate ScaleRatio step) comes with it. Cost
:math:`\\tfrac{n(n+1)}2(2+\\lceil\\log_2(30\\ln 2/\\ln(1+\\delta/2n))\\rceil)`: O(n^2 log(n/delta)).
It needs :math:`\\nabla f(x)\\neq 0` (at a stationary point there is nothing to normalize by).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from optzoo._core.validation import check_array, check_real, fail
from optzoo.comparison.oracle import ComparisonOracle

__all__ = [
    "GradientEstimate",
    "HessianEstimate",
    "default_radius",
    "gradient_cost",
    "hessian_cost",
    "normalized_gradient",
    "normalized_hessian",
    "sign_probe",
]

#: bisection range of log|h| in the Hessian routine: [2^-LOG_RANGE * span, span].
LOG_RANGE = 30


class GradientEstimate(NamedTuple):
    """``direction``: unit estimate of grad f / |grad f|; ``comparisons``: oracle pairs used."""

    direction: np.ndarray
    comparisons: int


class HessianEstimate(NamedTuple):
    """``matrix``: symmetric estimate of H / |H|_2; ``comparisons``: pairs used;
    ``scaled``: the estimate of M = H / |grad f| that the trust-region model uses
    (so ``1 / |scaled|_2`` estimates |grad f| / |H|_2)."""

    matrix: np.ndarray
    comparisons: int
    scaled: np.ndarray


def default_radius(x: np.ndarray) -> float:
    """The probe radius r = 1e-4 * max(1, |x|) (INFERRED default)."""
    return 1e-4 * max(1.0, float(np.linalg.norm(x)))


def gradient_cost(n: int, delta: float) -> int:
    """Comparisons used by :func:`normalized_gradient` (exact, deterministic)."""
    if n == 1:
        return 1
    steps = max(1, math.ceil(math.log2(math.sqrt(n) / delta)))
    return n + (n - 1) + (n - 1) * steps


def _hessian_steps(n: int, delta: float) -> int:
    return max(1, math.ceil(math.log2(LOG_RANGE * math.log(2.0) / math.log1p(delta / (2.0 * n)))))


def hessian_cost(n: int, delta: float) -> int:
    """Comparisons used by :func:`normalized_hessian` given ``g_hat`` (exact)."""
    return n * (n + 1) // 2 * (2 + _hessian_steps(n, delta))


def sign_probe(oracle: ComparisonOracle, X, U, radius) -> np.ndarray:
    """Batched P1: ``True`` where the comparison says <grad f(X_i), U_i> > 0, from
    ``f(X_i + r_i U_i) > f(X_i - r_i U_i)``; one comparison per row."""
    X = np.atleast_2d(X)
    U = np.atleast_2d(U)
    r = np.asarray(radius, dtype=float).reshape(-1, 1)
    return oracle.greater(X + r * U, X - r * U)


def _check_common(owner, oracle, x, delta, radius):
    if not isinstance(oracle, ComparisonOracle):
        raise TypeError(f"The 'oracle' argument of {owner} must be a ComparisonOracle (wrap f with "
                        f"ComparisonOracle(f)). Got {type(oracle).__name__}.")
    x = check_array("x", x, owner=owner, ndim=1)
    delta = check_real("delta", delta, owner=owner, low=0.0, high=1.0, closed="right")
    if radius is None:
        radius = default_radius(x)
    radius = check_real("radius", radius, owner=owner, low=0.0, closed="neither")
    return x, delta, radius


def _normalized_gradient(oracle, x, delta, radius) -> GradientEstimate:
    n = x.size
    if n == 1:
        up = sign_probe(oracle, x, np.ones(1), radius)[0]
        return GradientEstimate(np.array([1.0 if up else -1.0]), 1)
    eye = np.eye(n)
    X = np.repeat(x[None], n, 0)
    s = np.where(sign_probe(oracle, X, eye, radius), 1.0, -1.0)
    # knockout tournament for argmax |g_i|: <g, (s_i e_i - s_j e_j)> = |g_i| - |g_j|
    alive = np.arange(n)
    while alive.size > 1:
        a, b = alive[0:alive.size - 1:2], alive[1::2]
        U = np.zeros((a.size, n))
        U[np.arange(a.size), a] = s[a]
        U[np.arange(a.size), b] = -s[b]
        win_a = sign_probe(oracle, np.repeat(x[None], a.size, 0), U / math.sqrt(2.0), radius)
        winners = np.where(win_a, a, b)
        alive = np.concatenate([winners, alive[2 * a.size:]])
    top = int(alive[0])
    rest = np.array([i for i in range(n) if i != top])
    # bisection of |alpha_i| = |g_i| / |g_top| in [0, 1]: <g, s_i e_i - t s_top e_top> > 0 iff
    # |g_i| > t |g_top|
    lo, hi = np.zeros(rest.size), np.ones(rest.size)
    steps = max(1, math.ceil(math.log2(math.sqrt(n) / delta)))
    Xr = np.repeat(x[None], rest.size, 0)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        U = np.zeros((rest.size, n))
        U[np.arange(rest.size), rest] = s[rest]
        U[:, top] = -mid * s[top]
        above = sign_probe(oracle, Xr, U / np.linalg.norm(U, axis=1, keepdims=True), radius)
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    g = np.zeros(n)
    g[top] = s[top]
    g[rest] = s[rest] * 0.5 * (lo + hi)
    return GradientEstimate(g / np.linalg.norm(g), n + (n - 1) + (n - 1) * steps)


def normalized_gradient(oracle: ComparisonOracle, x, *, delta: float = 0.125,
                        radius: float | None = None) -> GradientEstimate:
    """Estimate ``grad f(x) / |grad f(x)|`` from comparisons (see the module docstring).

    Accuracy: ``|g_hat - g/|g|| <= delta`` when every probed directional derivative clears
    the P1 margin rho r^2 / 6 (exact on linear and quadratic f up to rounding).
    Cost: :func:`gradient_cost` ``(n, delta)`` comparisons, in ``2 + log2(n) + log2(sqrt(n)/delta)``
    batched rounds.

    >>> import numpy as np
    >>> orc = ComparisonOracle(lambda z: float(np.dot([3.0, -4.0], z)))
    >>> g, cost = normalized_gradient(orc, np.zeros(2), delta=1e-3)
    >>> np.round(g, 3).tolist(), cost
    ([0.6, -0.8], 14)
    """
    x, delta, radius = _check_common("normalized_gradient", oracle, x, delta, radius)
    return _normalized_gradient(oracle, x, delta, radius)


def _basis(g_hat: np.ndarray) -> np.ndarray:
    """Orthonormal Q (columns) with Q[:, 0] = g_hat (a Householder reflection of e_1)."""
    n = g_hat.size
    e = np.zeros(n)
    e[0] = 1.0
    v = g_hat - e
    nv = float(np.linalg.norm(v))
    if nv < 1e-14:
        return np.eye(n)
    v = v / nv
    return np.eye(n) - 2.0 * np.outer(v, v)


def _scaled_hessian(oracle, x, g_hat, delta, radius, span) -> tuple[np.ndarray, int]:
    """M = H / |grad f| from comparisons (ours; see the module docstring)."""
    n = x.size
    Q = _basis(g_hat)
    U = Q.copy()
    U[:, 1:] += Q[:, :1]                     # u_1 = q_1, u_k = q_1 + q_k
    kk, ll = np.triu_indices(n)              # probe u_k, displacement u_l, k <= l
    P, D = U[:, kk].T, U[:, ll].T            # (m, n) each
    m = kk.size
    # side of the root: psi(+span) <= 0 -> root at h > 0 (S < 0); psi(-span) <= 0 -> h < 0
    X2 = np.concatenate([x + span * D, x - span * D])
    pos = sign_probe(oracle, X2, np.concatenate([P, P]), radius)
    plus_neg, minus_neg = ~pos[:m], ~pos[m:]
    side = np.where(minus_neg, -1.0, np.where(plus_neg, 1.0, 0.0))
    found = side != 0
    steps = _hessian_steps(n, delta)
    cost = 2 * m + m * steps
    lo = np.full(m, math.log(span) - LOG_RANGE * math.log(2.0))
    hi = np.full(m, math.log(span))
    sgn = np.where(found, side, 1.0)[:, None]
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        pos = sign_probe(oracle, x + sgn * np.exp(mid)[:, None] * D, P, radius)
        lo, hi = np.where(pos, mid, lo), np.where(pos, hi, mid)
    hstar = np.exp(0.5 * (lo + hi))
    S_entries = np.where(found, -side / hstar, 0.0)
    S = np.zeros((n, n))
    S[kk, ll] = S_entries
    S[ll, kk] = S_entries
    Uinv = np.linalg.inv(U)
    M = Uinv.T @ S @ Uinv
    return 0.5 * (M + M.T), cost


def normalized_hessian(oracle: ComparisonOracle, x, *, delta: float = 0.125,
                       radius: float | None = None, span: float | None = None,
                       g_hat=None) -> HessianEstimate:
    """Estimate ``H / |H|_2`` (and ``H / |grad f|``) at ``x`` from comparisons.

    ``span``: the largest displacement probed (default ``max(1, |x|)``); entries of
    ``U^T H U / |grad f|`` smaller than ``1/span`` are read as 0. ``g_hat``: a normalized
    gradient already estimated at ``x``; by default one is estimated here to accuracy
    ``delta / (2 n)`` (charged to the cost). Needs ``grad f(x) != 0``. INFERRED mechanism (ours,
    see the module docstring); cost :func:`hessian_cost` plus the gradient's.

    >>> import numpy as np
    >>> A = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> orc = ComparisonOracle(lambda z: 0.5 * float(z @ A @ z))
    >>> est = normalized_hessian(orc, np.array([1.0, -2.0]), delta=1e-3, span=10.0)
    >>> bool(np.linalg.norm(est.matrix - A / np.linalg.norm(A, 2), 2) < 1e-3)
    True
    """
    x, delta, radius = _check_common("normalized_hessian", oracle, x, delta, radius)
    if span is None:
        span = max(1.0, float(np.linalg.norm(x)))
    span = check_real("span", span, owner="normalized_hessian", low=0.0, closed="neither")
    cost = 0
    if g_hat is None:
        g_hat, cost = _normalized_gradient(oracle, x, delta / (2.0 * x.size), radius)
    else:
        g_hat = check_array("g_hat", g_hat, owner="normalized_hessian", shape=(x.size,))
        nrm = float(np.linalg.norm(g_hat))
        if not abs(nrm - 1.0) < 1e-6:
            fail("g_hat", "normalized_hessian", "a unit vector (a normalized gradient)", nrm)
    M, c = _scaled_hessian(oracle, x, g_hat, delta, radius, span)
    nm = float(np.linalg.norm(M, 2))
    H = M / nm if nm > 0 else M
    return HessianEstimate(H, cost + c, M)
