"""Figures of the TALDA-R reproduction, drawn from its records."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from optzoo.repro.evidence import Record
from optzoo.repro.figures import new_figure, save_figure

__all__ = ["draw"]

_ARMS = ("talda", "talda_nocorr", "talda_blind", "talda_tuned", "talda_nocorr_tuned", "gda_tuned",
         "agda_tuned", "eg_tuned", "ogda_tuned")


def _collect(per_seed, metric: str) -> dict:
    """(family, eps) -> arm -> values over (seed, init)."""
    out: dict = {}
    for seed in per_seed:
        for r in seed:
            r = r if isinstance(r, Record) else Record(**r)
            if r.metric == metric and r.instance.startswith("i") and ":" in r.part \
                    and not r.part.startswith("trace"):
                fam, eps = r.part.split(":")
                out.setdefault((fam, float(eps)), {}).setdefault(r.arm, []).append(r.value)
    return out


def draw(per_seed, outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []
    calls = _collect(per_seed, "calls")

    # 1. median gradient calls vs coupling, every arm (P3 and P2)
    fig, axes = new_figure(1, 2, figsize=(11, 4))
    for ax, fam in zip(axes, ("P3", "P2"), strict=True):
        eps = sorted(e for f, e in calls if f == fam)
        if not eps:
            ax.set_visible(False)
            continue
        xs = [max(e, 3e-3) for e in eps]  # eps = 0 drawn at the left edge of the log axis
        for arm in _ARMS:
            ys = [np.nanmedian(calls[(fam, e)][arm]) if arm in calls[(fam, e)] else np.nan for e in eps]
            if np.isfinite(ys).any():
                ax.plot(xs, ys, "o-" if "talda" in arm else "s--", label=arm)
        ax.set(xscale="log", yscale="log", xlabel="coupling eps (eps = 0 drawn at 3e-3)",
               ylabel="gradient calls to |grad f| <= 1e-8 (median, censored at budget)", title=fam)
        ax.legend(fontsize=6)
    paths.append(save_figure(fig, outdir / "calls_vs_coupling.png", dpi=90))

    # 2. measured rate per gradient call vs coupling: TALDA-R, its coupling-blind design, no correction
    rates = _collect(per_seed, "rate")
    fig, axes = new_figure(1, 2, figsize=(10, 4))
    for ax, fam in zip(axes, ("P3", "P2"), strict=True):
        eps = sorted(e for f, e in rates if f == fam)
        if not eps:
            ax.set_visible(False)
            continue
        xs = [max(e, 3e-3) for e in eps]
        for arm in ("talda", "talda_blind", "talda_nocorr"):
            ys = [np.nanmedian(rates[(fam, e)][arm]) if arm in rates[(fam, e)] else np.nan for e in eps]
            if np.isfinite(ys).any():
                ax.plot(xs, ys, "o-", label=arm)
        ax.set(xscale="log", yscale="log", xlabel="coupling eps", ylabel="measured rate per call (median)",
               title=fam)
        ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "rate_vs_coupling.png", dpi=90))

    # 3. S, W, exact P and |grad f| along the first seed's traced run
    tr: dict = {}
    for r in per_seed[0]:
        r = r if isinstance(r, Record) else Record(**r)
        if r.part.startswith("trace:"):
            tr.setdefault(r.metric, []).append((r.x, r.value))
    if tr:
        fig, ax = new_figure(figsize=(5, 4))
        for key in ("trace_W", "trace_S", "trace_P", "trace_grad_norm"):
            if key in tr:
                k, v = zip(*sorted(tr[key]), strict=True)
                ax.semilogy(k, np.maximum(v, 1e-300), label=key[6:])
        part = next(r.part for r in per_seed[0] if isinstance(r, Record) and r.part.startswith("trace:"))
        ax.set(xlabel="iteration", title=f"{part[6:]}: surrogate S, upper model W, exact P")
        ax.legend()
        paths.append(save_figure(fig, outdir / "lyapunov_traces.png", dpi=90))
    return paths
