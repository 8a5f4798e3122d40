"""Reproduction of markov_zo (arXiv 2601.01160): claims, scales, run, judge, figures.

Environment: the sticky two-state quadratic :math:`F(x,z)=\\tfrac12\\|x-zc\\|^2`,
:math:`\\|c\\|=1`, :math:`x^*=0`, :math:`\\mu=L=1`, chain with exact mixing time
:math:`\\tau` (``StickyChain.with_mixing_time``); start :math:`\\|x_0\\|^2=d`. Metric: squared
error :math:`\\|x-x^*\\|^2` after a budget of N function values (gradients charged d+1),
averaged over R independent replicate runs per seed. All methods use the step rule
:math:`\\gamma_k=m/(\\mu(k+4d))` (SPSA: noisyopt's :math:`a_k` with scale m), with m picked
from the same 3-point grid on separate tuning replicates at :math:`\\tau=1`, never on the
evaluation replicates.

The rate claims use extra runs of the same method started at :math:`x^*` (no transient:
the error is the noise-driven part that the lower bound is about), read at N/2 and N.

The two_vs_one_point claim is also judged on the spec's environment 3 (non-smooth,
:math:`F(x,z)=|a_z^\\top x-b_z|+\\tfrac{\\mu}{2}\\|x\\|^2` on an 8-state sticky chain,
:math:`x^*` from the dual box QP with scipy; see ``nonsmooth.py``): errors there are
:math:`\\|x-x^*\\|^2/\\|x_0-x^*\\|^2`, two-point radius :math:`t\\propto\\varepsilon/M`,
one-point tunes (m, t) jointly on the tuning replicates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo._core.rng import np_rng
from optzoo.markov_zo.repro.bank import _Chains, run_bank
from optzoo.markov_zo.repro.nonsmooth import nonsmooth_instance, run_bank_nonsmooth
from optzoo.markov_zo.theory import batch_error, crossover_tau, predicted_ratio
from optzoo.markov_zo.zo import sphere_directions, two_point_estimates
from optzoo.repro.claim import Claim, Verdict
from optzoo.repro.figures import new_figure, save_figure
from optzoo.repro.judging import judge as decide
from optzoo.repro.judging import paired

__all__ = ["CLAIMS", "SCALES", "Config", "figures", "judge", "run"]

LOG2 = math.log(2.0)

CLAIMS = [
    Claim("tau_independence",
          "With randomized batching, zero-order error does not depend on the mixing time while "
          "tau <= d/3 (it grows by less than a factor 2 over tau = 1).",
          "max over 1 < tau <= d/3 of log(err ZO-MLMC(tau) / err ZO-MLMC(1)) at N calls",
          direction="less", threshold=LOG2, source="abstract; spec C1"),
    Claim("first_order_contrast",
          "Over the same tau <= d/3, first-order Markov SGD (MLMC) depends on tau more than "
          "zero-order does: its error grows faster with tau.",
          "slope of log err vs log tau over tau <= d/3, first-order minus zero-order (paired)",
          direction="greater", threshold=0.0, source="spec C1 (first-order slope excludes 0)"),
    Claim("zo_vs_sgd",
          "At large tau, zero-order with randomized batching beats first-order Markov SGD at "
          "equal cost when a gradient costs d+1 function values.",
          "log(err ZO-MLMC / err SGD b=1) at tau = max, d = max",
          direction="less", threshold=0.0, source="abstract (query ZO rather than FO)"),
    Claim("zo_vs_unbatched",
          "Randomized batching beats zero-order without batching (b=1) at equal calls and "
          "large tau.", "log(err ZO-MLMC / err ZO b=1) at tau = max, d = max",
          direction="less", threshold=0.0, source="abstract (randomized batching); spec C3"),
    Claim("two_vs_one_point",
          "Two-point feedback reaches a lower error than one-point feedback at equal calls, on "
          "smooth and on non-smooth strongly convex problems.",
          "mean over tau in {1, max} of log(err two-point / err one-point), d = min",
          direction="less", threshold=0.0, source="spec C4 (abstract: both feedbacks)"),
    Claim("rate_vs_lower_bound",
          "In the asymptotic regime the error decays as 1/N, the N-shape of the "
          "Omega((d+tau)/N) lower bound (form INFERRED).",
          "log2(err(N) / err(N/2)) from x*, mean over tau in {1, max tau <= d/3}",
          direction="equivalent", threshold=-1.0, margin=0.3,
          source="abstract (matching lower bounds); spec C5, form INFERRED"),
    Claim("rate_d_exponent",
          "In the asymptotic regime the error grows linearly in d + tau, the d-shape of the "
          "Omega((d+tau)/N) lower bound (form INFERRED).",
          "log(err(d max) / err(d min)) / log((d max + 1) / (d min + 1)) from x*, tau = 1, N",
          direction="equivalent", threshold=1.0, margin=0.3,
          source="abstract (matching lower bounds); spec C5, form INFERRED"),
    Claim("crossover",
          "The tau at which zero-order error doubles matches our exact-formula prediction for "
          "randomized batching (our derivation, not the paper's).",
          "log(measured / predicted crossover tau); no crossing inside the grid counts as the "
          "largest tau (censored)", direction="equivalent", threshold=0.0, margin=LOG2,
          kind="finding", source="spec C2 and our variance law"),
    Claim("zo_vs_spsa",
          "Same-state two-point ZO-MLMC beats library SPSA (noisyopt 0.2.3, whose two calls land "
          "on consecutive chain states) at large tau (the spec's expectation; the paper does "
          "not discuss SPSA).", "log(err ZO-MLMC / err SPSA) at tau = max, d = max",
          direction="less", threshold=0.0, kind="finding", source="spec C3"),
    Claim("variance_law",
          "Our Monte Carlo of a two-point batch mean on the sticky chain matches our exact "
          "second-moment law (d-1)(|x|^2+s^2)/b + s^2 V_b(rho).",
          "mean over (d, tau, b) cells of log(measured / formula)",
          direction="equivalent", threshold=0.0, margin=math.log(1.05), kind="check",
          source="spec section 1 (derived)"),
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
    seeds: int = 5


# The quick budget is fixed by a timing rule alone, set before any verdict run of this
# version: the spec's quick grid (d in {10, 50}, six taus, <= 2e5 calls per run), and the
# largest budget in {2e4, 4e4, 5e4, 8e4, 1e5, 2e5} whose pilot seed (seed 90000,
# OMP_NUM_THREADS=1, one process) takes at most 60 s. See the docs for the pilot.
QUICK_BUDGET = 50_000

SCALES = {
    "smoke": Config(dims=(10, 20), taus=(1, 3, 30), budget=3000, reps=2, tune_reps=2,
                    var_reps=800, var_cells=((10, 1, 8), (10, 30, 8)), api_check=False, seeds=2),
    "quick": Config(budget=QUICK_BUDGET, seeds=16),
    "full": Config(dims=(10, 50, 200), taus=(1, 3, 10, 30, 100, 300, 1000), budget=200_000,
                   reps=8, tune_reps=4, var_reps=20_000, seeds=20),
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


def _rate(cfg, seed, d, taus, m):
    """ZO-MLMC from x* (no transient) with the sweep's tuned m: mean error at (N/2, N) per tau."""
    taus = np.asarray(taus, dtype=float)
    tau_copy = np.repeat(taus, cfg.reps)
    rec = run_bank("zo2", d=d, stay=0.5 ** (1.0 / tau_copy),
                   max_level=[_max_level(d, t) for t in tau_copy], lr_mult=m, budget=cfg.budget,
                   x0_norm=0.0, seed_rng=np_rng(seed, "rate", d), checkpoints=(0.5, 1.0))
    return np.minimum(rec, _CAP).reshape(taus.size, cfg.reps, 2).mean(1)


