"""Figures of the momentum_tracking reproduction (from records)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from optzoo.repro.evidence import group
from optzoo.repro.figures import new_figure, save_figure

__all__ = ["make_figures"]


def _values(per_seed, metric, arm, part=None):
    return [[r for r in seed if r.metric == metric and r.arm == arm and (part is None or r.part == part)]
            for seed in per_seed]


def make_figures(per_seed, outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []

    # 1: the headline: log worst-case risk ratio per kappa, drift-dominated vs its control
    fig, ax = new_figure(figsize=(5.2, 3.8))
    risk = group(per_seed, "metric", "arm", "part")
    parts = sorted({k[2] for k in risk if k[0] == "worst_risk"}, key=lambda p: float(p.split("=")[1]))
    for j, (m, s, label) in enumerate((("momentum", "sgd", "drift-dominated (claim)"),
                                       ("momentum_noise_dominated", "sgd_noise_dominated",
                                        "noise-dominated (control)"))):
        ys = []
        for p in parts:
            a = [r.value for seed in risk.get(("worst_risk", m, p), []) for r in seed]
            b = [r.value for seed in risk.get(("worst_risk", s, p), []) for r in seed]
            ys.append(float(np.mean(np.log(np.asarray(a) / np.asarray(b)))) if a and b else np.nan)
        ax.bar(np.arange(len(parts)) + 0.4 * j - 0.2, ys, width=0.4, label=label)
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xticks(range(len(parts)), parts)
    ax.set(ylabel="log(worst-case risk momentum / SGD)", title="minimax tracking risk (> 0: momentum worse)")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "minimax.png", dpi=90))

    # 2: amplification under worst-case drift, tuned heavy ball and Nesterov against SGD
    fig, ax = new_figure(figsize=(5, 3.8))
    for arm, style, label in (("hb", "o", "heavy ball"), ("nag", "s", "Nesterov")):
        recs = [r for seed in _values(per_seed, "gain2", arm) for r in seed]
        ax.plot([r.x for r in recs], [r.value for r in recs], style, ms=4, label=label)
    sgd = [r.value for seed in _values(per_seed, "gain2_sgd", "sgd") for r in seed]
    if sgd:
        ax.axhline(sgd[0], color="r", lw=0.8, label="SGD")
    xs = np.linspace(10, 100, 50)
    ax.plot(xs, 1.6 * xs**2, "k--", lw=0.8, label="1.6 (1-beta)^-2")
    ax.set(xscale="log", yscale="log", xlabel="1/(1-beta)", ylabel="tuned worst-case error^2 / Delta^2",
           title="worst-case drift, kappa = 1")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "amplification.png", dpi=90))

    # 3: decomposition trace, measured (solid) vs exact (dashed), first seed
    fig, ax = new_figure(figsize=(5.4, 3.8))
    tr = group(per_seed[:1], "metric", "arm", "part")
    for p in sorted({k[2] for k in tr if k[0] == "trace"}):
        m = sorted(tr[("trace", "measured", p)][0], key=lambda r: r.x)
        e = sorted(tr[("trace", "exact", p)][0], key=lambda r: r.x)
        line, = ax.plot([r.x for r in m], [r.value for r in m], label=p)
        ax.plot([r.x for r in e], [r.value for r in e], "--", color=line.get_color(), lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="t", ylabel="E||e_t||^2", title="measured (solid) vs exact (dashed)")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "decomposition.png", dpi=90))

    # 4: NN illustration, prequential loss trace of the first seed (a diverged arm shows as a gap)
    fig, ax = new_figure(figsize=(5, 3.6))
    nn = group(per_seed[:1], "metric", "part")
    for p in sorted(k[1] for k in nn if k[0] == "preq_trace"):
        recs = sorted(nn[("preq_trace", p)][0], key=lambda r: r.x)
        ys = np.array([r.value for r in recs], dtype=float)
        ax.plot([r.x for r in recs], np.where(np.isfinite(ys), ys, np.nan), label=p)
    ax.set(yscale="log", xlabel="step", ylabel="prequential loss", title="MLP, rotating teacher (illustration)")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "nn_illustration.png", dpi=90))
    return paths
