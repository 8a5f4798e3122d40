"""Reproduction of Divide & Learn (arXiv 2602.11346): quality vs specialised solvers, equal-budget
hypervolume vs pymoo NSGA-II / MOEA/D / random search (and optuna when installed), the trend
with the number of objectives / size, and sublinear regret on a separable categorical bandit.

Every method evaluates through its own counting Oracle with the same budget B and the same
instance (instance seed derived from the run seed); every method's archive is the
non-dominated set of all its evaluated points; HV ratios use the paper's fixed points.
"""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo._core.rng import derive_seed
from optzoo._core.stats import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    bootstrap_ci,
    paired_ci,
    verdict_from_interval,
)
from optzoo.repro.claim import Claim, Verdict

CLAIMS = [
    Claim("hv_vs_specialised", "D&L reaches 80-98% of the hypervolume of specialised solvers.",
          "HV(D&L, budget B) / HV(reference front): weighted-sum 2-opt or LKH tours (Bi-TSP), "
          "exact epsilon-constraint MILP front (Bi-KP)",
          "bootstrap CI of the ratio > 0.8 on every problem"),
    Claim("sample_efficiency", "At equal evaluation budgets D&L reaches a higher hypervolume than "
          "pymoo NSGA-II, pymoo MOEA/D and random search.",
          "HV ratio at B evaluations, paired by seed and instance",
          "paired CI of HV(D&L) - HV(baseline) > 0 for every problem and baseline"),
    Claim("vs_mobo", "D&L is far more efficient than Bayesian-optimisation-style samplers.",
          "HV at B = optuna_budget vs optuna TPE; optimiser wall time ratio",
          "paired CI of the HV difference >= 0 and CI of log(wall_TPE / wall_D&L) > log 100"),
    Claim("trend", "The advantage of D&L grows with the number of objectives and problem size.",
          "log(HV(D&L)/HV(NSGA-II)) on Tri-TSP-20 (and Bi-TSP-50 at full) minus that on Bi-TSP-20",
          "paired CI of the difference > 0"),
    Claim("regret_ucb", "Regret is sublinear, O(d sqrt(T log T)) (official UCB config).",
          "per-seed slope of log R(T) vs log T over the checkpoints; R(T)/T decreasing",
          "CI of the slope < 0.75 and R(T)/T decreasing on every seed"),
    Claim("regret_ts", "Regret is sublinear, O(d sqrt(T log T)) (official TS config).",
          "as regret_ucb with the TS config", "CI of the slope < 0.75 and R(T)/T decreasing"),
]


@dataclass(frozen=True)
class Config:
    budget: int
    n_weights: int
    problems: tuple[str, ...]
    baselines: tuple[str, ...]
    regret_T: tuple[int, ...]
    regret_variants: tuple[str, ...] = ("ucb", "ts")
    ws_weights: int = 25
    optuna_budget: int = 200
    n_trace: int = 20


SCALES = {
    "smoke": Config(budget=300, n_weights=3, problems=("bi_tsp20",), baselines=("nsga2", "random"),
                    regret_T=(250, 500, 1000), regret_variants=("ucb",), ws_weights=10,
                    optuna_budget=0, n_trace=8),
    "quick": Config(budget=2000, n_weights=10, problems=("bi_tsp20", "bi_kp50", "tri_tsp20"),
                    baselines=("nsga2", "moead", "random"), regret_T=(1000, 2000, 4000),
                    optuna_budget=100),
    "full": Config(budget=10_000, n_weights=25,
                   problems=("bi_tsp20", "bi_kp50", "tri_tsp20", "bi_tsp50"),
                   baselines=("nsga2", "moead", "random"), regret_T=(1000, 4000, 16_000)),
}


def _make(name: str, seed: int):
    from .problems import bi_knapsack, bi_tsp, tri_tsp

    inst = derive_seed(seed, "mo_bandit-instance", name) % (2**31)
    return {"bi_tsp20": lambda: bi_tsp(20, seed=inst), "bi_tsp50": lambda: bi_tsp(50, seed=inst),
            "tri_tsp20": lambda: tri_tsp(20, seed=inst),
            "bi_kp50": lambda: bi_knapsack(50, seed=inst)}[name]()


def _front_list(F, k=200):
    F = np.asarray(F, dtype=float)
    return F[np.argsort(F[:, 0])][:k].tolist() if F.size else []


