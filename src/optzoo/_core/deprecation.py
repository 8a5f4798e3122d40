"""Renames that keep the old spelling working for one release.

The project's one mechanism for a renamed public keyword or function (issue 42, item 4:
one name per concept across rooms). Both emit a ``FutureWarning`` (shown to end users by
default, as scikit-learn and pandas do for API changes) that names the old and the new
spelling; the next release deletes the old one.

>>> import warnings
>>> @renamed_kwargs(niter="max_iter")
... def solve(*, max_iter=10):
...     return max_iter
>>> with warnings.catch_warnings(record=True) as w:
...     warnings.simplefilter("always")
...     solve(niter=3), str(w[0].message)
(3, "The 'niter' argument of solve was renamed to 'max_iter'; 'niter' will be removed in the next release.")
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["deprecated_alias", "renamed_kwargs"]

F = TypeVar("F", bound=Callable[..., Any])


def renamed_kwargs(owner: str | None = None, /, **renames: str) -> Callable[[F], F]:
    """Decorator: accept each old keyword ``old=`` as its new name ``renames[old]`` for one
    release, with a ``FutureWarning`` naming both.

    ``owner`` is the name used in the message (default: the function's ``__qualname__``;
    pass the class name for an ``__init__``). Passing the old and the new keyword together
    is a ``TypeError``. The wrapper's ``inspect.signature`` is the new one (it follows
    ``__wrapped__``), so the old names appear nowhere in the public signatures;
    ``__renamed_kwargs__`` lists them.
    """
    for old, new in renames.items():
        if not isinstance(new, str) or not new.isidentifier() or new == old:
            raise ValueError(f"renamed_kwargs: the new name of {old!r} must be another identifier. "
                             f"Got {new!r}.")

    def decorate(fn: F) -> F:
        name = owner or fn.__qualname__.removesuffix(".__init__")

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{name} got both {old!r} (deprecated) and {new!r}: pass only "
                                        f"{new!r}.")
                    warnings.warn(f"The {old!r} argument of {name} was renamed to {new!r}; {old!r} "
                                  "will be removed in the next release.", FutureWarning, stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        wrapper.__renamed_kwargs__ = {**getattr(fn, "__renamed_kwargs__", {}), **renames}  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def deprecated_alias(fn: Callable[..., Any], old_name: str) -> Callable[..., Any]:
    """The function ``fn`` under its old name ``old_name`` for one release: calling it warns
    (``FutureWarning``, naming both) and returns ``fn``'s result. Assign it at module level
    next to ``fn`` and keep it out of ``__all__``::

        update_mixture_adam_update = deprecated_alias(mixture_adam_update, "update_mixture_adam_update")
    """
    new_name = fn.__name__

    @functools.wraps(fn)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"{old_name} was renamed to {new_name}; {old_name} will be removed in the "
                      "next release.", FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old_name
    # no copy of fn's examples: doctest would run them twice
    alias.__doc__ = f"Deprecated alias of :func:`{fn.__module__}.{new_name}` (removed in the next release)."
    alias.__deprecated_alias_of__ = fn  # type: ignore[attr-defined]
    return alias
