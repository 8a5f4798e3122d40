"""Argument checks with one message template for the whole project.

Every check raises at once with a message that names the argument, the owner, the rule and
the value::

    ValueError: The 'k' argument of densest_k_subgraph must be an int in [1, 34]. Got 50.

``TypeError`` is raised for a wrong kind of object, ``ValueError`` for a wrong value.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

__all__ = [
    "fail",
    "joint_group_options",
    "check_array",
    "check_bool",
    "check_choice",
    "check_device",
    "check_finite",
    "check_int",
    "check_real",
    "check_type",
]


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def message(name: str, owner: str, rule: str, value: Any) -> str:
    """The project's one message template."""
    return f"The {name!r} argument of {owner} must be {rule}. Got {_show(value)}."


def fail(name: str, owner: str, rule: str, value: Any, *, exc: type[Exception] = ValueError):
    """Raise ``exc`` with the standard message (use for rules the helpers do not cover)."""
    raise exc(message(name, owner, rule, value))


def joint_group_options(param_groups: list[dict], keys: tuple[str, ...], *, owner: str) -> dict:
    """The options an optimizer applies jointly over all its parameters (one joint random
    direction, say): they must be equal in every param group; returns them from the first."""
    first = param_groups[0]
    for group in param_groups[1:]:
        for key in keys:
            if group[key] != first[key]:
                fail(key, owner, "the same in every param group (one joint direction over all "
                     "parameters)", group[key])
    return {key: first[key] for key in keys}


def _bounds_text(low, high, closed: str) -> str:
    left = "[" if closed in ("both", "left") else "("
    right = "]" if closed in ("both", "right") else ")"
    lo = "-inf" if low is None else f"{low:g}" if isinstance(low, float) else str(low)
    hi = "inf" if high is None else f"{high:g}" if isinstance(high, float) else str(high)
    return f"{left}{lo}, {hi}{right}"


def _in_bounds(v, low, high, closed: str) -> bool:
    if low is not None:
        if closed in ("both", "left"):
            if v < low:
                return False
        elif v <= low:
            return False
    if high is not None:
        if closed in ("both", "right"):
            if v > high:
                return False
        elif v >= high:
            return False
    return True


def check_int(
    name: str, value: Any, *, owner: str, low: int | None = None, high: int | None = None
) -> int:
    """An int (not a bool) in the closed range [low, high]; returns it as a Python int."""
    rule = "an int" if low is None and high is None else f"an int in {_bounds_text(low, high, 'both')}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        fail(name, owner, rule, value, exc=TypeError)
    value = int(value)
    if not _in_bounds(value, low, high, "both"):
        fail(name, owner, rule, value)
    return value


def check_real(
    name: str,
    value: Any,
    *,
    owner: str,
    low: float | None = None,
    high: float | None = None,
    closed: str = "both",
    allow_inf: bool = False,
) -> float:
    """A finite real number in the given range (``closed``: both / left / right / neither)."""
    if closed not in ("both", "left", "right", "neither"):
        raise ValueError(f"closed must be 'both', 'left', 'right' or 'neither', got {closed!r}")
    bounds = "" if low is None and high is None else f" in {_bounds_text(low, high, closed)}"
    rule = f"a {'' if allow_inf else 'finite '}real number{bounds}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        fail(name, owner, rule, value, exc=TypeError)
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        fail(name, owner, rule, value)
    if not _in_bounds(value, low, high, closed):
        fail(name, owner, rule, value)
    return value


def check_bool(name: str, value: Any, *, owner: str) -> bool:
    if not isinstance(value, bool):
        fail(name, owner, "a bool", value, exc=TypeError)
    return value


