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
:func:`tsp_model` (symmetric TSP, exact MILP on HiGHS: MTZ, or DFJ with generated subtour
cuts) and :func:`portfolio_model` (PyEPO's Markowitz QCQP, exact KKT active-set solve with a
SciPy SLSQP fallback) do the same for PyEPO's TSP and portfolio problems, whose PyEPO
back-ends need Gurobi, COPT or Pyomo with an external solver.
:func:`pyepo_model` builds PyEPO's own model on a named back-end and refuses ``"gurobi"``
unless it is asked for by name, with an error naming the extra to install when the back-end
is missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pyepo import EPO
from pyepo.model.opt import optModel

from optzoo._core.deprecation import renamed_kwargs
from optzoo._core.result import warn_not_converged
from optzoo._core.validation import (
    check_array,
    check_choice,
    check_finite,
    check_int,
    check_real,
    fail,
)

__all__ = ["FeasibleSetModel", "LinearProgramModel", "PortfolioModel", "TSPModel",
           "enumerate_grid_paths", "enumerate_knapsack", "enumerate_tsp_tours", "grid_arcs",
           "knapsack_model", "portfolio_model", "pyepo_model", "shortest_path_model", "tsp_model",
           "tsp_tour"]

_SENSES = ("min", "max")



def _cost_vector(c, n: int, owner: str) -> np.ndarray:
    """A cost vector (array or tensor) as a finite float array of length ``n``."""
    if type(c) is np.ndarray and c.shape == (n,):
        # fast path for what PyEPO's losses pass (one row per solve, hundreds of thousands
        # of solves a run): the same array as below, the same finiteness rule
        c = c.astype(float, copy=False)
        if np.isfinite(c).all():
            return c
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
    cap = check_array("capacity", capacity, owner=owner)
    if cap.size == 1:
        cap = np.full(W.shape[0], float(cap.reshape(-1)[0]))
    elif cap.shape != (W.shape[0],):
        fail("capacity", owner, f"a number or an array of shape ({W.shape[0]},) (one per weight row)",
             f"shape {cap.shape}")
    if (cap < 0).any():
        fail("capacity", owner, "non-negative (the empty knapsack must be feasible)", cap.tolist())
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


