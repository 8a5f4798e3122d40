"""One ``torch.optim.Optimizer`` for both players of ``min_x max_y f(x, y)``.

Each optimizer holds two parameter groups: ``min_params`` (x, descends f) and
``max_params`` (y, ascends f). The closure returns f (the min player's objective) after
``backward()``; the optimizer handles the signs. GDA, TALDA and OptimisticGDA use the
gradients already in ``.grad`` (closure optional); AGDA and ExtraGradient need a closure
because they evaluate a second gradient per step.

TALDA here is TALDA-R, our reconstruction (not the paper's algorithm; see
:mod:`optzoo.talda.talda`). Practical mode: ``lr_min`` stands for 1/M, ``lr_max`` for 1/L_y
and ``coupling`` for K (INFERRED defaults 1e-2, 1e-1, 0.5, no certificate).
:meth:`TALDA.from_constants` takes valid two-sided PL constants and then also tracks the
surrogate S_k (``opt.diagnostics``, kept in ``opt.state`` and ``state_dict``).
"""

from __future__ import annotations

import math

import torch

from optzoo._core.validation import check_real
from optzoo.talda.constants import TwoSidedPL, lyapunov_terms
from optzoo.talda.talda import talda_update

__all__ = ["TALDA", "GDA", "AGDA", "ExtraGradient", "OptimisticGDA"]


class _MinMax(torch.optim.Optimizer):
    _needs_closure = False

    def __init__(self, min_params, max_params, defaults: dict):
        name = type(self).__name__
        mins, maxs = list(min_params), list(max_params)
        for label, ps in (("min_params", mins), ("max_params", maxs)):
            if not ps:
                raise ValueError(f"The {label!r} argument of {name} must be a non-empty iterable of "
                                 "tensors. Got an empty one.")
            for p in ps:
                if not isinstance(p, torch.Tensor):
                    raise TypeError(f"The {label!r} argument of {name} must hold tensors. "
                                    f"Got {type(p).__name__}.")
        if {id(p) for p in mins} & {id(p) for p in maxs}:
            raise ValueError(f"The 'max_params' argument of {name} must be disjoint from "
                             "min_params. Got shared tensors.")
        super().__init__([{"params": mins, "role": "min"}, {"params": maxs, "role": "max"}], defaults)

    def _groups(self):
        gmin = next(g for g in self.param_groups if g["role"] == "min")
        gmax = next(g for g in self.param_groups if g["role"] == "max")
        return gmin, gmax

    @staticmethod
    def _sq_norm(group) -> float:
        return float(sum(float((p.grad * p.grad).sum()) for p in group["params"] if p.grad is not None))

    @staticmethod
    def _add(group, scale: float, grads=None):
        for i, p in enumerate(group["params"]):
            g = p.grad if grads is None else grads[i]
            if g is not None:
                p.add_(g, alpha=scale)

    @staticmethod
    def _grads(group):
        return [None if p.grad is None else p.grad.detach().clone() for p in group["params"]]

    def _call(self, closure):
        if closure is None:
            if self._needs_closure:
                raise ValueError(f"The 'closure' argument of {type(self).__name__}.step must be a "
                                 "callable that recomputes f and calls backward(). Got None.")
            return None
        with torch.enable_grad():
            loss = closure()
        if loss is not None and not bool(torch.isfinite(torch.as_tensor(loss)).all()):
            raise FloatingPointError(f"{type(self).__name__}: the closure returned a NaN/inf objective")
        return loss


def _lr(name, v, owner):
    return check_real(name, v, owner=owner, low=0.0, closed="neither")


class GDA(_MinMax):
    """Simultaneous gradient descent-ascent: x -= lr_min g_x, y += lr_max g_y (two-timescale
    GDA is the same with lr_max >> lr_min)."""

    def __init__(self, min_params, max_params, lr_min=1e-2, lr_max=1e-2):
        super().__init__(min_params, max_params,
                         dict(lr_min=_lr("lr_min", lr_min, "GDA"), lr_max=_lr("lr_max", lr_max, "GDA")))

    @torch.no_grad()
    def step(self, closure=None):
        loss = self._call(closure)
        gmin, gmax = self._groups()
        self._add(gmin, -gmin["lr_min"])
        self._add(gmax, gmax["lr_max"])
        return loss


