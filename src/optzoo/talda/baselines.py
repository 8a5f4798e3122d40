"""Baselines for two-sided PL minimax problems in the talda_solve API (our own torch code).

With ``F(z) = (grad_x f, -grad_y f)`` and per-block steps ``D = diag(lr_x, lr_y)``:

- ``gda``   (simultaneous): z+ = z - D F(z)                                   1 gradient/iter
- ``ttgda`` (two-timescale GDA): gda with lr_y = 1/L_y, lr_x = lr_y / (L_y/mu_y)^2 in theory
  mode (ratio INFERRED from Lin, Jin & Jordan 2020 and Doan 2022)            1 gradient/iter
- ``agda``  (alternating, Yang et al. 2020): x+ = x - lr_x grad_x f(x, y),
  y+ = y + lr_y grad_y f(x+, y); theory steps lr_y = 1/l, lr_x = mu_y^2 / (18 l^3)
  (recalled constants, l = max(L_x, L_y, L_xy))                             2 gradients/iter
- ``eg``    (extragradient): z_h = z - D F(z), z+ = z - D F(z_h)             2 gradients/iter
- ``ogda``  (optimistic GDA): z+ = z - 2 D F(z_k) + D F(z_{k-1}), F(z_{-1}) = F(z_0)
                                                                             1 gradient/iter

The anchors (``torch.optim.SGD(maximize=True)`` in two loops, cooper's ExtraSGD, optax's
optimistic gradient descent) implement the same updates; cooper and optax are not
dependencies of optzoo, so these loops are ours. Stopping test: |grad f(z_k)| <= tol at an
iterate, counted in gradient evaluations.
"""

from __future__ import annotations

import math
import time

from optzoo._core.result import Result, Status, divergence, warn_not_converged
from optzoo._core.validation import check_choice, check_real, fail
from optzoo.talda._oracle import GradientOracle, as_start, check_common, tol_not_met
from optzoo.talda.constants import TwoSidedPL, agda_theory_rate
from optzoo.talda.talda import _joint_norm

__all__ = ["MINIMAX_METHODS", "minimax_solve", "theory_steps"]

MINIMAX_METHODS = ("gda", "ttgda", "agda", "eg", "ogda")
_OWNER = "minimax_solve"


def theory_steps(method: str, constants: TwoSidedPL) -> tuple[float, float]:
    """(lr_x, lr_y) of a method's theory (only ``agda`` and ``ttgda`` have one here)."""
    if method == "agda":
        _, tx, ty = agda_theory_rate(constants)
        return tx, ty
    if method == "ttgda":
        ly = 1.0 / constants.L_y
        return ly / (constants.L_y / constants.mu_y) ** 2, ly
    fail("lr_x", _OWNER, f"given for method {method!r} (theory steps exist for 'agda' and 'ttgda' only)",
         None)


def minimax_solve(f, x0, y0, *, method="agda", lr_x=None, lr_y=None,
                  constants: TwoSidedPL | None = None, tol=1e-8, max_iter=100_000) -> Result:
    """Run a baseline ``method`` (see the module doc) on ``min_x max_y f(x, y)``.

    ``lr_x = lr_y = None`` selects the method's theory steps, which need ``constants``
    (available for ``agda`` and ``ttgda``). Returns a Result like :func:`talda_solve`
    (``history["grad_norm"]`` per iterate; ``nfev`` counts gradient evaluations).

    >>> import torch
    >>> from optzoo.talda import minimax_solve
    >>> f = lambda x, y: (x**2).sum() + 0.1 * (x * y).sum() - (y**2).sum()
    >>> res = minimax_solve(f, torch.ones(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64),
    ...                     method="eg", lr_x=0.2, lr_y=0.2)
    >>> res.status.value, res.nfev == 2 * res.nit + 1
    ('converged', True)
    """
    t0 = time.perf_counter()
    tol, max_iter = check_common(_OWNER, f, tol, max_iter)
    method = check_choice("method", method, MINIMAX_METHODS, owner=_OWNER)
    x = as_start("x0", x0, _OWNER)
    y = as_start("y0", y0, _OWNER)
    if (lr_x is None) != (lr_y is None):
        fail("lr_y" if lr_y is None else "lr_x", _OWNER,
             "given together with the other step size (or both None for theory steps)", None)
    if lr_x is None:
        if constants is None:
            fail("constants", _OWNER, f"a TwoSidedPL when lr_x and lr_y are None (theory steps of "
                 f"{method!r} need mu_x, mu_y, L_x, L_y, L_xy)", None)
        if not isinstance(constants, TwoSidedPL):
            raise TypeError(f"The 'constants' argument of {_OWNER} must be a TwoSidedPL. "
                            f"Got {type(constants).__name__}.")
        lr_x, lr_y = theory_steps(method, constants)
    lr_x = check_real("lr_x", lr_x, owner=_OWNER, low=0.0, closed="neither")
    lr_y = check_real("lr_y", lr_y, owner=_OWNER, low=0.0, closed="neither")

    oracle = GradientOracle(f, _OWNER)
    norms: list[float] = []
    nit, status, msg, val = 0, None, "", float("nan")
    prev = None  # OGDA's F(z_{k-1})

    def nan_stop(at):
        return Status.DIVERGED, f"f or its gradient is NaN/inf at iteration {at}"

    start = _joint_norm(x, y)
    out = oracle.grad(x, y)
    if out is None:
        status, msg = nan_stop(0)
    while status is None:
        val, gx, gy = out
        norms.append(math.sqrt(float((gx * gx).sum() + (gy * gy).sum())))
        if norms[-1] <= tol:
            status, msg = Status.CONVERGED, f"|grad f| = {norms[-1]:.3g} <= tol after {nit} iterations"
            break
        if nit >= max_iter:
            status, msg = Status.USER_LIMIT, tol_not_met(_OWNER, nit, norms[-1], tol)
            break
        if method in ("gda", "ttgda"):
            x, y = x - lr_x * gx, y + lr_y * gy
        elif method == "ogda":
            px, py = (gx, gy) if prev is None else prev
            prev = (gx, gy)
            x, y = x - lr_x * (2 * gx - px), y + lr_y * (2 * gy - py)
        elif method == "agda":
            x = x - lr_x * gx
            mid = oracle.grad(x, y)
            if mid is None:
                status, msg = nan_stop(nit + 1)
                break
            y = y + lr_y * mid[2]
        else:  # eg
            mid = oracle.grad(x - lr_x * gx, y + lr_y * gy)
            if mid is None:
                status, msg = nan_stop(nit + 1)
                break
            x, y = x - lr_x * mid[1], y + lr_y * mid[2]
        nit += 1
        why = divergence(_joint_norm(x, y), start=start, name="(x, y)")
        if why is not None:
            status, msg = Status.DIVERGED, f"diverged at iteration {nit}: {why}"
            break
        out = oracle.grad(x, y)
        if out is None:
            status, msg = nan_stop(nit)
    if status is Status.DIVERGED:
        warn_not_converged(_OWNER, msg)
    return Result(
        x=x, fun=float(val), status=status, message=msg, nit=nit, nfev=oracle.calls,
        wall_time=time.perf_counter() - t0,
        extra={"y": y, "history": {"grad_norm": norms}, "n_grad_evals": oracle.calls,
               "method": method, "lr_x": lr_x, "lr_y": lr_y},
    )