def enumerate_tsp_tours(num_nodes: int, *, max_points: int = 200_000) -> np.ndarray:
    """Every Hamiltonian cycle of the complete graph on ``num_nodes`` nodes, once each, as a
    0/1 indicator over the undirected edges ``(i, j)``, ``i < j``, in ``combinations`` order
    (the layout of :class:`TSPModel` and ``pyepo.data.tsp.genData``): ``(n - 1)! / 2`` rows
    (2,520 at 8 nodes, 181,440 at 10). With :class:`FeasibleSetModel` it is an exact TSP
    oracle, one matrix-vector product a solve (about 3.5 ms at 10 nodes here, against 20 to
    55 ms for ``tsp_model(10, formulation="DFJ")``). Raises ``ValueError`` when there are
    more than ``max_points`` tours (11 nodes and up by default, 1,814,400 tours, about 800 MB:
    use :func:`tsp_model` there)."""
    from itertools import combinations, permutations
    from math import factorial

    owner = "enumerate_tsp_tours"
    n = check_int("num_nodes", num_nodes, owner=owner, low=3)
    max_points = check_int("max_points", max_points, owner=owner, low=1)
    count = factorial(n - 1) // 2
    if count > max_points:
        fail("max_points", owner, f">= the number of tours ((n - 1)!/2 = {count} at {n} nodes)",
             max_points)
    # tours start at node 0; of a tour and its reverse keep the one whose second node is
    # smaller than its last (n = 3 has one tour, 0-1-2-0)
    perms = np.array(list(permutations(range(1, n))), dtype=np.int64)
    perms = perms[perms[:, 0] < perms[:, -1]]
    zeros = np.zeros((len(perms), 1), dtype=np.int64)
    seq = np.concatenate([zeros, perms, zeros], axis=1)
    lo, hi = np.minimum(seq[:, :-1], seq[:, 1:]), np.maximum(seq[:, :-1], seq[:, 1:])
    index = np.full((n, n), -1, dtype=np.int64)
    for k, (i, j) in enumerate(combinations(range(n), 2)):
        index[i, j] = k
    out = np.zeros((len(perms), n * (n - 1) // 2))
    out[np.repeat(np.arange(len(perms)), n), index[lo, hi].ravel()] = 1.0
    return out


_EXTRAS = {"ortools": 'pip install "pyepo[ortools]" (or: pip install ortools)',
           "pyomo": 'pip install "pyepo[pyomo]" plus a solver binary (glpk, highspy)',
           "mpax": 'pip install "pyepo[mpax]"', "copt": "pip install coptpy (needs a licence)",
           "gurobi": "pip install gurobipy (needs a licence beyond small problems)"}
_PROBLEMS = ("shortest_path", "knapsack", "tsp", "portfolio")


def pyepo_model(problem: str, *args, backend: str, **kwargs):
    """PyEPO's own predefined model (``pyepo.model.shortestPathModel`` / ``knapsackModel`` /
    ``tspModel`` / ``portfolioModel``) on ``backend``, which must be named (no silent Gurobi
    default); ``backend="highs"`` returns this module's licence-free version
    (:func:`shortest_path_model`, :func:`knapsack_model`, :func:`tsp_model`,
    :func:`portfolio_model`, with their own arguments: ``pyepo_model("portfolio", cov,
    backend="highs")`` but PyEPO's ``pyepo_model("portfolio", num_assets, cov,
    backend="pyomo")``). A missing back-end raises ``ImportError`` naming the extra to
    install."""
    owner = "pyepo_model"
    check_choice("problem", problem, _PROBLEMS, owner=owner)
    check_choice("backend", backend, ("highs", *_EXTRAS), owner=owner)
    if backend == "highs":
        ours = {"shortest_path": shortest_path_model, "knapsack": knapsack_model,
                "tsp": tsp_model, "portfolio": portfolio_model}[problem]
        return ours(*args, **kwargs)
    import importlib

    import pyepo.model

    mod = {"ortools": "ort", "pyomo": "omo", "mpax": "mpax", "copt": "copt", "gurobi": "grb"}[backend]
    try:
        importlib.import_module(f"pyepo.model.{mod}")
        factory = {"shortest_path": pyepo.model.shortestPathModel,
                   "knapsack": pyepo.model.knapsackModel, "tsp": pyepo.model.tspModel,
                   "portfolio": pyepo.model.portfolioModel}[problem]
        return factory(*args, backend=backend, **kwargs)
    except ImportError as e:
        raise ImportError(f"The {backend!r} back-end of PyEPO is not installed here ({e}). "
                          f"Install it with: {_EXTRAS[backend]}; or use backend='highs' "
                          "(SciPy's HiGHS, no extra needed).") from e


class TSPModel(optModel):
    """PyEPO's symmetric TSP as an exact MILP on HiGHS (``scipy.optimize.milp``), no licence.

    Costs: one per undirected edge ``(i, j)``, ``i < j``, in ``itertools.combinations`` order
    (``self.edges``), the layout of ``pyepo.data.tsp.genData`` and of PyEPO's own
    ``tspGGModel`` / ``tspMTZModel`` / ``tspDFJModel``. Two exact formulations:

    * ``formulation="MTZ"`` (default; compact): Miller-Tucker-Zemlin with directed arc
      binaries ``x_ij`` (``i != j``), in- and out-degree 1 at every node, order variables
      ``1 <= u_i <= n - 1`` for the nodes ``i >= 1`` and the lifted (Desrochers-Laporte)
      rows ``u_i - u_j + (n - 1) x_ij + (n - 3) x_ji <= n - 2`` for ``i, j >= 1`` (no subtour
      avoids node 0). The cost of edge ``(i, j)`` weights ``x_ij + x_ji``; the solution is
      the edge indicator ``x_ij + x_ji``.
    * ``formulation="DFJ"``: undirected edge binaries with degree 2 at every node and
      Dantzig-Fulkerson-Johnson subtour cuts generated as needed (solve, cut every component
      of a disconnected solution, re-solve; the cuts are kept for later solves, being valid
      for every cost). Exact too, and several times faster at 10 to 20 nodes (about 20 ms
      against 110 ms a solve at 10 nodes here).

    ``solve()`` returns the 0/1 edge indicators of an optimal tour and its length, like
    PyEPO's models.
    Any real costs are accepted (negative ones too, as PyEPO's losses produce), ``getTour``
    turns a solution into the node order.

    >>> m = TSPModel(4)
    >>> m.setObj([1.0, 5.0, 1.0, 1.0, 5.0, 1.0]); w, z = m.solve()   # edges 01 02 03 12 13 23
    >>> w.tolist(), z, m.getTour(w)
    ([1.0, 0.0, 1.0, 1.0, 0.0, 1.0], 4.0, [0, 1, 2, 3, 0])
    """

    def __init__(self, num_nodes: int, *, formulation: str = "MTZ",
                 time_limit: float | None = None) -> None:
        owner = "TSPModel"
        n = check_int("num_nodes", num_nodes, owner=owner, low=3)
        self.formulation = check_choice("formulation", formulation, ("MTZ", "DFJ"), owner=owner)
        self.num_nodes = n
        self.nodes = list(range(n))
        self.edges = [(i, j) for i in range(n) for j in range(i + 1, n)]
        self.arcs = [(i, j) for i in range(n) for j in range(n) if i != j]
        self.time_limit = None if time_limit is None else check_real(
            "time_limit", time_limit, owner=owner, low=0.0, closed="neither")
        self._c = np.zeros(len(self.edges))
        super().__init__()

    def __repr__(self) -> str:
        return f"TSPModel({self.num_nodes} nodes, {self.formulation} MILP, HiGHS)"

    @property
    def num_cost(self) -> int:
        return len(self.edges)

    def _getModel(self):
        import scipy.sparse as sp
        from scipy.optimize import Bounds, LinearConstraint

        n, arcs = self.num_nodes, self.arcs
        na = len(arcs)
        nv = na + (n - 1)                      # arc binaries, then u_1 .. u_{n-1}
        edge_of = {e: k for k, e in enumerate(self.edges)}
        self._arc_index = {a: k for k, a in enumerate(arcs)}
        # arc -> edge map: the objective of arc (i, j) is the cost of edge {i, j}
        self._arc_edge = np.array([edge_of[(min(i, j), max(i, j))] for i, j in arcs])
        rows, cols, vals = [], [], []
        for a, (i, j) in enumerate(arcs):
            rows += [i, n + j]                 # out-degree of i, in-degree of j
            cols += [a, a]
            vals += [1.0, 1.0]
        deg = sp.csr_matrix((vals, (rows, cols)), shape=(2 * n, nv))
        rows, cols, vals = [], [], []
        r = 0
        for a, (i, j) in enumerate(arcs):
            if i == 0 or j == 0:
                continue
            # lifted (Desrochers-Laporte) MTZ: u_i - u_j + (n-1) x_ij + (n-3) x_ji <= n - 2
            rows += [r, r, r, r]
            cols += [na + i - 1, na + j - 1, a, self._arc_index[(j, i)]]
            vals += [1.0, -1.0, float(n - 1), float(n - 3)]
            r += 1
        mtz = sp.csr_matrix((vals, (rows, cols)), shape=(r, nv))
        self._constraints = [LinearConstraint(deg, 1.0, 1.0)]
        if r:
            self._constraints.append(LinearConstraint(mtz, -np.inf, float(n - 2)))
        lb = np.concatenate([np.zeros(na), np.ones(n - 1)])
        ub = np.concatenate([np.ones(na), np.full(n - 1, float(n - 1))])
        self._bounds = Bounds(lb, ub)
        self._integrality = np.concatenate([np.ones(na), np.zeros(n - 1)])
        # DFJ: undirected edge binaries, degree 2, subtour cuts added as found (kept: valid
        # for every cost vector, so later solves start with them)
        rows = [i for e in self.edges for i in e]
        cols = [k for k in range(len(self.edges)) for _ in range(2)]
        self._deg2 = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, len(self.edges)))
        self._cuts: list = []
        return None, list(range(len(self.edges)))

    def setObj(self, c) -> None:
        self._c = _cost_vector(c, self.num_cost, "TSPModel.setObj")

    def solve(self):
        from scipy.optimize import milp

        opts: dict = {"presolve": True}
        if self.time_limit is not None:
            opts["time_limit"] = self.time_limit
        if self.formulation == "DFJ":
            return self._solve_dfj(opts)
        na = len(self.arcs)
        obj = np.concatenate([self._c[self._arc_edge], np.zeros(self.num_nodes - 1)])
        res = milp(obj, constraints=self._constraints, bounds=self._bounds,
                   integrality=self._integrality, options=opts)
        if res.x is None:
            raise RuntimeError(f"HiGHS found no tour (status {res.status}: {res.message}).")
        if res.status != 0:
            warn_not_converged("TSPModel.solve", f"HiGHS stopped early ({res.message}); the "
                               "returned tour may not be optimal")
        arc = np.round(res.x[:na])
        w = np.zeros(self.num_cost)
        np.add.at(w, self._arc_edge, arc)
        w = np.minimum(w, 1.0)
        return w.astype(np.float32), float(self._c @ w)

    def _solve_dfj(self, opts):
        """Dantzig-Fulkerson-Johnson by cut generation: solve the degree-2 MILP, add a
        subtour-elimination cut for every component of a disconnected solution, repeat
        until the solution is one tour (then it is optimal: the cuts only remove non-tours)."""
        import scipy.sparse as sp
        from scipy.optimize import Bounds, LinearConstraint, milp

        ne = len(self.edges)
        bounds, integ = Bounds(np.zeros(ne), np.ones(ne)), np.ones(ne)
        while True:
            cons = [LinearConstraint(self._deg2, 2.0, 2.0)]
            if self._cuts:
                A = sp.csr_matrix(np.array([a for a, _ in self._cuts]))
                cons.append(LinearConstraint(A, -np.inf, np.array([b for _, b in self._cuts])))
            res = milp(self._c, constraints=cons, bounds=bounds, integrality=integ, options=opts)
            if res.x is None:
                raise RuntimeError(f"HiGHS found no tour (status {res.status}: {res.message}).")
            w = np.round(res.x)
            comps = _components(w, self.edges, self.num_nodes)
            if len(comps) == 1:
                if res.status != 0:
                    warn_not_converged("TSPModel.solve", f"HiGHS stopped early ({res.message}); "
                                       "the returned tour may not be optimal")
                return w.astype(np.float32), float(self._c @ w)
            known = {a.tobytes() for a, _ in self._cuts}
            for comp in comps:
                inside = np.array([i in comp and j in comp for i, j in self.edges], float)
                if inside.tobytes() in known:   # HiGHS ignored a cut: stop rather than loop
                    raise RuntimeError("TSPModel (DFJ): HiGHS returned a solution violating a "
                                       "subtour cut already in the model; use formulation='MTZ'.")
                self._cuts.append((inside, float(len(comp) - 1)))

    def getTour(self, sol) -> list[int]:
        """The node order ``[0, ..., 0]`` of a 0/1 edge solution (``ValueError`` unless it is
        one Hamiltonian cycle)."""
        return tsp_tour(sol, self.num_nodes)

    def relax(self):
        raise NotImplementedError("TSPModel has no LP relaxation here (MTZ's is weak); "
                                  "use it as an exact MILP.")


