import pytest

from optzoo.repro.claim import Claim, PaperRun, Verdict
from optzoo.repro.judging import judge
from optzoo.repro.report import (
    RESULTS_BEGIN,
    RESULTS_END,
    format_numbers,
    merge_results_markdown,
    paper_summary,
    update_paper_docs,
    write_html,
    write_markdown,
    write_results_doc,
)

CLAIM = Claim("finite_step", "Ends integral.", "log ratio", threshold=0.0)
CHECK = Claim("invariant", "Weights sum to k.", "per seed", direction="all", kind="check")
FINDING = Claim("ours", "Peeling wins on SBM.", "log ratio", kind="finding")


def test_verdict_rejects_unknown_value():
    with pytest.raises(ValueError, match="'verdict' argument of Verdict"):
        Verdict("c", "probably", "s")


def _run(tmp_path):
    from optzoo.repro.figures import forest_plot, new_figure, save_figure

    fig, ax = new_figure()
    ax.plot([0, 1])
    other = save_figure(fig, tmp_path / "f.png")
    verdicts = [judge(CLAIM, [-1.0, -1.1, -0.9, -1.2, -1.0]),
                judge(FINDING, {"sbm": [0.1, 0.3, -0.2, 0.0, 0.2], "lfr": [1.0, 1.1, 0.9, 1.0, 1.2]}),
                judge(CHECK, [True, True, True, True, True])]
    forest = forest_plot(verdicts, tmp_path / "forest.png", "dks")
    return PaperRun("dks", "smoke", [0, 1, 2, 3, 4], [{}] * 5, verdicts,
                    errors={5: "Traceback\nValueError: boom"}, figures=[str(forest), str(other)],
                    provenance=["abc123def456"])


def test_reports_show_summary_kinds_errors_and_figures(tmp_path):
    run = _run(tmp_path)
    meta = {"scale": "smoke", "seeds": [0, 1, 2, 3, 4], "environment": {}}
    md = write_markdown([run], tmp_path / "report.md", meta).read_text()
    summary = md.split("## Summary")[1].split("###")[0]
    assert "- **dks**: 0/1 claims reproduced, 1 not reproduced" in summary
    assert "checks: 1/1 passed" in summary and "our findings: 0/1 reproduced" in summary
    assert "units at abc123def456" in summary
    claims = md.split("### Claims of the papers")[1].split("###")[0]
    assert "| dks | finite_step | **not reproduced** |" in claims and "invariant" not in claims
    assert "### Checks of our implementation (not counted)" in md
    # an inconclusive verdict says how wide it is and how many seeds would decide it
    assert "half-width" in md and "seeds would decide it" in md
    assert "ValueError: boom" in md and "![forest](forest.png)" in md and "![f](f.png)" in md
    html = write_html([run], tmp_path / "report.html", meta).read_text()
    assert "not reproduced" in html and "base64," in html and "ValueError: boom" in html
    assert "Checks of our implementation (not counted)" in html
    doc = write_results_doc([run], tmp_path / "docs", meta)
    assert (tmp_path / "docs" / "results" / "dks" / "forest.png").exists()
    assert "](results/dks/forest.png)" in doc.read_text()


def _renamed(run, slug, verdicts=None):
    from dataclasses import replace

    if verdicts is None:
        return replace(run, slug=slug)
    return replace(run, slug=slug, verdicts=verdicts, errors={})


def test_results_doc_rewrites_only_the_papers_of_the_run(tmp_path):
    run = _run(tmp_path)
    meta = {"scale": "quick", "seeds": "per paper", "environment": {}}
    a, b, c = _renamed(run, "dks"), _renamed(run, "comparison"), _renamed(run, "talda")
    docs = tmp_path / "docs"
    full = write_results_doc([a, b, c], docs, meta).read_text()
    # re-running b alone, now with only its claim: a's and c's parts stay as they were
    b2 = _renamed(run, "comparison", [judge(CLAIM, [1.0, 1.1, 0.9, 1.2, 1.0])])
    text = write_results_doc([b2], docs, meta, order=["dks", "comparison", "talda"]).read_text()
    for slug, verdict in (("dks", "not reproduced"), ("talda", "not reproduced"),
                          ("comparison", "reproduced, without a control (not counted)")):
        assert f"| {slug} | finite_step | **{verdict}** |" in text
    head = "| paper | {} | verdict | estimate [interval] vs threshold | if inconclusive (else power) |"
    assert head.format("claim") + " control (the credited mechanism removed) |\n| --- |" in text
    for kind in ("finding", "check"):  # every cross-paper table keeps its head and rule
        assert head.format(kind) + "\n| --- |" in text
    assert "| comparison | ours |" not in text and "| dks | ours |" in text  # b2 has no findings now
    assert "- comparison: seed 5 crashed" not in text and "- talda: seed 5 crashed" in text
    order = [text.index(f"\n## {s}: ") for s in ("dks", "comparison", "talda")]
    assert order == sorted(order) and text.count("\n## comparison: ") == 1
    # merging a complete report into any older one gives that report unchanged
    assert merge_results_markdown(text, full) == full


