"""What D&L is compared with, every baseline evaluating through the same counting Oracle.

* :func:`pymoo_baseline` — real pymoo NSGA-II / MOEA/D with the spec's operators (permutation:
  random permutation sampling, order crossover, inversion mutation; binary: random sampling,
  two-point crossover, bit-flip mutation and a greedy capacity repair; categorical: integer
  random sampling, uniform crossover and a random-reset mutation of our own).
* :func:`random_search` — uniform feasible samples.
* :func:`optuna_baseline` — optuna's TPE / NSGA-II samplers (MOBO-like), only if optuna is
  installed (it is not a dependency of optzoo).
* :func:`ws_tsp_front` — the specialised TSP reference: weighted-sum scalarisation solved by
  LKH-3 through ``elkai`` when it is importable, else by our own best-improvement 2-opt with
  random restarts ("WS-2opt"); the name of the solver used is returned.
* :func:`exact_knapsack_front` — the exact bi-objective knapsack Pareto front by the
  epsilon-constraint method with ``scipy.optimize.milp`` (two lexicographic MILPs per point).
* :func:`ws_cvrp_front` — the specialised Bi-CVRP reference: weighted-sum scalarisation of
  (total distance, makespan) solved by Google OR-Tools routing (guided local search, a fixed
  time limit per weight); needs ``ortools`` (in the ``baselines`` extra).
"""

from __future__ import annotations

import numpy as np

from optzoo._core.rng import np_rng
from optzoo._core.validation import check_array, check_bool, check_int, check_real, fail

from .metrics import nondominated_mask
from .spaces import BudgetExhausted, Oracle

__all__ = ["pymoo_baseline", "random_search", "optuna_baseline", "ws_tsp_front",
           "exact_knapsack_front", "ws_cvrp_front", "two_opt"]


def _pymoo_parts(space, seed):
    from pymoo.core.mutation import Mutation
    from pymoo.core.repair import Repair

    if space.kind == "permutation":
        from pymoo.operators.crossover.ox import OrderCrossover
        from pymoo.operators.mutation.inversion import InversionMutation
        from pymoo.operators.sampling.rnd import PermutationRandomSampling
        return dict(sampling=PermutationRandomSampling(), crossover=OrderCrossover(),
                    mutation=InversionMutation())
    if space.kind == "binary":
        from pymoo.operators.crossover.pntx import TwoPointCrossover
        from pymoo.operators.mutation.bitflip import BitflipMutation
        from pymoo.operators.sampling.rnd import BinaryRandomSampling

        class CapacityRepair(Repair):
            """Drop the items with the smallest index-order priority until feasible."""

            def _do(self, problem, X, **kwargs):
                X = np.asarray(X).astype(bool)
                for row in X:
                    if not space.feasible(row.astype(np.int64)):
                        ones = np.flatnonzero(row)
                        # greedy on weight: drop the heaviest items first
                        for p in ones[np.argsort(-space.weights[ones])] if space.weights is not None else ones:
                            row[p] = False
                            if space.feasible(row.astype(np.int64)):
                                break
                return X

        return dict(sampling=BinaryRandomSampling(), crossover=TwoPointCrossover(),
                    mutation=BitflipMutation(), repair=CapacityRepair())
    from pymoo.operators.crossover.ux import UniformCrossover
    from pymoo.operators.sampling.rnd import IntegerRandomSampling

    class ResetMutation(Mutation):
        def _do(self, problem, X, **kwargs):
            X = np.asarray(X).copy()
            flip = np.random.random(X.shape) < 1.0 / X.shape[1]
            X[flip] = (np.random.random(X.shape) * space.sizes[None, :])[flip].astype(X.dtype)
            return X

    return dict(sampling=IntegerRandomSampling(), crossover=UniformCrossover(),
                mutation=ResetMutation())


def _pymoo_problem(oracle: Oracle):
    from pymoo.core.problem import Problem

    space = oracle.problem.space
    hi = {"permutation": space.n - 1, "binary": 1}.get(space.kind)
    xu = np.full(space.n, hi) if hi is not None else space.sizes - 1

    class Counted(Problem):
        def __init__(self):
            super().__init__(n_var=space.n, n_obj=oracle.problem.n_objectives, xl=0, xu=xu,
                             vtype=int)

        def _evaluate(self, X, out, *args, **kwargs):
            out["F"] = np.stack([oracle(np.asarray(x).astype(np.int64)) for x in X])

    return Counted()


