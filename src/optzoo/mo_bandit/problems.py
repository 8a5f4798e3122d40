"""Built-in problems: the official code's MOCO generators, a separable categorical bandit with
known optimum, and a toy accelerator design model (OUR OWN analytic model, not the paper's).

Generators follow the official ``MOCO/problems.py`` as described in the spec: Bi/Tri-TSP give
every objective its own i.i.d. U[0,1]^2 city coordinates (Euclidean tour length); the
bi-objective knapsack draws item weights and two value vectors from U[0,1]; Bi-CVRP draws a depot
and n customers in U[0,1]^2 with integer demands U{1..9} (objectives: total distance and makespan,
the length of the longest route). Reference and ideal points are the paper's / PMOCO's (see
:data:`TSP_REF`, :data:`KP_REF`, :data:`CVRP_REF`).
"""

from __future__ import annotations

import numpy as np

from optzoo._core.rng import np_rng
from optzoo._core.validation import check_int, check_real

from .spaces import Binary, Categorical, MOProblem, Permutation

__all__ = ["mo_tsp", "bi_tsp", "tri_tsp", "bi_knapsack", "bi_cvrp", "separable_categorical",
           "toy_accelerator", "tour_lengths", "cvrp_objectives", "split_routes", "route_objectives"]

#: HV reference points (ideal 0) of Bi/Tri-TSP by number of cities (official code / PMOCO).
TSP_REF = {20: 20.0, 50: 35.0, 100: 65.0, 150: 85.0, 200: 115.0}
#: Bi-KP (maximise) reference and ideal points by number of items; capacity by number of items.
KP_REF = {50: (5.0, 30.0), 100: (20.0, 50.0), 200: (30.0, 75.0)}
KP_CAPACITY = {50: 12.5, 100: 25.0, 200: 25.0}
#: Bi-CVRP (minimise total distance, makespan) reference points by number of customers (ideal 0).
CVRP_REF = {20: (30.0, 4.0), 50: (45.0, 4.0), 100: (80.0, 4.0)}
#: Bi-CVRP vehicle capacity by number of customers: 20/50/100 from the official generator;
#: 10 -> 20 is the convention of Kool et al. (ICLR 2019) that the MOCO generators follow (INFERRED).
CVRP_CAPACITY = {10: 20.0, 20: 30.0, 50: 40.0, 100: 50.0}
#: Largest customer demand (demands are U{1..9}); a capacity below it could not serve a customer.
CVRP_MAX_DEMAND = 9


