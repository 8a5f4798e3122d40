"""Reproduction of paper 06 (TALDA) with TALDA-R, our reconstruction (spec ``talda.md`` §2-3).

Per seed: problem instances (P2/P3 matrices from the seed), disjoint tuning and evaluation
initialisations, every tuned method on a same-size grid that contains its theory steps
(tuned on the tuning inits only), then evaluation on the eval inits. Counts are gradient
evaluations to |grad f| <= 1e-8. AGDA and two-timescale GDA at theory steps run a fixed
number of iterations; their calls to tolerance are EXTRAPOLATED from the measured
log-rate (they need 1e5-1e7 iterations).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo._core.rng import np_rng
from optzoo._core.stats import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    bootstrap_ci,
    paired_ci,
    verdict_all,
    verdict_from_interval,
)
from optzoo.repro.claim import Claim, Verdict
from optzoo.talda._engine import CALLS_PER_ITER, log_slope, run_batch
from optzoo.talda.baselines import theory_steps
from optzoo.talda.constants import agda_theory_rate, lyapunov_terms
from optzoo.talda.problems import quadratic, robust_ls, sine_family, yang2d

TOL = 1e-8

CLAIMS = [
    Claim("linear", "TALDA-R converges linearly on two-sided PL problems (P1-P4, incl. the "
          "nonconvex-nonconcave P1).", "reaches |grad f| <= 1e-8; slope of log|grad f| (last half)",
          "every run converges and every slope < 0"),
    Claim("coupling", "The rate depends on the cross-smoothness L_xy: TALDA-R needs more gradients "
          "as the coupling grows, and its advantage over AGDA-theory grows as coupling -> 0.",
          "calls at the largest vs smallest eps (P2, P3), certified r(eps), advantage ratio",
          "paired CI of log(calls(eps_max)/calls(eps_min)) > 0, r decreasing, CI of the log-"
          "advantage difference > 0"),
    Claim("vs_agda_theory", "TALDA-R needs fewer gradient calls than AGDA with its theoretical "
          "steps at every coupling (theory vs theory).", "log(AGDA-theory calls / TALDA-R calls), "
          "AGDA extrapolated from its measured rate", "lower CI end > 0 in every setting"),
    Claim("weak_coupling_tuned", "At weak coupling (eps <= 0.03), tuned TALDA-R needs no more "
          "gradient calls than tuned AGDA.", "log(tuned AGDA calls / tuned TALDA-R calls) over "
          "(seed, init, setting), P2 and P3", "paired CI > 0 (tuned GDA/EG/OGDA reported alongside)"),
    Claim("lyapunov", "The surrogate S decreases every step by construction; exact P is non-"
          "increasing and P <= S.", "S_{k+1} <= (1 - r) S_k, P_{k+1} <= P_k, P_k <= S_k on every "
          "TALDA-R run", "holds on every run"),
    Claim("learning", "On robust least squares (diabetes data) TALDA-R converges to the least-"
          "squares solution set.", "distance of x to x_ls + null(A)", "<= 1e-5 and reduced by >= 1e4 "
          "on every run"),
]


@dataclass(frozen=True)
class Config:
    p1: bool = True
    p2_eps: tuple = (0.0, 0.01, 0.03, 0.1, 0.3)
    p3_eps: tuple = (0.0, 0.01, 0.03, 0.1, 0.3, 1.0)
    p4_gammas: tuple = (10.0, 1000.0)
    n_eval: int = 20
    n_tune: int = 5
    grid: int = 8
    max_iter: int = 10_000
    tuned: tuple = ("talda", "gda", "agda", "eg", "ogda")
    theory_iters: int = 10_000
    p4_eval: int = 5
    p4_tune: int = 2
    p4_grid: int = 4
    p4_max_iter: int = 30_000
    p4_tuned: tuple = ("talda", "agda")
    rank_deficient: bool = False


SCALES = {
    "smoke": Config(p2_eps=(), p3_eps=(0.0, 0.1), p4_gammas=(), n_eval=3, n_tune=2, grid=4,
                    max_iter=5_000, tuned=("talda", "gda", "agda"), theory_iters=2_000),
    "quick": Config(n_eval=12, n_tune=3, theory_iters=4_000, p4_eval=3, p4_max_iter=20_000),
    "full": Config(p4_gammas=(2.0, 10.0, 100.0, 1000.0), n_eval=50, n_tune=10, grid=15,
                   max_iter=20_000, theory_iters=20_000, p4_eval=20, p4_tune=5, p4_grid=8,
                   p4_max_iter=50_000, p4_tuned=("talda", "gda", "agda", "eg", "ogda"),
                   rank_deficient=True),
}


def _snap(grid: np.ndarray, v: float) -> np.ndarray:
    g = grid.copy()
    g[int(np.abs(np.log(g) - np.log(v)).argmin())] = v
    return g


def _grid(method: str, c, g: int):
    """Equal-size (g x g) grids that contain each method's theory steps (spec §3)."""
    if method == "talda":
        return _snap(np.geomspace(0.5, 16, g), 1.0), _snap(np.geomspace(0.5, 2, g), 1.0)
    gx = _snap(np.geomspace(1e-3, 4, g) / c.L_x, 1 / c.L_x)
    gy = _snap(np.geomspace(1e-3, 4, g) / c.L_y, 1 / c.L_y)
    if method == "agda":
        tx, ty = theory_steps("agda", c)
        gx, gy = np.sort(np.concatenate([[tx], gx[1:]])), _snap(gy, ty)
    return gx, gy