def _components(w, edges, n) -> list[set]:
    """Connected components of the graph of the selected edges."""
    parent = list(range(n))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for k, (i, j) in enumerate(edges):
        if w[k] > 0.5:
            parent[find(i)] = find(j)
    comps: dict = {}
    for v in range(n):
        comps.setdefault(find(v), set()).add(v)
    return list(comps.values())


def tsp_tour(sol, num_nodes: int) -> list[int]:
    """The tour ``[0, v1, ..., 0]`` of a 0/1 indicator vector over the edges ``(i, j)``,
    ``i < j`` (``combinations`` order) of ``num_nodes`` nodes; raises ``ValueError`` unless
    the selected edges form one Hamiltonian cycle."""
    owner = "tsp_tour"
    n = check_int("num_nodes", num_nodes, owner=owner, low=3)
    edges = [(i, j) for i in range(n) for j in range(i + 1, n)]
    w = check_array("sol", sol, owner=owner, shape=(len(edges),))
    if not np.all((np.abs(w) < 1e-6) | (np.abs(w - 1) < 1e-6)):
        fail("sol", owner, "a 0/1 edge indicator vector", w)
    nbr: dict = {v: [] for v in range(n)}
    for k, (i, j) in enumerate(edges):
        if w[k] > 0.5:
            nbr[i].append(j)
            nbr[j].append(i)
    if any(len(v) != 2 for v in nbr.values()):
        fail("sol", owner, "one Hamiltonian cycle (every node of degree 2)",
             {v: len(a) for v, a in nbr.items()})
    tour, prev, cur = [0], None, 0
    while True:
        nxt = nbr[cur][0] if nbr[cur][0] != prev else nbr[cur][1]
        if nxt == 0:
            break
        tour.append(nxt)
        prev, cur = cur, nxt
        if len(tour) > n:
            break
    if len(tour) != n:
        fail("sol", owner, "one Hamiltonian cycle, not several subtours",
             f"a cycle through {len(tour)} of {n} nodes")
    return tour + [0]


