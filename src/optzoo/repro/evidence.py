"""Records and declared evidence: what a reproduction measures, and how a claim reads it.

A reproduction's ``run(config, seed, progress)`` returns a list of :class:`Record`: one
measured number each, with named fields (which part of a claim it belongs to, which arm
produced it, on which instance, which metric, and an optional swept variable ``x``). A
:class:`~optzoo.repro.claim.Claim` names its evidence with one of the helpers below, so the
pairing, the aggregation within a seed and the threshold are written once, and the harness
judges every claim the same way (:func:`optzoo.repro.judging.judge_claims`):

* :class:`Paired`: an arm against a baseline on one metric, paired per instance and seed
  (difference or log ratio), averaged over the instances of a part within each seed;
* :class:`Value`: one arm's metric, averaged over the instances of a part within each seed;
* :class:`Slope`: the least-squares slope of an arm's (log) metric against the (log) swept
  variable ``x`` over the instances of a part, per seed;
* :class:`Universal`: a statement per instance (value 1 held, 0 failed), judged by
  counterexample;
* :class:`Custom`: odd evidence computed by the room from the records (it still receives the
  arm substitution of a control, so a control works for it too).

A :class:`Control` is the same claim judged on other arms of the same units: the arm that
carries the paper's credited mechanism is replaced by one where that mechanism is removed
(``arms={"method": "method_ablated"}``). Every helper takes the substitution, so the harness
can judge the claim again on the control's evidence without the room writing anything twice.

Instances whose records say ``exact=True`` are the same in every seed (a named graph with a
deterministic method): a part made only of them is one exact value, counted once.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Control", "Custom", "Evidence", "Paired", "Record", "Slope", "Universal", "Value",
           "as_records", "records_of"]

Arms = Mapping[str, str]


@dataclass(frozen=True)
class Record:
    """One measured number of one seed.

    ``part``: the part of a claim it belongs to (a task, a dataset, a regime; ``""`` if the
    claim has one part). ``arm``: the method, baseline or control arm that produced it.
    ``instance``: which instance inside the seed (a graph, a cell of a grid). ``metric``: what
    was measured. ``x``: the swept variable, for :class:`Slope`. ``exact``: the value is the
    same in every seed (a deterministic instance), so it counts once.
    """

    part: str
    arm: str
    instance: str
    metric: str
    value: float
    x: float | None = None
    exact: bool = False

    def __post_init__(self) -> None:
        for name in ("part", "arm", "instance", "metric"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"The '{name}' argument of Record must be a str. "
                                f"Got {type(getattr(self, name)).__name__}.")
        object.__setattr__(self, "value", float(self.value))
        if self.x is not None:
            object.__setattr__(self, "x", float(self.x))


def as_records(rows: Sequence[Mapping[str, Any] | Record]) -> list[Record]:
    """Records from their JSON form (what a unit file holds) or records already."""
    out = []
    for r in rows:
        if isinstance(r, Record):
            out.append(r)
        elif isinstance(r, Mapping):
            out.append(Record(**{k: r[k] for k in r if k in Record.__dataclass_fields__}))
        else:
            raise TypeError(f"A record must be a Record or a mapping. Got {type(r).__name__}.")
    return out


def run_in_process(room, scale: str = "smoke", seeds: Sequence[int] | None = None) -> list[list[Record]]:
    """Run a room's units here, one per seed (default ``range(SCALES[scale].seeds)``), and
    return each seed's records as the pipeline stores and reads them (through their JSON
    form): what a room's tests judge."""
    import dataclasses
    import json

    from optzoo.repro.claim import NullProgress

    cfg = room.SCALES[scale]
    out = []
    for s in range(cfg.seeds) if seeds is None else seeds:
        recs = room.run(cfg, s, NullProgress())
        if not all(isinstance(r, Record) for r in recs):
            raise TypeError(f"{room.__name__}.run must return a list of Records (seed {s}).")
        out.append(as_records(json.loads(json.dumps([dataclasses.asdict(r) for r in recs]))))
    return out


def records_of(per_seed: Sequence[Sequence[Record]], *, metric: str | None = None,
               arm: str | None = None, part: str | None = None) -> list[list[Record]]:
    """Per seed, the records matching the given fields (for figures and notes)."""
    return [[r for r in seed if (metric is None or r.metric == metric) and (arm is None or r.arm == arm)
             and (part is None or r.part == part)] for seed in per_seed]


def _arm(name: str, sub: Arms | None) -> str:
    return (sub or {}).get(name, name)


