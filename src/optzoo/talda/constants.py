"""Two-sided PL constants and the certified rate of TALDA-R (numpy only).

Everything here is our reconstruction (spec ``talda.md`` §1.3, all INFERRED): the paper's
surrogate and rate are not public. Notation: ``mu_x, mu_y`` are the PL constants of
``f(., y)`` and ``-f(x, .)``; ``L_x, L_y`` block smoothness; ``L_xy`` cross-smoothness.

    L_Phi = L_x + L_xy^2 / mu_y                               (smoothness of Phi = max_y f)
    M     = (1 + lam) L_Phi + lam L_x
    K     = L_xy [(1 + lam) / mu_y + lam / L_y]
    w_y   = L_xy^2 / (mu_x mu_y^2) + lam / (2 mu_y)
    W     = |g_x|^2 / mu_x + w_y |g_y|^2                      (>= P, gradient-only)
    r     = inf_rho [(1 - K rho)_+^2 / (2M) + lam rho^2 / (2 L_y)] / [1/mu_x + w_y rho^2]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optzoo._core.validation import check_real, fail

__all__ = ["TwoSidedPL", "LyapunovTerms", "certified_rate", "lyapunov_terms", "agda_theory_rate"]

_LAM_GRID = np.logspace(-4, 2, 121)
_RHO_GRID = np.concatenate([[0.0], np.logspace(-9, 9, 3601)])


@dataclass(frozen=True)
class TwoSidedPL:
    """Valid global constants of a two-sided PL problem ``min_x max_y f(x, y)``.

    ``mu_x <= L_x`` and ``mu_y <= L_y`` are enforced (a PL constant cannot exceed the
    smoothness constant of the same block). ``L_xy = 0`` means the problem decouples.
    """

    mu_x: float
    mu_y: float
    L_x: float
    L_y: float
    L_xy: float

    def __post_init__(self) -> None:
        for name in ("mu_x", "mu_y", "L_x", "L_y"):
            check_real(name, getattr(self, name), owner="TwoSidedPL", low=0.0, closed="neither")
        check_real("L_xy", self.L_xy, owner="TwoSidedPL", low=0.0)
        if self.mu_x > self.L_x:
            fail("mu_x", "TwoSidedPL", f"<= L_x = {self.L_x:g}", self.mu_x)
        if self.mu_y > self.L_y:
            fail("mu_y", "TwoSidedPL", f"<= L_y = {self.L_y:g}", self.mu_y)

    @property
    def ell(self) -> float:
        """The single constant of older analyses, max(L_x, L_y, L_xy)."""
        return max(self.L_x, self.L_y, self.L_xy)

    @property
    def L_phi(self) -> float:
        return self.L_x + self.L_xy**2 / self.mu_y

    @property
    def coupling(self) -> float:
        """Dimensionless coupling L_xy^2 / (mu_x mu_y)."""
        return self.L_xy**2 / (self.mu_x * self.mu_y)


@dataclass(frozen=True)
class LyapunovTerms:
    """The constants TALDA-R derives from ``TwoSidedPL`` and ``lam``."""

    lam: float
    M: float
    K: float
    w_y: float
    L_y: float
    mu_x: float
    rate: float


def _terms(c: TwoSidedPL, lam):
    lam = np.asarray(lam, dtype=float)
    M = (1 + lam) * c.L_phi + lam * c.L_x
    K = c.L_xy * ((1 + lam) / c.mu_y + lam / c.L_y)
    w_y = c.L_xy**2 / (c.mu_x * c.mu_y**2) + lam / (2 * c.mu_y)
    return M, K, w_y


def _rate_grid(c: TwoSidedPL, lam: np.ndarray) -> np.ndarray:
    """Grid infimum over rho (plus rho -> inf) for each lam; shape of ``lam``."""
    M, K, w_y = (a[..., None] for a in _terms(c, lam))
    lam_ = np.asarray(lam, dtype=float)[..., None]
    rho = _RHO_GRID
    num = np.clip(1 - K * rho, 0, None) ** 2 / (2 * M) + lam_ * rho**2 / (2 * c.L_y)
    den = 1 / c.mu_x + w_y * rho**2
    inf_limit = (lam_ / (2 * c.L_y)) / w_y
    return np.minimum((num / den).min(-1), inf_limit[..., 0])


def _rate_exact(c: TwoSidedPL, lam: float) -> float:
    """Refine the grid infimum with a bounded 1-D search around the grid minimiser, so the
    rate is the true infimum to ~1e-12 relative (an over-estimate would make the
    certificate C_k <= -r W_k fail by rounding)."""
    from scipy.optimize import minimize_scalar

    M, K, w_y = (float(a) for a in _terms(c, lam))

    def ratio(rho):
        return ((max(0.0, 1 - K * rho) ** 2 / (2 * M) + lam * rho**2 / (2 * c.L_y))
                / (1 / c.mu_x + w_y * rho**2))

    rho = _RHO_GRID
    vals = ((np.clip(1 - K * rho, 0, None) ** 2 / (2 * M) + lam * rho**2 / (2 * c.L_y))
            / (1 / c.mu_x + w_y * rho**2))
    i = int(vals.argmin())
    best = float(vals[i])
    lo, hi = _RHO_GRID[max(i - 1, 0)], _RHO_GRID[min(i + 1, _RHO_GRID.size - 1)]
    if hi > lo:
        res = minimize_scalar(ratio, bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-14 * max(hi, 1e-300), "maxiter": 500})
        best = min(best, float(res.fun))
    # the kink of (1 - K rho)_+ at rho = 1/K is where the infimum often sits
    if K > 0:
        best = min(best, ratio(1.0 / K))
    return min(best, (lam / (2 * c.L_y)) / w_y)


def certified_rate(constants: TwoSidedPL, *, lam="auto") -> tuple[float, float]:
    """Certified per-iteration contraction ``r`` of TALDA-R and the weight ``lam`` used.

    ``P_{k+1} <= (1 - r) P_k`` for the idealized Lyapunov function
    ``P = [Phi(x) - Phi*] + lam [Phi(x) - f(x, y)]`` (INFERRED construction, spec §1.3).
    ``lam="auto"`` maximises r over 121 log-spaced values in [1e-4, 1e2].

    >>> r, lam = certified_rate(TwoSidedPL(0.17553, 1.26031, 8.0, 28.0, 3.0))
    >>> round(lam, 2), f"{r:.3g}"
    (1.26, '0.000104')
    """
    if not isinstance(constants, TwoSidedPL):
        raise TypeError("The 'constants' argument of certified_rate must be a TwoSidedPL. "
                        f"Got {type(constants).__name__}.")
    if isinstance(lam, str):
        if lam != "auto":
            fail("lam", "certified_rate", "'auto' or a positive real number", lam)
        rates = _rate_grid(constants, _LAM_GRID)
        lam = float(_LAM_GRID[int(rates.argmax())])
    else:
        lam = check_real("lam", lam, owner="certified_rate", low=0.0, closed="neither")
    return _rate_exact(constants, lam), lam


def lyapunov_terms(constants: TwoSidedPL, *, lam="auto") -> LyapunovTerms:
    """M, K, w_y and the certified rate for ``constants`` and ``lam`` (see module doc)."""
    rate, lam = certified_rate(constants, lam=lam)
    M, K, w_y = (float(a) for a in _terms(constants, lam))
    return LyapunovTerms(lam, M, K, w_y, constants.L_y, constants.mu_x, rate)


def agda_theory_rate(constants: TwoSidedPL) -> tuple[float, float, float]:
    """(rate, tau_x, tau_y) of AGDA with Yang et al. (2020)'s steps, recalled constants:
    tau_y = 1/l, tau_x = mu_y^2 / (18 l^3), P_{t+1} <= (1 - mu_x mu_y^2 / (36 l^3)) P_t with
    P = a + b/10 and l = max(L_x, L_y, L_xy)."""
    ell = constants.ell
    return (constants.mu_x * constants.mu_y**2 / (36 * ell**3),
            constants.mu_y**2 / (18 * ell**3), 1.0 / ell)


def decoupled_rate(constants: TwoSidedPL, lam: float) -> float:
    """Closed form of r when L_xy = 0: min(mu_x / (2 (1 + 2 lam) L_x), mu_y / L_y)."""
    return min(constants.mu_x / (2 * (1 + 2 * lam) * constants.L_x), constants.mu_y / constants.L_y)