def tsp_model(num_nodes: int, *, formulation: str = "MTZ",
              time_limit: float | None = None) -> TSPModel:
    """PyEPO's symmetric TSP on ``num_nodes`` nodes as an exact MILP on HiGHS (see
    :class:`TSPModel`; ``"MTZ"`` compact, ``"DFJ"`` subtour cuts generated as needed, much
    faster here); the costs of ``pyepo.data.tsp.genData`` line up with its edges."""
    return TSPModel(num_nodes, formulation=formulation, time_limit=time_limit)


class PortfolioModel(optModel):
    r"""PyEPO's Markowitz portfolio, solved exactly and licence-free (NumPy / SciPy).

    MAXIMIZE :math:`c^\top x` s.t. :math:`\mathbf 1^\top x = 1`, :math:`x \ge 0`,
    :math:`x^\top\Sigma x \le R`, with :math:`R = \gamma\cdot\mathrm{mean}(\Sigma)` (the mean
    of all entries, PyEPO's ``risk_level``; ``gamma=2.25`` is PyEPO's default): the problem of
    PyEPO's ``portfolioModel`` on the ``cov`` of ``pyepo.data.portfolio.genData``. A convex
    QCQP with a Slater point, so the KKT conditions are necessary and sufficient:

    1. if the asset with the largest return is within the risk budget alone, it is optimal
       (the LP vertex);
    2. otherwise the risk budget is active, and on a support :math:`S` the KKT system has
       the closed form :math:`x_S = \Sigma_S^{-1}(c_S-\nu\mathbf 1)/(2\mu)`,
       :math:`\mu = \tfrac12\sqrt{(C-B^2/A)/(R-1/A)}`, :math:`\nu=(B-2\mu)/A`
       (:math:`A=\mathbf 1^\top\Sigma_S^{-1}\mathbf 1`, :math:`B=\mathbf 1^\top\Sigma_S^{-1}c_S`,
       :math:`C=c_S^\top\Sigma_S^{-1}c_S`); an active-set walk over supports (drop a negative
       weight, add the asset with the largest positive reduced return) stops at a point
       where every KKT condition holds (checked by :meth:`kkt_residual`), i.e. the optimum;
    3. should the walk fail, SciPy's SLSQP with analytic gradients (tolerance ``tol``, at most
       ``max_iter`` iterations: SciPy's ``maxiter``, this class's keyword until December 2026,
       still accepted for one release with a ``FutureWarning``) from a strictly feasible anchor, followed by the walk from SLSQP's support, and a guard
       that keeps the point on the simplex and inside the risk budget.

    ``solve()`` returns ``(x, c^T x)``; a ``NotConvergedWarning`` is raised only if SLSQP
    is needed and stops early.
    """

    modelSense = EPO.MAXIMIZE

    def __init__(self, covariance, *, gamma: float = 2.25, tol: float = 1e-12,
                 max_iter: int = 500) -> None:
        owner = "PortfolioModel"
        S = check_array("covariance", covariance, owner=owner, ndim=2)
        if S.shape[0] != S.shape[1] or S.shape[0] < 1:
            fail("covariance", owner, "a square (num_assets, num_assets) matrix", f"shape {S.shape}")
        scale = float(np.abs(S).max())
        if not np.allclose(S, S.T, rtol=1e-8, atol=1e-12 * max(scale, 1e-300)):
            fail("covariance", owner, "symmetric", "a non-symmetric matrix")
        S = 0.5 * (S + S.T)
        eig = np.linalg.eigvalsh(S)
        if eig[0] < -1e-10 * max(abs(eig[-1]), 1e-300) or eig[-1] <= 0:
            fail("covariance", owner, "positive semi-definite (and not zero)",
                 f"smallest eigenvalue {eig[0]:.3g}")
        self.gamma = check_real("gamma", gamma, owner=owner, low=0.0, closed="neither")
        self.tol = check_real("tol", tol, owner=owner, low=0.0, closed="neither")
        self.max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
        self.covariance = S
        self.num_assets = S.shape[0]
        self.risk_level = float(self.gamma * np.mean(S))
        if self.risk_level <= 0:
            fail("covariance", owner, "a matrix with a positive mean entry (PyEPO's risk budget "
                 "is gamma * mean(covariance))", f"mean {np.mean(S):.3g}")
        self._anchor = self._strict_anchor(owner)
        self._c = np.zeros(self.num_assets)
        super().__init__()

    def __repr__(self) -> str:
        return (f"PortfolioModel({self.num_assets} assets, gamma={self.gamma:g}, "
                "exact KKT active set, SciPy SLSQP fallback)")

    @property
    def num_cost(self) -> int:
        return self.num_assets

    def _getModel(self):
        return None, list(range(self.num_assets))

    def _strict_anchor(self, owner):
        """A point of the simplex strictly inside the risk budget (raises when none exists)."""
        m, S, R = self.num_assets, self.covariance, self.risk_level
        u = np.full(m, 1.0 / m)
        if u @ S @ u < R * (1 - 1e-6):
            return u
        from scipy.optimize import minimize

        res = minimize(lambda x: x @ S @ x / R, u, jac=lambda x: 2 * S @ x / R, method="SLSQP",
                       bounds=[(0.0, 1.0)] * m,
                       constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0,
                                     "jac": lambda x: np.ones(m)}],
                       options={"ftol": 1e-14, "maxiter": 1000})
        x = np.clip(res.x, 0.0, None)
        x /= x.sum()
        if x @ S @ x >= R * (1 - 1e-6):
            fail("gamma", owner, "large enough that some portfolio meets the risk budget "
                 "gamma * mean(covariance) strictly (minimum variance "
                 f"{x @ S @ x:.4g} vs budget {R:.4g})", self.gamma)
        return x

    def setObj(self, c) -> None:
        self._c = _cost_vector(c, self.num_cost, "PortfolioModel.setObj")

    def solve(self):
        from scipy.optimize import minimize

        c, S, R, m = self._c, self.covariance, self.risk_level, self.num_assets
        k = int(np.argmax(c))
        if S[k, k] <= R:                       # the best single asset is within budget: LP vertex
            x = np.zeros(m)
            x[k] = 1.0
            return x.astype(np.float32), float(c[k])
        s = max(float(np.abs(c).max()), 1e-300)
        x = self._active_set(np.ones(m, bool))
        if x is not None:
            return x.astype(np.float32), float(c @ x)
        res = minimize(lambda x: -(c @ x) / s, self._anchor, jac=lambda x: -c / s,
                       method="SLSQP", bounds=[(0.0, 1.0)] * m,
                       constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0,
                                     "jac": lambda x: np.ones(m)},
                                    {"type": "ineq", "fun": lambda x: 1.0 - x @ S @ x / R,
                                     "jac": lambda x: -2.0 * (S @ x) / R}],
                       options={"ftol": self.tol, "maxiter": self.max_iter})
        x = self._feasible(res.x)
        polished = self._active_set(x > 1e-7 * x.max())
        if polished is not None and c @ polished >= c @ x - 1e-12 * s:
            x = polished
        elif not res.success:
            warn_not_converged("PortfolioModel.solve", f"SLSQP stopped ({res.message}); the "
                               "returned portfolio is feasible but may not be optimal")
        return x.astype(np.float32), float(c @ x)

    def _active_set(self, support):
        """Exact KKT point by an active-set walk over supports, from ``support``: the
        closed-form risk-active solution on the support (see the class docstring); drop the
        most negative weight, or add the zero-weight asset with the most positive reduced
        return ``c_j - nu - 2 mu (Σx)_j``, until every KKT condition holds. None when the walk
        fails (no closed form on a support, or too many steps); SLSQP is used then."""
        c, S, R = self._c, self.covariance, self.risk_level
        s = max(float(np.abs(c).max()), 1e-300)
        sup = np.asarray(support, bool).copy()
        seen = set()
        for _ in range(4 * self.num_assets):
            key = sup.tobytes()
            if key in seen or not sup.any():
                return None
            seen.add(key)
            out = _risk_active_kkt(c, S, R, sup, allow_negative=True)
            if out is None:
                return None
            x, nu, mu = out
            if (x[sup] < 0).any():
                idx = np.flatnonzero(sup)
                sup[idx[np.argmin(x[idx])]] = False
                continue
            red = c - nu - 2 * mu * (S @ x)
            red[sup] = -np.inf
            j = int(np.argmax(red))
            if red[j] > 1e-10 * s:
                sup[j] = True
                continue
            return x if self.kkt_residual(x, nu=nu, mu=mu)["max"] <= 1e-8 else None
        return None

    def _feasible(self, x):
        """Clip to the simplex; if the risk budget is exceeded, move toward the anchor."""
        S, R, a = self.covariance, self.risk_level, self._anchor
        x = np.clip(np.asarray(x, float), 0.0, None)
        x = x / x.sum() if x.sum() > 0 else a.copy()
        if x @ S @ x <= R:
            return x
        # largest t in [0, 1] with (a + t (x - a))' S (a + t (x - a)) <= R
        d = x - a
        qa, qb, qc = d @ S @ d, 2 * a @ S @ d, a @ S @ a - R
        t = (-qb + np.sqrt(max(qb * qb - 4 * qa * qc, 0.0))) / (2 * qa)
        return a + min(max(t, 0.0), 1.0) * (1 - 1e-12) * d

    def kkt_residual(self, x, *, nu: float | None = None, mu: float | None = None) -> dict:
        """The KKT conditions of ``x`` for the current objective ``c``: primal feasibility
        (``budget`` |1'x - 1|, ``sign`` max(-x), ``risk`` excess of x'Σx/R over 1),
        ``stationarity`` (of ``c - nu 1 - 2 mu Σx + eta = 0`` with ``eta >= 0`` on the zero
        weights and ``eta = 0`` on the others: the residual on the positive weights and the
        positive part on the zero ones), ``mu_sign`` (mu >= 0), ``slack`` (mu times the risk
        slack); stationarity relative to max|c|. Multipliers not given are fitted by least
        squares on the positive weights (``mu = 0`` when the budget is slack). ``"max"`` is
        the largest entry: 0 up to rounding at the optimum (the problem is convex and the
        anchor is a Slater point, so KKT is necessary and sufficient)."""
        c, S, R = self._c, self.covariance, self.risk_level
        x = np.asarray(x, float)
        s = max(float(np.abs(c).max()), 1e-300)
        g = 2 * S @ x
        risk = float(x @ S @ x / R)
        zero = x <= 1e-9 * max(float(x.max()), 1e-300)
        pos = ~zero
        if nu is None or mu is None:
            if risk >= 1 - 1e-6:
                coef, *_ = np.linalg.lstsq(np.column_stack([np.ones(pos.sum()), g[pos]]),
                                           c[pos], rcond=None)
                nu, mu = float(coef[0]), float(coef[1])
            else:
                nu, mu = float(np.mean(c[pos])), 0.0
        r = c - nu - mu * g
        stat = max(float(np.abs(r[pos]).max(initial=0.0)),
                   float(np.clip(r[zero], 0.0, None).max(initial=0.0)))
        gscale = float(np.abs(g).max()) * abs(mu) / s
        out = {"budget": abs(float(x.sum()) - 1.0), "sign": float(np.clip(-x, 0, None).max()),
               "risk": max(risk - 1.0, 0.0), "mu_sign": max(-mu, 0.0) * float(np.abs(g).max()) / s,
               "slack": abs(1.0 - risk) * gscale if mu > 0 else 0.0, "stationarity": stat / s}
        out["max"] = max(out.values())
        return out


