"""What a paper's ``repro.py`` declares and returns.

A paper's reproduction module provides::

    CLAIMS: list[Claim]
    SCALES: dict[str, Config]          # "smoke", "quick", "full": frozen dataclasses
    def run(config, seed: int, progress: Progress) -> dict          # one seed, plain metrics
    def judge(per_seed: list[dict]) -> list[Verdict]                 # statistics over seeds
    def figures(per_seed: list[dict], outdir: pathlib.Path) -> list[pathlib.Path]

``per_seed`` is the list of the dicts that ``run`` returned, one per seed, in seed order.
Every value in them must be JSON-serialisable (numpy scalars and arrays are converted).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from optzoo._core.stats import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

__all__ = ["Claim", "NullProgress", "PaperRun", "Progress", "Verdict", "VERDICTS"]

VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, in our own words.

    ``id``: short key (``"finite_step"``); ``statement``: the claim as a sentence;
    ``metric``: what is measured; ``direction``: what counts as support, e.g.
    ``"SE-FW edges >= peeling edges (paired CI of the log ratio >= 0)"``.
    """

    id: str
    statement: str
    metric: str
    direction: str


@dataclass(frozen=True)
class Verdict:
    """The judged outcome of one claim over all seeds.

    ``verdict`` is one of ``"reproduced"``, ``"not reproduced"``, ``"inconclusive"``;
    ``summary`` says in one sentence what was measured; ``numbers`` holds the key numbers
    (estimates, interval ends, counts) shown in the report.
    """

    claim: str
    verdict: str
    summary: str
    numbers: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(
                f"The 'verdict' argument of Verdict must be one of {VERDICTS}. Got {self.verdict!r}."
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