def check_choice(name: str, value: Any, choices: Iterable[Any], *, owner: str) -> Any:
    choices = tuple(choices)
    if value not in choices:
        fail(name, owner, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def check_device(name: str, device: Any, *, owner: str):
    """A torch device this machine has (``None`` is ``"cpu"``); returns a ``torch.device``.

    ``device="cuda"`` on a machine without CUDA raises ``ValueError`` here, with the project's
    message, instead of torch's ``AssertionError`` deep inside the first allocation.
    """
    import torch

    if device is None:
        return torch.device("cpu")
    rule = "a torch device available on this machine ('cpu', 'cuda', 'cuda:0', ...)"
    if not isinstance(device, (str, int, torch.device)) or isinstance(device, bool):
        fail(name, owner, rule, device, exc=TypeError)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        fail(name, owner, rule, device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        fail(name, owner, "'cpu' or a CUDA device on a machine with CUDA (torch.cuda.is_available() "
             "is False here)", device)
    try:
        torch.empty(0, device=dev)
    except (RuntimeError, AssertionError, ValueError) as e:
        fail(name, owner, f"{rule}; torch says: {str(e).splitlines()[0][:80]}", device)
    return dev


def check_type(name: str, value: Any, types: type | tuple[type, ...], *, owner: str, what: str):
    """``isinstance`` check; ``what`` describes the accepted kinds in words."""
    if not isinstance(value, types):
        raise TypeError(
            f"The {name!r} argument of {owner} must be {what}. Got {type(value).__name__}."
        )
    return value


def returned_real(name: str, value: Any, *, owner: str, rule: str) -> float:
    """A user callable's return value as a float: a real number (not a bool) or a one-element
    tensor or array; anything else raises the template ``TypeError`` (the value's shape, or its
    type). Finiteness is the caller's rule."""
    import numbers

    if hasattr(value, "shape") and hasattr(value, "tolist"):  # torch tensor or numpy array
        n = value.numel() if callable(getattr(value, "numel", None)) else value.size
        if n == 1:
            return float(value.reshape(-1)[0])
        fail(name, owner, rule, tuple(value.shape), exc=TypeError)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        fail(name, owner, rule, type(value).__name__, exc=TypeError)
    return float(value)


def check_finite(name: str, array: Any, *, owner: str) -> Any:
    """Reject NaN and inf in a numpy array or torch tensor (returns the input unchanged)."""
    import numpy as np

    if hasattr(array, "isfinite") and hasattr(array, "detach"):  # torch tensor
        ok = bool(array.isfinite().all())
    else:
        ok = bool(np.isfinite(np.asarray(array)).all())
    if not ok:
        raise ValueError(
            f"The {name!r} argument of {owner} must contain only finite values. Got NaN or inf."
        )
    return array


def check_array(
    name: str,
    value: Any,
    *,
    owner: str,
    shape: tuple[int | None, ...] | None = None,
    ndim: int | None = None,
    dtype: Any = float,
    finite: bool = True,
    nonempty: bool = True,
    copy: bool = False,
):
    """An array-like converted to a numpy array of ``dtype`` (``None`` keeps the dtype).

    ``shape`` may hold ``None`` for a free axis, e.g. ``(None, 2)``; ``ndim`` checks only the
    number of axes. ``finite`` rejects NaN and inf; ``nonempty`` rejects size 0. A torch tensor
    is accepted (detached and moved to the CPU). Returns the array (a copy when ``copy``).

    >>> check_array("x0", [1, 2], owner="f", shape=(2,))
    array([1., 2.])
    >>> check_array("x0", [1, 2], owner="f", shape=(3,))
    Traceback (most recent call last):
    ...
    ValueError: The 'x0' argument of f must be an array of shape (3,). Got shape (2,).
    """
    import numpy as np

    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, (str, bytes, dict, set)) or value is None:
        fail(name, owner, "an array-like of numbers", value, exc=TypeError)
    try:
        arr = np.array(value, dtype=dtype, copy=True) if copy else np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as err:
        kind = "numbers" if dtype is None else f"{np.dtype(dtype).name} values"
        raise TypeError(f"The {name!r} argument of {owner} must be an array-like of {kind}. "
                        f"Got {type(value).__name__} ({err}).") from None
    if arr.dtype == object:
        fail(name, owner, "an array-like of numbers", "an array of dtype object", exc=TypeError)
    if shape is not None:
        ok = arr.ndim == len(shape) and all(s is None or s == a for s, a in zip(shape, arr.shape, strict=False))
        if not ok:
            want = "(" + ", ".join("n" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
            raise ValueError(f"The {name!r} argument of {owner} must be an array of shape {want}. "
                             f"Got shape {arr.shape}.")
    elif ndim is not None and arr.ndim != ndim:
        raise ValueError(f"The {name!r} argument of {owner} must be an array with {ndim} "
                         f"dimension{'s' if ndim != 1 else ''}. Got shape {arr.shape}.")
    if nonempty and arr.size == 0:
        raise ValueError(f"The {name!r} argument of {owner} must be a non-empty array. "
                         f"Got shape {arr.shape}.")
    if finite and arr.dtype.kind in "fc" and not bool(np.isfinite(arr).all()):
        raise ValueError(f"The {name!r} argument of {owner} must contain only finite values. "
                         f"Got NaN or inf.")
    return arr


def _version_tuple(v: str) -> tuple[int, ...]:
    out = []
    for part in v.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def check_hooks(owner: str, package: str, version: str, tested: tuple[str, str],
                needs: dict[str, tuple[object, tuple[str, ...]]]) -> None:
    """Raise ``RuntimeError`` unless ``version`` of ``package`` lies in ``tested`` (>= lower,
    < upper) and every hook an adapter overrides or calls is still there: ``needs`` maps a
    label (``"Trainer."``, ``"the callback event "``) to (class, attribute names).

    >>> check_hooks("X", "pkg", "5.2.0", ("5.0", "6"), {"str.": (str, ("upper",))})
    >>> check_hooks("X", "pkg", "6.1", ("5.0", "6"), {})
    Traceback (most recent call last):
    RuntimeError: X is tested with pkg >= 5.0, < 6; found 6.1.
    """
    lo, hi = tested
    if not (_version_tuple(lo) <= _version_tuple(version) < _version_tuple(hi)):
        raise RuntimeError(f"{owner} is tested with {package} >= {lo}, < {hi}; found {version}.")
    for label, (cls, names) in needs.items():
        for name in names:
            if not callable(getattr(cls, name, None)):
                raise RuntimeError(f"{owner} needs {label}{name}, which {package} {version} lacks.")