def run(config: Config, seed: int, progress) -> dict:
    from .baselines import (
        exact_knapsack_front,
        optuna_baseline,
        pymoo_baseline,
        random_search,
        ws_tsp_front,
    )
    from .dnl import bandit_regret, divide_and_learn, weight_vectors
    from .metrics import hv_ratio, hv_trace, nondominated_mask
    from .problems import separable_categorical

    has_optuna = importlib.util.find_spec("optuna") is not None and config.optuna_budget > 0
    steps = len(config.problems) * (2 + len(config.baselines)) + len(config.regret_variants) + int(has_optuna)
    progress.start(steps, "mo_bandit")
    out: dict = {"seed": seed, "problems": {}, "regret": {}, "budget": config.budget}
    cps = np.unique(np.linspace(1, config.budget, config.n_trace).astype(int))
    for name in config.problems:
        P = _make(name, seed)
        sref, sideal = P.ref_point * P.sign, P.ideal_point * P.sign
        rec: dict = {"methods": {}}
        t0 = time.perf_counter()
        res = divide_and_learn(P, config.budget, n_weight_vectors=config.n_weights, seed=seed,
                               n_trace=config.n_trace)
        wall = time.perf_counter() - t0
        Fmin = res.F_all * P.sign
        rec["methods"]["D&L"] = {"hv": hv_ratio(Fmin, sref, sideal), "nfev": res.nfev,
                                 "wall": wall, "trace": hv_trace(Fmin, sref, sideal, cps),
                                 "front": _front_list(res.fun),
                                 "incumbent_hv": hv_ratio(np.array([P.evaluate(x) for x in res.incumbent_archive]) * P.sign, sref, sideal)
                                 if len(res.incumbent_archive) else 0.0}
        progress.advance()
        for b in config.baselines:
            t0 = time.perf_counter()
            orc = (random_search(P, config.budget, seed=seed) if b == "random"
                   else pymoo_baseline(P, config.budget, algorithm=b, seed=seed))
            wall = time.perf_counter() - t0
            _, F = orc.evaluated()
            rec["methods"][b] = {"hv": hv_ratio(F, sref, sideal), "nfev": orc.nfev, "wall": wall,
                                 "trace": hv_trace(F, sref, sideal, cps),
                                 "front": _front_list(F[nondominated_mask(F)] * P.sign)}
            progress.advance()
        t0 = time.perf_counter()
        if name.startswith("bi_tsp") or name.startswith("tri_tsp"):
            Fr, solver = ws_tsp_front(P, weight_vectors(P.n_objectives, config.ws_weights, seed=seed),
                                      seed=seed)
            Fr_min = Fr
        else:
            Fr, solver = exact_knapsack_front(P), "exact MILP front"
            Fr_min = Fr * P.sign
        rec["reference"] = {"solver": solver, "hv": hv_ratio(Fr_min, sref, sideal),
                            "wall": time.perf_counter() - t0, "front": _front_list(Fr)}
        progress.advance()
        if has_optuna and name == "bi_tsp20":
            B = config.optuna_budget
            t0 = time.perf_counter()
            r2 = divide_and_learn(P, B, n_weight_vectors=config.n_weights, seed=seed)
            w_dl = time.perf_counter() - t0
            t0 = time.perf_counter()
            orc = optuna_baseline(P, B, sampler="tpe", seed=seed)
            w_tpe = time.perf_counter() - t0
            rec["mobo"] = {"budget": B, "hv_dl": hv_ratio(r2.F_all * P.sign, sref, sideal),
                           "hv_tpe": hv_ratio(orc.evaluated()[1], sref, sideal),
                           "wall_dl": w_dl, "wall_tpe": w_tpe}
            progress.advance()
        rec["n_objectives"] = P.n_objectives
        out["problems"][name] = rec
    T = max(config.regret_T)
    for v in config.regret_variants:
        prob = separable_categorical(20, 8, 2, noise=0.1, seed=derive_seed(seed, "sep") % (2**31))
        t0 = time.perf_counter()
        r = bandit_regret(prob, T, variant=v, seed=seed)
        R = r["regret"]
        grid = np.unique(np.geomspace(10, T, 30).astype(int))
        out["regret"][v] = {"T": list(config.regret_T), "R": [float(R[t - 1]) for t in config.regret_T],
                            "curve_t": grid.tolist(), "curve_R": [float(R[t - 1]) for t in grid],
                            "argmax_hits": r["argmax_hits"], "wall": time.perf_counter() - t0}
        progress.advance()
    return out


