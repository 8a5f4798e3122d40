"""Reproduction of SALAAD (arXiv 2602.00942): claims, scales, run, judge, figures.

Task: a random hidden Markov language (:class:`optzoo.salaad.HiddenMarkovTask`, 32 states,
128 tokens, sequences of 64) with its exact Bayes NLL (forward algorithm) as the floor. Model:
a tiny tied-embedding Llama from :mod:`optzoo.tinylm`, random init. Per seed (task, init and
data order all derive from the seed): dense AdamW training and SALAAD (coupled, same
optimizer, schedule, clip and batches); then, at budgets ``rest + f * targeted`` for the
fractions ``f``, SALAAD's one state exported at every budget, and three post-hoc compressions
of the dense model at the same count: per-layer truncated SVD, global magnitude pruning
(``torch.nn.utils.prune``) and robust PCA (our IALM) exported with SALAAD's own allocation.
Every model is scored by validation NLL on the same held-out sequences. At ``full`` (and, at
one budget with a one-point grid, in ``smoke`` so that the code path is tested), the spec's
baseline 4: an SLTrain-style model (:func:`optzoo.salaad.sltrain_model`) trained from scratch
with the same loop and data at each budget of ``sltrain_fractions``, its support share tuned
from ``sltrain_grid`` on the tuning task like rho (one run per grid value and budget).

rho: quick freezes the value picked on tuning seeds (>= 90000, see the docs); full picks it
per seed from ``rho_grid`` on a separate tuning task and validation split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo.repro.claim import Claim, Verdict
from optzoo.repro.figures import new_figure, save_figure
from optzoo.repro.judging import judge as decide
from optzoo.repro.judging import paired

__all__ = ["CLAIMS", "SCALES", "Config", "figures", "judge", "run"]

LOW = (0.5, 0.4, 0.3)          # the budgets the comparison claims are about (<= 50%)
RANK_TOL, DENSITY_TOL = 0.05, 0.01
HETERO = math.log(1.5)

CLAIMS = [
    Claim("dense_quality",
          "SALAAD's dense weights X reach a validation NLL within 3% of plain training with the "
          "same optimizer, data and steps.",
          "log(NLL SALAAD X / NLL dense)", direction="less", threshold=math.log(1.03),
          source="spec claim (a); README 'comparable'"),
    Claim("curve_beats_posthoc",
          "At budgets <= 50% of the targeted parameters, SALAAD's exported surrogate has a lower "
          "NLL than per-layer truncated SVD and global magnitude pruning of the dense model at "
          "equal parameter count.",
          "log(NLL SALAAD export / NLL post-hoc) at equal count", direction="less", threshold=0.0,
          source="spec claim (b); abstract 'comparable to ad-hoc methods'"),
    Claim("vs_rpca",
          "At budgets <= 50%, SALAAD's surrogate has a lower NLL than post-hoc robust PCA of the "
          "dense weights exported with the same allocation.",
          "log(NLL SALAAD export / NLL RPCA export)", direction="less", threshold=0.0,
          source="spec 3 baseline (3)"),
    Claim("controller",
          "By the end of training the controller has driven every block's rank ratio and density "
          f"to the targets (max |r/R - r*| < {RANK_TOL:g}, max |nnz/mn - d*| < {DENSITY_TOL:g}).",
          "max over blocks of |final value - target|", direction="less", threshold=0.0,
          source="spec claim (c)"),
    Claim("controller_heterogeneity",
          "The controller's thresholds differ across blocks without hand-set schedules "
          "(max/min over blocks > 1.5).",
          "log(max_i tau_i / min_i tau_i) for tau_L and tau_S", direction="greater",
          threshold=HETERO, source="spec claim (c)"),
    Claim("one_run",
          "One training state exports every budget: each export's exact count is <= its budget "
          "and the count is non-decreasing in the budget.",
          "per (seed, budget): count <= B and count >= the previous smaller budget's count",
          direction="all", kind="check", unit="instance", source="spec claim one_run (our export)"),
    Claim("vs_sltrain",
          "Ours (the paper's baselines were not retrieved): at the budgets where an SLTrain-style "
          "sparse + low-rank model is trained from scratch (one run per budget, full scale), "
          "SALAAD's one run exported at the same count is within 3% of its validation NLL.",
          "log(NLL SALAAD export / NLL SLTrain-style) at equal count", direction="less",
          threshold=math.log(1.03), kind="finding", source="spec 3 baseline (4), full only"),
]


@dataclass(frozen=True)
class Config:
    layers: int = 2
    hidden: int = 64
    intermediate: int = 172
    heads: int = 4
    vocab: int = 128
    states: int = 32
    seq_len: int = 64
    batch: int = 16
    steps: int = 300
    warmup: int = 30
    lr: float = 3e-3
    val_seqs: int = 128
    rank_ratio: float = 0.25
    density: float = 0.05
    k_alpha: float = 0.2
    k_beta: float = 0.002
    admm_every: int = 2
    rho: float = 1e-3
    rho_grid: tuple = ()
    gamma: float = 0.5
    fractions: tuple = (1.0, 0.8, 0.6, 0.5, 0.4, 0.3)
    sltrain_fractions: tuple = ()   # budgets (a subset of fractions) for the SLTrain-style baseline
    sltrain_grid: tuple = (0.5,)    # its support share of the budget, tuned like rho when > 1 value
    seeds: int = 5


# rho frozen from the tuning pilot on seed 90000 (grid 1e-4, 1e-3, 1e-2; criterion: mean surrogate
# validation NLL at budgets <= 50%; docs/papers/salaad.md, "Pilot").
QUICK_RHO = 1e-3

SCALES = {
    "smoke": Config(layers=1, steps=40, warmup=4, batch=8, val_seqs=32, fractions=(0.5, 0.3),
                    rho=QUICK_RHO, sltrain_fractions=(0.5,), seeds=2),
    "quick": Config(rho=QUICK_RHO, seeds=5),
    "full": Config(layers=4, steps=3000, warmup=300, batch=32, val_seqs=512, rho_grid=(1e-4, 1e-3, 1e-2),
                   sltrain_fractions=(0.5, 0.3), sltrain_grid=(0.25, 0.5, 0.75), seeds=5),
}


def run(config: Config, seed: int, progress) -> dict:
    from optzoo.salaad.repro.experiment import run_seed

    return run_seed(config, seed, progress)


def _logratio(per_seed, a, b, f):
    i = per_seed[0]["config"]["fractions"].index(f)
    return paired([r["methods"][a]["nll"][i] for r in per_seed], [r["methods"][b]["nll"][i] for r in per_seed],
                  "logratio")


def judge(per_seed: list[dict]) -> list[Verdict]:
    """One verdict per CLAIMS entry, in order, from :func:`optzoo.repro.judging.judge`."""
    fr = per_seed[0]["config"]["fractions"]
    low = [f for f in LOW if f in fr]
    ev: dict = {}
    ev["dense_quality"] = paired([r["salaad_x_nll"] for r in per_seed], [r["dense_nll"] for r in per_seed],
                                 "logratio")
    ev["curve_beats_posthoc"] = {f"{b} f={f:g}": _logratio(per_seed, "salaad", b, f)
                                 for b in ("svd", "prune") for f in low}
    ev["vs_rpca"] = {f"f={f:g}": _logratio(per_seed, "salaad", "rpca", f) for f in low}
    rk = [max(abs(c["rank_ratio"] - r["config"]["rank_ratio"]) for c in r["controller"].values()) for r in per_seed]
    dn = [max(abs(c["density"] - r["config"]["density"]) for c in r["controller"].values()) for r in per_seed]
    ev["controller"] = {"rank": np.asarray(rk) - RANK_TOL, "density": np.asarray(dn) - DENSITY_TOL}

    def spread(r, key):
        v = np.array([c[key] for c in r["controller"].values()])
        if v.max() <= 0:
            return 0.0
        return float(np.log(v.max() / max(v.min(), 1e-12 * v.max())))  # a zero threshold: capped

    ev["controller_heterogeneity"] = {key: [spread(r, key) for r in per_seed] for key in ("tau_L", "tau_S")}
    flags = []
    for r in per_seed:
        p = r["methods"]["salaad"]["params"]
        order = np.argsort(r["budgets"])
        prev = -1
        for i in order:
            flags.append(p[i] <= r["budgets"][i] and p[i] >= prev)
            prev = p[i]
    ev["one_run"] = flags
    gap = {m: float(np.mean([r["methods"][m]["nll"][fr.index(0.5)] - r["entropy"] for r in per_seed]))
           for m in ("salaad", "svd", "prune", "rpca")} if 0.5 in fr else {}
    notes = {
        "dense_quality": (f"mean NLL dense {np.mean([r['dense_nll'] for r in per_seed]):.4g}, SALAAD X "
                          f"{np.mean([r['salaad_x_nll'] for r in per_seed]):.4g}, entropy floor "
                          f"{np.mean([r['entropy'] for r in per_seed]):.4g} nats"),
        "curve_beats_posthoc": "gap to the entropy floor at f=0.5: " + ", ".join(f"{k} {v:.3g}" for k, v in gap.items()),
        "controller": (f"values are (max deviation - tolerance); mean max |r/R - r*| {np.mean(rk):.3g}, "
                       f"mean max |density - d*| {np.mean(dn):.3g}"),
    }
    if all("sltrain" in r for r in per_seed):
        sf = per_seed[0]["sltrain"]["fractions"]
        ev["vs_sltrain"] = {f"f={f:g}": paired([r["sltrain"]["salaad_nll"][i] for r in per_seed],
                                               [r["sltrain"]["nll"][i] for r in per_seed], "logratio")
                            for i, f in enumerate(sf)}
        runs = sum(1 + len(t) for t in per_seed[0]["sltrain"]["tune_scores"])
        sec = np.mean([sum(r["sltrain"]["seconds"]) + sum(r["sltrain"]["tune_seconds"]) for r in per_seed])
        sal_sec = np.mean([r["time"]["salaad"] for r in per_seed])
        notes["vs_sltrain"] = (f"cost: SLTrain-style needs {runs} training runs for {len(sf)} budget(s) "
                               f"({sec:.0f} CPU s per seed, tuning included) where SALAAD's one run "
                               f"({sal_sec:.0f} CPU s, its rho tuning apart) exports every budget")
    else:
        ev["vs_sltrain"] = None
        notes["vs_sltrain"] = "the SLTrain-style baseline is trained at full scale only"
    return [decide(c, ev[c.id], note=notes.get(c.id, "")) for c in CLAIMS]


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []
    fr = per_seed[0]["config"]["fractions"]
    ent = float(np.mean([r["entropy"] for r in per_seed]))
    fig, ax = new_figure(figsize=(5.5, 3.8))
    for m, col in (("salaad", "C0"), ("svd", "C1"), ("prune", "C2"), ("rpca", "C3")):
        nll = np.array([r["methods"][m]["nll"] for r in per_seed])
        ax.errorbar(fr, nll.mean(0), yerr=nll.std(0), fmt="o-", color=col, label=m, capsize=3)
    if all("sltrain" in r for r in per_seed):
        sf = per_seed[0]["sltrain"]["fractions"]
        nll = np.array([r["sltrain"]["nll"] for r in per_seed])
        ax.errorbar(sf, nll.mean(0), yerr=nll.std(0), fmt="s", color="C4", capsize=3,
                    label="SLTrain-style (one run per budget)")
    ax.axhline(float(np.mean([r["dense_nll"] for r in per_seed])), color="k", ls=":", label="dense")
    ax.axhline(ent, color="gray", ls="--", label="entropy rate (Bayes)")
    ax.set(xlabel="budget: fraction of targeted parameters", ylabel="validation NLL (nats/token)",
           title="NLL vs parameter budget (equal counts)")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "nll_vs_budget.png", dpi=90))

    fig, ax = new_figure(figsize=(5, 3.5))
    for key, col in (("dense", "k"), ("salaad", "C0")):
        c = np.array([[v for _, v in r["train_curve"][key]] for r in per_seed])
        t = [s for s, _ in per_seed[0]["train_curve"][key]]
        ax.plot(t, c.mean(0), color=col, label=f"{key} (task loss)")
    ax.axhline(ent, color="gray", ls="--", label="entropy rate")
    ax.set(xlabel="step", ylabel="training NLL", title="training: dense vs SALAAD's X")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "training.png", dpi=90))

    r0 = per_seed[0]
    fig, axes = new_figure(1, 2, figsize=(10, 3.5))
    for ax, key, tgt in ((axes[0], "rank_ratio", r0["config"]["rank_ratio"]),
                         (axes[1], "density", r0["config"]["density"])):
        for h in r0["history"].values():
            ax.plot(np.arange(len(h[key])) * r0["history_stride"], h[key], lw=0.8)
        ax.axhline(tgt, color="k", ls="--")
        ax.set(xlabel="ADMM sweep", ylabel=key, title=f"per-block {key} (first seed), target dashed")
    paths.append(save_figure(fig, outdir / "controller.png", dpi=90))

    fig, ax = new_figure(figsize=(5.5, 3.5))
    names = list(r0["controller"])
    ax.bar(np.arange(len(names)) - 0.2, [r0["controller"][k]["tau_L"] for k in names], 0.4, label="tau_L")
    ax2 = ax.twinx()
    ax2.bar(np.arange(len(names)) + 0.2, [r0["controller"][k]["tau_S"] for k in names], 0.4, color="C1",
            label="tau_S")
    ax.set_xticks(np.arange(len(names)))
    ax.set_xticklabels([k.replace("model.", "").replace("layers.", "L") for k in names], rotation=80, fontsize=6)
    ax.set(ylabel="tau_L", title="final thresholds per block (first seed)")
    ax2.set_ylabel("tau_S")
    paths.append(save_figure(fig, outdir / "thresholds.png", dpi=90))

    fig, ax = new_figure(figsize=(5, 3.5))
    for m, col in (("salaad", "C0"), ("svd", "C1"), ("prune", "C2"), ("rpca", "C3")):
        b = np.array([r["methods"][m]["bytes"] for r in per_seed]).mean(0) / 1024
        nll = np.array([r["methods"][m]["nll"] for r in per_seed]).mean(0)
        ax.plot(b, nll, "o-", color=col, label=m)
    ax.set(xlabel="storage (KiB: factors + CSR with int32 indices + rest)", ylabel="validation NLL",
           title="bytes vs NLL")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "bytes_vs_nll.png", dpi=90))
    return paths
