"""The reproduction report: ``report.md``, a self-contained ``report.html`` (figures embedded
as base64), ``docs/RESULTS.md`` on request, and a rich console table of claims and verdicts."""

from __future__ import annotations

import base64
import html
import shutil
import time
from pathlib import Path
from typing import Any

from optzoo.repro.claim import PaperRun

__all__ = [
    "console_table",
    "format_numbers",
    "update_readme_verdicts",
    "verdict_counts",
    "write_html",
    "write_markdown",
    "write_results_doc",
]

_COLOURS = {"reproduced": "#1a7f37", "not reproduced": "#cf222e", "inconclusive": "#9a6700"}
_RICH = {"reproduced": "green", "not reproduced": "red", "inconclusive": "yellow"}


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x) for x in v[:6]) + (", ..." if len(v) > 6 else "") + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt(x)}" for k, x in list(v.items())[:6]) + "}"
    return str(v)


def format_numbers(numbers: dict[str, Any]) -> str:
    return "; ".join(f"{k}={_fmt(v)}" for k, v in numbers.items())


def _paper_meta(slug: str):
    from optzoo.papers import get_paper

    try:
        return get_paper(slug)
    except KeyError:
        return None


def _claims(slug: str) -> dict[str, Any]:
    """The paper's CLAIMS by id (empty if the module cannot be imported)."""
    import importlib

    from optzoo.papers import get_paper

    try:
        mod = importlib.import_module(get_paper(slug).repro_module)
    except Exception:
        return {}
    return {c.id: c for c in getattr(mod, "CLAIMS", [])}


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _header(runs: list[PaperRun], meta: dict[str, Any]) -> list[str]:
    env = meta.get("environment", {})
    lines = [
        "# optzoo reproduction report",
        "",
        f"- generated: {meta.get('generated', time.strftime('%Y-%m-%d %H:%M:%S'))}",
        f"- scale: `{meta.get('scale')}`; seeds: {meta.get('seeds')}",
        f"- command: `{meta.get('command', '')}`",
        f"- git commit: `{env.get('git_commit')}`; python {env.get('python')}; "
        f"CPU: {env.get('cpu')} ({env.get('cpu_count')} cores); backend {meta.get('backend')}, "
        f"{meta.get('jobs')} jobs, {meta.get('threads_per_unit')} thread(s) per unit",
        *([f"- {meta['note']}"] if meta.get("note") else []),
        "",
        "Verdicts are decided by each paper's `judge()` from statistics over seeds (paired "
        "differences with bootstrap confidence intervals): **reproduced** when the interval "
        "lies on the claimed side, **not reproduced** when it lies on the other side, "
        "**inconclusive** otherwise. A `not reproduced` verdict is a result, not a bug.",
        "",
        "## Summary",
        "",
        "| paper | claim | verdict | key numbers |",
        "| --- | --- | --- | --- |",
    ]
    for run in runs:
        if run.judge_error:
            lines.append(f"| {run.slug} | (judge failed) | error | see below |")
        for v in run.verdicts:
            lines.append(f"| {run.slug} | {v.claim} | **{v.verdict}** | "
                         f"{_md_escape(format_numbers(v.numbers))} |")
        for seed in sorted(run.errors):
            lines.append(f"| {run.slug} | (seed {seed} crashed) | error | see below |")
    return lines


