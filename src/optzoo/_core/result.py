"""One result vocabulary for every optzoo solver.

Field names follow ``scipy.optimize.OptimizeResult`` (``x, fun, success, status, message,
nit, nfev``); statuses are strings shared by every solver, as in cvxpy. Method-specific
statistics travel in ``extra`` and are also readable as attributes (``res.density``).
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Result", "Status"]


class Status(enum.StrEnum):
    """Why a solver stopped.

    ``OPTIMAL``: a certified global optimum (e.g. a MIP closed its gap).
    ``CONVERGED``: the method's own stopping test passed (a stationary point, not a
    global certificate). ``USER_LIMIT``: an iteration or time budget ran out first.
    ``INACCURATE``: a solution with a known, non-zero optimality gap. ``INFEASIBLE``:
    no feasible point exists. ``DIVERGED``: the iterates or objective blew up (NaN/inf or
    growing without bound). ``NUMERICAL_ERROR``: any other numerical or solver failure.
    """

    OPTIMAL = "optimal"
    CONVERGED = "converged"
    USER_LIMIT = "user_limit"
    INACCURATE = "inaccurate"
    INFEASIBLE = "infeasible"
    DIVERGED = "diverged"
    NUMERICAL_ERROR = "numerical_error"


@dataclass
class Result:
    """What a solver returns.

    Attributes
    ----------
    x : the solution (array, tensor, list of node labels ...).
    fun : objective value at ``x``, in the problem's own sign convention.
    status : a :class:`Status`.
    message : one human-readable sentence on why the solver stopped.
    nit, nfev : iterations and objective (or oracle) evaluations used.
    wall_time : seconds spent inside the solver.
    extra : method-specific statistics, also reachable as attributes.
    """

    x: Any
    fun: float
    status: Status
    message: str = ""
    nit: int = 0
    nfev: int = 0
    wall_time: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return self.status in (Status.OPTIMAL, Status.CONVERGED)

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
        return (
            f"Result(status={self.status.value!r}, fun={self.fun!r}, nit={self.nit}, "
            f"message={self.message!r}, extra keys=[{keys}])"
        )