# outside the class body: PyEPO's optModel.__init_subclass__ wraps __init__ to record its
# arguments by the new signature, so the old keyword must be mapped before that wrapper runs
PortfolioModel.__init__ = renamed_kwargs("PortfolioModel", maxiter="max_iter")(PortfolioModel.__init__)


def _risk_active_kkt(c, S, R, support, *, allow_negative=False):
    """Closed-form maximiser of ``c_S' x`` s.t. ``1' x = 1``, ``x' S_S x = R`` on ``support``
    (zeros elsewhere), or None when it does not exist or has a negative weight."""
    idx = np.flatnonzero(support)
    if len(idx) == 0:
        return None
    Ss, cs = S[np.ix_(idx, idx)], c[idx]
    try:
        inv1 = np.linalg.solve(Ss, np.ones(len(idx)))
        invc = np.linalg.solve(Ss, cs)
    except np.linalg.LinAlgError:
        return None
    A, B, C = inv1.sum(), cs @ inv1, cs @ invc
    spread, room = C - B * B / A, R - 1.0 / A
    if spread <= 0 or room <= 0:
        return None
    mu = 0.5 * np.sqrt(spread / room)
    nu = (B - 2 * mu) / A
    xs = (invc - nu * inv1) / (2 * mu)
    if (xs < 0).any() and not allow_negative:
        return None
    x = np.zeros(len(c))
    x[idx] = xs
    return x, float(nu), float(mu)


def portfolio_model(cov, gamma: float = 2.25, **kwargs) -> PortfolioModel:
    """PyEPO's portfolio problem on the covariance ``cov`` of ``pyepo.data.portfolio.genData``
    (MAXIMIZE expected return, full investment, no short sales, risk
    ``x' cov x <= gamma * mean(cov)``), solved licence-free (see :class:`PortfolioModel`)."""
    return PortfolioModel(cov, gamma=gamma, **kwargs)