def test_forest_plot_is_drawn(tmp_path):
    run = _run(tmp_path)
    png = tmp_path / "forest.png"
    assert run.figures[0] == str(png) and png.stat().st_size > 2000


def test_paper_docs_results_block_is_rewritten(tmp_path):
    run = _run(tmp_path)
    page = tmp_path / "dks.md"
    page.write_text(f"# dks\n\n## Results\n\n{RESULTS_BEGIN}\nold 0.9 numbers\n{RESULTS_END}\n\n## After\n")
    assert update_paper_docs(page, run)
    text = page.read_text()
    assert "old 0.9 numbers" not in text and "finite_step" in text and "## After" in text
    assert "../results/dks/forest.png" in text and text.count(RESULTS_BEGIN) == 1
    assert not update_paper_docs(page, run)  # idempotent
    bare = tmp_path / "bare.md"
    bare.write_text("# no markers\n")
    assert not update_paper_docs(bare, run) and bare.read_text() == "# no markers\n"


def test_summary_line(tmp_path):
    assert paper_summary(_run(tmp_path)).startswith("0/1 claims reproduced, 1 not reproduced")


def test_format_numbers():
    assert format_numbers({"a": 0.123456, "b": [1, 2], "c": "x"}) == "a=0.1235; b=[1, 2]; c=x"


def test_readme_verdict_column_is_updated(tmp_path):
    from optzoo.repro.report import update_readme_verdicts, verdict_counts

    readme = tmp_path / "README.md"
    readme.write_text("intro\n| NN | slug | paper | fidelity | status | last verdicts |\n"
                      "| 03 | `dks` | Densest k-subgraph | reconstructed | implemented | - |\n"
                      "| 04 | `comparison` | Comparisons | reconstructed | not yet | - |\n")
    failed, held = Verdict("x", "not reproduced", ""), Verdict("x", "reproduced", "")
    run = PaperRun("dks", "quick", [0, 1, 2], [{}] * 3,
                   [Verdict("a", "reproduced", "", control=failed), Verdict("b", "not reproduced", ""),
                    Verdict("c", "reproduced", "", control=held), Verdict("e", "reproduced", ""),
                    Verdict("d", "passed", "", kind="check")], headline=("a", "b"))
    counts = ("1/4 claims reproduced, 1 reproduced but cannot fail under its control (not counted), "
              "1 reproduced without a control (not counted), 1 not reproduced; headline: not reproduced")
    assert verdict_counts(run) == counts
    assert update_readme_verdicts(readme, [run], "quick")
    text = readme.read_text()
    assert f"| 03 | `dks` | Densest k-subgraph | reconstructed | implemented | {counts} (quick) |" in text
    assert "| 04 | `comparison` | Comparisons | reconstructed | not yet | - |" in text
    assert not update_readme_verdicts(readme, [run], "quick")  # idempotent


def test_full_scale_block_is_its_own(tmp_path):
    from optzoo.repro.report import results_markers, write_scale_docs

    run = _run(tmp_path)
    run.scale = "full"
    docs = tmp_path / "docs"
    (docs / "papers").mkdir(parents=True)
    fb, fe = results_markers("full")
    page = docs / "papers" / "dks.md"
    page.write_text(f"# dks\n\n{RESULTS_BEGIN}\nquick 0.5 numbers\n{RESULTS_END}\n\n### Full\n\n{fb}\nold\n{fe}\n")
    (docs / "results" / "dks").mkdir(parents=True)
    (docs / "results" / "dks" / "quick.png").write_bytes(b"png")
    assert write_scale_docs([run], docs, "full") == [page]
    text = page.read_text()
    # quick's block, quick's figures and RESULTS.md are left alone; the full block is rewritten
    assert "quick 0.5 numbers" in text and "\nold\n" not in text and "finite_step" in text.split(fb)[1]
    assert "../results/full/dks/forest.png" in text and (docs / "results" / "full" / "dks" / "forest.png").exists()
    assert (docs / "results" / "dks" / "quick.png").exists() and not (docs / "RESULTS.md").exists()
    with pytest.raises(ValueError, match="other than quick"):
        write_scale_docs([run], docs, "quick")


def test_a_second_seed_set_at_quick_writes_its_own_block(tmp_path):
    from dataclasses import replace

    from optzoo.repro.report import docs_block, results_markers, write_scale_docs

    assert docs_block("quick", 0) == "quick" and docs_block("full", 0) == "full"
    assert docs_block("quick", 1000) == "quick-seeds-1000"
    run = replace(_run(tmp_path), scale="quick", seeds=[1000, 1001, 1002, 1003, 1004])
    docs = tmp_path / "docs"
    (docs / "papers").mkdir(parents=True)
    b, e = results_markers("quick-seeds-1000")
    page = docs / "papers" / "dks.md"
    page.write_text(f"# dks\n\n{RESULTS_BEGIN}\ndefault seeds\n{RESULTS_END}\n\n{b}\nold\n{e}\n")
    assert write_scale_docs([run], docs, "quick-seeds-1000") == [page]
    text = page.read_text()
    assert "default seeds" in text and "\nold\n" not in text
    assert "optzoo reproduce dks --seed-start 1000 --write-docs" in text.split(b)[1]
