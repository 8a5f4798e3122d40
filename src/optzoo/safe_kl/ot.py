"""Semi-discrete entropic optimal transport with the Safe-KL (softplus) dual.

Problem (entropic OT between a source ``mu`` known through samples and ``nu = sum_j b_j
delta_{y_j}``): ``OT_eps = min_pi <pi, c> + eps KL(pi || mu x nu)``, whose semi-dual is

    D(v) = sum_j b_j v_j - eps * E_{x~mu} ln sum_j b_j exp((v_j - c(x, y_j))/eps).

Safe-KL version (INFERRED application of the paper's principle; that part of the official
code was not examined): the inner LogSumExp is replaced by its Safe-KL value ``G_rho`` with
the per-source-point auxiliary ``alpha(x)`` solved exactly (the target is finite), so the
stochastic gradient in ``v`` is ``b_j (1 - mean_x sigma(u_xj)/rho)`` with
``u_xj = (v_j - c(x, y_j))/eps - alpha(x) + ln rho``: bounded weights, no exponential, finite
at any ``eps``. Steps follow POT's averaged SGD (``lr/sqrt(k)`` and iterate averaging) on a
minibatch of source samples. The bias is O(rho) (the plan density is capped at ``1/rho``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import torch

from optzoo._core.deprecation import renamed_kwargs
from optzoo._core.result import Result, Status, diverged_mask, warn_not_converged
from optzoo._core.rng import torch_generator
from optzoo._core.validation import check_int, check_real, fail
from optzoo.safe_kl.logsumexp import _check_rho, _solve_alpha_unit

__all__ = ["semidiscrete_eot", "semi_dual_objective", "semi_dual_plan"]


def _cost(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.cdist(x, y).pow(2)


def _target_weights(b, m: int, owner: str) -> torch.Tensor:
    if b is None:
        return torch.full((m,), 1.0 / m, dtype=torch.float64)
    b = torch.as_tensor(np.asarray(b, dtype=float))
    if b.shape != (m,) or not bool(torch.isfinite(b).all()) or bool((b < 0).any()) \
            or abs(float(b.sum()) - 1.0) > 1e-8:
        fail("target_weights", owner, f"a probability vector of length {m}", b.tolist())
    return b


def semi_dual_objective(v, source, target, *, eps: float, source_weights=None,
                        target_weights=None) -> float:
    """The exact entropic semi-dual ``D(v)`` on a finite source (log-domain, never overflows).

    ``D(v) <= OT_eps`` for every ``v`` with equality at the optimal potential; use it to score
    any solver's ``v`` on the same footing (the TRUE objective, not a surrogate).
    """
    owner = "semi_dual_objective"
    eps = check_real("eps", eps, owner=owner, low=0.0, closed="neither")
    x = torch.as_tensor(np.asarray(source, dtype=float))
    y = torch.as_tensor(np.asarray(target, dtype=float))
    v = torch.as_tensor(np.asarray(v, dtype=float))
    if v.shape != (y.shape[0],):
        fail("v", owner, f"a vector of length {y.shape[0]}", tuple(v.shape))
    if not bool(torch.isfinite(v).all()):
        return float("nan")
    b = _target_weights(target_weights, y.shape[0], owner)
    a = torch.full((x.shape[0],), 1.0 / x.shape[0], dtype=torch.float64) if source_weights is None \
        else torch.as_tensor(np.asarray(source_weights, dtype=float))
    s = (v[None, :] - _cost(x, y)) / eps + torch.log(b)[None, :]
    return float((b * v).sum() - eps * (a * torch.logsumexp(s, dim=1)).sum())


def semi_dual_plan(v, source, target, *, eps: float, target_weights=None) -> np.ndarray:
    """The plan ``pi_ij = a_i b_j exp((v_j - c_ij)/eps) / sum_k b_k exp((v_k - c_ik)/eps)`` (uniform
    ``a``); its row marginals are exact, its column marginals match ``b`` at the optimum."""
    x = torch.as_tensor(np.asarray(source, dtype=float))
    y = torch.as_tensor(np.asarray(target, dtype=float))
    v = torch.as_tensor(np.asarray(v, dtype=float))
    b = _target_weights(target_weights, y.shape[0], "semi_dual_plan")
    s = (v[None, :] - _cost(x, y)) / eps + torch.log(b)[None, :]
    return (torch.softmax(s, dim=1) / x.shape[0]).numpy()


@renamed_kwargs(n_iter="max_iter")
def semidiscrete_eot(source: torch.Tensor | np.ndarray | Callable, target, *, eps: float = 0.1,
                     rho: float = 1e-3, target_weights=None, max_iter: int = 500,
                     batch_size: int = 64, lr: float | None = None, seed: int = 0,
                     record_every: int = 0) -> Result:
    """Stochastic semi-discrete entropic OT with the Safe-KL semi-dual (overflow-free).

    ``source``: an ``(N, d)`` array sampled uniformly with replacement, or a callable
    ``sampler(n, generator) -> (n, d) tensor`` (a truly continuous source). ``target``:
    ``(m, d)`` atoms with weights ``target_weights`` (uniform by default). Cost: squared
    Euclidean. Update (averaged SGD, as POT's ASGD; ``k`` = iteration):

        g_j = b_j (1 - mean_x sigma((v_j - c(x,y_j))/eps - alpha*(x) + ln rho) / rho)
        v <- v + lr / sqrt(k) * g;   v_bar <- average of the iterates

    ``lr`` defaults to ``eps * m``. Returns a :class:`Result` with ``x = v_bar``, ``fun`` the
    safe semi-dual estimate on the last batch, and ``extra["trace"]`` (iteration, v_bar)
    every ``record_every`` iterations. ``max_iter`` iterations of ``batch_size`` samples are
    run (``n_iter=`` until December 2026, still accepted for one release with a
    ``FutureWarning``). Status ``BUDGET`` (fixed budget) or ``DIVERGED``.

    >>> rng = np.random.default_rng(0)
    >>> res = semidiscrete_eot(rng.normal(size=(200, 2)), rng.normal(size=(20, 2)), eps=0.01,
    ...                        max_iter=50, batch_size=16)
    >>> bool(np.isfinite(res.x).all())
    True
    """
    owner = "semidiscrete_eot"
    eps = check_real("eps", eps, owner=owner, low=0.0, closed="neither")
    rho = _check_rho(rho, owner)
    max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
    batch_size = check_int("batch_size", batch_size, owner=owner, low=1)
    record_every = check_int("record_every", record_every, owner=owner, low=0)
    y = torch.as_tensor(np.asarray(target, dtype=float))
    if y.dim() != 2 or y.shape[0] == 0 or not bool(torch.isfinite(y).all()):
        fail("target", owner, "a finite (m, d) array with m >= 1", tuple(y.shape))
    m = y.shape[0]
    b = _target_weights(target_weights, m, owner)
    lr = eps * m if lr is None else check_real("lr", lr, owner=owner, low=0.0, closed="neither")
    gen = torch_generator(seed, "semidiscrete_eot")
    if callable(source):
        def sample(n, d=y.shape[1]):
            rule = f"a sampler source(n, generator) returning an (n, {d}) array of real numbers"
            raw = source(n, gen)
            try:
                xs = torch.as_tensor(raw, dtype=torch.float64)
            except (TypeError, ValueError, RuntimeError):
                fail("source", owner, rule, type(raw).__name__, exc=TypeError)
            if xs.shape != (n, d):
                fail("source", owner, rule, f"shape {tuple(xs.shape)}")
            return xs
    else:
        xs = torch.as_tensor(np.asarray(source, dtype=float))
        if xs.dim() != 2 or xs.shape[1] != y.shape[1] or xs.shape[0] == 0 \
                or not bool(torch.isfinite(xs).all()):
            fail("source", owner, f"a finite (N, {y.shape[1]}) array, N >= 1, or a sampler", tuple(xs.shape))
        sample = lambda n: xs[torch.randint(xs.shape[0], (n,), generator=gen)]  # noqa: E731
    lrs = torch.tensor([lr], dtype=torch.float64)
    t0 = time.perf_counter()
    v_bar, trace, status, k, fun = _safe_asgd(sample, y, b, eps, rho, lrs, max_iter, batch_size,
                                              record_every)
    v_bar = v_bar[0]
    trace = [(it, vb[0]) for it, vb in trace]
    msg = (f"the potential diverged at iteration {k} (non-finite or beyond the growth bound)"
           if status == Status.DIVERGED
           else f"budget of {max_iter} iterations x {batch_size} samples used")
    if status == Status.DIVERGED:
        warn_not_converged(owner, msg)
    return Result(x=v_bar.numpy(), fun=float(fun[0]), status=status, message=msg, nit=k,
                  nfev=k * batch_size, wall_time=time.perf_counter() - t0,
                  extra={"trace": trace, "rho": rho, "eps": eps, "lr": lr})


def _safe_asgd(sample, y, b, eps, rho, lrs, max_iter, batch_size, record_every):
    """Averaged SGD on the safe semi-dual for several learning rates at once (one shared
    sample stream): ``lrs`` (R,), returns (v_bar (R, m), trace, status, iterations, fun (R,))."""
    m = y.shape[0]
    logb = torch.log(b)
    lnrho = math.log(rho)
    R = lrs.shape[0]
    v = torch.zeros(R, m, dtype=torch.float64)
    v_bar = torch.zeros(R, m, dtype=torch.float64)
    trace, status = [], Status.BUDGET
    for k in range(1, max_iter + 1):
        c = _cost(sample(batch_size), y)
        z = (v[:, None, :] - c[None]) / eps
        a = _solve_alpha_unit(z, logb, rho, 1e-10, 100)
        sig = torch.sigmoid(z - a[..., None] + lnrho)
        g = b * (1.0 - sig.mean(1) / rho)
        v = v + (lrs[:, None] / math.sqrt(k)) * g
        v_bar = v_bar + (v - v_bar) / k
        if record_every and (k % record_every == 0 or k == max_iter):
            trace.append((k, v_bar.clone().numpy()))
        if bool(diverged_mask(v.norm(dim=-1)).any()):  # the one divergence rule, start v = 0
            status = Status.DIVERGED
            break
    sp = torch.nn.functional.softplus(z - a[..., None] + lnrho)
    fun = ((b * v).sum(-1) - eps * (a + (b * sp).sum(-1) / rho).mean(-1)).numpy()
    return v_bar, trace, status, k, fun
