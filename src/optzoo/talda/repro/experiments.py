"""The TALDA-R experiments (spec ``talda.md`` §3): one function per setting, records out.

Per seed: problem instances (P2/P3 matrices from the seed), disjoint tuning and evaluation
initialisations, every tuned method on the same grid of step sizes (equal size and resolution;
each grid also contains the method's theory steps), tuned on the tuning inits only, then
evaluated on the eval inits. Every method gets the same budget in gradient calls (a method
with two calls per iteration gets half the iterations). Counts are gradient evaluations to
|grad f| <= 1e-8. AGDA at its theory steps is run for as many gradient calls as TALDA-R
needed and its gradient norm is read off there: nothing is extrapolated.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np

from optzoo._core.rng import np_rng
from optzoo.repro.evidence import Record
from optzoo.talda._engine import CALLS_PER_ITER, log_slope, run_batch
from optzoo.talda.baselines import theory_steps
from optzoo.talda.constants import LyapunovTerms, TwoSidedPL, lyapunov_terms
from optzoo.talda.problems import quadratic, robust_ls, sine_family, yang2d

__all__ = ["Config", "SCALES", "TOL", "coupling_blind", "no_correction", "run_settings", "setting_records",
           "step_grid"]

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
    tuned: tuple = ("talda", "talda_nocorr", "gda", "agda", "eg", "ogda")
    p4_eval: int = 5
    p4_tune: int = 2
    p4_grid: int = 4
    p4_max_calls: int = 30_000
    p4_tuned: tuple = ("talda", "talda_nocorr", "agda")
    rank_deficient: bool = False
    seeds: int = 5


# quick's seed count, from pilot seeds 90000-90001 by a rule written before reading them: the
# smallest n >= 5 at which each headline claim and its control are decided the way the pilot
# points with power >= 0.8 (noncentral t, the judging rule's; all parts for a "reproduced", the
# clearest part for a "not reproduced"): 5 (every such part needs n <= 3); then raised to the
# most seeds whose unit time stays at quick's earlier cost (16 seeds x 10 s = 160 s): 8 seeds x
# 17.6 CPU-s. See docs/papers/talda.md.
QUICK_SEEDS = 8

SCALES = {
    "smoke": Config(p2_eps=(), p3_eps=(0.0, 0.1), p4_gammas=(), n_eval=3, n_tune=2, grid=4,
                    max_calls=5_000, tuned=("talda", "talda_nocorr", "gda", "agda"), seeds=2),
    "quick": Config(n_eval=20, n_tune=3, grid=12, p4_eval=3, p4_max_calls=20_000, seeds=QUICK_SEEDS),
    "full": Config(p4_gammas=(2.0, 10.0, 100.0, 1000.0), n_eval=50, n_tune=10, grid=15,
                   max_calls=20_000, p4_eval=20, p4_tune=5, p4_grid=8,
                   p4_max_calls=50_000, p4_tuned=("talda", "talda_nocorr", "gda", "agda", "eg", "ogda"),
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
    return _choose(prob, method, terms, xt, yt, g, max_calls).value


def _choose(prob, method, terms, xt, yt, g, max_calls, *, arm=None, context=""):
    """:func:`_tune`'s choice as a :class:`~optzoo.repro.tuning.Choice`: the lexicographic score
    (most tuning runs converged, then the fewest worst-case calls, or the median log final norm
    when some did not converge) is handed to :func:`optzoo.repro.tuning.select` as its rank
    (ties: the first in grid order, as before); the two parts are kept in ``meta``."""
    from optzoo.repro.tuning import select

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
    order = sorted(set(score))
    rank = [order.index(s) for s in score]
    return select([(float(a), float(b)) for a, b in zip(A, Bm, strict=True)], np.asarray(rank, dtype=float),
                  stream="tune inits", seeds=tuple(f"init{k}" for k in range(nt)), arm=arm or method,
                  knob="(step_x, step_y)", context=context, eval_budget=max_calls, budget_unit="gradient calls",
                  meta={"score": "rank of (-converged tuning runs, worst calls if all converged else "
                                 "median log final norm)",
                        "converged": [-int(s[0]) for s in score], "second": [float(s[1]) for s in score]})


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
    return norms[idx, np.arange(n)]


def no_correction(terms: LyapunovTerms) -> LyapunovTerms:
    """TALDA-R without its Lyapunov correction (action 3): K = 0, so the x-step is the fixed
    proposal s_x / M and the y-step s_y / L_y, i.e. plain simultaneous GDA at TALDA-R's steps."""
    return replace(terms, K=0.0)


