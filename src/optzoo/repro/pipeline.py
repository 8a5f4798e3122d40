"""``optzoo reproduce`` end to end: units -> per-paper verdicts and figures -> reports."""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from optzoo.repro.claim import PaperRun
from optzoo.repro.runner import (
    Unit,
    UnitOutcome,
    error_path,
    load_unit,
    run_units,
    unit_files,
    unit_path,
)

__all__ = ["SCALE_NAMES", "collect_results", "judge_paper", "report_existing", "reproduce",
           "write_outputs"]

SCALE_NAMES = ("smoke", "quick", "full")


def judge_paper(slug: str, module: str, scale: str, records: list[dict[str, Any]],
                errors: dict[int, str], out: Path, make_figures: bool = True,
                figures: list[str] | None = None) -> PaperRun:
    """Judge the finished records of one paper and draw its figures into ``out/<slug>/figures``
    (never raises). ``figures``: when not drawing, figures already drawn to link instead."""
    from optzoo._core.io import atomic_write_json

    records = sorted(records, key=lambda r: r["seed"])
    per_seed = [r["metrics"] for r in records]
    run = PaperRun(slug=slug, scale=scale, seeds=[r["seed"] for r in records], per_seed=per_seed,
                   verdicts=[], errors=dict(errors),
                   wall_time=sum(float(r.get("wall_time", 0.0)) for r in records),
                   provenance=provenance_summary(records),
                   threads=_threads(records),
                   finished=[str(r.get("finished_at", "")) for r in records],
                   environment=dict((records[0].get("environment") or {}) if records else {}),
                   planned_seeds=_planned_seeds(records),
                   figures=list(figures or []))
    if not per_seed:
        return run
    try:
        from optzoo.repro.evidence import as_records
        from optzoo.repro.judging import check_claims, judge_claims

        mod = importlib.import_module(module)
        run.headline = _headline(slug)
        check_claims(mod.CLAIMS)
        per_seed = [as_records(seed) for seed in per_seed]
        notes = mod.notes(per_seed) if hasattr(mod, "notes") else None
        run.verdicts = judge_claims(mod.CLAIMS, per_seed, scale=scale, notes=notes)
        if make_figures:
            from optzoo.repro.figures import forest_plot

            figdir = Path(out) / slug / "figures"
            figdir.mkdir(parents=True, exist_ok=True)
            forest = forest_plot(run.verdicts, figdir / "forest.png",
                                 f"{slug}: estimates and {100 * (run.verdicts[0].level or 0.95):g}% intervals")
            run.figures = ([str(forest)] if forest else []) + [
                str(p) for p in (mod.figures(per_seed, figdir) or []) if Path(p).name != "forest.png"]
    except Exception:
        run.judge_error = traceback.format_exc()
    atomic_write_json(Path(out) / slug / "verdicts.json", {
        "slug": slug, "scale": scale, "seeds": run.seeds, "provenance": run.provenance,
        "headline": list(run.headline), "figures": [Path(f).name for f in run.figures],
        "verdicts": [v.to_dict() for v in run.verdicts], "judge_error": run.judge_error,
    })
    return run


def _threads(records: list[dict[str, Any]]) -> list[str]:
    """The distinct thread counts the runner gave a paper's units (their OMP_NUM_THREADS)."""
    found = {((r.get("environment") or {}).get("threads") or {}).get("OMP_NUM_THREADS") for r in records}
    return sorted(str(t) for t in found if t)


def _planned_seeds(records: list[dict[str, Any]]) -> int | None:
    """The seed count the scale's config asks for (the units' recorded config), if they agree."""
    found = {(r.get("config") or {}).get("seeds") for r in records}
    n = found.pop() if len(found) == 1 else None
    return n if isinstance(n, int) and n > 0 else None


def _headline(slug: str) -> tuple[str, ...]:
    from optzoo.papers import get_paper

    try:
        return tuple(get_paper(slug).headline_claims)
    except KeyError:
        return ()


def provenance_summary(records: list[dict[str, Any]]) -> list[str]:
    """The distinct ``commit`` (``+dirty`` when the unit's own files had uncommitted changes)
    of a paper's units, oldest record first; ``unknown`` for units without provenance."""
    seen: list[str] = []
    for r in sorted(records, key=lambda r: r.get("finished_at", "")):
        prov = r.get("provenance") or {}
        c = prov.get("commit")
        tag = "unknown" if not c else c[:12] + ("+dirty" if prov.get("dirty") else "")
        if tag not in seen:
            seen.append(tag)
    return seen


def default_seeds(module: str, scale: str) -> int:
    """The number of seeds a paper's ``SCALES[scale]`` asks for."""
    config = importlib.import_module(module).SCALES[scale]
    n = getattr(config, "seeds", None)
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"{module}.SCALES[{scale!r}] must have an int field 'seeds' >= 1. Got {n!r}.")
    return n


def collect_results(out: Path, slug: str, scale: str | None = None) -> tuple[list[dict], str | None]:
    """All finished records of ``slug`` in ``out`` (at ``scale``, or the most common one)."""
    from optzoo._core.io import read_json

    records = []
    for _, p in sorted(unit_files(Path(out) / slug).items()):
        try:
            rec = read_json(p)
        except (OSError, ValueError):
            continue
        if rec.get("status") == "ok":
            records.append(rec)
    if scale is None and records:
        scales = [r["scale"] for r in records]
        scale = max(set(scales), key=scales.count)
    return [r for r in records if r["scale"] == scale], scale


def reproduce(
    slugs: list[str],
    *,
    scale: str = "quick",
    seeds: int | None = None,
    seed_start: int = 0,
    jobs: int = 2,
    backend: str = "local",
    out: Path = Path("results"),
    resume: bool = False,
    write_docs: bool = False,
    docs_dir: Path = Path("docs"),
    ray_address: str | None = None,
    console=None,
    runs_out: list | None = None,
    modules: dict[str, str] | None = None,
) -> int:
    """Run every (paper, seed) unit, judge, draw, write the reports. Returns the exit code:
    0 if every unit and every judge ran, 1 otherwise, 130 if interrupted.

    ``seeds``: seeds per paper; ``None`` uses each paper's ``SCALES[scale].seeds``. Each paper
    runs seeds ``seed_start .. seed_start + n - 1``."""
    from rich.console import Console

    from optzoo._core.io import environment_manifest
    from optzoo.papers import get_paper
    from optzoo.repro import report

    console = console or Console()
    out = Path(out)
    modules = dict(modules or {})
    for slug in slugs:
        if slug not in modules:
            modules[slug] = get_paper(slug).repro_module
    seed_lists = {slug: list(range(seed_start, seed_start + (seeds or default_seeds(modules[slug], scale))))
                  for slug in slugs}
    units = [Unit(slug, modules[slug], s) for slug in slugs for s in seed_lists[slug]]
    t0 = time.time()

    def announce(o: UnitOutcome) -> None:
        rec = o.record
        if o.ok:
            console.log(f"{o.unit.slug} seed {o.unit.seed}: done in {rec.get('wall_time', 0):.1f} s "
                        f"-> {unit_path(out, o.unit.slug, o.unit.seed)}")
        else:
            last = (rec.get("traceback") or "").strip().splitlines()[-1:] or ["?"]
            console.log(f"[red]{o.unit.slug} seed {o.unit.seed}: crashed[/red] ({last[0]})")

    interrupted = False
    try:
        outcomes = run_units(units, scale=scale, out=out, jobs=jobs, backend=backend,
                             resume=resume, ray_address=ray_address, console=console,
                             on_outcome=announce)
    except KeyboardInterrupt:
        interrupted = True
        console.print("[yellow]Interrupted: finished units are kept in "
                      f"{out}; run again with --resume to finish the rest.[/yellow]")
        outcomes = []
    skipped = sum(o.skipped for o in outcomes)
    if skipped:
        console.log(f"--resume: {skipped} finished unit(s) reused")

    runs: list[PaperRun] = []
    for slug in slugs:
        records, errors = [], {}
        for s in seed_lists[slug]:
            rec = load_unit(out, slug, s, scale)
            if rec is not None:
                records.append(rec)
            elif error_path(out, slug, s).exists():
                from optzoo._core.io import read_json

                errors[s] = read_json(error_path(out, slug, s)).get("traceback", "")
            elif interrupted:
                errors[s] = "not run: interrupted"
        runs.append(judge_paper(slug, modules[slug], scale, records, errors, out))

    distinct = {tuple(v) for v in seed_lists.values()}
    meta = {
        "scale": scale,
        "seeds": list(next(iter(distinct))) if len(distinct) == 1 else f"per paper (SCALES), from {seed_start}",
        "generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "command": "optzoo " + " ".join(sys.argv[1:]) if sys.argv and "optzoo" in sys.argv[0] else "",
        "environment": environment_manifest(), "elapsed_s": time.time() - t0,
        "backend": backend, "jobs": jobs,
    }
    write_outputs(runs, meta, out=out, scale=scale, write_docs=write_docs,
                  docs_dir=docs_dir, console=console, modules=modules)
    report.console_table(runs, console)
    if runs_out is not None:
        runs_out.extend(runs)
    console.print(f"report: {out / 'report.md'}  and  {out / 'report.html'} "
                  f"({time.time() - t0:.0f} s)")
    if interrupted:
        return 130
    failed = any(r.errors or r.judge_error for r in runs)
    return 1 if failed else 0


def write_outputs(runs: list[PaperRun], meta: dict[str, Any], *, out: Path,
                  scale: str, write_docs: bool, docs_dir: Path, console,
                  modules: dict[str, str] | None = None) -> None:
    """report.md and report.html in OUT; with ``write_docs`` the runs' units are also archived
    under docs/results (:func:`optzoo.repro.docs.archive`) and docs/RESULTS.md, the docs pages'
    Results blocks and the README column are written from the committed results alone
    (:func:`optzoo.repro.docs.write_docs`)."""
    from optzoo.repro import docs, report

    report.write_markdown(runs, out / "report.md", meta)
    report.write_html(runs, out / "report.html", meta)
    if not write_docs:
        return
    empty = [r.slug for r in runs if not r.per_seed]
    if empty:  # never replace a paper's recorded results with an empty block
        console.log(f"not writing docs for {', '.join(empty)}: no finished units at scale "
                    f"{scale!r} in {out}")
    drawn = []
    for run in runs:
        if run.per_seed:
            seeds = sorted(set(run.seeds) | set(run.errors))
            folder = docs.archive(out, run.slug, scale, seeds, docs_dir)
            drawn.append((folder.parent.name, run.slug))
            console.log(f"archived {len(run.seeds)} unit(s) of {run.slug} in {folder}")
    if not drawn:
        return
    from optzoo.papers import implemented_papers

    every = {p.slug: p.repro_module for p in implemented_papers()} | dict(modules or {})
    changed = docs.write_docs(docs_dir, draw=drawn, console=console, modules=every)
    console.log("wrote " + (", ".join(str(p) for p in changed) if changed else "nothing new")
                + f" from {Path(docs_dir) / 'results'}")


def report_existing(slugs: list[str], *, scale: str = "quick", out: Path = Path("results"),
                    write_docs: bool = False, docs_dir: Path = Path("docs"), console=None,
                    modules: dict[str, str] | None = None, runs_out: list | None = None,
                    source: Path | None = None) -> int:
    """Judge the finished units already in OUT, or in ``source`` (a block of docs/results), with
    no unit run, and write the reports (verdicts and figures) into OUT: for re-reading results,
    or for papers run in separate invocations. Returns 1 if a judge failed or a paper has no
    finished unit at this scale, else 0."""
    from rich.console import Console

    from optzoo._core.io import environment_manifest
    from optzoo.papers import get_paper
    from optzoo.repro import report

    console = console or Console()
    out = Path(out)
    runs = []
    if source is not None and write_docs:
        raise ValueError("report_existing: write_docs with a source folder would archive the "
                         "committed units onto themselves; use optzoo.repro.docs.write_docs")
    for slug in slugs:
        records, _ = collect_results(source or out, slug, scale)
        module = (modules or {}).get(slug) or get_paper(slug).repro_module
        runs.append(judge_paper(slug, module, scale, records, {}, out))
    meta = {"scale": scale, "seeds": "per paper (see each section)",
            "generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "command": "optzoo " + " ".join(sys.argv[1:]) if sys.argv and "optzoo" in sys.argv[0] else "",
            "environment": environment_manifest(), "backend": None}
    write_outputs(runs, meta, out=out, scale=scale, write_docs=write_docs, docs_dir=docs_dir,
                  console=console, modules=modules)
    report.console_table(runs, console)
    if runs_out is not None:
        runs_out.extend(runs)
    console.print(f"report: {out / 'report.md'}  and  {out / 'report.html'}")
    return 1 if any(r.judge_error or not r.per_seed for r in runs) else 0
