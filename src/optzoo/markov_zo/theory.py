"""Exact second moments on the sticky two-state test problem (our derivation, see the spec).

Test problem: :math:`F(x,z)=\\tfrac12\\|x-zc\\|^2`, :math:`z\\in\\{\\pm1\\}` from the sticky
chain started at :math:`\\pi`, :math:`\\|c\\|=\\sigma`, :math:`E z_iz_j=\\rho^{|i-j|}`. For any
weights :math:`w` with :math:`\\sum_i w_i=1` over consecutive samples, the two-point estimate
:math:`G=\\sum_i w_i g_i` satisfies exactly

.. math::
    E\\|G-\\nabla f(x)\\|^2=(d-1)(\\|x\\|^2+\\sigma^2)\\|w\\|^2+\\sigma^2\\,w^\\top R_\\rho w,
    \\qquad (R_\\rho)_{ij}=\\rho^{|i-j|},

and a first-order estimate has only the second term. With :math:`w_i=1/b` the second term
is :math:`\\sigma^2V_b(\\rho)`, :math:`V_b=[b+2\\sum_{k<b}(b-k)\\rho^k]/b^2`. MLMC weights sum
to one for the base level and to zero for the level difference, so the same identity
gives the randomized-batching second moment by averaging over :math:`J`.
"""

from __future__ import annotations

import math

import numpy as np

from optzoo.markov_zo.zo import expected_batch_cost, mlmc_weights

__all__ = [
    "batch_error",
    "crossover_tau",
    "mlmc_error",
    "predicted_ratio",
    "rho_for_mixing_time",
    "v_b",
    "weighted_error",
]


def v_b(b: int, rho: float) -> float:
    """:math:`V_b(\\rho)`; :math:`bV_b\\to(1+\\rho)/(1-\\rho)` as :math:`b\\to\\infty`.

    >>> v_b(1, 0.7), round(v_b(4, 0.0), 6)
    (1.0, 0.25)
    """
    k = np.arange(1, b)
    return float((b + 2.0 * np.sum((b - k) * rho ** k)) / b ** 2)


def rho_for_mixing_time(tau: float) -> float:
    """:math:`\\rho` of the uniform two-state sticky chain with :math:`\\rho^\\tau/2=1/4`."""
    return 0.5 ** (1.0 / tau)


def _wRw(w: np.ndarray, rho: float) -> float:
    n = w.size
    acc = float(w @ w)
    if rho != 0.0 and n > 1:
        lag = np.correlate(w, w, mode="full")[n:]  # sum_i w_i w_{i+k}, k = 1..n-1
        acc += 2.0 * float(np.sum(lag * rho ** np.arange(1, n)))
    return acc


def weighted_error(w, *, d: int, x_sq: float, sigma_sq: float, rho: float,
                   zero_order: bool = True) -> float:
    """:math:`E\\|\\sum_iw_ig_i-\\nabla f(x)\\|^2` (weights must sum to one)."""
    w = np.asarray(w, dtype=float)
    markov = sigma_sq * _wRw(w, rho)
    return ((d - 1) * (x_sq + sigma_sq) * float(w @ w) + markov) if zero_order else markov


def batch_error(b: int, *, d: int, x_sq: float, sigma_sq: float, rho: float,
                zero_order: bool = True) -> float:
    """Batch-of-b mean: :math:`(d-1)(\\|x\\|^2+\\sigma^2)/b+\\sigma^2V_b(\\rho)`.

    >>> round(batch_error(8, d=10, x_sq=1.0, sigma_sq=1.0, rho=0.0), 4)
    2.375
    """
    return weighted_error(np.full(b, 1.0 / b), d=d, x_sq=x_sq, sigma_sq=sigma_sq, rho=rho,
                          zero_order=zero_order)


def mlmc_error(*, d: int, x_sq: float, sigma_sq: float, rho: float, batch: int, max_level: int,
               zero_order: bool = True) -> float:
    """:math:`E\\|G-\\nabla f(x)\\|^2` of randomized batching, averaged over :math:`J`."""
    jmax = int(math.floor(math.log2(max_level)))
    tot = 0.0
    for j in range(1, jmax + 1):
        tot += 2.0 ** (-j) * weighted_error(mlmc_weights(j, batch, max_level), d=d, x_sq=x_sq,
                                            sigma_sq=sigma_sq, rho=rho, zero_order=zero_order)
    tot += 2.0 ** (-jmax) * weighted_error(mlmc_weights(jmax + 1, batch, max_level), d=d,
                                           x_sq=x_sq, sigma_sq=sigma_sq, rho=rho,
                                           zero_order=zero_order)
    return tot


def _efficiency(tau, d, zero_order, batch, max_level):
    # Error of SGD with 1/(mu k) steps after N samples ~ Var(G) * E[cost] / N at x*.
    m = max_level(tau) if callable(max_level) else max_level
    return mlmc_error(d=d, x_sq=0.0, sigma_sq=1.0, rho=rho_for_mixing_time(tau), batch=batch,
                      max_level=m, zero_order=zero_order) * expected_batch_cost(batch, m)


def crossover_tau(d: int, *, factor: float = 2.0, batch: int = 1, max_level=None,
                  reference_tau: float = 1.0) -> float:
    """The (continuous) :math:`\\tau` at which the predicted error of zero-order randomized
    batching at :math:`x^*` reaches ``factor`` times its value at ``reference_tau``.

    ``max_level``: int or callable ``tau -> M`` (default the package rule
    :math:`2^{\\lceil\\log_2(d+\\tau)\\rceil}`).
    """
    from scipy.optimize import brentq

    if max_level is None:
        max_level = lambda tau: 2 ** int(math.ceil(math.log2(d + tau)))  # noqa: E731
    base = _efficiency(reference_tau, d, True, batch, max_level)
    g = lambda lt: _efficiency(math.exp(lt), d, True, batch, max_level) / base - factor  # noqa: E731
    lo, hi = math.log(reference_tau), math.log(reference_tau)
    while g(hi) < 0:
        hi += 0.5
        if hi > 20:
            return float("inf")
    return float(math.exp(brentq(g, lo, hi, xtol=1e-4)))


def predicted_ratio(tau: float, d: int, *, zero_order: bool = True, batch: int = 1,
                    max_level=None, reference_tau: float = 1.0) -> float:
    """Predicted error ratio (at :math:`x^*`) between mixing times ``tau`` and ``reference_tau``."""
    if max_level is None:
        max_level = lambda t: 2 ** int(math.ceil(math.log2(d + t)))  # noqa: E731
    return (_efficiency(tau, d, zero_order, batch, max_level)
            / _efficiency(reference_tau, d, zero_order, batch, max_level))
