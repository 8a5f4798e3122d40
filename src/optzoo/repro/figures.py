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
    statements (direction ``all``) show the fraction of instances on which they held. A claim's
    control is drawn under it as an open square (hatched bar for a universal statement)."""
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
    fig, axes = new_figure(len(rows), 1, figsize=(7.5, 0.62 * len(rows) + 0.9), squeeze=False)
    for ax, (label, p, v) in zip(axes[:, 0], rows, strict=True):
        colour = VERDICT_COLOURS.get(p.verdict, "#555555")
        ctl = _control_part(v, p.name)
        head = p.verdict + (f"; control: {ctl.verdict}" if ctl is not None else "")
        if v.direction == "all":
            ax.barh([0], [p.estimate], color=colour, height=0.5)
            if ctl is not None:
                ax.barh([-0.55], [ctl.estimate], color="white", edgecolor="#555555", height=0.35, hatch="//")
            ax.axvline(1.0, color="k", ls="--", lw=0.8)
            ax.set_xlim(0, 1.05)
        else:
            shown = [q for q in (p, ctl) if q is not None and _finite(q)]
            for q, y, style in ((p, 0.0, dict(fmt="o", color=colour, ms=5)),
                                (ctl, -0.55, dict(fmt="s", color="#555555", mfc="white", ms=4))):
                if q is not None and _finite(q):
                    ax.errorbar([q.estimate], [y], xerr=[[q.estimate - q.low], [q.high - q.estimate]],
                                capsize=3, **style)
            if not _finite(p):
                ax.text(0.5, 0.5, "non-finite (diverged): not judged", transform=ax.transAxes,
                        ha="center", va="center", fontsize=7, color=colour)
            if v.margin:
                ax.axvspan(v.threshold - v.margin, v.threshold + v.margin, color="#bbbbbb", alpha=0.4)
                lo_x, hi_x = v.threshold - 1.5 * v.margin, v.threshold + 1.5 * v.margin
            else:
                ax.axvline(v.threshold, color="k", ls="--", lw=0.8)
                lo_x = hi_x = v.threshold
            lo_x = min([lo_x] + [q.low for q in shown])
            hi_x = max([hi_x] + [q.high for q in shown])
            pad = 0.1 * (hi_x - lo_x) or 0.1 * max(1.0, abs(hi_x))
            ax.set_xlim(lo_x - pad, hi_x + pad)
        ax.set_ylim(-0.9, 0.5)
        ax.set_yticks([])
        ax.set_ylabel(label, rotation=0, ha="right", va="center", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(head, fontsize=7, loc="right", color=colour, pad=1)
    if title:  # the figure's own title, above the first row's verdict label (not on its axis)
        fig.suptitle(title + (" (open squares: each claim's control)" if any(
            getattr(v, "control", None) is not None for v in verdicts) else ""), fontsize=9, x=0.01, ha="left")
    return save_figure(fig, path)


def _finite(p) -> bool:
    import math

    return all(math.isfinite(x) for x in (p.estimate, p.low, p.high))


def _control_part(v, name: str):
    """The part of ``v``'s control with the same name (None without a control)."""
    ctl = getattr(v, "control", None)
    if ctl is None:
        return None
    return next((q for q in ctl.parts if q.name == name), None)
