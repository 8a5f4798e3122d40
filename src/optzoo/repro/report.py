"""The reproduction report: ``report.md``, a self-contained ``report.html`` (figures embedded
as base64) and a rich console table. This module only renders; writing the docs from the
committed results is :mod:`optzoo.repro.docs`.

The report opens with one summary line per paper. Claims (the papers' statements) are
counted; findings (our own results) are listed as ours; checks (properties of our own
implementation) sit in their own table and never count toward "n of m reproduced".
"""

from __future__ import annotations

import base64
import html
import re
import time
from pathlib import Path
from typing import Any

from optzoo.repro.claim import PaperRun, Verdict
from optzoo.repro.figures import VERDICT_COLOURS
from optzoo.repro.judging import headline_status

__all__ = [
    "RESULTS_BEGIN",
    "RESULTS_END",
    "console_table",
    "format_numbers",
    "paper_lines",
    "paper_summary",
    "verdict_counts",
    "write_html",
    "write_markdown",
]

RESULTS_BEGIN = "<!-- optzoo:results:begin -->"
RESULTS_END = "<!-- optzoo:results:end -->"
_RICH = {"reproduced": "green", "passed": "green", "not reproduced": "red", "failed": "red",
         "inconclusive": "yellow"}

_RULE = (
    "Each claim is judged by `optzoo.repro.judging` (the rule is in the README, \"Reading a "
    "report\"): the unit of replication is the seed; a Student-t interval of the mean per-seed "
    "effect at the printed level is compared with the claim's threshold (equivalence by two "
    "one-sided tests, non-inferiority by the 95% interval against threshold - margin); a claim "
    "with several parts is reproduced only when every part is, and not reproduced when any part "
    "lies wholly on the wrong side (Bonferroni over parts). Every claim is judged again on its "
    "**control** (the same experiment with the mechanism the paper credits removed): a claim "
    "also reproduced under its control cannot fail and is not counted, nor is a claim without a "
    "control. No multiplicity correction runs across a paper's claims. **Claims** are the "
    "papers' statements; **findings** are our own results, labelled as ours; **checks** test our "
    "own implementation and never count as support for a paper. `not reproduced` is a result."
)


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


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _counts(verdicts: list[Verdict], words: tuple[str, ...]) -> str:
    n = len(verdicts)
    counts = {w: sum(v.verdict == w for v in verdicts) for w in words}
    out = [f"{counts[words[0]]}/{n} {words[0]}"]
    out += [f"{counts[w]} {w}" for w in words[1:] if counts[w]]
    return ", ".join(out)


def verdict_counts(run: PaperRun) -> str:
    """``"2/4 claims reproduced, 1 cannot fail under its control, 1 inconclusive; headline:
    undecided"`` (or why there are none). Only claims measured at this scale are counted, and
    a reproduced claim counts only when its control did not also reproduce it; findings and
    checks are not counted here."""
    if run.judge_error:
        return "judge failed"
    if not run.verdicts:
        return "no finished seeds"
    claims = [v for v in run.of_kind("claim") if v.measured]
    unmeasured = [v for v in run.of_kind("claim") if not v.measured]
    if claims:
        n = {s: sum(v.status == s for v in claims) for s in _STATUSES}
        bits = [f"{n['reproduced']}/{len(claims)} claims reproduced"]
        bits += [f"{n[s]} {_STATUS_WORDS[s]}" for s in _STATUSES[1:] if n[s]]
        text = ", ".join(bits)
    else:
        text = "no claims judged"
    if unmeasured:
        text += f"; {len(unmeasured)} measured only at {_only_at(unmeasured)}"
    status = headline_status(run.verdicts, run.headline)
    if status is not None:
        text += f"; headline: {status}"
    if run.errors:
        text += f", {len(run.errors)} seed(s) crashed"
    return text


