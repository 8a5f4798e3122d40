"""Reproduction of zo_sgd (arXiv 2605.03373) on records: claims, scales, run, notes, figures.

Setting (spec section 3, all INFERRED): GPT-2 models from :func:`optzoo.tinylm.tiny_gpt2`
(vocab 64, 2 layers, 4 heads, n_positions 64, random init per seed and width), widths giving
d from about 3e4 to 4e5 at quick; N ICL prompts (:func:`optzoo.tinylm.icl_batch`, the same for
every width), outputs the last-position logits of V label tokens. Per width: the exact eNTK
(float64, ``torch.func``), the Gaussian ZO kernel by JVP for nested prefixes of one draw of
P_max directions (arm ``kernel``), the Rademacher one (arm ``kernel_rademacher``), and the SAME
Gaussian directions judged in parameter space (arm ``parameter``: the ZO gradient estimate of
the V-output label-word cross-entropy against its exact gradient). See
:mod:`optzoo.zo_sgd.repro.kernels`.

Why the claims are built this way (issue 37). For Gaussian directions the kernel's mean squared
relative error is exactly (1 + r_eff)/P for ANY Gram matrix at any d (r_eff = tr(K)^2/||K||_F^2
<= N V): the P^(-1/2) rate, the parameter-space cosine sqrt(P/(d+P+1)) and Gaussian vs
Rademacher are identities or near-identities, so they are ``check``s or ``finding``s here, and
tests. What the abstract's headline ("the approximation error depends on the model output size
rather than the parameter dimension") says about real models is how r_eff moves with d and with
the output size; on real widths it can move with d (it grew with width on the pilot), so the
claims ``error_vs_d`` and ``output_size_not_d`` can fail. Their control is the same estimator
without the Jacobian projection the kernel view credits (arm ``parameter``), whose error grows
like sqrt(d/P) and does not grow with V: what the claims would look like if the paper's
mechanism were absent.

The training experiment (E3: ``training``, ``zo_needs_more_steps``, ``one_step_dlogp``, all
findings from the spec, not the abstract) is in :mod:`optzoo.zo_sgd.repro.training` and runs
only at full (about 50 CPU-s a seed; quick keeps the kernel sweep's cost).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo.repro.claim import Claim
from optzoo.repro.evidence import Control, Custom, Paired, Record, Slope, Value, group, records_of
from optzoo.repro.figures import new_figure, save_figure
from optzoo.zo_sgd.repro.kernels import KERNEL, PARAMETER, RADEMACHER, run_kernels
from optzoo.zo_sgd.repro.training import TrainConfig, n_phases, run_training

__all__ = ["CLAIMS", "HEADLINE", "SCALES", "Config", "figures", "notes", "run"]

_ABSTRACT = ("abstract: 'the approximation error depends on the model output size rather than the "
             "parameter dimension' (the ZO-eNTK is the inner product of randomly projected tangent "
             "vectors; by Johnson-Lindenstrauss its fidelity is governed by the number of perturbations)")

_NO_PROJECTION = Control(
    {KERNEL: PARAMETER},
    removes="the Jacobian projection the kernel view credits: the same Gaussian directions and P "
            "judged in parameter space (g_hat = U U^T g / P against g = J^T G for the V-output "
            "label-word cross-entropy), whose error grows like sqrt(d/P)",
    credits="abstract: the ZO-eNTK is the inner product of randomly projected tangent vectors, so "
            "by Johnson-Lindenstrauss its fidelity is governed by the number of perturbations and "
            "the output size, not the parameter dimension")


def _output_size_minus_d(per_seed, sub) -> dict:
    """Per seed: slope of log err against log V minus slope of log err against log d."""
    by_v = Slope("rel_err_by_V", KERNEL).collect(per_seed, sub)[""]
    by_d = Slope("rel_err", KERNEL).collect(per_seed, sub)[""]
    return {"": [a - b for a, b in zip(by_v, by_d, strict=True)]}


def _training_parts(per_seed, sub) -> dict:
    zo = Value("track_cos", "zo").collect(per_seed, sub)[""]
    diff = Paired("track_cos", "zo", "mezo").collect(per_seed, sub)[""]
    return {"cos(ZO-SGD P)": zo, "cos(ZO-SGD P) - cos(MeZO)": diff}


_E3 = ("full",)

CLAIMS = [
    # --- the headline: claims that can fail, each with the parameter-space control -------------
    Claim("error_vs_d",
          "The relative error of the ZO eNTK does not depend on the parameter dimension d, on "
          "real models of growing width (where it can still move with d through the kernel's "
          "effective rank).",
          "slope of log ||K_ZO - K||_F/||K||_F (Gaussian, JVP; geometric mean over the V and P "
          "grids) against log d over the widths of a seed",
          direction="equivalent", threshold=0.0, margin=0.1, source=_ABSTRACT,
          evidence=Slope("rel_err", KERNEL), control=_NO_PROJECTION),
    Claim("output_size_not_d",
          "The ZO eNTK error depends on the output size rather than on d: its log-slope against "
          "the output size V exceeds its log-slope against d.",
          "slope of log err against log V (geometric mean over widths and P) minus slope of log "
          "err against log d (geometric mean over V and P), per seed",
          direction="greater", threshold=0.0, source=_ABSTRACT,
          evidence=Custom(_output_size_minus_d, "slope of log err vs log V minus slope vs log d, "
                          f"arm {KERNEL}", uses=(KERNEL,)),
          control=_NO_PROJECTION),
    Claim("function_space_vs_d",
          "The ZO function-space update (its cosine with the first-order update on held-out "
          "prompts) does not depend on d.",
          "slope of log cos(dz_ZO, dz_FO) (linearised one-step update -eta K_ZO G vs -eta K G, "
          "geometric mean over the cosine P grid) against log d",
          direction="equivalent", threshold=0.0, margin=0.1,
          source="abstract: the learning dynamics of ZO optimization through the ZO-eNTK, whose "
                 "fidelity is governed by the number of perturbations, not the parameter dimension",
          evidence=Slope("update_cos", KERNEL),
          control=Control({KERNEL: PARAMETER},
                          removes="the Jacobian projection: the cosine of the same ZO step with the "
                                  "first-order step in parameter space, cos(g_hat, g)",
                          credits=_NO_PROJECTION.credits)),
    # --- findings: from the spec or a third-party summary, not the abstract --------------------
    Claim("error_vs_V",
          "The ZO eNTK error grows with the output size V (near-automatic: r_eff <= N V).",
          "slope of log err (geometric mean over widths and P) against log V",
          direction="greater", threshold=0.0, kind="finding", source="spec C2",
          evidence=Slope("rel_err_by_V", KERNEL)),
    Claim("gaussian_vs_rademacher",
          "Gaussian and Rademacher perturbations give ZO kernels of similar fidelity "
          "(near-identity for dense tangents).",
          "log(err Rademacher / err Gaussian), mean over widths, V and the shared P grid",
          direction="equivalent", threshold=0.0, margin=0.2, kind="finding",
          source="spec: third-party paper summary (similar trajectory convergence)",
          evidence=Paired("rel_err_shared", RADEMACHER, KERNEL, "logratio")),
    Claim("training",
          "Fine-tuning: ZO-SGD at moderate P tracks first-order SGD in function space (positive "
          "cosine), and tracks it better than MeZO (P = 1).",
          "cos(dz_ZO, dz_SGD) of the change of held-out label log-probs after the first K = 10 "
          "steps from the same init and batches, every method at the lr tuned for ZO-SGD (P); "
          "parts: cos for P, and cos(P) - cos(P = 1) paired per seed (non-finite counts as 0)",
          direction="greater", threshold=0.0, kind="finding", source="spec C5 (E3)",
          evidence=Custom(_training_parts, "track_cos of zo; zo vs mezo (difference, paired)",
                          uses=("zo", "mezo")), scales=_E3),
    Claim("zo_needs_more_steps",
          "Fine-tuning: at equal steps MeZO (P = 1) lowers the held-out loss less than SGD and "
          "Adam (each at its own tuned lr). This is the classical premise (ZO is slow in d) that "
          "the paper argues against, not its claim.",
          "held-out loss AUC over the run (a diverged run counts as the initial loss), MeZO "
          "minus SGD and MeZO minus Adam, each at its lr tuned on the tune stream",
          direction="greater", threshold=0.0, kind="finding", source="spec C5 (E3)",
          evidence=Paired("auc", "mezo", "first_order"), scales=_E3),
    Claim("one_step_dlogp",
          "The kernel one-step prediction -eta A_o K_ZO G_u of the change of held-out label "
          "log-probs agrees with the realised first ZO-SGD (P = 16) step at its tuned lr.",
          "cos(predicted, realised dlog pi) on the held-out prompts, first ZO-SGD step, K_ZO "
          "from that step's own directions (JVP, float64)",
          direction="greater", threshold=0.9, kind="finding", source="spec E3 (ours)",
          evidence=Value("one_step_cos", "zo"), scales=_E3),
    # --- checks: identities of the Gaussian sketch, on the real models (also unit tests) -------
    Claim("error_vs_P",
          "The ZO eNTK error falls like P^(-1/2) (an identity of an unbiased Gaussian sketch: "
          "E err^2 = (1 + r_eff)/P for any Gram matrix).",
          "slope of log err (geometric mean over V) against log P, one part per width",
          direction="equivalent", threshold=-0.5, margin=0.1, kind="check",
          source="derived (spec C1; abstract: fidelity governed by P)",
          evidence=Slope("rel_err_vs_P", KERNEL)),
    Claim("gradient_cosine_vs_d",
          "In parameter space the ZO gradient's cosine with the true gradient falls like "
          "sqrt(P/d) (an identity: sqrt(P/(d+P+1)) for Gaussian directions).",
          "slope of log cos(g_hat, grad L) (geometric mean over the cosine P grid) against log d",
          direction="equivalent", threshold=-0.5, margin=0.1, kind="check", source="derived (spec C4)",
          evidence=Slope("update_cos", PARAMETER)),
    Claim("variance_law",
          "On the real models, the Gaussian K_ZO's squared relative error matches the closed "
          "form (1 + r_eff)/P.",
          "mean over (width, V, P) cells of err^2 P / (1 + r_eff)",
          direction="equivalent", threshold=1.0, margin=0.15, kind="check",
          source="derived (spec section 1)", evidence=Value("variance_ratio", KERNEL)),
    Claim("jl_bound",
          "The JL entry bound (delta = 0.05) holds: the max normalised entry error exceeds it in "
          "fewer than 5% of cells.",
          "fraction of (width, V, P) cells whose max |K_ZO - K|/(|a||b|) exceeds jl_entry_bound "
          "(a vacuous, infinite bound is never exceeded)",
          direction="less", threshold=0.05, kind="check", source="derived (spec section 1, JL)",
          evidence=Value("jl_exceeded", KERNEL)),
]

#: The claims that test the abstract's headline (papers.py names them).
HEADLINE = ("error_vs_d", "output_size_not_d")


@dataclass(frozen=True)
class Config:
    widths: tuple = (32, 64, 128)
    outputs: tuple = (2, 8, 32)
    perturbations: tuple = (1, 4, 16, 64, 256)
    rademacher_perturbations: tuple = (1, 4, 16, 64)
    cosine_perturbations: tuple = (16, 64, 256)
    n_prompts: int = 8
    demos: int = 2
    n_features: int = 3
    vocab: int = 64
    n_layer: int = 2
    n_positions: int = 64
    jl_delta: float = 0.05
    seeds: int = 5
    training: TrainConfig | None = None


# full's grids: one more point below each quick grid (6 points, same ratio for every method)
_FULL_LR_LOW = tuple((m, v / 10 ** 0.5) for m, v in TrainConfig().lr_low)

# quick's seed count, from pilot seeds 90000-90002 by a rule written before reading them: the
# smallest n >= 5 at which each headline claim is decided the way its pilot estimate points with
# power >= 0.8 (noncentral t, the judging rule's), capped at 10 seeds for cost. error_vs_d
# (pilot 0.046, sd 0.052 against 0 +- 0.1) needs 8 (power 0.84); output_size_not_d needs 5.
# See docs/papers/zo_sgd.md.
QUICK_SEEDS = 8

SCALES = {
    "smoke": Config(widths=(8, 16), outputs=(2, 4), perturbations=(1, 4, 16),
                    rademacher_perturbations=(1, 4), cosine_perturbations=(4, 16), n_prompts=4,
                    n_layer=1, n_positions=16, seeds=2,
                    training=TrainConfig(pool_queries=256, heldout_inputs=8,
                                         batch=4, steps=3, tune_steps=2, eval_every=0, grid_size=2,
                                         zo_perturbations=4)),
    "quick": Config(seeds=QUICK_SEEDS),
    "full": Config(widths=(32, 64, 128, 256), outputs=(2, 8, 32, 64),
                   perturbations=(1, 4, 16, 64, 256, 1024), rademacher_perturbations=(1, 4, 16, 64, 256),
                   cosine_perturbations=(16, 64, 256, 1024), seeds=20,
                   training=TrainConfig(steps=200, tune_steps=100, eval_every=20,
                                        grid_size=6, lr_low=_FULL_LR_LOW,
                                        methods=("sgd", "adam", "mezo", "zo_gaussian",
                                                 "zo_rademacher"))),
}


def run(config: Config, seed: int, progress) -> list[Record]:
    progress.start(len(config.widths), "zo_sgd kernels")
    records = run_kernels(config, seed, progress)
    if config.training is not None:
        progress.start(n_phases(config.training), "zo_sgd training")
        records += training_records(run_training(config.training, seed, progress))
    return records


def _finite(x) -> float:
    """A cosine, with a non-finite one (a diverged run) counted as 0 (no alignment)."""
    return float(x) if x is not None and math.isfinite(x) else 0.0


def training_records(t: dict) -> list[Record]:
    """E3's records: tracking cosines, held-out AUCs (a diverged run counts as the initial
    loss), the one-step cosine, and the held-out curves (for the figure)."""
    init = float(t["init"]["loss"])

    def auc(m):
        v = t["runs"][m]["auc"]
        return float(v) if v is not None and math.isfinite(v) else init

    out = [Record("", "zo", "heldout", "track_cos", _finite(t["tracking"]["cos_zo"])),
           Record("", "mezo", "heldout", "track_cos", _finite(t["tracking"]["cos_mezo"])),
           Record("", "zo", "heldout", "one_step_cos", _finite(t["one_step"]["zo"]["cos"]))]
    for fo, name in (("sgd", "vs SGD"), ("adam", "vs Adam")):
        if fo in t["runs"]:
            out += [Record(name, "mezo", "heldout", "auc", auc("mezo")),
                    Record(name, "first_order", "heldout", "auc", auc(fo))]
    for m, r in t["runs"].items():
        c = r["curve"]
        for s, f, loss in zip(c["step"], c["forwards"], c["loss"], strict=True):
            out.append(Record("", m, f"step={s}", "heldout_loss",
                              float("nan") if loss is None else loss, x=max(f, 1)))
    for tuned in t.get("tuned", {}).values():
        if "choice" in tuned:
            out += tuned["choice"].to_records()
    return out


def notes(per_seed: list[list[Record]]) -> dict[str, str]:
    """r_eff per width (what moves error_vs_d), and the parameter arm's slope for comparison."""
    r = group(per_seed, "metric", "arm")
    reff = r.get(("r_eff", KERNEL))
    out = {}
    if reff:
        by_d: dict[float, list[float]] = {}
        vmax = max(int(rec.instance.split("V=")[1]) for rec in reff[0])
        for seed in reff:
            for rec in seed:
                if int(rec.instance.split("V=")[1]) == vmax:
                    by_d.setdefault(rec.x, []).append(rec.value)
        text = ", ".join(f"d={int(d)}: {np.mean(v):.1f}" for d, v in sorted(by_d.items()))
        out["error_vs_d"] = (f"mean r_eff at V={vmax} per width: {text} (the Gaussian error follows "
                             "sqrt((1+r_eff)/P), so a trend of r_eff with width moves the slope)")
    return out


