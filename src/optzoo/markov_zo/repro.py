"""Reproduction of markov_zo (arXiv 2601.01160): claims, scales, run, judge, figures.

Environment: the sticky two-state quadratic :math:`F(x,z)=\\tfrac12\\|x-zc\\|^2`,
:math:`\\|c\\|=1`, :math:`x^*=0`, :math:`\\mu=L=1`, chain with exact mixing time
:math:`\\tau` (``StickyChain.with_mixing_time``); start :math:`\\|x_0\\|^2=d`. Metric: squared
error :math:`\\|x-x^*\\|^2` after a budget of N function values (gradients charged d+1),
averaged over R independent replicate runs per seed. All methods use the step rule
:math:`\\gamma_k=m/(\\mu(k+4d))` (SPSA: noisyopt's :math:`a_k` with scale m), with m picked
from the same 3-point grid on separate tuning replicates at :math:`\\tau=1`, never on the
evaluation replicates.

The two_vs_one_point claim is also judged on the spec's environment 3 (non-smooth,
:math:`F(x,z)=|a_z^\\top x-b_z|+\\tfrac{\\mu}{2}\\|x\\|^2` on an 8-state sticky chain,
:math:`x^*` from the dual box QP with scipy; see ``_nonsmooth.py``): errors there are
:math:`\\|x-x^*\\|^2/\\|x_0-x^*\\|^2`, two-point radius :math:`t\\propto\\varepsilon/M`,
one-point tunes (m, t) jointly on the tuning replicates.
"""

from __future__ import annotations

import math
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
    verdict_from_interval,
)
from optzoo.markov_zo._bank import _Chains, run_bank
from optzoo.markov_zo._nonsmooth import nonsmooth_instance, run_bank_nonsmooth
from optzoo.markov_zo.theory import batch_error, crossover_tau, predicted_ratio
from optzoo.markov_zo.zo import sphere_directions, two_point_estimates
from optzoo.repro.claim import Claim, Verdict

CLAIMS = [
    Claim("variance_law", "The exact second-moment law (d-1)(|x|^2+s^2)/b + s^2 V_b(rho) of a "
          "two-point batch mean under the sticky chain holds (the spec's derivation).",
          "Monte Carlo / formula over (d, tau, b) cells", "CI of mean log ratio within +-log 1.05"),
    Claim("tau_independence", "With randomized batching, zero-order error does not depend on the "
          "mixing time while tau <= d/3.", "max over tau <= d/3 of err(tau)/err(1), both d",
          "CI of the max log ratio < log 2"),
    Claim("crossover", "The tau at which zero-order error doubles matches the exact-formula "
          "prediction for randomized batching.", "measured / predicted crossover tau",
          "CI of log ratio within +-log 2"),
    Claim("zo_vs_sgd", "At large tau, zero-order with randomized batching beats first-order "
          "Markov SGD at equal cost when a gradient costs d+1 values.",
          "err ZO-MLMC / err SGD (b=1), tau = max, d = max", "paired CI of log ratio < 0"),
    Claim("zo_vs_unbatched", "Randomized batching beats zero-order without batching (b=1) at "
          "equal calls and large tau.", "err ZO-MLMC / err ZO b=1", "paired CI of log ratio < 0"),
    Claim("zo_vs_spsa", "Same-state two-point ZO beats SPSA (noisyopt schedule, two plain calls "
          "on consecutive states) at large tau.", "err ZO-MLMC / err SPSA",
          "paired CI of log ratio < 0"),
    Claim("two_vs_one_point", "Two-point feedback needs fewer calls than one-point feedback, "
          "on smooth and on non-smooth strongly convex problems.",
          "err two-point / err one-point at equal calls, d = min, tau in {1, max}; smooth "
          "(env 1) and non-smooth (env 3) judged separately",
          "paired CI of log ratio < 0 in both; reproduced only if both are"),
    Claim("rate_vs_lower_bound", "The measured error decays as 1/N, the order of the "
          "Omega((d+tau)/N) lower bound (form INFERRED).", "slope of log err vs log calls",
          "CI of slope within [-1.3, -0.7]"),
]


