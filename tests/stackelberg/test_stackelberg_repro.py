"""The smoke reproduction runs, its verdicts are well formed, and its figures are written; the
E4 CartPole path runs end to end at a reduced size; the muP reference is the real ``mup``."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch

from optzoo.repro.claim import NullProgress, Verdict
from optzoo.stackelberg.repro import CLAIMS, SCALES, figures, judge, run


@pytest.fixture(scope="module")
def smoke_with_cartpole():
    # the smoke scale plus a 3-episode CartPole (E4 is full-scale only; this runs its wiring)
    cfg = replace(SCALES["smoke"], cartpole_episodes=3)
    return [json.loads(json.dumps(run(cfg, s, NullProgress()))) for s in range(cfg.seeds)]


def test_smoke_reproduction(smoke_with_cartpole, tmp_path):
    per_seed = [{k: v for k, v in r.items() if k != "cartpole"} for r in smoke_with_cartpole]
    verdicts = judge(per_seed)
    assert [v.claim for v in verdicts] == [c.id for c in CLAIMS]
    assert all(isinstance(v, Verdict) for v in verdicts)
    by = {v.claim: v for v in verdicts}
    assert by["cartpole_head_ratio"].verdict == "inconclusive"  # full scale only
    assert "not measured" in by["cartpole_head_ratio"].summary
    fam = per_seed[0]["digits"]["grid_sizes"]
    assert len(set(fam.values())) == 1, "every family has the same number of configurations"
    # tuning and evaluation instances differ (E1 teachers and E3 splits are seeded apart)
    assert per_seed[0]["plateau"]["runs"]["uniform"]["L0"] != per_seed[1]["plateau"]["runs"]["uniform"]["L0"]
    from optzoo.stackelberg.repro.digits import mup_impl

    ref = by["digits_nonuniform_vs_references"].summary
    assert per_seed[0]["digits"]["mup_impl"] == mup_impl()
    assert ("MuSGD + MuReadout" in ref) == (mup_impl() != "stand-in")
    assert ("stand-in: mup not installed" in ref) == (mup_impl() == "stand-in")
    paths = figures(per_seed, tmp_path)
    assert paths and all(p.exists() for p in paths)


def test_cartpole_end_to_end_reduced(smoke_with_cartpole, tmp_path):
    from optzoo.stackelberg.repro.cartpole import RATIOS

    for r in smoke_with_cartpole:
        cp = r["cartpole"]
        assert cp["c"] in RATIOS and set(cp["tune"]) == {f"{c:g}" for c in RATIOS}
        # CartPole-v1 gives reward 1 per step, at least 1 and at most 500 steps per episode
        assert 1.0 <= cp["base"] <= 500.0 and 1.0 <= cp["best"] <= 500.0
        assert cp["curve_best"] and cp["curve_base"]
    v = judge(smoke_with_cartpole)[[c.id for c in CLAIMS].index("cartpole_head_ratio")]
    assert "not measured" not in v.summary
    assert len(v.parts) == 1 and v.parts[0].n == len(smoke_with_cartpole)
    assert math.isfinite(v.parts[0].estimate)
    assert (tmp_path / "cartpole_returns.png") in figures(smoke_with_cartpole, tmp_path)
    # same seed, key and ratio: the same returns (explicit generators and environment seeds)
    from optzoo.stackelberg.repro.cartpole import reinforce

    assert reinforce(4.0, seed=7, key="t", episodes=2) == reinforce(4.0, seed=7, key="t", episodes=2)


def test_scales_carry_seeds():
    assert SCALES["quick"].seeds >= 5 and SCALES["smoke"].seeds >= 2
    assert SCALES["full"].cartpole_episodes > 0 and SCALES["quick"].cartpole_episodes == 0


def test_batched_sgd_family_matches_torch_sgd_one_by_one():
    from optzoo.stackelberg.repro.digits import load_split, train_digits, train_sgd_family

    data = load_split(90000, "test")
    confs = [("nonuniform", 0.1, 16.0), ("uniform", 0.3, 1.0), ("llrd", 1.0, 0.5), ("mup", 0.3, 1.0),
             ("nonuniform", 1.0, 64.0)]  # the last one diverges
    batched = train_sgd_family(confs, data, seed=3, key="k", steps=15)
    for conf, b in zip(confs, batched, strict=True):
        one = train_digits(conf, data, seed=3, key="k", steps=15)
        assert one["diverged"] == b["diverged"]
        if not one["diverged"]:
            assert abs(one["loss"] - b["loss"]) < 1e-4 * max(1.0, one["loss"])


def test_mup_arm_uses_real_musgd(monkeypatch):
    mup = pytest.importorskip("mup")
    from optzoo.stackelberg.repro import digits

    made = []
    real = mup.MuSGD

    def spy(params, **kw):
        opt = real(params, **kw)
        made.append(opt)
        return opt

    monkeypatch.setattr(mup, "MuSGD", spy)
    assert digits.mup_impl().startswith("mup ")
    data = digits.load_split(90000, "test")
    digits.train_digits(("mup", 0.3, 1.0), data, seed=3, key="k", steps=2)
    digits.train_sgd_family([("mup", 0.3, 1.0), ("uniform", 0.3, 1.0)], data, seed=3, key="k", steps=2)
    assert len(made) == 2, "the evaluation run and the batched tuning table both come from MuSGD"
    for opt in made:
        assert type(opt) is torch.optim.SGD  # MuSGD returns torch SGD over its muP groups
        assert all(hasattr(p, "infshape") for g in opt.param_groups for p in g["params"])
    m = digits._model(3, "k", mup=True)
    assert isinstance(m.out, mup.MuReadout) and m.out.width_mult() == digits.MUP_R
    by = {id(p): g["lr"] for g in made[0].param_groups for p in g["params"]}
    assert sorted(by.values()) == sorted([0.3 * 4, 0.3 * 4, 0.3, 0.3 * 4, 0.3 * 4, 0.3])


def test_mup_standin_equals_real_mup(monkeypatch):
    """The fallback (used only when mup is absent) has mup's LRs, init and readout exactly."""
    pytest.importorskip("mup")
    from optzoo.stackelberg.repro import digits

    m = digits._model(5, "k", mup=True)
    opt = digits.mup_optimizer(m, 0.1)
    real = {n: ([g["lr"] for g in opt.param_groups if any(q is p for q in g["params"])][0], p.detach())
            for n, p in m.named_parameters()}
    monkeypatch.setattr(digits, "mup_impl", lambda: "stand-in")
    m2 = digits._model(5, "k", mup=True)
    opt2 = digits.mup_optimizer(m2, 0.1)
    assert not isinstance(m2.out, type(m.out))
    for n, p in m2.named_parameters():
        lr2 = [g["lr"] for g in opt2.param_groups if any(q is p for q in g["params"])][0]
        assert lr2 == pytest.approx(real[n][0]) and torch.equal(p.detach(), real[n][1]), n
    x = torch.randn(7, 64, generator=torch.Generator().manual_seed(0))
    assert torch.equal(m(x), m2(x))
