"""The ``optzoo`` command: list, show, reproduce, and one command per solver users run
directly (``optzoo dks``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    add_completion=False, no_args_is_help=True,
    help="optzoo: ICML 2026 optimization methods, each checked against its paper's claim.",
)


def _version(value: bool) -> None:
    if value:
        from optzoo import __version__

        typer.echo(f"optzoo {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="print the version and exit")] = False) -> None:
    """optzoo: ICML 2026 optimization methods, each checked against its paper's claim."""


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr)


def _print_json(obj) -> None:
    import json

    from optzoo._core.io import to_jsonable

    typer.echo(json.dumps(to_jsonable(obj), indent=1))


_JSON = Annotated[bool, typer.Option("--json", help="print one JSON object instead of tables")]
_JSON_RUN = Annotated[bool, typer.Option("--json", help="print one JSON object (the verdicts) on stdout; "
                                                         "progress and tables go to stderr")]


def _print_runs(runs, *, out: Path, scale: str, code: int) -> None:
    """The JSON of reproduce/report: per paper what its verdicts.json holds, plus its summary."""
    from optzoo.repro.report import paper_summary

    _print_json({"out": str(out), "scale": scale, "exit_code": code,
                 "report": {"markdown": str(out / "report.md"), "html": str(out / "report.html")},
                 "papers": [{"slug": r.slug, "summary": paper_summary(r), "seeds": r.seeds,
                             "provenance": r.provenance, "headline": list(r.headline),
                             "errors": {str(k): v for k, v in r.errors.items()},
                             "judge_error": r.judge_error, "wall_time_s": r.wall_time,
                             "verdicts": [v.to_dict() for v in r.verdicts]} for r in runs]})


@app.command("list")
def list_papers(json: _JSON = False) -> None:
    """Print the table of the 19 papers (slug, fidelity, status)."""
    import dataclasses

    from rich.table import Table

    from optzoo.papers import PAPERS

    if json:
        _print_json([dataclasses.asdict(p) for p in PAPERS])
        return

    table = Table(title="optzoo papers (ICML 2026)")
    for col in ("#", "slug", "title", "fidelity", "status"):
        table.add_column(col, overflow="fold")
    for p in PAPERS:
        status = "[green]implemented[/green]" if p.implemented else "[dim]not yet[/dim]"
        table.add_row(str(p.number), p.slug, p.title, p.fidelity, status)
    _console().print(table)


@app.command()
def show(
    slug: Annotated[str, typer.Argument(help="paper slug, e.g. dks")],
    out: Annotated[Path, typer.Option(help="results folder written by reproduce")] = Path("results"),
    json: _JSON = False,
) -> None:
    """Show a paper: fidelity, claims, and the latest results found in OUT."""
    import dataclasses
    import importlib

    from optzoo.papers import get_paper
    from optzoo.repro.pipeline import collect_results, judge_paper
    from optzoo.repro.report import console_table

    console = _console()
    try:
        paper = get_paper(slug)
    except KeyError as exc:
        console.print(f"[red]{exc.args[0]}[/red]")
        raise typer.Exit(2) from None
    if json:
        obj = {"paper": dataclasses.asdict(paper), "claims": [], "results": None}
        if paper.implemented:
            mod = importlib.import_module(paper.repro_module)
            obj["claims"] = [c.to_dict() for c in mod.CLAIMS]
            records, scale = collect_results(out, slug)
            if records:
                run = judge_paper(slug, paper.repro_module, scale, records, {}, out, make_figures=False)
                obj["results"] = {"out": str(out / slug), "scale": scale, "seeds": run.seeds,
                                  "provenance": run.provenance, "headline": list(run.headline),
                                  "verdicts": [v.to_dict() for v in run.verdicts]}
        _print_json(obj)
        return
    console.print(f"[bold]{paper.number:02d} {paper.slug}[/bold]: {paper.title} ({paper.venue})")
    console.print(f"arXiv: {paper.arxiv or '-'}   official code: {paper.official_code or '-'}")
    console.print(f"fidelity: {paper.fidelity}" + (f" ({paper.fidelity_note})" if paper.fidelity_note else ""))
    console.print(f"headline: {paper.headline}")
    if not paper.implemented:
        console.print("[yellow]status: not implemented yet[/yellow]")
        return
    console.print(f"API: {', '.join(paper.api)}   docs: docs/papers/{slug}.md")
    mod = importlib.import_module(paper.repro_module)
    if paper.headline_claims:
        console.print(f"claims that test the headline: {', '.join(paper.headline_claims)}")
    for c in mod.CLAIMS:
        console.print(f"  - [bold]{c.id}[/bold] ({c.kind}): {c.statement} [dim]({c.rule()})[/dim]")
        if c.source:
            console.print(f"      [dim]source: {c.source}[/dim]")
        if c.control is not None:
            console.print(f"      [dim]control: {c.control.describe()}; credited by: {c.control.credits}[/dim]")
    records, scale = collect_results(out, slug)
    if not records:
        console.print(f"no results in {out / slug}; run `optzoo reproduce {slug}`")
        return
    run = judge_paper(slug, paper.repro_module, scale, records, {}, out, make_figures=False)
    console.print(f"latest results in {out / slug}: scale {scale}, seeds {run.seeds}")
    console_table([run], console)


