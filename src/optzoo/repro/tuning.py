"""One tuning protocol for every reproduction: a grid, a score, tuning seeds, one rule.

A room that tunes a knob (a learning rate, a ratio, a regularisation weight) calls
:func:`select` once per (arm, knob, context) and gets a :class:`Choice`: the chosen grid
point, the score of every grid point (aggregated over the tuning seeds, and per seed when the
room has them), the tuning seeds and stream, the budget spent (score evaluations, and the
per-evaluation budget when the room states it), the direction, the tie rule, and whether the
choice sits at an end of the grid (:attr:`Choice.at_edge`, warned as :class:`GridEdgeWarning`).

The rule, written once:

* every grid point is scored on every tuning seed (``score(value, seed)``), or the room hands
  over the scores it computed in one batch (an array, one row per grid point);
* the per-seed scores are aggregated per grid point (the mean by default);
* a non-finite aggregated score (a diverged run: NaN or +-inf) loses to every finite one; when
  every grid point is non-finite :func:`select` raises, unless the room asks for the grid's
  first point (``if_all_nonfinite="first"``, then :attr:`Choice.fallback` is set);
* the best score by ``direction`` wins; ties (exactly equal aggregated scores) go by
  ``tie_break``: ``"first"`` / ``"last"`` in grid order, ``"smaller"`` / ``"larger"`` grid value.

A choice travels in the unit's records like every measurement (:meth:`Choice.to_records`,
``part="tuning"``) and is read back with :func:`choices_from_records`; choices tuned once
offline and frozen are stored in ``docs/tuning/*.json`` under a ``"choices"`` key
(:func:`save_choices`, :func:`load_choice`). :func:`tuning_table` puts the choices of a paper's
units in one table (per arm: grid, seeds, budget, chosen values, edge flags) so that equal
budgets can be checked at a glance; :func:`render_markdown` prints it.

>>> c = select((1e-3, 1e-2, 1e-1), lambda lr, seed: (lr - 1e-2) ** 2, stream="tune",
...            seeds=(0, 1), arm="sgd", knob="lr")
>>> c.value, c.index, c.at_edge, c.evaluations
(0.01, 1, False, 6)
"""

from __future__ import annotations

import json
import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from optzoo._core.validation import fail
from optzoo.repro.evidence import Record

__all__ = ["PART", "TABLE_HEAD", "Choice", "GridEdgeWarning", "TuningFallbackWarning",
           "choices_from_records", "flagged", "load_choice", "load_choices", "render_markdown",
           "row_cells", "save_choices", "select", "tuning_table"]

#: The ``part`` of every tuning record (no claim's evidence reads it).
PART = "tuning"
_DIRECTIONS = ("min", "max")
_TIES = ("first", "last", "smaller", "larger")
_AGGREGATES = ("mean", "median", "max", "min")
_OWNER = "select"


class GridEdgeWarning(UserWarning):
    """The chosen value is the first or last point of a grid of two or more points: the best
    value may lie outside the grid."""


class TuningFallbackWarning(UserWarning):
    """Every grid point scored non-finite and the room asked for the grid's first point."""