@dataclass(frozen=True)
class Config:
    dims: tuple = (10, 50)
    taus: tuple = (1, 3, 10, 30, 100, 300)
    budget: int = 20_000
    reps: int = 3
    tune_reps: int = 3
    grid: tuple = (0.5, 1.0, 2.0)
    var_reps: int = 5000
    var_cells: tuple = ((10, 1, 8), (10, 10, 8), (10, 100, 64), (50, 1, 64), (50, 10, 8),
                        (50, 100, 64))
    api_check: bool = True
    ns_states: int = 8


QUICK_BUDGET = 50_000

SCALES = {
    "smoke": Config(dims=(10,), taus=(1, 3, 30), budget=3000, reps=2, tune_reps=2, var_reps=800,
                    var_cells=((10, 1, 8), (10, 30, 8)), api_check=False),
    # The spec's quick scale says <= 2e5 calls per run; 2e4 was used while timings were
    # inflated by machine contention. QUICK_BUDGET is the largest value that keeps 3 seeds
    # with 2 jobs under the spec's 3 minutes on the quiet machine (see the docs).
    "quick": Config(budget=QUICK_BUDGET),
    "full": Config(dims=(10, 50, 200), taus=(1, 3, 10, 30, 100, 300, 1000), budget=200_000,
                   reps=8, tune_reps=4, var_reps=20_000),
}

ONE_POINT_SMOOTHING = 0.5
# Environment 3 (non-smooth): mu, the relative accuracy eps that sets the two-point radius
# t = eps * mu * |x0 - x*|^2 / (2 M) (t proportional to eps/M, spec), and the radii offered
# to one-point feedback (tuned jointly with m on the tuning replicates; all INFERRED).
NS_MU = 1.0
NS_EPS = 1e-3
NS_ONE_POINT_RADII = (0.25, 0.5, 1.0)
_CAP = 1e12  # diverged runs are recorded at this error so statistics stay finite


def _max_level(d, tau):
    return 2 ** int(math.ceil(math.log2(d + tau)))


def _bank(method, d, taus, cfg, rng, *, budget, grad_cost=1.0, batch=1, smoothing=1e-4,
          lr_offset=None):
    """Tune m on separate replicates at tau=1, return evaluation errors (tau, rep, checkpoint)."""
    taus = np.asarray(taus, dtype=float)
    G, T, R, Rt = len(cfg.grid), taus.size, cfg.reps, cfg.tune_reps
    # Copy layout: for each grid value, T*R evaluation copies then Rt tuning copies at tau=1.
    tau_copy = np.concatenate([np.repeat(taus, R), np.ones(Rt)])
    stay = np.tile(0.5 ** (1.0 / tau_copy), G)
    M = np.tile([_max_level(d, t) for t in tau_copy], G)
    lr = np.repeat(cfg.grid, tau_copy.size)
    rec = run_bank(method, d=d, stay=stay, max_level=M, lr_mult=lr, budget=budget,
                   x0_norm=math.sqrt(d), seed_rng=rng, grad_cost=grad_cost, batch=batch,
                   smoothing=smoothing, lr_offset=lr_offset)
    rec = np.minimum(rec, _CAP).reshape(G, tau_copy.size, -1)
    tune = np.log(rec[:, T * R:, -1]).mean(1)
    g = int(np.argmin(tune))
    return rec[g, :T * R].reshape(T, R, -1), float(cfg.grid[g])