def coupling_blind(c: TwoSidedPL) -> TwoSidedPL:
    """The same design with the cross-smoothness replaced by the single constant of older
    analyses, l = max(L_x, L_y, L_xy): still valid bounds (so still certified), but with no
    explicit dependence on L_xy."""
    return TwoSidedPL(c.mu_x, c.mu_y, c.L_x, c.L_y, c.ell)


def _calls(out, budget: int, arm: str, where: str) -> np.ndarray:
    """Gradient calls to tol: unconverged runs censored at the budget; a diverged run is NaN
    (never hidden) with a RuntimeWarning naming the arm."""
    calls = np.where(np.isfinite(out["calls"]), out["calls"], float(budget))
    div = np.asarray(out["diverged"], dtype=bool)
    if div.any():
        warnings.warn(f"talda: arm {arm!r} diverged (status DIVERGED, |grad f| non-finite or > 1e12) "
                      f"on {int(div.sum())} of {div.size} runs at {where}; recorded as NaN",
                      RuntimeWarning, stacklevel=2)
        calls = np.where(div, np.nan, calls)
    return calls


def _down_idx(T: int, n: int = 100) -> np.ndarray:
    return np.unique(np.linspace(0, T - 1, min(n, T)).astype(int))


def setting_records(family, param, prob, seed, progress, *, n_eval, n_tune, grid, max_calls, tuned,
                    traces: bool = False) -> list[Record]:
    """Every record of one setting (part ``family:param``, instance = eval init)."""
    c = prob.constants
    terms = lyapunov_terms(c)
    part = f"{family}:{param:g}"
    xe, ye = prob.inits(np_rng(seed, "talda-eval", family), n_eval)
    xt, yt = prob.inits(np_rng(seed, "talda-tune", family), n_tune)
    inst = [f"i{j}" for j in range(n_eval)]
    recs: list[Record] = [Record(part, "talda", "design", "certified_rate", terms.rate, exact=True),
                          Record(part, "talda", "design", "coupling", c.coupling, exact=True)]

    def add(arm, metric, vals, p=part, names=inst):
        recs.extend(Record(p, arm, k, metric, float(v)) for k, v in zip(names, vals, strict=True))

    budget = max_calls
    it = _iters("talda", max_calls)
    # TALDA-R at its certified (theory) steps, with the exact Lyapunov function traced
    out = run_batch(prob, "talda", np.ones(n_eval), np.ones(n_eval), xe, ye, max_iter=it, terms=terms,
                    lyapunov=True)
    calls = _calls(out, budget, "talda", part)
    slope = log_slope(out["norms"], out["calls"], 1)
    lin = np.isfinite(out["calls"]) & (slope < 0)
    lyap, sur = [], []
    for j in range(n_eval):
        e = int(out["calls"][j]) if np.isfinite(out["calls"][j]) else out["norms"].shape[0]
        S, P, W = out["S"][:e, j], out["P"][:e, j], out["W"][:e, j]
        slack = 1e-10 * abs(P[0]) + 1e-13
        lyap.append(bool((np.diff(P) <= slack).all() and (P <= S * (1 + 1e-9) + slack).all()))
        sur.append(bool((np.diff(S) <= 0).all()
                        and (S[1:] <= (1 - terms.rate) * S[:-1] * (1 + 1e-9) + 1e-300).all()
                        and (S <= W * (1 + 1e-12)).all()))
    add("talda", "calls", calls)
    add("talda", "rate", -slope)
    add("talda", "linear", lin, p="", names=[f"{part}/{k}" for k in inst])
    add("talda", "lyapunov_ok", lyap, p="", names=[f"{part}/{k}" for k in inst])
    add("talda", "surrogate_ok", sur, p="", names=[f"{part}/{k}" for k in inst])
    fin = np.clip(np.where(np.isfinite(out["norms"][-1]), out["norms"][-1], np.nan), 1e-300, None)
    add("talda", "log10_grad_norm_at_talda_calls", np.log10(fin))
    if hasattr(prob, "ls_distance"):
        d0, d = prob.ls_distance(xe), prob.ls_distance(out["x"])
        ok = np.isfinite(out["calls"]) & (d <= 1e-5) & (d <= 1e-4 * d0)
        add("talda", "ls_converged", ok, p="", names=[f"{part}/{k}" for k in inst])
    if traces:
        idx = _down_idx(out["norms"].shape[0])
        tr = {"S": out["S"][:, 0], "W": out["W"][:, 0], "P": out["P"][:, 0], "grad_norm": out["norms"][:, 0]}
        for key, v in tr.items():
            recs.extend(Record(f"trace:{part}", "talda", f"k{k}", f"trace_{key}", float(v[k]), x=float(k))
                        for k in idx if k < v.size)
    progress.advance()
    # controls at the same theory steps: no Lyapunov correction, and a coupling-blind design
    nc = run_batch(prob, "talda", np.ones(n_eval), np.ones(n_eval), xe, ye, max_iter=it,
                   terms=no_correction(terms))
    add("talda_nocorr", "calls", _calls(nc, budget, "talda_nocorr", part))
    nslope = log_slope(nc["norms"], nc["calls"], 1)
    add("talda_nocorr", "rate", -nslope)
    add("talda_nocorr", "linear", np.isfinite(nc["calls"]) & (nslope < 0), p="",
        names=[f"{part}/{k}" for k in inst])
    if family in ("P2", "P3"):
        bt = lyapunov_terms(coupling_blind(c))
        bl = run_batch(prob, "talda", np.ones(n_eval), np.ones(n_eval), xe, ye, max_iter=it, terms=bt)
        add("talda_blind", "calls", _calls(bl, budget, "talda_blind", part))
        add("talda_blind", "rate", -log_slope(bl["norms"], bl["calls"], 1))
        recs.append(Record(part, "talda_blind", "design", "certified_rate", bt.rate, exact=True))
    gn = _agda_theory(prob, c, xe, ye, out["calls"], max_calls)
    add("agda_theory", "log10_grad_norm_at_talda_calls",
        np.log10(np.clip(np.where(np.isfinite(gn), gn, np.nan), 1e-300, None)))
    progress.advance()
    # tuned arms: the same grid, tuning inits and budget in gradient calls for every method
    cap = _iters("agda", max_calls)  # the smaller iteration budget, for the per-iteration finding
    for m in tuned:
        t = no_correction(terms) if m == "talda_nocorr" else terms
        meth = "talda" if m == "talda_nocorr" else m
        choice = _choose(prob, meth, t, xt, yt, grid, max_calls, arm=f"{m}_tuned", context=part)
        a, b = choice.value
        recs += choice.to_records()
        ev = run_batch(prob, meth, np.full(n_eval, a), np.full(n_eval, b), xe, ye,
                       max_iter=_iters(meth, max_calls), terms=t)
        arm = f"{m}_tuned"
        cl = _calls(ev, budget, arm, part)
        add(arm, "calls", cl)
        iters = (np.where(np.isfinite(ev["calls"]), ev["calls"], np.inf) - 1) / CALLS_PER_ITER[meth]
        iters = np.where(np.isnan(cl), np.nan, np.minimum(iters, cap))
        add(arm, "iters_capped", iters)
        recs.append(Record(part, arm, "steps", "step_x", a))
        recs.append(Record(part, arm, "steps", "step_y", b))
        progress.advance()
    return recs


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


def run_settings(config: Config, seed: int, progress) -> list[Record]:
    settings = settings_of(config, seed)
    total = sum(2 + (len(config.p4_tuned) if f == "P4" else len(config.tuned)) for f, _, _ in settings)
    progress.start(total, "talda settings")
    recs: list[Record] = []
    for i, (family, param, make) in enumerate(settings):
        p4 = family == "P4"
        recs += setting_records(
            family, param, make(), seed, progress,
            n_eval=config.p4_eval if p4 else config.n_eval, n_tune=config.p4_tune if p4 else config.n_tune,
            grid=config.p4_grid if p4 else config.grid,
            max_calls=config.p4_max_calls if p4 else config.max_calls,
            tuned=config.p4_tuned if p4 else config.tuned, traces=i == 0)
    return recs