def _plain(v: Any) -> Any:
    """A grid point as a JSON-friendly Python value (numpy scalars to Python, tuples kept)."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return tuple(_plain(x) for x in v)
    return v


def _from_json(v: Any) -> Any:
    return tuple(_from_json(x) for x in v) if isinstance(v, list) else v


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _label(v: Any) -> str:
    if _is_number(v):
        return f"{v:g}"
    if isinstance(v, tuple):
        return "(" + ", ".join(_label(x) for x in v) + ")"
    return str(v)


@dataclass(frozen=True)
class Choice:
    """One tuned knob of one arm: what was tried, how it scored, what was chosen.

    ``scores[i]`` is grid point ``grid[i]``'s score aggregated over ``seeds``;
    ``seed_scores[i][j]`` its score on seed ``seeds[j]`` when the room has per-seed scores.
    ``context`` says where the choice applies when an arm tunes the same knob several times in
    one unit (a regime, a data set, a problem); ``evaluations`` counts score evaluations (grid
    points x tuning seeds) and ``eval_budget`` is the budget of one evaluation in
    ``budget_unit`` (steps, epochs, samples) when the room states it. ``frozen`` names the file
    a choice frozen offline was loaded from (``""``: tuned in the unit).
    """

    arm: str
    knob: str
    grid: tuple
    value: Any
    scores: tuple
    seeds: tuple = ()
    stream: str = "tune"
    context: str = ""
    direction: str = "min"
    tie_break: str = "first"
    aggregate: str = "mean"
    seed_scores: tuple | None = None
    evaluations: int = 0
    eval_budget: float | None = None
    budget_unit: str = ""
    fallback: bool = False
    frozen: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        grid = tuple(_plain(g) for g in self.grid)
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "value", _plain(self.value))
        object.__setattr__(self, "scores", tuple(float(s) for s in self.scores))
        object.__setattr__(self, "seeds", tuple(_plain(s) for s in self.seeds))
        if self.seed_scores is not None:
            object.__setattr__(self, "seed_scores",
                               tuple(tuple(float(x) for x in row) for row in self.seed_scores))
        if len(self.scores) != len(grid):
            fail("scores", "Choice", f"one score per grid point ({len(grid)})", self.scores)
        if self.value not in grid:
            fail("value", "Choice", f"a point of the grid {grid!r}", self.value)

    @property
    def index(self) -> int:
        """Position of the chosen value in the grid."""
        return self.grid.index(self.value)

    @property
    def at_edge(self) -> bool:
        """The chosen value is the grid's first or last point (grids of two or more points).
        For a grid of tuples (several knobs tuned jointly) it is at an edge when any numeric
        coordinate that varies over the grid is at that coordinate's smallest or largest value."""
        if len(self.grid) < 2:
            return False
        v = self.value
        if isinstance(v, tuple) and all(isinstance(g, tuple) and len(g) == len(v) for g in self.grid):
            for k, x in enumerate(v):
                col = [g[k] for g in self.grid]
                if all(_is_number(c) for c in col) and len(set(col)) > 1 and x in (min(col), max(col)):
                    return True
            return False
        return self.index in (0, len(self.grid) - 1)

    @property
    def key(self) -> str:
        """``context:knob`` (or ``knob``): the instance of this choice's records."""
        return f"{self.context}:{self.knob}" if self.context else self.knob

    def to_dict(self) -> dict:
        d = asdict(self)
        d["meta"] = dict(self.meta)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Choice:
        kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        for k in ("grid", "seeds", "scores"):
            if k in kw:
                kw[k] = tuple(_from_json(x) for x in kw[k])
        if "value" in kw:
            kw["value"] = _from_json(kw["value"])
        if kw.get("seed_scores") is not None:
            kw["seed_scores"] = tuple(tuple(row) for row in kw["seed_scores"])
        return cls(**kw)

    def to_records(self) -> list[Record]:
        """The choice as records of ``part="tuning"`` and metrics prefixed ``tuning_`` (so that
        no claim's evidence, which selects by arm and metric, can read them by accident):
        instance ``key``; ``"tuning_chosen"`` (value: the chosen value if the grid is numbers,
        else its grid index; x: its grid index), ``"tuning_score"`` per grid point (x: the grid
        point if a number, else its index; finite scores only, so that the records stay valid
        JSON), ``"tuning_nonfinite"`` (how many grid points diverged), ``"tuning_budget"`` (score
        evaluations),
        ``"tuning_eval_budget"`` when stated, ``"tuning_at_edge"`` (0/1), and one
        ``"tuning_choice"`` record whose instance is the whole choice as JSON (what
        :func:`choices_from_records` reads back)."""
        i = self.index
        numeric = all(_is_number(g) for g in self.grid)
        out = [Record(PART, self.arm, self.key, "tuning_chosen", self.value if numeric else i, x=i)]
        out += [Record(PART, self.arm, self.key, "tuning_score", s, x=g if numeric else j)
                for j, (g, s) in enumerate(zip(self.grid, self.scores, strict=True)) if math.isfinite(s)]
        out.append(Record(PART, self.arm, self.key, "tuning_nonfinite",
                          sum(not math.isfinite(s) for s in self.scores)))
        out.append(Record(PART, self.arm, self.key, "tuning_budget", self.evaluations))
        if self.eval_budget is not None:
            out.append(Record(PART, self.arm, self.key, "tuning_eval_budget", self.eval_budget))
        out.append(Record(PART, self.arm, self.key, "tuning_at_edge", float(self.at_edge)))
        out.append(Record(PART, self.arm, json.dumps(self.to_dict(), sort_keys=True), "tuning_choice", i))
        return out


def choices_from_records(records: Iterable[Record]) -> list[Choice]:
    """The choices carried by one unit's records (their ``"choice"`` records), in order."""
    return [Choice.from_dict(json.loads(r.instance)) for r in records
            if r.part == PART and r.metric == "tuning_choice"]


