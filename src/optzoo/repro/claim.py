"""What a paper's reproduction (``optzoo.<slug>.repro``) declares and returns.

A paper's reproduction package provides::

    CLAIMS: list[Claim]
    SCALES: dict[str, Config]          # "smoke", "quick", "full": frozen dataclasses with .seeds
    def run(config, seed: int, progress: Progress) -> dict          # one seed, plain metrics
    def judge(per_seed: list[dict]) -> list[Verdict]                 # via optzoo.repro.judging
    def figures(per_seed: list[dict], outdir: pathlib.Path) -> list[pathlib.Path]

``per_seed`` is the list of the dicts that ``run`` returned, one per seed, in seed order.
Every value in them must be JSON-serialisable (numpy scalars and arrays are converted).

A reproduction on records (the contract every room moves to) has no ``judge``: ``run``
returns a list of :class:`~optzoo.repro.evidence.Record`, every claim declares its
``evidence`` (and, for kind ``claim``, its ``control``), and the harness judges them all the
same way (:func:`optzoo.repro.judging.judge_claims`); ``figures`` then receives the records.

A :class:`Claim` is data: its kind, what one seed contributes (``metric``), the direction that
counts as support and the threshold or margin. :mod:`optzoo.repro.judging` reads these fields
and writes the rule and the summary from them, so a threshold is written exactly once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

__all__ = [
    "CHECK_WORDS",
    "CLAIM_WORDS",
    "Claim",
    "DIRECTIONS",
    "KINDS",
    "NullProgress",
    "PaperRun",
    "Part",
    "Progress",
    "Verdict",
    "VERDICTS",
]

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
PASSED = "passed"
FAILED = "failed"

#: Words for claims and findings: (holds, fails, undecided).
CLAIM_WORDS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)
#: Words for checks of our own implementation.
CHECK_WORDS = (PASSED, FAILED, INCONCLUSIVE)
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, PASSED, FAILED)

#: ``claim``: an empirical statement of the paper that could fail. ``check``: a property of
#: our implementation (listed apart, never counted as support for the paper). ``finding``: our
#: own result that is not the paper's (e.g. a counter-claim), labelled as ours.
KINDS = ("claim", "check", "finding")

#: ``greater`` / ``less``: the mean per-seed effect lies above / below ``threshold``.
#: ``equivalent``: it lies within ``threshold +- margin`` (two one-sided tests).
#: ``noninferior``: it lies above ``threshold - margin`` (higher is better; negate a
#: lower-is-better metric). ``all``: a universal statement judged by counterexample
#: search over every instance (``True`` = the statement held on that instance).
DIRECTIONS = ("greater", "less", "equivalent", "noninferior", "all")


@dataclass(frozen=True)
class Claim:
    """One claim, check or finding, as data.

    ``statement``: the sentence in our own words. ``metric``: what one unit of replication
    contributes, e.g. ``"mean over graphs of log(edges SE-FW / edges peeling)"``.
    ``unit``: the unit of replication (``"seed"``; ``"instance"`` for ``all``).
    ``source``: where the statement comes from (``"spec C2"``, ``"abstract"``).
    """

    id: str
    statement: str
    metric: str
    direction: str = "greater"
    threshold: float = 0.0
    margin: float = 0.0
    kind: str = "claim"
    unit: str = "seed"
    source: str = ""
    evidence: Any = None   # an optzoo.repro.evidence.Evidence (rooms on records)
    control: Any = None    # an optzoo.repro.evidence.Control (every kind "claim" on records)
    scales: tuple[str, ...] = ()  # the scales that measure it (empty: every scale)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"The 'kind' argument of Claim must be one of {KINDS}. Got {self.kind!r}.")
        if self.direction not in DIRECTIONS:
            raise ValueError(
                f"The 'direction' argument of Claim must be one of {DIRECTIONS}. Got {self.direction!r}."
            )
        if self.direction in ("equivalent", "noninferior") and not self.margin > 0:
            raise ValueError(
                f"The 'margin' argument of Claim {self.id!r} must be > 0 for direction "
                f"{self.direction!r}. Got {self.margin!r}."
            )

    @property
    def words(self) -> tuple[str, str, str]:
        """(holds, fails, undecided) in this kind's vocabulary."""
        return CHECK_WORDS if self.kind == "check" else CLAIM_WORDS

    def rule(self, level: float = 0.95) -> str:
        """The decision rule in words, generated from the fields (the only place it is written)."""
        from optzoo.repro.judging import rule_text

        return rule_text(self, level)

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("evidence", "control")}
        out["evidence"] = self.evidence.describe() if self.evidence is not None else None
        out["control"] = self.control.describe() if self.control is not None else None
        return out


