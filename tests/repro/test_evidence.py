"""Records, declared evidence and controls: a tautological claim is flagged by its control, a
sound claim survives it, and one claim's bad evidence never takes the others with it."""

import math

import numpy as np
import pytest

from optzoo.repro import _selftest_records as room
from optzoo.repro.claim import Claim, NullProgress, PaperRun
from optzoo.repro.evidence import (
    Control,
    Custom,
    Paired,
    Record,
    Slope,
    Universal,
    Value,
    as_records,
)
from optzoo.repro.judging import check_claims, headline_status, judge, judge_claims
from optzoo.repro.report import paper_summary, write_markdown

CTL = Control({"m": "m0"}, removes="the mechanism", credits="abstract: 'the mechanism helps'")


def _room(seeds=6):
    cfg = room.SCALES["smoke"]
    return [room.run(cfg, s, NullProgress()) for s in range(seeds)]


def test_a_tautological_claim_is_flagged_by_its_control_and_a_sound_one_survives():
    check_claims(room.CLAIMS)
    vs = {v.claim: v for v in judge_claims(room.CLAIMS, _room(), scale="smoke")}
    sound, taut = vs["drift_raises_mean"], vs["sample_mean_is_mean"]
    assert sound.verdict == "reproduced" and sound.control.verdict != "reproduced"
    assert sound.status == "reproduced" and "the drift" in sound.control_removes
    assert taut.verdict == "reproduced" and taut.control.verdict == "reproduced"
    assert taut.status == "cannot fail"
    assert vs["draws_finite"].verdict == "passed" and vs["draws_finite"].control is None
    run = PaperRun("selftest", "smoke", list(range(6)), [], list(vs.values()),
                   headline=("drift_raises_mean",))
    text = paper_summary(run)
    assert text.startswith("1/2 claims reproduced, 1 reproduced but cannot fail under its control")
    assert "headline: reproduced" in text


def test_records_round_trip_through_json_form():
    rec = Record("p", "a", "i", "m", 1, x=2)
    assert rec.value == 1.0 and rec.x == 2.0
    assert as_records([{"part": "p", "arm": "a", "instance": "i", "metric": "m", "value": 1.0,
                        "x": 2.0, "exact": False}]) == [rec]
    with pytest.raises(TypeError, match="'arm' argument of Record must be a str"):
        Record("p", 3, "i", "m", 1.0)


def _seeds(rows_per_seed):
    return [[Record(*r) for r in rows] for rows in rows_per_seed]


def test_paired_aggregates_instances_within_a_seed_and_pairs_by_instance():
    per_seed = _seeds([[("", "m", "g1", "y", 2.0), ("", "m", "g2", "y", 4.0),
                        ("", "b", "g1", "y", 1.0), ("", "b", "g2", "y", 1.0)]] * 3)
    ev = Paired("y", "m", "b").collect(per_seed)
    assert ev == {"": [2.0, 2.0, 2.0]}
    ev = Paired("y", "m", "b", transform="logratio").collect(per_seed)
    assert ev[""][0] == pytest.approx((math.log(2) + math.log(4)) / 2)
    bad = _seeds([[("", "m", "g1", "y", 2.0), ("", "b", "g2", "y", 1.0)]])
    with pytest.raises(ValueError, match="different instances"):
        Paired("y", "m", "b").collect(bad)
    with pytest.raises(ValueError, match="No records"):
        Paired("y", "zz", "b").collect(per_seed)


def test_exact_instances_count_once_and_an_exact_tie_is_never_decided_by_seeds():
    claim = Claim("t", "s", "m", threshold=0.0, source="abstract", evidence=Paired("y", "m", "b"),
                  control=CTL)
    rows = []
    for s in range(5):
        rows.append([Record("named", "m", "K5", "y", 3.0, exact=True),
                     Record("named", "b", "K5", "y", 3.0, exact=True),
                     Record("random", "m", "g", "y", 1.0 + 0.3 * np.sin(s)),
                     Record("random", "b", "g", "y", 1.0)])
    ev = claim.evidence.collect(rows)
    assert ev["named"].deterministic and ev["named"].values == (0.0,)
    v = judge(claim, ev)
    assert v.verdict == "inconclusive" and v.tie and v.seeds_needed is None
    flags = Universal("y", "m").collect([[Record("", "m", "K5", "y", 1.0, exact=True)]] * 4)
    assert flags == {"": [True]}