def _tune(prob, method, terms, xt, yt, g, max_iter):
    ax, by = _grid(method, prob.constants, g)
    A, Bm = np.meshgrid(ax, by, indexing="ij")
    A, Bm = A.ravel(), Bm.ravel()
    nt = xt.shape[0]
    out = run_batch(prob, method, np.repeat(A, nt), np.repeat(Bm, nt), np.tile(xt, (A.size, 1)),
                    np.tile(yt, (A.size, 1)), max_iter=max_iter, terms=terms, groups=A.size)
    calls = out["calls"].reshape(A.size, nt)
    last = out["norms"][-1]
    fin = np.log(np.clip(np.where(np.isfinite(last), last, 1e300), 1e-300, None)).reshape(A.size, nt)
    score = [(-(np.isfinite(c).sum()), c.max() if np.isfinite(c).all() else np.median(f))
             for c, f in zip(calls, fin)]
    best = min(range(A.size), key=lambda i: score[i])
    return float(A[best]), float(Bm[best])


def _theory_run(prob, method, c, x, y, iters):
    tx, ty = theory_steps(method, c)
    n = x.shape[0]
    out = run_batch(prob, method, np.full(n, tx), np.full(n, ty), x, y, max_iter=iters)
    per = CALLS_PER_ITER[method]
    slope = log_slope(out["norms"], out["calls"], per)
    # where the measured slope is flatter than the theorem's guarantee (|grad f| ~ sqrt(P)
    # contracts at least at rate/2 per iteration for AGDA), extrapolate with the guarantee
    floor = agda_theory_rate(c)[0] / 2 if method == "agda" else 0.0
    eff = np.minimum(np.nan_to_num(slope, nan=0.0), -floor)
    last = out["norms"][-1]
    with np.errstate(all="ignore"):
        extra = np.where(eff < 0, np.log(np.maximum(last, TOL) / TOL) / -eff, np.inf)
    calls = np.where(np.isfinite(out["calls"]), out["calls"], 1 + per * (out["iters"] + extra))
    return {"calls": calls.tolist(), "slope": slope.tolist(), "steps": [tx, ty],
            "theory_floor_used": int((np.nan_to_num(slope, nan=0.0) > -floor).sum()) if floor else 0}


def _down(v, n=300):
    v = np.asarray(v, dtype=float)
    idx = np.unique(np.linspace(0, v.size - 1, min(n, v.size)).astype(int))
    return {"k": idx.tolist(), "v": v[idx].tolist()}