def _by_part(per_seed, metric: str, arm: str) -> dict[str, list[dict[str, Record]]]:
    """part -> per seed -> instance -> record (of one arm and metric); parts in first-seen order."""
    parts: dict[str, list[dict[str, Record]]] = {}
    for i, seed in enumerate(per_seed):
        for r in seed:
            if r.metric == metric and r.arm == arm:
                lst = parts.setdefault(r.part, [{} for _ in per_seed])
                if r.instance in lst[i]:
                    raise ValueError(f"Two records for metric {metric!r}, arm {arm!r}, part {r.part!r}, "
                                     f"instance {r.instance!r} in one seed.")
                lst[i][r.instance] = r
    return parts


def _seed_values(rows: list[dict[str, Record]], per_instance: Callable[[str, Record], float]):
    """Per-seed means over instances, or one exact value when every instance is exact."""
    from optzoo.repro.judging import deterministic

    rows = [row for row in rows if row]
    if not rows:
        return None
    if all(r.exact for row in rows for r in row.values()):
        vals = [float(np.mean([per_instance(k, r) for k, r in sorted(row.items())])) for row in rows]
        finite = [v for v in vals if math.isfinite(v)]
        if len(finite) == len(vals):
            return deterministic(vals)
    return [float(np.mean([per_instance(k, r) for k, r in sorted(row.items())])) for row in rows]


class Evidence(ABC):
    """What a claim reads from the records: ``collect(per_seed, sub)`` returns its evidence for
    :func:`optzoo.repro.judging.judge` (a mapping part -> per-seed values, or flags for a
    universal statement). ``sub`` maps an arm to the arm that replaces it (a control)."""

    arms: tuple[str, ...] = ()

    @abstractmethod
    def collect(self, per_seed: Sequence[Sequence[Record]], sub: Arms | None = None): ...

    @abstractmethod
    def describe(self) -> str: ...

    def _parts(self, per_seed, sub) -> dict[str, list[dict[str, Record]]]:
        """The records of this evidence's one arm (after ``sub``) and metric, by part."""
        arm = _arm(self.arm, sub)  # type: ignore[attr-defined]
        parts = _by_part(per_seed, self.metric, arm)  # type: ignore[attr-defined]
        if not parts:
            raise _missing(type(self).__name__, self.metric, arm)  # type: ignore[attr-defined]
        return parts


def _missing(what: str, metric: str, arm: str) -> ValueError:
    return ValueError(f"No records for {what}: metric {metric!r}, arm {arm!r}.")


@dataclass(frozen=True)
class Value(Evidence):
    """One arm's ``metric``, averaged over the instances of each part within a seed."""

    metric: str
    arm: str

    @property
    def arms(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.arm,)

    def collect(self, per_seed, sub=None):
        parts = self._parts(per_seed, sub)
        return {p: _seed_values(rows, lambda _k, r: r.value) for p, rows in parts.items()}

    def describe(self) -> str:
        return f"{self.metric} of {self.arm}"


@dataclass(frozen=True)
class Paired(Evidence):
    """``arm`` against ``baseline`` on ``metric``, paired per (seed, instance): ``"diff"``
    (arm - baseline) or ``"logratio"`` (log(arm / baseline)); averaged over a part's
    instances within each seed. Instances that only one arm has are an error."""

    metric: str
    arm: str
    baseline: str
    transform: str = "diff"

    def __post_init__(self) -> None:
        if self.transform not in ("diff", "logratio"):
            raise ValueError("The 'transform' argument of Paired must be 'diff' or 'logratio'. "
                             f"Got {self.transform!r}.")

    @property
    def arms(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.arm, self.baseline)

    def collect(self, per_seed, sub=None):
        arm, base = _arm(self.arm, sub), _arm(self.baseline, sub)
        a, b = _by_part(per_seed, self.metric, arm), _by_part(per_seed, self.metric, base)
        if not a:
            raise _missing("Paired", self.metric, arm)
        out = {}
        for p, rows in a.items():
            brows = b.get(p)
            if brows is None:
                raise _missing(f"Paired part {p!r}", self.metric, base)
            merged = []
            for ra, rb in zip(rows, brows, strict=True):
                if set(ra) != set(rb):
                    raise ValueError(f"Paired {self.metric!r}: arms {arm!r} and {base!r} have different "
                                     f"instances in part {p!r}: {sorted(set(ra) ^ set(rb))}.")
                merged.append({k: Record(p, arm, k, self.metric, self._effect(ra[k].value, rb[k].value),
                                         exact=ra[k].exact and rb[k].exact) for k in ra})
            out[p] = _seed_values(merged, lambda _k, r: r.value)
        return out

    def _effect(self, x: float, y: float) -> float:
        if self.transform == "diff":
            return x - y
        if x > 0 and y > 0:
            return math.log(x) - math.log(y)
        if math.isfinite(x) and math.isfinite(y):
            raise ValueError(f"Paired {self.metric!r} with 'logratio' needs positive values. Got {x!r} "
                             f"and {y!r}.")
        return math.log(x) - math.log(y) if x == x and y == y else float("nan")

    def describe(self) -> str:
        how = "log ratio" if self.transform == "logratio" else "difference"
        return f"{self.metric}: {self.arm} vs {self.baseline} ({how}, paired per seed)"


