"""Reproduction of CoPro (ICML 2026, reconstructed): claims, scales, run, judge, figures.

Task A of the spec (``opamp_task.py``): op-amp sizing as a contextual bandit. Every arm (CoPro
and the group-RL baselines 1-4 of ``optzoo.copro.baselines``) gets the same policy class, the
same spec stream, the same sampling stream, the same number of evaluations, the same trust
region and the same learning-rate grid, tuned per arm and regime on a separate tuning stream
(other specs, other held-out specs, other initialisation), never on the evaluation stream.

Per seed and regime the judged number is the feasible-HV ratio of the final policy (mean over
held-out specs) of CoPro minus that of the best baseline *on that seed* (the per-seed maximum
over baselines 1-4: conservative against CoPro). Random search at equal total evaluations is
and pymoo's NSGA-II are reported alongside (not amortised, not judged). At full, IGD+ against
high-budget NSGA-II fronts is reported on 8 held-out specs per regime, and Task B
(``toolworld.py``: tool use on a tiny transformer) is run for every arm and judged by
``c1_tool_use``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo._core.rng import np_rng
from optzoo.copro.repro.opamp_task import (
    ARMS,
    BASELINES,
    NSGA2_POP,
    REGIMES,
    igd_plus,
    nsga2_search,
    random_search,
    sample_specs,
    train_arm,
)
from optzoo.copro.repro.toolworld import TaskBConfig, heldout_queries, random_search_b, train_arm_b
from optzoo.repro.claim import Claim, Verdict
from optzoo.repro.figures import new_figure, save_figure
from optzoo.repro.judging import judge as decide
from optzoo.repro.judging import paired

__all__ = ["CLAIMS", "SCALES", "Config", "figures", "judge", "run"]

STRESSED = ("scarcity", "drift", "near_ties", "scarcity_drift")
DRIFTED = ("drift", "scarcity_drift")
#: margin of the benign parity claim, in HV-ratio units (INFERRED: "parity")
PARITY_MARGIN = 0.02

CLAIMS = [
    Claim("c1_stressed",
          "CoPro reaches a higher feasible hypervolume than every scalarised / normalised group-RL "
          "baseline (GRPO weighted sum, GRPO-Lagrangian, GDPO normalise-then-sum, Pareto-rank) in "
          "each stressed regime (feasibility scarcity, scale drift, near ties) run at this scale.",
          "per stressed regime: feasible HV ratio of CoPro minus the per-seed best of baselines 1-4",
          direction="greater", threshold=0.0, source="abstract; spec C1"),
    Claim("c1_benign",
          "In the benign regime CoPro is at least on par with the best baseline (not worse by more "
          f"than {PARITY_MARGIN} HV ratio).",
          "benign: feasible HV ratio of CoPro minus the per-seed best of baselines 1-4",
          direction="noninferior", threshold=0.0, margin=PARITY_MARGIN, source="spec C1 (parity)"),
    Claim("c2_drift",
          "CoPro is more robust to objective-scale drift (GBW log -> linear, power mW -> uW at T/2) "
          "than scalarised GRPO and GDPO: its HV changes more favourably across the switch.",
          "per drifted regime and baseline (grpo, gdpo): (HV final - HV at switch) of CoPro minus "
          "the same for the baseline", direction="greater", threshold=0.0, source="abstract; spec C2"),
    Claim("c1_tool_use",
          "On the tool-use task (Task B: a tiny transformer plans calls to 8 synthetic tools under a "
          "format rule and a cost budget) CoPro reaches a higher feasible hypervolume than every "
          "group-RL baseline.",
          "Task B: feasible HV ratio of CoPro minus the per-seed best of baselines 1-4",
          direction="greater", threshold=0.0, source="abstract (LLM tool use); spec C1, Task B"),
    Claim("copro_vs_rank",
          "CoPro against the Pareto-rank baseline alone (also scale invariant; a null result is "
          "plausible, spec section 7): higher feasible HV in the stressed regimes.",
          "per stressed regime: HV ratio CoPro minus Pareto-rank", direction="greater",
          threshold=0.0, kind="finding", source="spec section 3 (separate line)"),
]


@dataclass(frozen=True)
class Config:
    regimes: tuple = ("benign", "scarcity_drift")
    arms: tuple = ARMS
    iters: int = 100
    n_specs: int = 16
    G: int = 16
    epochs: int = 2
    hidden: int = 64
    kl_coef: float = 1.0
    lag_lr: float = 1.0
    lr_grid: tuple = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
    tune_iters: int = 50
    tune_n_specs: int | None = None  # specs per tuning iteration (None: n_specs)
    eval_specs: int = 16
    eval_k: int = 64
    eval_every: int = 10
    igd_specs: int = 0  # held-out specs per regime scored by IGD+ (high-budget NSGA-II fronts)
    task_b: TaskBConfig | None = None  # Task B (tool use on a tiny transformer); full only
    seeds: int = 5


SCALES = {
    "smoke": Config(regimes=("scarcity",), arms=("copro", "grpo"), iters=15, n_specs=8, G=8, lr_grid=(1e-2,), tune_iters=0,
                    eval_specs=4, eval_k=32, eval_every=5, seeds=2),
    # quick: sized from pilots on seeds 90000-90003. CPU per seed: about 32 s (3-point grid),
    # 42 s (4 points), 43 s (5 points). Per-seed c1 differences 0.024, 0.055, 0.073, 0.035
    # (sd about 0.02): 5 seeds give a t half-width near 0.03, below the pilot effect. The grid
    # was widened downward twice after the pilots because the group-normalised baselines chose
    # its lowest point, and once more at both ends (1e-4 and 1e-1) after the first full run,
    # where GDPO and GRPO still chose 3e-4, CoPro and Pareto-rank 3e-2, and every arm of
    # Task B 3e-4 (a grid's end is not a tuned value).
    "quick": Config(seeds=5),
    # full: the spec's content (all regimes, 200 iterations x 32 specs x G = 16, 32 held-out
    # specs, IGD+ on 8 of them); the learning rate is tuned at quick's tuning size (50
    # iterations x 16 specs, the same grid, every arm) so that 5 seeds fit in about 30
    # CPU-minutes.
    "full": Config(regimes=("benign", "scarcity", "drift", "near_ties", "scarcity_drift"),
                   iters=200, n_specs=32, G=16, tune_iters=50, tune_n_specs=16, eval_specs=32,
                   igd_specs=8, task_b=TaskBConfig(), seeds=5),
}


def _tune(arm, regime, cfg, seed):
    """Pick the arm's learning rate on the tuning stream (never the evaluation stream)."""
    if len(cfg.lr_grid) == 1 or cfg.tune_iters == 0:
        return float(cfg.lr_grid[0]), {}
    from dataclasses import replace

    tcfg = replace(cfg, iters=cfg.tune_iters, n_specs=cfg.tune_n_specs or cfg.n_specs)
    scores = {lr: train_arm(arm, regime, tcfg, seed, lr=lr, stream="tune")["hv"] for lr in cfg.lr_grid}
    best = max(scores, key=lambda k: (scores[k], -k))
    return float(best), {f"{k:g}": v for k, v in scores.items()}


