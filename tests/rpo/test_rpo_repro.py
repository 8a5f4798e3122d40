"""The smoke reproduction runs and yields well-formed verdicts and figures."""

from __future__ import annotations

from optzoo.repro.claim import NullProgress, Verdict
from optzoo.rpo.repro import CLAIMS, SCALES, figures, judge, run


def test_smoke_reproduction(tmp_path):
    cfg = SCALES["smoke"]
    per_seed = [run(cfg, s, NullProgress()) for s in range(cfg.seeds)]
    verdicts = judge(per_seed)
    assert [v.claim for v in verdicts] == [c.id for c in CLAIMS]
    assert all(isinstance(v, Verdict) for v in verdicts)
    arms = per_seed[0]["envs"]["pendulum"]
    assert set(arms) >= {"rpo", "shac", "naive"}
    assert len(arms["rpo"]["returns"]) == cfg.checkpoints
    paths = figures(per_seed, tmp_path)
    assert paths and all(p.exists() for p in paths)


def test_scales_are_declared():
    assert SCALES["quick"].seeds >= 5 and SCALES["smoke"].seeds >= 2
    assert SCALES["full"].ppo_context and "naive10" in SCALES["full"].arms


def test_sb3_ppo_baseline_takes_exactly_the_budget():
    import pytest

    pytest.importorskip("stable_baselines3")
    from optzoo.rpo import PendulumSwingUp
    from optzoo.rpo.repro.ppo import run_ppo

    settings = {"n_envs": 2, "n_steps": 100, "batch_size": 32, "gamma": 0.9, "gae_lambda": 0.95,
                "n_epochs": 1, "ent_coef": 0.0, "clip_range": 0.2, "learning_rate": 1e-3}
    out = run_ppo(lambda k: PendulumSwingUp(1), 320, [160, 320], PendulumSwingUp(2, episode_length=20),
                  3, seed=0, hidden=(8,), settings=settings)
    assert out["env_steps"] == 320 and out["steps"] == [160, 320]
    assert len(out["returns"]) == 2 and all(r <= 0 for r in out["returns"])
