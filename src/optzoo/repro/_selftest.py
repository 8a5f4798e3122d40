"""A tiny synthetic "paper" that exercises the harness in tests (not listed in papers.py).

Claim: the mean of N(0.5, 1) draws is positive. Scale ``crash`` makes seed 1 raise, to test
that a crashing unit is reported without stopping the others; scale ``slow`` makes seed 1
sleep, to test that an interrupt keeps finished units.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from optzoo._core.rng import np_rng
from optzoo.repro.claim import Claim
from optzoo.repro.evidence import Record, Universal, Value, records_of
from optzoo.repro.figures import new_figure, save_figure

CLAIMS = [
    Claim("positive_mean", "The sample mean is positive.", "mean of the seed's draws",
          direction="greater", threshold=0.0, kind="finding", source="ours (synthetic)",
          evidence=Value("mean", "draws")),
    Claim("draws_finite", "Every draw is finite.", "all draws finite", direction="all",
          kind="check", unit="seed", source="ours (synthetic)", evidence=Universal("finite", "draws")),
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


def run(config: Config, seed: int, progress) -> list[Record]:
    if seed == config.crash_seed:
        raise RuntimeError(f"deliberate crash for seed {seed}")
    if seed == config.sleep_seed:
        import time

        time.sleep(120)
    rng = np_rng(seed, "selftest")
    progress.start(config.steps, "drawing")
    out = []
    for step in range(config.steps):
        draws = rng.normal(0.5, 1.0, size=config.n)
        out += [Record("", "draws", f"step{step}", "mean", float(draws.mean())),
                Record("", "draws", f"step{step}", "finite", float(bool((abs(draws) < float("inf")).all())))]
        progress.advance()
    return out


def figures(per_seed: list[list[Record]], outdir: Path) -> list[Path]:
    fig, ax = new_figure(figsize=(4, 3))
    ax.plot([sum(r.value for r in seed) / len(seed) for seed in records_of(per_seed, metric="mean")], "o")
    ax.set_xlabel("seed index")
    ax.set_ylabel("mean")
    return [save_figure(fig, Path(outdir) / "means.png", dpi=80)]
