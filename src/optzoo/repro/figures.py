"""What every room's ``figures()`` repeats: a headless matplotlib figure saved to a PNG, and
the per-paper forest plot of claims drawn by the report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["VERDICT_COLOURS", "forest_plot", "new_figure", "save_figure"]

VERDICT_COLOURS = {"reproduced": "#1a7f37", "passed": "#1a7f37", "not reproduced": "#cf222e",
                   "failed": "#cf222e", "inconclusive": "#9a6700"}


def new_figure(*args: Any, **kwargs: Any):
    """``plt.subplots(*args, **kwargs)`` on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


def save_figure(fig, path: str | Path, *, dpi: int = 110) -> Path:
    """Save ``fig`` as ``path`` (parents created), close it, return the path."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return path


def forest_plot(verdicts: Sequence, path: str | Path, title: str = "") -> Path | None:
    """One row per judged part (claims and findings first, then checks): the estimate and
    its interval against the threshold (dashed) or the equivalence band (shaded), coloured by
    the part's verdict. Rows have their own x-axis, since metrics differ in scale. Universal
    statements (direction ``all``) show the fraction of instances on which they held."""
    rows = []
    order = {"claim": 0, "finding": 1, "check": 2}
    for v in sorted(verdicts, key=lambda v: order.get(v.kind, 3)):
        for p in v.parts:
            label = v.claim + (f" [{p.name}]" if p.name else "")
            if v.kind != "claim":
                label += f" ({v.kind})"
            rows.append((label, p, v))
    if not rows:
        return None
    fig, axes = new_figure(len(rows), 1, figsize=(7.5, 0.55 * len(rows) + 0.9), squeeze=False)
    for ax, (label, p, v) in zip(axes[:, 0], rows, strict=True):
        colour = VERDICT_COLOURS.get(p.verdict, "#555555")
        if v.direction == "all":
            ax.barh([0], [p.estimate], color=colour, height=0.5)
            ax.axvline(1.0, color="k", ls="--", lw=0.8)
            ax.set_xlim(0, 1.05)
        else:
            ax.errorbar([p.estimate], [0], xerr=[[p.estimate - p.low], [p.high - p.estimate]],
                        fmt="o", color=colour, capsize=4, ms=5)
            if v.margin:
                ax.axvspan(v.threshold - v.margin, v.threshold + v.margin, color="#bbbbbb", alpha=0.4)
                lo_x, hi_x = v.threshold - 1.5 * v.margin, v.threshold + 1.5 * v.margin
            else:
                ax.axvline(v.threshold, color="k", ls="--", lw=0.8)
                lo_x = hi_x = v.threshold
            lo_x, hi_x = min(lo_x, p.low), max(hi_x, p.high)
            pad = 0.1 * (hi_x - lo_x) or 0.1 * max(1.0, abs(hi_x))
            ax.set_xlim(lo_x - pad, hi_x + pad)
        ax.set_yticks([])
        ax.set_ylabel(label, rotation=0, ha="right", va="center", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(p.verdict, fontsize=7, loc="right", color=colour, pad=1)
    if title:
        axes[0, 0].set_title(title, fontsize=10, loc="left")
    return save_figure(fig, path)
