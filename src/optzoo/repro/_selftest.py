"""A tiny synthetic "paper" that exercises the harness in tests (not listed in papers.py).

Claim: the mean of N(0.5, 1) draws is positive. Scale ``crash`` makes seed 1 raise, to test
that a crashing unit is reported without stopping the others; scale ``slow`` makes seed 1
sleep, to test that an interrupt keeps finished units.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from optzoo._core.rng import np_rng
from optzoo.repro.claim import Claim, Verdict
from optzoo.repro.figures import new_figure, save_figure
from optzoo.repro.judging import judge as decide

CLAIMS = [
    Claim("positive_mean", "The sample mean is positive.", "mean of the seed's draws",
          direction="greater", threshold=0.0),
    Claim("draws_finite", "Every draw is finite.", "all draws finite", direction="all",
          kind="check", unit="seed"),
]


@dataclass(frozen=True)
class Config:
    n: int
    steps: int = 3
    seeds: int = 5
    crash_seed: int | None = None
    sleep_seed: int | None = None  # this seed sleeps 120 s (to test interruption)


SCALES = {
    "smoke": Config(n=200),
    "quick": Config(n=2000),
    "full": Config(n=20000),
    "crash": Config(n=200, crash_seed=1),
    "slow": Config(n=200, sleep_seed=1),
}


def run(config: Config, seed: int, progress) -> dict:
    if seed == config.crash_seed:
        raise RuntimeError(f"deliberate crash for seed {seed}")
    if seed == config.sleep_seed:
        import time

        time.sleep(120)
    rng = np_rng(seed, "selftest")
    progress.start(config.steps, "drawing")
    means = []
    for _ in range(config.steps):
        means.append(float(rng.normal(0.5, 1.0, size=config.n).mean()))
        progress.advance()
    return {"mean": sum(means) / len(means), "means": means}


def judge(per_seed: list[dict]) -> list[Verdict]:
    c = {c.id: c for c in CLAIMS}
    return [
        decide(c["positive_mean"], [r["mean"] for r in per_seed]),
        decide(c["draws_finite"], [all(abs(m) < float("inf") for m in r["means"]) for r in per_seed]),
    ]


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    fig, ax = new_figure(figsize=(4, 3))
    ax.plot([r["mean"] for r in per_seed], "o")
    ax.set_xlabel("seed index")
    ax.set_ylabel("mean")
    return [save_figure(fig, Path(outdir) / "means.png", dpi=80)]
