"""Body / head split and parameter groups for any ``torch.optim`` optimizer.

The Stackelberg reading of a network ``f(x) = W h_theta(x)`` (arXiv 2605.15530, reconstructed):
the body ``theta`` is the slow leader, the linear head ``W`` the fast follower. The everyday
form of that idea is two parameter groups whose learning rates differ by a ratio ``c``:

.. math::  \\alpha_{\\text{body}} = \\alpha, \\qquad \\beta_{\\text{head}} = c\\,\\alpha .

Any torch optimizer (SGD, Adam, ...) and any LR scheduler work with these groups; a scheduler
that multiplies every group's LR (``LambdaLR``, ``CosineAnnealingLR``, ...) keeps the ratio.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable

import torch
from torch import nn

from optzoo._core.validation import check_real, fail

__all__ = ["ball_projection", "box_projection", "split_head", "stackelberg_param_groups"]


def _resolve_head(model: nn.Module, head, owner: str) -> tuple[nn.Module | None, list[str]]:
    """(head module or None, names of the head's parameters in ``model.named_parameters()``)."""
    if not isinstance(model, nn.Module):
        fail("model", owner, "a torch.nn.Module", type(model).__name__, exc=TypeError)
    named = dict(model.named_parameters())
    if not named:
        fail("model", owner, "a module with parameters", type(model).__name__)
    ids = {id(p): n for n, p in named.items()}
    if head is None:
        linears = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)]
        if not linears:
            fail("head", owner, "given explicitly when the model has no nn.Linear (the default "
                 "head is the last nn.Linear)", None)
        name, mod = linears[-1]
        return mod, [ids[id(p)] for p in mod.parameters() if id(p) in ids]
    if isinstance(head, str):
        mods = dict(model.named_modules())
        if head in mods and head != "":
            mod = mods[head]
            return mod, [ids[id(p)] for p in mod.parameters() if id(p) in ids]
        names = [n for n in named if n == head or n.startswith(head + ".")]
        if not names:
            fail("head", owner, "the name of a submodule or parameter of the model (e.g. "
                 f"{next(reversed(mods))!r})", head)
        return None, names
    if isinstance(head, nn.Module):
        names = [ids[id(p)] for p in head.parameters() if id(p) in ids]
        if not names:
            fail("head", owner, "a submodule of the model", type(head).__name__)
        return head, names
    if callable(head):
        names = [n for n, p in named.items() if head(n, p)]
        if not names:
            fail("head", owner, "a predicate head(name, param) that selects at least one parameter",
                 head)
        return None, names
    if isinstance(head, Iterable):
        items = list(head)
        if not all(isinstance(p, torch.Tensor) for p in items):
            fail("head", owner, "a name, a submodule, a predicate or an iterable of the model's "
                 "parameters", head, exc=TypeError)
        missing = [p for p in items if id(p) not in ids]
        if missing or not items:
            fail("head", owner, "an iterable of parameters of the model", f"{len(missing)} foreign "
                 f"of {len(items)}")
        return None, [ids[id(p)] for p in items]
    fail("head", owner, "a name, a submodule, a predicate or an iterable of parameters", head,
         exc=TypeError)
    raise AssertionError  # unreachable


def split_head(model: nn.Module, head=None) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """Split ``model``'s parameters into (body, head).

    ``head``: ``None`` (the last ``nn.Linear`` in ``model.modules()`` order), the name of a
    submodule or parameter (``"fc_out"``), a submodule, a predicate ``head(name, param)``, or
    an iterable of the model's parameters. Every parameter lands in exactly one list (shared
    parameters once, as ``model.parameters()`` yields them).

    >>> import torch.nn as nn
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> body, head = split_head(net)
    >>> [tuple(p.shape) for p in head]
    [(2, 8), (2,)]
    """
    _, names = _resolve_head(model, head, "split_head")
    named = dict(model.named_parameters())
    hs = set(names)
    body = [p for n, p in named.items() if n not in hs]
    if not body:
        fail("head", "split_head", "a strict part of the model (the body would be empty)", head)
    return body, [named[n] for n in named if n in hs]


def stackelberg_param_groups(model: nn.Module, body_lr: float, head_ratio: float = 10.0, *,
                             head=None, weight_decay: float = 0.0,
                             no_decay: tuple[str, ...] = ("bias", "norm")) -> list[dict]:
    """Parameter groups with body LR ``body_lr`` and head LR ``head_ratio * body_lr``.

    Each group carries ``role`` (``"body"`` / ``"head"``) and its ``weight_decay``; with
    ``weight_decay > 0`` parameters whose name contains one of ``no_decay`` (or with fewer than
    two dimensions) go to a group without decay. ``head_ratio < 1`` (a head slower than the
    body, the reverse of the Stackelberg ordering) is allowed with a warning.

    >>> import torch, torch.nn as nn
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> opt = torch.optim.SGD(stackelberg_param_groups(net, body_lr=0.03, head_ratio=10))
    >>> [(g["role"], round(g["lr"], 6)) for g in opt.param_groups]
    [('body', 0.03), ('head', 0.3)]
    """
    owner = "stackelberg_param_groups"
    body_lr = check_real("body_lr", body_lr, owner=owner, low=0.0, closed="neither")
    head_ratio = check_real("head_ratio", head_ratio, owner=owner, low=0.0, closed="neither")
    weight_decay = check_real("weight_decay", weight_decay, owner=owner, low=0.0)
    if head_ratio < 1.0:
        warnings.warn(f"{owner}: head_ratio={head_ratio:g} < 1 makes the head slower than the body "
                      "(the reverse of the Stackelberg ordering)", UserWarning, stacklevel=2)
    _, names = _resolve_head(model, head, owner)
    hs = set(names)
    named = dict(model.named_parameters())
    if len(hs) == len(named):
        fail("head", owner, "a strict part of the model (the body would be empty)", head)
    groups = []
    for role, lr in (("body", body_lr), ("head", body_lr * head_ratio)):
        members = [(n, p) for n, p in named.items() if (n in hs) == (role == "head")]
        if weight_decay > 0:
            nd = [p for n, p in members if p.ndim < 2 or any(k in n.lower() for k in no_decay)]
            dec = [p for n, p in members if not (p.ndim < 2 or any(k in n.lower() for k in no_decay))]
            for ps, wd in ((dec, weight_decay), (nd, 0.0)):
                if ps:
                    groups.append({"params": ps, "lr": lr, "weight_decay": wd, "role": role})
        else:
            groups.append({"params": [p for _, p in members], "lr": lr, "weight_decay": 0.0,
                           "role": role})
    return groups


def box_projection(low: float, high: float) -> Callable[[torch.Tensor], torch.Tensor]:
    """Euclidean projection onto the box ``[low, high]`` (elementwise clamp), for
    ``StackelbergGD(..., body_project=..., head_project=...)``."""
    low = check_real("low", low, owner="box_projection")
    high = check_real("high", high, owner="box_projection")
    if not low < high:
        fail("high", "box_projection", f"greater than low={low:g}", high)
    return lambda x: x.clamp(low, high)


def ball_projection(radius: float) -> Callable[[torch.Tensor], torch.Tensor]:
    """Euclidean projection of each tensor onto the ball ``{x : ||x||_2 <= radius}``."""
    radius = check_real("radius", radius, owner="ball_projection", low=0.0, closed="neither")

    def project(x: torch.Tensor) -> torch.Tensor:
        n = torch.linalg.vector_norm(x)
        return x * (radius / n) if n > radius else x

    return project
