"""Licence-free PyEPO optimisation models on SciPy's HiGHS (``scipy.optimize.milp``).

PyEPO's predefined models default to Gurobi; its licence-free back-ends need ``ortools`` or
``pyomo``, which may be absent. :class:`LinearProgramModel` is a PyEPO ``optModel`` over a
user's own LP or MILP given as matrices (dense or scipy sparse; the same data a scipy
``milp`` call takes), or built with :meth:`LinearProgramModel.from_scipy` from the very
``scipy.optimize.LinearConstraint`` / ``Bounds`` / ``integrality`` objects a ``milp`` call
takes::

    min / max  c^T w   s.t.  A_ub w <= b_ub,  A_eq w = b_eq,  lb <= w <= ub,  w_j integer (j in I)

solved by HiGHS through ``scipy.optimize.milp`` (bundled with SciPy >= 1.9). It works with
every ``pyepo.func`` loss, ``pyepo.data.dataset.optDataset`` and ``pyepo.metric.regret``.
:func:`shortest_path_model` and :func:`knapsack_model` rebuild PyEPO's shortest-path and
knapsack problems on it with PyEPO's variable order, so the costs of
``pyepo.data.shortestpath.genData`` / ``pyepo.data.knapsack.genData`` line up.
:func:`pyepo_model` builds PyEPO's own model on a named back-end and refuses ``"gurobi"``
unless it is asked for by name, with an error naming the extra to install when the back-end
is missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pyepo import EPO
from pyepo.model.opt import optModel

from optzoo._core.validation import (
    check_array,
    check_choice,
    check_finite,
    check_int,
    check_real,
    fail,
)

__all__ = ["FeasibleSetModel", "LinearProgramModel", "enumerate_grid_paths", "enumerate_knapsack",
           "grid_arcs", "knapsack_model", "pyepo_model", "shortest_path_model"]

_SENSES = ("min", "max")



def _cost_vector(c, n: int, owner: str) -> np.ndarray:
    """A cost vector (array or tensor) as a finite float array of length ``n``."""
    if hasattr(c, "detach"):
        c = c.detach().cpu().numpy()
    c = np.asarray(c, dtype=float).reshape(-1)
    if c.shape != (n,):
        fail("c", owner, f"a cost vector of length {n}", f"shape {c.shape}")
    check_finite("c", c, owner=owner)
    return c

class LinearProgramModel(optModel):
    """A PyEPO ``optModel`` for a linear program or MILP, solved by HiGHS (scipy ``milp``).

    ``num_vars`` decision variables; ``A_ub w <= b_ub``, ``A_eq w = b_eq`` (dense or scipy
    sparse), bounds ``lb <= w <= ub`` (scalars broadcast), ``integrality`` (0 continuous, 1
    integer, per variable), ``sense`` ``"min"`` or ``"max"`` (sets PyEPO's ``modelSense``).
    ``solve()`` returns ``(w, objective)`` like every PyEPO model; integral variables are
    rounded to the nearest integer (HiGHS returns them within its feasibility tolerance).

    >>> m = LinearProgramModel(2, A_ub=[[1.0, 1.0]], b_ub=[1.0], ub=1.0, sense="max")
    >>> m.setObj(np.array([1.0, 2.0])); w, z = m.solve()
    >>> w.tolist(), z
    ([0.0, 1.0], 2.0)
    """

    def __init__(self, num_vars: int, *, A_ub=None, b_ub=None, A_eq=None, b_eq=None,
                 lb: Any = 0.0, ub: Any = np.inf, integrality=None, sense: str = "min",
                 time_limit: float | None = None) -> None:
        owner = "LinearProgramModel"
        n = check_int("num_vars", num_vars, owner=owner, low=1)
        check_choice("sense", sense, _SENSES, owner=owner)
        self._n = n
        self.sense = sense
        self.modelSense = EPO.MINIMIZE if sense == "min" else EPO.MAXIMIZE
        self.A_ub, self.b_ub = _pair("A_ub", "b_ub", A_ub, b_ub, n, owner)
        self.A_eq, self.b_eq = _pair("A_eq", "b_eq", A_eq, b_eq, n, owner)
        self.lb = _per_var("lb", lb, n, owner)
        self.ub = _per_var("ub", ub, n, owner)
        if np.isnan(self.lb).any() or np.isnan(self.ub).any() or (self.lb > self.ub).any():
            fail("lb", owner, "<= ub elementwise and not NaN", lb)
        self.integrality = (np.zeros(n) if integrality is None else
                            _per_var("integrality", integrality, n, owner))
        if not np.isin(self.integrality, (0.0, 1.0)).all():
            fail("integrality", owner, "0 (continuous) or 1 (integer) per variable", integrality)
        self.time_limit = None if time_limit is None else check_real(
            "time_limit", time_limit, owner=owner, low=0.0, closed="neither")
        self._c = np.zeros(n)
        super().__init__()

    @classmethod
    def from_scipy(cls, constraints=None, *, num_vars: int | None = None, bounds=None,
                   integrality=None, sense: str = "min",
                   time_limit: float | None = None) -> LinearProgramModel:
        """The model of a scipy ``milp`` / ``linprog`` problem, from its own objects.

        ``constraints`` is what ``scipy.optimize.milp`` takes: a ``LinearConstraint``, a
        sequence of them, or ``(A, lb, ub)`` tuples (each ``lb <= A w <= ub``, infinite sides
        allowed, dense or sparse ``A``). Rows with ``lb == ub`` become equalities, finite
        ``ub`` sides ``A w <= ub`` and finite ``lb`` sides ``-A w <= -lb``; rows free on both
        sides are dropped. ``bounds`` is a ``scipy.optimize.Bounds`` or an ``(lb, ub)`` pair
        (scalars broadcast); ``None`` means ``milp``'s default ``0 <= w < inf`` (also
        ``linprog``'s). ``integrality`` is ``milp``'s (0 continuous, 1 integer; semi-continuous
        2 and 3 are refused). ``num_vars`` is read from the constraint matrices when omitted.
        The objective is not part of the model (PyEPO sets it per instance with ``setObj``);
        ``sense="max"`` makes it a maximisation, as for PyEPO's knapsack.

        >>> from scipy.optimize import Bounds, LinearConstraint
        >>> m = LinearProgramModel.from_scipy(LinearConstraint([[1, 1, 1]], 1, 2),
        ...                                   bounds=Bounds(0, 1), integrality=1, sense="max")
        >>> m.setObj(np.array([3.0, -1.0, 2.0])); w, z = m.solve()
        >>> w.tolist(), z
        ([1.0, 0.0, 1.0], 5.0)
        """
        owner = "LinearProgramModel.from_scipy"
        blocks = _scipy_constraints(constraints, owner)
        widths = {A.shape[1] for A, _, _ in blocks}
        if len(widths) > 1:
            fail("constraints", owner, "matrices with the same number of columns",
                 f"widths {sorted(widths)}")
        if num_vars is None:
            if not widths:
                fail("num_vars", owner, "given when there are no constraints to read it from", None)
            n = widths.pop()
        else:
            n = check_int("num_vars", num_vars, owner=owner, low=1)
            if widths and widths != {n}:
                fail("constraints", owner, f"matrices with {n} columns (num_vars)",
                     f"{widths.pop()} columns")
        ub_rows, ub_rhs, eq_rows, eq_rhs = [], [], [], []
        for A, lo, hi in blocks:
            eq = np.isfinite(lo) & (lo == hi)
            up = np.isfinite(hi) & ~eq
            dn = np.isfinite(lo) & ~eq
            eq_rows.append(A[eq]), eq_rhs.append(lo[eq])
            ub_rows += [A[up], -A[dn]]
            ub_rhs += [hi[up], -lo[dn]]
        A_ub = np.vstack(ub_rows) if ub_rows else np.zeros((0, n))
        A_eq = np.vstack(eq_rows) if eq_rows else np.zeros((0, n))
        b_ub = np.concatenate(ub_rhs) if ub_rhs else np.zeros(0)
        b_eq = np.concatenate(eq_rhs) if eq_rhs else np.zeros(0)
        if bounds is None:
            lb, ub = 0.0, np.inf
        elif hasattr(bounds, "lb") and hasattr(bounds, "ub"):
            lb, ub = bounds.lb, bounds.ub
        elif isinstance(bounds, (tuple, list)) and len(bounds) == 2:
            lb, ub = bounds
            lb = -np.inf if lb is None else lb
            ub = np.inf if ub is None else ub
        else:
            fail("bounds", owner, "a scipy.optimize.Bounds, an (lb, ub) pair or None",
                 type(bounds).__name__, exc=TypeError)
        return cls(n, A_ub=A_ub if len(A_ub) else None, b_ub=b_ub if len(A_ub) else None,
                   A_eq=A_eq if len(A_eq) else None, b_eq=b_eq if len(A_eq) else None,
                   lb=lb, ub=ub, integrality=integrality, sense=sense, time_limit=time_limit)

    def __repr__(self) -> str:
        kind = "MILP" if self.integrality.any() else "LP"
        return f"LinearProgramModel({kind}, {self._n} variables, sense={self.sense!r}, HiGHS)"

    @property
    def num_cost(self) -> int:
        return self._n

    def _getModel(self):
        from scipy.optimize import Bounds, LinearConstraint

        cons = []
        if self.A_ub is not None:
            cons.append(LinearConstraint(self.A_ub, -np.inf, self.b_ub))
        if self.A_eq is not None:
            cons.append(LinearConstraint(self.A_eq, self.b_eq, self.b_eq))
        self._constraints = cons
        self._bounds = Bounds(self.lb, self.ub)
        return None, list(range(self._n))

    def setObj(self, c) -> None:
        self._c = _cost_vector(c, self._n, "LinearProgramModel.setObj")

    def solve(self):
        from scipy.optimize import milp

        sign = 1.0 if self.sense == "min" else -1.0
        opts: dict = {"presolve": True}
        if self.time_limit is not None:
            opts["time_limit"] = self.time_limit
        res = milp(sign * self._c, constraints=self._constraints, bounds=self._bounds,
                   integrality=self.integrality, options=opts)
        if res.x is None:
            raise RuntimeError(f"HiGHS found no solution (status {res.status}: {res.message}).")
        w = res.x
        if self.integrality.any():
            mask = self.integrality > 0
            w = w.copy()
            w[mask] = np.round(w[mask])
        return w.astype(np.float32), float(self._c @ w)

    def addConstr(self, coefs, rhs):
        new = self.copy()
        row = np.asarray(coefs, dtype=float).reshape(1, -1)
        new.A_ub = row if new.A_ub is None else np.vstack([new.A_ub, row])
        new.b_ub = np.array([rhs], float) if new.b_ub is None else np.append(new.b_ub, rhs)
        new._model, new.x = new._getModel()
        return new

    def relax(self):
        new = self.copy()
        new.integrality = np.zeros(self._n)
        return new

    def get_config(self) -> dict:
        return {"num_vars": self._n, "A_ub": self.A_ub, "b_ub": self.b_ub, "A_eq": self.A_eq,
                "b_eq": self.b_eq, "lb": self.lb, "ub": self.ub, "integrality": self.integrality,
                "sense": self.sense, "time_limit": self.time_limit}


def _per_var(name, value, n, owner):
    """A per-variable float vector from a scalar or a length-``n`` array (named error else)."""
    a = np.asarray(value, dtype=float)
    if a.ndim > 1 or (a.ndim == 1 and a.shape[0] not in (1, n)):
        fail(name, owner, f"a scalar or one value per variable (length {n})", f"shape {a.shape}")
    return np.broadcast_to(a, (n,)).copy()


def _scipy_constraints(constraints, owner):
    """``milp``'s ``constraints`` argument as a list of dense ``(A, lb, ub)`` blocks."""
    import scipy.sparse as sp
    from scipy.optimize import LinearConstraint

    if constraints is None:
        return []
    if isinstance(constraints, LinearConstraint) or (
            isinstance(constraints, tuple) and len(constraints) == 3
            and not isinstance(constraints[0], (LinearConstraint, tuple))):
        constraints = [constraints]
    if not isinstance(constraints, (list, tuple)):
        fail("constraints", owner, "a LinearConstraint, (A, lb, ub) or a sequence of them",
             type(constraints).__name__, exc=TypeError)
    blocks = []
    for k, con in enumerate(constraints):
        if isinstance(con, LinearConstraint):
            A, lo, hi = con.A, con.lb, con.ub
        elif isinstance(con, tuple) and len(con) == 3:
            A, lo, hi = con
        else:
            fail("constraints", owner, "LinearConstraint objects or (A, lb, ub) tuples",
                 f"item {k} of type {type(con).__name__}", exc=TypeError)
        A = A.toarray() if sp.issparse(A) else np.asarray(A, dtype=float)
        A = np.atleast_2d(A).astype(float)
        if A.ndim != 2:
            fail("constraints", owner, "2-d constraint matrices", f"item {k} of shape {A.shape}")
        m = A.shape[0]
        try:
            lo = np.broadcast_to(np.asarray(lo, dtype=float), (m,)).copy()
            hi = np.broadcast_to(np.asarray(hi, dtype=float), (m,)).copy()
        except ValueError:
            fail("constraints", owner, f"lb and ub with one value per row ({m} rows in item {k})",
                 f"lb shape {np.shape(lo)}, ub shape {np.shape(hi)}")
        if not np.isfinite(A).all() or np.isnan(lo).any() or np.isnan(hi).any():
            fail("constraints", owner, "finite matrices and non-NaN sides", f"item {k}")
        if (lo > hi).any():
            fail("constraints", owner, "lb <= ub row by row",
                 f"item {k}, row {int(np.argmax(lo > hi))}: lb {lo[lo > hi][0]} > ub {hi[lo > hi][0]}")
        blocks.append((A, lo, hi))
    return blocks


def _pair(a_name, b_name, A, b, n, owner):
    if A is None and b is None:
        return None, None
    if A is None or b is None:
        fail(a_name, owner, f"given together with {b_name!r}", "one of them is None")
    import scipy.sparse as sp

    A = A.toarray() if sp.issparse(A) else check_array(a_name, A, owner=owner, ndim=2)
    A = np.asarray(A, dtype=float)
    if A.shape[1] != n:
        fail(a_name, owner, f"a matrix with {n} columns (num_vars)", f"shape {A.shape}")
    b = check_array(b_name, b, owner=owner, shape=(A.shape[0],))
    return A, b


def grid_arcs(grid: tuple[int, int]) -> list[tuple[int, int]]:
    """Arcs of PyEPO's grid shortest path, in PyEPO's order (east arcs of a row, then its
    south arcs), so cost vectors from ``pyepo.data.shortestpath.genData`` line up."""
    h, w = grid
    arcs = []
    for i in range(h):
        arcs += [(i * w + j, i * w + j + 1) for j in range(w - 1)]
        if i < h - 1:
            arcs += [(i * w + j, (i + 1) * w + j) for j in range(w)]
    return arcs


def shortest_path_model(grid: tuple[int, int] = (5, 5)):
    """PyEPO's grid shortest path (north-west to south-east corner, arcs east and south) as a
    min-cost-flow LP on HiGHS. The LP is totally unimodular, so its vertex solutions are paths."""
    owner = "shortest_path_model"
    if (not isinstance(grid, (tuple, list)) or len(grid) != 2
            or any(isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g < 1 for g in grid)
            or grid[0] * grid[1] < 2):
        fail("grid", owner, "a pair of positive ints (rows, cols) with at least 2 nodes", grid)
    h, w = int(grid[0]), int(grid[1])
    arcs = grid_arcs((h, w))
    nodes = h * w
    A = np.zeros((nodes, len(arcs)))
    for k, (u, v) in enumerate(arcs):
        A[u, k] -= 1.0  # flow out
        A[v, k] += 1.0  # flow in
    b = np.zeros(nodes)
    b[0], b[-1] = -1.0, 1.0
    m = LinearProgramModel(len(arcs), A_eq=A, b_eq=b, lb=0.0, ub=1.0, sense="min")
    m.arcs, m.grid = arcs, (h, w)
    return m


def knapsack_model(weights, capacity):
    """PyEPO's multi-dimensional 0/1 knapsack (MAXIMIZE ``c^T w`` s.t. ``weights w <= capacity``)
    as a MILP on HiGHS; ``weights`` has shape (dim, items), ``capacity`` length dim."""
    owner = "knapsack_model"
    W = check_array("weights", weights, owner=owner, ndim=2)
    cap = np.broadcast_to(np.asarray(capacity, dtype=float), (W.shape[0],)).copy()
    check_array("capacity", cap, owner=owner)
    m = LinearProgramModel(W.shape[1], A_ub=W, b_ub=cap, lb=0.0, ub=1.0,
                           integrality=np.ones(W.shape[1]), sense="max")
    m.weights, m.capacity = W, cap
    return m


class FeasibleSetModel(optModel):
    """A PyEPO ``optModel`` over an explicit finite feasible set (the rows of ``points``).

    ``solve()`` is the exact ``argmin`` (``argmax`` for ``sense="max"``) of ``c^T w`` over
    the rows: one matrix-vector product, so it is the fastest exact oracle for small
    combinatorial problems whose feasible points can be listed (the 70 monotone paths of a
    5x5 grid, the feasible subsets of a small knapsack). Ties go to the first row. Use it
    where the solver's speed is not what is measured; it returns the same decisions as any
    exact solver of the same problem (up to ties, which have probability zero for
    continuous predicted costs).
    """

    def __init__(self, points, *, sense: str = "min") -> None:
        owner = "FeasibleSetModel"
        P = check_array("points", points, owner=owner, ndim=2)
        check_choice("sense", sense, _SENSES, owner=owner)
        self.points = P
        self.sense = sense
        self.modelSense = EPO.MINIMIZE if sense == "min" else EPO.MAXIMIZE
        self._c = np.zeros(P.shape[1])
        super().__init__()

    def __repr__(self) -> str:
        return (f"FeasibleSetModel({self.points.shape[0]} points in R^{self.points.shape[1]}, "
                f"sense={self.sense!r})")

    @property
    def num_cost(self) -> int:
        return int(self.points.shape[1])

    def _getModel(self):
        return None, list(range(self.points.shape[1]))

    def setObj(self, c) -> None:
        self._c = _cost_vector(c, self.num_cost, "FeasibleSetModel.setObj")

    def solve(self):
        v = self.points @ self._c
        k = int(np.argmin(v) if self.sense == "min" else np.argmax(v))
        return self.points[k].astype(np.float32), float(v[k])

    def get_config(self) -> dict:
        return {"points": self.points, "sense": self.sense}


def enumerate_grid_paths(grid: tuple[int, int]) -> np.ndarray:
    """Every north-west to south-east monotone path of PyEPO's grid as a 0/1 arc vector
    (rows), in :func:`grid_arcs` order: ``C(h+w-2, h-1)`` paths (70 on a 5x5 grid)."""
    from itertools import combinations

    h, w = int(grid[0]), int(grid[1])
    index = {a: k for k, a in enumerate(grid_arcs((h, w)))}
    steps = h + w - 2
    out = []
    for downs in combinations(range(steps), h - 1):
        v, row = 0, np.zeros(len(index))
        for s in range(steps):
            nxt = v + w if s in downs else v + 1
            row[index[(v, nxt)]] = 1.0
            v = nxt
        out.append(row)
    return np.array(out)


def enumerate_knapsack(weights, capacity, *, max_points: int = 2_000_000) -> np.ndarray:
    """Every feasible 0/1 subset of the multi-dimensional knapsack ``weights w <= capacity``
    (rows, the empty set included), grown level by level with numpy. Raises ``ValueError``
    when there are more than ``max_points`` (use :func:`knapsack_model` then)."""
    owner = "enumerate_knapsack"
    W = check_array("weights", weights, owner=owner, ndim=2)
    cap = np.broadcast_to(np.asarray(capacity, dtype=float), (W.shape[0],))
    m = W.shape[1]
    tol = 1e-9
    level_sets = [np.zeros((1, m), dtype=bool)]
    last = np.array([-1])
    load = np.zeros((1, W.shape[0]))
    total = 1
    while len(last):
        # extend every set of this level by one item with a larger index
        j = np.arange(m)
        par, item = np.nonzero(j[None, :] > last[:, None])
        new_load = load[par] + W[:, item].T
        ok = (new_load <= cap[None, :] + tol).all(1)
        par, item, new_load = par[ok], item[ok], new_load[ok]
        sets = level_sets[-1][par].copy() if len(level_sets[-1]) else np.zeros((0, m), bool)
        sets[np.arange(len(item)), item] = True
        total += len(item)
        if total > max_points:
            fail("max_points", owner, f">= the number of feasible subsets (more than {max_points})",
                 max_points)
        level_sets.append(sets)
        last, load = item, new_load
    return np.vstack(level_sets).astype(float)


_EXTRAS = {"ortools": 'pip install "pyepo[ortools]" (or: pip install ortools)',
           "pyomo": 'pip install "pyepo[pyomo]" plus a solver binary (glpk, highspy)',
           "mpax": 'pip install "pyepo[mpax]"', "copt": "pip install coptpy (needs a licence)",
           "gurobi": "pip install gurobipy (needs a licence beyond small problems)"}
_PROBLEMS = ("shortest_path", "knapsack")


def pyepo_model(problem: str, *args, backend: str, **kwargs):
    """PyEPO's own predefined model (``pyepo.model.shortestPathModel`` / ``knapsackModel``) on
    ``backend``, which must be named (no silent Gurobi default); ``backend="highs"`` returns
    this module's licence-free HiGHS version. A missing back-end raises ``ImportError`` naming
    the extra to install."""
    owner = "pyepo_model"
    check_choice("problem", problem, _PROBLEMS, owner=owner)
    check_choice("backend", backend, ("highs", *_EXTRAS), owner=owner)
    if backend == "highs":
        return (shortest_path_model if problem == "shortest_path" else knapsack_model)(*args, **kwargs)
    import importlib

    import pyepo.model

    mod = {"ortools": "ort", "pyomo": "omo", "mpax": "mpax", "copt": "copt", "gurobi": "grb"}[backend]
    try:
        importlib.import_module(f"pyepo.model.{mod}")
        factory = (pyepo.model.shortestPathModel if problem == "shortest_path"
                   else pyepo.model.knapsackModel)
        return factory(*args, backend=backend, **kwargs)
    except ImportError as e:
        raise ImportError(f"The {backend!r} back-end of PyEPO is not installed here ({e}). "
                          f"Install it with: {_EXTRAS[backend]}; or use backend='highs' "
                          "(SciPy's HiGHS, no extra needed).") from e
