"""Figures of the momentum_tracking reproduction."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from optzoo.repro.figures import new_figure, save_figure

__all__ = ["make_figures"]


def make_figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []
    many = len(per_seed) > 1

    # 1: decomposition, measured vs exact per part, and the error trace
    r = per_seed[0]["decomposition"]
    fig, axes = new_figure(1, 2, figsize=(10, 3.8))
    for part in ("noise", "drift", "full"):
        ex = [r["exact"][s][part] for s in r["settings"]]
        me = np.array([[ps["decomposition"]["measured"][s][part] for s in r["settings"]] for ps in per_seed])
        axes[0].errorbar(ex, me.mean(0), yerr=me.std(0) if many else None, fmt="o", label=part)
    lim = axes[0].get_xlim()
    axes[0].plot(lim, lim, "k--", lw=0.8)
    axes[0].set(xscale="log", yscale="log", xlabel="exact window MSE", ylabel="measured", title="decomposition")
    axes[0].legend()
    for s, m, e in zip(r["settings"], r["trace_measured"], r["trace_exact"], strict=True):
        line, = axes[1].plot(r["trace_times"], m, label=s)
        axes[1].plot(r["trace_times"], e, "--", color=line.get_color(), lw=0.8)
    axes[1].set(xscale="log", yscale="log", xlabel="t", ylabel="E||e_t||^2", title="measured (solid) vs exact (dashed)")
    axes[1].legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "decomposition.png", dpi=90))

    # 2: amplification under worst-case drift, tuned heavy ball and Nesterov against SGD
    fig, ax = new_figure(figsize=(5, 3.8))
    for i, ps in enumerate(per_seed):
        a = ps["amplification"]
        x = 1 / (1 - np.array(a["betas"]))
        ax.plot(x, a["gain2"]["hb_drawn"], "o", ms=4, color="C0", label="heavy ball" if i == 0 else None)
        ax.plot(x, a["gain2"]["nag_drawn"], "s", ms=3, mfc="none", color="gray", label="Nesterov" if i == 0 else None)
    ax.axhline(per_seed[0]["amplification"]["gain2_sgd"], color="r", lw=0.8, label="SGD")
    xs = np.linspace(10, 100, 50)
    ax.plot(xs, 1.6 * xs**2, "k--", lw=0.8, label="1.6 (1-beta)^-2")
    ax.set(xscale="log", yscale="log", xlabel="1/(1-beta)", ylabel="tuned worst-case error^2 / Delta^2",
           title="worst-case drift, kappa = 1")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "amplification.png", dpi=90))

    # 3: tuned MSE per method vs Kalman floor
    c = per_seed[0]["sgd_wins_drift"]
    mse = np.array([ps["sgd_wins_drift"]["mse"] for ps in per_seed])
    fig, ax = new_figure(figsize=(max(6, 0.45 * len(c["labels"])), 3.8))
    ax.bar(range(len(c["labels"])), mse.mean(0), yerr=mse.std(0) if many else None)
    ax.plot(range(len(c["labels"])), c["theory_mse"], "k_", ms=14, label="exact")
    ax.axhline(c["kalman_floor"], color="r", ls="--", label="Kalman floor")
    ax.set_xticks(range(len(c["labels"])), c["labels"], rotation=60, fontsize=7)
    ax.set(ylabel="steady MSE (tuned lr)", title="kappa = 1, drift-dominated")
    ax.legend()
    paths.append(save_figure(fig, outdir / "tuned_vs_floor.png", dpi=90))

    # 4: phase diagrams
    b = per_seed[0]["boundary"]
    fig, axes = new_figure(1, len(b["phase"]), figsize=(4 * len(b["phase"]), 3.6))
    for ax, (kind, ph) in zip(np.atleast_1d(axes), b["phase"].items(), strict=True):
        z = np.log10(np.array(ph["ratio"]))
        m = max(abs(z).max(), 1e-3)
        im = ax.imshow(z, origin="lower", cmap="coolwarm", vmin=-m, vmax=m, aspect="auto")
        ax.set_xticks(range(len(b["ratios"])), [f"{v:.0e}" for v in b["ratios"]], rotation=45, fontsize=7)
        ax.set_yticks(range(len(b["kappas"])), [f"{v:.3g}" for v in b["kappas"]])
        ax.set(xlabel="q / s^2", ylabel="kappa", title=f"{kind}: log10(best HB / SGD)")
        fig.colorbar(im, ax=ax)
    paths.append(save_figure(fig, outdir / "phase_diagram.png", dpi=90))

    # 5: NN illustration
    nn = per_seed[0]["nn_illustration"]
    fig, ax = new_figure(figsize=(5, 3.6))
    tr = np.array(nn["trace"])
    for i, beta in enumerate(nn["betas"]):
        ax.plot(np.arange(tr.shape[0]) * nn["trace_every"], tr[:, i], label=f"beta={beta}")
    ax.set(yscale="log", xlabel="step", ylabel="prequential loss", title="illustration: rotating teacher")
    ax.legend()
    paths.append(save_figure(fig, outdir / "nn_illustration.png", dpi=90))
    return paths
