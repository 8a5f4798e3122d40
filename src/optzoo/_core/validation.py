"""Argument checks with one message template for the whole project.

Every check raises at once with a message that names the argument, the owner, the rule and
the value::

    ValueError: The 'k' argument of densest_k_subgraph must be an int in [1, 33]. Got 50.

``TypeError`` is raised for a wrong kind of object, ``ValueError`` for a wrong value.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

__all__ = [
    "fail",
    "check_bool",
    "check_choice",
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


def check_type(name: str, value: Any, types: type | tuple[type, ...], *, owner: str, what: str):
    """``isinstance`` check; ``what`` describes the accepted kinds in words."""
    if not isinstance(value, types):
        raise TypeError(
            f"The {name!r} argument of {owner} must be {what}. Got {type(value).__name__}."
        )
    return value


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
