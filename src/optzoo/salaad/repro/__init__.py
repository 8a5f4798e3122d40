"""Reproduction of SALAAD (arXiv 2602.00942) on records: claims, scales, run, notes, figures.

Task: a random hidden Markov language (:class:`optzoo.salaad.HiddenMarkovTask`, 32 states,
128 tokens, sequences of 64) with its exact Bayes NLL (forward algorithm) as the floor. Model:
a tiny tied-embedding Llama from :mod:`optzoo.tinylm`, random init. Per seed (task, init and
data order all derive from the seed), every arm on the same data, steps and validation
sequences (:mod:`.experiment`):

* ``dense``: plain AdamW training;
* ``salaad``: SALAAD in coupled mode on the same loop, its one state exported at every budget
  ``rest + f * targeted``;
* ``salaad_uncoupled``, **the control**: the same sweeps (SVT, soft threshold, controller, dual),
  the same rho and the same export rule, run on the dense training with the penalty's weight in
  the X-step set to 0. Its X is the dense model exactly; what it removes is the paper's credited
  mechanism, the augmented-Lagrangian coupling that induces the sparse + low-rank structure in
  the weights *during training*;
* post-hoc compressions of the dense model at the same counts: per-layer truncated SVD, global
  magnitude pruning (``torch.nn.utils.prune``) and robust PCA (our IALM) with SALAAD's export;
* at ``full`` (and at one budget in ``smoke``, to test the path): an SLTrain-style model trained
  from scratch at each budget of ``sltrain_fractions``.

Every exported model is scored by validation NLL; ``excess`` is NLL minus the Bayes NLL of the
same sequences (what a model can still lose or gain: the floor is about 3.3 of 3.5 nats, so a
ratio of raw NLLs mostly measures the floor).

rho: quick freezes the value picked on tuning seed 90000 (see the docs); full picks it per
seed from ``rho_grid`` on a separate tuning task and validation split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo.repro.claim import Claim
from optzoo.repro.evidence import Control, Custom, Paired, Record, Universal, records_of
from optzoo.repro.figures import new_figure, save_figure

__all__ = ["CLAIMS", "HEADLINE", "MAX_THREADS", "SCALES", "Config", "figures", "notes", "run"]

#: one torch thread per unit (the harness reads this): the model is tiny, and a second intra-op
#: thread on a loaded 2-core machine spins (measured: 20 training steps took 0.5 CPU-s on one
#: thread, 12 to 19 CPU-s on two), so quick's cost would depend on the machine's load
MAX_THREADS = 1

#: strong compression: the budgets (fractions of the targeted parameters) where the headline is
#: judged, fixed before the pilot (where exporting cuts deepest into the trained structure)
STRONG = (0.3, 0.2)
#: the budgets of the RPCA finding (<= 50%, as before, and the strong ones)
LOW = (0.5, 0.4, 0.3, 0.2)
#: "comparable": the excess NLL over the Bayes floor at most 25% above the reference's, fixed
#: before the pilot (at our excesses of 0.13-0.4 nats that is 0.03-0.1 nats, a perplexity gap of
#: about 3-10%, the range compression papers call comparable)
COMPARABLE = math.log(1.25)
RANK_TOL, DENSITY_TOL = 0.05, 0.01
HETERO = math.log(1.5)

_UNCOUPLED = ("the augmented-Lagrangian coupling in the X-step: the penalty rho/2 ||X - L - S + Y/rho||^2 "
              "gets weight 0 in the loss, so the weights train exactly as dense; the sweeps (SVT, soft "
              "threshold, controller, dual, same rho) and the export rule run unchanged on that trajectory")
_CREDITS = ("abstract: SALAAD 'induces sparse and low-rank structures during training' by 'formulating "
            "structured weight learning under an augmented Lagrangian framework', so that 'a single "
            "training run yields a continuous spectrum of model capacities'")


def _posthoc_parts(per_seed, sub):
    """log(excess post-hoc / excess SALAAD export) per (baseline, strong budget): above 0 means
    SALAAD is better, above -log 1.25 that it is comparable."""
    out = {}
    for base in ("svd", "prune"):
        got = Paired("excess", base, "salaad", "logratio").collect(per_seed, sub)
        for f in STRONG:
            p = f"f={f:g}"
            if p not in got:
                raise ValueError(f"no records at budget {p} (strong compression)")
            out[f"{base} {p}"] = got[p]
    return out


def _rpca_parts(per_seed, sub):
    got = Paired("excess", "salaad", "rpca", "logratio").collect(per_seed, sub)
    return {p: v for p, v in got.items() if p in {f"f={f:g}" for f in LOW}} or None


def _one(seed, arm, metric, part="", instance=None):
    for r in seed:
        if r.arm == arm and r.metric == metric and r.part == part and (instance is None or r.instance == instance):
            return r.value
    raise ValueError(f"no record {arm}/{metric}/{part}/{instance}")


def _posthoc_vs_uncompressed(per_seed, sub):
    """log(excess of post-hoc SVD at 50% / excess of SALAAD's X) and (/ SALAAD's export at 100%)."""
    sal = sub.get("salaad", "salaad")
    x, full = [], []
    for seed in per_seed:
        svd = _one(seed, "svd", "excess", "f=0.5")
        x.append(math.log(svd / _one(seed, sal, "x_excess")))
        full.append(math.log(svd / _one(seed, sal, "excess", "f=1")))
    return {"vs X": x, "vs export f=1": full}


def _controller(per_seed, sub):
    arm = sub.get("salaad", "salaad")
    rk, dn = [], []
    for seed in per_seed:
        r0, d0 = _one(seed, "config", "rank_ratio_target"), _one(seed, "config", "density_target")
        rk.append(max(abs(r.value - r0) for r in seed if r.arm == arm and r.metric == "rank_ratio") - RANK_TOL)
        dn.append(max(abs(r.value - d0) for r in seed if r.arm == arm and r.metric == "density") - DENSITY_TOL)
    return {"rank": rk, "density": dn}


def _spread(per_seed, sub):
    arm = sub.get("salaad", "salaad")
    out = {}
    for key in ("tau_L", "tau_S"):
        vals = []
        for seed in per_seed:
            v = np.array([r.value for r in seed if r.arm == arm and r.metric == key])
            vals.append(0.0 if v.max() <= 0 else float(np.log(v.max() / max(v.min(), 1e-12 * v.max()))))
        out[key] = vals
    return out


def _sltrain(per_seed, sub):
    if not any(r.arm == "sltrain" for seed in per_seed for r in seed):
        return None
    return Paired("excess", "sltrain", "salaad", "logratio").collect(per_seed, sub)


CLAIMS = [
    # --- the headline: can fail, judged at strong compression against the coupling removed ---
    Claim("comparable",
          "One SALAAD training run, exported at strong compression (30% and 20% of the targeted "
          "parameters), performs comparably to ad-hoc post-hoc compression of a dense model at "
          "equal parameter count (per-layer truncated SVD, global magnitude pruning): its excess "
          "NLL over the Bayes floor is at most 25% above theirs.",
          "log(excess NLL post-hoc / excess NLL SALAAD export) at equal count, excess = NLL - Bayes "
          "NLL; one part per (baseline, budget)",
          direction="noninferior", threshold=0.0, margin=COMPARABLE,
          source="abstract: 'achieving performance comparable to ad-hoc methods'; 'a single training "
                 "run yields a continuous spectrum of model capacities'",
          evidence=Custom(_posthoc_parts, "excess: svd and prune vs salaad (log ratio, paired per seed) "
                          "at f = 0.3 and 0.2", uses=("salaad",)),
          control=Control({"salaad": "salaad_uncoupled"}, removes=_UNCOUPLED, credits=_CREDITS)),
    Claim("stability",
          "SALAAD preserves standard training: its dense weights X reach a validation excess NLL "
          "at most 25% above that of plain training with the same optimizer, data and steps.",
          "log(excess NLL dense / excess NLL SALAAD's X)",
          direction="noninferior", threshold=0.0, margin=COMPARABLE,
          source="abstract: 'SALAAD preserves the stability of standard training dynamics'",
          evidence=Paired("x_excess", "dense", "salaad", "logratio"),
          control=Control({"salaad": "salaad_uncoupled"}, removes=_UNCOUPLED,
                          credits="abstract: the augmented Lagrangian with its adaptive controller "
                                  "'dynamically balances the training loss and structural constraints' "
                                  "so that SALAAD 'preserves the stability of standard training dynamics'")),
    # --- findings: the spec's, the review's or ours ------------------------------------------
    Claim("vs_rpca",
          "At budgets <= 50%, SALAAD's export has a lower excess NLL than post-hoc robust PCA (our "
          "IALM) of the dense weights exported with the same allocation.",
          "log(excess SALAAD export / excess RPCA export); one part per budget",
          direction="less", threshold=0.0, kind="finding",
          source="spec 3 baseline (3); our own IALM, not a library",
          evidence=Custom(_rpca_parts, "excess: salaad vs rpca (log ratio, paired) at f <= 0.5",
                          uses=("salaad", "rpca"))),
    Claim("posthoc_beats_uncompressed",
          "Ours (the December review): post-hoc truncated SVD of the dense model at 50% of the "
          "targeted parameters has a lower excess NLL than SALAAD's own uncompressed model (its "
          "dense X, and its export at 100%).",
          "log(excess SVD at f=0.5 / excess SALAAD); parts: vs X, vs the export at f=1",
          direction="less", threshold=0.0, kind="finding", source="review 2026-12 (salaad)",
          evidence=Custom(_posthoc_vs_uncompressed, "excess: svd at 0.5 vs salaad X and export at 1 "
                          "(log ratio)", uses=("salaad", "svd"))),
    Claim("coupling_effect",
          "Ours (the headline's control read on its own): at strong compression (30%, 20%), SALAAD's "
          "exports have a lower excess NLL than the same sweeps and export run without the coupling "
          "(salaad_uncoupled): the structure induced during training is what the export keeps.",
          "log(excess uncoupled export / excess SALAAD export) at equal count; one part per budget",
          direction="greater", threshold=0.0, kind="finding", source="ours (issue 39's control)",
          evidence=Custom(lambda ps, sub: {p: v for p, v in Paired("excess", "salaad_uncoupled", "salaad",
                                                                    "logratio").collect(ps, sub).items()
                                           if p in {f"f={f:g}" for f in STRONG}},
                          "excess: salaad_uncoupled vs salaad (log ratio, paired) at f = 0.3 and 0.2",
                          uses=("salaad", "salaad_uncoupled"))),
    Claim("controller",
          "The spec's: by the end of training the controller has driven every block's rank ratio "
          f"and density to the targets (max |r/R - r*| < {RANK_TOL:g}, max |nnz/mn - d*| < "
          f"{DENSITY_TOL:g}). Measured at full only: at quick the density integrator (official "
          "gain 0.002 per sweep, 150 sweeps) cannot settle.",
          "max over blocks of |final value - target| minus the tolerance",
          direction="less", threshold=0.0, kind="finding", source="spec claim (c)",
          evidence=Custom(_controller, "max over blocks of |r/R - r*| - 0.05 and |d - d*| - 0.01, salaad",
                          uses=("salaad",)),
          scales=("full",)),
    Claim("controller_heterogeneity",
          "The spec's: the controller's final thresholds differ across blocks (max/min > 1.5). "
          "Near-automatic: integrators driven by block-specific errors end apart whether or not "
          "they converge.",
          "log(max_i tau_i / min_i tau_i) for tau_L and tau_S",
          direction="greater", threshold=HETERO, kind="finding", source="spec claim (c)",
          evidence=Custom(_spread, "log(max/min) of salaad's final thresholds over blocks", uses=("salaad",))),
    Claim("vs_sltrain",
          "Ours (the paper's baselines were not retrieved): at the budgets where an SLTrain-style "
          "sparse + low-rank model is trained from scratch (one run per budget, full scale), "
          "SALAAD's one run exported at the same count has an excess NLL at most 25% above its.",
          "log(excess SLTrain-style / excess SALAAD export) at equal count",
          direction="noninferior", threshold=0.0, margin=COMPARABLE, kind="finding",
          source="spec 3 baseline (4), full only",
          evidence=Custom(_sltrain, "excess: sltrain vs salaad (log ratio, paired)", uses=("salaad",))),
    # --- checks of our own code --------------------------------------------------------------
    Claim("one_run",
          "One training state exports every budget: each export's exact count is <= its budget "
          "and the count is non-decreasing in the budget (SALAAD and its control).",
          "per (seed, arm, budget): count <= B and count >= the next smaller budget's count",
          direction="all", kind="check", unit="instance", source="spec claim one_run (our export)",
          evidence=Custom(lambda ps, sub: {a: Universal("one_run", a).collect(ps, sub)[""]
                                           for a in ("salaad", "salaad_uncoupled")},
                          "one_run flags of salaad and salaad_uncoupled", uses=("salaad",))),
]

#: The claims that test the abstract's headline (papers.py names them).
HEADLINE = ("comparable",)


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
    fractions: tuple = (1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2)
    sltrain_fractions: tuple = ()   # budgets (a subset of fractions) for the SLTrain-style baseline
    sltrain_grid: tuple = (0.5,)    # its support share of the budget, tuned like rho when > 1 value
    seeds: int = 5


# rho frozen from the tuning pilot on seed 90000 (grid 1e-4, 1e-3, 1e-2; criterion: mean surrogate
# validation NLL at budgets <= 50%; docs/papers/salaad.md, "Pilot").
QUICK_RHO = 1e-3

SCALES = {
    "smoke": Config(layers=1, steps=40, warmup=4, batch=8, val_seqs=32, fractions=(1.0, 0.5, 0.3, 0.2),
                    rho=QUICK_RHO, sltrain_fractions=(0.5,), seeds=2),
    # 6 seeds: the pilot rule (docs, "Pilot"): power >= 0.8 for the headline verdict the pilot points to
    "quick": Config(rho=QUICK_RHO, seeds=6),
    "full": Config(layers=4, steps=3000, warmup=300, batch=32, val_seqs=512, rho_grid=(1e-4, 1e-3, 1e-2),
                   sltrain_fractions=(0.5, 0.3), sltrain_grid=(0.25, 0.5, 0.75), seeds=6),
}




def run(config: Config, seed: int, progress) -> list[Record]:
    from optzoo.salaad.repro.experiment import run_seed

    return run_seed(config, seed, progress)


_SHOWN = ("salaad", "salaad_uncoupled", "svd", "prune", "rpca")


def _mean(per_seed, arm, metric, part="") -> float:
    v = [r.value for s in records_of(per_seed, metric=metric, arm=arm, part=part) for r in s]
    return float(np.mean(v)) if v else float("nan")


def notes(per_seed) -> dict[str, str]:
    """Mean excess NLL per arm at the judged budgets, the floor, the control's own threshold
    spread (what makes heterogeneity near-automatic) and SLTrain's cost."""
    out = {}
    rows = []
    for f in STRONG:
        p = f"f={f:g}"
        rows.append(f"{p}: " + ", ".join(f"{a} {_mean(per_seed, a, 'excess', p):.3f}" for a in _SHOWN))
    tot = _mean(per_seed, "config", "target_params")
    rest = _mean(per_seed, "config", "rest_params")
    ptot = {a: (_mean(per_seed, a, "full_params") - rest) / tot for a in ("salaad", "salaad_uncoupled")}
    out["comparable"] = ("mean excess NLL (nats over the Bayes floor): " + "; ".join(rows)
                         + f". Exported size at every block's own rank and nnz (fraction of the targeted "
                         f"parameters): salaad {ptot['salaad']:.2f}, salaad_uncoupled "
                         f"{ptot['salaad_uncoupled']:.2f}")
    out["stability"] = (f"mean NLL: dense {_mean(per_seed, 'dense', 'x_nll'):.4g}, SALAAD X "
                        f"{_mean(per_seed, 'salaad', 'x_nll'):.4g}, Bayes floor "
                        f"{_mean(per_seed, 'bayes', 'nll'):.4g} nats. The control's X is the dense "
                        "model itself, so it reproduces this claim by construction")
    out["posthoc_beats_uncompressed"] = (
        f"mean excess: svd at f=0.5 {_mean(per_seed, 'svd', 'excess', 'f=0.5'):.3f}, SALAAD X "
        f"{_mean(per_seed, 'salaad', 'x_excess'):.3f}, SALAAD export at f=1 "
        f"{_mean(per_seed, 'salaad', 'excess', 'f=1'):.3f}, dense {_mean(per_seed, 'dense', 'x_excess'):.3f}")
    try:
        sp = _spread(per_seed, {"salaad": "salaad_uncoupled"})
        out["controller_heterogeneity"] = ("the control (no coupling) ends with log(max/min) "
                                           + ", ".join(f"{k} {np.mean(v):.3g}" for k, v in sp.items()))
    except ValueError:
        pass
    try:
        c = _controller(per_seed, {})
        out["controller"] = (f"mean max |r/R - r*| {np.mean(c['rank']) + RANK_TOL:.3g}, mean max "
                             f"|density - d*| {np.mean(c['density']) + DENSITY_TOL:.3g}")
    except ValueError:
        pass
    runs = [r.value for s in records_of(per_seed, metric="runs", arm="sltrain") for r in s]
    if runs:
        sec = np.mean([sum(r.value for r in s if r.arm == "sltrain" and r.metric in ("seconds", "tune_seconds"))
                       for s in per_seed])
        sal_sec = float(np.mean([_one(s, "salaad", "cpu_s", "", "train") for s in per_seed]))
        out["vs_sltrain"] = (f"cost: SLTrain-style needs {int(sum(runs) / len(per_seed))} training runs "
                             f"per seed for its budget(s) ({sec:.0f} CPU s, tuning included) where SALAAD's "
                             f"one run ({sal_sec:.0f} CPU s, its rho tuning apart) exports every budget")
    else:
        out["vs_sltrain"] = "the SLTrain-style baseline is trained at full scale only"
    return out


