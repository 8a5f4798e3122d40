import pytest
from typer.testing import CliRunner

from optzoo.cli import app

runner = CliRunner()


def test_list_shows_all_papers():
    res = runner.invoke(app, ["list"], terminal_width=200)
    assert res.exit_code == 0
    for slug in ("copro", "dks", "markov_zo"):
        assert slug in res.output


def test_version():
    from optzoo import __version__

    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == f"optzoo {__version__}"


@pytest.fixture
def copro_not_implemented(monkeypatch):
    """Every paper is implemented now: the not-implemented paths run on a row marked so."""
    import dataclasses

    import optzoo.papers as papers

    rows = tuple(dataclasses.replace(p, implemented=False, api=()) if p.slug == "copro" else p
                 for p in papers.PAPERS)
    monkeypatch.setattr(papers, "PAPERS", rows)


def test_show_unknown_and_not_implemented(copro_not_implemented):
    res = runner.invoke(app, ["show", "nope"])
    assert res.exit_code == 2 and "Unknown paper slug" in res.output
    res = runner.invoke(app, ["show", "copro"], terminal_width=200)
    assert res.exit_code == 0 and "not implemented yet" in res.output


def test_reproduce_rejects_bad_scale_and_unimplemented_paper(copro_not_implemented):
    res = runner.invoke(app, ["reproduce", "dks", "--scale", "huge"])
    assert res.exit_code != 0 and "huge" in res.output
    res = runner.invoke(app, ["reproduce", "copro"])
    assert res.exit_code != 0 and "not implemented yet" in res.output


def test_dks_command_json(tmp_path):
    import json

    edges = tmp_path / "g.txt"
    # a 4-clique {0,1,2,3} attached to a path 3-4-5-6
    edges.write_text("# test graph\n0 1\n0 2\n0 3\n1 2\n1 3\n2 3\n3 4\n4 5\n5 6\n")
    res = runner.invoke(app, ["dks", str(edges), "-k", "4", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert sorted(out["nodes"]) == [0, 1, 2, 3] and out["num_edges"] == 6
    assert out["density"] == 1.0 and out["status"] == "converged"
    for key in ("message", "wall_time"):
        assert key in out
    res = runner.invoke(app, ["dks", str(edges), "-k", "9"])
    assert res.exit_code != 0 and "'k'" in res.output


def test_reproduce_then_show_end_to_end(tmp_path):
    """The real pipeline on the DkS smoke scale, then `optzoo show` reads its results."""
    import os

    from rich.console import Console

    from optzoo.repro.pipeline import reproduce

    with open(os.devnull, "w") as sink:
        code = reproduce(["dks"], scale="smoke", seeds=2, jobs=2, out=tmp_path,
                         console=Console(file=sink))
    assert code == 0
    assert (tmp_path / "report.html").exists() and list((tmp_path / "dks" / "figures").glob("*.png"))
    res = runner.invoke(app, ["show", "dks", "--out", str(tmp_path)], env={"COLUMNS": "240"})
    assert res.exit_code == 0, res.output
    assert "finite_step" in res.output and "scale smoke, seeds [0, 1]" in res.output


def test_list_and_show_print_json(tmp_path):
    """December trial D17 / issue 43: --json on the commands that print results."""
    import json

    res = runner.invoke(app, ["list", "--json"])
    rows = json.loads(res.output)
    assert res.exit_code == 0 and len(rows) == 19 and {"slug", "fidelity", "headline_claims"} <= set(rows[0])
    res = runner.invoke(app, ["show", "dks", "--json", "--out", str(tmp_path)])
    obj = json.loads(res.output)
    assert res.exit_code == 0 and obj["paper"]["slug"] == "dks" and obj["results"] is None
    assert obj["claims"] and {"id", "kind", "statement"} <= set(obj["claims"][0])


def test_report_validates_scale():
    res = runner.invoke(app, ["report", "dks", "--scale", "medium"])
    assert res.exit_code == 2 and "must be one of smoke, quick, full" in res.output


def test_reproduce_and_report_print_json(tmp_path):
    """--json on reproduce and report: one JSON object on stdout (progress and tables on stderr)
    with each paper's summary and verdicts."""
    import json

    res = runner.invoke(app, ["reproduce", "dks", "--scale", "smoke", "--seeds", "1", "--jobs", "1",
                              "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj["scale"] == "smoke" and obj["exit_code"] == 0 and [p["slug"] for p in obj["papers"]] == ["dks"]
    paper = obj["papers"][0]
    assert paper["seeds"] == [0] and paper["summary"] and paper["verdicts"]
    assert {"claim", "kind", "verdict"} <= set(paper["verdicts"][0])
    res = runner.invoke(app, ["report", "dks", "--scale", "smoke", "--out", str(tmp_path), "--json"])
    again = json.loads(res.stdout)
    assert res.exit_code == 0 and again["papers"][0]["verdicts"] == paper["verdicts"]


def test_report_from_the_committed_results(tmp_path):
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "docs" / "results"
    before = {p.name: p.stat().st_mtime_ns for p in (root / "quick-seeds-1000" / "dks").rglob("*")}
    res = runner.invoke(app, ["report", "dks", "--from", str(root), "--block", "quick-seeds-1000",
                              "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj["papers"][0]["seeds"][0] == 1000 and (tmp_path / "dks" / "verdicts.json").exists()
    assert {p.name: p.stat().st_mtime_ns for p in (root / "quick-seeds-1000" / "dks").rglob("*")} == before
    res = runner.invoke(app, ["report", "dks", "--from", str(root), "--write-docs"])
    assert res.exit_code == 2 and "name no papers" in res.output
    res = runner.invoke(app, ["report", "dks", "--from", str(root), "--block", "seeds"])
    assert res.exit_code == 2 and "Got 'seeds'" in res.output
    res = runner.invoke(app, ["report", "--from", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "committed results" in res.output
