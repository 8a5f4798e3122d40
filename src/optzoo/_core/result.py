"""One result vocabulary for every optzoo solver.

Field names follow ``scipy.optimize.OptimizeResult`` (``x, fun, success, status, message,
nit, nfev``); statuses are strings shared by every solver, as in cvxpy, with one set of
statuses that count as success (cvxpy's ``SOLUTION_PRESENT``). Method-specific statistics
travel in ``extra`` and are also readable as attributes (``res.density``).

The one divergence rule of the project also lives here (:func:`divergence`): an iterate
(or objective) has diverged when it is non-finite or its norm has grown beyond
``DIVERGENCE_GROWTH * (1 + |start|)``; a method that sees its objective also applies
:func:`objective_divergence` (a final objective far above the start). Every iterative
method reports that as ``Status.DIVERGED`` plus a :class:`NotConvergedWarning`, never as a
budget stop.
"""

from __future__ import annotations

import enum
import math
import numbers
import warnings
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "DIVERGENCE_GROWTH",
    "NotConvergedWarning",
    "Result",
    "SUCCESS",
    "Status",
    "OBJECTIVE_GROWTH",
    "divergence",
    "diverged_mask",
    "objective_divergence",
    "warn_not_converged",
]


class NotConvergedWarning(RuntimeWarning, UserWarning):
    """A method stopped before its own stopping test passed, or diverged; the answer is
    still returned, with its ``Status``.

    The one class of the project (the ``optzoo.dks`` and ``optzoo.talda`` names are aliases).
    It derives from both ``RuntimeWarning`` (the old dks class) and ``UserWarning`` (the old
    talda class, and scikit-learn's ``ConvergenceWarning``) so filters on either keep working.
    """


class Status(enum.StrEnum):
    """Why a solver stopped.

    ``OPTIMAL``: a certified global optimum (e.g. a MIP closed its gap).
    ``CONVERGED``: the method's own stopping test passed (a stationary point, not a
    global certificate). ``BUDGET``: a method run on a planned budget (a number of
    iterations or oracle calls, no stopping test) used it, and the iterates stayed
    finite and bounded: the normal end of a fixed-budget method, counted as success.
    ``USER_LIMIT``: an iteration or time cap ran out *before* the method's stopping test
    passed (not a success). ``INACCURATE``: a solution with a known, non-zero optimality
    gap. ``INFEASIBLE``: no feasible point exists. ``DIVERGED``: the iterates or objective
    blew up (see :func:`divergence`). ``NUMERICAL_ERROR``: any other numerical or solver
    failure.
    """

    OPTIMAL = "optimal"
    CONVERGED = "converged"
    BUDGET = "budget_used"
    USER_LIMIT = "user_limit"
    INACCURATE = "inaccurate"
    INFEASIBLE = "infeasible"
    DIVERGED = "diverged"
    NUMERICAL_ERROR = "numerical_error"

    @property
    def success(self) -> bool:
        return self in SUCCESS


SUCCESS = frozenset({Status.OPTIMAL, Status.CONVERGED, Status.BUDGET})

#: growth factor of the divergence rule: ``|x| > DIVERGENCE_GROWTH * (1 + |x_0|)``.
DIVERGENCE_GROWTH = 1e8


def _norm(value: Any) -> float:
    """Euclidean norm of a scalar, numpy array or torch tensor (nan/inf propagate)."""
    if hasattr(value, "detach") and hasattr(value, "double"):  # torch, without importing it
        v = value.detach().double()
        return float((v * v).sum().sqrt()) if v.numel() else 0.0
    if isinstance(value, (int, float)):
        return abs(float(value))
    import numpy as np

    a = np.asarray(value, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.sqrt(np.sum(a * a))) if a.size else 0.0


def divergence(value: Any, *, start: Any = 0.0, growth: float = DIVERGENCE_GROWTH,
               name: str = "iterate") -> str | None:
    """The project's one divergence rule. Returns ``None``, or a sentence saying why
    ``value`` has diverged: it is non-finite, or ``|value| > growth * (1 + |start|)``.

    ``start`` is the reference point (the start ``x0``, or its norm as a float).

    >>> divergence([1.0, 2.0], start=[1.0, 1.0]) is None
    True
    >>> divergence([float("nan")])
    'iterate is non-finite (NaN or inf)'
    >>> divergence([1e15], start=[1.0])
    'iterate norm 1e+15 exceeds 1e+08 x (1 + |start| = 1) = 2e+08'
    """
    n = _norm(value)
    if not math.isfinite(n):
        if isinstance(value, (int, float)) and not math.isnan(value):
            return f"{name} is infinite"
        return f"{name} is non-finite (NaN or inf)"
    s = start if isinstance(start, float) else _norm(start)
    bound = growth * (1.0 + s)
    if n > bound:
        return f"{name} norm {n:.3g} exceeds {growth:.3g} x (1 + |start| = {s:.3g}) = {bound:.3g}"
    return None


