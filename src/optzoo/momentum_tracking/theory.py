"""Exact linear-Gaussian tracking theory for SGD, heavy-ball and Nesterov momentum.

Paper: S. Sahu, C. J. Hogan, M. T. Wells, "On the Provable Suboptimality of Momentum SGD in
Nonstationary Stochastic Optimization", ICML 2026, arXiv 2601.12238. Fidelity:
**reconstructed**. The paper's theorems and constants were not available; everything here is
the exact theory of the quadratic case that this project derived (spec section 1.2), not a
transcription of the paper's bounds, which optzoo does not provide.

Model, per eigen-direction of curvature ``mu`` (the quadratic is diagonal in its eigenbasis;
isotropic noise and drift make that basis choice free)::

    F_t(theta) = mu/2 (theta - theta*_t)^2,   g_t = mu e_t + xi_t,   e_t = theta_t - theta*_t
    theta*_{t+1} = theta*_t + delta_t,        xi_t ~ N(0, s^2),  delta_t ~ N(0, q) (random walk)

Three parametrisations of momentum (all reduce to SGD ``theta <- theta - lr g`` at beta = 0)::

    "torch"    (torch.optim.SGD, dampening=0)   v <- beta v + g;            theta <- theta - lr v
    "ema"      (torch.optim.SGD, dampening=beta) v <- beta v + (1-beta) g;  theta <- theta - lr v
    "nesterov" (torch.optim.SGD, nesterov=True) v <- beta v + g;            theta <- theta - lr (g + beta v)

Each is a 2-state linear system x_{t+1} = A x_t + b_xi xi_t + b_delta delta_t in x = (e, v),
so the mean-square error is *exactly* transient^2 + noise part + drift part. The first step
follows torch's convention (the buffer starts at g_0, not at (1-beta) g_0), which changes only
the transient of the "ema" form.

Stable step sizes (largest curvature L): torch ``lr < 2(1+beta)/L``; ema
``lr < 2(1+beta)/((1-beta)L)``; nesterov ``lr < (2+2beta)/((1+2beta)L)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from optzoo._core.validation import check_choice, check_int, check_real, fail

__all__ = [
    "FORMS",
    "DRIFTS",
    "MSEParts",
    "Decomposition",
    "stable_lr_max",
    "system_matrices",
    "stationary_mse",
    "closed_form_mse",
    "tracking_error",
    "constant_drift_lag",
    "impulse_response",
    "worst_case_drift_gain",
    "adversarial_drift",
    "kalman_floor",
    "tuned_mse",
    "curvature_spectrum",
]

FORMS = ("torch", "ema", "nesterov")
DRIFTS = ("random_walk", "constant", "adversarial")


# --------------------------------------------------------------------------- validation
def _curvatures(curvatures: Any, owner: str) -> np.ndarray:
    mu = np.atleast_1d(_floats("curvatures", curvatures, owner, "a positive number or a non-empty 1-D array"))
    if mu.ndim != 1 or mu.size == 0:
        fail("curvatures", owner, "a positive number or a non-empty 1-D array", curvatures)
    if not np.isfinite(mu).all() or (mu <= 0).any():
        bad = mu[~(np.isfinite(mu) & (mu > 0))][0]
        fail("curvatures", owner, "positive and finite (a strongly convex quadratic)", float(bad))
    return mu


def _floats(name: str, value: Any, owner: str, rule: str) -> np.ndarray:
    """``value`` as a float array; a str, None or ragged input gets the template TypeError."""
    try:
        if isinstance(value, (str, bytes)) or value is None:
            raise TypeError
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        fail(name, owner, rule, value, exc=TypeError)


def _grid(name: str, value: Any, owner: str, low: float, high: float | None, closed: str) -> np.ndarray:
    arr = _floats(name, value, owner, "a real number or an array of real numbers")
    flat = arr.ravel()
    for v in flat:
        check_real(name, float(v), owner=owner, low=low, high=high, closed=closed)
    return arr


def _momentum(value: Any, owner: str) -> np.ndarray:
    return _grid("momentum", value, owner, 0.0, 1.0, "left")


def stable_lr_max(curvatures: Any, momentum: Any = 0.9, *, form: str = "torch") -> np.ndarray | float:
    """Largest stable step size (exclusive) for the given largest curvature and momentum.

    >>> round(float(stable_lr_max(1.0, 0.9)), 6)
    3.8
    """
    owner = "stable_lr_max"
    check_choice("form", form, FORMS, owner=owner)
    L = float(_curvatures(curvatures, owner).max())
    b = _momentum(momentum, owner)
    if form == "torch":
        out = 2.0 * (1.0 + b) / L
    elif form == "ema":
        out = 2.0 * (1.0 + b) / ((1.0 - b) * L)
    else:
        out = (2.0 + 2.0 * b) / ((1.0 + 2.0 * b) * L)
    return float(out) if np.ndim(out) == 0 else out


_BOUND_TEXT = {"torch": "2(1+beta)/L", "ema": "2(1+beta)/((1-beta)L)", "nesterov": "(2+2beta)/((1+2beta)L)"}


def _lr(value: Any, mu: np.ndarray, beta: np.ndarray, form: str, owner: str) -> np.ndarray:
    lr = _grid("lr", value, owner, 0.0, None, "neither")
    lr_b, beta_b = np.broadcast_arrays(lr, beta)
    limit = np.asarray(stable_lr_max(mu, beta_b, form=form))
    bad = ~(lr_b < limit)
    if bad.any():
        i = np.argwhere(bad)[0]
        i = tuple(i) if bad.ndim else ()
        lim = float(np.asarray(limit)[i])
        fail("lr", owner,
             f"in (0, {lim:.6g}) for momentum={float(beta_b[i]):g}, form={form!r} and largest "
             f"curvature L={float(mu.max()):g} (stable range lr < {_BOUND_TEXT[form]})",
             float(lr_b[i]))
    return lr


# --------------------------------------------------------------------------- the linear system
def system_matrices(mu: Any, lr: Any, momentum: Any, form: str = "torch"):
    """Arrays ``(A, b_xi, b_delta, A1, b1_xi)`` of shape ``(..., 2, 2)`` / ``(..., 2)``.

    ``A``: steady transition of x = (e, v); ``A1``, ``b1_xi``: torch's first step (buffer set to
    g_0). Broadcasts over ``mu``, ``lr``, ``momentum``. No validation (internal building block).
    """
    mu, lr, b = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (mu, lr, momentum)))
    one, zero = np.ones_like(mu), np.zeros_like(mu)
    if form == "torch":
        k, p, r = one, zero, one
    elif form == "ema":
        k, p, r = 1.0 - b, zero, one
    elif form == "nesterov":
        k, p, r = one, one, b
    else:
        raise ValueError(f"unknown form {form!r}")
    # v' = b v + k g ; e' = e - lr (p g + r v') - delta ;  g = mu e + xi
    c = p + r * k  # weight of g in the step
    A = np.stack([np.stack([1.0 - lr * c * mu, -lr * r * b], -1),
                  np.stack([k * mu, b], -1)], -2)
    b_xi = np.stack([-lr * c, k], -1)
    b_delta = np.stack([-one, zero], -1)
    c1 = p + r  # first step: v_1 = g_0
    A1 = np.stack([np.stack([1.0 - lr * c1 * mu, zero], -1), np.stack([mu, zero], -1)], -2)
    b1_xi = np.stack([-lr * c1, one], -1)
    return A, b_xi, b_delta, A1, b1_xi


def _lyap_ee(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Stationary E e^2 of x' = A x + b w, w white with unit variance (batched 2x2 Lyapunov).

    The symmetric Lyapunov equation has three unknowns (s00, s01, s11); Cramer's rule on that
    3x3 system is elementwise, so large (lr, beta, mu) grids cost a few array operations.
    """
    a, b_, c, d = A[..., 0, 0], A[..., 0, 1], A[..., 1, 0], A[..., 1, 1]
    u, w = b[..., 0], b[..., 1]
    # M s = r with M = I - K, K the map s -> A S A^T restricted to (s00, s01, s11)
    m = [[1 - a * a, -2 * a * b_, -b_ * b_],
         [-a * c, 1 - (a * d + b_ * c), -b_ * d],
         [-c * c, -2 * c * d, 1 - d * d]]
    r = [u * u, u * w, w * w]

    def det3(x):
        return (x[0][0] * (x[1][1] * x[2][2] - x[1][2] * x[2][1])
                - x[0][1] * (x[1][0] * x[2][2] - x[1][2] * x[2][0])
                + x[0][2] * (x[1][0] * x[2][1] - x[1][1] * x[2][0]))

    m0 = [[r[i]] + m[i][1:] for i in range(3)]
    return det3(m0) / det3(m)