@dataclass(frozen=True)
class Part:
    """One judged part of a claim: its estimate and interval over ``n`` units.

    ``low``/``high`` are the two-sided interval at ``level`` (``None`` level: exact, a
    deterministic instance counted once). ``adj_low``/``adj_high`` are the Bonferroni-adjusted
    interval used for the "wrong side" decision when a claim has several parts.
    """

    name: str
    estimate: float
    low: float
    high: float
    n: int
    verdict: str
    level: float | None = 0.95
    adj_low: float | None = None
    adj_high: float | None = None
    sd: float | None = None
    held: int | None = None  # for direction "all": instances on which the statement held
    nonfinite: int = 0  # seeds whose value was NaN or infinite (a diverged run): part undecided
    power: float | None = None  # chance this part's verdict repeats at its own estimate and sd

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Verdict:
    """The judged outcome of one claim over all seeds.

    ``verdict`` is in the claim kind's vocabulary (:data:`CLAIM_WORDS` or :data:`CHECK_WORDS`);
    ``summary`` says in one sentence what was measured; ``numbers`` holds extra key numbers.
    ``half_width`` and ``seeds_needed`` are set for an undecided verdict: the widest
    undecided part's interval half-width, and roughly how many seeds would decide it if the
    estimate and spread stayed as they are (``None``: more seeds would not help).
    """

    claim: str
    verdict: str
    summary: str
    numbers: dict[str, Any] = field(default_factory=dict)
    kind: str = "claim"
    parts: tuple[Part, ...] = ()
    rule: str = ""
    level: float | None = 0.95
    threshold: float | None = None
    margin: float | None = None
    direction: str = "greater"
    half_width: float | None = None
    seeds_needed: int | None = None
    measured: bool = True           # False: this scale does not measure the claim (see summary)
    power: float | None = None      # lowest power over decided random parts, at their estimates
    control: Verdict | None = None  # the same claim judged on its control's evidence
    control_removes: str = ""       # what the control removes, in words
    tie: bool = False               # an exact tie decides the verdict: no number of seeds would

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(
                f"The 'verdict' argument of Verdict must be one of {VERDICTS}. Got {self.verdict!r}."
            )
        if self.kind not in KINDS:
            raise ValueError(f"The 'kind' argument of Verdict must be one of {KINDS}. Got {self.kind!r}.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def status(self) -> str:
        """How a claim counts: ``reproduced`` only when its control did not also reproduce it;
        ``cannot fail`` when it did; ``no control`` for a reproduced claim without one;
        ``not measured`` at a scale that does not measure it; else its verdict."""
        if not self.measured:
            return "not measured"
        if self.kind == "claim" and self.verdict == REPRODUCED:
            if self.control is None:
                return "no control"
            if self.control.verdict == REPRODUCED:
                return "cannot fail"
        return self.verdict

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        d = dict(d)
        d["parts"] = tuple(Part(**p) for p in d.get("parts", ()))
        if d.get("control") is not None:
            d["control"] = cls.from_dict(d["control"])
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


@dataclass
class PaperRun:
    """Everything the report needs about one paper: its finished units and their verdicts."""

    slug: str
    scale: str
    seeds: list[int]
    per_seed: list[dict[str, Any]]
    verdicts: list[Verdict]
    errors: dict[int, str] = field(default_factory=dict)  # seed -> traceback
    figures: list[str] = field(default_factory=list)
    wall_time: float = 0.0
    judge_error: str | None = None
    provenance: list[str] = field(default_factory=list)  # distinct "commit[+dirty]" of its units
    headline: tuple[str, ...] = ()  # the claims that test the abstract's headline (papers.py)
    threads: list[str] = field(default_factory=list)  # distinct threads the runner gave its units
    finished: list[str] = field(default_factory=list)  # when each unit finished (its record's time)
    environment: dict[str, Any] = field(default_factory=dict)  # the first unit's environment
    planned_seeds: int | None = None  # the seed count of the scale's config (None: unknown)

    def of_kind(self, kind: str) -> list[Verdict]:
        return [v for v in self.verdicts if v.kind == kind]


class Progress(Protocol):
    """Step progress inside a unit. ``run`` calls ``start`` once per phase, then ``advance``."""

    def start(self, total: int, description: str = "") -> None: ...

    def advance(self, n: int = 1) -> None: ...


class NullProgress:
    """Progress that shows nothing (tests, Ray workers)."""

    def start(self, total: int, description: str = "") -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass
