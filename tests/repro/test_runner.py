"""The harness on a tiny synthetic paper (optzoo.repro._selftest): process per unit, atomic
results, resume, crash isolation, reports, and the Ray backend giving identical results."""

import json
import os

import pytest
from rich.console import Console

from optzoo.repro.pipeline import reproduce
from optzoo.repro.runner import Unit, run_unit

MOD = "optzoo.repro._selftest"


def _run(tmp_path, scale="smoke", seeds=2, **kw):
    console = Console(file=open(os.devnull, "w"))
    return reproduce(["selftest"], scale=scale, seeds=seeds, jobs=2, out=tmp_path, console=console,
                     modules={"selftest": MOD}, **kw)


MARK = {"part": "", "arm": "draws", "instance": "marker", "metric": "marker", "value": 1.0}


def _metrics(tmp_path, seed):
    """A unit's records by metric (the last of each)."""
    rows = json.loads((tmp_path / "selftest" / f"seed-{seed}.json").read_text())["metrics"]
    return {r["metric"]: r for r in rows}


def test_run_unit_in_process_is_deterministic():
    a = run_unit(Unit("selftest", MOD, 0), "smoke")
    b = run_unit(Unit("selftest", MOD, 0), "smoke")
    assert a["status"] == "ok" and a["metrics"] == b["metrics"]
    assert a["config"]["n"] == 200 and a["environment"]["packages"]


def test_local_pool_writes_units_reports_and_figures(tmp_path):
    assert _run(tmp_path) == 0
    for s in (0, 1):
        assert (tmp_path / "selftest" / f"seed-{s}.json").exists()
    md = (tmp_path / "report.md").read_text()
    assert "positive_mean" in md and "reproduced" in md
    assert "### Checks of our implementation (not counted)" in md and "draws_finite" in md
    html = (tmp_path / "report.html").read_text()
    assert "data:image/png;base64," in html  # self-contained
    assert (tmp_path / "selftest" / "figures" / "forest.png").stat().st_size > 1000
    verdicts = json.loads((tmp_path / "selftest" / "verdicts.json").read_text())
    assert verdicts["seeds"] == [0, 1] and verdicts["verdicts"][0]["claim"] == "positive_mean"
    assert verdicts["provenance"] and verdicts["verdicts"][1]["kind"] == "check"


def test_seed_start_selects_other_seeds(tmp_path):
    assert _run(tmp_path, seeds=1, seed_start=5) == 0
    assert [p.name for p in (tmp_path / "selftest").glob("seed-*.json")] == ["seed-5.json"]


def test_resume_skips_finished_units(tmp_path):
    assert _run(tmp_path) == 0
    path = tmp_path / "selftest" / "seed-0.json"
    rec = json.loads(path.read_text())
    rec["metrics"].append(MARK)
    path.write_text(json.dumps(rec))
    assert _run(tmp_path, seeds=3, resume=True) == 0
    assert _metrics(tmp_path, 0)["marker"] == MARK  # not recomputed
    assert (tmp_path / "selftest" / "seed-2.json").exists()
    # without --resume everything is recomputed
    assert _run(tmp_path) == 0
    assert "marker" not in _metrics(tmp_path, 0)


def test_resume_reruns_stale_units(tmp_path, monkeypatch):
    """A unit from older code, another config or without provenance is never reused."""
    from optzoo.repro import runner

    assert _run(tmp_path) == 0
    path = tmp_path / "selftest" / "seed-0.json"
    rec = json.loads(path.read_text())
    prov = rec["provenance"]
    assert prov["code_files"] and "repro/_selftest.py" in prov["code_files"]
    assert set(prov) >= {"commit", "dirty", "config_hash", "code_hash"}
    assert runner.stale_reason(rec, MOD, "smoke") is None

    def marked(**changes):
        r = json.loads(json.dumps(rec))
        r["metrics"].append(MARK)
        for key, value in changes.items():
            r["provenance"][key] = value
        return r

    # 1. a source file it used has changed since
    files = dict(prov["code_files"], **{"repro/_selftest.py": "0" * 16})
    path.write_text(json.dumps(marked(code_files=files)))
    assert runner.stale_reason(json.loads(path.read_text()), MOD, "smoke").startswith("code changed")
    assert _run(tmp_path, resume=True) == 0
    assert "marker" not in _metrics(tmp_path, 0)
    # 2. another config under the same scale name
    path.write_text(json.dumps(marked(config_hash="deadbeef")))
    assert _run(tmp_path, resume=True) == 0
    assert "marker" not in _metrics(tmp_path, 0)
    # 3. written by a version that recorded no provenance
    old = marked()
    del old["provenance"]
    path.write_text(json.dumps(old))
    assert _run(tmp_path, resume=True) == 0
    assert "marker" not in _metrics(tmp_path, 0)
    # the number of seeds is not part of a unit's config
    assert runner.config_hash(__import__(MOD, fromlist=["SCALES"]).SCALES["smoke"]) == prov["config_hash"]