@dataclass(frozen=True)
class MSEParts:
    """Stationary mean-square tracking error, summed over directions: ``noise + drift``."""

    noise: np.ndarray
    drift: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return self.noise + self.drift


def stationary_mse(curvatures: Any, lr: Any, momentum: Any = 0.9, *, noise_var: float,
                   drift_var: float, form: str = "torch") -> MSEParts:
    """Exact steady-state E||theta_t - theta*_t||^2 under random-walk drift, split in two.

    ``noise_var`` = s^2 (gradient-noise variance per coordinate), ``drift_var`` = q (per-step
    random-walk variance per coordinate). ``lr`` and ``momentum`` broadcast (a grid); the
    result has their broadcast shape and sums over ``curvatures``.

    >>> p = stationary_mse(1.0, 0.1, 0.0, noise_var=1.0, drift_var=0.01)
    >>> round(float(p.noise), 6), round(float(p.drift), 6)
    (0.052632, 0.052632)
    """
    owner = "stationary_mse"
    check_choice("form", form, FORMS, owner=owner)
    mu = _curvatures(curvatures, owner)
    s2 = check_real("noise_var", noise_var, owner=owner, low=0.0)
    q = check_real("drift_var", drift_var, owner=owner, low=0.0)
    beta = _momentum(momentum, owner)
    lr = _lr(lr, mu, beta, form, owner)
    lr_b, beta_b = np.broadcast_arrays(lr, beta)
    A, bx, bd, _, _ = system_matrices(mu, lr_b[..., None], beta_b[..., None], form)
    return MSEParts(s2 * _lyap_ee(A, bx).sum(-1), q * _lyap_ee(A, bd).sum(-1))


