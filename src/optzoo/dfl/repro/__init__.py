"""Reproduction of dfl (arXiv 2606.19587): claims, scales, run, judge, figures.

The paper's loss is not public. Every claim is judged separately for OUR two candidates,
labelled A (directional) and B (pool softmin) in the claim id and statement; neither is the
paper's loss, so a verdict says what these candidates do, not what the paper's loss does.

Per seed and (problem, deg): fresh PyEPO data (shortest path 5x5 / knapsack 32 items, 2
dims, capacity 20; at full also TSP 9 nodes / portfolio 50 assets; 5 features, noise
half-width 0.5), a 20% validation split of the training
set, the same initial ``nn.Linear`` and batch order for all methods, Adam for ``epochs``
epochs, and per method the lr with the lowest validation regret from the same grid (tau of B
fixed at 1, see ``Config``); test regret is ``pyepo.metric.regret`` (normalised). Timing: CPU time with SciPy's HiGHS
(see ``experiment.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo.dfl.repro.experiment import SOLVER_FREE, run_problem, time_problem
from optzoo.repro.claim import Claim, Verdict
from optzoo.repro.figures import new_figure, save_figure
from optzoo.repro.judging import judge as decide
from optzoo.repro.judging import paired

__all__ = ["CLAIMS", "SCALES", "Config", "figures", "judge", "run"]

CANDIDATES = {"A": "candidate A (directional, INFERRED)", "B": "candidate B (pool softmin, INFERRED)"}
REGRET_SLACK = 1.2     # spec: "within ~10-20% relative" of the best solver-based loss
SPEEDUP = 10.0         # spec: "training-loop time >= 10x below SPO+"
NEAR_MSE = 2.0         # "near MSE's": within a factor 2 (INFERRED)


def _claims() -> list[Claim]:
    out = []
    for k in CANDIDATES:
        out += [
            Claim(f"regret_competitive_{k}",
                  f"At deg >= 4, our {CANDIDATES[k]} reaches a test regret within 20% of the "
                  "better of PyEPO's SPO+ and PFYL (the paper: 'competitive with state of the art').",
                  f"log(regret {k} / min(regret SPO+, regret PFYL)) per seed",
                  direction="less", threshold=math.log(REGRET_SLACK), source="abstract; spec claims"),
            Claim(f"beats_mse_misspecified_{k}",
                  f"At deg >= 4 (misspecified linear model), our {CANDIDATES[k]} has a lower test "
                  "regret than two-stage MSE.",
                  f"log(regret {k} / regret MSE) per seed", direction="less", threshold=0.0,
                  source="spec claims (Fisher consistency makes MSE the bar)"),
            Claim(f"speed_{k}",
                  f"The training loop of our {CANDIDATES[k]} takes at least 10x less CPU time "
                  "than PyEPO's SPO+ on the same data, model and batches (HiGHS solver).",
                  f"log(loop CPU time SPO+ / loop CPU time {k}) per epoch",
                  direction="greater", threshold=math.log(SPEEDUP),
                  source="abstract ('orders of magnitude'); spec claims"),
            Claim(f"speed_near_mse_{k}",
                  f"The training loop of our {CANDIDATES[k]} costs less than twice the CPU time of "
                  "two-stage MSE.",
                  f"log(loop CPU time {k} / loop CPU time MSE) per epoch", direction="less",
                  threshold=math.log(NEAR_MSE), source="issue ('near MSE's'); factor 2 INFERRED"),
            Claim(f"speed_with_precompute_{k}",
                  f"Charging the one-off pre-computation (one solve per training instance) to "
                  f"every method, our {CANDIDATES[k]} still trains at least 10x faster than SPO+ "
                  "over the scale's epochs (our stricter reading of the speed claim).",
                  f"log((pre + E x epoch SPO+) / (pre + E x epoch {k})), E = the scale's epochs",
                  direction="greater", threshold=math.log(SPEEDUP), kind="finding",
                  source="issue (pre-computation counted for every method)"),
        ]
    out.append(Claim("solver_free",
                     "Candidates A and B (and MSE) make zero solver calls in the training loop, "
                     "counted by a wrapper that raises on any call.",
                     "solver calls inside the training loop == 0, per (seed, problem, run)",
                     direction="all", unit="instance", kind="check",
                     source="abstract (solver-free); our candidates are solver-free by construction"))
    return out


CLAIMS = _claims()


@dataclass(frozen=True)
class Config:
    # cells: (problem, deg), or (problem, deg, n_train) to give that cell (all its methods
    # alike) its own training-set size
    problems: tuple = (("shortest_path", 4), ("shortest_path", 6), ("knapsack", 4), ("knapsack", 6))
    n_train: int = 1000
    n_test: int = 1000
    val_frac: float = 0.2
    epochs: int = 10
    batch_size: int = 32
    lrs: tuple = (1e-3, 1e-2)
    # tau is fixed: for a linear model l_B(c; tau) = tau * l_B(c / tau; 1), so tau trades off
    # against the output scale the model learns; a tau grid would give B a larger tuning grid
    # than the baselines (lr only). Candidates from the spec's {0.1, 1, 10}: 1.
    taus: tuple = (1.0,)
    pfyl_samples: int = 3
    # quick: the PyEPO arms SPO+, PFYL, DBB and NCE (solve_ratio 0.05, the solver-light one);
    # the solver-light SPO+ and CMAP variants run at full only (CPU budget of quick)
    methods: tuple = ("mse", "spo", "pfyl", "dbb", "nce", "A", "B")
    time_n: int = 100
    time_epochs: int = 1           # epochs timed for solver-based losses
    time_epochs_free: int = 10     # epochs per round timed for solver-free ones (ms per epoch)
    time_rounds: int = 10          # interleaved rounds of the solver-free loops (see time_problem)
    time_methods: tuple = ("mse", "spo", "nce", "A", "B")
    seeds: int = 5


SCALES = {
    "smoke": Config(problems=(("shortest_path", 4), ("knapsack", 4)), n_train=100, n_test=100,
                    epochs=2, lrs=(1e-2,), taus=(1.0,), methods=("mse", "spo", "pfyl", "dbb", "nce", "A", "B"),
                    time_n=20, time_epochs_free=2, time_rounds=2, time_methods=("mse", "spo", "A", "B"), seeds=2),
    "quick": Config(),
    # full, sized to at most about 40 CPU-minutes for all its seeds (the earlier full, 16
    # cells at n_train 1000, 50 epochs, PFYL 10 samples, 10 seeds, TSP through HiGHS, was
    # about 71 CPU-hours a seed). Every method has the same cells, data, epochs and lr grid.
    # Measured (pilot seed 90000, deg 6, one thread, process CPU s per training instance and
    # epoch for one lr, all nine arms together; docs/papers/dfl.md, Reproduction): shortest
    # path 2.2e-4, knapsack 4.5e-4, TSP 9 nodes (enumerated tours) 8.4e-4, portfolio 7.2e-3.
    # Per cell (x 2 lrs x 20 epochs, plus validation, test and pre-computation solves):
    # shortest path ~8 s, knapsack ~15 s, TSP ~29 s (n_train 1000), portfolio ~57 s
    # (n_train 200; one whole portfolio deg-6 cell measured 49.5 s on pilot seed 90002);
    # the four timing runs 12 s together (measured). Total 8 x 4 + 15 x 4 + 29 x 2 + 57 x 2
    # + 12 + ~5 (imports, data) = about 280 CPU-s a seed, about 23 CPU-minutes for the 5
    # seeds (about 12 minutes of wall time with --jobs 2 on 2 idle cores).
    # Reduced from the earlier full: TSP 10 -> 9 nodes (its 20,160 tours make the exact
    # enumeration oracle ~0.1 ms a solve; 10 nodes' 181,440 tours take ~3.5 ms, HiGHS DFJ
    # 20-55 ms); TSP and portfolio at deg 4 and 6 only (where the claims are judged);
    # portfolio at n_train 200 (its exact solve takes ~1 ms); 20 epochs; PFYL 3 samples;
    # 5 seeds; timing on 200 instances for 1 epoch. lr grid {1e-2, 1e-1} (quick: {1e-3,
    # 1e-2}): on pilot seed 90001 (TSP and portfolio, 80 training instances, 20 epochs)
    # lr 1e-2 left MSE, A and SPO+ under-trained where 1e-1 converged.
    "full": Config(problems=(*((p, d) for p in ("shortest_path", "knapsack") for d in (1, 2, 4, 6)),
                             ("tsp", 4), ("tsp", 6), ("portfolio", 4, 200), ("portfolio", 6, 200)),
                   n_train=1000, n_test=1000, epochs=20, lrs=(1e-2, 1e-1), pfyl_samples=3,
                   time_n=200,
                   methods=("mse", "spo", "pfyl", "dbb", "nce", "spo_light", "cmap_light", "A", "B"),
                   time_epochs=1, time_epochs_free=20,
                   time_methods=("mse", "spo", "spo_light", "nce", "A", "B"), seeds=5),
}


def _cells(cfg: Config) -> list[tuple[str, int, int | None]]:
    """(problem, deg, n_train or None for ``cfg.n_train``) for every cell of ``cfg``."""
    return [(c[0], int(c[1]), int(c[2]) if len(c) > 2 else None) for c in cfg.problems]


def run(config: Config, seed: int, progress) -> dict:
    cfg = config
    cells = _cells(cfg)
    steps = sum(len(cfg.lrs) * (len(cfg.taus) if m == "B" else 1) for m in cfg.methods)
    timed = sorted({p for p, _, _ in cells})
    progress.start(steps * len(cells) + len(timed) * len(cfg.time_methods), "dfl")
    res: dict = {"config": {"problems": [list(p) for p in cfg.problems], "epochs": cfg.epochs,
                            "n_train": cfg.n_train, "n_test": cfg.n_test,
                            "pfyl_samples": cfg.pfyl_samples, "time_n": cfg.time_n,
                            "time_epochs": cfg.time_epochs, "time_epochs_free": cfg.time_epochs_free,
                            "time_rounds": cfg.time_rounds}}
    res["regret"] = [run_problem(p, d, cfg, seed, progress, n_train=n) for p, d, n in cells]
    # timing on the largest deg of each problem (cost depends on the solver, not on deg)
    res["timing"] = [time_problem(p, max(d for q, d, _ in cells if q == p), cfg, seed, progress)
                     for p in timed]
    return res


def _name(r: dict) -> str:
    return f"{r['problem']} deg={r['deg']}"


def _per_epoch(t: dict, m: str) -> float:
    """Loop CPU s per epoch: the median over the interleaved rounds where there are rounds
    (solver-free loops, see ``time_problem``), else the total over its epochs."""
    d = t["methods"][m]
    if d.get("round_cpu_s"):
        return float(np.median(d["round_cpu_s"])) / d["round_epochs"]
    return d["loop_cpu_s"] / d["epochs"]


def judge(per_seed: list[dict]) -> list[Verdict]:
    """One verdict per CLAIMS entry, in order, each from :func:`optzoo.repro.judging.judge`."""
    cells = [(i, _name(r)) for i, r in enumerate(per_seed[0]["regret"]) if r["deg"] >= 4]
    timed = [t["problem"] for t in per_seed[0]["timing"]]
    epochs = per_seed[0]["config"]["epochs"]

    def reg(s, i, m):
        return max(s["regret"][i]["methods"][m]["test_regret"], 1e-9)

    ev, notes, numbers = {}, {}, {}
    for k in CANDIDATES:
        ev[f"regret_competitive_{k}"] = {
            name: paired([reg(s, i, k) for s in per_seed],
                         [min(reg(s, i, "spo"), reg(s, i, "pfyl")) for s in per_seed], "logratio")
            for i, name in cells}
        ev[f"beats_mse_misspecified_{k}"] = {
            name: paired([reg(s, i, k) for s in per_seed], [reg(s, i, "mse") for s in per_seed],
                         "logratio") for i, name in cells}
        mean_reg = {name: {m: float(np.mean([reg(s, i, m) for s in per_seed]))
                           for m in per_seed[0]["regret"][i]["methods"]} for i, name in cells}
        numbers[f"regret_competitive_{k}"] = {"mean test regret": mean_reg}
        numbers[f"beats_mse_misspecified_{k}"] = {"mean test regret": mean_reg}
        ev[f"speed_{k}"] = {
            t: paired([_per_epoch(s["timing"][j], "spo") for s in per_seed],
                      [_per_epoch(s["timing"][j], k) for s in per_seed], "logratio")
            for j, t in enumerate(timed)}
        ev[f"speed_near_mse_{k}"] = {
            t: paired([_per_epoch(s["timing"][j], k) for s in per_seed],
                      [_per_epoch(s["timing"][j], "mse") for s in per_seed], "logratio")
            for j, t in enumerate(timed)}
        ev[f"speed_with_precompute_{k}"] = {
            t: paired([s["timing"][j]["precompute_cpu_s"] + epochs * _per_epoch(s["timing"][j], "spo")
                       for s in per_seed],
                      [s["timing"][j]["precompute_cpu_s"] + epochs * _per_epoch(s["timing"][j], k)
                       for s in per_seed], "logratio")
            for j, t in enumerate(timed)}
        cpu = {t: {m: float(np.mean([_per_epoch(s["timing"][j], m) for s in per_seed]))
                   for m in per_seed[0]["timing"][j]["methods"]} for j, t in enumerate(timed)}
        pre = {t: float(np.mean([s["timing"][j]["precompute_cpu_s"] for s in per_seed]))
               for j, t in enumerate(timed)}
        for cid in (f"speed_{k}", f"speed_near_mse_{k}", f"speed_with_precompute_{k}"):
            numbers[cid] = {"mean loop CPU s per epoch (HiGHS)": cpu, "mean precompute CPU s": pre}
        notes[f"speed_with_precompute_{k}"] = f"E = {epochs} epochs"
    flags = []
    for s in per_seed:
        for r in s["regret"]:
            flags += [r["methods"][m]["loop_solver_calls"] == 0 for m in SOLVER_FREE if m in r["methods"]]
        for t in s["timing"]:
            flags += [t["methods"][m]["solver_calls"] == 0 for m in SOLVER_FREE if m in t["methods"]]
    ev["solver_free"] = flags
    calls = {m: int(np.mean([sum(r["methods"][m]["loop_solver_calls"] for r in s["regret"])
                             for s in per_seed]))
             for m in per_seed[0]["regret"][0]["methods"]}
    numbers["solver_free"] = {"mean loop solver calls per seed (selected runs)": calls}
    return [decide(cl, ev[cl.id], note=notes.get(cl.id, ""), numbers=numbers.get(cl.id))
            for cl in CLAIMS]


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []
    cells = per_seed[0]["regret"]
    methods = list(cells[0]["methods"])
    fig, axes = new_figure(1, len(cells), figsize=(3.2 * len(cells), 3.6), squeeze=False)
    for ax, (i, r) in zip(axes[0], enumerate(cells), strict=True):
        vals = np.array([[s["regret"][i]["methods"][m]["test_regret"] for m in methods]
                         for s in per_seed])
        mean = vals.mean(0)
        err = vals.std(0, ddof=1) / math.sqrt(len(vals)) if len(vals) > 1 else np.zeros_like(mean)
        ax.bar(range(len(methods)), mean, yerr=err, color=[f"C{j}" for j in range(len(methods))])
        ax.set_xticks(range(len(methods)), methods, rotation=60, fontsize=7)
        ax.set(title=_name(r), ylabel="normalised test regret")
    paths.append(save_figure(fig, outdir / "regret.png", dpi=90))
    timing = per_seed[0]["timing"]
    fig, axes = new_figure(1, len(timing), figsize=(4.2 * len(timing), 3.6), squeeze=False)
    for ax, (j, t) in zip(axes[0], enumerate(timing), strict=True):
        cell = max((i for i, r in enumerate(cells) if r["problem"] == t["problem"]),
                   key=lambda i: cells[i]["deg"])
        for q, m in enumerate(t["methods"]):
            x = [_per_epoch(s["timing"][j], m) for s in per_seed]
            y = [s["regret"][cell]["methods"][m]["test_regret"] for s in per_seed]
            ax.scatter(x, y, color=f"C{q}", label=m, s=14)
        ax.set_xscale("log")
        ax.set(title=f"{t['problem']}: regret vs loop time", xlabel="loop CPU s / epoch (HiGHS)",
               ylabel=f"test regret ({_name(cells[cell])})")
        ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "regret_vs_time.png", dpi=90))
    fig, ax = new_figure(figsize=(5, 3.4))
    calls = [np.mean([sum(r["methods"][m]["loop_solver_calls"] for r in s["regret"])
                      for s in per_seed]) for m in methods]
    ax.bar(range(len(methods)), np.maximum(calls, 0.5), color="C0")
    ax.set_yscale("log")
    ax.set_xticks(range(len(methods)), methods, rotation=45, fontsize=7)
    ax.set(ylabel="solver calls in training (0 drawn at 0.5)", title="solver calls per seed")
    paths.append(save_figure(fig, outdir / "solver_calls.png", dpi=90))
    return paths