_STATUSES = ("reproduced", "cannot fail", "no control", "not reproduced", "inconclusive")
_STATUS_WORDS = {"cannot fail": "reproduced but cannot fail under its control (not counted)",
                 "no control": "reproduced without a control (not counted)",
                 "not reproduced": "not reproduced", "inconclusive": "inconclusive"}


def _only_at(verdicts: list[Verdict]) -> str:
    """The scale named by "measured only at ..." when every unmeasured claim names the same."""
    found = {m.group(1) if m else None for m in (re.search(r"measured only at ([\w ]+)", v.summary)
                                                 for v in verdicts)}
    return found.pop() if len(found) == 1 and None not in found else "another scale"


def paper_summary(run: PaperRun) -> str:
    """One line per paper: claims, findings, checks, seeds and the commit of its units."""
    parts = [verdict_counts(run)]
    for kind, label, words in (("finding", "our findings", ("reproduced", "not reproduced", "inconclusive")),
                               ("check", "checks", ("passed", "failed", "inconclusive"))):
        vs = run.of_kind(kind)
        measured = [v for v in vs if v.measured]
        if vs:
            text = _counts(measured, words) if measured else "none measured"
            if len(measured) < len(vs):
                text += f" ({len(vs) - len(measured)} measured only at {_only_at([v for v in vs if not v.measured])})"
            parts.append(f"{label}: {text}")
    prov = ", ".join(run.provenance) or "unknown"
    return f"{'; '.join(parts)} ({run.scale}, {seeds_text(run)}, units at {prov})"


def partial_note(run: PaperRun) -> str | None:
    """"k of N seeds" when a run has fewer finished seeds than its scale asks for (a full run
    recorded in sittings): its verdicts are interim."""
    if run.planned_seeds and len(run.seeds) < run.planned_seeds:
        return f"interim: {len(run.seeds)} of the scale's {run.planned_seeds} seeds"
    return None


def seeds_text(run: PaperRun) -> str:
    """The run's seeds as ranges ("seeds 0-7", "seeds 0-1, 5"), and whether the run is partial."""
    if not run.seeds:
        return "no seeds"
    spans: list[list[int]] = []
    for s in sorted(run.seeds):
        if spans and s == spans[-1][1] + 1:
            spans[-1][1] = s
        else:
            spans.append([s, s])
    text = ("seeds " if len(run.seeds) > 1 else "seed ") + ", ".join(
        f"{a}-{b}" if b > a else f"{a}" for a, b in spans)
    note = partial_note(run)
    return f"{text}; {note}" if note else text


def _control(v: Verdict, removes: bool = True) -> str:
    """The control's verdict beside the claim's: how it came out and (``removes``) what it
    removes (the paper's section says that; the cross-paper table stays short)."""
    if not v.measured or (v.kind != "claim" and v.control is None):
        return ""
    if v.control is None:
        return "no control"
    tail = " (so the claim cannot fail: not counted)" if v.status == "cannot fail" else ""
    what = f"; removes {v.control_removes}" if removes else ""
    return f"{v.control.verdict}{tail}: {_interval(v.control)}{what}"


def _interval(v: Verdict) -> str:
    """The deciding numbers of a verdict, in brief."""
    if not v.parts:
        return format_numbers(v.numbers)
    bits = []
    for p in v.parts[:6]:
        name = f"{p.name}: " if p.name else ""
        if v.direction == "all":
            bits.append(f"{name}{p.held}/{p.n} held")
        elif p.nonfinite:
            bits.append(f"{name}non-finite on {p.nonfinite} of {p.n} seeds (not judged)")
        elif p.level is None:
            bits.append(f"{name}{p.estimate:.3g} (exact)")
        else:
            bits.append(f"{name}{p.estimate:.3g} [{p.low:.3g}, {p.high:.3g}]")
    if len(v.parts) > 6:
        bits.append(f"... {len(v.parts) - 6} more")
    ref = ""
    if v.direction == "equivalent":
        ref = f" vs {v.threshold:g} +- {v.margin:g}"
    elif v.direction != "all" and v.threshold is not None:
        ref = f" vs {v.threshold:g}"
    return "; ".join(bits) + ref