def closed_form_mse(curvatures: Any, lr: Any, momentum: Any = 0.9, *, noise_var: float,
                    drift_var: float, form: str = "torch") -> MSEParts:
    """The spec's symbolic table (torch and ema forms); a check on :func:`stationary_mse`.

    With a = lr*mu: torch noise ``lr^2 s^2 (1+b) / (a(1-b)(2+2b-a))``, drift
    ``q[(1-b)^2(1+b)+2ab] / (a(1-b)(2+2b-a))``; ema noise ``lr^2 s^2 (1+b)/(a(2+2b-a(1-b)))``,
    drift ``q(1-b^2+2ab)/(a(1-b)(2+2b-a(1-b)))``.
    """
    owner = "closed_form_mse"
    check_choice("form", form, ("torch", "ema"), owner=owner)
    mu = _curvatures(curvatures, owner)
    s2 = check_real("noise_var", noise_var, owner=owner, low=0.0)
    q = check_real("drift_var", drift_var, owner=owner, low=0.0)
    beta = _momentum(momentum, owner)
    lr = _lr(lr, mu, beta, form, owner)
    lr_b, b = (x[..., None] for x in np.broadcast_arrays(lr, beta))
    a = lr_b * mu
    if form == "torch":
        den = a * (1 - b) * (2 + 2 * b - a)
        noise = lr_b**2 * s2 * (1 + b) / den
        drift = q * ((1 - b) ** 2 * (1 + b) + 2 * a * b) / den
    else:
        den = 2 + 2 * b - a * (1 - b)
        noise = lr_b**2 * s2 * (1 + b) / (a * den)
        drift = q * (1 - b**2 + 2 * a * b) / (a * (1 - b) * den)
    return MSEParts(noise.sum(-1), drift.sum(-1))


@dataclass(frozen=True)
class Decomposition:
    """Exact E||e_t||^2 for t = 0..steps, split into transient^2, noise and drift parts."""

    transient: np.ndarray
    noise: np.ndarray
    drift: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return self.transient + self.noise + self.drift


