"""Figures of the TALDA-R reproduction."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from optzoo.repro.figures import new_figure, save_figure

__all__ = ["draw"]


def _median(ss, get):
    return float(np.median(np.concatenate([np.asarray(get(s), dtype=float) for s in ss])))


def draw(per_seed: list[dict], outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    allset = [s for r in per_seed for s in r["settings"]]
    paths = []

    # 1. gradient calls vs coupling, per method (P2 and P3); unconverged runs are inf (off the plot)
    fig, axes = new_figure(1, 2, figsize=(10, 4))
    for ax, fam in zip(axes, ("P3", "P2"), strict=True):
        by: dict = {}
        for s in allset:
            if s["family"] == fam:
                by.setdefault(s["param"], []).append(s)
        if not by:
            ax.set_visible(False)
            continue
        eps = sorted(by)
        xs = [max(e, 3e-3) for e in eps]  # eps = 0 drawn at the left edge of the log axis
        series = {"TALDA-R theory": lambda s: s["talda"]["calls"]}
        for m in by[eps[0]][0]["tuned"]:
            series[f"{m} tuned"] = lambda s, m=m: s["tuned"][m]["calls"]
        for label, get in series.items():
            ax.plot(xs, [_median(by[e], get) for e in eps], "o-", label=label)
        ax.set(xscale="log", yscale="log", xlabel="coupling eps (eps = 0 drawn at 3e-3)",
               ylabel="gradient calls to |grad f| <= 1e-8 (median)", title=fam)
        ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "calls_vs_coupling.png", dpi=90))

    # 2. measured vs certified rates, and AGDA-theory's progress at TALDA-R's call count
    fig, axes = new_figure(1, 2, figsize=(10, 4))
    ax = axes[0]
    for fam, mk in (("P1", "s"), ("P2", "o"), ("P3", "^"), ("P4", "D")):
        ss = [s for s in allset if s["family"] == fam]
        if ss:
            meas = [-np.nanmedian(s["talda"]["slope"]) for s in ss]
            cert = [s["certified_rate"] / 2 for s in ss]  # |grad f| ~ sqrt(P): half P's log-rate
            ax.loglog(cert, meas, mk, label=fam)
    lim = ax.get_xlim()
    ax.plot(lim, lim, "k--", lw=0.8, label="measured = certified")
    ax.set(xlabel="certified log-rate of |grad f| (r/2)", ylabel="measured log-rate (median)")
    ax.legend(fontsize=7)
    ax = axes[1]
    keys = sorted({(s["family"], s["param"]) for s in allset})
    vals = [_median([s for s in allset if (s["family"], s["param"]) == k],
                    lambda s: s["agda_theory"]["grad_norm_at_talda_calls"]) for k in keys]
    ax.bar(range(len(keys)), vals)
    ax.axhline(1e-8, color="r", ls="--", lw=0.8, label="tol (TALDA-R reached it)")
    ax.set_xticks(range(len(keys)), [f"{f}:{p:g}" for f, p in keys], rotation=60, fontsize=7)
    ax.set(yscale="log", ylabel="AGDA-theory |grad f| at TALDA-R's calls (median)")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "rates_and_agda_theory.png", dpi=90))

    # 3. S, W, P traces and 4. x-step scale and tracking ratio, first seed's P1 (or first setting)
    first = per_seed[0]["settings"]
    s = next((t for t in first if t["family"] == "P1"), first[0])
    tr = s["trace"]
    fig, ax = new_figure(figsize=(5, 4))
    for k in ("W", "S", "P"):
        ax.semilogy(tr[k]["k"], np.maximum(tr[k]["v"], 1e-300), label=k)
    ax.set(xlabel="iteration", title=f"{s['name']}: surrogate S, upper model W, exact P")
    ax.legend()
    paths.append(save_figure(fig, outdir / "lyapunov_traces.png", dpi=90))

    fig, ax = new_figure(figsize=(5, 4))
    ax.plot(tr["eta"]["k"], tr["eta"]["v"], label="x-step x M = [1 - K rho]_+")
    ax2 = ax.twinx()
    ax2.semilogy(tr["rho"]["k"], tr["rho"]["v"], "C1", label="rho = |g_y| / |g_x|")
    ax.set(xlabel="iteration", ylabel="eta M", title=s["name"])
    ax2.set_ylabel("rho")
    fig.legend(fontsize=7, loc="upper right")
    paths.append(save_figure(fig, outdir / "step_and_tracking.png", dpi=90))
    return paths