#: growth factor of the objective rule: a minimiser ending ``OBJECTIVE_GROWTH * (1 + |f_0|)``
#: above its starting objective has diverged.
OBJECTIVE_GROWTH = 1e4


def objective_divergence(fun: Any, *, start: Any, growth: float = OBJECTIVE_GROWTH,
                         name: str = "objective") -> str | None:
    """The objective half of the divergence rule, for methods that see their objective: a
    minimiser whose final objective is non-finite, or more than ``growth * (1 + |f_0|)``
    above its start ``f_0``, has diverged, even while its iterate is below the iterate rule's
    bound (a quadratic grows as the square of the iterate).

    >>> objective_divergence(0.3, start=0.5) is None
    True
    >>> objective_divergence(2.3e15, start=0.5)
    'objective 2.3e+15 exceeds its start 0.5 by more than 1e+04 x (1 + |start|) = 1.5e+04'
    """
    f, f0 = float(fun), float(start)
    if not math.isfinite(f):
        return f"{name} is non-finite ({f})"
    if not math.isfinite(f0):
        return None
    bound = growth * (1.0 + abs(f0))
    if f - f0 > bound:
        return f"{name} {f:.3g} exceeds its start {f0:.3g} by more than {growth:.3g} x (1 + |start|) = {bound:.3g}"
    return None


def diverged_mask(norms: Any, *, start: Any = 0.0, growth: float = DIVERGENCE_GROWTH):
    """Vectorised :func:`divergence` over an array or tensor of norms (and start norms):
    ``True`` where non-finite or beyond ``growth * (1 + start)``."""
    if hasattr(norms, "isfinite"):  # torch
        return ~norms.isfinite() | (norms > growth * (1.0 + start))
    import numpy as np

    norms = np.asarray(norms, dtype=float)
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(norms) | (norms > growth * (1.0 + np.asarray(start, dtype=float)))


def warn_not_converged(owner: str, message: str, *, stacklevel: int = 3) -> None:
    """Emit the project's one non-convergence / divergence warning."""
    warnings.warn(f"{owner}: {message}", NotConvergedWarning, stacklevel=stacklevel)


def user_stacklevel() -> int:
    """The ``stacklevel`` (for a ``warnings.warn`` in the caller) of the first frame outside
    the optzoo and torch packages: an optimizer's ``step`` runs under torch's ``no_grad`` and
    profiling wrappers, whose depth is torch's business."""
    import os
    import sys

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    skip = [here + os.sep]
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        skip.append(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    frame, level = sys._getframe(1), 1
    while frame is not None and any(os.path.abspath(frame.f_code.co_filename).startswith(d)
                                    for d in skip):
        frame, level = frame.f_back, level + 1
    return level


def _short(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and len(shape) and int(math.prod(shape)) > 6:
        dtype = getattr(value, "dtype", "")
        return f"<{type(value).__name__} shape={tuple(shape)} dtype={dtype}>"
    text = repr(value).replace("\n", "")
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(repr=False)
class Result:
    """What a solver returns.

    Attributes
    ----------
    x : the solution (array, tensor, list of node labels ...).
    fun : objective value at ``x`` (a float; an array for multi-objective solvers), in the
        problem's own sign convention.
    status : a :class:`Status` (a status string is converted at construction).
    success : ``status`` is one of :data:`SUCCESS` (optimal, converged, budget_used); set at
        construction and kept in step with ``status``.
    message : one human-readable sentence on why the solver stopped.
    nit, nfev : iterations and objective (or oracle) evaluations used.
    wall_time : seconds spent inside the solver.
    extra : method-specific statistics, also reachable as attributes.
    """

    x: Any
    fun: float | NDArray[Any]
    status: Status
    message: str = ""
    nit: int = 0
    nfev: int = 0
    wall_time: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    success: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        if isinstance(self.fun, numbers.Real) and not isinstance(self.fun, bool):
            self.fun = float(self.fun)
        self.message = str(self.message)
        self.nit, self.nfev, self.wall_time = int(self.nit), int(self.nfev), float(self.wall_time)
        self.extra = dict(self.extra)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "status":
            value = Status(value)  # ValueError for an unknown status string
            object.__setattr__(self, "success", value in SUCCESS)
        elif name == "success":
            return  # derived from status; the dataclass default assignment lands here
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: expose extra["density"] as res.density.
        extra = self.__dict__.get("extra", {})
        if name in extra:
            return extra[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        d["success"] = self.success
        return d

    def __repr__(self) -> str:
        keys = ", ".join(sorted(self.extra))
        fun = self.fun if isinstance(self.fun, float) else _short(self.fun)
        return (
            f"Result(success={self.success}, status={self.status.value!r}, fun={fun!r}, "
            f"x={_short(self.x)}, nit={self.nit}, nfev={self.nfev}, "
            f"message={self.message!r}, extra keys=[{keys}])"
        )
