"""Scales of the IP-GRM reproduction (sized on pilot seeds 90000+; docs/papers/ipgrm.md)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PAPER_G", "SCALES", "Config"]

#: The group size the paper's latency table was measured at (rollouts n = 8, Table 4).
PAPER_G = 8


@dataclass(frozen=True)
class Config:
    groups: tuple = (2, 8)
    n_prompts: int = 2
    lengths: tuple = (16, 48, 24, 32)  # |Q|, |R|, L_P, L_J
    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 2
    steps: int = 15
    arms: tuple = ("coupled", "ip_cache")
    kappas: tuple = (2.0, 0.0)  # the drifting judge and its no-drift control
    n_pairs: int = 40
    real_pairs: int = 0  # pairs per seed for the SmolLM2 judge (drift_real / drift_135m); 0: not run
    probe_groups: int = 32
    reps: int = 2
    seeds: int = 2


SCALES = {
    "smoke": Config(),
    "quick": Config(groups=(2, 4, 8, 16), lengths=(16, 48, 24, 32), n_embd=256, n_layer=4, n_head=4,
                    reps=3, steps=30, arms=("proxy", "coupled", "ip_nocache", "ip_cache"),
                    kappas=(2.0, 0.0), probe_groups=64, real_pairs=3, seeds=5),
    "full": Config(groups=(2, 4, 8, 16), n_prompts=4, lengths=(64, 192, 96, 128), n_embd=256, n_layer=4,
                   n_head=4, reps=3, steps=100, arms=("proxy", "coupled", "ip_nocache", "ip_cache"),
                   kappas=(2.0, 1.0, 0.0), n_pairs=200, probe_groups=256, real_pairs=12, seeds=16),
}