def test_report_existing_judges_without_running(tmp_path):
    from optzoo.repro.pipeline import report_existing

    assert _run(tmp_path) == 0
    (tmp_path / "report.md").unlink()
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "selftest").glob("seed-*.json")}
    console = Console(file=open(os.devnull, "w"))
    assert report_existing(["selftest"], scale="smoke", out=tmp_path, console=console,
                           modules={"selftest": MOD}) == 0
    assert "positive_mean" in (tmp_path / "report.md").read_text()
    assert before == {p: p.stat().st_mtime_ns for p in (tmp_path / "selftest").glob("seed-*.json")}
    # nothing finished at this scale: reported, a non-zero exit, and docs left alone (an
    # empty run must not replace a paper's recorded Results block or its figures)
    docs = tmp_path / "docs"
    (docs / "papers").mkdir(parents=True)
    page = docs / "papers" / "selftest.md"
    page.write_text("<!-- optzoo:results:begin -->\nrecorded\n<!-- optzoo:results:end -->\n")
    assert report_existing(["selftest"], scale="quick", out=tmp_path, console=console,
                           modules={"selftest": MOD}, write_docs=True, docs_dir=docs) == 1
    assert "recorded" in page.read_text() and not (docs / "RESULTS.md").exists()


def test_default_seeds_come_from_scales(tmp_path):
    assert _run(tmp_path, seeds=None) == 0
    assert sorted(p.name for p in (tmp_path / "selftest").glob("seed-*.json")) == [
        f"seed-{s}.json" for s in range(5)]  # _selftest's SCALES["smoke"].seeds


def test_resume_ignores_other_scale(tmp_path):
    assert _run(tmp_path, seeds=1) == 0
    assert _run(tmp_path, scale="quick", seeds=1, resume=True) == 0
    assert json.loads((tmp_path / "selftest" / "seed-0.json").read_text())["scale"] == "quick"


def test_crashing_unit_is_reported_and_others_finish(tmp_path):
    assert _run(tmp_path, scale="crash", seeds=3) == 1
    assert (tmp_path / "selftest" / "seed-0.json").exists()
    assert (tmp_path / "selftest" / "seed-2.json").exists()
    err = json.loads((tmp_path / "selftest" / "seed-1.error.json").read_text())
    assert "deliberate crash for seed 1" in err["traceback"]
    md = (tmp_path / "report.md").read_text()
    assert "seed 1 crashed" in md and "deliberate crash" in md


def test_ray_backend_matches_local(tmp_path):
    pytest.importorskip("ray")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    local, remote = tmp_path / "local", tmp_path / "ray"
    assert _run(local) == 0
    assert _run(remote, backend="ray") == 0
    for s in (0, 1):
        assert _metrics(local, s) == _metrics(remote, s)


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_interrupt_keeps_finished_units(tmp_path, signame):
    """SIGINT (Ctrl-C) or SIGTERM (kill) to the driver mid-run: exit 130, finished unit intact,
    nothing half-written, the running unit stopped."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "drive.py"
    script.write_text(
        "import signal, sys\nfrom pathlib import Path\nfrom optzoo.repro.pipeline import reproduce\n"
        "if __name__ == '__main__':\n"
        # A background job of a non-interactive shell (as CI may be) starts with SIGINT
        # ignored, and Python then leaves it ignored: give the driver a terminal's Ctrl-C.
        "    signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        f"    sys.exit(reproduce(['selftest'], scale='slow', seeds=2, jobs=2, out=Path(sys.argv[1]),"
        f" modules={{'selftest': '{MOD}'}}))\n"
    )
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(script), str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    done = out / "selftest" / "seed-0.json"
    deadline = time.time() + 90
    while not done.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert done.exists(), proc.stderr.read().decode() if proc.poll() is not None else "seed 0 not finished"
    proc.send_signal(getattr(signal, signame))
    try:
        rc = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"driver did not stop after {signame}: " + proc.stderr.read().decode()[-3000:]) from None
    assert rc == 130, proc.stderr.read().decode()[-3000:]
    assert json.loads(done.read_text())["status"] == "ok"
    assert not (out / "selftest" / "seed-1.json").exists()
    assert not list((out / "selftest").glob(".*.tmp"))
    assert "not run: interrupted" in (out / "report.md").read_text()
    deadline = time.time() + 20  # no process of the run is left (seed 1's sleeps for 120 s)
    while time.time() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"a unit process outlived the driver after {signame}")


def test_max_threads_caps_a_units_threads(monkeypatch):
    """A reproduction judged on CPU time declares MAX_THREADS = 1: its units get one thread
    even when --jobs 1 leaves the other cores free."""
    import optzoo.repro._selftest as selftest
    from optzoo.coarsening import repro as coarsening_repro
    from optzoo.repro.runner import _unit_threads

    unit = Unit("selftest", MOD, 0)
    assert _unit_threads(unit, 2) == 2  # no declaration: the runner's share of the cores
    monkeypatch.setattr(selftest, "MAX_THREADS", 1, raising=False)
    assert _unit_threads(unit, 2) == 1 and _unit_threads(unit, 1) == 1
    assert coarsening_repro.MAX_THREADS == 1
    assert _unit_threads(Unit("coarsening", "optzoo.coarsening.repro", 0), 2) == 1