def _setting(family, param, prob, cfg, seed, progress, *, n_eval, n_tune, grid, max_iter, tuned):
    c = prob.constants
    terms = lyapunov_terms(c)
    xe, ye = prob.inits(np_rng(seed, "talda-eval", family), n_eval)
    xt, yt = prob.inits(np_rng(seed, "talda-tune", family), n_tune)
    res = {"family": family, "param": param, "name": prob.name, "certified_rate": terms.rate,
           "lam": terms.lam, "agda_rate": agda_theory_rate(c)[0], "coupling": c.coupling,
           "L_xy": c.L_xy}
    out = run_batch(prob, "talda", np.ones(n_eval), np.ones(n_eval), xe, ye, max_iter=max_iter,
                    terms=terms, lyapunov=True)
    slope = log_slope(out["norms"], out["calls"], 1)
    ok_s = ok_p = ok_ps = ok_c = True
    worst_p = 0.0
    for j in range(n_eval):
        e = int(out["calls"][j]) if np.isfinite(out["calls"][j]) else out["norms"].shape[0]
        S, P, W = out["S"][:e, j], out["P"][:e, j], out["W"][:e, j]
        ok_s &= bool((np.diff(S) <= 0).all())
        ok_c &= bool((S[1:] <= (1 - terms.rate) * S[:-1] * (1 + 1e-9) + 1e-300).all())
        slack = 1e-10 * abs(P[0]) + 1e-13
        worst_p = max(worst_p, float(np.max(np.diff(P), initial=-np.inf)))
        ok_p &= bool((np.diff(P) <= slack).all())
        ok_ps &= bool((P <= S * (1 + 1e-9) + slack).all() and (S <= W * (1 + 1e-12)).all())
    res["talda"] = {"calls": out["calls"].tolist(), "slope": slope.tolist(),
                    "S_monotone": ok_s, "S_contracts": ok_c, "P_monotone": ok_p, "P_le_S": ok_ps,
                    "max_P_increase": worst_p}
    res["trace"] = {k: _down(out[k][:, 0]) for k in ("S", "W", "P")}
    res["trace"]["grad_norm"] = _down(out["norms"][:, 0])
    res["trace"]["eta"] = _down(out["eta"][:, 0] * terms.M)
    res["trace"]["rho"] = _down(np.minimum(out["rho"][:, 0], 1e12))
    if hasattr(prob, "ls_distance"):
        res["ls_dist0"] = prob.ls_distance(xe).tolist()
        res["ls_dist"] = prob.ls_distance(out["x"]).tolist()
    progress.advance()
    for m in ("agda", "ttgda"):
        res[f"{m}_theory"] = _theory_run(prob, m, c, xe, ye, cfg.theory_iters)
    progress.advance()
    res["tuned"] = {}
    for m in tuned:
        a, b = _tune(prob, m, terms, xt, yt, grid, max_iter)
        ev = run_batch(prob, m, np.full(n_eval, a), np.full(n_eval, b), xe, ye, max_iter=max_iter,
                       terms=terms)
        res["tuned"][m] = {"steps": [a, b], "calls": ev["calls"].tolist(),
                           "budget_calls": 1 + CALLS_PER_ITER[m] * max_iter}
        progress.advance()
    return res


def run(config: Config, seed: int, progress) -> dict:
    settings = []
    if config.p1:
        settings.append(("P1", 0.0, yang2d))
    settings += [("P2", e, lambda e=e: sine_family(e, seed=seed)) for e in config.p2_eps]
    settings += [("P3", e, lambda e=e: quadratic(e, seed=seed)) for e in config.p3_eps]
    if config.rank_deficient:
        settings += [("P3rd", e, lambda e=e: quadratic(e, seed=seed, rank_deficient=True))
                     for e in config.p3_eps]
    settings += [("P4", g, lambda g=g: robust_ls(g)) for g in config.p4_gammas]
    total = sum(2 + (len(config.p4_tuned) if f == "P4" else len(config.tuned)) for f, _, _ in settings)
    progress.start(total, "talda settings")
    results = []
    for family, param, make in settings:
        p4 = family == "P4"
        results.append(_setting(
            family, param, make(), config, seed, progress,
            n_eval=config.p4_eval if p4 else config.n_eval, n_tune=config.p4_tune if p4 else config.n_tune,
            grid=config.p4_grid if p4 else config.grid, max_iter=config.p4_max_iter if p4 else config.max_iter,
            tuned=config.p4_tuned if p4 else config.tuned))
    return {"settings": results, "tol": TOL}


# ----------------------------------------------------------------------------- judging

def _finite(v, cap):
    v = np.asarray(v, dtype=float)
    return np.where(np.isfinite(v), v, cap)


def _combine(parts):
    if any(p == NOT_REPRODUCED for p in parts):
        return NOT_REPRODUCED
    return REPRODUCED if parts and all(p == REPRODUCED for p in parts) else INCONCLUSIVE


def _by(per_seed, family):
    """{param: [setting per seed]} for one family."""
    out: dict = {}
    for r in per_seed:
        for s in r["settings"]:
            if s["family"] == family:
                out.setdefault(s["param"], []).append(s)
    return out


def judge(per_seed: list[dict]) -> list[Verdict]:
    allset = [s for r in per_seed for s in r["settings"]]
    verdicts = []
    # linear
    holds = [bool(np.isfinite(s["talda"]["calls"]).all() and (np.asarray(s["talda"]["slope"]) < 0).all())
             for s in allset]
    slopes = [v for s in allset for v in s["talda"]["slope"] if np.isfinite(v)]
    nums = {"runs": sum(len(s["talda"]["calls"]) for s in allset), "settings_ok": sum(holds),
            "settings": len(holds)}
    if slopes:
        nums["slope_ci"] = bootstrap_ci(slopes).to_dict()
    verdicts.append(Verdict("linear", verdict_all(holds),
                            f"{sum(holds)}/{len(holds)} (seed, setting) pairs: every TALDA-R run reached "
                            f"1e-8 with a negative log-slope", nums))
    # coupling
    parts, nums = [], {}
    for fam in ("P2", "P3"):
        by = _by(per_seed, fam)
        if len(by) < 2:
            continue
        lo, hi = min(by), max(by)
        if len(by[lo]) != len(by[hi]):
            continue
        c_lo = np.concatenate([_finite(s["talda"]["calls"], 1e12) for s in by[lo]])
        c_hi = np.concatenate([_finite(s["talda"]["calls"], 1e12) for s in by[hi]])
        ci = paired_ci(c_hi, c_lo, transform="logratio")
        a_lo = np.concatenate([s["agda_theory"]["calls"] for s in by[lo]]) / c_lo
        a_hi = np.concatenate([s["agda_theory"]["calls"] for s in by[hi]]) / c_hi
        adv = paired_ci(np.log(_finite(a_lo, 1e300)), np.log(_finite(a_hi, 1e300)))
        eps = sorted(by)
        rates = [[s["certified_rate"] for s in by[e]] for e in eps]
        r_dec = all(all(b < a for a, b in zip(col, col[1:])) for col in zip(*rates))
        parts += [verdict_from_interval(ci), verdict_from_interval(adv), verdict_all([r_dec])]
        nums[fam] = {"median_calls": {str(e): float(np.median(np.concatenate(
                         [_finite(s["talda"]["calls"], np.inf) for s in by[e]]))) for e in eps},
                     "log_calls_ratio_ci": ci.to_dict(), "log_advantage_diff_ci": adv.to_dict(),
                     "certified_rate": {str(e): float(np.mean([s["certified_rate"] for s in by[e]]))
                                        for e in eps}, "rate_decreasing": r_dec}
    verdicts.append(Verdict("coupling", _combine(parts),
                            "calls grow with eps, certified rate falls, advantage over AGDA-theory "
                            "larger at small eps" if parts else "needs >= 2 coupling values", nums))
    # vs AGDA-theory
    parts, nums = [], {}
    groups: dict = {}
    for s in allset:
        groups.setdefault((s["family"], s["param"]), []).append(s)
    for key, ss in sorted(groups.items()):
        t = np.concatenate([_finite(s["talda"]["calls"], 1e12) for s in ss])
        a = np.concatenate([_finite(s["agda_theory"]["calls"], 1e300) for s in ss])
        ci = paired_ci(a, t, transform="logratio")
        parts.append(verdict_from_interval(ci))
        nums[f"{key[0]}:{key[1]:g}"] = {"log_ratio_ci": ci.to_dict(), "talda_median": float(np.median(t)),
                                        "agda_theory_median": float(np.median(a))}
    verdicts.append(Verdict("vs_agda_theory", _combine(parts),
                            "log(AGDA-theory calls / TALDA-R calls) per setting (AGDA extrapolated)", nums))
    # weak coupling, tuned
    weak = [s for s in allset if s["family"] in ("P2", "P3") and s["param"] <= 0.03
            and "agda" in s["tuned"] and "talda" in s["tuned"]]
    nums = {}
    if weak:
        a = np.concatenate([_finite(s["tuned"]["agda"]["calls"], s["tuned"]["agda"]["budget_calls"]) for s in weak])
        t = np.concatenate([_finite(s["tuned"]["talda"]["calls"], s["tuned"]["talda"]["budget_calls"]) for s in weak])
        ci = paired_ci(a, t, transform="logratio")
        v = verdict_from_interval(ci)
        nums["log_agda_over_talda_ci"] = ci.to_dict()
    else:
        v = INCONCLUSIVE
    table = {}
    for key, ss in sorted(groups.items()):
        row = {"talda_theory": float(np.median(np.concatenate([_finite(s["talda"]["calls"], np.inf) for s in ss])))}
        for m in ss[0]["tuned"]:
            row[f"{m}_tuned"] = float(np.median(np.concatenate([_finite(s["tuned"][m]["calls"], np.inf) for s in ss])))
        table[f"{key[0]}:{key[1]:g}"] = row
    nums["median_calls"] = table
    verdicts.append(Verdict("weak_coupling_tuned", v, "tuned AGDA vs tuned TALDA-R calls at eps <= 0.03 "
                            "(P2, P3); the median table covers every setting and tuned method", nums))
    # lyapunov
    holds = [s["talda"]["S_monotone"] and s["talda"]["S_contracts"] and s["talda"]["P_monotone"]
             and s["talda"]["P_le_S"] for s in allset]
    verdicts.append(Verdict("lyapunov", verdict_all(holds),
                            f"S and P monotone, S contracts by (1 - r), P <= S on {sum(holds)}/{len(holds)} "
                            "(seed, setting) pairs",
                            {"max_P_increase": max([s["talda"]["max_P_increase"] for s in allset], default=0.0)}))
    # learning
    p4 = [s for s in allset if s["family"] == "P4"]
    holds = [bool(np.isfinite(s["talda"]["calls"]).all() and max(s["ls_dist"]) <= 1e-5
                  and all(d <= 1e-4 * d0 for d, d0 in zip(s["ls_dist"], s["ls_dist0"]))) for s in p4]
    verdicts.append(Verdict("learning", verdict_all(holds) if p4 else INCONCLUSIVE,
                            f"P4 runs converged to the least-squares set: {sum(holds)}/{len(holds)}"
                            if p4 else "P4 is not run at this scale",
                            {"max_ls_dist": max([max(s["ls_dist"]) for s in p4], default=None),
                             "median_calls": {f"{g:g}": float(np.median(np.concatenate(
                                 [_finite(s["talda"]["calls"], np.inf) for s in p4 if s["param"] == g])))
                                 for g in sorted({s["param"] for s in p4})}}))
    return verdicts


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    from optzoo.talda._figures import draw

    return draw(per_seed, Path(outdir))