def write_markdown(runs: list[PaperRun], path: Path, meta: dict[str, Any],
                   figure_prefix: dict[str, str] | None = None) -> Path:
    """``report.md``; figure links are relative to ``path`` (``figure_prefix[slug]`` overrides)."""
    lines = _header(runs, meta)
    for run in runs:
        paper = _paper_meta(run.slug)
        claims = _claims(run.slug)
        title = paper.title if paper else run.slug
        lines += ["", f"## {run.slug}: {title}", ""]
        if paper:
            note = f" ({paper.fidelity_note})" if paper.fidelity_note else ""
            lines.append(f"Fidelity: **{paper.fidelity}**{note}. Docs: `docs/papers/{run.slug}.md`.")
        lines.append(
            f"Scale `{run.scale}`, seeds {run.seeds}: {len(run.per_seed)} finished, "
            f"{len(run.errors)} crashed; unit wall time {run.wall_time:.1f} s in all."
        )
        lines += ["", "| claim | statement | verdict | summary |", "| --- | --- | --- | --- |"]
        for v in run.verdicts:
            stmt = claims[v.claim].statement if v.claim in claims else ""
            lines.append(f"| {v.claim} | {_md_escape(stmt)} | **{v.verdict}** | {_md_escape(v.summary)} |")
        if run.judge_error:
            lines += ["", "judge() failed:", "", "```", run.judge_error.rstrip(), "```"]
        prefix = (figure_prefix or {}).get(run.slug)
        for fig in run.figures:
            rel = f"{prefix}/{Path(fig).name}" if prefix else _relative(fig, path.parent)
            lines += ["", f"![{Path(fig).stem}]({rel})"]
        for seed, tb in sorted(run.errors.items()):
            lines += ["", f"### seed {seed} crashed", "", "```", tb.rstrip(), "```"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _relative(fig: str, base: Path) -> str:
    try:
        return str(Path(fig).resolve().relative_to(base.resolve()))
    except ValueError:
        return str(fig)


def write_html(runs: list[PaperRun], path: Path, meta: dict[str, Any]) -> Path:
    """A single HTML file with every figure embedded, readable offline in any browser."""
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>optzoo reproduction report</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;"
        "vertical-align:top;font-size:14px}th{background:#f4f4f4}img{max-width:100%;margin:1em 0}"
        "pre{background:#f6f8fa;padding:1em;overflow:auto;font-size:12px}.v{font-weight:bold}</style>",
        "</head><body><h1>optzoo reproduction report</h1>",
        f"<p>Scale <code>{e(str(meta.get('scale')))}</code>, seeds {e(str(meta.get('seeds')))}, "
        f"generated {e(str(meta.get('generated', '')))}, git commit "
        f"<code>{e(str(meta.get('environment', {}).get('git_commit')))}</code>.</p>",
        "<p>Verdicts come from statistics over seeds; <em>not reproduced</em> is a result.</p>",
        "<table><tr><th>paper</th><th>claim</th><th>verdict</th><th>summary</th></tr>",
    ]
    for run in runs:
        for v in run.verdicts:
            parts.append(
                f"<tr><td>{e(run.slug)}</td><td>{e(v.claim)}</td><td class='v' style='color:"
                f"{_COLOURS[v.verdict]}'>{e(v.verdict)}</td><td>{e(v.summary)}</td></tr>"
            )
        for seed in sorted(run.errors):
            parts.append(f"<tr><td>{e(run.slug)}</td><td>seed {seed}</td>"
                         "<td class='v' style='color:#cf222e'>crashed</td><td>see below</td></tr>")
    parts.append("</table>")
    for run in runs:
        paper = _paper_meta(run.slug)
        parts.append(f"<h2>{e(run.slug)}: {e(paper.title if paper else '')}</h2>")
        if paper:
            parts.append(f"<p>Fidelity: <b>{e(paper.fidelity)}</b> {e(paper.fidelity_note)}</p>")
        parts.append("<table><tr><th>claim</th><th>verdict</th><th>key numbers</th></tr>")
        for v in run.verdicts:
            parts.append(f"<tr><td>{e(v.claim)}</td><td class='v' style='color:{_COLOURS[v.verdict]}'>"
                         f"{e(v.verdict)}</td><td>{e(format_numbers(v.numbers))}</td></tr>")
        parts.append("</table>")
        if run.judge_error:
            parts.append(f"<p>judge() failed:</p><pre>{e(run.judge_error)}</pre>")
        for fig in run.figures:
            data = base64.b64encode(Path(fig).read_bytes()).decode()
            parts.append(f"<img alt='{e(Path(fig).stem)}' src='data:image/png;base64,{data}'>")
        for seed, tb in sorted(run.errors.items()):
            parts.append(f"<h3>seed {seed} crashed</h3><pre>{e(tb)}</pre>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts))
    return path


def write_results_doc(runs: list[PaperRun], docs_dir: Path, meta: dict[str, Any]) -> Path:
    """``docs/RESULTS.md`` with the figures copied to ``docs/results/<slug>/``."""
    docs_dir = Path(docs_dir)
    prefixes = {}
    for run in runs:
        dest = docs_dir / "results" / run.slug
        if dest.exists():
            shutil.rmtree(dest)
        if run.figures:
            dest.mkdir(parents=True, exist_ok=True)
            for fig in run.figures:
                shutil.copy2(fig, dest / Path(fig).name)
        prefixes[run.slug] = f"results/{run.slug}"
    return write_markdown(runs, docs_dir / "RESULTS.md", meta, figure_prefix=prefixes)


def verdict_counts(run: PaperRun) -> str:
    """``"4/6 reproduced, 1 not reproduced, 1 inconclusive"`` (or why there are no verdicts)."""
    if run.judge_error:
        return "judge failed"
    if not run.verdicts:
        return "no finished seeds"
    n = len(run.verdicts)
    counts = {v: sum(x.verdict == v for x in run.verdicts) for v in _COLOURS}
    parts = [f"{counts['reproduced']}/{n} reproduced"]
    parts += [f"{counts[v]} {v}" for v in ("not reproduced", "inconclusive") if counts[v]]
    if run.errors:
        parts.append(f"{len(run.errors)} seed(s) crashed")
    return ", ".join(parts)


def update_readme_verdicts(readme: Path, runs: list[PaperRun], scale: str) -> bool:
    """Rewrite the last cell of each run's row in the README's table of papers
    (rows look like ``| 03 | `dks` | ... | last verdicts |``). Returns True if it changed."""
    readme = Path(readme)
    if not readme.exists():
        return False
    by_slug = {r.slug: r for r in runs}
    lines = readme.read_text().splitlines()
    changed = False
    for i, line in enumerate(lines):
        cells = line.split(" | ")
        if len(cells) < 3 or not line.startswith("| ") or not line.endswith(" |"):
            continue
        slug = cells[1].strip("`")
        if slug in by_slug and cells[1].startswith("`"):
            new = " | ".join(cells[:-1]) + f" | {verdict_counts(by_slug[slug])} ({scale}) |"
            if new != line:
                lines[i], changed = new, True
    if changed:
        readme.write_text("\n".join(lines) + "\n")
    return changed


def console_table(runs: list[PaperRun], console) -> None:
    from rich.table import Table

    table = Table(title="optzoo: claims and verdicts", show_lines=False)
    for col in ("paper", "claim", "verdict", "key numbers"):
        table.add_column(col, overflow="fold")
    for run in runs:
        if run.judge_error:
            table.add_row(run.slug, "(judge failed)", "[red]error[/red]", "")
        for v in run.verdicts:
            table.add_row(run.slug, v.claim, f"[{_RICH[v.verdict]}]{v.verdict}[/]",
                          format_numbers(v.numbers))
        for seed in sorted(run.errors):
            table.add_row(run.slug, f"seed {seed}", "[red]crashed[/red]", "traceback in report.md")
    console.print(table)
