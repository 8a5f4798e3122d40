"""Figures of the momentum_tracking reproduction (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["make_figures"]


def make_figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    paths = []

    def save(fig, name):
        p = outdir / name
        fig.tight_layout()
        fig.savefig(p, dpi=90)
        plt.close(fig)
        paths.append(p)

    # 1: decomposition, measured vs exact per part, and the error trace
    r = per_seed[0]["decomposition"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for _j, part in enumerate(("noise", "drift", "full")):
        ex = [r["exact"][s][part] for s in r["settings"]]
        me = np.array([[ps["decomposition"]["measured"][s][part] for s in r["settings"]] for ps in per_seed])
        axes[0].errorbar(ex, me.mean(0), yerr=me.std(0) if len(per_seed) > 1 else None, fmt="o", label=part)
    lim = axes[0].get_xlim()
    axes[0].plot(lim, lim, "k--", lw=0.8)
    axes[0].set(xscale="log", yscale="log", xlabel="exact window MSE", ylabel="measured", title="decomposition")
    axes[0].legend()
    for s, m, e in zip(r["settings"], r["trace_measured"], r["trace_exact"], strict=False):
        line, = axes[1].plot(r["trace_times"], m, label=s)
        axes[1].plot(r["trace_times"], e, "--", color=line.get_color(), lw=0.8)
    axes[1].set(xscale="log", yscale="log", xlabel="t", ylabel="E||e_t||^2", title="measured (solid) vs exact (dashed)")
    axes[1].legend(fontsize=7)
    save(fig, "decomposition.png")

    # 2: amplification
    fig, ax = plt.subplots(figsize=(5, 3.8))
    for ps in per_seed:
        a = ps["amplification"]
        x = 1 / (1 - np.array(a["betas"]))
        ax.plot(x, a["gain2_measured"], "o", ms=4)
        ax.plot(x, a["gain2_nesterov"], "s", ms=3, mfc="none", color="gray")
    xs = np.linspace(10, 100, 50)
    ax.plot(xs, 1.6 * xs**2, "k--", lw=0.8, label="1.6 (1-beta)^-2")
    ax.set(xscale="log", yscale="log", xlabel="1/(1-beta)", ylabel="tuned worst-case error^2 / Delta^2",
           title="heavy-ball (dots), Nesterov (squares)")
    ax.legend()
    save(fig, "amplification.png")

    # 3: tuned MSE per method vs Kalman floor
    c = per_seed[0]["sgd_wins_drift"]
    mse = np.array([ps["sgd_wins_drift"]["mse"] for ps in per_seed])
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(c["labels"])), 3.8))
    ax.bar(range(len(c["labels"])), mse.mean(0), yerr=mse.std(0) if len(per_seed) > 1 else None)
    ax.plot(range(len(c["labels"])), c["theory_mse"], "k_", ms=14, label="exact")
    ax.axhline(c["kalman_floor"], color="r", ls="--", label="Kalman floor")
    ax.set_xticks(range(len(c["labels"])), c["labels"], rotation=60, fontsize=7)
    ax.set(ylabel="steady MSE (tuned lr)", title="kappa = 1, drift-dominated")
    ax.legend()
    save(fig, "tuned_vs_floor.png")

    # 4: phase diagrams
    b = per_seed[0]["boundary"]
    fig, axes = plt.subplots(1, len(b["phase"]), figsize=(4 * len(b["phase"]), 3.6))
    for ax, (kind, ph) in zip(np.atleast_1d(axes), b["phase"].items(), strict=False):
        z = np.log10(np.array(ph["ratio"]))
        m = max(abs(z).max(), 1e-3)
        im = ax.imshow(z, origin="lower", cmap="coolwarm", vmin=-m, vmax=m, aspect="auto")
        ax.set_xticks(range(len(b["ratios"])), [f"{v:.0e}" for v in b["ratios"]], rotation=45, fontsize=7)
        ax.set_yticks(range(len(b["kappas"])), [f"{v:.3g}" for v in b["kappas"]])
        ax.set(xlabel="q / s^2", ylabel="kappa", title=f"{kind}: log10(best HB / SGD)")
        fig.colorbar(im, ax=ax)
    save(fig, "phase_diagram.png")

    # 5: NN illustration
    nn = per_seed[0]["nn_illustration"]
    fig, ax = plt.subplots(figsize=(5, 3.6))
    tr = np.array(nn["trace"])
    for i, beta in enumerate(nn["betas"]):
        ax.plot(np.arange(tr.shape[0]) * nn["trace_every"], tr[:, i], label=f"beta={beta}")
    ax.set(yscale="log", xlabel="step", ylabel="prequential loss", title="illustration: rotating teacher")
    ax.legend()
    save(fig, "nn_illustration.png")
    return paths