def _run_task_b(cfg, seed, progress, n_tune):
    """Task B for every arm: lr tuned on the tuning stream (half the iterations, the same
    grid), then trained on the evaluation stream; random search at equal evaluations."""
    from dataclasses import replace

    tb = cfg.task_b
    held = heldout_queries(tb, seed)
    res = {}
    for arm in cfg.arms:
        scores = {}
        if n_tune:
            tcfg = replace(tb, iters=max(tb.iters // 2, 1))
            scores = {lr: train_arm_b(arm, tcfg, seed, lr=lr, stream="tune")["hv"] for lr in cfg.lr_grid}
        lr = max(scores, key=lambda k: (scores[k], -k)) if scores else float(cfg.lr_grid[0])
        progress.advance(n_tune)
        r = train_arm_b(arm, tb, seed, lr=lr, eval_queries=held, record="trace")
        r.update(lr=float(lr), tune_scores={f"{k:g}": v for k, v in scores.items()})
        res[arm] = r
        progress.advance()
    budget = tb.iters * tb.n_queries * tb.G // tb.eval_queries
    res["random_search"] = {"hv": random_search_b(tb, seed, budget, eval_queries=held),
                            "budget_per_spec": budget}
    return res


def run(config: Config, seed: int, progress) -> dict:
    cfg = config
    n_tune = 0 if (len(cfg.lr_grid) == 1 or cfg.tune_iters == 0) else len(cfg.lr_grid)
    arms = cfg.arms
    n_tasks = len(cfg.regimes) + (cfg.task_b is not None)
    progress.start(n_tasks * len(arms) * (1 + n_tune), "copro")
    out: dict = {"config": {"regimes": list(cfg.regimes), "iters": cfg.iters, "n_specs": cfg.n_specs,
                            "G": cfg.G, "eval_specs": cfg.eval_specs, "eval_k": cfg.eval_k},
                 "regimes": {}}
    for regime in cfg.regimes:
        held = sample_specs(REGIMES[regime][0], cfg.eval_specs, np_rng(seed, "copro", "eval", regime, "heldout"))
        res = {}
        for arm in arms:
            lr, scores = _tune(arm, regime, cfg, seed)
            progress.advance(n_tune)
            r = train_arm(arm, regime, cfg, seed, lr=lr, eval_specs=held,
                          record="front" if arm in ("copro", "grpo") else "trace",
                          keep_samples=cfg.igd_specs)
            r.update(lr=lr, tune_scores=scores)
            res[arm] = r
            progress.advance()
        if cfg.igd_specs:
            igd = igd_plus(regime, seed, held, {a: res[a].pop("_samples") for a in arms},
                           n_specs=cfg.igd_specs)
            for a in arms:
                res[a]["igd_plus"] = igd[a]
        budget = max(cfg.iters * cfg.n_specs * cfg.G // cfg.eval_specs, cfg.eval_k)
        res["random_search"] = {"hv": random_search(regime, cfg, seed, budget, eval_specs=held),
                                "budget_per_spec": budget}
        res["nsga2"] = {"hv": nsga2_search(regime, cfg, seed, budget, eval_specs=held),
                        "budget_per_spec": budget, "pop_size": NSGA2_POP}
        out["regimes"][regime] = res
    if cfg.task_b is not None:
        out["task_b"] = _run_task_b(cfg, seed, progress, n_tune)
        out["config"]["task_b_eval_every"] = cfg.task_b.eval_every
    return out


def _best_baseline(reg):
    present = [b for b in BASELINES if b in reg]
    return max(reg[b]["hv"] for b in present) if present else None


def judge(per_seed: list[dict]) -> list[Verdict]:
    regimes = per_seed[0]["regimes"].keys()
    full_arms = all(all(b in s["regimes"][r] for b in BASELINES) for s in per_seed for r in regimes)
    by = {c.id: c for c in CLAIMS}
    out = []

    def diff(r, other):
        a = [s["regimes"][r]["copro"]["hv"] for s in per_seed]
        b = [other(s["regimes"][r]) for s in per_seed]
        return paired(a, b)

    nums = {f"{r}/{arm}": float(np.mean([s["regimes"][r][arm]["hv"] for s in per_seed]))
            for r in regimes for arm in per_seed[0]["regimes"][r]}
    nums.update({f"{r}/{arm}/igd_plus": float(np.mean([s["regimes"][r][arm]["igd_plus"] for s in per_seed]))
                 for r in regimes for arm in ARMS
                 if all(s["regimes"][r].get(arm, {}).get("igd_plus") is not None for s in per_seed)})
    note = "" if full_arms else "smoke: only baseline 1 (grpo) was run"
    stressed = {r: diff(r, _best_baseline) for r in regimes if r in STRESSED}
    out.append(decide(by["c1_stressed"], stressed or None, numbers=nums, note=note or (
        "" if stressed else "no stressed regime at this scale")))
    out.append(decide(by["c1_benign"], diff("benign", _best_baseline) if "benign" in regimes else None,
                      note=note or ("" if "benign" in regimes else "benign regime not run at this scale")))
    drift = {}
    for r in regimes:
        if r not in DRIFTED:
            continue
        for b in ("grpo", "gdpo"):
            if all(b in s["regimes"][r] for s in per_seed):
                def change(reg, arm):
                    return reg[arm]["hv"] - reg[arm]["hv_switch"]
                drift[f"{r} vs {b}"] = paired([change(s["regimes"][r], "copro") for s in per_seed],
                                              [change(s["regimes"][r], b) for s in per_seed])
    out.append(decide(by["c2_drift"], drift or None, note="" if drift else "no drifted regime at this scale"))
    if all("task_b" in s for s in per_seed):
        tb = paired([s["task_b"]["copro"]["hv"] for s in per_seed],
                    [_best_baseline(s["task_b"]) for s in per_seed])
        tb_nums = {f"task_b/{a}": float(np.mean([s["task_b"][a]["hv"] for s in per_seed]))
                   for a in per_seed[0]["task_b"]}
        out.append(decide(by["c1_tool_use"], tb, numbers=tb_nums))
    else:
        out.append(decide(by["c1_tool_use"], None, note="Task B is run at full scale only"))
    rank = {r: diff(r, lambda reg: reg["pareto_rank"]["hv"]) for r in regimes
            if r in STRESSED and all("pareto_rank" in s["regimes"][r] for s in per_seed)}
    out.append(decide(by["copro_vs_rank"], rank or None, note="" if rank else "rank baseline not run"))
    return out


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []
    s0 = per_seed[0]
    regimes = list(s0["regimes"])
    fig, axes = new_figure(2, len(regimes), figsize=(5 * len(regimes), 7), squeeze=False)
    for j, r in enumerate(regimes):
        for arm in s0["regimes"][r]:
            if "hv_trace" not in s0["regimes"][r][arm]:
                continue
            hv = np.array([s["regimes"][r][arm]["hv_trace"] for s in per_seed])
            fr = np.array([s["regimes"][r][arm]["feas_trace"] for s in per_seed])
            x = (np.arange(hv.shape[1]) + 1) * (s0["config"]["iters"] // max(hv.shape[1], 1))
            axes[0][j].plot(x, hv.mean(0), label=arm)
            axes[1][j].plot(x, fr.mean(0), label=arm)
        if r in DRIFTED:
            for ax in (axes[0][j], axes[1][j]):
                ax.axvline(s0["config"]["iters"] // 2, color="k", ls=":", lw=1)
        axes[0][j].set_title(f"{r}: feasible HV ratio (mean over seeds)")
        axes[1][j].set_title(f"{r}: feasibility rate")
        axes[1][j].set_xlabel("iteration")
        axes[0][j].legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "hv_vs_iteration.png"))
    fig, axes = new_figure(1, 2, figsize=(10, 4), squeeze=False)
    r = regimes[-1]
    for arm, mk in (("copro", "o"), ("grpo", "x")):
        fr = s0["regimes"][r][arm].get("front")
        if fr:
            F = np.asarray(fr["F"])
            m = np.asarray(fr["feasible"], dtype=bool)
            axes[0][0].scatter(F[m, 2] * 1e3, F[m, 0], marker=mk, label=f"{arm} feasible", s=14)
    axes[0][0].set_xlabel("power (mW)")
    axes[0][0].set_ylabel("gain (dB)")
    axes[0][0].set_title(f"{r}: samples on held-out spec 0 (first seed)")
    axes[0][0].legend(fontsize=7)
    q = s0["regimes"][r]["copro"]
    if q.get("q_feasible"):
        axes[0][1].plot(q["q_feasible"], label="q*(feasible)")
        axes[0][1].plot(np.asarray(q["q_entropy"]) / np.log(s0["config"]["G"]), label="entropy(q*)/log G")
        axes[0][1].set_xlabel("iteration")
        axes[0][1].legend(fontsize=7)
        axes[0][1].set_title(f"{r}: CoPro E-step diagnostics")
    paths.append(save_figure(fig, outdir / "fronts_and_estep.png"))
    if all("task_b" in s for s in per_seed):
        fig, axes = new_figure(1, 2, figsize=(10, 3.6), squeeze=False)
        every = s0["config"]["task_b_eval_every"]
        for arm, rec in s0["task_b"].items():
            if "hv_trace" not in rec:
                continue
            hv = np.array([s["task_b"][arm]["hv_trace"] for s in per_seed])
            fr = np.array([s["task_b"][arm]["feas_trace"] for s in per_seed])
            x = (np.arange(hv.shape[1]) + 1) * every
            axes[0][0].plot(x, hv.mean(0), label=arm)
            axes[0][1].plot(x, fr.mean(0), label=arm)
        axes[0][0].axhline(np.mean([s["task_b"]["random_search"]["hv"] for s in per_seed]), color="k",
                           ls=":", lw=1, label="random search (equal evaluations)")
        axes[0][0].set_title("Task B (tool use): feasible HV ratio, mean over seeds")
        axes[0][1].set_title("Task B: feasibility rate of held-out samples")
        for ax in axes[0]:
            ax.set_xlabel("iteration")
        axes[0][0].legend(fontsize=7)
        paths.append(save_figure(fig, outdir / "task_b_hv.png"))
    return paths