def _geo(values) -> float:
    v = np.asarray(values, dtype=float)
    return float(np.exp(np.mean(np.log(v))))


def figures(per_seed: list[list[Record]], outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []
    fig, axes = new_figure(1, 2, figsize=(9, 3.5))
    by_part = group(per_seed, "metric", "arm", "part")
    for arm in (KERNEL, PARAMETER):
        parts = sorted({k[2] for k in by_part if k[0] == "rel_err_vs_P" and k[1] == arm},
                       key=lambda p: float(p.split("=")[1]))
        for i, part in enumerate(parts):
            recs = [r for seed in by_part[("rel_err_vs_P", arm, part)] for r in seed]
            xs = sorted({r.x for r in recs})
            ys = [_geo([r.value for r in recs if r.x == x]) for x in xs]
            axes[0].loglog(xs, ys, "o-" if arm == KERNEL else "s--", color=f"C{i}",
                           label=f"{'K_ZO' if arm == KERNEL else 'g_hat'}, {part}", ms=3)
    axes[0].set(xlabel="perturbations P", ylabel="relative error", title="kernel (solid) vs parameter space")
    axes[0].legend(fontsize=6)
    for arm, style in ((KERNEL, "o-"), (PARAMETER, "s--")):
        recs = [r for seed in records_of(per_seed, metric="rel_err", arm=arm) for r in seed]
        if recs:
            xs = sorted({r.x for r in recs})
            ys = [_geo([r.value for r in recs if r.x == x]) for x in xs]
            axes[1].loglog(xs, np.asarray(ys) / ys[0], style, label=f"{arm} (relative to smallest d)")
    from matplotlib.ticker import NullFormatter

    axes[1].xaxis.set_minor_formatter(NullFormatter())
    axes[1].yaxis.set_minor_formatter(NullFormatter())
    axes[1].set(xlabel="parameters d", ylabel="error / error at smallest d",
                title="error against d (claim: kernel flat)")
    axes[1].legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "kernel_error.png", dpi=90))

    fig, ax = new_figure(figsize=(4.8, 3.6))
    cos = group(per_seed, "metric", "arm", "part")
    parts = sorted({k[2] for k in cos if k[0] == "update_cos_at_P"}, key=lambda p: float(p.split("=")[1]))
    for j, part in enumerate(parts):
        P = float(part.split("=")[1])
        for arm, style in ((KERNEL, "s--"), (PARAMETER, "o-")):
            recs = [r for seed in cos.get(("update_cos_at_P", arm, part), []) for r in seed]
            xs = sorted({r.x for r in recs})
            ys = [float(np.mean([r.value for r in recs if r.x == x])) for x in xs]
            ax.loglog(xs, np.maximum(ys, 1e-6), style, color=f"C{j}",
                      label=f"{'function' if arm == KERNEL else 'param'} cos, {part}")
        ax.loglog(xs, [math.sqrt(P / (x + P + 1)) for x in xs], ":", color=f"C{j}")
    ax.set(xlabel="parameters d", ylabel="cosine", title="parameter vs function space")
    ax.legend(fontsize=6)
    paths.append(save_figure(fig, outdir / "paradox.png", dpi=90))
    curves = group(per_seed, "metric", "arm")
    methods = [k[1] for k in curves if k[0] == "heldout_loss"]
    if methods:
        fig, ax = new_figure(figsize=(4.8, 3.6))
        for j, m in enumerate(methods):
            recs = [r for seed in curves[("heldout_loss", m)] for r in seed]
            xs = sorted({r.x for r in recs})
            ys = [float(np.nanmedian([r.value for r in recs if r.x == x])) for x in xs]
            ax.plot(xs, ys, "o-", ms=3, color=f"C{j}", label=m)
        ax.set_xscale("log")
        ax.set(xlabel="training forward passes (ZO: 2P per step, FO: 3)", ylabel="held-out loss (median)")
        ax.legend(fontsize=7)
        paths.append(save_figure(fig, outdir / "training.png", dpi=90))
    return paths
