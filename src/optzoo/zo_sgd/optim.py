"""Zeroth-order SGD (SPSA / MeZO) as a ``torch.optim.Optimizer``.

Paper 05: "Learning Dynamics of Zeroth-Order Optimization: A Kernel Perspective", ICML 2026,
arXiv 2605.03373. Fidelity: reconstructed (analysis paper; the optimizer is the standard
ZO-SGD / MeZO estimator the paper analyses, Malladi et al., NeurIPS 2023).

With P directions :math:`u_p` (Gaussian :math:`N(0,I_d)` or Rademacher), drawn from
``(seed, step, p)`` and regenerated instead of stored (MeZO's memory trick),

.. math::
    c_p = \\frac{L(\\theta+\\epsilon u_p)-L(\\theta-\\epsilon u_p)}{2\\epsilon}
    \\ (\\text{or the exact } \\nabla L^\\top u_p \\text{ by forward mode}),\\qquad
    \\hat g=\\frac1P\\sum_p c_p u_p,\\qquad \\theta\\leftarrow\\theta-\\eta\\,\\hat g .

:math:`E[\\hat g]=\\nabla L+O(\\epsilon^2)`; in function space one step moves the outputs by
:math:`-\\eta K_{ZO} G` with the ZO kernel of :mod:`optzoo.zo_sgd.kernel`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import torch

from optzoo._core.result import NotConvergedWarning, user_stacklevel
from optzoo._core.rng import derive_seed
from optzoo._core.validation import check_choice, check_int, check_real, fail, joint_group_options

__all__ = ["DISTRIBUTIONS", "ZOSGD", "zo_directions", "zo_sgd_update"]

DISTRIBUTIONS = ("gaussian", "rademacher")
METHODS = ("finite_difference", "jvp")
RESTORES = ("arithmetic", "exact")
_OWNER = "ZOSGD"


def zo_directions(params: Sequence[torch.Tensor], *, seed: int, step: int, index: int,
                  distribution: str = "gaussian") -> list[torch.Tensor]:
    """Direction ``index`` of step ``step``: one tensor per parameter, in order.

    Drawn on the CPU from a generator seeded by ``(seed, step, index)`` and moved to each
    parameter's device, so the same seed gives the same directions on CPU and GPU and a
    direction can be regenerated at will (never stored across steps). Gaussian entries are
    drawn in float64 for float64 parameters and in float32 otherwise (then cast to the
    parameter's dtype): drawing float64 for float32 weights cost as much as a forward pass of a
    small model and changed nothing the cast kept.
    """
    g = torch.Generator().manual_seed(derive_seed(seed, "zo_sgd", step, index))
    out = []
    for p in params:
        if distribution == "gaussian":
            u = torch.randn(p.shape, generator=g,
                            dtype=torch.float64 if p.dtype == torch.float64 else torch.float32)
        else:
            u = torch.randint(0, 2, p.shape, generator=g, dtype=torch.int8).mul_(2).sub_(1)
        out.append(u.to(device=p.device, dtype=p.dtype))
    return out


def zo_sgd_update(params: Sequence[torch.Tensor], projected_grads, *, lr: float, seed: int,
                  step: int, distribution: str = "gaussian") -> list[torch.Tensor]:
    """Pure ZO-SGD update: the parameter deltas :math:`-\\eta\\,\\frac1P\\sum_p c_p u_p`.

    ``projected_grads`` holds the P scalars :math:`c_p` of step ``step``; the directions are
    regenerated from ``(seed, step, p)`` exactly as :class:`ZOSGD` draws them. Nothing is
    modified in place.
    """
    c = torch.as_tensor(projected_grads, dtype=torch.float64).reshape(-1)
    P = int(c.numel())
    deltas = [torch.zeros_like(p) for p in params]
    for i in range(P):
        for acc, u in zip(deltas, zo_directions(params, seed=seed, step=step, index=i,
                                                distribution=distribution), strict=True):
            acc.add_(u, alpha=-lr * float(c[i]) / P)
    return deltas


class ZOSGD(torch.optim.Optimizer):
    """Zeroth-order SGD with P seeded perturbations per step (MeZO when P = 1).

    Parameters
    ----------
    params : iterable of parameters or param groups (``lr`` may differ per group; the other
        hyperparameters describe one joint direction over all parameters and must agree).
    lr : step size :math:`\\eta` (MeZO's 1e-6 is for OPT-scale models; tiny models need larger).
    eps : perturbation scale :math:`\\epsilon` (MeZO: 1e-3).
    num_perturbations : P, directions per step (MeZO: 1).
    distribution : ``"gaussian"`` or ``"rademacher"``.
    method : ``"finite_difference"`` (2P closure calls per step, the MeZO route) or ``"jvp"``
        (P forward-mode calls, exact directional derivatives; needs ``module``).
    restore : ``"arithmetic"`` (MeZO: +eps u, -2 eps u, +eps u in place; memory of inference;
        floating point leaves the weights within a few ulps, not bit for bit) or ``"exact"``
        (keeps one copy of the parameters during the step and writes it back: bit for bit,
        at the memory cost of one extra copy).
    seed : seed of the direction stream (directions come from ``(seed, step, p)``).
    module : the ``nn.Module`` owning the parameters, for ``method="jvp"`` only.

    ``step(closure)``: ``closure()`` evaluates the loss of the model as it is now and returns a
    0-dim tensor (no ``backward``; it runs under ``torch.no_grad``). A non-finite loss skips
    the step (weights restored, no update) with a :class:`~optzoo.NotConvergedWarning`, and
    is counted in ``state["skipped"]``. Returns the mean of the evaluated losses.

    >>> import torch
    >>> from optzoo.zo_sgd import ZOSGD
    >>> w = torch.nn.Parameter(torch.ones(4))
    >>> opt = ZOSGD([w], lr=0.05, num_perturbations=4, seed=0)
    >>> for _ in range(200):
    ...     loss = opt.step(lambda: (w ** 2).sum())
    >>> bool(w.norm() < 0.2)
    True
    """

    def __init__(self, params, lr: float = 1e-6, eps: float = 1e-3, num_perturbations: int = 1, *,
                 distribution: str = "gaussian", method: str = "finite_difference",
                 restore: str = "arithmetic", seed: int = 0, module: torch.nn.Module | None = None):
        check_real("lr", lr, owner=_OWNER, low=0.0, closed="neither")
        check_real("eps", eps, owner=_OWNER, low=0.0, closed="neither")
        num_perturbations = check_int("num_perturbations", num_perturbations, owner=_OWNER, low=1)
        check_choice("distribution", distribution, DISTRIBUTIONS, owner=_OWNER)
        check_choice("method", method, METHODS, owner=_OWNER)
        check_choice("restore", restore, RESTORES, owner=_OWNER)
        seed = check_int("seed", seed, owner=_OWNER, low=0)
        if method == "jvp" and not isinstance(module, torch.nn.Module):
            fail("module", _OWNER, "the nn.Module owning the parameters when method='jvp'", module,
                 exc=TypeError)
        super().__init__(params, dict(lr=lr, eps=eps, num_perturbations=num_perturbations,
                                      distribution=distribution, method=method, restore=restore,
                                      seed=seed))
        for p in self._params():
            if not torch.is_floating_point(p):
                fail("params", _OWNER, "floating-point tensors", p.dtype, exc=TypeError)
        if method == "finite_difference":
            _check_resolution(eps, self._params())
        self.module = module
        self._names = None
        if method == "jvp":
            ids = {id(p): n for n, p in module.named_parameters()}
            missing = [i for i, p in enumerate(self._params()) if id(p) not in ids]
            if missing:
                fail("module", _OWNER, "the module owning every optimized parameter",
                     f"parameters {missing} not found in it")
            self._names = [ids[id(p)] for p in self._params()]

    def _params(self) -> list[torch.Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def _shared(self) -> dict:
        return joint_group_options(self.param_groups, _JOINT, owner=_OWNER)

    def _counters(self) -> dict:
        # the step counter drives the direction stream; it lives in self.state so state_dict
        # round trips continue the same trajectory
        st = self.state[self._params()[0]]
        st.setdefault("step", 0)
        st.setdefault("skipped", 0)
        st.setdefault("calls", 0)
        return st

    @property
    def skipped_steps(self) -> int:
        """Steps skipped because the closure returned a non-finite loss."""
        return int(self._counters()["skipped"])

    def _loss(self, closure, st) -> float:
        v = closure()
        if not torch.is_tensor(v) or v.dim() != 0:
            shape = tuple(v.shape) if torch.is_tensor(v) else type(v).__name__
            fail("closure", f"{_OWNER}.step", "a callable returning a 0-dim loss tensor", shape)
        st["calls"] += 1
        return float(v.detach())

    def _jvp_value(self, closure, params, dirs, st) -> tuple[float, float]:
        from torch.autograd import forward_ad as fwad
        from torch.nn.utils.stateless import _reparametrize_module  # torch >= 2.0 (pinned: 2.13)

        with fwad.dual_level():
            duals = {n: fwad.make_dual(p.detach(), u) for n, p, u in
                     zip(self._names, params, dirs, strict=True)}
            with _reparametrize_module(self.module, duals, tie_weights=True):
                v = closure()
            if not torch.is_tensor(v) or v.dim() != 0:
                shape = tuple(v.shape) if torch.is_tensor(v) else type(v).__name__
                fail("closure", f"{_OWNER}.step", "a callable returning a 0-dim loss tensor", shape)
            primal, tangent = fwad.unpack_dual(v)
        st["calls"] += 1
        t = float("nan") if tangent is None else float(tangent)
        return float(primal), t

    @torch.no_grad()
    def step(self, closure):  # noqa: D102 (documented on the class)
        if not callable(closure):
            fail("closure", f"{_OWNER}.step", "a callable closure() -> loss", closure, exc=TypeError)
        hp = self._shared()
        params = self._params()
        st = self._counters()
        k, P, eps = int(st["step"]), hp["num_perturbations"], hp["eps"]
        saved = [p.detach().clone() for p in params] if hp["restore"] == "exact" else None
        # MeZO's case (P = 1, in-place arithmetic): the direction is drawn once per step, and the
        # weights stay at theta - eps u after the second evaluation, so restoring and updating
        # are one pass, theta - eps u + (eps - lr c) u (see the update below)
        fused = P == 1 and saved is None and hp["method"] == "finite_difference"
        kept = None

        def regen(i):
            return zo_directions(params, seed=hp["seed"], step=k, index=i,
                                 distribution=hp["distribution"])

        coefs, losses = [], []
        for i in range(P):
            u = regen(i)
            if P == 1:
                kept = u
            if hp["method"] == "jvp":
                f, c = self._jvp_value(closure, params, u, st)
                losses.append(f)
            else:
                offset = 0.0  # how far along u the weights sit, so an error can undo it
                done = False
                try:
                    torch._foreach_add_(params, u, alpha=eps)
                    offset = eps
                    fp = self._loss(closure, st)
                    torch._foreach_add_(params, u, alpha=-2.0 * eps)
                    offset = -eps
                    fm = self._loss(closure, st)
                    done = True
                finally:
                    if saved is not None:
                        torch._foreach_copy_(params, saved)
                    elif offset and not (fused and done):
                        torch._foreach_add_(params, u, alpha=-offset)
                c = (fp - fm) / (2.0 * eps)
                losses.append(0.5 * (fp + fm))
            coefs.append(c)
        st["step"] = k + 1
        loss = float(sum(losses) / len(losses))
        if not (math.isfinite(loss) and all(math.isfinite(c) for c in coefs)):
            if fused:
                torch._foreach_add_(params, kept, alpha=eps)   # back to theta
            st["skipped"] += 1
            warnings.warn(f"ZOSGD step {k} skipped: the closure returned a non-finite loss "
                          f"({loss}); parameters left unchanged ({st['skipped']} skipped so far)",
                          NotConvergedWarning, stacklevel=user_stacklevel())
            return torch.tensor(loss)
        # with P > 1 the update regenerates each direction once more (never stored): memory
        # O(d), not O(Pd); with P = 1 the step's one direction is reused
        for i in range(P):
            u = kept if kept is not None else regen(i)
            j = 0
            for group in self.param_groups:
                alpha = -group["lr"] * coefs[i] / P + (eps if fused else 0.0)
                for p in group["params"]:
                    p.add_(u[j], alpha=alpha)
                    j += 1
        st["last_projected_grads"] = torch.tensor(coefs, dtype=torch.float64)
        return torch.tensor(loss)


def _check_resolution(eps: float, params: list[torch.Tensor]) -> None:
    """A finite difference needs ``theta + eps u`` to differ from ``theta``: refuse an ``eps``
    below the float resolution of most weights (eps < finfo(dtype).eps x median|p| for tensors
    holding more than half the elements), where every projected gradient is exactly 0."""
    total = stuck = 0
    worst = 0.0
    with torch.no_grad():
        for p in params:
            if not p.numel():
                continue
            res = torch.finfo(p.dtype).eps * float(p.detach().abs().flatten().median())
            total += p.numel()
            if eps < res:
                stuck += p.numel()
                worst = max(worst, res)
    if total and 2 * stuck > total:
        fail("eps", _OWNER, f"above the float resolution of most weights (here {worst:.2g} = "
             "finfo(dtype).eps x median|p|); below it theta + eps u == theta and every update is 0",
             eps)


_JOINT = ("eps", "num_perturbations", "distribution", "method", "restore", "seed")