def pymoo_baseline(problem, budget: int, *, algorithm: str = "nsga2", pop_size: int = 100,
                   seed: int = 0) -> Oracle:
    """Run pymoo NSGA-II or MOEA/D until ``budget`` distinct evaluations; returns the Oracle."""
    from pymoo.optimize import minimize

    oracle = Oracle(problem, budget, owner="pymoo_baseline")
    parts = _pymoo_parts(problem.space, seed)
    if algorithm == "nsga2":
        from pymoo.algorithms.moo.nsga2 import NSGA2
        alg = NSGA2(pop_size=pop_size, eliminate_duplicates=True, **parts)
    elif algorithm == "moead":
        from pymoo.util.ref_dirs import get_reference_directions
        m = problem.n_objectives
        ref_dirs = (get_reference_directions("uniform", 2, n_partitions=pop_size - 1) if m == 2
                    else get_reference_directions("das-dennis", m, n_partitions=12))  # 91 directions
        parts.pop("repair", None)  # MOEA/D's loop has no repair hook: repair inside sampling/mutation
        if problem.space.kind == "binary":
            parts = _binary_with_repair(parts, problem.space)
        # ParallelMOEAD: pymoo's MOEA/D evaluating a whole generation per batch; the sequential
        # MOEAD evaluates one offspring per loop step and costs ~9 ms per evaluation here.
        from pymoo.algorithms.moo.moead import ParallelMOEAD
        alg = ParallelMOEAD(ref_dirs, n_neighbors=15, prob_neighbor_mating=0.7, **parts)
    else:
        raise ValueError(f"The 'algorithm' argument of pymoo_baseline must be 'nsga2' or 'moead'. "
                         f"Got {algorithm!r}.")
    try:
        minimize(_pymoo_problem(oracle), alg, ("n_evals", 100 * budget), seed=seed, verbose=False)
    except BudgetExhausted:
        pass
    return oracle


def _binary_with_repair(parts, space):
    from pymoo.core.mutation import Mutation
    from pymoo.core.sampling import Sampling

    def fix(X):
        X = np.asarray(X).astype(bool)
        for row in X:
            ones = np.flatnonzero(row)
            for p in ones[np.argsort(-space.weights[ones])]:
                if space.feasible(row.astype(np.int64)):
                    break
                row[p] = False
        return X

    base_s, base_m = parts["sampling"], parts["mutation"]

    class S(Sampling):
        def _do(self, problem, n_samples, **kwargs):
            return fix(base_s._do(problem, n_samples, **kwargs))

    class M(Mutation):
        def _do(self, problem, X, **kwargs):
            return fix(base_m._do(problem, X, **kwargs))

    return dict(sampling=S(), crossover=parts["crossover"], mutation=M())


def random_search(problem, budget: int, *, seed: int = 0) -> Oracle:
    """Uniform feasible samples until ``budget`` distinct evaluations (or 20x budget draws)."""
    oracle = Oracle(problem, budget, owner="random_search")
    rng = np_rng(seed, "random_search")
    for _ in range(20 * budget):
        if oracle.remaining <= 0:
            break
        oracle(problem.space.random(rng))
    return oracle


