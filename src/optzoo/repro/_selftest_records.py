"""A tiny synthetic "paper" on records, declared evidence and controls (tests only; not listed
in papers.py).

The "method" adds a drift of 0.5 to N(0, 1) draws; its control arm is the same sampler with
the drift removed. Two claims show what controls are for:

* ``drift_raises_mean`` (sound): the method's mean exceeds the plain sampler's. Under its
  control (the drift removed) the effect vanishes, so the claim could have failed.
* ``sample_mean_is_mean`` (a tautology dressed as a claim): the sample mean equals the mean of
  the draws it was computed from. It holds for any sampler, so its control reproduces it too
  and the harness reports it as "cannot fail under its control", not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from optzoo._core.rng import np_rng
from optzoo.repro.claim import Claim
from optzoo.repro.evidence import Control, Paired, Record, Universal, records_of
from optzoo.repro.figures import new_figure, save_figure

_CONTROL = Control({"drifted": "plain"}, removes="the drift", credits="abstract: 'the drift raises the mean'")

CLAIMS = [
    Claim("drift_raises_mean", "The drift raises the sample mean above the plain sampler's.",
          "mean of the drifted draws minus the plain draws' mean, paired per seed",
          direction="greater", threshold=0.0, source="abstract (synthetic)",
          evidence=Paired("mean", "drifted", "reference"), control=_CONTROL),
    Claim("sample_mean_is_mean", "The reported sample mean equals the mean recomputed from the draws.",
          "reported mean minus recomputed mean", direction="equivalent", threshold=0.0, margin=1e-9,
          source="abstract (synthetic)", evidence=Paired("mean", "drifted", "drifted_recomputed"),
          control=Control({"drifted": "plain", "drifted_recomputed": "plain_recomputed"},
                          removes="the drift", credits="abstract: 'the drift raises the mean'")),
    Claim("draws_finite", "Every draw is finite.", "all draws finite", direction="all",
          kind="check", unit="seed", source="ours", evidence=Universal("finite", "drifted")),
]


@dataclass(frozen=True)
class Config:
    n: int
    seeds: int = 5
    drift: float = 0.5


SCALES = {"smoke": Config(n=200), "quick": Config(n=2000)}


def run(config: Config, seed: int, progress) -> list[Record]:
    rng = np_rng(seed, "selftest_records")
    progress.start(1, "drawing")
    noise = rng.normal(0.0, 1.0, size=config.n)
    ref = rng.normal(0.0, 1.0, size=config.n)
    out = [Record("", "reference", "draws", "mean", float(ref.mean()))]
    for arm, x in (("drifted", noise + config.drift), ("plain", noise)):
        out += [Record("", arm, "draws", "mean", float(x.mean())),
                Record("", f"{arm}_recomputed", "draws", "mean", float(sum(x) / len(x))),
                Record("", arm, "draws", "finite", float(bool((abs(x) < float("inf")).all())))]
    progress.advance()
    return out


def figures(per_seed: list[list[Record]], outdir: Path) -> list[Path]:
    fig, ax = new_figure(figsize=(4, 3))
    for arm in ("drifted", "plain", "reference"):
        ax.plot([r[0].value for r in records_of(per_seed, metric="mean", arm=arm)], "o", label=arm)
    ax.set(xlabel="seed index", ylabel="mean")
    ax.legend()
    return [save_figure(fig, Path(outdir) / "means.png", dpi=80)]