class TALDA(_MinMax):
    """TALDA-R (reconstructed): x -= eta g_x with eta = lr_min [1 - coupling |g_y|/|g_x|]_+,
    y += lr_max g_y. One gradient per step; the closure is optional. ``step`` calls the pure
    :func:`~optzoo.talda.talda_update` on the concatenated gradients (M = 1/lr_min,
    K = coupling, L_y = 1/lr_max).

    Hyperparameters (``lr_min``, ``lr_max``, ``coupling`` and, from :meth:`from_constants`,
    the theory ``constants``) live in ``param_groups``; the step counter and the step's
    diagnostics (``x_step`` = eta, ``rho`` = |g_y|/|g_x|, and with constants the surrogate
    ``S_k``, ``W`` and the certified decrement ``C``) in ``self.state[p]`` of the first min
    parameter, readable as :attr:`diagnostics`; all of it round-trips through ``state_dict``.

    >>> import torch
    >>> x = torch.nn.Parameter(torch.ones(2)); y = torch.nn.Parameter(torch.ones(2))
    >>> opt = TALDA([x], [y], lr_min=0.2, lr_max=0.4, coupling=0.1)
    >>> def closure():
    ...     opt.zero_grad(); loss = (x**2).sum() + 0.1 * (x * y).sum() - (y**2).sum()
    ...     loss.backward(); return loss
    >>> for _ in range(200): _ = opt.step(closure)
    >>> float(x.abs().max() + y.abs().max()) < 1e-6, opt.diagnostics["step"]
    (True, 200)
    """

    def __init__(self, min_params, max_params, lr_min=1e-2, lr_max=1e-1, coupling=0.5):
        super().__init__(min_params, max_params, dict(
            lr_min=_lr("lr_min", lr_min, "TALDA"), lr_max=_lr("lr_max", lr_max, "TALDA"),
            coupling=check_real("coupling", coupling, owner="TALDA", low=0.0), constants=None))

    @classmethod
    def from_constants(cls, min_params, max_params, constants: TwoSidedPL, *, lam="auto") -> TALDA:
        """Theory steps (lr_min = 1/M, lr_max = 1/L_y, coupling = K) and surrogate tracking."""
        if not isinstance(constants, TwoSidedPL):
            raise TypeError("The 'constants' argument of TALDA.from_constants must be a TwoSidedPL. "
                            f"Got {type(constants).__name__}.")
        t = lyapunov_terms(constants, lam=lam)
        opt = cls(min_params, max_params, lr_min=1 / t.M, lr_max=1 / t.L_y, coupling=t.K)
        c = {"lam": t.lam, "M": t.M, "w_y": t.w_y, "mu_x": t.mu_x, "L_y": t.L_y, "rate": t.rate}
        for g in opt.param_groups:
            g["constants"] = dict(c)
        return opt

    @property
    def diagnostics(self) -> dict:
        """The last step's diagnostics (a copy): step, x_step, rho, surrogate, W, C."""
        gmin, _ = self._groups()
        st = self.state[gmin["params"][0]]
        base = {"step": 0, "x_step": math.nan, "rho": math.nan, "surrogate": None, "W": None,
                "C": None}
        return {**base, **st}

    @staticmethod
    def _flat(group):
        # float64: talda_update's guard |g_x| >= 1e-300 underflows to 0 in float32
        return torch.cat([(torch.zeros_like(p) if p.grad is None else p.grad).reshape(-1).double()
                          for p in group["params"]])

    @torch.no_grad()
    def step(self, closure=None):
        loss = self._call(closure)
        gmin, gmax = self._groups()
        ref = gmin["params"][0]
        gx, gy = self._flat(gmin), self._flat(gmax)
        c = gmin["constants"]
        dx, dy, eta, C = talda_update(gx, gy, M=1.0 / gmin["lr_min"], K=gmin["coupling"],
                                      L_y=1.0 / gmax["lr_max"], lam=0.0 if c is None else c["lam"])
        st = self.state[ref]
        nx2, ny2 = float((gx * gx).sum()), float((gy * gy).sum())
        if c is not None:
            # the surrogate at the current point uses the decrement certified at the last step
            W = nx2 / c["mu_x"] + c["w_y"] * ny2
            st["surrogate"] = W if st.get("C") is None else min(W, st["surrogate"] + st["C"])
            st["W"] = W
            st["C"] = float(C)
        for group, delta in ((gmin, dx), (gmax, dy)):
            i = 0
            for p in group["params"]:
                n = p.numel()
                if p.grad is not None:
                    p.add_(delta[i:i + n].view_as(p).to(p.dtype))
                i += n
        nx, ny = math.sqrt(nx2), math.sqrt(ny2)
        st["step"] = st.get("step", 0) + 1
        st["x_step"] = float(eta)
        st["rho"] = ny / nx if nx > 0 else math.inf
        return loss