def _bank_nonsmooth(method, inst, taus, cfg, rng, *, budget, x0, settings):
    """Env 3: tune (m, t, k0) over ``settings`` on tau=1 tuning replicates; eval (tau, rep, C)."""
    taus = np.asarray(taus, dtype=float)
    S, d = inst["A"].shape
    T, R, Rt = taus.size, cfg.reps, cfg.tune_reps
    tau_copy = np.concatenate([np.repeat(taus, R), np.ones(Rt)])
    from optzoo.markov_zo.chains import StickyChain

    stay1 = np.array([StickyChain.with_mixing_time(np.arange(S), int(t)).stay_prob
                      for t in tau_copy])
    n, G = tau_copy.size, len(settings)
    par = np.asarray(settings, dtype=float)  # (G, 3): m, t, k0
    rec = run_bank_nonsmooth(method, inst, stay=np.tile(stay1, G),
                             max_level=np.tile([_max_level(d, t) for t in tau_copy], G),
                             lr_mult=np.repeat(par[:, 0], n), smoothing=np.repeat(par[:, 1], n),
                             lr_offset=np.repeat(par[:, 2], n), budget=budget, x0=x0, rng=rng)
    rec = np.minimum(rec, _CAP).reshape(G, n, -1)
    g = int(np.argmin(np.log(rec[:, T * R:, -1]).mean(1)))
    return rec[g, :T * R].reshape(T, R, -1), [float(v) for v in par[g]]


def _nonsmooth(cfg, seed, d, taus):
    """Env 3: two- vs one-point ZO-MLMC on |a_z'x - b_z| + mu/2 |x|^2, errors / |x0 - x*|^2."""
    inst = nonsmooth_instance(d, cfg.ns_states, NS_MU, np_rng(seed, "ns_inst", d))
    xs = inst["xstar"]
    x0 = xs + 1.0  # |x0 - x*|^2 = d, as in env 1
    r0 = float(((x0 - xs) ** 2).sum())
    lip = float(np.linalg.norm(inst["A"], axis=1).max()
                + NS_MU * (np.linalg.norm(x0) + np.linalg.norm(x0 - xs)))
    t2 = NS_EPS * NS_MU * r0 / (2.0 * lip)
    e2, s2 = _bank_nonsmooth("zo2", inst, taus, cfg, np_rng(seed, "ns_zo2", d),
                             budget=cfg.budget, x0=x0,
                             settings=[(m, t2, 4.0 * d) for m in cfg.grid])
    e1, s1 = _bank_nonsmooth("zo1", inst, taus, cfg, np_rng(seed, "ns_zo1", d),
                             budget=cfg.budget, x0=x0,
                             settings=[(m, t, 4.0 * d ** 2 / t ** 2) for m in cfg.grid
                                       for t in NS_ONE_POINT_RADII])
    return {"d": d, "taus": [float(t) for t in taus], "states": cfg.ns_states, "mu": NS_MU,
            "lipschitz": lip, "smoothing_two": t2, "dual_gap": float(inst["gap"]),
            "two": (e2[:, :, -1].mean(1) / r0).tolist(), "one": (e1[:, :, -1].mean(1) / r0).tolist(),
            "setting_two": s2, "setting_one": s1}


def _variance_law(cfg, rng):
    out = []
    for d, tau, b in cfg.var_cells:
        n = cfg.var_reps
        x = np.ones(d) / math.sqrt(d)
        c = np.ones(d) / math.sqrt(d)
        rho = 0.5 ** (1.0 / tau) if tau > 1 else 0.5
        ch = _Chains(np.full(n, rho), rng)  # starts at pi (uniform signs)
        Z = ch.path(np.full(n, b), b)
        E = sphere_directions(n * b, d, rng)
        t = 1e-3
        X = np.repeat(x[None], n * b, 0)
        zf = Z.ravel()[:, None]
        fp = 0.5 * ((X + t * E - zf * c) ** 2).sum(1)
        fm = 0.5 * ((X - t * E - zf * c) ** 2).sum(1)
        g = two_point_estimates(fp, fm, E, t).reshape(n, b, d).mean(1)
        meas = float(((g - x) ** 2).sum(1).mean())
        pred = batch_error(b, d=d, x_sq=1.0, sigma_sq=1.0, rho=rho)
        out.append({"d": d, "tau": tau, "b": b, "measured": meas, "predicted": pred})
    return out


