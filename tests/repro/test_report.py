import pytest

from optzoo.repro.claim import Claim, PaperRun, Verdict
from optzoo.repro.judging import judge
from optzoo.repro.report import (
    format_numbers,
    paper_summary,
    seeds_text,
    write_html,
    write_markdown,
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
    # a run short of its scale's seeds says so next to its headline in the overview
    run.headline, run.planned_seeds = ("finite_step",), 10
    html = write_html([run], tmp_path / "report.html", meta).read_text()
    assert "<td>not reproduced (interim: 5 of the scale&#x27;s 10 seeds)</td>" in html


def test_forest_plot_is_drawn(tmp_path):
    run = _run(tmp_path)
    png = tmp_path / "forest.png"
    assert run.figures[0] == str(png) and png.stat().st_size > 2000


def test_summary_line(tmp_path):
    assert paper_summary(_run(tmp_path)).startswith("0/1 claims reproduced, 1 not reproduced")


def test_format_numbers():
    assert format_numbers({"a": 0.123456, "b": [1, 2], "c": "x"}) == "a=0.1235; b=[1, 2]; c=x"


def test_readme_verdict_column_is_updated(tmp_path):
    from optzoo.repro.docs import update_readme_verdicts
    from optzoo.repro.report import verdict_counts

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
    # a full block's headline is added to the cell (quick may not test the headline)
    at_full = PaperRun("dks", "full", [0, 1], [{}] * 2, [Verdict("a", "inconclusive", ""),
                                                         Verdict("b", "reproduced", "", control=failed)],
                       headline=("a", "b"))
    assert update_readme_verdicts(readme, [run], "quick", full=[at_full])
    assert f"| {counts} (quick); headline at full: undecided |" in readme.read_text()
    # a full run recorded in sittings (2 of its scale's 10 seeds) says its headline is interim
    at_full.planned_seeds = 10
    assert update_readme_verdicts(readme, [run], "quick", full=[at_full])
    assert (f"| {counts} (quick); headline at full: undecided (interim: 2 of the scale's 10 seeds) |"
            ) in readme.read_text()


def test_summary_names_gaps_in_the_seeds_and_a_partial_run():
    run = PaperRun("dks", "full", [0, 1, 2, 5, 7, 8], [{}] * 6, [Verdict("a", "inconclusive", "")])
    assert seeds_text(run) == "seeds 0-2, 5, 7-8"
    assert paper_summary(run).endswith("(full, seeds 0-2, 5, 7-8, units at unknown)")
    run.planned_seeds = 10
    assert seeds_text(run) == "seeds 0-2, 5, 7-8; interim: 6 of the scale's 10 seeds"
    run.seeds, run.planned_seeds = [3], 1
    assert seeds_text(run) == "seed 3"  # complete: no note




def test_each_paper_shows_its_tuning_table_with_flags(tmp_path):
    import warnings

    from optzoo.repro.tuning import select

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        choices = [select((0.1, 1.0, 10.0), lambda lr, s, best=best: (lr - best) ** 2, stream="tune",
                          seeds=(90000,), arm=arm, knob="lr")
                   for arm, best in (("method", 1.0), ("baseline", 20.0))]
    per_seed = [[r.__dict__ for c in choices for r in c.to_records()]] * 2
    run = PaperRun("dks", "smoke", [0, 1], per_seed, [judge(CLAIM, [1.0, 1.1, 0.9, 1.2, 1.0])])
    meta = {"scale": "smoke", "seeds": [0, 1], "environment": {}}
    md = write_markdown([run], tmp_path / "report.md", meta).read_text()
    section = md.split("### Tuning")[1]
    assert "**1 of 2 rows flagged**" in section
    assert "| - | method | lr | {0.1, 1, 10} | 90000 on tune | 3 | 1 (2) | - |" in section
    assert "| - | baseline | lr | {0.1, 1, 10} | 90000 on tune | 3 | 10 (2) | grid end in 2/2 |" in section
    html = write_html([run], tmp_path / "report.html", meta).read_text()
    assert "<h3>Tuning</h3>" in html and "grid end in 2/2" in html