def test_slope_over_a_swept_variable_and_a_diverged_instance_is_marked():
    per_seed = [[Record("", "m", f"n{n}", "c", 3.0 * n ** 2 * (1 + 0.01 * s), x=n) for n in (2, 4, 8)]
                for s in range(4)]
    ev = Slope("c", "m").collect(per_seed)
    assert np.allclose(ev[""], 2.0)
    per_seed[1][0] = Record("", "m", "n2", "c", float("nan"), x=2)
    claim = Claim("s", "s", "m", direction="equivalent", threshold=2.0, margin=0.1)
    v = judge(claim, Slope("c", "m").collect(per_seed))
    assert v.verdict == "inconclusive" and v.parts[0].nonfinite == 1 and v.seeds_needed is None
    assert "non-finite" in v.summary


def test_one_claims_bad_evidence_or_nan_does_not_take_the_others_with_it():
    good = Claim("good", "s", "m", threshold=0.0, kind="finding", evidence=Value("y", "m"))
    nan = Claim("nan", "s", "m", threshold=0.0, kind="finding", evidence=Value("z", "m"))
    broken = Claim("broken", "s", "m", threshold=0.0, kind="finding",
                   evidence=Custom(lambda ps, sub: 1 / 0, "divides by zero"))
    per_seed = [[Record("", "m", "i", "y", 1.0 + 0.1 * s),
                 Record("", "m", "i", "z", float("nan") if s == 2 else 1.0)] for s in range(5)]
    vs = {v.claim: v for v in judge_claims([good, nan, broken], per_seed)}
    assert vs["good"].verdict == "reproduced"
    assert vs["nan"].verdict == "inconclusive" and "non-finite" in vs["nan"].summary
    assert vs["broken"].verdict == "inconclusive" and "ZeroDivisionError" in vs["broken"].summary


def test_a_claim_measured_only_at_full_is_not_counted_at_quick():
    c = Claim("f", "s", "m", threshold=0.0, source="abstract", evidence=Value("y", "m"),
              control=Control({"m": "m0"}, removes="x", credits="abstract"), scales=("full",))
    v = judge_claims([c], [[Record("", "m", "i", "y", 1.0)]] * 3, scale="quick")[0]
    assert not v.measured and "measured only at full" in v.summary
    run = PaperRun("p", "quick", [0, 1, 2], [], [v], headline=("f",))
    assert paper_summary(run).startswith("no claims judged; 1 measured only at full; headline: untested")


def test_check_claims_enforces_the_contract():
    ev = Value("y", "m")
    with pytest.raises(ValueError, match="needs a 'control'"):
        check_claims([Claim("a", "s", "m", source="abstract", evidence=ev)])
    with pytest.raises(ValueError, match="must cite the paper"):
        check_claims([Claim("a", "s", "m", source="spec C2", evidence=ev, control=CTL)])
    with pytest.raises(ValueError, match="substitutes arms its evidence does not read"):
        check_claims([Claim("a", "s", "m", source="abstract", evidence=Value("y", "other"), control=CTL)])
    with pytest.raises(ValueError, match="declare its 'evidence'"):
        check_claims([Claim("a", "s", "m", kind="finding")])
    with pytest.raises(ValueError, match="unique"):
        check_claims([Claim("a", "s", "m", kind="finding", evidence=ev)] * 2)
    with pytest.raises(ValueError, match="'removes'"):
        Control({"m": "m0"}, removes="", credits="abstract")
    check_claims([Claim("a", "s", "m", source="spec", kind="finding", evidence=ev)])  # findings may


def test_headline_status():
    c = Claim("h", "s", "m", threshold=0.0, source="abstract", evidence=Value("y", "m"), control=CTL)

    def rows(m, m0):
        return [[Record("", "m", "i", "y", m + 0.1 * s), Record("", "m0", "i", "y", m0 + 0.1 * s)]
                for s in range(5)]

    assert headline_status(judge_claims([c], rows(1.0, -1.0)), ["h"]) == "reproduced"
    assert headline_status(judge_claims([c], rows(1.0, 1.0)), ["h"]) == "undecided"  # cannot fail
    assert headline_status(judge_claims([c], rows(-1.0, -1.0)), ["h"]) == "not reproduced"
    assert headline_status(judge_claims([c], rows(1.0, -1.0)), []) is None


def test_power_reflects_how_far_a_decided_verdict_is_from_its_threshold():
    c = Claim("p", "s", "m", threshold=0.0)
    strong = judge(c, [2.0, 2.1, 1.9, 2.05, 1.95])
    weak = judge(c, [0.6, 1.5, 0.7, 1.2, 0.5])
    assert strong.power > 0.99 and weak.verdict == "reproduced" and 0.3 < weak.power < 0.95
    assert judge(c, [0.2, -0.3, 0.5, -0.4, 0.1]).power is None  # undecided: no power shown