def run(config: Config, seed: int, progress) -> dict:
    cfg = config
    dmin, dmax, tmax = min(cfg.dims), max(cfg.dims), max(cfg.taus)
    steps = 2 * len(cfg.dims) + 6 + int(cfg.api_check)
    progress.start(steps, "markov_zo")
    res: dict = {"config": {k: getattr(cfg, k) for k in ("dims", "taus", "budget", "reps")}}
    res["variance_law"] = _variance_law(cfg, np_rng(seed, "varlaw"))
    progress.advance()
    sweep = {}
    for d in cfg.dims:
        zo, m_zo = _bank("zo2", d, cfg.taus, cfg, np_rng(seed, "zo2", d), budget=cfg.budget)
        progress.advance()
        fo, m_fo = _bank("fo", d, cfg.taus, cfg, np_rng(seed, "fo", d),
                         budget=cfg.budget, grad_cost=d + 1.0)
        progress.advance()
        sweep[str(d)] = {"zo": zo.mean(1).tolist(), "fo": fo.mean(1).tolist(), "lr_zo": m_zo,
                         "lr_fo": m_fo,
                         "pred_zo": [predicted_ratio(t, d) for t in cfg.taus],
                         "pred_fo": [predicted_ratio(t, d, zero_order=False) for t in cfg.taus],
                         "crossover_pred": crossover_tau(d)}
    res["sweep"] = sweep
    res["checkpoints"] = [0.125, 0.25, 0.5, 1.0]
    # Baselines at the largest tau (and tau=1 for reference), largest d; same budget.
    tb = (1, tmax)
    base = {}
    for name, meth, kw in (("sgd_b1", "fo_fixed", {"grad_cost": dmax + 1.0}),
                           ("zo_b1", "zo2_fixed", {}), ("spsa", "spsa", {})):
        e, m = _bank(meth, dmax, tb, cfg, np_rng(seed, name, dmax), budget=cfg.budget, **kw)
        base[name] = {"err": e[:, :, -1].mean(1).tolist(), "lr": m}
        progress.advance()
    res["baselines"] = {"d": dmax, "taus": list(tb), **base}
    # One-point needs a large radius (variance ~ (d F / t)^2); on quadratics the radius adds
    # no bias, so t = ONE_POINT_SMOOTHING (INFERRED) favours one-point as much as is fair; its
    # second moment ~ (d/t)^2 F^2 also needs the later start k0 = 4 d^2 / t^2 (INFERRED).
    e1, m1 = _bank("zo1", dmin, tb, cfg, np_rng(seed, "zo1", dmin), budget=cfg.budget,
                   smoothing=ONE_POINT_SMOOTHING, lr_offset=4.0 * dmin ** 2 / ONE_POINT_SMOOTHING ** 2)
    e2, m2 = _bank("zo2", dmin, tb, cfg, np_rng(seed, "zo2b", dmin), budget=cfg.budget)
    res["one_vs_two"] = {"d": dmin, "taus": list(tb), "one": e1[:, :, -1].mean(1).tolist(),
                         "two": e2[:, :, -1].mean(1).tolist(), "lr_one": m1, "lr_two": m2}
    progress.advance()
    res["one_vs_two_nonsmooth"] = _nonsmooth(cfg, seed, dmin, tb)
    progress.advance()
    if cfg.api_check:  # the public solver on the same problem, as a cross-check of the bank
        from optzoo.markov_zo import MarkovOracle, StickyChain, markov_zo_minimize

        errs = []
        for t in (1, tmax):
            c = np.ones(dmin) / math.sqrt(dmin)
            ch = StickyChain.with_mixing_time([-1.0, 1.0], t, seed=seed)
            orc = MarkovOracle(lambda X, Z, c=c: 0.5 * ((X - Z[:, None] * c) ** 2).sum(1), ch,
                               dim=dmin, vectorized=True)
            r = markov_zo_minimize(orc, np.ones(dmin), lr=lambda k: m2 / (k + 4.0 * dmin),
                                   max_calls=cfg.budget, seed=seed)
            errs.append(float(np.sum(r.x ** 2)))
        res["api_check"] = {"taus": [1, tmax], "public_err": errs}
        progress.advance()
    return res