def _aggregate(table: np.ndarray, how: str | Callable) -> np.ndarray:
    if callable(how):
        return np.asarray([float(how(row)) for row in table], dtype=float)
    if how == "mean":
        return np.asarray([float(np.mean(row)) for row in table], dtype=float)
    if how in _AGGREGATES:
        f = getattr(np, how)
        return np.asarray([float(f(row)) for row in table], dtype=float)
    fail("aggregate", _OWNER, "'mean', 'median', 'max', 'min' or a callable", how)


def _pick(grid: tuple, agg: np.ndarray, direction: str, tie_break: str) -> int:
    finite = np.isfinite(agg)
    vals = np.where(finite, agg, np.inf if direction == "min" else -np.inf)
    best = vals[finite].min() if direction == "min" else vals[finite].max()
    tied = [i for i in range(len(grid)) if finite[i] and vals[i] == best]
    if tie_break == "first":
        return tied[0]
    if tie_break == "last":
        return tied[-1]
    order = sorted(tied, key=lambda i: grid[i])
    return order[0] if tie_break == "smaller" else order[-1]


def select(grid: Sequence, score: Callable[[Any, Any], float] | Sequence | np.ndarray, *,
           stream: str, seeds: Sequence = (), tie_break: str = "first", direction: str = "min",
           arm: str, knob: str, context: str = "", aggregate: str | Callable = "mean",
           if_all_nonfinite: str = "raise", eval_budget: float | None = None,
           budget_unit: str = "", warn: bool = True, meta: Mapping[str, Any] | None = None) -> Choice:
    """Choose ``knob`` of ``arm`` from ``grid`` on the tuning ``stream`` of ``seeds``.

    ``score`` is either a callable ``score(value, seed) -> float``, called for every grid
    point (outer loop, in grid order) and every seed (inner loop, in ``seeds`` order; with no
    seeds, once per point with ``seed=None``), or the scores a room computed in one batch: an
    array of shape ``(len(grid),)`` (already aggregated) or ``(len(grid), len(seeds))``.
    Scores are aggregated per grid point (``aggregate``: ``"mean"``, ``"median"``, ``"max"``,
    ``"min"`` (a worst case over the seeds) or a callable of one row); the best by ``direction`` (``"min"`` / ``"max"``) wins, non-finite scores lose,
    exact ties go by ``tie_break`` (``"first"`` / ``"last"`` in grid order, ``"smaller"`` /
    ``"larger"`` value). When every point is non-finite: ``if_all_nonfinite="raise"`` raises,
    ``"first"`` chooses ``grid[0]`` (flagged). A choice at a grid end warns
    (:class:`GridEdgeWarning`) unless ``warn=False``; it is flagged in the choice either way.
    """
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence):
        fail("grid", _OWNER, "a non-empty sequence of grid points", grid, exc=TypeError)
    grid = tuple(_plain(g) for g in grid)
    if not grid:
        fail("grid", _OWNER, "a non-empty sequence of grid points", grid)
    if len(set(grid)) != len(grid):
        fail("grid", _OWNER, "a sequence of distinct grid points", grid)
    if direction not in _DIRECTIONS:
        fail("direction", _OWNER, "'min' or 'max'", direction)
    if tie_break not in _TIES:
        fail("tie_break", _OWNER, "one of 'first', 'last', 'smaller', 'larger'", tie_break)
    if not callable(aggregate) and aggregate not in _AGGREGATES:
        fail("aggregate", _OWNER, "'mean', 'median', 'max', 'min' or a callable", aggregate)
    if if_all_nonfinite not in ("raise", "first"):
        fail("if_all_nonfinite", _OWNER, "'raise' or 'first'", if_all_nonfinite)
    for name, v in (("stream", stream), ("arm", arm), ("knob", knob), ("context", context)):
        if not isinstance(v, str):
            fail(name, _OWNER, "a str", v, exc=TypeError)
    if not arm:
        fail("arm", _OWNER, "a non-empty str", arm)
    if not knob:
        fail("knob", _OWNER, "a non-empty str", knob)
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence):
        fail("seeds", _OWNER, "a sequence of tuning seeds", seeds, exc=TypeError)
    seeds = tuple(_plain(s) for s in seeds)
    if eval_budget is not None and (not _is_number(eval_budget) or not eval_budget >= 0):
        fail("eval_budget", _OWNER, "a non-negative number or None", eval_budget)
    if tie_break in ("smaller", "larger"):
        try:
            sorted(grid)
        except TypeError:
            fail("tie_break", _OWNER, f"'first' or 'last' for a grid without an order ({grid!r})",
                 tie_break)

    n_seeds = max(len(seeds), 1)
    seed_scores = None
    if callable(score):
        table = np.asarray([[float(score(g, s)) for s in (seeds or (None,))] for g in grid], dtype=float)
        seed_scores = table if seeds else None
        agg = _aggregate(table, aggregate) if seeds else table[:, 0]
    else:
        table = np.asarray(score, dtype=float)
        if table.shape == (len(grid),):
            agg = table
        elif seeds and table.shape == (len(grid), len(seeds)):
            seed_scores, agg = table, _aggregate(table, aggregate)
        else:
            fail("score", _OWNER, f"a callable or scores of shape ({len(grid)},)"
                 + (f" or ({len(grid)}, {len(seeds)})" if seeds else ""), table.shape)

    fallback = not np.isfinite(agg).any()
    if fallback:
        if if_all_nonfinite == "raise":
            raise ValueError(f"select: every grid point of knob {knob!r} of arm {arm!r}"
                             + (f" ({context})" if context else "")
                             + f" scored non-finite on stream {stream!r}: {agg.tolist()!r}.")
        i = 0
        warnings.warn(f"every grid point of {knob!r} of arm {arm!r}"
                      + (f" ({context})" if context else "")
                      + f" scored non-finite; the grid's first point {_label(grid[0])} is used.",
                      TuningFallbackWarning, stacklevel=2)
    else:
        i = _pick(grid, agg, direction, tie_break)
    choice = Choice(arm=arm, knob=knob, grid=grid, value=grid[i], scores=tuple(agg.tolist()), seeds=seeds,
                    stream=stream, context=context, direction=direction, tie_break=tie_break,
                    aggregate=aggregate if isinstance(aggregate, str) else getattr(aggregate, "__name__", "custom"),
                    seed_scores=None if seed_scores is None else tuple(map(tuple, seed_scores.tolist())),
                    evaluations=len(grid) * n_seeds, eval_budget=eval_budget, budget_unit=budget_unit,
                    fallback=bool(fallback), meta=dict(meta or {}))
    if warn and choice.at_edge and not fallback:
        warnings.warn(f"{knob!r} of arm {arm!r}" + (f" ({context})" if context else "")
                      + f" chose {_label(choice.value)}, an end of its grid "
                      f"{[_label(g) for g in grid]}.", GridEdgeWarning, stacklevel=2)
    return choice


