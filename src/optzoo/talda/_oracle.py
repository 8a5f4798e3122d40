"""Shared plumbing of talda_solve and minimax_solve: input checks, a counted gradient oracle
(:class:`GradientOracle`) and the budget-stop message (:func:`tol_not_met`)."""

from __future__ import annotations

import numpy as np

from optzoo._core.result import NotConvergedWarning, warn_not_converged
from optzoo._core.validation import check_int, check_real, fail

__all__ = ["GradientOracle", "NotConvergedWarning", "as_start", "check_common", "tol_not_met"]


def as_start(name: str, value, owner: str):
    """A detached float tensor copy of a starting point (torch or numpy floating)."""
    import torch

    if isinstance(value, np.ndarray):
        if not np.issubdtype(value.dtype, np.floating):
            fail(name, owner, "a floating tensor or floating numpy array", f"array of {value.dtype}",
                 exc=TypeError)
        value = torch.from_numpy(np.array(value, copy=True))
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"The {name!r} argument of {owner} must be a floating torch tensor or "
                        f"floating numpy array. Got {type(value).__name__}.")
    if not value.is_floating_point():
        fail(name, owner, "a floating tensor (float32/float64)", f"tensor of {value.dtype}",
             exc=TypeError)
    if value.numel() == 0:
        fail(name, owner, "a non-empty tensor", tuple(value.shape))
    if not bool(torch.isfinite(value).all()):
        fail(name, owner, "finite (no NaN or inf)", "a tensor with NaN or inf")
    return value.detach().clone()


def check_common(owner: str, f, tol, max_iter) -> tuple[float, int]:
    if not callable(f):
        raise TypeError(f"The 'f' argument of {owner} must be a callable f(x, y) -> 0-dim tensor. "
                        f"Got {type(f).__name__}.")
    tol = check_real("tol", tol, owner=owner, low=0.0)
    max_iter = check_int("max_iter", max_iter, owner=owner, low=0)
    return tol, max_iter


class GradientOracle:
    """Counted evaluations of f and its gradient at (x, y) (``Oracle`` until December 2026;
    renamed apart from ``optzoo.mo_bandit.Oracle``, an evaluation budget).

    ``grad`` returns (value, g_x, g_y) as detached tensors, or ``None`` when f or its
    gradient is NaN/inf (the caller reports Status.DIVERGED). A non-scalar or non-tensor
    objective raises at once.
    """

    def __init__(self, f, owner: str):
        self.f, self.owner, self.calls = f, owner, 0

    def grad(self, x, y):
        import torch
        self.calls += 1
        xr = x.detach().requires_grad_(True)
        yr = y.detach().requires_grad_(True)
        with torch.enable_grad():
            val = self.f(xr, yr)
            if not isinstance(val, torch.Tensor):
                raise TypeError(f"The 'f' argument of {self.owner} must return a 0-dim torch "
                                f"tensor. Got {type(val).__name__}.")
            if val.dim() != 0:
                raise ValueError(f"The 'f' argument of {self.owner} must return a 0-dim (scalar) "
                                 f"tensor. Got shape {tuple(val.shape)}.")
            if not val.is_floating_point():
                raise TypeError(f"The 'f' argument of {self.owner} must return a floating tensor. "
                                f"Got {val.dtype}.")
            if not val.requires_grad:
                raise ValueError(f"The 'f' argument of {self.owner} must return a tensor with grad "
                                 "enabled (built from x and y by differentiable torch operations). "
                                 "Got a tensor that does not require grad.")
            if not bool(torch.isfinite(val)):
                return None
            gx, gy = torch.autograd.grad(val, (xr, yr), allow_unused=True)
        gx = torch.zeros_like(x) if gx is None else gx.detach()
        gy = torch.zeros_like(y) if gy is None else gy.detach()
        if not (bool(torch.isfinite(gx).all()) and bool(torch.isfinite(gy).all())):
            return None
        return val.detach(), gx, gy


def tol_not_met(owner: str, nit: int, gnorm: float, tol: float) -> str:
    """Warn through the project's one :func:`~optzoo._core.result.warn_not_converged` that the
    gradient test failed within ``max_iter`` (the warning points at the solver's caller), and
    return the same sentence for ``Result.message``."""
    detail = f"|grad f| = {gnorm:.3g} > tol = {tol:g} after {nit} iterations"
    warn_not_converged(owner, detail, stacklevel=4)
    return f"{owner}: {detail}"
