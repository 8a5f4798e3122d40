"""The one tuning protocol: selection rule, ties, direction, edges, divergence, records, frozen files."""

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest

from optzoo.repro.evidence import Record, Value, as_records
from optzoo.repro.tuning import (
    PART,
    Choice,
    GridEdgeWarning,
    TuningFallbackWarning,
    choices_from_records,
    flagged,
    load_choice,
    load_choices,
    render_markdown,
    save_choices,
    select,
    tuning_table,
)

GRID = (1e-3, 1e-2, 1e-1, 1.0)


def quad(lr, seed):  # closed form: minimum at 0.1 whatever the seed, seed shifts all points alike
    return (np.log10(lr) + 1.0) ** 2 + seed


def test_closed_form_min_and_budget():
    c = select(GRID, quad, stream="tune", seeds=(0, 1, 2), arm="sgd", knob="lr")
    assert c.value == 0.1 and c.index == 2 and not c.at_edge
    assert c.scores == pytest.approx([4 + 1, 1 + 1, 0 + 1, 1 + 1])  # mean of seeds 0, 1, 2 adds 1
    assert c.seed_scores[2] == (0.0, 1.0, 2.0)
    assert c.evaluations == 12 and c.seeds == (0, 1, 2) and c.stream == "tune"


def test_call_order_is_grid_outer_seed_inner():
    calls = []
    select((1, 2), lambda v, s: calls.append((v, s)) or 0.0, stream="t", seeds=("a", "b"), arm="x",
           knob="k", warn=False)
    assert calls == [(1, "a"), (1, "b"), (2, "a"), (2, "b")]


def test_no_seeds_calls_once_with_none():
    c = select((1, 2, 3), lambda v, s: abs(v - 2) + (s is None), stream="t", arm="x", knob="k")
    assert c.value == 2 and c.evaluations == 3 and c.seed_scores is None


def test_direction_max():
    c = select(GRID, quad, stream="tune", seeds=(0,), arm="sgd", knob="lr", direction="max", warn=False)
    assert c.value == 1e-3 and c.at_edge


@pytest.mark.parametrize("rule,expected", [("first", 3.0), ("last", 1.0), ("smaller", 1.0), ("larger", 3.0)])
def test_ties(rule, expected):
    grid = (3.0, 2.0, 1.0)  # not sorted: first/last and smaller/larger differ
    c = select(grid, np.array([0.0, 1.0, 0.0]), stream="t", arm="a", knob="k", tie_break=rule, warn=False)
    assert c.value == expected and c.tie_break == rule


def test_precomputed_scores_per_seed_and_aggregated():
    table = np.array([[3.0, 1.0], [1.0, 1.0], [2.0, 2.0]])
    c = select((1, 2, 3), table, stream="t", seeds=(7, 8), arm="a", knob="k")
    assert c.value == 2 and c.scores == (2.0, 1.0, 2.0) and c.seed_scores[0] == (3.0, 1.0)
    c2 = select((1, 2, 3), np.array([2.0, 1.0, 2.0]), stream="t", seeds=(7, 8), arm="a", knob="k")
    assert c2.value == 2 and c2.seed_scores is None and c2.evaluations == 6
    c3 = select((1, 2, 3), table, stream="t", seeds=(7, 8), arm="a", knob="k", aggregate="median")
    assert c3.value == 2


def test_edge_warning():
    with pytest.warns(GridEdgeWarning, match="end of its grid"):
        c = select(GRID, lambda lr, s: lr, stream="tune", seeds=(0,), arm="sgd", knob="lr")
    assert c.at_edge and c.value == 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert select(GRID, lambda lr, s: lr, stream="tune", seeds=(0,), arm="sgd", knob="lr",
                      warn=False).at_edge
    # a one-point grid has no end to flag
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not select((0.1,), lambda lr, s: lr, stream="t", arm="a", knob="lr").at_edge