def tracking_error(curvatures: Any, lr: float, momentum: float = 0.9, *, noise_var: float,
                   drift_var: float, init_error: Any = 1.0, steps: int,
                   form: str = "torch") -> Decomposition:
    """Exact finite-time decomposition of E||theta_t - theta*_t||^2 under random-walk drift.

    ``init_error``: e_0 per direction (a scalar applies to every direction). The three parts
    come from the three independent inputs (initial error, gradient noise, drift), so they
    add up exactly. Follows torch's first step (momentum buffer starts at g_0).

    >>> d = tracking_error([1.0], 0.1, 0.0, noise_var=0.0, drift_var=0.0, steps=2)
    >>> [round(float(x), 6) for x in d.transient]
    [1.0, 0.81, 0.6561]
    """
    owner = "tracking_error"
    check_choice("form", form, FORMS, owner=owner)
    mu = _curvatures(curvatures, owner)
    s2 = check_real("noise_var", noise_var, owner=owner, low=0.0)
    q = check_real("drift_var", drift_var, owner=owner, low=0.0)
    beta = float(check_real("momentum", momentum, owner=owner, low=0.0, high=1.0, closed="left"))
    lr = float(_lr(check_real("lr", lr, owner=owner, low=0.0, closed="neither"), mu, np.asarray(beta), form, owner))
    steps = check_int("steps", steps, owner=owner, low=1)
    e0 = np.broadcast_to(np.asarray(init_error, dtype=float), mu.shape)
    if not np.isfinite(e0).all():
        fail("init_error", owner, "finite", init_error)
    A, bx, bd, A1, b1 = system_matrices(mu, lr, beta, form)
    # After the first step the deviation from stationarity contracts exactly:
    # Sigma_t - Sigma_inf = A^(t-1) (Sigma_1 - Sigma_inf) A^(t-1)^T, and m_t = A^(t-1) m_1.
    rows = _power_rows(A, steps)  # (d, steps, 2): [1, 0] A^k for k < steps
    m1 = A1[..., :, 0] * e0[:, None]  # x_0 = (e_0, 0)
    trans = np.einsum("dkj,dj->dk", rows, m1) ** 2

    def part(var, b_in, b_first):
        if var == 0.0:
            return np.zeros(steps)
        s_inf = _lyap_full(A, b_in)
        dev = np.einsum("di,dj->dij", b_first, b_first) - s_inf
        quad = np.einsum("dki,dij,dkj->dk", rows, dev, rows)
        return var * (s_inf[:, 0, 0][:, None] + quad).sum(0)

    out = np.zeros((3, steps + 1))
    out[0, 0] = (e0**2).sum()
    out[0, 1:] = trans.sum(0)
    out[1, 1:] = part(s2, bx, b1)
    out[2, 1:] = part(q, bd, bd)
    return Decomposition(out[0], out[1], out[2])


def constant_drift_lag(curvatures: Any, lr: float, momentum: float = 0.9, *, velocity: float,
                       form: str = "torch") -> np.ndarray:
    """Steady mean error per direction under constant drift delta_t = velocity (exact).

    SGD and ema: ``-v/(lr mu)``; torch and nesterov: ``-(1-beta) v/(lr mu)``.

    >>> float(constant_drift_lag([2.0], 0.1, 0.5, velocity=1.0)[0])
    -2.5
    """
    owner = "constant_drift_lag"
    check_choice("form", form, FORMS, owner=owner)
    mu = _curvatures(curvatures, owner)
    v = check_real("velocity", velocity, owner=owner)
    beta = float(check_real("momentum", momentum, owner=owner, low=0.0, high=1.0, closed="left"))
    lr = float(_lr(check_real("lr", lr, owner=owner, low=0.0, closed="neither"), mu, np.asarray(beta), form, owner))
    A, _, bd, _, _ = system_matrices(mu, lr, beta, form)
    x = np.linalg.solve(np.eye(2) - A, (bd * v)[..., None])[..., 0]
    return x[:, 0]


# --------------------------------------------------------------------------- worst-case drift
def _spectral_radius(A: np.ndarray) -> np.ndarray:
    return np.abs(np.linalg.eigvals(A)).max(-1)