def run(config: Config, seed: int, progress) -> dict:
    cfg = config
    dmin, dmax, tmax = min(cfg.dims), max(cfg.dims), max(cfg.taus)
    steps = 3 * len(cfg.dims) + 6 + int(cfg.api_check)
    progress.start(steps, "markov_zo")
    res: dict = {"config": {"dims": list(cfg.dims), "taus": [float(t) for t in cfg.taus],
                            "budget": cfg.budget, "reps": cfg.reps}}
    res["variance_law"] = _variance_law(cfg, np_rng(seed, "varlaw"))
    progress.advance()
    sweep, rate = {}, {}
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
        rt = [1.0, float(max(t for t in cfg.taus if t <= d / 3.0))]
        e = _rate(cfg, seed, d, rt, m_zo)
        rate[str(d)] = {"taus": rt, "half": e[:, 0].tolist(), "full": e[:, 1].tolist(), "lr": m_zo}
        progress.advance()
    res["sweep"] = sweep
    res["rate"] = rate
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
    if cfg.api_check:  # the public solver on the same problem, reported beside the bank
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
        res["api_check"] = {"taus": [1, tmax], "public_err": errs,
                            "bank_err": e2[:, :, -1].mean(1).tolist()}
        progress.advance()
    return res


def _measured_crossover(taus, ratios):
    """Log-linear interpolation of the first tau where the ratio reaches 2; nan if none."""
    lt, lr = np.log(taus), np.log(np.maximum(ratios, 1e-12))
    for i in range(1, len(taus)):
        if lr[i] >= LOG2 and lr[i - 1] < LOG2:
            f = (LOG2 - lr[i - 1]) / (lr[i] - lr[i - 1])
            return float(math.exp(lt[i - 1] + f * (lt[i] - lt[i - 1])))
    return float("nan")