def _undecided(v: Verdict) -> str:
    if v.verdict != "inconclusive":
        if v.power is not None:
            return f"power at its own estimate {v.power:.2f}"
        return ""
    if not v.parts:
        return "not measured at this scale"
    if v.tie:
        return "an exact tie: no number of seeds decides it"
    if any(p.nonfinite for p in v.parts):
        return "a non-finite part (diverged run): more seeds would not decide it"
    if v.half_width is None:
        return ""
    need = (f"about {v.seeds_needed} seeds would decide it" if v.seeds_needed
            else "more seeds would not decide it at this estimate")
    return f"half-width {v.half_width:.3g}; {need}"


def _shown(v: Verdict) -> str:
    """The verdict as shown: the claim's own verdict, and how it counts when that differs."""
    if not v.measured:
        return "not measured at this scale"
    if v.status in ("cannot fail", "no control"):
        return f"{v.verdict}, {_STATUS_WORDS[v.status].replace('reproduced ', '', 1)}"
    return v.verdict


def _table(runs: list[PaperRun], kind: str, with_paper: bool = True) -> list[str]:
    rows = []
    for run in runs:
        for v in run.of_kind(kind):
            cells = ([run.slug] if with_paper else []) + [
                v.claim, f"**{_shown(v)}**", _md(_interval(v)), _md(_undecided(v))]
            if kind == "claim":
                cells.append(_md(_control(v, removes=False)))
            rows.append("| " + " | ".join(cells) + " |")
    if not rows:
        return []
    head = (["paper"] if with_paper else []) + [kind, "verdict", "estimate [interval] vs threshold",
                                                "if inconclusive (else power)"]
    if kind == "claim":
        head.append("control (the credited mechanism removed)")
    return ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head), *rows]


def _header(runs: list[PaperRun], meta: dict[str, Any]) -> list[str]:
    env = meta.get("environment", {})
    lines = [
        "# optzoo reproduction report",
        "",
        f"- generated: {meta.get('generated', time.strftime('%Y-%m-%d %H:%M:%S'))}",
        f"- scale: `{meta.get('scale')}`; seeds: {meta.get('seeds')}",
        f"- command: `{meta.get('command', '')}`",
        f"- environment: python {env.get('python')}; CPU: {env.get('cpu')} "
        f"({env.get('cpu_count')} cores); " + (
            f"backend {meta['backend']}, {meta.get('jobs')} jobs (each paper's section gives the "
            "threads its units had)" if meta.get("backend") else
            "no unit was run by this command: it judged the finished units in the results folder")
        + "; the commit of each paper's units is in its summary line",
        *([f"- {meta['note']}"] if meta.get("note") else []),
        "",
        _RULE,
        "",
        "## Summary",
        "",
    ]
    for run in runs:
        lines.append(f"- **{run.slug}**: {paper_summary(run)}")
    if meta.get("other"):
        lines += ["", "Other scales and seed sets (their full tables are in each paper's page):", "",
                  *meta["other"]]
    lines.append("")
    lines += ["### Claims of the papers", "", *_table(runs, "claim")]
    findings = _table(runs, "finding")
    if findings:
        lines += ["", "### Our findings (not the papers' claims)", "", *findings]
    checks = _table(runs, "check")
    if checks:
        lines += ["", "### Checks of our implementation (not counted)", "", *checks]
    problems = [f"- {r.slug}: judging failed (see its section)" for r in runs if r.judge_error]
    problems += [f"- {r.slug}: seed {s} crashed (see its section)" for r in runs for s in sorted(r.errors)]
    if problems:
        lines += ["", "### Problems", "", *problems]
    return lines


