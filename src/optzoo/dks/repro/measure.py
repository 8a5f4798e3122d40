"""Measurements on the actual objective f(x) = 1/2 x^T (A + lam I) x for the landscape claims.

Nothing here re-derives the paper's formulas: every quantity is an evaluation of
:func:`optzoo.dks.relaxation.objective` (one sparse product) at points the library's
algorithms produced, so a wrong theory or a wrong implementation shows up as a failure.

* :func:`tightness_trials`: pairwise rounding (the library's ``pairwise_round``) of random
  fractional points; the claim is f(round(x)) >= f(x), measured by two objective evaluations.
* :func:`kn_sharpness`: on K_n, f at the uniform point against the best binary point found by
  enumerating every k-subset (objective evaluated on each).
* :func:`saddle_curvature`: at a non-integral stationary point found by plain FW (the
  library's ``fw_core`` with escapes off), the numeric second difference of f along every
  two-sided feasible pair direction e_i - e_j among the fractional coordinates.
* :func:`local_max_probe`: at an integral output 1_S, f(x + t(e_j - e_i)) - f(x) for small
  t > 0 on the swaps most likely to gain (the smallest gradients inside, largest outside).
* :func:`integral_local_max`: whether a run's end point is an integral local maximiser of f
  (binary, FW-stationary, and no tied swap along which f rises to second order), from the
  gradient at the end point; the same test for every arm, whatever its stopping rule.
* :func:`excess_over_binary`: f at a point minus f at the best k-subgraph (a MIP's proven
  optimum, or its upper bound): positive means the relaxation is not tight there.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from optzoo._core.rng import derive_seed
from optzoo.dks.frank_wolfe import NumpyOps, fw_core
from optzoo.dks.relaxation import gradient, lipschitz, objective, pairwise_round

__all__ = ["excess_over_binary", "integral_local_max", "kn_sharpness", "local_max_probe",
           "saddle_curvature", "stationary_point", "tightness_trials"]

_TOL = 1e-9


def _random_fractional(rng, n: int, k: int) -> np.ndarray:
    u = rng.random(n) ** 3
    x = k * u / u.sum()
    if x.max() > 1:  # mix with the uniform point until inside the box
        a = (1 - k / n) / (x.max() - k / n)
        x = a * x + (1 - a) * (k / n)
    return x


def tightness_trials(adj, trials: int, lams, seed: int, tag: str) -> dict[str, float]:
    """Worst relative change f(round(x)) - f(x) over random fractional x, for each lam and for
    random positive weights with lam = max w. Negative means the rounding lost value."""
    rng = np.random.default_rng(derive_seed(seed, "tightness", tag))
    n = adj.shape[0]
    worst = math.inf
    worst_w = math.inf
    count = 0
    for k in sorted({2, max(2, n // 4), max(2, n // 2)}):
        if k >= n:
            continue
        for _ in range(trials):
            x = _random_fractional(rng, n, k)
            for lam in lams:
                fx = objective(adj, x, lam)
                d = objective(adj, pairwise_round(adj, x, lam), lam) - fx
                worst = min(worst, d / (1 + abs(fx)))
                count += 1
            w = adj.copy()
            w.data = np.exp(rng.normal(size=w.data.size))
            w = (w + w.T) / 2.0
            lam_w = float(w.data.max())
            fx = objective(w, x, lam_w)
            d = objective(w, pairwise_round(w, x, lam_w), lam_w) - fx
            worst_w = min(worst_w, d / (1 + abs(fx)))
    return {"worst_rel_change": float(worst), "worst_rel_change_weighted": float(worst_w),
            "trials": count}


def kn_sharpness(n: int, k: int, lams) -> dict[str, dict[str, float]]:
    """On K_n: f at x = (k/n) 1 and the best f over all binary k-subsets, per lam."""
    import networkx as nx

    from optzoo._core.graph import read_graph

    adj = read_graph(nx.complete_graph(n)).adj
    out = {}
    for lam in lams:
        f_uniform = objective(adj, np.full(n, k / n), lam)
        best = -math.inf
        for sub in itertools.combinations(range(n), k):
            y = np.zeros(n)
            y[list(sub)] = 1.0
            best = max(best, objective(adj, y, lam))
        out[f"{lam:g}"] = {"f_uniform": float(f_uniform), "f_best_binary": float(best)}
    return out


def stationary_point(adj, k: int, lam: float, *, seed: int = 0, max_iter: int = 5000):
    """Run plain FW (escapes off) from the uniform start; return x if it stops at a
    non-integral stationary point, else ``None``."""
    L, _ = lipschitz(adj, lam, seed=seed)
    out = fw_core(NumpyOps(adj, lam), k, lam, L, max_iter=max_iter, escape=False, record=False)
    if out["reason"] != "fractional_stationary":
        return None
    return np.asarray(out["x"], dtype=np.float64)


def saddle_curvature(adj, x: np.ndarray, lam: float, *, max_pairs: int = 200,
                     h: float = 1e-3) -> dict[str, Any]:
    """Numeric second difference (f(x+hu) - 2 f(x) + f(x-hu)) / h^2 along u = e_i - e_j for
    fractional pairs i, j (two-sided feasible for small h), and the best one-sided change of f
    over the same pairs: a strict saddle has min curvature > 0, so f rises along them."""
    frac = np.flatnonzero((x > _TOL) & (x < 1 - _TOL))
    pairs = list(itertools.combinations(frac.tolist(), 2))[:max_pairs]
    f0 = objective(adj, x, lam)
    curv, rise = [], []
    for i, j in pairs:
        hh = min(h, 0.5 * min(x[i], 1 - x[i], x[j], 1 - x[j]))
        u = np.zeros_like(x)
        u[i], u[j] = 1.0, -1.0
        fp, fm = objective(adj, x + hh * u, lam), objective(adj, x - hh * u, lam)
        curv.append((fp - 2 * f0 + fm) / hh ** 2)
        rise.append(max(fp, fm) - f0)
    g = gradient(adj, x, lam)
    return {"n_fractional": int(frac.size), "pairs": len(pairs),
            "min_curvature": float(min(curv)) if curv else float("nan"),
            "min_rise": float(min(rise)) if rise else float("nan"),
            "grad_spread": float(np.ptp(g[frac])) if frac.size else float("nan")}


def local_max_probe(adj, nodes: np.ndarray, lam: float, *, per_side: int = 10,
                    t: float = 1e-3) -> dict[str, Any]:
    """f(x + t(e_j - e_i)) - f(x) at x = 1_S for the ``per_side`` members with the smallest
    gradient and the ``per_side`` non-members with the largest (all swaps on small graphs).
    A strict local maximiser has every change < 0."""
    n = adj.shape[0]
    x = np.zeros(n)
    x[np.asarray(nodes, dtype=np.int64)] = 1.0
    inside, outside = np.flatnonzero(x > 0.5), np.flatnonzero(x < 0.5)
    if outside.size == 0:
        return {"swaps": 0, "max_change": -math.inf}
    g = gradient(adj, x, lam)
    ii = inside[np.argsort(g[inside], kind="stable")[:per_side]]
    jj = outside[np.argsort(-g[outside], kind="stable")[:per_side]]
    f0 = objective(adj, x, lam)
    worst = -math.inf
    for i in ii:
        for j in jj:
            y = x.copy()
            y[i] -= t
            y[j] += t
            worst = max(worst, (objective(adj, y, lam) - f0) / t)
    return {"swaps": int(ii.size * jj.size), "max_change": float(worst)}


def integral_local_max(adj, x: np.ndarray, k: int, lam: float, *, tol: float = 1e-9) -> bool:
    """True when ``x`` is binary with k ones and a local maximiser of f over C_{n,k}:
    min_{i in S} g_i >= max_{j not in S} g_j (FW-stationary) and, for every tied pair (i in
    S, j outside with g_i = g_j), the swap direction e_j - e_i has no second-order rise
    (lam - A_ij <= 0). Evaluated from the gradient at ``x``, independently of the algorithm
    that produced it (plain FW may stop at a tied vertex that is not a local maximiser)."""
    x = np.asarray(x, dtype=np.float64)
    if not (np.all((np.abs(x) <= tol) | (np.abs(x - 1.0) <= tol)) and abs(x.sum() - k) <= 1e-6):
        return False
    inside = x > 0.5
    if inside.all():
        return True
    g = gradient(adj, np.round(x), lam)
    lo, hi = float(g[inside].min()), float(g[~inside].max())
    t = tol * (1.0 + abs(lo))
    if hi < lo - t:
        return True
    if hi > lo + t:
        return False  # not even stationary
    ii = np.flatnonzero(inside)[g[inside] <= lo + t]
    jj = np.flatnonzero(~inside)[g[~inside] >= hi - t]
    sub = adj[ii][:, jj].toarray()
    return bool((lam - sub <= t).all())


def excess_over_binary(adj, x: np.ndarray, k: int, lam: float, opt_edges: float) -> float:
    """f_lam(x) - (opt_edges + lam k / 2): f at ``x`` against f at a k-subgraph with
    ``opt_edges`` edges (weight). With ``opt_edges`` the optimum (or an upper bound on it), a
    positive value means no k-subgraph reaches f(x): the relaxation is not tight."""
    return float(objective(adj, np.asarray(x, dtype=np.float64), lam) - (opt_edges + lam * k / 2.0))
