"""The TALDA-R experiments (spec ``talda.md`` §3): one function per setting, plain metrics out.

Per seed: problem instances (P2/P3 matrices from the seed), disjoint tuning and evaluation
initialisations, every tuned method on the same grid of step sizes (equal size and resolution;
each grid also contains the method's theory steps), tuned on the tuning inits only, then
evaluated on the eval inits. Every method gets the same budget in gradient calls (a method
with two calls per iteration gets half the iterations). Counts are gradient evaluations to
|grad f| <= 1e-8. AGDA at its theory steps is run for as many gradient calls as TALDA-R
needed and its gradient norm is read off there: nothing is extrapolated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optzoo._core.rng import np_rng
from optzoo.talda._engine import CALLS_PER_ITER, log_slope, run_batch
from optzoo.talda.baselines import theory_steps
from optzoo.talda.constants import agda_theory_rate, lyapunov_terms
from optzoo.talda.problems import quadratic, robust_ls, sine_family, yang2d

__all__ = ["Config", "SCALES", "TOL", "run_settings", "step_grid"]

TOL = 1e-8
#: Every tuned method's grid spans the same absolute step sizes: x-steps in
#: [1e-3, 4] / L_x and y-steps in [1e-3, 4] / L_y, ``grid`` log-spaced points each (spec §3).
STEP_WINDOW = (1e-3, 4.0)


@dataclass(frozen=True)
class Config:
    p1: bool = True
    p2_eps: tuple = (0.0, 0.01, 0.03, 0.1, 0.3)
    p3_eps: tuple = (0.0, 0.01, 0.03, 0.1, 0.3, 1.0)
    p4_gammas: tuple = (10.0, 1000.0)
    n_eval: int = 20
    n_tune: int = 5
    grid: int = 8
    max_calls: int = 10_000
    tuned: tuple = ("talda", "gda", "agda", "eg", "ogda")
    p4_eval: int = 5
    p4_tune: int = 2
    p4_grid: int = 4
    p4_max_calls: int = 30_000
    p4_tuned: tuple = ("talda", "agda")
    rank_deficient: bool = False
    seeds: int = 5


SCALES = {
    "smoke": Config(p2_eps=(), p3_eps=(0.0, 0.1), p4_gammas=(), n_eval=3, n_tune=2, grid=4,
                    max_calls=5_000, tuned=("talda", "gda", "agda"), seeds=2),
    "quick": Config(n_eval=20, n_tune=3, grid=12, p4_eval=3, p4_max_calls=20_000, seeds=16),
    "full": Config(p4_gammas=(2.0, 10.0, 100.0, 1000.0), n_eval=50, n_tune=10, grid=15,
                   max_calls=20_000, p4_eval=20, p4_tune=5, p4_grid=8,
                   p4_max_calls=50_000, p4_tuned=("talda", "gda", "agda", "eg", "ogda"),
                   rank_deficient=True, seeds=20),
}


def _snap(grid: np.ndarray, *values: float) -> np.ndarray:
    """``grid`` with, for each of ``values`` in turn, the nearest (in log) point not already
    replaced set to that value: the grid keeps its size and contains every value."""
    g = grid.copy()
    free = np.ones(g.size, dtype=bool)
    for v in values:
        if np.isclose(g[~free], v, rtol=1e-9).any():
            continue  # already in the grid (e.g. AGDA's theory y-step 1/l = 1/L_y)
        d = np.where(free, np.abs(np.log(grid) - np.log(v)), np.inf)
        i = int(d.argmin())
        g[i], free[i] = v, False
    return np.sort(g)


def step_grid(method: str, c, g: int, terms=None):
    """The (x, y) step parameters of ``method`` on the common grid.

    Every method gets ``g`` log-spaced absolute x-steps in STEP_WINDOW / L_x and y-steps in
    STEP_WINDOW / L_y (the same size and resolution for all). In each grid the nearest points
    are replaced by the block steps 1/L_x and 1/L_y and, where the method has one, by its
    theory step, so every grid contains the same reference steps plus the method's own
    theory. TALDA-R's parameters multiply its own steps (largest x-step s_x / M, y-step
    s_y / L_y), so its absolute steps are converted (s_x = step_x M, s_y = step_y L_y); its
    theory point is (1, 1).
    """
    lo, hi = STEP_WINDOW
    gx, gy = np.geomspace(lo, hi, g) / c.L_x, np.geomspace(lo, hi, g) / c.L_y
    if method == "talda":
        if terms is None:
            terms = lyapunov_terms(c)
        return _snap(gx * terms.M, 1.0, terms.M / c.L_x), _snap(gy * c.L_y, 1.0)
    if method in ("agda", "ttgda"):
        tx, ty = theory_steps(method, c)
        return _snap(gx, tx, 1 / c.L_x), _snap(gy, ty, 1 / c.L_y)
    return _snap(gx, 1 / c.L_x), _snap(gy, 1 / c.L_y)


def _iters(method: str, max_calls: int) -> int:
    """Iterations that fit in a budget of ``max_calls`` gradient calls (1 for the start)."""
    return (max_calls - 1) // CALLS_PER_ITER[method]


def _tune(prob, method, terms, xt, yt, g, max_calls):
    """Best (a, b) on the tuning inits: most runs converged, then the fewest worst-case calls."""
    ax, by = step_grid(method, prob.constants, g, terms)
    A, Bm = np.meshgrid(ax, by, indexing="ij")
    A, Bm = A.ravel(), Bm.ravel()
    nt = xt.shape[0]
    out = run_batch(prob, method, np.repeat(A, nt), np.repeat(Bm, nt), np.tile(xt, (A.size, 1)),
                    np.tile(yt, (A.size, 1)), max_iter=_iters(method, max_calls), terms=terms, groups=A.size)
    calls = out["calls"].reshape(A.size, nt)
    last = out["norms"][-1]
    fin = np.log(np.clip(np.where(np.isfinite(last), last, 1e300), 1e-300, None)).reshape(A.size, nt)
    score = [(-(np.isfinite(c).sum()), c.max() if np.isfinite(c).all() else np.median(f))
             for c, f in zip(calls, fin, strict=True)]
    best = min(range(A.size), key=lambda i: score[i])
    return float(A[best]), float(Bm[best])


def _agda_theory(prob, c, x, y, talda_calls, max_calls):
    """AGDA at its (recalled) theory steps, run for as many gradient calls as TALDA-R used on
    the same init (the budget where TALDA-R did not converge); its |grad f| there."""
    tx, ty = theory_steps("agda", c)
    n = x.shape[0]
    budget = np.where(np.isfinite(talda_calls), talda_calls, max_calls)
    iters = int(_iters("agda", int(budget.max())))
    out = run_batch(prob, "agda", np.full(n, tx), np.full(n, ty), x, y, max_iter=iters)
    norms = out["norms"]
    idx = np.minimum(((budget - 1) // CALLS_PER_ITER["agda"]).astype(int), norms.shape[0] - 1)
    at = norms[idx, np.arange(n)]
    return {"steps": [tx, ty], "grad_norm_at_talda_calls": at.tolist(), "calls": out["calls"].tolist(),
            "budget": budget.tolist()}


def _down(v, n=300):
    v = np.asarray(v, dtype=float)
    idx = np.unique(np.linspace(0, v.size - 1, min(n, v.size)).astype(int))
    return {"k": idx.tolist(), "v": v[idx].tolist()}


def _setting(family, param, prob, seed, progress, *, n_eval, n_tune, grid, max_calls, tuned):
    c = prob.constants
    terms = lyapunov_terms(c)
    xe, ye = prob.inits(np_rng(seed, "talda-eval", family), n_eval)
    xt, yt = prob.inits(np_rng(seed, "talda-tune", family), n_tune)
    res = {"family": family, "param": param, "name": prob.name, "certified_rate": terms.rate,
           "lam": terms.lam, "agda_rate": agda_theory_rate(c)[0], "coupling": c.coupling,
           "L_xy": c.L_xy, "budget_calls": max_calls}
    out = run_batch(prob, "talda", np.ones(n_eval), np.ones(n_eval), xe, ye, max_iter=_iters("talda", max_calls),
                    terms=terms, lyapunov=True)
    slope = log_slope(out["norms"], out["calls"], 1)
    ok_s = ok_c = ok_sw = ok_p = ok_ps = True
    worst_p = 0.0
    for j in range(n_eval):
        e = int(out["calls"][j]) if np.isfinite(out["calls"][j]) else out["norms"].shape[0]
        S, P, W = out["S"][:e, j], out["P"][:e, j], out["W"][:e, j]
        ok_s &= bool((np.diff(S) <= 0).all())
        ok_c &= bool((S[1:] <= (1 - terms.rate) * S[:-1] * (1 + 1e-9) + 1e-300).all())
        ok_sw &= bool((S <= W * (1 + 1e-12)).all())
        slack = 1e-10 * abs(P[0]) + 1e-13
        worst_p = max(worst_p, float(np.max(np.diff(P), initial=-np.inf)))
        ok_p &= bool((np.diff(P) <= slack).all())
        ok_ps &= bool((P <= S * (1 + 1e-9) + slack).all())
    res["talda"] = {"calls": out["calls"].tolist(), "slope": slope.tolist(),
                    "final_norm": out["norms"][-1].tolist(),
                    "S_monotone": ok_s, "S_contracts": ok_c, "S_le_W": ok_sw, "P_monotone": ok_p,
                    "P_le_S": ok_ps, "max_P_increase": worst_p}
    res["trace"] = {k: _down(out[k][:, 0]) for k in ("S", "W", "P")}
    res["trace"]["grad_norm"] = _down(out["norms"][:, 0])
    res["trace"]["eta"] = _down(out["eta"][:, 0] * terms.M)
    res["trace"]["rho"] = _down(np.minimum(out["rho"][:, 0], 1e12))
    if hasattr(prob, "ls_distance"):
        res["ls_dist0"] = prob.ls_distance(xe).tolist()
        res["ls_dist"] = prob.ls_distance(out["x"]).tolist()
    progress.advance()
    res["agda_theory"] = _agda_theory(prob, c, xe, ye, out["calls"], max_calls)
    progress.advance()
    res["tuned"] = {}
    for m in tuned:
        a, b = _tune(prob, m, terms, xt, yt, grid, max_calls)
        ev = run_batch(prob, m, np.full(n_eval, a), np.full(n_eval, b), xe, ye,
                       max_iter=_iters(m, max_calls), terms=terms)
        calls = ev["calls"]
        res["tuned"][m] = {"steps": [a, b], "calls": calls.tolist(),
                           "iters": ((calls - 1) / CALLS_PER_ITER[m]).tolist(),
                           "calls_per_iter": CALLS_PER_ITER[m], "iter_budget": _iters(m, max_calls)}
        progress.advance()
    return res


def settings_of(config: Config, seed: int):
    """(family, parameter, problem factory) for every setting of ``config``."""
    out = []
    if config.p1:
        out.append(("P1", 0.0, yang2d))
    out += [("P2", e, lambda e=e: sine_family(e, seed=seed)) for e in config.p2_eps]
    out += [("P3", e, lambda e=e: quadratic(e, seed=seed)) for e in config.p3_eps]
    if config.rank_deficient:
        out += [("P3rd", e, lambda e=e: quadratic(e, seed=seed, rank_deficient=True)) for e in config.p3_eps]
    out += [("P4", g, lambda g=g: robust_ls(g)) for g in config.p4_gammas]
    return out


def run_settings(config: Config, seed: int, progress) -> dict:
    settings = settings_of(config, seed)
    total = sum(2 + (len(config.p4_tuned) if f == "P4" else len(config.tuned)) for f, _, _ in settings)
    progress.start(total, "talda settings")
    results = []
    for family, param, make in settings:
        p4 = family == "P4"
        results.append(_setting(
            family, param, make(), seed, progress,
            n_eval=config.p4_eval if p4 else config.n_eval, n_tune=config.p4_tune if p4 else config.n_tune,
            grid=config.p4_grid if p4 else config.grid,
            max_calls=config.p4_max_calls if p4 else config.max_calls,
            tuned=config.p4_tuned if p4 else config.tuned))
    return {"settings": results, "tol": TOL}
