import pytest

from optzoo.repro.claim import PaperRun, Verdict
from optzoo.repro.report import format_numbers, write_html, write_markdown, write_results_doc


def test_verdict_rejects_unknown_value():
    with pytest.raises(ValueError, match="'verdict' argument of Verdict"):
        Verdict("c", "probably", "s")


def _run(tmp_path):
    fig = tmp_path / "f.png"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.figure().savefig(fig)
    plt.close("all")
    return PaperRun("dks", "smoke", [0, 1], [{}, {}],
                    [Verdict("finite_step", "not reproduced", "failed on K5", {"rate": 0.5})],
                    errors={2: "Traceback\nValueError: boom"}, figures=[str(fig)])


def test_reports_show_verdicts_errors_and_figures(tmp_path):
    run = _run(tmp_path)
    meta = {"scale": "smoke", "seeds": [0, 1, 2], "environment": {}}
    md = write_markdown([run], tmp_path / "report.md", meta).read_text()
    assert "| dks | finite_step | **not reproduced** | rate=0.5 |" in md
    assert "ValueError: boom" in md and "![f](f.png)" in md
    html = write_html([run], tmp_path / "report.html", meta).read_text()
    assert "not reproduced" in html and "base64," in html and "ValueError: boom" in html
    doc = write_results_doc([run], tmp_path / "docs", meta)
    assert (tmp_path / "docs" / "results" / "dks" / "f.png").exists()
    assert "](results/dks/f.png)" in doc.read_text()


def test_format_numbers():
    assert format_numbers({"a": 0.123456, "b": [1, 2], "c": "x"}) == "a=0.1235; b=[1, 2]; c=x"


def test_readme_verdict_column_is_updated(tmp_path):
    from optzoo.repro.report import update_readme_verdicts, verdict_counts

    readme = tmp_path / "README.md"
    readme.write_text("intro\n| NN | slug | paper | fidelity | status | last verdicts |\n"
                      "| 03 | `dks` | Densest k-subgraph | reconstructed | implemented | - |\n"
                      "| 04 | `comparison` | Comparisons | reconstructed | not yet | - |\n")
    run = PaperRun("dks", "quick", [0, 1, 2], [{}] * 3,
                   [Verdict("a", "reproduced", ""), Verdict("b", "not reproduced", ""),
                    Verdict("c", "reproduced", "")])
    assert verdict_counts(run) == "2/3 reproduced, 1 not reproduced"
    assert update_readme_verdicts(readme, [run], "quick")
    text = readme.read_text()
    assert "| 03 | `dks` | Densest k-subgraph | reconstructed | implemented | 2/3 reproduced, 1 not reproduced (quick) |" in text
    assert "| 04 | `comparison` | Comparisons | reconstructed | not yet | - |" in text
    assert not update_readme_verdicts(readme, [run], "quick")  # idempotent