def _combine(verdicts: list[str]) -> str:
    if not verdicts:
        return INCONCLUSIVE
    if all(v == REPRODUCED for v in verdicts):
        return REPRODUCED
    if any(v == NOT_REPRODUCED for v in verdicts):
        return NOT_REPRODUCED
    return INCONCLUSIVE


def judge(per_seed: list[dict]) -> list[Verdict]:
    probs = list(per_seed[0]["problems"])
    out = []
    # hv_vs_specialised
    parts, nums = [], {}
    for p in probs:
        ratio = [r["problems"][p]["methods"]["D&L"]["hv"] / max(r["problems"][p]["reference"]["hv"], 1e-12)
                 for r in per_seed]
        ci = bootstrap_ci(ratio)
        parts.append(verdict_from_interval(ci, threshold=0.8))
        nums[p] = {**ci.to_dict(), "reference": per_seed[0]["problems"][p]["reference"]["solver"]}
    out.append(Verdict("hv_vs_specialised", _combine(parts),
                       "HV(D&L)/HV(reference): " + "; ".join(f"{p} {nums[p]['estimate']:.3f} "
                       f"[{nums[p]['low']:.3f}, {nums[p]['high']:.3f}] vs {nums[p]['reference']}"
                       for p in probs), nums))
    # sample_efficiency
    parts, nums = [], {}
    for p in probs:
        for b in per_seed[0]["problems"][p]["methods"]:
            if b == "D&L":
                continue
            ci = paired_ci([r["problems"][p]["methods"]["D&L"]["hv"] for r in per_seed],
                           [r["problems"][p]["methods"][b]["hv"] for r in per_seed])
            parts.append(verdict_from_interval(ci))
            nums[f"{p}/{b}"] = ci.to_dict()
    out.append(Verdict("sample_efficiency", _combine(parts),
                       "HV(D&L) - HV(baseline) at equal B: " + "; ".join(
                           f"{k} {v['estimate']:+.3f} [{v['low']:+.3f}, {v['high']:+.3f}]" for k, v in nums.items()),
                       nums))
    # vs_mobo
    mobo = [r["problems"].get("bi_tsp20", {}).get("mobo") for r in per_seed]
    if all(m is not None for m in mobo):
        d = paired_ci([m["hv_dl"] for m in mobo], [m["hv_tpe"] for m in mobo])
        w = paired_ci([m["wall_tpe"] for m in mobo], [m["wall_dl"] for m in mobo], transform="logratio")
        v = _combine([verdict_from_interval(d, threshold=-1e-9), verdict_from_interval(w, threshold=np.log(100))])
        out.append(Verdict("vs_mobo", v, f"HV(D&L)-HV(TPE) {d}; log wall ratio TPE/D&L {w}",
                           {"hv_diff": d.to_dict(), "log_wall_ratio": w.to_dict()}))
    else:
        out.append(Verdict("vs_mobo", INCONCLUSIVE, "not measured: optuna is not installed "
                           "(and botorch neither); no BO-style baseline was run", {}))
    # trend
    def lr(r, p):
        m = r["problems"][p]["methods"]
        return float(np.log(max(m["D&L"]["hv"], 1e-12) / max(m["nsga2"]["hv"], 1e-12)))
    parts, nums = [], {}
    for p in ("tri_tsp20", "bi_tsp50"):
        if p in probs and "bi_tsp20" in probs and "nsga2" in per_seed[0]["problems"][p]["methods"]:
            ci = paired_ci([lr(r, p) for r in per_seed], [lr(r, "bi_tsp20") for r in per_seed])
            parts.append(verdict_from_interval(ci))
            nums[f"{p} - bi_tsp20"] = ci.to_dict()
    out.append(Verdict("trend", _combine(parts), "change of log HV(D&L)/HV(NSGA-II): " + (
        "; ".join(f"{k} {v['estimate']:+.3f} [{v['low']:+.3f}, {v['high']:+.3f}]" for k, v in nums.items())
        or "not measured at this scale (needs Tri-TSP-20 / Bi-TSP-50)"), nums))
    # regret
    for v in ("ucb", "ts"):
        if v not in per_seed[0]["regret"]:
            out.append(Verdict(f"regret_{v}", INCONCLUSIVE, f"the {v} config was not run at this scale", {}))
            continue
        slopes, dec = [], []
        for r in per_seed:
            T = np.array(r["regret"][v]["T"], dtype=float)
            R = np.maximum(np.array(r["regret"][v]["R"]), 1e-12)
            slopes.append(float(np.polyfit(np.log(T), np.log(R), 1)[0]))
            dec.append(bool(np.all(np.diff(R / T) < 0)))
        ci = bootstrap_ci(slopes)
        vv = verdict_from_interval(ci, threshold=0.75, higher_is_better=False)
        if not all(dec):
            vv = NOT_REPRODUCED
        bound = [r["regret"][v]["R"][-1] / np.sqrt(T[-1] * np.log(T[-1])) for r in per_seed]
        out.append(Verdict(f"regret_{v}", vv, f"slope of log R vs log T {ci}; R/T decreasing on "
                           f"{sum(dec)}/{len(dec)} seeds; R/sqrt(T log T) at T={int(T[-1])}: "
                           f"{np.mean(bound):.1f}",
                           {"slope": ci.to_dict(), "decreasing": dec, "R_over_sqrtTlogT": bound}))
    return out


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    paths = []
    probs = list(per_seed[0]["problems"])
    B = per_seed[0]["budget"]
    fig, axes = plt.subplots(1, len(probs), figsize=(4.2 * len(probs), 3.3), squeeze=False)
    for ax, p in zip(axes[0], probs):
        for mname in per_seed[0]["problems"][p]["methods"]:
            tr = np.array([r["problems"][p]["methods"][mname]["trace"] for r in per_seed])
            x = np.unique(np.linspace(1, B, tr.shape[1]).astype(int))[: tr.shape[1]]
            ax.plot(x, tr.mean(0), label=mname)
        ref = np.mean([r["problems"][p]["reference"]["hv"] for r in per_seed])
        ax.axhline(ref, ls="--", c="k", lw=0.8, label=per_seed[0]["problems"][p]["reference"]["solver"])
        ax.set_title(p)
        ax.set_xlabel("evaluations")
        ax.set_ylabel("HV ratio")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    paths.append(outdir / "hv_vs_evaluations.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(probs), figsize=(4.2 * len(probs), 3.3), squeeze=False)
    for ax, p in zip(axes[0], probs):
        rec = per_seed[0]["problems"][p]
        for mname, st in (("D&L", "o"), ("nsga2", "x")):
            if mname in rec["methods"] and rec["methods"][mname]["front"]:
                F = np.array(rec["methods"][mname]["front"])
                ax.plot(F[:, 0], F[:, 1], st, ms=3, label=mname)
        if rec["reference"]["front"]:
            F = np.array(rec["reference"]["front"])
            ax.plot(F[:, 0], F[:, 1], "k.", ms=3, label=rec["reference"]["solver"])
        ax.set_title(f"{p} (seed {per_seed[0]['seed']}, first 2 objectives)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    paths.append(outdir / "fronts.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(4.5, 3.3))
    for v in per_seed[0]["regret"]:
        t = np.array(per_seed[0]["regret"][v]["curve_t"])
        R = np.mean([r["regret"][v]["curve_R"] for r in per_seed], 0)
        ax.loglog(t, R, label=f"D&L {v}")
    t = np.array(per_seed[0]["regret"][next(iter(per_seed[0]["regret"]))]["curve_t"], dtype=float)
    ax.loglog(t, 20 * np.sqrt(t * np.log(t + 1)), "k--", lw=0.8, label="d sqrt(T log T), d=20")
    ax.loglog(t, t * 2.0, "k:", lw=0.8, label="linear")
    ax.set_xlabel("T")
    ax.set_ylabel("R(T)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(outdir / "regret.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(5, 3.3))
    names = list(per_seed[0]["problems"][probs[0]]["methods"])
    walls = [np.mean([r["problems"][probs[0]]["methods"][n]["wall"] for r in per_seed]) for n in names]
    ax.bar(names, walls)
    ax.set_ylabel(f"wall time (s), {probs[0]}, B={B}")
    fig.tight_layout()
    paths.append(outdir / "wall_time.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)
    return paths