def _by_fraction(per_seed, arm, metric):
    """(fractions, seeds x fractions array) of one arm's per-budget metric."""
    fr = sorted({float(r.part[2:]) for s in per_seed for r in s if r.arm == arm and r.metric == metric
                 and r.part.startswith("f=")})
    arr = np.array([[_one(s, arm, metric, f"f={f:g}") for f in fr] for s in per_seed])
    return fr, arr


def figures(per_seed, outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []
    ent = _mean(per_seed, "bayes", "nll")
    fig, ax = new_figure(figsize=(5.5, 3.8))
    arms = _SHOWN + (("sltrain",) if any(r.arm == "sltrain" for s in per_seed for r in s) else ())
    for i, m in enumerate(arms):
        fr, nll = _by_fraction(per_seed, m, "nll")
        ax.errorbar(fr, nll.mean(0), yerr=nll.std(0), fmt="s" if m == "sltrain" else "o-", color=f"C{i}",
                    label=m, capsize=3)
    ax.axhline(_mean(per_seed, "dense", "x_nll"), color="k", ls=":", label="dense")
    ax.axhline(_mean(per_seed, "salaad", "x_nll"), color="C0", ls=":", label="SALAAD's X")
    ax.axhline(ent, color="gray", ls="--", label="entropy rate (Bayes)")
    for f in STRONG:
        ax.axvline(f, color="0.85", lw=4, zorder=0)
    ax.set(xlabel="budget: fraction of targeted parameters", ylabel="validation NLL (nats/token)",
           title="NLL vs parameter budget (equal counts; judged budgets shaded)")
    ax.legend(fontsize=6)
    paths.append(save_figure(fig, outdir / "nll_vs_budget.png", dpi=90))

    fig, ax = new_figure(figsize=(5, 3.5))
    for key, col in (("dense", "k"), ("salaad", "C0")):
        recs = records_of(per_seed, metric="train_nll", arm=key)
        t = sorted({r.x for r in recs[0]})
        c = np.array([[next(r.value for r in s if r.x == x) for x in t] for s in recs])
        ax.plot(t, c.mean(0), color=col, label=f"{key} (task loss)")
    ax.axhline(ent, color="gray", ls="--", label="entropy rate")
    ax.set(xlabel="step", ylabel="training NLL", title="training: dense vs SALAAD's X")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "training.png", dpi=90))

    s0 = per_seed[0]
    fig, axes = new_figure(1, 2, figsize=(10, 3.5))
    for ax, key in ((axes[0], "rank_ratio"), (axes[1], "density")):
        for arm, ls in (("salaad", "-"), ("salaad_uncoupled", ":")):
            hist: dict = {}
            for r in s0:
                if r.arm == arm and r.metric == f"hist_{key}":
                    hist.setdefault(r.instance.rsplit("@", 1)[0], []).append((r.x, r.value))
            for i, pts in enumerate(hist.values()):
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], ls=ls, lw=0.8, color=f"C{i % 10}")
        ax.axhline(_one(s0, "config", f"{key}_target" if key == "density" else "rank_ratio_target"),
                   color="k", ls="--")
        ax.set(xlabel="ADMM sweep", ylabel=key,
               title=f"per-block {key} (first seed; solid SALAAD, dotted control), target dashed")
    paths.append(save_figure(fig, outdir / "controller.png", dpi=90))

    fig, ax = new_figure(figsize=(5.5, 3.5))
    names = [r.instance for r in s0 if r.arm == "salaad" and r.metric == "tau_L"]
    ax.bar(np.arange(len(names)) - 0.2, [_one(s0, "salaad", "tau_L", "", k) for k in names], 0.4, label="tau_L")
    ax2 = ax.twinx()
    ax2.bar(np.arange(len(names)) + 0.2, [_one(s0, "salaad", "tau_S", "", k) for k in names], 0.4, color="C1",
            label="tau_S")
    ax.set_xticks(np.arange(len(names)))
    ax.set_xticklabels([k.replace("model.", "").replace("layers.", "L") for k in names], rotation=80, fontsize=6)
    ax.set(ylabel="tau_L", title="final thresholds per block (first seed)")
    ax2.set_ylabel("tau_S")
    paths.append(save_figure(fig, outdir / "thresholds.png", dpi=90))

    fig, ax = new_figure(figsize=(5, 3.5))
    for i, m in enumerate(_SHOWN):
        _, b = _by_fraction(per_seed, m, "bytes")
        _, nll = _by_fraction(per_seed, m, "nll")
        ax.plot(b.mean(0) / 1024, nll.mean(0), "o-", color=f"C{i}", label=m)
    ax.set(xlabel="storage (KiB: factors + CSR with int32 indices + rest)", ylabel="validation NLL",
           title="bytes vs NLL")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "bytes_vs_nll.png", dpi=90))
    return paths