def paper_lines(run: PaperRun, fig_link, heading: str = "##") -> list[str]:
    paper = _paper_meta(run.slug)
    claims = _claims(run.slug)
    lines = []
    if paper:
        note = f" ({paper.fidelity_note})" if paper.fidelity_note else ""
        lines.append(f"Fidelity: **{paper.fidelity}**{note}. Docs: `docs/papers/{run.slug}.md`.")
    lines.append(
        f"Scale `{run.scale}`, seeds {run.seeds}: {len(run.per_seed)} finished, "
        f"{len(run.errors)} crashed; unit wall time {run.wall_time:.1f} s in all"
        + (f" at {' / '.join(run.threads)} thread(s) per unit" if run.threads else "")
        + f"; units at commit {', '.join(run.provenance) or 'unknown'}."
    )
    lines += ["", f"Summary: {paper_summary(run)}."]
    for fig in run.figures[:1]:
        lines += ["", f"![{Path(fig).stem}]({fig_link(fig)})"]
    for kind, title in (("claim", "Claims"), ("finding", "Our findings"), ("check", "Checks (not counted)")):
        vs = run.of_kind(kind)
        if not vs:
            continue
        ctl = kind == "claim" or any(v.control is not None for v in vs)   # findings may have one
        lines += ["", f"{heading}# {title}", "",
                  "| id | statement | verdict | measured | " + ("control | " if ctl else "") + "rule |",
                  "| --- | --- | --- | --- | " + ("--- | " if ctl else "") + "--- |"]
        for v in vs:
            stmt = claims[v.claim].statement if v.claim in claims else ""
            src = claims[v.claim].source if v.claim in claims else ""
            extra = f" ({_undecided(v)})" if _undecided(v) else ""
            lines.append(f"| {v.claim} | {_md(stmt)}" + (f" _Source: {_md(src)}._" if src else "")
                         + f" | **{_shown(v)}** | {_md(v.summary + extra)} | "
                         + (f"{_md(_control(v))} | " if ctl else "") + f"{_md(v.rule)} |")
    rows = _tuning(run)
    if rows:
        from optzoo.repro.tuning import render_markdown

        lines += ["", f"{heading}# Tuning", "", _md(_tuning_intro(rows)), "", render_markdown(rows).rstrip()]
    if run.judge_error:
        lines += ["", "judging failed:", "", "```", run.judge_error.rstrip(), "```"]
    for fig in run.figures[1:]:
        lines += ["", f"![{Path(fig).stem}]({fig_link(fig)})"]
    for seed, tb in sorted(run.errors.items()):
        lines += ["", f"{heading}# seed {seed} crashed", "", "```", tb.rstrip(), "```"]
    return lines


def _tuning(run: PaperRun) -> list[dict[str, Any]]:
    """The rows of the paper's tuning table (every arm's grid, tuning seeds, budget and choice),
    from the ``part="tuning"`` records of its units; empty for units that carry none."""
    from optzoo.repro.evidence import as_records
    from optzoo.repro.tuning import PART, tuning_table

    per_seed = [[r for r in as_records(seed) if r.part == PART] for seed in run.per_seed]
    return tuning_table(per_seed) if any(per_seed) else []


def _tuning_intro(rows: list[dict[str, Any]]) -> str:
    from optzoo.repro.tuning import flagged

    n = flagged(rows)
    return ("Every tuned knob of every arm, chosen by `optzoo.repro.tuning.select` on tuning seeds "
            "or streams (never the evaluation stream); equal grids and budgets make equal tuning. "
            + (f"**{n} of {len(rows)} rows flagged** (a choice at a grid end, a budget not shared "
               "by every arm, or every point diverged)." if n else "No row is flagged."))


