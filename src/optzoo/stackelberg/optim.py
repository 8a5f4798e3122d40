"""``StackelbergGD``: two-time-scale gradient descent on a body (leader) and a head (follower).

Paper: S. Zeng, S. Bhatt, S. Ganesh, *Rethinking Neural Network Learning Rates: A Stackelberg
Perspective*, ICML 2026, arXiv 2605.15530. Fidelity: **reconstructed** (abstract only). The
update order below is INFERRED (the paper's may be reversed).

With body LR :math:`\\alpha`, head LR :math:`\\beta = c\\,\\alpha` (``head_ratio`` c),
``mode="alternating"`` (Gauss-Seidel: the follower moves first, the leader sees the new head):

.. math::
    W_{t+1} = \\Pi_{\\mathcal W}\\big(W_t - \\beta\\, \\nabla_W L(\\theta_t, W_t)\\big)
    \\quad(\\text{``head_steps`` times}),\\qquad
    \\theta_{t+1} = \\Pi_\\Theta\\big(\\theta_t - \\alpha\\, \\nabla_\\theta L(\\theta_t, W_{t+1})\\big)

``mode="simultaneous"`` (Jacobi) takes both steps from one gradient: this is plain SGD with two
parameter groups (c = 1 is bit-identical to ``torch.optim.SGD``). Optional heavy-ball momentum
and weight decay follow ``torch.optim.SGD``'s conventions exactly (dampening 0).

Cost: an alternating step calls the closure ``head_steps + 1`` times (each a full forward and
backward; feature caching is not implemented), a simultaneous step once. ``grad_evals`` counts.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch

from optzoo._core.validation import check_choice, check_int, check_real, fail, returned_real

__all__ = ["StackelbergGD", "stackelberg_gd_update"]

_OWNER = "StackelbergGD"


def stackelberg_gd_update(params, grads, bufs, *, lr: float, momentum: float = 0.0,
                          weight_decay: float = 0.0):
    """Pure SGD step of one group (the body or the head): returns (new params, new buffers).

    ``d = g + weight_decay * p``; ``b = d`` at the first step (``buf`` None) else
    ``momentum * b + d``; ``p' = p - lr * (b if momentum else d)``. No in-place operations.
    """
    new_p, new_b = [], []
    for p, g, b in zip(params, grads, bufs, strict=True):
        d = g if weight_decay == 0 else g.add(p, alpha=weight_decay)
        if momentum != 0:
            b = d.clone() if b is None else b.mul(momentum).add(d)
            d = b
        new_p.append(p.add(d, alpha=-lr))
        new_b.append(b)
    return new_p, new_b


def _params_of(obj, name: str) -> list[dict]:
    if isinstance(obj, torch.Tensor):
        fail(name, _OWNER, "an iterable of parameters or of param-group dicts (not one tensor)",
             "a Tensor", exc=TypeError)
    try:
        items = list(obj)
    except TypeError:
        fail(name, _OWNER, "an iterable of parameters or of param-group dicts", type(obj).__name__,
             exc=TypeError)
    if not items:
        fail(name, _OWNER, "a non-empty iterable of parameters", "an empty iterable")
    if all(isinstance(g, dict) for g in items):
        groups = [dict(g) for g in items]
        for g in groups:
            g["params"] = list(g["params"])
    elif all(isinstance(p, torch.Tensor) for p in items):
        groups = [{"params": items}]
    else:
        fail(name, _OWNER, "an iterable holding only tensors or only param-group dicts", items,
             exc=TypeError)
    for g in groups:
        if not all(isinstance(p, torch.Tensor) for p in g["params"]):
            fail(name, _OWNER, "param groups holding tensors", g["params"], exc=TypeError)
    return groups


class StackelbergGD(torch.optim.Optimizer):
    """Two-time-scale (body slow, head fast) gradient descent as a ``torch.optim.Optimizer``.

    Parameters
    ----------
    body_params, head_params : iterables of parameters (or param-group dicts) of the leader
        (body) and of the follower (head); see :func:`~optzoo.stackelberg.split_head`. No
        parameter may be in both.
    lr : the body LR alpha (paper value unknown; tune it). The head's LR is ``head_ratio * lr``;
        a group dict may set its own ``lr`` (taken as is).
    head_ratio : c = beta / alpha (default 10, INFERRED). ``c < 1`` warns.
    mode : ``"alternating"`` (default) or ``"simultaneous"``.
    head_steps : head updates per body update in alternating mode.
    momentum, weight_decay : as in ``torch.optim.SGD`` (per group).
    body_project, head_project : optional projections ``x -> Pi(x)`` applied after each update
        (e.g. :func:`~optzoo.stackelberg.ball_projection`).

    ``step(closure)``: the closure zeroes the gradients, computes the loss, calls
    ``backward()`` and returns the loss (torch's convention). Alternating mode needs it;
    simultaneous mode may use gradients already in ``.grad``. Returns the loss before the step.
    A NaN/inf loss raises ``FloatingPointError`` before any parameter moves.

    >>> import torch, torch.nn as nn
    >>> from optzoo.stackelberg import split_head
    >>> torch.manual_seed(0) and None
    >>> net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    >>> X, y = torch.randn(64, 3), torch.randn(64, 1)
    >>> body, head = split_head(net)
    >>> opt = StackelbergGD(body, head, lr=0.05, head_ratio=10)
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((net(X) - y) ** 2).mean()
    ...     loss.backward()
    ...     return loss
    >>> first = float(opt.step(closure).detach())
    >>> for _ in range(50):
    ...     last = float(opt.step(closure).detach())
    >>> last < first, opt.grad_evals
    (True, 102)
    """

    def __init__(self, body_params, head_params, lr: float = 1e-2, *, head_ratio: float = 10.0,
                 mode: str = "alternating", head_steps: int = 1, momentum: float = 0.0,
                 weight_decay: float = 0.0, body_project: Callable | None = None,
                 head_project: Callable | None = None):
        lr = check_real("lr", lr, owner=_OWNER, low=0.0, closed="neither")
        head_ratio = check_real("head_ratio", head_ratio, owner=_OWNER, low=0.0, closed="neither")
        check_choice("mode", mode, ("alternating", "simultaneous"), owner=_OWNER)
        head_steps = check_int("head_steps", head_steps, owner=_OWNER, low=1)
        momentum = check_real("momentum", momentum, owner=_OWNER, low=0.0, high=1.0, closed="left")
        weight_decay = check_real("weight_decay", weight_decay, owner=_OWNER, low=0.0)
        for nm, pr in (("body_project", body_project), ("head_project", head_project)):
            if pr is not None and not callable(pr):
                fail(nm, _OWNER, "a callable x -> projection of x, or None", pr, exc=TypeError)
        if head_ratio < 1.0:
            warnings.warn(f"{_OWNER}: head_ratio={head_ratio:g} < 1 makes the head slower than the "
                          "body (the reverse of the Stackelberg ordering)", UserWarning, stacklevel=2)
        body = _params_of(body_params, "body_params")
        head = _params_of(head_params, "head_params")
        bid = {id(p) for g in body for p in g["params"]}
        shared = [p for g in head for p in g["params"] if id(p) in bid]
        if shared:
            fail("head_params", _OWNER, "disjoint from body_params (a parameter is in both groups)",
                 f"{len(shared)} shared parameter(s) of shape {tuple(shared[0].shape)}")
        for g in body:
            g.setdefault("lr", lr)
            g["role"] = "body"
        for g in head:
            g.setdefault("lr", lr * head_ratio)
            g["role"] = "head"
        for g in body + head:
            check_real("lr", g["lr"], owner=_OWNER + f" ({g['role']} group)", low=0.0, closed="neither")
        super().__init__(body + head, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))
        self.mode, self.head_steps, self.head_ratio = mode, head_steps, head_ratio
        self._project = {"body": body_project, "head": head_project}
        for g in self.param_groups:
            for p in g["params"]:
                self.state[p].setdefault("step", 0)
        self._first = self.param_groups[0]["params"][0]
        self.state[self._first].setdefault("grad_evals", 0)

    @property
    def grad_evals(self) -> int:
        """Closure calls (forward + backward passes) so far; saved in the state_dict."""
        return int(self.state[self._first].get("grad_evals", 0))

    def _call(self, closure) -> torch.Tensor:
        with torch.enable_grad():
            loss = closure()
        v = returned_real("closure", loss.detach() if torch.is_tensor(loss) else loss,
                          owner=_OWNER + ".step",
                          rule="a closure returning the loss (a scalar tensor, after calling backward)")
        if not math.isfinite(v):
            fail("closure", _OWNER + ".step", "a closure returning a finite loss (got a NaN/inf "
                 "objective)", v, exc=FloatingPointError)
        self.state[self._first]["grad_evals"] = self.grad_evals + 1
        return loss

    @torch.no_grad()
    def _update(self, role: str) -> None:
        for g in self.param_groups:
            if g["role"] != role:
                continue
            ps = [p for p in g["params"] if p.grad is not None]
            if not ps:
                continue
            for p in ps:
                if not bool(torch.isfinite(p.grad).all()):
                    fail("closure", _OWNER + ".step", "a closure producing finite gradients "
                         "(got a NaN/inf objective gradient)", "NaN/inf in p.grad",
                         exc=FloatingPointError)
            bufs = [self.state[p].get("momentum_buffer") for p in ps]
            new_p, new_b = stackelberg_gd_update(ps, [p.grad for p in ps], bufs, lr=g["lr"],
                                                 momentum=g["momentum"],
                                                 weight_decay=g["weight_decay"])
            proj = self._project[role]
            for p, q, b in zip(ps, new_p, new_b, strict=True):
                p.copy_(proj(q) if proj is not None else q)
                st = self.state[p]
                st["step"] = st.get("step", 0) + 1
                if g["momentum"] != 0:
                    st["momentum_buffer"] = b

    def step(self, closure=None):  # noqa: D102 (documented on the class)
        if closure is not None and not callable(closure):
            fail("closure", _OWNER + ".step", "a callable returning the loss", closure, exc=TypeError)
        if self.mode == "simultaneous":
            loss = self._call(closure) if closure is not None else None
            self._update("head")
            self._update("body")
            return loss
        if closure is None:
            fail("closure", _OWNER + ".step", "a closure in alternating mode (the body gradient is "
                 "taken at the updated head)", None)
        loss = self._call(closure)
        for k in range(self.head_steps):
            if k:
                self._call(closure)
            self._update("head")
        self._call(closure)
        self._update("body")
        return loss