def optuna_baseline(problem, budget: int, *, sampler: str = "tpe", seed: int = 0) -> Oracle:
    """optuna multi-objective TPE / NSGA-II sampler (random-key encoding for permutations)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    oracle = Oracle(problem, budget, owner="optuna_baseline")
    space = problem.space
    smp = (optuna.samplers.TPESampler(seed=seed) if sampler == "tpe"
           else optuna.samplers.NSGAIISampler(seed=seed))
    study = optuna.create_study(directions=["minimize"] * problem.n_objectives, sampler=smp)

    def objective(trial):
        if space.kind == "permutation":
            keys = np.array([trial.suggest_float(f"k{p}", 0.0, 1.0) for p in range(space.n)])
            x = np.argsort(keys)
        elif space.kind == "binary":
            x = np.array([trial.suggest_int(f"b{p}", 0, 1) for p in range(space.n)])
            if not space.feasible(x):
                ones = np.flatnonzero(x)
                for p in ones[np.argsort(-space.weights[ones])]:
                    x[p] = 0
                    if space.feasible(x):
                        break
        else:
            x = np.array([trial.suggest_int(f"c{p}", 0, int(s) - 1) for p, s in enumerate(space.sizes)])
        return tuple(oracle(x))

    for _ in range(5 * budget):
        if oracle.remaining <= 0:
            break
        try:
            study.optimize(objective, n_trials=1)
        except BudgetExhausted:
            break
    return oracle


def two_opt(D: np.ndarray, tour: np.ndarray, max_iter: int = 10_000) -> np.ndarray:
    """Best-improvement 2-opt (vectorised move evaluation) from ``tour`` on matrix ``D``."""
    t = np.asarray(tour).copy()
    n = t.size
    i, j = np.triu_indices(n, 2)
    ok = ~((i == 0) & (j == n - 1))
    i, j = i[ok], j[ok]
    for _ in range(max_iter):
        a, b, c, d = t[i], t[(i + 1) % n], t[j], t[(j + 1) % n]
        delta = D[a, c] + D[b, d] - D[a, b] - D[c, d]
        k = int(np.argmin(delta))
        if delta[k] >= -1e-12:
            break
        t[i[k] + 1: j[k] + 1] = t[i[k] + 1: j[k] + 1][::-1].copy()
    return t


def ws_tsp_front(problem, weights: np.ndarray, *, restarts: int = 5, seed: int = 0,
                 use_elkai: bool = True) -> tuple[np.ndarray, str]:
    """Weighted-sum TSP front: one single-objective tour per weight. Returns (F, solver name)."""
    dist = problem.info["dist"]
    solver = "WS-2opt"
    elkai = None
    if use_elkai:
        try:
            import elkai  # noqa: F401
            solver = "WS-LKH (elkai)"
        except ImportError:
            elkai = None
    rng = np_rng(seed, "ws_tsp")
    from .problems import tour_lengths

    out = []
    for w in np.asarray(weights, dtype=float):
        D = np.tensordot(w, dist, axes=1)
        if solver.startswith("WS-LKH"):
            import elkai

            M = np.rint(D * 1e5).astype(int)
            tour = np.array(elkai.DistanceMatrix(M.tolist()).solve_tsp()[:-1])
        else:
            tours = [two_opt(D, rng.permutation(problem.n)) for _ in range(restarts)]
            tour = min(tours, key=lambda tt: float(tour_lengths(D[None], tt)[0, 0]))
        out.append(tour_lengths(dist, tour)[0])
    F = np.array(out)
    return F[nondominated_mask(F)], solver


def exact_knapsack_front(problem, *, max_points: int = 5000) -> np.ndarray:
    """Exact Pareto front of the bi-objective knapsack (maximise), epsilon-constraint + milp.

    Each point solves max v0 + 1e-6 v1 s.t. capacity and v1 >= eps to optimality
    (``mip_rel_gap = 0``): any point dominating the optimum would be feasible with a strictly
    larger objective, so every optimum is non-dominated; eps then moves just past its v1, so
    successive optima sweep the front from the v0-best end. Returns values (problem's sense).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    v = problem.info["values"]
    w = problem.info["weights"]
    cap = problem.info["capacity"]
    n = w.size
    opts = {"mip_rel_gap": 0.0}
    bounds, integ = Bounds(0, 1), np.ones(n)
    A = np.stack([w, v[1]])  # one stacked constraint (milp reads a 2-list of constraints badly)
    pts, eps = [], -np.inf
    for _ in range(max_points):
        r = milp(-(v[0] + 1e-6 * v[1]), constraints=LinearConstraint(A, [-np.inf, eps], [cap, np.inf]),
                 integrality=integ, bounds=bounds, options=opts)
        if not r.success:
            break
        x = np.round(r.x)
        pts.append(v @ x)
        # Step past HiGHS's 1e-7 feasibility tolerance; two front points closer than 1e-5 in
        # v1 (probability ~0 with continuous random values) would be merged.
        eps = float(v[1] @ x) + 1e-5
    return np.array(pts)


#: Integer scale of distances inside OR-Tools (costs are int64): 1e4 per unit of the unit square.
CVRP_DIST_SCALE = 10_000
#: Integer resolution of the weights: w -> round(w * CVRP_WEIGHT_SCALE), floored at 1.
CVRP_WEIGHT_SCALE = 1000


def _cvrp_solve(dist_int, demand, capacity, a, b, time_limit_s, solution_limit):
    """One OR-Tools run: minimise a * total distance + b * longest route -> list of routes."""
    from ortools.constraint_solver import pywrapcp, routing_enums_pb2

    n_nodes = dist_int.shape[0]
    n_vehicles = n_nodes - 1  # an unlimited fleet: one route per customer at most
    manager = pywrapcp.RoutingIndexManager(n_nodes, n_vehicles, 0)
    routing = pywrapcp.RoutingModel(manager)
    D = dist_int.tolist()
    dem = [0] + [int(d) for d in demand]

    def arc(i, j):
        return D[manager.IndexToNode(i)][manager.IndexToNode(j)]

    def weighted_arc(i, j):
        return a * D[manager.IndexToNode(i)][manager.IndexToNode(j)]

    def load(i):
        return dem[manager.IndexToNode(i)]

    routing.SetArcCostEvaluatorOfAllVehicles(routing.RegisterTransitCallback(weighted_arc))
    horizon = int(dist_int.max()) * n_nodes * 2
    routing.AddDimension(routing.RegisterTransitCallback(arc), 0, horizon, True, "distance")
    # span cost = b * (max end cumul - min start cumul) = b * the longest route (starts at 0)
    routing.GetDimensionOrDie("distance").SetGlobalSpanCostCoefficient(b)
    routing.AddDimensionWithVehicleCapacity(routing.RegisterUnaryTransitCallback(load), 0,
                                            [int(capacity)] * n_vehicles, True, "load")
    params = pywrapcp.DefaultRoutingSearchParameters()
    params.first_solution_strategy = routing_enums_pb2.FirstSolutionStrategy.PATH_CHEAPEST_ARC
    params.local_search_metaheuristic = routing_enums_pb2.LocalSearchMetaheuristic.GUIDED_LOCAL_SEARCH
    params.time_limit.FromMilliseconds(max(1, int(round(time_limit_s * 1000))))
    if solution_limit is not None:
        params.solution_limit = solution_limit
    sol = routing.SolveWithParameters(params)
    if sol is None:
        return None
    routes = []
    for v in range(n_vehicles):
        i, r = routing.Start(v), []
        while not routing.IsEnd(i):
            node = manager.IndexToNode(i)
            if node:
                r.append(node - 1)  # customer index 0..n-1
            i = sol.Value(routing.NextVar(i))
        if r:
            routes.append(np.array(r, dtype=np.int64))
    return routes


def ws_cvrp_front(problem, weights, *, time_limit_s: float = 1.0, solution_limit: int | None = None,
                  return_routes: bool = False):
    """Weighted-sum Bi-CVRP front by OR-Tools routing: one solve per weight ``w = (w0, w1)``.

    Each solve minimises ``w0 * total distance + w1 * makespan`` over *any* capacity-feasible
    set of routes (unlimited fleet): the distance is the arc cost, and a distance dimension's
    global span cost (coefficient ``w1``) charges the longest route. Distances are scaled by
    :data:`CVRP_DIST_SCALE` and rounded to integers, weights by :data:`CVRP_WEIGHT_SCALE`
    (floored at 1, so the end weights break ties by the other objective). Search: first
    solution PATH_CHEAPEST_ARC, then guided local search until ``time_limit_s`` seconds (or
    ``solution_limit`` solutions, if given). OR-Tools routing takes no random seed: the search
    is deterministic, but with a time limit how far it gets depends on the machine's speed.

    Objectives are recomputed in floating point from the returned routes
    (:func:`~optzoo.mo_bandit.problems.route_objectives`). Returns ``(F, solver name)`` with
    ``F`` the non-dominated objective vectors (k, 2); with ``return_routes=True`` also the
    routes of each row of ``F``. The routes need not be reachable by the permutation +
    greedy-split encoding of :func:`~optzoo.mo_bandit.problems.bi_cvrp`.
    """
    owner = "ws_cvrp_front"
    if not hasattr(problem, "info") or not {"dist", "demand", "capacity"} <= set(problem.info):
        fail("problem", owner, "a Bi-CVRP MOProblem from bi_cvrp (info with dist, demand and "
             "capacity)", getattr(problem, "name", type(problem).__name__), exc=TypeError)
    W = check_array("weights", weights, owner=owner, shape=(None, 2))
    if (W < 0).any() or not np.allclose(W.sum(1), 1.0, atol=1e-6):
        fail("weights", owner, "a (k, 2) array of non-negative rows summing to 1", weights)
    time_limit_s = check_real("time_limit_s", time_limit_s, owner=owner, low=0.0, closed="neither")
    if solution_limit is not None:
        solution_limit = check_int("solution_limit", solution_limit, owner=owner, low=1)
    check_bool("return_routes", return_routes, owner=owner)
    try:
        import ortools  # noqa: F401
    except ImportError as err:  # pragma: no cover - ortools is in the baselines extra
        raise ImportError("ws_cvrp_front needs Google OR-Tools: pip install 'optzoo[baselines]' "
                          "(or pip install ortools)") from err
    from .problems import route_objectives

    dist = problem.info["dist"]
    dist_int = np.rint(dist * CVRP_DIST_SCALE).astype(np.int64)
    F, R = [], []
    for w in W:
        a = max(1, int(round(w[0] * CVRP_WEIGHT_SCALE)))
        b = max(1, int(round(w[1] * CVRP_WEIGHT_SCALE)))
        routes = _cvrp_solve(dist_int, problem.info["demand"], problem.info["capacity"], a, b,
                             time_limit_s, solution_limit)
        if routes is None:  # pragma: no cover - PATH_CHEAPEST_ARC always finds a solution here
            continue
        F.append(route_objectives(dist, routes))
        R.append(routes)
    F = np.array(F).reshape(-1, 2)
    keep = nondominated_mask(F)
    solver = "WS-OR-Tools routing"
    if return_routes:
        return F[keep], solver, [r for r, k in zip(R, keep, strict=True) if k]
    return F[keep], solver