def write_markdown(runs: list[PaperRun], path: Path, meta: dict[str, Any],
                   figure_prefix: dict[str, str] | None = None) -> Path:
    """``report.md``; figure links are relative to ``path`` (``figure_prefix[slug]`` overrides)."""
    path = Path(path)
    lines = _header(runs, meta)
    for run in runs:
        paper = _paper_meta(run.slug)
        prefix = (figure_prefix or {}).get(run.slug)

        def link(fig: str, prefix=prefix) -> str:
            return f"{prefix}/{Path(fig).name}" if prefix else _relative(fig, path.parent)

        lines += ["", f"## {run.slug}: {paper.title if paper else run.slug}", ""]
        lines += paper_lines(run, link)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _relative(fig: str, base: Path) -> str:
    try:
        return str(Path(fig).resolve().relative_to(base.resolve()))
    except ValueError:
        return str(fig)


def _colour(v: Verdict) -> str:
    return "#8a6d00" if v.status in ("cannot fail", "no control") else VERDICT_COLOURS[v.verdict]


def _html_table(runs: list[PaperRun], kind: str) -> str:
    e = html.escape
    rows = []
    ctl = kind == "claim"
    for run in runs:
        for v in run.of_kind(kind):
            rows.append(f"<tr><td class='id'>{e(run.slug)}</td><td class='id'>{e(v.claim)}</td><td class='v' style='color:"
                        f"{_colour(v)}'>{e(_shown(v))}</td><td>{e(_interval(v))}</td>"
                        f"<td>{e(_undecided(v))}</td>" + (f"<td>{e(_control(v, removes=False))}</td>" if ctl else "")
                        + "</tr>")
    if not rows:
        return ""
    return ("<table><tr><th>paper</th><th>" + e(kind) + "</th><th>verdict</th>"
            "<th>estimate [interval] vs threshold</th><th>if inconclusive (else power)</th>"
            + ("<th>control (the credited mechanism removed)</th>" if ctl else "") + "</tr>"
            + "".join(rows) + "</table>")


_CELL = {"reproduced": "#2da44e", "passed": "#2da44e", "not reproduced": "#cf222e", "failed": "#cf222e",
         "inconclusive": "#d4a72c", "cannot fail": "#8c959f", "no control": "#8c959f",
         "not measured": "#ffffff"}
_MARK = {"reproduced": "R", "not reproduced": "N", "inconclusive": "?"}


def _overview(runs: list[PaperRun]) -> str:
    """The report's first picture: one row per paper, one cell per claim coloured by how it
    counts (grey: reproduced but not counted, no control or cannot fail; white: not measured
    here), its control's verdict as a letter in the cell (R, N, ?), the headline's claims
    outlined; findings and checks apart, smaller. Each cell links to the paper's forest plot."""
    e = html.escape
    rows = []
    for run in runs:
        status = headline_status(run.verdicts, run.headline)
        cells = []
        for v in run.of_kind("claim"):
            ctl = _MARK.get(v.control.verdict, "") if v.control is not None else ""
            tip = f"{v.claim}: {_shown(v)}" + (f"; control {v.control.verdict}" if v.control else "")
            cls = "c h" if v.claim in run.headline else "c"
            cells.append(f"<a class='{cls}' href='#{e(run.slug)}-forest' title='{e(tip)}' "
                         f"style='background:{_CELL[v.status]}'>{e(ctl)}</a>")
        small = {kind: "".join(
            f"<a class='c s' href='#{e(run.slug)}-forest' title='{e(v.claim)} ({v.kind}): {e(_shown(v))}' "
            f"style='background:{_CELL[v.status]}'></a>" for v in run.of_kind(kind)) for kind in ("finding", "check")}
        if run.judge_error:
            cells = ["<span class='err'>judge failed</span>"]
        if not run.verdicts and not run.judge_error:
            cells = ["<span class='rule'>no finished units</span>"]
        status = status or ('not named' if run.verdicts else '')
        note = partial_note(run)
        if status and note:
            status += f" ({note})"
        rows.append(f"<tr><td><a href='#{e(run.slug)}'>{e(run.slug)}</a></td><td>{''.join(cells)}</td>"
                    f"<td>{e(status)}</td>"
                    f"<td>{small['finding']}</td><td>{small['check']}</td></tr>")
    legend = ("<span class='c' style='background:#2da44e'></span> reproduced and survives its control "
              "<span class='c' style='background:#cf222e'></span> not reproduced "
              "<span class='c' style='background:#d4a72c'></span> inconclusive "
              "<span class='c' style='background:#8c959f'></span> reproduced but not counted (no "
              "control, or its control reproduces it too) "
              "<span class='c' style='background:#fff'></span> not measured at this scale; "
              "letter: the control's verdict (R reproduced, N not reproduced, ? inconclusive); "
              "<span class='c h' style='background:#fff'></span> tests the headline")
    return ("<h2>Overview</h2><table class='ov'><tr><th>paper</th><th>claims of the paper</th>"
            "<th>headline</th><th>our findings</th><th>checks (not counted)</th></tr>" + "".join(rows)
            + f"</table><p class='rule'>{legend}</p>")