# ---------------------------------------------------------------- frozen choices

def save_choices(path: str | Path, choices: Sequence[Choice], **extra: Any) -> Path:
    """Write ``choices`` under the ``"choices"`` key of the JSON file ``path``, keeping every
    other key already in the file (a room's own records of the tuning run) and adding
    ``extra``."""
    path = Path(path)
    doc = json.loads(path.read_text()) if path.exists() else {}
    doc.update(extra)
    doc["choices"] = [{k: v for k, v in c.to_dict().items() if k != "frozen"} for c in choices]
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def load_choices(path: str | Path) -> list[Choice]:
    """Every choice frozen in ``path`` (``frozen`` set to the file's name)."""
    path = Path(path)
    doc = json.loads(path.read_text())
    if "choices" not in doc:
        raise ValueError(f"{path} holds no frozen choices (no 'choices' key); write them with "
                         "optzoo.repro.tuning.save_choices.")
    return [Choice.from_dict({**c, "frozen": path.name}) for c in doc["choices"]]


def load_choice(path: str | Path, arm: str, knob: str, context: str = "") -> Choice:
    """The one choice of (``arm``, ``knob``, ``context``) frozen in ``path``."""
    hits = [c for c in load_choices(path) if (c.arm, c.knob, c.context) == (arm, knob, context)]
    if len(hits) != 1:
        raise KeyError(f"{Path(path).name} holds {len(hits)} frozen choices for arm {arm!r}, knob "
                       f"{knob!r}" + (f", context {context!r}" if context else "") + " (expected 1).")
    return hits[0]


# ---------------------------------------------------------------- the table