def test_nonfinite_loses_and_all_nonfinite():
    scores = np.array([np.nan, np.inf, -np.inf, 5.0])
    assert select(GRID, scores, stream="t", arm="a", knob="lr", warn=False).value == 1.0
    assert select(GRID, scores, stream="t", arm="a", knob="lr", direction="max", warn=False).value == 1.0
    # a seed that diverged makes the mean non-finite: the point loses
    c = select((1, 2), np.array([[0.0, np.inf], [1.0, 1.0]]), stream="t", seeds=(0, 1), arm="a", knob="k",
               warn=False)
    assert c.value == 2
    with pytest.raises(ValueError, match="scored non-finite"):
        select(GRID, np.full(4, np.nan), stream="t", arm="a", knob="lr")
    with pytest.warns(TuningFallbackWarning):
        c = select(GRID, np.full(4, np.inf), stream="t", arm="a", knob="lr", if_all_nonfinite="first")
    assert c.fallback and c.value == 1e-3


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(grid=()), ValueError, "The 'grid' argument of select must be a non-empty sequence"),
    (dict(grid=0.1), TypeError, "The 'grid' argument of select must be"),
    (dict(grid=(1, 1)), ValueError, "distinct grid points"),
    (dict(direction="best"), ValueError, "The 'direction' argument of select must be 'min' or 'max'. Got 'best'."),
    (dict(tie_break="random"), ValueError, "The 'tie_break' argument of select must be one of"),
    (dict(arm=""), ValueError, "The 'arm' argument of select must be a non-empty str"),
    (dict(seeds=3), TypeError, "The 'seeds' argument of select must be a sequence"),
    (dict(score=np.zeros(3)), ValueError, "The 'score' argument of select must be a callable or scores of shape"),
    (dict(aggregate="mode"), ValueError, "The 'aggregate' argument of select must be"),
    (dict(if_all_nonfinite="zero"), ValueError, "'if_all_nonfinite' argument"),
    (dict(grid=((1, 2), "a"), tie_break="smaller"), ValueError, "without an order"),
])
def test_error_messages(kwargs, exc, match):
    args = dict(grid=(1.0, 2.0), score=lambda v, s: v, stream="t", seeds=(0,), arm="a", knob="k", warn=False)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        select(args.pop("grid"), args.pop("score"), **args)


def _roundtrip(recs):
    return as_records(json.loads(json.dumps([dataclasses.asdict(r) for r in recs])))


def test_record_round_trip_and_evidence_isolation():
    a = select(GRID, quad, stream="tune", seeds=(0, 1), arm="sgd", knob="lr", context="regime=x",
               eval_budget=50, budget_unit="steps")
    b = select(((1e-2, 0.9), (1e-1, 0.5), (1.0, 0.0)), np.array([1.0, 0.0, np.nan]), stream="tune",
               arm="heavy_ball", knob="(lr, beta)")
    recs = _roundtrip(a.to_records() + b.to_records() + [Record("", "sgd", "p", "score", 1.0)])
    assert all(r.part == PART for r in recs[:-1])
    back = choices_from_records(recs)
    assert back[0] == a  # b has a NaN score (NaN != NaN): compare its JSON form
    assert json.dumps(back[1].to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)
    assert back[1].value == (1e-1, 0.5) and back[1].scores[2] != back[1].scores[2]  # NaN kept
    # non-finite scores stay out of the records' values (valid JSON), counted, and kept in the choice
    assert all(math.isfinite(r.value) for r in recs)
    assert [r.value for r in recs if r.metric == "tuning_nonfinite"] == [0, 1]
    json.dumps([dataclasses.asdict(r) for r in recs], allow_nan=False)
    chosen = [r for r in recs if r.metric == "tuning_chosen"]
    assert chosen[0].value == 0.1 and chosen[1].value == 1 and chosen[1].x == 1
    # a claim reading the room's own metric never sees a tuning record
    assert Value("score", "sgd").collect([recs]) == {"": [1.0]}