def tour_lengths(dist: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Tour lengths of permutations ``X`` (k, n) under distance matrices ``dist`` (m, n, n) -> (k, m)."""
    X = np.atleast_2d(X)
    nxt = np.roll(X, -1, axis=1)
    return dist[:, X, nxt].sum(-1).T


def mo_tsp(n: int = 20, m: int = 2, *, seed: int = 0) -> MOProblem:
    """m-objective TSP on n cities; objective i uses its own U[0,1]^2 coordinates."""
    n = check_int("n", n, owner="mo_tsp", low=3)
    m = check_int("m", m, owner="mo_tsp", low=1)
    rng = np_rng(seed, "mo_tsp", n, m)
    coords = rng.random((m, n, 2))
    dist = np.linalg.norm(coords[:, :, None, :] - coords[:, None, :, :], axis=-1)

    def evaluate(x):
        return tour_lengths(dist, np.asarray(x))[0]

    r = TSP_REF.get(n, float(np.ceil(n * 0.75)))
    return MOProblem(Permutation(n), evaluate, m, name=f"{'Bi' if m == 2 else 'Tri' if m == 3 else m}-TSP-{n}",
                     ref_point=np.full(m, r), ideal_point=np.zeros(m), coords=coords[0],
                     info={"dist": dist, "coords": coords, "seed": seed})


def bi_tsp(n: int = 20, *, seed: int = 0) -> MOProblem:
    """Bi-objective TSP (Lust & Teghem style random instance, as in the official code)."""
    return mo_tsp(n, 2, seed=seed)


def tri_tsp(n: int = 20, *, seed: int = 0) -> MOProblem:
    """Tri-objective TSP."""
    return mo_tsp(n, 3, seed=seed)


def bi_knapsack(n: int = 50, *, capacity: float | None = None, seed: int = 0) -> MOProblem:
    """Bi-objective 0/1 knapsack (maximise both values) under one weight constraint.

    Capacity default: 12.5 for n = 50 (PMOCO convention, INFERRED; the code default 25 is for
    100/200 items), 25 otherwise.
    """
    n = check_int("n", n, owner="bi_knapsack", low=1)
    cap = KP_CAPACITY.get(n, 25.0) if capacity is None else check_real(
        "capacity", capacity, owner="bi_knapsack", low=0.0)
    rng = np_rng(seed, "bi_knapsack", n)
    weights = rng.random(n)
    values = rng.random((2, n))

    def evaluate(x):
        return values @ np.asarray(x, dtype=float)

    ref, ideal = KP_REF.get(n, (0.0, float(values.sum(1).max())))
    return MOProblem(Binary(n, weights=weights, capacity=cap), evaluate, 2, sense=("max", "max"),
                     name=f"Bi-KP-{n}", ref_point=np.full(2, ref), ideal_point=np.full(2, ideal),
                     info={"weights": weights, "values": values, "capacity": cap, "seed": seed})


def _cvrp_split_starts(dem: np.ndarray, capacity: float) -> np.ndarray:
    """Greedy split of demand rows ``dem`` (k, n): True where a position opens a new route.

    A route takes the next customers in order while its load stays <= capacity, so a route
    starting at position s ends before the first e with load(s..e) > capacity. One vectorised
    step per route (not per position): the prefix sums C give the end of every row's current
    route as the number of prefix sums <= C[s] + capacity (demands must be positive).
    """
    k, n = dem.shape
    C = np.concatenate([np.zeros((k, 1)), np.cumsum(dem, axis=1)], axis=1)  # (k, n + 1)
    starts = np.zeros((k, n), dtype=bool)
    rows = np.arange(k)
    s = np.zeros(k, dtype=np.int64)
    live = rows
    while live.size:
        starts[live, s[live]] = True
        lim = C[live, s[live]] + capacity + 1e-9
        # first position past the route (at least one customer: one heavier than the capacity
        # gets a route of its own, so the loop always advances)
        s[live] = np.maximum((C[live] <= lim[:, None]).sum(1) - 1, s[live] + 1)
        live = live[s[live] < n]
    return starts


def cvrp_objectives(dist: np.ndarray, demand: np.ndarray, capacity: float, X: np.ndarray) -> np.ndarray:
    """(total distance, makespan) of customer orders ``X`` (k, n) decoded by the greedy split -> (k, 2).

    ``dist`` is the (n+1, n+1) distance matrix with the depot as node 0 and customer ``c`` (a
    value ``0..n-1`` of the permutation) as node ``c + 1``; ``demand`` (n,) is indexed by the
    permutation's values. Routes are read off in order (:func:`split_routes`); each starts and
    ends at the depot; the makespan is the length of the longest route. Vectorised over rows.
    """
    X = np.atleast_2d(np.asarray(X, dtype=np.int64))
    k, n = X.shape
    starts = _cvrp_split_starts(np.asarray(demand, dtype=float)[X], capacity)
    nodes = X + 1
    prev = np.concatenate([np.zeros((k, 1), dtype=np.int64), nodes[:, :-1]], axis=1)
    prev[starts] = 0  # a new route leaves the depot
    ends = np.concatenate([starts[:, 1:], np.ones((k, 1), dtype=bool)], axis=1)
    leg = dist[prev, nodes] + np.where(ends, dist[nodes, 0], 0.0)  # arrive at p (+ back home)
    route = np.cumsum(starts, axis=1) - 1  # route index of each position, per row
    lengths = np.bincount((np.arange(k)[:, None] * n + route).ravel(), leg.ravel(), minlength=k * n)
    return np.stack([leg.sum(1), lengths.reshape(k, n).max(1)], axis=1)


def split_routes(x, demand: np.ndarray, capacity: float) -> list[np.ndarray]:
    """Routes (arrays of customer indices ``0..n-1``, in visiting order) of one customer order
    ``x`` under the greedy split: start a new route when the next customer would exceed the
    capacity. The decoding :func:`bi_cvrp` evaluates (INFERRED, see its docstring)."""
    x = np.asarray(x, dtype=np.int64)
    starts = _cvrp_split_starts(np.asarray(demand, dtype=float)[x][None, :], capacity)[0]
    return np.split(x, np.flatnonzero(starts)[1:])


def route_objectives(dist: np.ndarray, routes) -> np.ndarray:
    """(total distance, makespan) of explicit routes (customer indices ``0..n-1``; node 0 is the
    depot of ``dist``); empty routes are ignored. Used for routes from any solver."""
    lengths = []
    for r in routes:
        nodes = np.concatenate([[0], np.asarray(r, dtype=np.int64) + 1, [0]])
        if nodes.size > 2:
            lengths.append(float(dist[nodes[:-1], nodes[1:]].sum()))
    return np.array([sum(lengths), max(lengths, default=0.0)])


def _cvrp_ref(n: int) -> tuple[float, float]:
    """Reference point for n customers: the paper's for 20/50/100; otherwise OUR rule, the
    distance coordinate interpolated linearly in n through (20, 30), (50, 45), (100, 80),
    held at 30 below 20 and extended with the last slope (0.7 per customer) above 100."""
    if n in CVRP_REF:
        return CVRP_REF[n]
    d = 80.0 + 0.7 * (n - 100) if n > 100 else float(np.interp(n, [20, 50, 100], [30.0, 45.0, 80.0]))
    return d, 4.0


def bi_cvrp(n: int = 20, *, capacity: float | None = None, seed: int = 0) -> MOProblem:
    """Bi-objective CVRP: minimise total distance and makespan (the longest route's length).

    Instance as the official MOCO generator (spec): a depot and ``n`` customers with
    coordinates U[0,1]^2, integer demands U{1..9}, one vehicle capacity (30/40/50 for
    n = 20/50/100, see :data:`CVRP_CAPACITY`; other n: pass ``capacity``, or else it is
    interpolated linearly in n through the table's points (n = 10 -> 20 after Kool et al.),
    held at the end values outside 10..100 -- OUR rule). HV reference (30, 4) / (45, 4) /
    (80, 4) for n = 20/50/100 (other n: :func:`_cvrp_ref`), ideal 0. The fleet is unlimited.

    Encoding: a :class:`Permutation` of the customers (values ``0..n-1``; customer ``c`` is
    node ``c + 1``, the depot node 0 of ``info["dist"]``), decoded into routes by a
    deterministic **greedy split** (INFERRED; the spec does not give the official decoding):
    follow the order and start a new route from the depot whenever the next customer's demand
    would exceed the remaining capacity. Every order is feasible by construction; not every
    CVRP solution is reachable (a route is always closed only when the next customer does not
    fit), so a solver that chooses routes freely (``ws_cvrp_front``) can do better, chiefly
    on makespan. ``info`` holds ``coords`` ((n+1, 2), depot first), ``demand``, ``capacity``,
    ``dist`` and the ``decode`` function (x -> list of routes).
    """
    owner = "bi_cvrp"
    n = check_int("n", n, owner=owner, low=1)
    if capacity is None:
        sizes = sorted(CVRP_CAPACITY)
        cap = CVRP_CAPACITY.get(n, float(np.interp(n, sizes, [CVRP_CAPACITY[s] for s in sizes])))
    else:
        cap = check_real("capacity", capacity, owner=owner, low=float(CVRP_MAX_DEMAND))
    seed = check_int("seed", seed, owner=owner)
    rng = np_rng(seed, "bi_cvrp", n)
    coords = rng.random((n + 1, 2))  # row 0: the depot
    demand = rng.integers(1, CVRP_MAX_DEMAND + 1, size=n)
    dist = np.linalg.norm(coords[:, None, :] - coords[None, :, :], axis=-1)

    def evaluate(x):
        return cvrp_objectives(dist, demand, cap, np.asarray(x))[0]

    def decode(x):
        return split_routes(x, demand, cap)

    return MOProblem(Permutation(n), evaluate, 2, name=f"Bi-CVRP-{n}",
                     ref_point=np.array(_cvrp_ref(n)), ideal_point=np.zeros(2), coords=coords[1:],
                     info={"dist": dist, "coords": coords, "demand": demand, "capacity": cap,
                           "seed": seed, "decode": decode})


def separable_categorical(n: int = 20, k: int = 8, m: int = 2, *, noise: float = 0.1,
                          seed: int = 0) -> MOProblem:
    """Separable categorical problem with known optimum (maximise).

    ``f_i(x) = sum_p theta[i, p, x_p] + eps_i``, ``theta ~ U[0,1]``, ``eps_i ~ N(0, noise^2)``
    (fresh noise on every evaluation, so the oracle cache is disabled for it via the
    ``noisy`` info flag). For any weight ``w`` the scalarised optimum is the per-position argmax
    of ``sum_i w_i theta[i, p, :]``; :func:`separable_optimum` in ``info["optimum"]`` returns it.
    """
    n = check_int("n", n, owner="separable_categorical", low=1)
    k = check_int("k", k, owner="separable_categorical", low=2)
    m = check_int("m", m, owner="separable_categorical", low=1)
    noise = check_real("noise", noise, owner="separable_categorical", low=0.0)
    rng = np_rng(seed, "separable", n, k, m)
    theta = rng.random((m, n, k))
    noise_rng = np_rng(seed, "separable-noise", n, k, m)
    pos = np.arange(n)

    def expected(x):
        return theta[:, pos, np.asarray(x)].sum(-1)

    def evaluate(x):
        return expected(x) + noise * noise_rng.standard_normal(m)

    def optimum(w):
        s = np.tensordot(np.asarray(w, dtype=float), theta, axes=1)
        x = s.argmax(1)
        return x, float(s[pos, x].sum())

    return MOProblem(Categorical([list(range(k))] * n), evaluate, m, sense=("max",) * m,
                     name=f"Separable-{n}x{k}", ref_point=np.zeros(m), ideal_point=np.full(m, float(n)),
                     info={"theta": theta, "expected": expected, "optimum": optimum, "noise": noise,
                           "noisy": noise > 0})


# ---- toy accelerator (OUR analytic model) -------------------------------------------------------
_ACC_OPTIONS = {
    "pe_rows": [4, 8, 16, 32, 64],
    "pe_cols": [4, 8, 16, 32, 64],
    "tile_m": [8, 16, 32, 64, 128, 256],
    "tile_n": [8, 16, 32, 64, 128, 256],
    "tile_k": [8, 16, 32, 64, 128, 256],
    "buffer_kb": [16, 32, 64, 128, 256, 512],
    "dataflow": ["weight_stationary", "output_stationary", "input_stationary"],
    "bits": [8, 16],
}


def _accelerator_model(X: np.ndarray, gemm=(1024, 1024, 1024)) -> np.ndarray:
    """Vectorised analytic (log10 latency [cycles], log10 energy [pJ], area [mm^2]) of a tiled GEMM.

    A roofline-style toy of our own: compute cycles from PE utilisation of the tile, DRAM
    traffic from the dataflow's reuse and buffer spills, energy from MACs, SRAM and DRAM
    accesses plus leakage, area from PEs and SRAM. Not calibrated against any simulator.
    """
    X = np.atleast_2d(X)
    o = _ACC_OPTIONS
    R = np.array(o["pe_rows"])[X[:, 0]]
    C = np.array(o["pe_cols"])[X[:, 1]]
    tm, tn, tk = (np.array(o["tile_m"])[X[:, 2]], np.array(o["tile_n"])[X[:, 3]],
                  np.array(o["tile_k"])[X[:, 4]])
    buf = np.array(o["buffer_kb"])[X[:, 5]] * 1024.0
    df = X[:, 6]
    byt = np.array(o["bits"])[X[:, 7]] / 8.0
    M, N, K = gemm
    tiles = np.ceil(M / tm) * np.ceil(N / tn) * np.ceil(K / tk)
    util = np.minimum(1.0, tm / R) * np.minimum(1.0, tn / C)
    compute = tiles * np.ceil(tm / R) * np.ceil(tn / C) * tk
    footprint = (tm * tk + tk * tn + tm * tn) * byt
    spill = np.maximum(1.0, footprint / buf)  # a tile that does not fit is re-fetched
    a_reads = M * K * np.ceil(N / tn)
    b_reads = K * N * np.ceil(M / tm)
    c_rw = M * N * np.ceil(K / tk) * 2
    stationary = np.stack([b_reads / np.ceil(M / tm), c_rw / np.ceil(K / tk), a_reads / np.ceil(N / tn)], 1)
    traffic = (a_reads + b_reads + c_rw - stationary[np.arange(len(df)), df] * 0.5) * byt * spill
    memory = traffic / 32.0  # 32 bytes / cycle DRAM
    latency = np.maximum(compute, memory) + 100.0 * tiles
    area = R * C * 0.002 * byt ** 2 + buf / 1024.0 * 0.01
    macs = float(M) * N * K
    energy = (macs * 0.2 * byt ** 2 / np.maximum(util, 1e-3) ** 0.1
              + macs / np.minimum(tm, tn) * 2.0 * byt * np.sqrt(buf / 65536.0)
              + traffic * 20.0 + 0.05 * area * latency)
    return np.stack([np.log10(latency), np.log10(energy), area], 1)


def toy_accelerator() -> MOProblem:
    """Toy 3-objective accelerator design space (OUR OWN analytic model, see docs).

    8 categorical knobs (PE rows/cols, GEMM tile sizes, buffer size, dataflow, bit width),
    97,200 designs; objectives (minimise) log10 latency, log10 energy and area. Small enough to
    enumerate, so ``info["front"]`` holds the exact Pareto front and the HV points come from the
    whole space (ref = nadir of the space, ideal = per-objective minimum).
    """
    from .metrics import nondominated_mask

    sizes = [len(v) for v in _ACC_OPTIONS.values()]
    grid = np.stack(np.meshgrid(*[np.arange(s) for s in sizes], indexing="ij"), -1).reshape(-1, len(sizes))
    F = _accelerator_model(grid)
    front = F[nondominated_mask(F)]
    ref, ideal = F.max(0), F.min(0)

    def evaluate(x):
        return _accelerator_model(np.asarray(x))[0]

    return MOProblem(Categorical(list(_ACC_OPTIONS.values())), evaluate, 3, name="ToyAccelerator",
                     ref_point=ref, ideal_point=ideal, scale=ref - ideal,
                     info={"front": front, "knobs": list(_ACC_OPTIONS), "our_model": True})

