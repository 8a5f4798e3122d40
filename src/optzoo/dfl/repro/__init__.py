"""Reproduction of dfl (arXiv 2606.19587) on records: claims, controls, scales, run, figures.

The paper's loss is not public. The abstract's claims are judged on ONE candidate fixed before
any verdict: candidate A (directional, INFERRED), chosen because the abstract says the loss is
Fisher consistent and A is (B is not). Candidate B (pool softmin, INFERRED) is run in the same
units and reported as findings only. A verdict says what candidate A does, never what the
paper's loss does.

Arms, every one in the same unit on the same data, split, initial weights, batches, epochs and
lr grid (each picks its lr on the validation split): ``mse`` (two-stage, prediction-focused,
solver-free), ``spo`` (PyEPO SPO+), ``pfyl`` (PyEPO PFYL), at full also DBB, NCE and the
solve_ratio 0.05 SPO+ / CMAP, ``A``, ``B``; ``sota_best`` is the better of SPO+ and PFYL per
seed and cell (a derived arm, no training of its own).

The headline (a solver-free surrogate with competitive decision quality and training time cut
by orders of magnitude) is tested by ``competitive_fast_A``: per misspecified cell (deg 4 and 6),
A's test regret within 20% of the better of SPO+ and PFYL AND at most 1/100 of their
training-loop solver calls (counted). Its control substitutes A by two-stage MSE: the same
solver-free loop with the decision-aware surrogate removed. Where MSE is also "competitive",
the claim cannot fail there, and the control verdict shows it. Timing is reported as findings
(process CPU time moves with machine load; see docs/papers/dfl.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo._core.rng import derive_seed
from optzoo.dfl.repro.consistency import bayes_agreement, random_mixtures
from optzoo.dfl.repro.experiment import SOLVER_FREE, run_problem, time_problem
from optzoo.repro.claim import Claim
from optzoo.repro.evidence import Control, Custom, Paired, Record, Universal, group, records_of
from optzoo.repro.figures import new_figure, save_figure

__all__ = ["CLAIMS", "HEADLINE", "MAX_THREADS", "SCALES", "Config", "figures", "notes", "run"]

#: one thread per unit (read by the runner): on these tiny tensors a second torch thread only
#: spin-waits, which inflated a quick seed from about 25 to 233 CPU-s under ``--jobs 1`` and
#: charged the spin to the timed loops (docs/papers/dfl.md, "Quick's cost")
MAX_THREADS = 1

REGRET_SLACK = 1.2     # spec: "within ~10-20% relative" of the best solver-based loss
CALL_FACTOR = 100.0    # "orders of magnitude": at least 100x fewer training-loop solver calls
SPEEDUP = 10.0         # the spec's time bar (findings only)
NEAR_MSE = 2.0         # "near MSE's": within a factor 2 (INFERRED; finding only)
JUDGED = (4, 6)        # the spec's misspecified cells (deg 4 and 6; the spec lists deg 1, 4, 6)
BEYOND = (8,)          # stronger misspecification than the spec's, a finding only (see docs)
#: the value a seed's cell gets in the joint claim when the call half fails: far above the
#: threshold, so that cell fails the claim (a finite number keeps the part judged)
CALLS_FAIL = 10.0

_MSE_CONTROL = Control(
    arms={"A": "mse"},
    removes="the decision-aware surrogate: candidate A replaced by two-stage MSE (prediction-focused "
            "least squares on the costs) in the same solver-free loop, with the same data, split, "
            "initial weights, batches, epochs, lr grid and validation rule",
    credits="abstract: the solver-free surrogate derived from the measure transformation principle "
            "'achieves decision quality competitive with state-of-the-art' decision-focused methods "
            "while 'training time' is 'reduced by orders of magnitude'")


def _deg(part: str) -> int:
    return int(part.rsplit("deg=", 1)[1])


def _misspecified(parts: dict, degs: tuple = JUDGED) -> dict:
    return {p: v for p, v in parts.items() if _deg(p) in degs}


def _paired_misspecified(arm: str, baseline: str, degs: tuple = JUDGED):
    def fn(per_seed, sub):
        got = Paired("test_regret", arm, baseline, "logratio").collect(per_seed, sub)
        got = _misspecified(got, degs)
        if not got:
            raise ValueError(f"no cell with deg in {degs} at this scale")
        return got
    return fn


def _competitive_fast(per_seed, sub) -> dict:
    """Per misspecified cell and seed: log(regret arm / regret of the better of SPO+ and PFYL)
    when the arm's training loop made at most 1/CALL_FACTOR of the solver calls of each of
    them, else CALLS_FAIL (the claim then fails on that cell)."""
    arm = sub.get("A", "A")
    reg = Paired("test_regret", arm, "sota_best", "logratio").collect(per_seed, sub)
    calls = {key: rows for key, rows in group(per_seed, "part", "arm", "metric").items()
             if key[2] == "loop_solver_calls"}
    out = {}
    if not _misspecified(reg):
        raise ValueError(f"no cell with deg in {JUDGED} at this scale")
    for part, vals in _misspecified(reg).items():
        row = []
        for i, v in enumerate(vals):
            def n(a, i=i, part=part):
                rs = calls.get((part, a, "loop_solver_calls"))
                if rs is None or not rs[i]:
                    raise ValueError(f"no loop_solver_calls of {a!r} in {part!r}")
                return rs[i][0].value
            ok = n(arm) * CALL_FACTOR <= min(n("spo"), n("pfyl"))
            row.append(v if ok else CALLS_FAIL)
        out[part] = row
    return out


CLAIMS = [
    # --- the paper's claims, on candidate A -------------------------------------------------
    Claim("competitive_fast_A",
          "On misspecified problems (PyEPO deg 4 and 6), our candidate A (directional, INFERRED) reaches "
          "a test regret within 20% of the better of PyEPO's SPO+ and PFYL while its training loop "
          "makes at most 1/100 of their solver calls (counted), in every cell.",
          "per (problem, deg 4 or 6) cell: log(regret A / min(regret SPO+, regret PFYL)) if A's loop "
          f"solver calls x {CALL_FACTOR:g} <= min(SPO+'s, PFYL's), else {CALLS_FAIL:g}",
          direction="less", threshold=math.log(REGRET_SLACK),
          source="abstract: a solver-free surrogate that 'achieves decision quality competitive with "
                 "state-of-the-art' and cuts 'training time by orders of magnitude' (20% and 1/100: "
                 "spec and ours, fixed before any verdict)",
          evidence=Custom(_competitive_fast, "test regret of A vs the better of SPO+ and PFYL (log ratio), "
                          "with A's counted loop solver calls at most 1/100 of theirs; cells deg 4 and 6",
                          uses=("A", "sota_best", "spo", "pfyl")),
          control=_MSE_CONTROL),
    # --- findings: candidate B, the spec's additions, timing ---------------------------------
    Claim("competitive_B",
          "Candidate B (pool softmin, INFERRED; not Fisher consistent) reaches a test regret within 20% "
          "of the better of SPO+ and PFYL in every misspecified cell (deg 4 and 6).",
          "per (problem, deg 4 and 6) cell: log(regret B / min(regret SPO+, regret PFYL))",
          direction="less", threshold=math.log(REGRET_SLACK), kind="finding",
          source="ours (the second candidate, judged apart from the paper's claims; issue 39)",
          evidence=Custom(_paired_misspecified("B", "sota_best"), "test regret of B vs the better of SPO+ "
                          "and PFYL (log ratio), cells deg 4 and 6", uses=("B", "sota_best"))),
    Claim("competitive_deg8_A",
          "Beyond the spec's range (PyEPO deg 8, stronger misspecification): candidate A's test regret "
          "is within 20% of the better of SPO+ and PFYL in every cell.",
          "per (problem, deg 8) cell: log(regret A / min(regret SPO+, regret PFYL))",
          direction="less", threshold=math.log(REGRET_SLACK), kind="finding",
          source="ours (pilot seed 90000 showed A at x1.37 on shortest path deg 8; docs)",
          evidence=Custom(_paired_misspecified("A", "sota_best", BEYOND), "test regret of A vs the better "
                          "of SPO+ and PFYL (log ratio), cells deg 8", uses=("A", "sota_best"))),
    Claim("beats_mse_A",
          "At deg 4 and 6 (misspecified linear model) candidate A has a lower test regret than two-stage "
          "MSE in every cell.",
          "per (problem, deg 4 and 6) cell: log(regret A / regret MSE)",
          direction="less", threshold=0.0, kind="finding",
          source="spec claims (Fisher consistency makes MSE the bar; not in the abstract)",
          evidence=Custom(_paired_misspecified("A", "mse"), "test regret of A vs MSE (log ratio), cells "
                          "deg 4 and 6", uses=("A", "mse"))),
    Claim("beats_mse_B",
          "At deg 4 and 6 candidate B has a lower test regret than two-stage MSE in every cell.",
          "per (problem, deg 4 and 6) cell: log(regret B / regret MSE)",
          direction="less", threshold=0.0, kind="finding", source="spec claims (not in the abstract)",
          evidence=Custom(_paired_misspecified("B", "mse"), "test regret of B vs MSE (log ratio), cells "
                          "deg 4 and 6", uses=("B", "mse"))),
    Claim("loop_time_vs_spo_A",
          "Timing: candidate A's training loop takes at least 10x less process CPU time per epoch than "
          "PyEPO's SPO+ on SciPy HiGHS (same data, model, batches). Near-automatic: any loop without a "
          "solver call (MSE included) clears it; the factor itself is the information.",
          "per problem: log(loop CPU s per epoch SPO+ / A), HiGHS",
          direction="greater", threshold=math.log(SPEEDUP), kind="finding",
          source="spec claims (the abstract's 'orders of magnitude', timed); review X4",
          evidence=Paired("loop_cpu_per_epoch", "spo", "A", "logratio")),
    Claim("loop_time_near_mse_A",
          "Timing: candidate A's training loop costs less than twice the process CPU time of two-stage "
          "MSE's. Loop overhead under the run's machine conditions (review X4), not a property of the "
          "loss: shown, never counted.",
          "per problem: log(loop CPU s per epoch A / MSE), interleaved rounds, median",
          direction="less", threshold=math.log(NEAR_MSE), kind="finding",
          source="an earlier issue ('near MSE's'); factor 2 INFERRED",
          evidence=Paired("loop_cpu_per_epoch", "A", "mse", "logratio")),
    Claim("fisher_consistent_B",
          "Candidate B's population minimiser gives the Bayes decision on every random two-atom "
          "conditional distribution (expected: not, since B matches the distribution of w*(c)).",
          "per mixture: the decision of the minimiser of B's expected loss == the Bayes decision",
          direction="all", unit="instance", kind="finding",
          source="ours (docs: B is not Fisher consistent); abstract's criterion",
          evidence=Universal("bayes_decision", "B")),
    # --- checks of our own construction ------------------------------------------------------
    Claim("fisher_consistent_A",
          "Candidate A is Fisher consistent as derived: on every random two-atom conditional "
          "distribution the minimiser of its expected loss gives the Bayes decision (also "
          "tests/dfl/test_dfl_losses.py).",
          "per mixture: the decision of the minimiser of A's expected loss == the Bayes decision",
          direction="all", unit="instance", kind="check",
          source="our derivation (docs, Formulation); the abstract's criterion",
          evidence=Universal("bayes_decision", "A")),
    Claim("solver_free",
          "Candidates A and B and MSE make zero solver calls in the training loop, counted by a wrapper "
          "that raises on any call.",
          "solver calls inside the training loop == 0, per (seed, cell, method)",
          direction="all", unit="instance", kind="check",
          source="abstract (solver-free); our candidates are solver-free by construction",
          evidence=Universal("zero_loop_calls", "solver_free")),
]

#: the claims that test the abstract's headline (papers.py names the same)
HEADLINE = ("competitive_fast_A",)


@dataclass(frozen=True)
class Config:
    # cells: (problem, deg), or (problem, deg, n_train) to give that cell (all its methods
    # alike) its own training-set size
    problems: tuple = tuple((p, d) for p in ("shortest_path", "knapsack") for d in (4, 6, 8))
    n_train: int = 1000
    n_test: int = 1000
    val_frac: float = 0.2
    epochs: int = 10
    batch_size: int = 32
    # widened from {1e-3, 1e-2} on pilot seeds 90000-90002 (docs): chosen values ran from 3e-3
    # to 3e-1, and 3e-1 (the end of a six-point grid) was chosen 3 times in 90, so 1 was added
    lrs: tuple = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0)
    # tau is fixed: for a linear model l_B(c; tau) = tau * l_B(c / tau; 1), so tau trades off
    # against the output scale the model learns; a tau grid would give B a larger tuning grid
    # than the other arms (lr only).
    taus: tuple = (1.0,)
    pfyl_samples: int = 3
    methods: tuple = ("mse", "spo", "pfyl", "A", "B")
    time_n: int = 100
    time_epochs: int = 1           # epochs timed for solver-based losses
    time_epochs_free: int = 10     # epochs per round timed for solver-free ones (ms per epoch)
    time_rounds: int = 10          # interleaved rounds of the solver-free loops (see time_problem)
    time_methods: tuple = ("mse", "spo", "nce", "A", "B")
    mixtures: int = 30             # random conditional distributions for the consistency check
    seeds: int = 5


SCALES = {
    "smoke": Config(problems=(("shortest_path", 4), ("knapsack", 8)), n_train=100, n_test=100,
                    epochs=2, lrs=(1e-2, 1e-1), time_n=20, time_epochs_free=2, time_rounds=2,
                    time_methods=("mse", "spo", "A", "B"), mixtures=6, seeds=2),
    "quick": Config(),
    # full: as sized in docs/papers/dfl.md (about 280 CPU-s a seed at two lrs and deg up to 6);
    # it now takes quick's seven-point lr grid (the same for every arm) and deg 8 cells, about
    # 3.5x the regret runs' cost, roughly 15 CPU-minutes a seed; not rerun in this version
    "full": Config(problems=(*((p, d) for p in ("shortest_path", "knapsack") for d in (1, 2, 4, 6, 8)),
                             ("tsp", 4), ("tsp", 6), ("portfolio", 4, 200), ("portfolio", 6, 200)),
                   n_train=1000, n_test=1000, epochs=20, pfyl_samples=3, time_n=200,
                   methods=("mse", "spo", "pfyl", "dbb", "nce", "spo_light", "cmap_light", "A", "B"),
                   time_epochs=1, time_epochs_free=20,
                   time_methods=("mse", "spo", "spo_light", "nce", "A", "B"), mixtures=60, seeds=5),
}


def _cells(cfg: Config) -> list[tuple[str, int, int | None]]:
    """(problem, deg, n_train or None for ``cfg.n_train``) for every cell of ``cfg``."""
    return [(c[0], int(c[1]), int(c[2]) if len(c) > 2 else None) for c in cfg.problems]


def _part(problem: str, deg: int) -> str:
    return f"{problem} deg={deg}"


def run(config: Config, seed: int, progress) -> list[Record]:
    """One seed: every (problem, deg) cell with every arm tuned on the same grid, the HiGHS
    timing runs, and the population-level consistency check on random mixtures."""
    cfg = config
    cells = _cells(cfg)
    steps = sum(len(cfg.lrs) * (len(cfg.taus) if m == "B" else 1) for m in cfg.methods)
    timed = sorted({p for p, _, _ in cells})
    progress.start(steps * len(cells) + len(timed) * len(cfg.time_methods) + 1, f"dfl seed {seed}")
    recs: list[Record] = []
    lo, hi = min(cfg.lrs), max(cfg.lrs)
    for p, d, n in cells:
        r = run_problem(p, d, cfg, seed, progress, n_train=n)
        part = _part(p, d)
        regs = {}
        for m, v in r["methods"].items():
            regs[m] = max(float(v["test_regret"]), 1e-9)
            calls = int(v["loop_solver_calls"])
            recs += [Record(part, m, "", "test_regret", regs[m]),
                     Record(part, m, "", "val_regret", float(v["val_regret"])),
                     Record(part, m, "", "loop_solver_calls", calls),
                     Record(part, m, "", "lr", float(v["lr"])),
                     Record(part, m, "", "lr_edge", float(len(cfg.lrs) > 1 and v["lr"] in (lo, hi)))]
            if m in SOLVER_FREE:
                recs.append(Record("", "solver_free", f"{part} {m}", "zero_loop_calls", float(calls == 0)))
        for choice in r.get("choices", ()):
            recs += choice.to_records()
        if "spo" in regs and "pfyl" in regs:
            recs.append(Record(part, "sota_best", "", "test_regret", min(regs["spo"], regs["pfyl"])))
    for p in timed:
        deg = max(d for q, d, _ in cells if q == p)
        t = time_problem(p, deg, cfg, seed, progress)
        recs.append(Record(p, "precompute", "", "precompute_cpu_s", float(t["precompute_cpu_s"])))
        for m, v in t["methods"].items():
            recs += [Record(p, m, "", "loop_cpu_per_epoch", _per_epoch(v)),
                     Record(p, m, "", "timing_solver_calls", float(v["solver_calls"]))]
            if m in SOLVER_FREE:
                recs.append(Record("", "solver_free", f"timing {p} {m}", "zero_loop_calls",
                                   float(v["solver_calls"] == 0)))
    rng = np.random.default_rng(derive_seed(seed, "mixtures") % 2 ** 32)
    Cs, ps = random_mixtures(rng, cfg.mixtures)
    agree = bayes_agreement(Cs, ps, seed=derive_seed(seed, "mixture-init") % 2 ** 31)
    for m, flags in agree.items():
        recs += [Record("", m, f"mixture {j}", "bayes_decision", float(f)) for j, f in enumerate(flags)]
    progress.advance()
    return recs


def _per_epoch(d: dict) -> float:
    """Loop CPU s per epoch: the median over the interleaved rounds where there are rounds
    (solver-free loops, see ``time_problem``), else the total over its epochs."""
    if d.get("round_cpu_s"):
        return float(np.median(d["round_cpu_s"])) / d["round_epochs"]
    return d["loop_cpu_s"] / d["epochs"]


def _mean_by(per_seed, metric: str) -> dict[str, dict[str, float]]:
    """part -> arm -> mean over seeds of ``metric``."""
    out: dict = {}
    for (part, arm), rows in group(per_seed, "part", "arm").items():
        vals = [r.value for seed in rows for r in seed if r.metric == metric]
        if vals:
            out.setdefault(part, {})[arm] = float(np.mean(vals))
    return out


def notes(per_seed) -> dict[str, str]:
    """Mean regrets per cell, which lr each arm chose (and how often at an end of the grid),
    the measured time factors and the mixtures on which each loss missed the Bayes decision."""
    reg = _mean_by(per_seed, "test_regret")
    cells = [p for p in reg if _deg(p) in JUDGED + BEYOND]
    table = "; ".join(f"{p}: " + ", ".join(f"{a} {v:.4f}" for a, v in sorted(reg[p].items()))
                      for p in cells)
    edges = {}
    for (arm, metric), rows in group(per_seed, "arm", "metric").items():
        if metric == "lr_edge":
            vals = [r.value for seed in rows for r in seed]
            edges[arm] = f"{int(sum(vals))}/{len(vals)}"
    lrs = {}
    for (arm, metric), rows in group(per_seed, "arm", "metric").items():
        if metric == "lr":
            vals = sorted(r.value for seed in rows for r in seed)
            lrs[arm] = "/".join(f"{v:g}" for v in vals)
    grid = ("lr grid ends chosen (cells x seeds): " + ", ".join(f"{a} {e}" for a, e in sorted(edges.items()))
            + ". Chosen lrs: " + "; ".join(f"{a} {v}" for a, v in sorted(lrs.items())))
    times = _mean_by(per_seed, "loop_cpu_per_epoch")
    tline = "; ".join(f"{p}: " + ", ".join(f"{a} {v:.2e}" for a, v in sorted(row.items()))
                      for p, row in times.items())
    miss = {}
    for (arm, metric), rows in group(per_seed, "arm", "metric").items():
        if metric == "bayes_decision":
            vals = [r.value for seed in rows for r in seed]
            miss[arm] = f"{int(len(vals) - sum(vals))}/{len(vals)}"
    mix = "Mixtures where the minimiser missed the Bayes decision: " + ", ".join(
        f"{a} {v}" for a, v in sorted(miss.items()))
    out = {"competitive_fast_A": f"Mean test regret: {table}. {grid}",
           "competitive_B": f"Mean test regret in competitive_fast_A's note. {grid}",
           "competitive_deg8_A": "Mean test regret in competitive_fast_A's note",
           "beats_mse_A": "Mean test regret in competitive_fast_A's note",
           "beats_mse_B": "Mean test regret in competitive_fast_A's note",
           "loop_time_vs_spo_A": f"Mean loop CPU s per epoch (HiGHS): {tline}",
           "loop_time_near_mse_A": f"Mean loop CPU s per epoch (HiGHS): {tline}",
           "fisher_consistent_A": mix, "fisher_consistent_B": mix}
    return out


def figures(per_seed, outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []
    reg = records_of(per_seed, metric="test_regret")
    parts = list(dict.fromkeys(r.part for r in reg[0]))
    arms = [a for a in dict.fromkeys(r.arm for r in reg[0]) if a != "sota_best"]
    fig, axes = new_figure(1, len(parts), figsize=(3.2 * len(parts), 3.6), squeeze=False)
    for ax, part in zip(axes[0], parts, strict=True):
        vals = np.array([[next(r.value for r in s if r.part == part and r.arm == a) for a in arms]
                         for s in reg])
        mean = vals.mean(0)
        err = vals.std(0, ddof=1) / math.sqrt(len(vals)) if len(vals) > 1 else np.zeros_like(mean)
        ax.bar(range(len(arms)), mean, yerr=err, color=[f"C{j}" for j in range(len(arms))])
        ax.set_xticks(range(len(arms)), arms, rotation=60, fontsize=7)
        ax.set(title=part, ylabel="normalised test regret")
    paths.append(save_figure(fig, outdir / "regret.png", dpi=90))
    times = records_of(per_seed, metric="loop_cpu_per_epoch")
    tparts = list(dict.fromkeys(r.part for r in times[0]))
    fig, axes = new_figure(1, len(tparts), figsize=(4.2 * len(tparts), 3.6), squeeze=False)
    for ax, p in zip(axes[0], tparts, strict=True):
        cell = max((q for q in parts if q.startswith(p + " ")), key=_deg)
        for q, a in enumerate(dict.fromkeys(r.arm for r in times[0] if r.part == p)):
            x = [r.value for s in times for r in s if r.part == p and r.arm == a]
            y = [r.value for s in reg for r in s if r.part == cell and r.arm == a]
            if len(y) == len(x):
                ax.scatter(x, y, color=f"C{q}", label=a, s=14)
        ax.set_xscale("log")
        ax.set(title=f"{p}: regret vs loop time", xlabel="loop CPU s / epoch (HiGHS)",
               ylabel=f"test regret ({cell})")
        ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "regret_vs_time.png", dpi=90))
    calls = records_of(per_seed, metric="loop_solver_calls")
    fig, ax = new_figure(figsize=(5, 3.4))
    mean = [np.mean([sum(r.value for r in s if r.arm == a) for s in calls]) for a in arms]
    ax.bar(range(len(arms)), np.maximum(mean, 0.5), color="C0")
    ax.set_yscale("log")
    ax.set_xticks(range(len(arms)), arms, rotation=45, fontsize=7)
    ax.set(ylabel="loop solver calls (0 drawn at 0.5)", title="solver calls per seed (selected runs)")
    paths.append(save_figure(fig, outdir / "solver_calls.png", dpi=90))
    return paths