def _two_sided(iv, half):
    if iv.n < 2:
        return INCONCLUSIVE
    if -half < iv.low and iv.high < half:
        return REPRODUCED
    if iv.low > half or iv.high < -half:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def _measured_crossover(taus, ratios):
    lt, lr = np.log(taus), np.log(np.maximum(ratios, 1e-12))
    for i in range(1, len(taus)):
        if lr[i] >= math.log(2.0) and lr[i - 1] < math.log(2.0):
            f = (math.log(2.0) - lr[i - 1]) / (lr[i] - lr[i - 1])
            return float(math.exp(lt[i - 1] + f * (lt[i] - lt[i - 1])))
    return float("nan")


def judge(per_seed: list[dict]) -> list[Verdict]:
    out = []
    # variance law
    lr = [float(np.mean([math.log(c["measured"] / c["predicted"]) for c in r["variance_law"]]))
          for r in per_seed]
    iv = bootstrap_ci(lr)
    out.append(Verdict("variance_law", _two_sided(iv, math.log(1.05)),
                       f"mean log(measured/predicted) {iv}", iv.to_dict()))
    taus = np.asarray(per_seed[0]["config"]["taus"], dtype=float)
    dims = per_seed[0]["config"]["dims"]
    # tau independence
    worst, fo_at = [], []
    for r in per_seed:
        w = -np.inf
        for d in dims:
            zo = np.asarray(r["sweep"][str(d)]["zo"])[:, -1]
            fo = np.asarray(r["sweep"][str(d)]["fo"])[:, -1]
            sel = taus <= d / 3.0
            w = max(w, float(np.max(np.log(zo[sel] / zo[0]))))
            fo_at.append(float(np.max(np.log(fo[sel] / fo[0]))))
        worst.append(w)
    iv = bootstrap_ci(worst)
    v = verdict_from_interval(iv, threshold=math.log(2.0), higher_is_better=False)
    out.append(Verdict("tau_independence", v,
                       f"max log err ratio over tau <= d/3 {iv}; first-order same stat mean "
                       f"{np.mean(fo_at):.3g}", {**iv.to_dict(), "fo_mean": float(np.mean(fo_at))}))
    # crossover
    logs, pairs = [], []
    for r in per_seed:
        acc = []
        for d in dims:
            zo = np.asarray(r["sweep"][str(d)]["zo"])[:, -1]
            tm = _measured_crossover(taus, zo / zo[0])
            tp = r["sweep"][str(d)]["crossover_pred"]
            pairs.append((d, tm, tp))
            if math.isfinite(tm) and math.isfinite(tp):
                acc.append(math.log(tm / tp))
        if acc:
            logs.append(float(np.mean(acc)))
    if len(logs) >= 2:
        iv = bootstrap_ci(logs)
        out.append(Verdict("crossover", _two_sided(iv, math.log(2.0)),
                           f"mean log(measured/predicted crossover) {iv}",
                           {**iv.to_dict(), "pairs": pairs}))
    else:
        out.append(Verdict("crossover", INCONCLUSIVE, "the error ratio did not cross 2 inside the "
                           "tau grid in enough seeds", {"pairs": pairs}))
    # baselines at the largest tau
    zo_big = [r["sweep"][str(r["baselines"]["d"])]["zo"][-1][-1] for r in per_seed]
    for cid, key in (("zo_vs_sgd", "sgd_b1"), ("zo_vs_unbatched", "zo_b1"), ("zo_vs_spsa", "spsa")):
        other = [r["baselines"][key]["err"][-1] for r in per_seed]
        iv = paired_ci(zo_big, other, transform="logratio")
        out.append(Verdict(cid, verdict_from_interval(iv, higher_is_better=False),
                           f"log(err ZO-MLMC / err {key}) at tau={taus[-1]:g} {iv}", iv.to_dict()))
    parts, ivs = [], {}
    for env, key in (("smooth", "one_vs_two"), ("non-smooth", "one_vs_two_nonsmooth")):
        two = [x for r in per_seed for x in r[key]["two"]]
        one = [x for r in per_seed for x in r[key]["one"]]
        iv = paired_ci(two, one, transform="logratio")
        ivs[env] = (iv, verdict_from_interval(iv, higher_is_better=False))
        parts.append(f"{env}: log(err two-point / err one-point) {iv} -> {ivs[env][1]}")
    vs = [v for _, v in ivs.values()]
    v = (REPRODUCED if all(x == REPRODUCED for x in vs)
         else NOT_REPRODUCED if NOT_REPRODUCED in vs else INCONCLUSIVE)
    out.append(Verdict("two_vs_one_point", v, "; ".join(parts),
                       {env: {**iv.to_dict(), "verdict": vv} for env, (iv, vv) in ivs.items()}))
    # rate: slope of log err vs log calls, averaged over the (d, tau) sweep
    cps = np.log(np.asarray(per_seed[0]["checkpoints"]))
    slopes = []
    for r in per_seed:
        s = [np.polyfit(cps, np.log(np.asarray(row)), 1)[0] for d in dims
             for row in r["sweep"][str(d)]["zo"]]
        slopes.append(float(np.mean(s)))
    iv = bootstrap_ci(slopes)
    v = _two_sided(type(iv)(iv.estimate + 1, iv.low + 1, iv.high + 1, iv.n), 0.3)
    out.append(Verdict("rate_vs_lower_bound", v, f"mean slope of log err vs log calls {iv}",
                       iv.to_dict()))
    return out


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    paths = []
    taus = np.asarray(per_seed[0]["config"]["taus"], dtype=float)
    dims = per_seed[0]["config"]["dims"]
    fig, axes = plt.subplots(1, len(dims), figsize=(4.5 * len(dims), 3.5), squeeze=False)
    for ax, d in zip(axes[0], dims, strict=False):
        for key, col in (("zo", "C0"), ("fo", "C3")):
            rat = np.array([np.asarray(r["sweep"][str(d)][key])[:, -1] for r in per_seed])
            rat = rat / rat[:, :1]
            ax.loglog(taus, rat.mean(0), "o-", color=col, label=f"{key} measured")
            ax.loglog(taus, per_seed[0]["sweep"][str(d)][f"pred_{key}"], "--", color=col,
                      label=f"{key} exact formula")
        ax.axvline(d / 3, color="gray", lw=0.8)
        ax.axhline(2, color="gray", lw=0.8, ls=":")
        ax.set(title=f"d={d}", xlabel="mixing time tau", ylabel="err(tau)/err(1)")
        ax.legend(fontsize=7)
    p = outdir / "tau_sweep.png"
    fig.tight_layout()
    fig.savefig(p, dpi=90)
    plt.close(fig)
    paths.append(p)
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    cells = per_seed[0]["variance_law"]
    meas = np.array([[c["measured"] for c in r["variance_law"]] for r in per_seed]).mean(0)
    pred = [c["predicted"] for c in cells]
    ax.loglog(pred, meas, "o")
    lim = [min(pred) * 0.8, max(pred) * 1.2]
    ax.loglog(lim, lim, "k--", lw=0.8)
    ax.set(xlabel="exact formula", ylabel="Monte Carlo", title="batch-mean second moment")
    p = outdir / "variance_law.png"
    fig.tight_layout()
    fig.savefig(p, dpi=90)
    plt.close(fig)
    paths.append(p)
    return paths
