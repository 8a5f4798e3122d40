"""The results in the docs, and the one place that writes them.

Every verdict shown in ``docs/`` is judged from units committed under
``docs/results/<block>/<slug>/``: ``seed-<s>.json.gz`` is the unit exactly as the run wrote it
(records, config, provenance, environment), compressed; ``verdicts.json`` and ``figures/``
beside it are what judging those units gives. A block is one scale and seed set:

* ``quick``: the default seeds; it writes docs/RESULTS.md, the README's last-verdicts column
  and the main Results block of each ``docs/papers/<slug>.md``;
* ``quick-seeds-1000`` (any ``<scale>-seeds-<first seed>``): a second seed set, in its own
  block of each page;
* ``full``: the full scale, in its own block.

A block folder is an ordinary results folder, so ``optzoo reproduce SLUG --scale full --resume
--out docs/results/full`` continues a long run from the committed units, and
``optzoo report --from docs/results --write-docs`` (:func:`write_docs`) rewrites every docs
result from these files alone, without running anything. :func:`archive` is how a run's
units get there (``--write-docs`` on ``reproduce`` or ``report --out``).
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from optzoo.repro.claim import PaperRun
from optzoo.repro.judging import headline_status
from optzoo.repro.report import (
    RESULTS_BEGIN,
    RESULTS_END,
    paper_lines,
    paper_summary,
    partial_note,
    verdict_counts,
    write_markdown,
)

__all__ = ["BLOCK", "archive", "block_name", "block_scale", "blocks", "judge_block",
           "results_markers", "update_paper_docs", "update_readme_verdicts", "write_docs"]

BLOCK = re.compile(r"(smoke|quick|full)(?:-seeds-(\d+))?")
COMMAND = "optzoo report --from docs/results --write-docs"


def block_name(scale: str, first_seed: int) -> str:
    """The block of a run: its scale, or ``<scale>-seeds-S`` for seeds starting at ``S`` > 0 (a
    second seed set, which never replaces the default seeds' block)."""
    return scale if first_seed == 0 else f"{scale}-seeds-{first_seed}"


def block_scale(block: str) -> str:
    """The scale of a block (``quick-seeds-1000`` -> ``quick``)."""
    m = BLOCK.fullmatch(block)
    if m is None:
        raise ValueError(f"The 'block' argument of block_scale must look like 'quick', 'full' or "
                         f"'quick-seeds-1000'. Got {block!r}.")
    return m.group(1)


def results_markers(block: str = "quick") -> tuple[str, str]:
    """The markers of a docs page's Results block: quick's are :data:`RESULTS_BEGIN` and
    :data:`RESULTS_END`; every other block has its own."""
    if block == "quick":
        return RESULTS_BEGIN, RESULTS_END
    return f"<!-- optzoo:results:{block}:begin -->", f"<!-- optzoo:results:{block}:end -->"


def blocks(docs_dir: Path) -> list[str]:
    """The blocks with committed units under ``docs_dir/results``, quick first."""
    root = Path(docs_dir) / "results"
    found = [p.name for p in root.iterdir() if p.is_dir() and BLOCK.fullmatch(p.name)] if root.exists() else []
    return sorted(found, key=lambda b: (b != "quick", b))


def archive(out: Path, slug: str, scale: str, seeds: list[int], docs_dir: Path) -> Path:
    """Put the finished units (and crash records) of ``slug``'s ``seeds`` in ``out`` into their
    block folder under ``docs_dir/results``, compressed; the folder's earlier units, verdicts and
    figures go (a block holds one run). ``out`` may be that folder itself (a run resumed there).
    Returns the folder."""
    from optzoo._core.io import atomic_write_json, read_json
    from optzoo.repro.runner import archived_path, error_path, load_unit

    dest = Path(docs_dir) / "results" / block_name(scale, min(seeds)) / slug
    units = {s: load_unit(out, slug, s, scale) for s in seeds}
    crashes = {s: read_json(error_path(out, slug, s)) for s in seeds
               if units[s] is None and error_path(out, slug, s).exists()}
    if dest.exists():
        shutil.rmtree(dest)
    for s, unit in units.items():
        if unit is not None:
            atomic_write_json(archived_path(dest.parent, slug, s), unit)
    for s, crash in crashes.items():
        atomic_write_json(dest / f"seed-{s}.error.json.gz", crash)
    return dest


def _crashes(folder: Path) -> dict[int, str]:
    from optzoo._core.io import read_json

    out = {}
    for p in folder.glob("seed-*.error.json.gz"):
        out[int(p.name.split(".")[0][len("seed-"):])] = read_json(p).get("traceback", "")
    return out


def judge_block(docs_dir: Path, block: str, slug: str, *, draw: bool = True,
                module: str | None = None) -> PaperRun | None:
    """Judge the committed units of ``slug`` in ``block`` (None if it has none). ``draw``: draw
    the figures again; otherwise the committed ones are linked (their names and order are in the
    folder's verdicts.json), and drawn only if one is missing."""
    from optzoo._core.io import read_json
    from optzoo.papers import get_paper
    from optzoo.repro.pipeline import collect_results, judge_paper

    base = Path(docs_dir) / "results" / block
    folder = base / slug
    if not folder.exists():
        return None
    records, _ = collect_results(base, slug, block_scale(block))
    errors = _crashes(folder)
    if not records and not errors:
        return None
    kept: list[str] = []
    if not draw:
        names = read_json(folder / "verdicts.json").get("figures") if (folder / "verdicts.json").exists() else None
        kept = [str(folder / "figures" / name) for name in names or []]
        draw = names is None or not all(Path(f).exists() for f in kept)
    return judge_paper(slug, module or get_paper(slug).repro_module, block_scale(block), records,
                       errors, base, make_figures=draw, figures=kept)


def write_docs(docs_dir: Path = Path("docs"), *, readme: Path | None = None,
               draw: Iterable[tuple[str, str]] | bool = True, console=None,
               modules: dict[str, str] | None = None) -> list[Path]:
    """Write docs/RESULTS.md, each page's Results blocks and the README column from the units
    committed under ``docs_dir/results`` alone. ``draw``: True to draw every figure again, False
    to keep the committed ones, or the (block, slug) pairs to draw. ``modules``: the papers, in
    the documents' order, and their reproduction modules (default: every implemented paper).
    Returns the files changed."""
    from optzoo.papers import implemented_papers

    if modules is None:
        modules = {p.slug: p.repro_module for p in implemented_papers()}
    docs_dir = Path(docs_dir)
    readme = Path(readme) if readme is not None else docs_dir.parent / "README.md"
    redraw = draw if isinstance(draw, bool) else None
    pairs = set() if isinstance(draw, bool) else set(draw)
    changed: list[Path] = []
    judged: dict[str, list[PaperRun]] = {}
    for block in blocks(docs_dir):
        runs = judged.setdefault(block, [])
        for slug, module in modules.items():
            run = judge_block(docs_dir, block, slug, module=module,
                              draw=redraw if redraw is not None else (block, slug) in pairs)
            if run is not None:
                runs.append(run)
                page = docs_dir / "papers" / f"{slug}.md"
                if update_paper_docs(page, run, block=block):
                    changed.append(page)
        if console is not None:
            console.log(f"docs/results/{block}: {len(runs)} paper(s) judged")
    if "quick" in judged:
        runs = judged["quick"]
        missing = [slug for slug in modules if slug not in {r.slug for r in runs}]
        meta = _meta(runs, missing)
        # the other blocks' summary lines, so that a headline judged only at full is visible here
        meta["other"] = [f"- **{r.slug}** ({block}): {paper_summary(r)} ([page](papers/{r.slug}.md))"
                         for slug in modules for block, rs in judged.items() if block != "quick"
                         for r in rs if r.slug == slug]
        path = docs_dir / "RESULTS.md"
        old = path.read_text() if path.exists() else None
        write_markdown(runs, path, meta,
                       figure_prefix={r.slug: f"results/quick/{r.slug}/figures" for r in runs})
        if path.read_text() != old:
            changed.append(path)
        if update_readme_verdicts(readme, runs, "quick", full=judged.get("full", ())):
            changed.append(readme)
    return changed


def _meta(runs: list[PaperRun], missing: list[str]) -> dict[str, Any]:
    """The report header of docs/RESULTS.md, from the committed units alone (no clock, no
    machine of the writer), so that writing it again from the same files gives the same bytes."""
    envs = [r.environment for r in runs if r.environment]

    def common(key: str) -> str:
        values = Counter(str(e.get(key)) for e in envs)
        return " / ".join(v for v, _ in values.most_common()) or "unknown"

    finished = sorted(t for r in runs for t in r.finished)
    note = (f"Written by `{COMMAND}` from the units committed under docs/results/quick; each "
            "section gives its seeds, threads and the commit of its units.")
    if missing:
        note += f" No committed quick units: {', '.join(missing)}."
    return {"generated": f"units finished {finished[0]} to {finished[-1]}" if finished else "no units",
            "scale": "quick", "seeds": "per paper (see each section)", "command": COMMAND,
            "environment": {"python": common("python"), "cpu": common("cpu"),
                            "cpu_count": common("cpu_count")},
            "backend": None, "note": note}


def update_paper_docs(page: Path, run: PaperRun, *, block: str = "quick") -> bool:
    """Replace the text between the ``block``'s markers (:func:`results_markers`) in a paper's
    docs page with the results of ``run`` (figures linked from ``docs/results``). Returns True
    if the page changed; a page without the markers is left alone."""
    page = Path(page)
    if not page.exists():
        return False
    text = page.read_text()
    begin, end = results_markers(block)
    if begin not in text or end not in text:
        return False

    def link(fig: str) -> str:
        return f"../results/{block}/{run.slug}/figures/{Path(fig).name}"

    m = BLOCK.fullmatch(block)
    how = f"`optzoo reproduce {run.slug}" + (f" --scale {m.group(1)}" if m and m.group(1) != "quick" else "") \
        + (f" --seed-start {m.group(2)}" if m and m.group(2) else "") + " --write-docs`"
    body = ["", f"_Written by `{COMMAND}` from the units in `docs/results/{block}/{run.slug}/` "
                f"(to run them again: {how}); do not edit by hand._", "",
            *paper_lines(run, link, heading="###" if block == "quick" else "####"), ""]
    new = re.sub(re.escape(begin) + r".*?" + re.escape(end),
                 lambda _m: begin + "\n".join(body) + end, text, count=1, flags=re.S)
    if new != text:
        page.write_text(new)
        return True
    return False


def update_readme_verdicts(readme: Path, runs: list[PaperRun], scale: str, *,
                           full: Iterable[PaperRun] = ()) -> bool:
    """Rewrite the last cell of each run's row in the README's table of papers
    (rows look like ``| 03 | `dks` | ... | last verdicts |``); a paper with a run in ``full``
    (its full block) also gets that run's headline, which quick may not test. Returns True if
    it changed."""
    readme = Path(readme)
    if not readme.exists():
        return False
    by_slug = {r.slug: r for r in runs}
    at_full = {}
    for r in full:  # a full run recorded in sittings says that its headline is interim
        status, note = headline_status(r.verdicts, r.headline), partial_note(r)
        at_full[r.slug] = f"{status} ({note})" if status and note else status
    lines = readme.read_text().splitlines()
    changed = False
    for i, line in enumerate(lines):
        cells = line.split(" | ")
        if len(cells) < 3 or not line.startswith("| ") or not line.endswith(" |"):
            continue
        slug = cells[1].strip("`")
        if slug in by_slug and cells[1].startswith("`"):
            cell = f"{verdict_counts(by_slug[slug])} ({scale})"
            if at_full.get(slug):
                cell += f"; headline at full: {at_full[slug]}"
            new = " | ".join(cells[:-1]) + f" | {cell} |"
            if new != line:
                lines[i], changed = new, True
    if changed:
        readme.write_text("\n".join(lines) + "\n")
    return changed