def _lyap_full(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Full stationary covariance (..., 2, 2) of x' = A x + b w (batched 4x4 solve)."""
    n = A.shape[:-2]
    kron = np.einsum("...ij,...kl->...ikjl", A, A).reshape(*n, 4, 4)
    rhs = np.einsum("...i,...j->...ij", b, b).reshape(*n, 4)
    return np.linalg.solve(np.eye(4) - kron, rhs[..., None])[..., 0].reshape(*n, 2, 2)


def _power_rows(A: np.ndarray, n: int, block: int = 64) -> np.ndarray:
    """[1, 0] A^k for k < n, shape (..., n, 2); blocked so the Python loop is n/block long."""
    pows = [np.broadcast_to(np.eye(2), A.shape)]
    for _ in range(block - 1):
        pows.append(pows[-1] @ A)
    blk = np.stack(pows, -3)  # (..., block, 2, 2): A^j
    Ablk = pows[-1] @ A
    out = np.empty(A.shape[:-2] + (n, 2))
    P = np.broadcast_to(np.eye(2), A.shape).copy()
    for s in range(0, n, block):
        vals = np.einsum("...jk,...kl->...jl", blk[..., :, 0, :], P)  # [1,0] A^j A^(s)
        out[..., s:s + block, :] = vals[..., : n - s, :]
        P = Ablk @ P
    return out


def _impulse(A: np.ndarray, b: np.ndarray, n: int, block: int = 64) -> np.ndarray:
    """h_k = [1,0] A^k b for k < n, shape (..., n); blocked so the Python loop is n/block long."""
    batch = A.shape[:-2]
    pows = [np.broadcast_to(np.eye(2), A.shape)]
    for _ in range(block - 1):
        pows.append(pows[-1] @ A)
    rows = np.stack([P[..., 0, :] for P in pows], -2)  # (..., block, 2): [1,0] A^j
    Ablk = pows[-1] @ A
    out = np.empty(batch + (n,))
    x = b.copy()
    for s in range(0, n, block):
        vals = np.einsum("...jk,...k->...j", rows, x)
        out[..., s:s + block] = vals[..., : n - s]
        x = np.einsum("...ij,...j->...i", Ablk, x)
    return out


def impulse_response(mu: float, lr: float, momentum: float = 0.9, *, steps: int,
                     form: str = "torch") -> np.ndarray:
    """Drift-to-error impulse response h_0..h_{steps-1}: e_T = sum_k h_k delta_{T-1-k}.

    >>> [round(float(h), 4) for h in impulse_response(1.0, 0.5, 0.0, steps=3)]
    [-1.0, -0.5, -0.25]
    """
    owner = "impulse_response"
    check_choice("form", form, FORMS, owner=owner)
    m = _curvatures(mu, owner)
    beta = float(check_real("momentum", momentum, owner=owner, low=0.0, high=1.0, closed="left"))
    lr = float(_lr(check_real("lr", lr, owner=owner, low=0.0, closed="neither"), m, np.asarray(beta), form, owner))
    steps = check_int("steps", steps, owner=owner, low=1)
    A, _, bd, _, _ = system_matrices(m, lr, beta, form)
    return _impulse(A, bd, steps)[0] if m.size == 1 else _impulse(A, bd, steps)


def _horizon(rho: np.ndarray, tol: float = 1e-13, cap: int = 400_000) -> int:
    r = float(np.max(rho))
    return cap if r >= 1.0 else int(min(cap, max(64, math.ceil(math.log(tol) / math.log(max(r, 1e-300))) + 64)))


def worst_case_drift_gain(mu: Any, lr: Any, momentum: Any = 0.9, *, form: str = "torch") -> np.ndarray:
    """sum_k |h_k|: the largest steady |e| per unit drift bound (|delta_t| <= 1), elementwise.

    ``mu``, ``lr`` and ``momentum`` broadcast together. SGD gives ``1/(lr mu)`` for lr mu <= 1.

    >>> round(float(worst_case_drift_gain(1.0, 0.1, 0.0)), 6)
    10.0
    """
    owner = "worst_case_drift_gain"
    check_choice("form", form, FORMS, owner=owner)
    m = _grid("mu", mu, owner, 0.0, None, "neither")
    beta = _momentum(momentum, owner)
    lr_arr = _grid("lr", lr, owner, 0.0, None, "neither")
    m, lr_arr, beta = np.broadcast_arrays(m, lr_arr, beta)
    limit = np.asarray(stable_lr_max(1.0, beta, form=form)) / m
    if (lr_arr >= limit).any():
        i = np.argwhere(lr_arr >= limit)[0] if lr_arr.ndim else ()
        i = tuple(i)
        fail("lr", owner, f"below {_BOUND_TEXT[form]} = {float(limit[i]):.6g} for momentum="
             f"{float(beta[i]):g} and curvature {float(m[i]):g}", float(lr_arr[i]))
    A, _, bd, _, _ = system_matrices(m, lr_arr, beta, form)
    h = _impulse(A, bd, _horizon(_spectral_radius(A)))
    return np.abs(h).sum(-1)


def adversarial_drift(mu: float, lr: float, momentum: float = 0.9, *, steps: int,
                      drift_bound: float = 1.0, form: str = "torch") -> np.ndarray:
    """The worst drift sequence for time ``steps``: delta_t = drift_bound sign(h_{steps-1-t}).

    Starting from e_0 = 0 without noise it gives |e_steps| = drift_bound * sum_{k<steps} |h_k|.
    """
    owner = "adversarial_drift"
    bound = check_real("drift_bound", drift_bound, owner=owner, low=0.0)
    h = impulse_response(mu, lr, momentum, steps=steps, form=form)
    return bound * np.sign(h[::-1])


# --------------------------------------------------------------------------- floors and tuning
def kalman_floor(curvatures: Any, *, noise_var: float, drift_var: float) -> float:
    """Information-theoretic floor: steady one-step Kalman MSE, summed over directions.

    Per direction the gradient gives theta - g/mu, an observation of theta* with noise
    r = s^2/mu^2; P = (q + sqrt(q^2 + 4 q r))/2. No gradient method beats P (Gaussian random
    walk); for bounded-drift classes it is only the best *linear* rule.

    >>> round(kalman_floor(1.0, noise_var=1.0, drift_var=0.01), 6)
    0.105125
    """
    owner = "kalman_floor"
    mu = _curvatures(curvatures, owner)
    s2 = check_real("noise_var", noise_var, owner=owner, low=0.0)
    q = check_real("drift_var", drift_var, owner=owner, low=0.0)
    r = s2 / mu**2
    return float(((q + np.sqrt(q * q + 4 * q * r)) / 2).sum())


def _objective(mu, lr, beta, form, s2, q, drift):
    """Steady MSE for each (lr, beta) grid point (shape of lr), summed over mu (no checks)."""
    A, bx, bd, _, _ = system_matrices(mu, lr[..., None], beta[..., None], form)
    noise = s2 * _lyap_ee(A, bx).sum(-1) if s2 > 0 else np.zeros(lr.shape)
    if drift == "random_walk":
        return noise + q * _lyap_ee(A, bd).sum(-1)
    if drift == "constant":  # q is the velocity; lag^2 per direction
        x = np.linalg.solve(np.eye(2) - A, (bd * q)[..., None])[..., 0]
        return noise + (x[..., 0] ** 2).sum(-1)
    # adversarial: q is the bound Delta. Grid points with a pole within 5e-4 of the unit
    # circle are left out (inf) so one near-unstable point cannot force a 10^5-step horizon.
    rho = _spectral_radius(A)
    far = rho < 1.0 - 5e-4
    h = _impulse(A, bd, _horizon(np.where(far, rho, 0.0)))
    worst = (np.where(far, np.abs(h).sum(-1), np.inf) ** 2).sum(-1)
    return noise + q**2 * worst


def _golden(mu, beta, form, s2, q, drift, lo, hi, best_x, best_f, max_iter=40):
    """Vectorised golden-section search of the objective in log lr on [lo, hi]."""
    f = lambda x: np.where(np.isfinite(v := _objective(mu, np.exp(x), beta, form, s2, q, drift)), v, np.inf)  # noqa: E731
    g = (math.sqrt(5) - 1) / 2
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    for _ in range(max_iter):
        left = f1 < f2  # minimum in [lo, x2]
        lo, hi = np.where(left, lo, x1), np.where(left, x2, hi)
        new = np.where(left, hi - g * (hi - lo), lo + g * (hi - lo))
        fn = f(new)
        x1, x2, f1, f2 = (np.where(left, new, x2), np.where(left, x1, new),
                          np.where(left, fn, f2), np.where(left, f1, fn))
    xm, fm = np.where(f1 < f2, x1, x2), np.minimum(f1, f2)
    better = fm < best_f
    return np.where(better, xm, best_x), np.where(better, fm, best_f)


def tuned_mse(curvatures: Any, momentum: Any = 0.9, *, noise_var: float, drift_var: float,
              drift: str = "random_walk", form: str = "torch", n_grid: int = 60,
              refine: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Best step size and its steady MSE for each momentum value: ``(lr_best, mse_best)``.

    A log grid of ``n_grid`` step sizes over (1e-4, 0.999) of the stable range, then (when
    ``refine``) a golden-section search in log lr around the best grid point. ``drift_var``
    is q for "random_walk", the velocity v for "constant" and the bound Delta for
    "adversarial" (the worst case, summed over directions: sum_i (Delta sum_k |h_ik|)^2).

    >>> lr, m = tuned_mse(1.0, 0.0, noise_var=1.0, drift_var=0.01)
    >>> round(float(m), 6), round(float(lr), 4)
    (0.105125, 0.0951)
    """
    owner = "tuned_mse"
    check_choice("form", form, FORMS, owner=owner)
    check_choice("drift", drift, DRIFTS, owner=owner)
    mu = _curvatures(curvatures, owner)
    s2 = check_real("noise_var", noise_var, owner=owner, low=0.0)
    q = check_real("drift_var", drift_var, owner=owner, low=0.0)
    n_grid = check_int("n_grid", n_grid, owner=owner, low=3)
    beta = np.atleast_1d(_momentum(momentum, owner)).astype(float)
    top = np.log(np.asarray(stable_lr_max(mu, beta, form=form)) * 0.999)
    u = np.linspace(0.0, 1.0, n_grid)
    logs = top[:, None] + np.log(1e-4) * (1.0 - u[None, :])
    vals = _objective(mu, np.exp(logs), np.broadcast_to(beta[:, None], logs.shape), form, s2, q, drift)
    vals = np.where(np.isfinite(vals), vals, np.inf)
    j = vals.argmin(-1)
    rows = np.arange(beta.size)
    best_x, best_f = logs[rows, j], vals[rows, j]
    if refine:
        best_x, best_f = _golden(mu, beta, form, s2, q, drift, logs[rows, np.maximum(j - 1, 0)],
                                 logs[rows, np.minimum(j + 1, n_grid - 1)], best_x, best_f)
    out_lr, out_f = np.exp(best_x), best_f
    if np.ndim(momentum) == 0:
        return out_lr[0], out_f[0]
    return out_lr.reshape(np.shape(momentum)), out_f.reshape(np.shape(momentum))


def curvature_spectrum(kappa: float, d: int, *, kind: str = "geometric", L: float = 1.0) -> np.ndarray:
    """Curvatures in [L/kappa, L]: "two" (d/2 each of L/kappa and L; d=2 gives {L/kappa, L}),
    "geometric" or "linear" spacing (d points, both ends included).

    >>> curvature_spectrum(100.0, 3).round(3).tolist()
    [0.01, 0.1, 1.0]
    """
    owner = "curvature_spectrum"
    kappa = check_real("kappa", kappa, owner=owner, low=1.0)
    d = check_int("d", d, owner=owner, low=1)
    check_choice("kind", kind, ("two", "geometric", "linear"), owner=owner)
    L = check_real("L", L, owner=owner, low=0.0, closed="neither")
    lo = L / kappa
    if d == 1 or kappa == 1.0:
        return np.full(d, L)
    if kind == "two":
        return np.where(np.arange(d) < d // 2, lo, L).astype(float)
    if kind == "geometric":
        return np.geomspace(lo, L, d)
    return np.linspace(lo, L, d)
