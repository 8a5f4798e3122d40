"""Built-in problems: the official code's MOCO generators, a separable categorical bandit with
known optimum, and a toy accelerator design model (OUR OWN analytic model, not the paper's).

Generators follow the official ``MOCO/problems.py`` as described in the spec: Bi/Tri-TSP give
every objective its own i.i.d. U[0,1]^2 city coordinates (Euclidean tour length); the
bi-objective knapsack draws item weights and two value vectors from U[0,1]. Reference and ideal
points are the paper's / PMOCO's (see :data:`TSP_REF`, :data:`KP_REF`).
"""

from __future__ import annotations

import numpy as np

from optzoo._core.rng import np_rng
from optzoo._core.validation import check_int, check_real

from .spaces import Binary, Categorical, MOProblem, Permutation

__all__ = ["mo_tsp", "bi_tsp", "tri_tsp", "bi_knapsack", "separable_categorical",
           "toy_accelerator", "tour_lengths"]

#: HV reference points (ideal 0) of Bi/Tri-TSP by number of cities (official code / PMOCO).
TSP_REF = {20: 20.0, 50: 35.0, 100: 65.0, 150: 85.0, 200: 115.0}
#: Bi-KP (maximise) reference and ideal points by number of items; capacity by number of items.
KP_REF = {50: (5.0, 30.0), 100: (20.0, 50.0), 200: (30.0, 75.0)}
KP_CAPACITY = {50: 12.5, 100: 25.0, 200: 25.0}


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

