"""Safe-KL approximation of LogSumExp (Gladin, Kroshnin, Zhu, Dvurechensky; arXiv 2509.24894,
ICML 2026), with the exact LogSumExp, the biased minibatch estimator and the SumExp baseline.

All functions use the log-mean-exp convention: for scores ``s`` over a probability vector
``w`` (uniform by default) and temperature ``tau``,

    exact:    tau * ln sum_i w_i exp(s_i / tau)                     (= LSE - tau ln n if uniform)
    safe:     G_rho = min_alpha  alpha + (tau/rho) sum_i w_i softplus((s_i - alpha)/tau + ln rho)
    SumExp:   min_alpha alpha + tau * (sum_i w_i exp((s_i - alpha)/tau) - 1)

The safe form is the official code's objective (``alpha`` a scalar parameter trained jointly
with the model). ``G_rho`` equals a variational form with the "Safe KL" f-divergence
``f_rho(t) = t ln t + ((1 - rho t)/rho) ln(1 - rho t)`` on ``[0, 1/rho]``: the worst-case
density is capped at ``1/rho``. ``F_rho = G_rho - tau*kappa_rho``
with ``kappa_rho = -((1-rho)/rho) ln(1-rho)`` is the value normalised by ``D_rho(mu||mu) = 0``
(``normalized=True``). ``F_rho <= exact`` always; ``G_rho`` itself tends to ``exact + 1``
(``kappa_rho -> 1``) as rho -> 0, like the SumExp form without its ``- 1``. Which constant the
paper uses is INFERRED; both are available.

Learning rates: per-sample gradient weights are ``sigma(u_i)/rho`` in ``(0, 1/rho)``, so a
minibatch gradient can be up to ``1/rho`` times a single-sample gradient. Scale the learning
rate proportionally to ``rho`` (the authors use 1e-6 for safe vs 1e-5 for minibatch-LSE at
rho = 1e-3 and batch 100).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from optzoo._core.validation import check_int, check_real, fail

__all__ = [
    "exact_logsumexp",
    "minibatch_logsumexp",
    "sumexp_loss",
    "safe_kl_logsumexp",
    "safe_logsumexp",
    "safe_alpha",
    "kl_dro_loss",
    "f_rho",
    "kappa_rho",
    "safe_kl_divergence",
]

_RHO_WARN = 0.2


# ----------------------------------------------------------------------------- validation
def _check_rho(rho, owner: str) -> float:
    rho = check_real("rho", rho, owner=owner, low=0.0, high=1.0, closed="neither")
    if rho > _RHO_WARN:
        warnings.warn(
            f"rho={rho:g} > {_RHO_WARN}: the Safe-KL approximation caps the worst-case density at "
            f"1/rho={1 / rho:.3g}, which biases the value strongly below LogSumExp.",
            UserWarning, stacklevel=3,
        )
    return rho


def _as_tensor(name: str, x, owner: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        t = x
    elif isinstance(x, (np.ndarray, list, tuple)):
        t = torch.as_tensor(np.asarray(x, dtype=float))
    else:
        fail(name, owner, "a torch.Tensor or a numpy array", type(x).__name__, exc=TypeError)
    if not (t.is_floating_point()):
        t = t.double()
    return t


def _prep(scores, weights, dim: int, owner: str):
    """Validate and return (scores, log-weights broadcastable to scores, normalised dim)."""
    s = _as_tensor("scores", scores, owner)
    if s.dim() == 0:
        fail("scores", owner, "a tensor with at least one dimension", tuple(s.shape))
    dim = check_int("dim", dim, owner=owner, low=-s.dim(), high=s.dim() - 1) % s.dim()
    if s.shape[dim] == 0:
        fail("scores", owner, "non-empty along dim", tuple(s.shape))
    if not bool(torch.isfinite(s).all()):
        fail("scores", owner, "finite (no NaN or inf)", "NaN or inf")
    if weights is None:
        logw = torch.full((), -math.log(s.shape[dim]), dtype=s.dtype, device=s.device)
        return s, logw, dim
    w = _as_tensor("weights", weights, owner).to(dtype=s.dtype, device=s.device)
    if w.dim() == 1:
        if w.shape[0] != s.shape[dim]:
            fail("weights", owner, f"of length {s.shape[dim]} (the size of scores along dim)",
                 tuple(w.shape))
        shape = [1] * s.dim()
        shape[dim] = -1
        w = w.reshape(shape)
    elif w.shape != s.shape:
        fail("weights", owner, f"1-D or of the shape of scores {tuple(s.shape)}", tuple(w.shape))
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
        fail("weights", owner, "finite and non-negative", "a negative or non-finite entry")
    tot = w.sum(dim=dim)
    if not bool(torch.allclose(tot, torch.ones_like(tot), atol=1e-6)):
        fail("weights", owner, "summing to 1 along dim", float(tot.flatten()[0]))
    return s, torch.log(w), dim


def _alpha_like(alpha, s: torch.Tensor, dim: int, owner: str) -> torch.Tensor:
    a = _as_tensor("alpha", alpha, owner) if not isinstance(alpha, (int, float)) else \
        torch.tensor(float(alpha), dtype=s.dtype, device=s.device)
    reduced = s.shape[:dim] + s.shape[dim + 1:]
    try:
        ok = torch.broadcast_shapes(a.shape, reduced) == reduced  # alpha must not widen the output
    except RuntimeError:
        ok = False
    if not ok:
        fail("alpha", owner, f"a scalar or broadcastable to {tuple(reduced)}", tuple(a.shape))
    if not bool(torch.isfinite(a).all()):
        fail("alpha", owner, "finite (no NaN or inf)", "NaN or inf")
    return a.unsqueeze(dim) if a.dim() > 0 else a


# ----------------------------------------------------------------------------- exact / baselines
def exact_logsumexp(scores, *, tau: float = 1.0, weights=None, dim: int = -1) -> torch.Tensor:
    """The exact log-mean-exp ``tau * ln sum_i w_i exp(s_i / tau)`` (w uniform by default).

    >>> float(exact_logsumexp(torch.tensor([0.0, 0.0])))
    0.0
    """
    owner = "exact_logsumexp"
    tau = check_real("tau", tau, owner=owner, low=0.0, closed="neither")
    s, logw, dim = _prep(scores, weights, dim, owner)
    return tau * torch.logsumexp(s / tau + logw, dim=dim)


def minibatch_logsumexp(batch_scores, *, tau: float = 1.0, dim: int = -1) -> torch.Tensor:
    """The minibatch-LSE estimator: the exact log-mean-exp of a minibatch only.

    Its expectation over batches is below the full-data value (Jensen) and its gradient is
    biased; the bias grows as the batch shrinks. Kept as the baseline the paper improves on.
    """
    return exact_logsumexp(batch_scores, tau=tau, dim=dim)


def sumexp_loss(scores, alpha, *, tau: float = 1.0, weights=None, dim: int = -1) -> torch.Tensor:
    """SumExp surrogate ``alpha + tau (sum_i w_i exp((s_i - alpha)/tau) - 1)``.

    Jointly convex and unbiased under minibatching, but ``exp`` is evaluated as is (the
    baseline's failure mode: it overflows to inf once ``(s - alpha)/tau`` exceeds ~88 in
    float32 or ~709 in float64).
    """
    owner = "sumexp_loss"
    tau = check_real("tau", tau, owner=owner, low=0.0, closed="neither")
    s, logw, dim = _prep(scores, weights, dim, owner)
    a = _alpha_like(alpha, s, dim, owner)
    w = torch.exp(logw)
    out = a + tau * ((w * torch.exp((s - a) / tau)).sum(dim=dim, keepdim=True) - 1.0)
    return out.squeeze(dim)


# ----------------------------------------------------------------------------- the safe form
def _solve_alpha_unit(z: torch.Tensor, logw: torch.Tensor, rho: float, tol: float,
                      max_iter: int) -> torch.Tensor:
    """Root of ``sum_i w_i sigma(z_i - a + ln rho) = rho`` along the last dim (safeguarded
    Newton inside a shrinking bracket; float64)."""
    lnrho = math.log(rho)
    w = torch.exp(logw).expand_as(z)
    # sigma(u) <= e^u gives h(LSE_w z) <= 0; sigma(z_i - a + ln rho) >= rho for every i once
    # a <= min z + ln(1 - rho), so h >= 0 there.
    hi = torch.logsumexp(z + logw, dim=-1)
    lo = z.min(dim=-1).values + math.log1p(-rho)
    a = hi.clone()
    for _ in range(max_iter):
        sig = torch.sigmoid(z - a.unsqueeze(-1) + lnrho)
        h = (w * sig).sum(-1) - rho
        hp = -(w * sig * (1.0 - sig)).sum(-1)
        done = (h.abs() <= tol * rho) | (hi - lo <= tol * (1.0 + a.abs()))
        if bool(done.all()):
            break
        lo = torch.where(h > 0, a, lo)
        hi = torch.where(h > 0, hi, a)
        step = a - h / torch.where(hp < 0, hp, torch.full_like(hp, -1e-300))
        bad = ~((step >= lo) & (step <= hi))
        a = torch.where(done, a, torch.where(bad, 0.5 * (lo + hi), step))
    return a


def safe_alpha(scores, *, rho: float = 1e-2, tau: float = 1.0, weights=None, dim: int = -1,
               tol: float = 1e-12, max_iter: int = 200) -> torch.Tensor:
    """The optimal auxiliary variable ``alpha*`` of the safe form (no gradient).

    ``alpha*`` solves ``sum_i w_i sigma((s_i - alpha)/tau + ln rho) = rho``; it is unique and
    shifts with the scores (``alpha*(s + c) = alpha*(s) + c``).
    """
    owner = "safe_alpha"
    rho = _check_rho(rho, owner)
    tau = check_real("tau", tau, owner=owner, low=0.0, closed="neither")
    s, logw, dim = _prep(scores, weights, dim, owner)
    z = (s.detach().double() / tau).movedim(dim, -1)
    lw = logw.detach().double()
    lw = lw.movedim(dim, -1) if lw.dim() > 0 else lw
    a = _solve_alpha_unit(z, lw, rho, tol, max_iter)
    return (tau * a).to(s.dtype)


def safe_kl_logsumexp(scores, alpha=None, *, rho: float = 1e-2, tau: float = 1.0, weights=None,
                      dim: int = -1, normalized: bool = False) -> torch.Tensor:
    """Safe-KL LogSumExp: the minibatch surrogate (``alpha`` given) or its exact value.

    With ``alpha`` (a scalar or one value per group, e.g. an ``nn.Parameter``) it returns

        alpha + (tau/rho) * sum_i w_i softplus((s_i - alpha)/tau + ln rho),

    whose minibatch average is an unbiased estimate of the full-data surrogate and whose
    gradients in (scores, alpha) are unbiased; minimising jointly over the model and
    ``alpha`` minimises ``G_rho``. With ``alpha=None`` it returns the exact ``G_rho`` by
    solving for ``alpha*`` (gradients are the envelope gradients ``w_i sigma(u_i)/rho``).
    ``normalized=True`` subtracts ``tau * kappa_rho`` (the value ``F_rho`` of the normalised
    Safe-KL divergence; INFERRED normalisation). Always ``F_rho <= exact_logsumexp`` and
    ``G_rho <= exact_logsumexp + tau * kappa_rho``.

    >>> s = torch.tensor([0.0, 1.0, 2.0])
    >>> bool(safe_kl_logsumexp(s, rho=1e-3, normalized=True) <= exact_logsumexp(s))
    True
    """
    owner = "safe_kl_logsumexp"
    rho = _check_rho(rho, owner)
    tau = check_real("tau", tau, owner=owner, low=0.0, closed="neither")
    if not isinstance(normalized, bool):
        fail("normalized", owner, "a bool", normalized, exc=TypeError)
    s, logw, dim = _prep(scores, weights, dim, owner)
    if alpha is None:
        z = (s.detach().double() / tau).movedim(dim, -1)
        lw = logw.detach().double()
        lw = lw.movedim(dim, -1) if lw.dim() > 0 else lw
        a = (tau * _solve_alpha_unit(z, lw, rho, 1e-12, 200)).to(s.dtype).unsqueeze(dim)
    else:
        a = _alpha_like(alpha, s, dim, owner)
    w = torch.exp(logw)
    # softplus is linear above its threshold, so no exponential is ever evaluated large.
    sp = F.softplus((s - a) / tau + math.log(rho))
    out = (a + (tau / rho) * (w * sp).sum(dim=dim, keepdim=True)).squeeze(dim)
    if normalized:
        out = out - tau * kappa_rho(rho)
    return out


safe_logsumexp = safe_kl_logsumexp  # the name for the same function


def kl_dro_loss(per_sample_losses, alpha, *, lam: float = 1.0, rho: float = 1e-2,
                weights=None) -> torch.Tensor:
    """Safe KL-regularised DRO loss ``alpha + (lam/rho) mean softplus((l - alpha)/lam + ln rho)``.

    Surrogate of ``sup_Q E_Q l - lam KL(Q||P) = lam ln E_P exp(l/lam)``; minimise it jointly
    over the model and ``alpha`` (learning rate proportional to ``rho``).
    """
    lam = check_real("lam", lam, owner="kl_dro_loss", low=0.0, closed="neither")
    return safe_kl_logsumexp(per_sample_losses, alpha, rho=rho, tau=lam, weights=weights)


# ----------------------------------------------------------------------------- the divergence
def kappa_rho(rho: float) -> float:
    """``kappa_rho = -f_rho(1) = -((1 - rho)/rho) ln(1 - rho)`` in (0, 1), -> 1 as rho -> 0."""
    rho = check_real("rho", rho, owner="kappa_rho", low=0.0, high=1.0, closed="neither")
    return -((1.0 - rho) / rho) * math.log1p(-rho)


def f_rho(t, rho: float):
    """Safe-KL generator ``t ln t + ((1 - rho t)/rho) ln(1 - rho t)`` on ``[0, 1/rho]``, +inf
    outside (the convex conjugate of ``(1/rho) ln(1 + rho e^s)``). Numpy in, numpy out.

    >>> bool(np.isclose(f_rho(1.0, 0.5), (1 - 0.5) / 0.5 * np.log(1 - 0.5)))
    True
    """
    rho = check_real("rho", rho, owner="f_rho", low=0.0, high=1.0, closed="neither")
    t = np.asarray(t, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0)
        q = 1.0 - rho * t
        b = np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)) / rho, 0.0)
    out = a + b
    return np.where((t < 0) | (q < 0), np.inf, out)


def safe_kl_divergence(p, q, *, rho: float = 1e-2) -> float:
    """Discrete ``D_rho(p||q) = sum_i q_i f_rho(p_i/q_i) - f_rho(1)``; +inf if ``p_i/q_i > 1/rho``
    or ``p`` charges a point where ``q`` is 0. ``D_rho >= KL >= 0``."""
    owner = "safe_kl_divergence"
    rho = check_real("rho", rho, owner=owner, low=0.0, high=1.0, closed="neither")
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if p.shape != q.shape or p.ndim != 1:
        fail("q", owner, f"a 1-D array of the shape of p {p.shape}", q.shape)
    for name, v in (("p", p), ("q", q)):
        if not np.isfinite(v).all() or (v < 0).any() or abs(v.sum() - 1.0) > 1e-8:
            fail(name, owner, "a finite probability vector (non-negative, summing to 1)", v.tolist())
    if ((q == 0) & (p > 0)).any():
        return float("inf")
    m = q > 0
    return float(np.sum(q[m] * f_rho(p[m] / q[m], rho)) - f_rho(1.0, rho))