def test_frozen_choices(tmp_path):
    a = select(GRID, quad, stream="tune", seeds=(90000, 90001), arm="ctkv", knob="lr")
    b = select(GRID, lambda lr, s: -lr, stream="tune", seeds=(90000, 90001), arm="peft", knob="lr", warn=False)
    p = tmp_path / "room_quick.json"
    p.write_text(json.dumps({"scale": "quick", "rows": [1, 2]}))
    save_choices(p, [a, b])
    doc = json.loads(p.read_text())
    assert doc["scale"] == "quick" and doc["rows"] == [1, 2]  # the room's own keys are kept
    got = load_choice(p, "ctkv", "lr")
    assert got == dataclasses.replace(a, frozen="room_quick.json") and got.value == 0.1
    assert [c.arm for c in load_choices(p)] == ["ctkv", "peft"]
    with pytest.raises(KeyError, match="0 frozen choices"):
        load_choice(p, "ttt", "lr")
    q = tmp_path / "none.json"
    q.write_text("{}")
    with pytest.raises(ValueError, match="no frozen choices"):
        load_choices(q)


def test_choice_validation():
    with pytest.raises(ValueError, match="one score per grid point"):
        Choice(arm="a", knob="k", grid=(1, 2), value=1, scores=(0.0,))
    with pytest.raises(ValueError, match="a point of the grid"):
        Choice(arm="a", knob="k", grid=(1, 2), value=3, scores=(0.0, 1.0))


def test_tuning_table_flags():
    def unit(seed, grid_b=GRID):
        m = select(GRID, lambda lr, s: abs(np.log10(lr) + 2), stream="tune", seeds=(seed,), arm="method",
                   knob="lr", context="A")
        b = select(grid_b, lambda lr, s: lr, stream="tune", seeds=(seed,), arm="baseline", knob="lr",
                   context="A", warn=False)
        return m.to_records() + b.to_records()

    rows = tuning_table([unit(0), unit(1)])
    assert [(r["arm"], r["chosen"], r["at_edge"], r["shared"]) for r in rows] == [
        ("method", {"0.01": 2}, 0, True), ("baseline", {"0.001": 2}, 2, True)]
    assert rows[0]["tuning_seeds"] == [0, 1] and rows[0]["budget"] == "4" and rows[0]["grid_size"] == 4
    rows = tuning_table([unit(0, grid_b=(1e-3, 1e-2))])
    assert not rows[0]["shared"] and not rows[1]["shared"]
    md = render_markdown(rows)
    assert "grid end in 1/1" in md and "budget not shared by every arm" in md and md.count("\n") == 4
    # an arm searching its own grid at the same budget is noted, not flagged
    rows = tuning_table([unit(0, grid_b=tuple(10 * g for g in GRID))])
    assert all(r["shared"] for r in rows) and not rows[1]["shared_grid"]
    assert "own grid, same budget" in render_markdown(rows) and flagged(rows) == 1  # the grid end
    one = select((0.1,), lambda lr, s: lr, stream="t", arm="a", knob="lr").to_records()
    assert "one-point grid" in render_markdown(tuning_table([one]))
    assert render_markdown([]) == "No tuned knobs.\n"


def test_edge_of_a_joint_grid_is_per_coordinate():
    grid = ((0.1, 0.0), (0.1, 0.9), (1.0, 0.5), (10.0, 0.5), (1.0, 0.9))
    inner = select(grid, np.array([1.0, 1.0, 0.0, 1.0, 1.0]), stream="t", arm="a", knob="(lr, beta)")
    assert inner.value == (1.0, 0.5) and not inner.at_edge
    with pytest.warns(GridEdgeWarning):  # last in order but lr = 1 is inside; beta = 0.9 is its largest
        assert select(grid, np.array([1.0, 1.0, 1.0, 1.0, 0.0]), stream="t", arm="a", knob="k").at_edge
    labelled = (("sgd", 0.1), ("sgd", 1.0), ("sgd", 10.0))
    assert not select(labelled, np.array([1.0, 0.0, 1.0]), stream="t", arm="a", knob="k").at_edge