def test_report_shows_the_control_beside_each_claim(tmp_path):
    vs = judge_claims(room.CLAIMS, _room(), scale="smoke")
    run = PaperRun("selftest", "smoke", list(range(6)), [], vs, headline=("drift_raises_mean",))
    md = write_markdown([run], tmp_path / "r.md", {"scale": "smoke", "environment": {}}).read_text()
    claims = md.split("### Claims of the papers")[1].split("###")[0]
    assert "control (the credited mechanism removed)" in claims
    assert "| selftest | sample_mean_is_mean | **reproduced, but cannot fail under its control (not counted)** |" \
        in claims
    assert "removes the drift (drifted -> plain)" in md.split("## selftest")[1]
    assert "power at its own estimate" in claims


def test_report_shows_a_findings_control_in_the_papers_section(tmp_path):
    """A finding may carry a control (ipgrm's hacking: the injected drift removed); its verdict
    shows in the paper's section like a claim's (the cross-paper table keeps claims only)."""
    import dataclasses

    finding = dataclasses.replace(room.CLAIMS[0], id="drift_finding", kind="finding")
    vs = judge_claims([*room.CLAIMS, finding], _room(), scale="smoke")
    run = PaperRun("selftest", "smoke", list(range(6)), [], vs, headline=("drift_raises_mean",))
    md = write_markdown([run], tmp_path / "r.md", {"scale": "smoke", "environment": {}}).read_text()
    section = md.split("## selftest")[1].split("### Our findings")[1]
    assert "| id | statement | verdict | measured | control | rule |" in section
    row = next(line for line in section.splitlines() if line.startswith("| drift_finding"))
    assert "removes the drift (drifted -> plain)" in row
    checks = md.split("### Checks (not counted)")[-1]
    assert "| control |" not in checks                     # no control there: no column


def test_reproduce_runs_a_room_on_records_end_to_end(tmp_path):
    import json

    from rich.console import Console

    from optzoo.repro.pipeline import reproduce

    console = Console(file=open(tmp_path / "log.txt", "w"), width=200)  # noqa: SIM115
    mod = "optzoo.repro._selftest_records"
    assert reproduce(["selftest_records"], scale="smoke", seeds=3, jobs=1, out=tmp_path, console=console,
                     modules={"selftest_records": mod}) == 0
    saved = json.loads((tmp_path / "selftest_records" / "verdicts.json").read_text())
    by_id = {v["claim"]: v for v in saved["verdicts"]}
    assert by_id["sample_mean_is_mean"]["control"]["verdict"] == "reproduced"
    unit = json.loads((tmp_path / "selftest_records" / "seed-0.json").read_text())
    assert {"part", "arm", "instance", "metric", "value"} <= set(unit["metrics"][0])
    md = (tmp_path / "report.md").read_text()
    assert "cannot fail under its control" in md and (tmp_path / "selftest_records" / "figures" / "means.png").exists()


def test_html_opens_with_an_overview_of_claims_and_controls(tmp_path):
    from optzoo.repro.report import write_html

    vs = judge_claims(room.CLAIMS, _room(), scale="smoke")
    run = PaperRun("selftest", "smoke", list(range(6)), [], vs, headline=("drift_raises_mean",))
    page = write_html([run], tmp_path / "r.html", {"scale": "smoke", "environment": {}}).read_text()
    overview = page.split("<h2>Overview</h2>")[1].split("<h2>Summary</h2>")[0]
    # the sound headline claim: green, outlined, its control undecided; the tautology: grey, control R
    assert "class='c h'" in overview and "title='drift_raises_mean: reproduced; control inconclusive'" in overview
    assert "background:#8c959f'>R</a>" in overview and "<td>reproduced</td>" in overview
    # each cell leads to the paper's forest plot; findings and checks have their own columns
    assert "href='#selftest-forest'" in overview and "<th>our findings</th><th>checks (not counted)</th>" in overview


def test_power_of_values_equal_up_to_rounding_is_one_not_nan():
    c = Claim("x", "s", "m", direction="equivalent", threshold=-1.5, margin=0.25)
    assert judge(c, [-1.501 + 1e-16 * i for i in range(6)]).power == 1.0
    assert judge(Claim("y", "s", "m"), [50.0, 50.1, 49.9, 50.05, 49.95]).power == 1.0