def write_html(runs: list[PaperRun], path: Path, meta: dict[str, Any]) -> Path:
    """A single HTML file with every figure embedded, readable offline in any browser."""
    e = html.escape
    env = meta.get("environment", {})
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>optzoo reproduction report</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;"
        "color:#1f2328}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
        "padding:4px 8px;vertical-align:top;font-size:13px;overflow-wrap:anywhere}td.id,td.v{overflow-wrap:normal}th{background:#f4f4f4}img{max-width:100%;"
        "margin:1em 0}pre{background:#f6f8fa;padding:1em;overflow:auto;font-size:12px}"
        ".v{font-weight:bold}ul.s li{margin:.2em 0}.rule{color:#57606a;font-size:13px}"
        ".c{display:inline-block;width:22px;height:22px;margin:1px;border:1px solid #999;color:#fff;"
        "font:bold 12px/22px system-ui;text-align:center;text-decoration:none;vertical-align:middle}"
        ".c.h{outline:2px solid #0969da;outline-offset:1px}.c.s{width:11px;height:11px}"
        "table.ov td{vertical-align:middle}</style>",
        "</head><body><h1>optzoo reproduction report</h1>",
        f"<p>Scale <code>{e(str(meta.get('scale')))}</code>, seeds {e(str(meta.get('seeds')))}, "
        f"generated {e(str(meta.get('generated', '')))}; python {e(str(env.get('python')))}, "
        f"{e(str(env.get('cpu')))}" + (f"; jobs: {e(str(meta.get('jobs')))}" if meta.get("backend") else "")
        + ".</p>",
        _overview(runs),
        f"<p class='rule'>{e(_RULE.replace('**', '').replace('`', ''))}</p>",
        "<h2>Summary</h2><ul class='s'>",
    ]
    for run in runs:
        parts.append(f"<li><a href='#{e(run.slug)}'><b>{e(run.slug)}</b></a>: {e(paper_summary(run))}</li>")
    parts.append("</ul><h3>Claims of the papers</h3>" + _html_table(runs, "claim"))
    for kind, title in (("finding", "Our findings (not the papers' claims)"),
                        ("check", "Checks of our implementation (not counted)")):
        t = _html_table(runs, kind)
        if t:
            parts.append(f"<h3>{e(title)}</h3>{t}")
    for run in runs:
        paper = _paper_meta(run.slug)
        claims = _claims(run.slug)
        parts.append(f"<h2 id='{e(run.slug)}'>{e(run.slug)}: {e(paper.title if paper else '')}</h2>")
        if paper:
            parts.append(f"<p>Fidelity: <b>{e(paper.fidelity)}</b> {e(paper.fidelity_note)}</p>")
        parts.append(f"<p>{e(paper_summary(run))}</p>")
        figs = [Path(f) for f in run.figures]
        for fig in figs[:1]:
            parts.append(_img(fig, f"{run.slug}-forest"))
        for kind, title in (("claim", "Claims"), ("finding", "Our findings"), ("check", "Checks (not counted)")):
            vs = run.of_kind(kind)
            if not vs:
                continue
            ctl = kind == "claim" or any(v.control is not None for v in vs)
            parts.append(f"<h3>{e(title)}</h3><table><tr><th>id</th><th>statement</th><th>verdict</th>"
                         "<th>measured</th>" + ("<th>control</th>" if ctl else "") + "<th>rule</th></tr>")
            for v in vs:
                stmt = claims[v.claim].statement if v.claim in claims else ""
                src = claims[v.claim].source if v.claim in claims else ""
                extra = f" ({_undecided(v)})" if _undecided(v) else ""
                parts.append(f"<tr><td class='id'>{e(v.claim)}</td><td>{e(stmt)}"
                             + (f"<br><i>Source: {e(src)}</i>" if src else "")
                             + f"</td><td class='v' style='color:{_colour(v)}'>{e(_shown(v))}</td>"
                             f"<td>{e(v.summary + extra)}</td>"
                             + (f"<td>{e(_control(v))}</td>" if ctl else "")
                             + f"<td class='rule'>{e(v.rule)}</td></tr>")
            parts.append("</table>")
        rows = _tuning(run)
        if rows:
            from optzoo.repro.tuning import TABLE_HEAD, row_cells

            parts.append(f"<h3>Tuning</h3><p class='rule'>{e(_tuning_intro(rows).replace('**', '').replace('`', ''))}</p>"
                         "<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in TABLE_HEAD) + "</tr>"
                         + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row_cells(r)) + "</tr>"
                                   for r in rows) + "</table>")
        if run.judge_error:
            parts.append(f"<p>judging failed:</p><pre>{e(run.judge_error)}</pre>")
        for fig in figs[1:]:
            parts.append(_img(fig))
        for seed, tb in sorted(run.errors.items()):
            parts.append(f"<h3>seed {seed} crashed</h3><pre>{e(tb)}</pre>")
    parts.append("</body></html>")
    path = Path(path)
    path.write_text("\n".join(parts))
    return path