class AGDA(_MinMax):
    """Alternating GDA (Yang et al. 2020): x -= lr_min grad_x f(x, y), then
    y += lr_max grad_y f(x+, y). Needs a closure (two gradients per step)."""

    _needs_closure = True

    def __init__(self, min_params, max_params, lr_min=1e-2, lr_max=1e-1):
        super().__init__(min_params, max_params,
                         dict(lr_min=_lr("lr_min", lr_min, "AGDA"), lr_max=_lr("lr_max", lr_max, "AGDA")))

    @torch.no_grad()
    def step(self, closure=None):
        if closure is None:
            self._call(None)
        loss = self._call(closure)
        gmin, gmax = self._groups()
        self._add(gmin, -gmin["lr_min"])
        self._call(closure)
        self._add(gmax, gmax["lr_max"])
        return loss


class ExtraGradient(_MinMax):
    """Extragradient: z_h = z - D F(z), z+ = z - D F(z_h) (two gradients per step)."""

    _needs_closure = True

    def __init__(self, min_params, max_params, lr_min=1e-2, lr_max=1e-2):
        super().__init__(min_params, max_params, dict(
            lr_min=_lr("lr_min", lr_min, "ExtraGradient"), lr_max=_lr("lr_max", lr_max, "ExtraGradient")))

    @torch.no_grad()
    def step(self, closure=None):
        if closure is None:
            self._call(None)
        loss = self._call(closure)
        gmin, gmax = self._groups()
        saved = [[p.detach().clone() for p in g["params"]] for g in (gmin, gmax)]
        self._add(gmin, -gmin["lr_min"])
        self._add(gmax, gmax["lr_max"])
        self._call(closure)
        for g, keep, sign, lr in ((gmin, saved[0], -1.0, gmin["lr_min"]), (gmax, saved[1], 1.0, gmax["lr_max"])):
            for p, p0 in zip(g["params"], keep, strict=True):
                p.copy_(p0)
            self._add(g, sign * lr)
        return loss


class OptimisticGDA(_MinMax):
    """Optimistic GDA: z+ = z - 2 D F(z_k) + D F(z_{k-1}) (one gradient per step; the first
    step is plain GDA)."""

    def __init__(self, min_params, max_params, lr_min=1e-2, lr_max=1e-2):
        super().__init__(min_params, max_params, dict(
            lr_min=_lr("lr_min", lr_min, "OptimisticGDA"), lr_max=_lr("lr_max", lr_max, "OptimisticGDA")))

    @torch.no_grad()
    def step(self, closure=None):
        loss = self._call(closure)
        gmin, gmax = self._groups()
        for g, sign, lr in ((gmin, -1.0, gmin["lr_min"]), (gmax, 1.0, gmax["lr_max"])):
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                prev = st.get("prev_grad", p.grad)
                p.add_(2 * p.grad - prev, alpha=sign * lr)
                st["prev_grad"] = p.grad.detach().clone()
        return loss