@app.command()
def reproduce(
    slugs: Annotated[list[str] | None, typer.Argument(help="papers to run (default: all implemented)")] = None,
    scale: Annotated[str, typer.Option(help="smoke | quick | full")] = "quick",
    seeds: Annotated[int | None, typer.Option(min=1, help="seeds per paper (default: each paper's SCALES)")] = None,
    seed_start: Annotated[int, typer.Option(min=0, help="first seed: runs seeds S..S+N-1")] = 0,
    jobs: Annotated[int, typer.Option(min=1, help="units run in parallel")] = 2,
    backend: Annotated[str, typer.Option(help="local | ray")] = "local",
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster address (default: start a local instance)")] = None,
    out: Annotated[Path, typer.Option(help="results folder")] = Path("results"),
    resume: Annotated[bool, typer.Option(help="skip units finished in OUT by the same code and config")] = False,
    write_docs: Annotated[bool, typer.Option(help="archive the units under docs/results (a block per scale and seed set) and write docs/RESULTS.md, the docs pages' Results blocks and the README column from docs/results alone")] = False,
    json: _JSON_RUN = False,
) -> None:
    """Run papers' reproductions, one process per (paper, seed), and write the report."""
    from optzoo.papers import get_paper, implemented_papers
    from optzoo.repro.pipeline import SCALE_NAMES
    from optzoo.repro.pipeline import reproduce as run

    console = _console(stderr=json)
    if scale not in SCALE_NAMES:
        raise typer.BadParameter(f"must be one of {', '.join(SCALE_NAMES)}. Got {scale!r}.", param_hint="--scale")
    if backend not in ("local", "ray"):
        raise typer.BadParameter(f"must be 'local' or 'ray'. Got {backend!r}.", param_hint="--backend")
    if not slugs:
        slugs = [p.slug for p in implemented_papers()]
    for slug in slugs:
        try:
            paper = get_paper(slug)
        except KeyError as exc:
            raise typer.BadParameter(exc.args[0], param_hint="SLUGS") from None
        if not paper.implemented:
            raise typer.BadParameter(f"paper {slug!r} is not implemented yet (see `optzoo list`).",
                                     param_hint="SLUGS")
    if not slugs:
        console.print("no implemented papers to run")
        raise typer.Exit(1)
    runs = []
    code = run(slugs, scale=scale, seeds=seeds, seed_start=seed_start, jobs=jobs, backend=backend,
               out=out, resume=resume, write_docs=write_docs, ray_address=ray_address,
               console=console, runs_out=runs)
    if json:
        _print_runs(runs, out=out, scale=scale, code=code)
    raise typer.Exit(code)


@app.command()
def report(
    slugs: Annotated[list[str] | None, typer.Argument(help="papers to report (default: all implemented)")] = None,
    scale: Annotated[str, typer.Option(help="smoke | quick | full")] = "quick",
    out: Annotated[Path, typer.Option(help="results folder written by reproduce")] = Path("results"),
    source: Annotated[Path | None, typer.Option("--from", help="committed results (docs/results): re-judge their units, one block (--block) into OUT, or with --write-docs every docs result in place")] = None,
    block: Annotated[str, typer.Option(help="with --from: which block, e.g. quick, quick-seeds-1000, full")] = "quick",
    write_docs: Annotated[bool, typer.Option(help="archive OUT's units under docs/results and write docs/RESULTS.md, the docs pages' Results blocks and the README column from docs/results alone")] = False,
    json: _JSON_RUN = False,
) -> None:
    """Judge finished units without running anything, and write the report."""
    from optzoo.papers import get_paper, implemented_papers
    from optzoo.repro import docs
    from optzoo.repro.pipeline import SCALE_NAMES, report_existing

    if scale not in SCALE_NAMES:
        raise typer.BadParameter(f"must be one of {', '.join(SCALE_NAMES)}. Got {scale!r}.", param_hint="--scale")
    if source is not None and not source.is_dir():
        raise typer.BadParameter(f"must be a folder of committed results (docs/results). Got {str(source)!r}.",
                                 param_hint="--from")
    if source is not None and write_docs:
        if slugs:
            raise typer.BadParameter("--from with --write-docs writes every paper's docs results; "
                                     f"name no papers. Got {' '.join(slugs)}.", param_hint="SLUGS")
        console = _console(stderr=json)
        changed = docs.write_docs(source.parent, draw=False, console=console)
        console.print("changed: " + (", ".join(str(p) for p in changed) if changed else "nothing"))
        raise typer.Exit(0)
    slugs = slugs or [p.slug for p in implemented_papers()]
    for slug in slugs:
        try:
            get_paper(slug)
        except KeyError as exc:
            raise typer.BadParameter(exc.args[0], param_hint="SLUGS") from None
    if source is not None:
        try:
            scale = docs.block_scale(block)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--block") from None
        source = source / block
    runs = []
    code = report_existing(slugs, scale=scale, out=out, write_docs=write_docs, source=source,
                           console=_console(stderr=json), runs_out=runs)
    if json:
        _print_runs(runs, out=out, scale=scale, code=code)
    raise typer.Exit(code)


@app.command()
def dks(
    graph: Annotated[str, typer.Argument(help="edge list (.txt/.gz), .mtx or .csv file")],
    k: Annotated[int, typer.Option("-k", "--k", help="subgraph size")],
    method: Annotated[str, typer.Option(help="auto (SE-FW and peeling, the denser) | se-fw | fw | adamw | peel | tpm | eigen | mip")] = "auto",
    lam: Annotated[float, typer.Option(help="diagonal loading lambda")] = 1.0,
    max_iter: Annotated[int, typer.Option(help="iteration budget")] = 200,
    seed: Annotated[int, typer.Option(help="seed (eigsh start vector, restarts)")] = 0,
    json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Densest k-subgraph of GRAPH: prints the nodes, edge count and density."""
    from optzoo.dks.cli import dks_command

    raise typer.Exit(dks_command(graph, k, method=method, lam=lam, as_json=json,
                                 max_iter=max_iter, seed=seed))


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