def _final(r, d, key):
    return np.asarray(r["sweep"][str(d)][key], dtype=float)[:, -1]


def _tau_slope(taus, err):
    return float(np.polyfit(np.log(taus), np.log(err), 1)[0])


def judge(per_seed: list[dict]) -> list[Verdict]:
    """One verdict per CLAIMS entry, in order, each from :func:`optzoo.repro.judging.judge`."""
    taus = np.asarray(per_seed[0]["config"]["taus"], dtype=float)
    dims = per_seed[0]["config"]["dims"]
    small = {d: taus <= d / 3.0 for d in dims}
    above1 = {d: small[d] & (taus > 1) for d in dims}
    ev: dict = {}
    ev["tau_independence"] = {
        f"d={d}": [float(np.max(np.log(_final(r, d, "zo")[above1[d]] / _final(r, d, "zo")[0])))
                   for r in per_seed] for d in dims}
    fo_slope = {d: [_tau_slope(taus[small[d]], _final(r, d, "fo")[small[d]]) for r in per_seed]
                for d in dims}
    zo_slope = {d: [_tau_slope(taus[small[d]], _final(r, d, "zo")[small[d]]) for r in per_seed]
                for d in dims}
    ev["first_order_contrast"] = {f"d={d}": paired(fo_slope[d], zo_slope[d]) for d in dims}
    dmax = per_seed[0]["baselines"]["d"]
    zo_big = [_final(r, dmax, "zo")[-1] for r in per_seed]
    for cid, key in (("zo_vs_sgd", "sgd_b1"), ("zo_vs_unbatched", "zo_b1"), ("zo_vs_spsa", "spsa")):
        ev[cid] = paired(zo_big, [r["baselines"][key]["err"][-1] for r in per_seed], "logratio")
    ev["two_vs_one_point"] = {
        env: [float(np.mean(paired(r[key]["two"], r[key]["one"], "logratio"))) for r in per_seed]
        for env, key in (("smooth (env 1)", "one_vs_two"), ("non-smooth (env 3)", "one_vs_two_nonsmooth"))}
    ev["rate_vs_lower_bound"] = {
        f"d={d}": [float(np.mean(np.log2(np.asarray(r["rate"][str(d)]["full"])
                                         / np.asarray(r["rate"][str(d)]["half"]))))
                   for r in per_seed] for d in dims}
    d0, d1 = min(dims), max(dims)
    ev["rate_d_exponent"] = [
        math.log(r["rate"][str(d1)]["full"][0] / r["rate"][str(d0)]["full"][0])
        / math.log((d1 + 1.0) / (d0 + 1.0)) for r in per_seed]
    cross, censored = {}, 0
    for d in dims:
        vals = []
        for r in per_seed:
            zo = _final(r, d, "zo")
            tm = _measured_crossover(taus, zo / zo[0])
            if not math.isfinite(tm):
                tm, censored = float(taus[-1]), censored + 1
            vals.append(math.log(tm / r["sweep"][str(d)]["crossover_pred"]))
        cross[f"d={d}"] = vals
    ev["crossover"] = cross
    ev["variance_law"] = [float(np.mean([math.log(v["measured"] / v["predicted"])
                                         for v in r["variance_law"]])) for r in per_seed]
    notes = {
        "first_order_contrast": "first-order slopes: " + "; ".join(
            f"d={d}: mean {np.mean(fo_slope[d]):.3g}" for d in dims) + "; zero-order slopes: "
            + "; ".join(f"d={d}: mean {np.mean(zo_slope[d]):.3g}" for d in dims),
        "crossover": f"{censored} (seed, d) cells did not cross inside the tau grid (censored)",
    }
    numbers = {"first_order_contrast": {f"fo_slope_d={d}": float(np.mean(fo_slope[d])) for d in dims}
               | {f"zo_slope_d={d}": float(np.mean(zo_slope[d])) for d in dims},
               "crossover": {"censored": censored}}
    return [decide(cl, ev[cl.id], note=notes.get(cl.id, ""), numbers=numbers.get(cl.id))
            for cl in CLAIMS]


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []
    taus = np.asarray(per_seed[0]["config"]["taus"], dtype=float)
    dims = per_seed[0]["config"]["dims"]
    fig, axes = new_figure(1, len(dims), figsize=(4.5 * len(dims), 3.5), squeeze=False)
    for ax, d in zip(axes[0], dims, strict=True):
        for key, col in (("zo", "C0"), ("fo", "C3")):
            rat = np.array([_final(r, d, key) for r in per_seed])
            rat = rat / rat[:, :1]
            ax.loglog(taus, rat.mean(0), "o-", color=col, label=f"{key} measured")
            ax.loglog(taus, per_seed[0]["sweep"][str(d)][f"pred_{key}"], "--", color=col,
                      label=f"{key} exact formula")
        ax.axvline(d / 3, color="gray", lw=0.8)
        ax.axhline(2, color="gray", lw=0.8, ls=":")
        ax.set(title=f"d={d}", xlabel="mixing time tau", ylabel="err(tau)/err(1)")
        ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "tau_sweep.png", dpi=90))
    fig, ax = new_figure(figsize=(4.5, 3.5))
    cells = per_seed[0]["variance_law"]
    meas = np.array([[v["measured"] for v in r["variance_law"]] for r in per_seed]).mean(0)
    pred = [v["predicted"] for v in cells]
    ax.loglog(pred, meas, "o")
    lim = [min(pred) * 0.8, max(pred) * 1.2]
    ax.loglog(lim, lim, "k--", lw=0.8)
    ax.set(xlabel="exact formula", ylabel="Monte Carlo", title="batch-mean second moment")
    paths.append(save_figure(fig, outdir / "variance_law.png", dpi=90))
    fig, ax = new_figure(figsize=(4.5, 3.5))
    for i, d in enumerate(dims):
        rt = per_seed[0]["rate"][str(d)]["taus"]
        for j, t in enumerate(rt):
            n = per_seed[0]["config"]["budget"] * np.array([0.5, 1.0])
            e = np.array([[r["rate"][str(d)]["half"][j], r["rate"][str(d)]["full"][j]]
                          for r in per_seed]).mean(0)
            ax.loglog(n, e * n / (d + t), marker="o", color=f"C{i}", ls="-" if j == 0 else "--",
                      label=f"d={d}, tau={t:g}")
    ax.set(xlabel="calls N", ylabel="N err / (d + tau)", title="rate from x* (flat = (d+tau)/N)")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "rate.png", dpi=90))
    return paths