def _img(fig: Path, anchor: str = "") -> str:
    ident = f" id='{html.escape(anchor)}'" if anchor else ""
    if not fig.exists():
        return f"<p{ident}>(figure {html.escape(fig.name)} missing)</p>"
    data = base64.b64encode(fig.read_bytes()).decode()
    return f"<img{ident} alt='{html.escape(fig.stem)}' src='data:image/png;base64,{data}'>"


def console_table(runs: list[PaperRun], console) -> None:
    from rich.table import Table

    table = Table(title="optzoo: claims, findings and checks", show_lines=False)
    for col in ("paper", "kind", "claim", "verdict", "control", "estimate [interval]"):
        table.add_column(col, overflow="fold")
    order = {"claim": 0, "finding": 1, "check": 2}
    for run in runs:
        if run.judge_error:
            table.add_row(run.slug, "", "(judge failed)", "[red]error[/red]", "", "")
        for v in sorted(run.verdicts, key=lambda v: order[v.kind]):
            ctl = "" if v.kind != "claim" or not v.measured else (
                "none" if v.control is None else f"[{_RICH[v.control.verdict]}]{v.control.verdict}[/]")
            table.add_row(run.slug, v.kind, v.claim, f"[{_RICH[v.verdict]}]{_shown(v)}[/]", ctl, _interval(v))
        for seed in sorted(run.errors):
            table.add_row(run.slug, "", f"seed {seed}", "[red]crashed[/red]", "", "traceback in report.md")
    console.print(table)
    for run in runs:
        console.print(f"[bold]{run.slug}[/bold]: {paper_summary(run)}")
