"""The docs' results come from committed units alone (optzoo.repro.docs)."""

import os
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from optzoo.papers import implemented_papers
from optzoo.repro import docs
from optzoo.repro.pipeline import reproduce

MOD = "optzoo.repro._selftest_records"
EVERY = {p.slug: p.repro_module for p in implemented_papers()} | {"selftest": MOD}  # as reproduce has it
ROOT = Path(__file__).resolve().parents[2]
PAGE = ("# selftest\n\n## Results\n\n<!-- optzoo:results:begin -->\n<!-- optzoo:results:end -->\n\n"
        "### Second seed set\n\n<!-- optzoo:results:quick-seeds-1000:begin -->\n"
        "<!-- optzoo:results:quick-seeds-1000:end -->\n")


def _quiet():
    return Console(file=open(os.devnull, "w"))


def _reproduce(out, docs_dir, **kw):
    return reproduce(["selftest"], scale="quick", seeds=3, jobs=1, out=out, console=_quiet(),
                     modules={"selftest": MOD}, write_docs=True, docs_dir=docs_dir, **kw)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_block_names_and_markers():
    assert docs.block_name("quick", 0) == "quick" and docs.block_name("full", 0) == "full"
    assert docs.block_name("quick", 1000) == "quick-seeds-1000"
    assert docs.block_scale("quick-seeds-1000") == "quick" and docs.block_scale("full") == "full"
    assert docs.results_markers("quick") == (docs.RESULTS_BEGIN, docs.RESULTS_END)
    assert docs.results_markers("full") == ("<!-- optzoo:results:full:begin -->",
                                            "<!-- optzoo:results:full:end -->")
    with pytest.raises(ValueError, match="'block' argument of block_scale .* Got 'seeds'"):
        docs.block_scale("seeds")


@pytest.fixture
def written(tmp_path):
    """A run archived under docs/results with --write-docs, both seed sets."""
    d = tmp_path / "docs"
    (d / "papers").mkdir(parents=True)
    (d / "papers" / "selftest.md").write_text(PAGE)
    (tmp_path / "README.md").write_text("| 00 | `selftest` | A self-test | paper | implemented | - |\n")
    assert _reproduce(tmp_path / "run", d) == 0
    assert _reproduce(tmp_path / "run1000", d, seed_start=1000) == 0
    return tmp_path


def test_write_docs_archives_units_and_writes_every_result_from_them(written):
    d, block = written / "docs", written / "docs" / "results" / "quick" / "selftest"
    assert sorted(p.name for p in block.glob("seed-*")) == [f"seed-{s}.json.gz" for s in range(3)]
    assert (block / "verdicts.json").exists() and (block / "figures" / "forest.png").exists()
    assert (d / "results" / "quick-seeds-1000" / "selftest" / "seed-1002.json.gz").exists()
    results = (d / "RESULTS.md").read_text()
    head, other = results.split("Other scales and seed sets")
    other, tables = other.split("### Claims of the papers")
    assert "- **selftest**: " in head and "seeds [0, 1, 2]" in tables and "1000" not in head + tables
    # the other blocks' summary lines, so that a verdict only another block has is visible there
    assert "- **selftest** (quick-seeds-1000): " in other and "seeds 1000-1002" in other
    assert "](results/quick/selftest/figures/forest.png)" in results
    assert "units finished " in results and "optzoo report --from docs/results --write-docs" in results
    page = (d / "papers" / "selftest.md").read_text()
    first, second = page.split("### Second seed set")
    assert "seeds [0, 1, 2]" in first and "seeds [1000, 1001, 1002]" in second
    assert "../results/quick-seeds-1000/selftest/figures/forest.png" in second
    assert "(quick) |" in (written / "README.md").read_text()


def test_the_docs_are_written_again_bit_for_bit_from_the_committed_files(written):
    d = written / "docs"
    before = _snapshot(written)
    (d / "RESULTS.md").unlink()
    (d / "papers" / "selftest.md").write_text(PAGE)  # blocks emptied by hand
    changed = docs.write_docs(d, draw=False, modules=EVERY)
    assert set(changed) == {d / "RESULTS.md", d / "papers" / "selftest.md"}
    assert _snapshot(written) == before
    assert docs.write_docs(d, draw=True, modules=EVERY) == []  # figures too
    assert _snapshot(written) == before


def test_a_run_resumes_from_the_committed_units(written):
    block = written / "docs" / "results" / "quick"
    before = _snapshot(block / "selftest")
    runs = []
    assert reproduce(["selftest"], scale="quick", seeds=4, jobs=1, out=block, resume=True,
                     console=_quiet(), modules={"selftest": MOD}, runs_out=runs) == 0
    assert runs[0].seeds == [0, 1, 2, 3]
    assert (block / "selftest" / "seed-3.json").exists() and not (block / "selftest" / "seed-0.json").exists()
    for s in range(3):  # the committed units were reused, not run again
        assert (block / "selftest" / f"seed-{s}.json.gz").read_bytes() == before[f"seed-{s}.json.gz"]


def test_a_new_run_replaces_its_block_and_only_its_block(written):
    d = written / "docs"
    second = _snapshot(d / "results" / "quick-seeds-1000")
    assert reproduce(["selftest"], scale="quick", seeds=2, jobs=1, out=written / "again", console=_quiet(),
                     modules={"selftest": MOD}, write_docs=True, docs_dir=d) == 0
    block = d / "results" / "quick" / "selftest"
    assert sorted(p.name for p in block.glob("seed-*")) == ["seed-0.json.gz", "seed-1.json.gz"]
    assert "seeds [0, 1]" in (d / "RESULTS.md").read_text()
    assert _snapshot(d / "results" / "quick-seeds-1000") == second


def test_the_committed_docs_are_what_the_committed_results_give(tmp_path):
    """docs/RESULTS.md, every docs page's Results blocks and the README column are exactly what
    `optzoo report --from docs/results --write-docs` writes from docs/results."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    changed = docs.write_docs(tmp_path / "docs", draw=False)
    assert changed == [], ("docs differ from what docs/results gives; run "
                           "`optzoo report --from docs/results --write-docs`: "
                           + ", ".join(str(p.relative_to(tmp_path)) for p in changed))