@dataclass(frozen=True)
class Slope(Evidence):
    """Per seed and part: the least-squares slope of ``metric`` (log when ``log_y``) of one arm
    against its records' ``x`` (log when ``log_x``) over the part's instances."""

    metric: str
    arm: str
    log_x: bool = True
    log_y: bool = True

    @property
    def arms(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.arm,)

    def collect(self, per_seed, sub=None):
        parts = self._parts(per_seed, sub)
        out = {}
        for p, rows in parts.items():
            slopes = []
            for row in rows:
                if not row:
                    continue
                pts = [(r.x, r.value) for r in row.values()]
                if any(x is None for x, _ in pts):
                    raise ValueError(f"Slope {self.metric!r}: every record needs its swept 'x' (part {p!r}).")
                if len({x for x, _ in pts}) < 2:
                    raise ValueError(f"Slope {self.metric!r}: part {p!r} needs at least two values of x.")
                slopes.append(self._fit(pts))
            out[p] = slopes
        return out

    def _fit(self, pts) -> float:
        x = np.array([p[0] for p in pts], dtype=float)
        y = np.array([p[1] for p in pts], dtype=float)
        if not np.isfinite(y).all() or (self.log_y and (y <= 0).any()):
            return float("nan")  # a diverged or failed instance: the part is marked, not hidden
        x = np.log(x) if self.log_x else x
        y = np.log(y) if self.log_y else y
        return float(np.polyfit(x, y, 1)[0])

    def describe(self) -> str:
        ax = f"{'log ' if self.log_y else ''}{self.metric} against {'log ' if self.log_x else ''}x"
        return f"slope of {ax}, {self.arm}, per seed"


@dataclass(frozen=True)
class Universal(Evidence):
    """A statement per instance (record value 1: it held, 0: it failed), for direction
    ``"all"``; an instance marked ``exact`` counts once, however many seeds repeat it."""

    metric: str
    arm: str

    @property
    def arms(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.arm,)

    def collect(self, per_seed, sub=None):
        parts = self._parts(per_seed, sub)
        out = {}
        for p, rows in parts.items():
            flags, seen = [], set()
            for row in rows:
                for k, r in sorted(row.items()):
                    if r.exact:
                        if k in seen:
                            continue
                        seen.add(k)
                    flags.append(bool(r.value > 0.5))
            out[p] = flags
        return out

    def describe(self) -> str:
        return f"{self.metric} of {self.arm}, on every instance"


@dataclass(frozen=True)
class Custom(Evidence):
    """Odd evidence: ``fn(per_seed, sub)`` returns what :func:`optzoo.repro.judging.judge`
    takes; ``arms`` names the arms it reads (so a control can replace them)."""

    fn: Callable[..., Any]
    text: str
    uses: tuple[str, ...] = ()

    @property
    def arms(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.uses

    def collect(self, per_seed, sub=None):
        return self.fn(per_seed, dict(sub or {}))

    def describe(self) -> str:
        return self.text


@dataclass(frozen=True)
class Control:
    """The claim's control: the same evidence with ``arms`` substituted (``{"method":
    "method_without_its_mechanism"}``), run in the same units on the same seeds.

    ``removes``: the mechanism the control removes, in our words. ``credits``: the paper's
    sentence (or section) that credits that mechanism for the claimed effect.
    """

    arms: Mapping[str, str]
    removes: str
    credits: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.arms:
            raise ValueError("The 'arms' argument of Control must substitute at least one arm. Got none.")
        if not self.removes or not self.credits:
            raise ValueError("A Control must say what it 'removes' and which sentence of the paper "
                             f"'credits' it. Got removes={self.removes!r}, credits={self.credits!r}.")

    def describe(self) -> str:
        subs = ", ".join(f"{a} -> {b}" for a, b in self.arms.items())
        return f"{self.removes} ({subs})"


def group(per_seed: Sequence[Sequence[Record]], *keys: str) -> dict[tuple, list[list[Record]]]:
    """Records grouped by the given field names, per seed (a helper for Custom evidence)."""
    out: dict[tuple, list[list[Record]]] = defaultdict(lambda: [[] for _ in per_seed])
    for i, seed in enumerate(per_seed):
        for r in seed:
            out[tuple(getattr(r, k) for k in keys)][i].append(r)
    return dict(out)
