"""Figures of the TALDA-R reproduction (matplotlib Agg)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _median_calls(ss, get):
    v = np.concatenate([np.asarray(get(s), dtype=float) for s in ss])
    return float(np.median(v))


def draw(per_seed: list[dict], outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    allset = [s for r in per_seed for s in r["settings"]]
    paths = []

    # 1. gradient calls vs coupling, per method (P2 and P3)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, fam in zip(axes, ("P3", "P2")):
        by: dict = {}
        for s in allset:
            if s["family"] == fam:
                by.setdefault(s["param"], []).append(s)
        if not by:
            ax.set_visible(False)
            continue
        eps = sorted(by)
        xs = [max(e, 3e-3) for e in eps]  # eps = 0 drawn at the left edge of the log axis
        series = {"TALDA-R theory": lambda s: s["talda"]["calls"],
                  "AGDA theory (extrap.)": lambda s: s["agda_theory"]["calls"]}
        for m in by[eps[0]][0]["tuned"]:
            series[f"{m} tuned"] = lambda s, m=m: s["tuned"][m]["calls"]
        for label, get in series.items():
            ax.plot(xs, [_median_calls(by[e], get) for e in eps], "o-", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("coupling eps (eps = 0 drawn at 3e-3)")
        ax.set_ylabel("gradient calls to |grad f| <= 1e-8 (median)")
        ax.set_title(fam)
        ax.legend(fontsize=7)
    p = outdir / "calls_vs_coupling.png"
    fig.tight_layout()
    fig.savefig(p, dpi=90)
    plt.close(fig)
    paths.append(p)

    # 2. measured vs certified rates
    fig, ax = plt.subplots(figsize=(5, 4))
    for fam, mk in (("P1", "s"), ("P2", "o"), ("P3", "^"), ("P4", "D")):
        ss = [s for s in allset if s["family"] == fam]
        if ss:
            meas = [-np.nanmedian(s["talda"]["slope"]) for s in ss]
            cert = [s["certified_rate"] / 2 for s in ss]  # |grad f| ~ sqrt(P): half P's log-rate
            ax.loglog(cert, meas, mk, label=fam)
    lim = ax.get_xlim()
    ax.plot(lim, lim, "k--", lw=0.8, label="measured = certified")
    ax.set_xlabel("certified log-rate of |grad f| (r/2)")
    ax.set_ylabel("measured log-rate of |grad f| (median)")
    ax.legend(fontsize=7)
    p = outdir / "rates_measured_vs_certified.png"
    fig.tight_layout()
    fig.savefig(p, dpi=90)
    plt.close(fig)
    paths.append(p)

    # 3. S, W, P traces and 4. x-step scale and tracking ratio, first seed's P1 (or first setting)
    first = per_seed[0]["settings"]
    s = next((t for t in first if t["family"] == "P1"), first[0])
    tr = s["trace"]
    fig, ax = plt.subplots(figsize=(5, 4))
    for k in ("W", "S", "P"):
        ax.semilogy(tr[k]["k"], np.maximum(tr[k]["v"], 1e-300), label=k)
    ax.set_xlabel("iteration")
    ax.set_title(f"{s['name']}: surrogate S, upper model W, exact P")
    ax.legend()
    p = outdir / "lyapunov_traces.png"
    fig.tight_layout()
    fig.savefig(p, dpi=90)
    plt.close(fig)
    paths.append(p)

    fig, ax = plt.subplots(figsize=(5, 4))
    ax.plot(tr["eta"]["k"], tr["eta"]["v"], label="x-step x M = [1 - K rho]_+")
    ax2 = ax.twinx()
    ax2.semilogy(tr["rho"]["k"], tr["rho"]["v"], "C1", label="rho = |g_y| / |g_x|")
    ax.set_xlabel("iteration")
    ax.set_ylabel("eta M")
    ax2.set_ylabel("rho")
    ax.set_title(s["name"])
    fig.legend(fontsize=7, loc="upper right")
    p = outdir / "step_and_tracking.png"
    fig.tight_layout()
    fig.savefig(p, dpi=90)
    plt.close(fig)
    paths.append(p)
    return paths