def tuning_table(records_per_seed: Sequence[Sequence[Record]]) -> list[dict]:
    """One row per (context, knob, arm) over a paper's units (one list of records per seed):
    ``grid`` (labels; ``"varies"`` if seeds differ), ``grid_size``, ``tuning_seeds`` (the
    union, or ``"per unit"`` counts), ``stream``, ``budget`` (score evaluations per unit, and
    the per-evaluation budget), ``chosen`` (value -> number of units), ``at_edge`` (units whose
    choice is at a grid end), ``fallback`` (units where every point diverged), ``frozen`` (the
    file of a frozen choice), ``shared``: whether every arm of the same (context, knob) had the
    same tuning budget (False is flagged), and ``shared_grid``: the same grid too (an arm may
    search its own space at the same budget, e.g. a constrained pair of rates)."""
    groups: dict[tuple, list[Choice]] = {}
    for seed in records_per_seed:
        for c in choices_from_records(seed):
            groups.setdefault((c.context, c.knob, c.arm), []).append(c)
    rows = []
    for (context, knob, arm), cs in groups.items():
        grids = {c.grid for c in cs}
        budgets = {(c.evaluations, c.eval_budget, c.budget_unit) for c in cs}
        chosen: dict[str, int] = {}
        for c in cs:
            chosen[_label(c.value)] = chosen.get(_label(c.value), 0) + 1
        seeds = sorted({s for c in cs for s in c.seeds}, key=str)
        ev, eb, unit = next(iter(budgets))
        rows.append({
            "context": context, "knob": knob, "arm": arm, "units": len(cs),
            "grid": [_label(g) for g in cs[0].grid] if len(grids) == 1 else "varies",
            "grid_size": len(cs[0].grid) if len({len(g) for g in grids}) == 1 else "varies",
            "tuning_seeds": seeds, "stream": sorted({c.stream for c in cs}),
            "rule": sorted({f"{c.aggregate} {c.direction}, ties {c.tie_break}" for c in cs}),
            "budget": (f"{ev} x {eb:g} {unit}".strip() if eb is not None else f"{ev}")
            if len(budgets) == 1 else "varies",
            "chosen": chosen, "at_edge": sum(c.at_edge for c in cs),
            "fallback": sum(c.fallback for c in cs),
            "frozen": sorted({c.frozen for c in cs if c.frozen}),
            "_sig": (tuple(grids), tuple(budgets)),
        })
    grids_of: dict[tuple, set] = {}
    budgets_of: dict[tuple, set] = {}
    for r in rows:
        grids_of.setdefault((r["context"], r["knob"]), set()).add(r["_sig"][0])
        budgets_of.setdefault((r["context"], r["knob"]), set()).add(r["_sig"][1])
    for r in rows:
        r["shared_grid"] = len(grids_of[(r["context"], r["knob"])]) == 1
        r["shared"] = len(budgets_of[(r["context"], r["knob"])]) == 1
        del r["_sig"]
    return rows


TABLE_HEAD = ("context", "arm", "knob", "grid", "tuning seeds, stream", "budget / unit", "chosen (units)",
              "flags")


def row_cells(r: Mapping[str, Any]) -> list[str]:
    """One row of :func:`tuning_table` as the cells of :data:`TABLE_HEAD`; a choice at a grid
    end, a budget not every arm shares, a grid of one point and an all-diverged fallback are
    flagged in the last cell, an arm's own grid at the same budget noted ("-" when none)."""
    flags = []
    if r["at_edge"]:
        flags.append(f"grid end in {r['at_edge']}/{r['units']}")
    if not r["shared"]:
        flags.append("budget not shared by every arm")
    elif not r.get("shared_grid", True):
        flags.append("own grid, same budget")
    if r["grid_size"] == 1:
        flags.append("one-point grid")
    if r["fallback"]:
        flags.append(f"all diverged in {r['fallback']}/{r['units']}")
    if r["frozen"]:
        flags.append("frozen: " + ", ".join(r["frozen"]))
    points = r["grid"]
    if isinstance(points, str):
        grid = points
    elif len(points) > 6:  # long grids (joint grids of several knobs) in brief
        grid = "{" + ", ".join(points[:2]) + ", ..., " + points[-1] + f"}} ({len(points)} points)"
    else:
        grid = "{" + ", ".join(points) + "}"
    seeds = (", ".join(map(str, r["tuning_seeds"])) or "the unit's own") + " on " + "/".join(r["stream"])
    chosen = ", ".join(f"{k} ({n})" for k, n in r["chosen"].items())
    return [r["context"] or "-", r["arm"], r["knob"], grid, seeds, str(r["budget"]), chosen,
            "; ".join(flags) or "-"]


def flagged(rows: Sequence[Mapping[str, Any]]) -> int:
    """How many rows carry a warning flag (a grid end, a budget not every arm shares, all
    diverged)."""
    return sum(bool(r["at_edge"] or not r["shared"] or r["fallback"]) for r in rows)


def render_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The tuning table as Markdown (:func:`row_cells`)."""
    if not rows:
        return "No tuned knobs.\n"
    lines = ["| " + " | ".join(TABLE_HEAD) + " |", "|" + "---|" * len(TABLE_HEAD)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row_cells(r)) + " |" for r in rows]
    return "\n".join(lines) + "\n"
