"""The smoke reproduction runs, and its verdicts and figures are well formed."""

from optzoo.dynamic_gs.repro import CLAIMS, SCALES, figures, judge, run
from optzoo.repro.claim import NullProgress, Verdict


def test_smoke_reproduction(tmp_path):
    cfg = SCALES["smoke"]
    per_seed = [run(cfg, s, NullProgress()) for s in range(cfg.seeds)]
    for r in per_seed:
        for arm in cfg.arms:
            res = r["motions"]["large"][arm]
            assert not res["diverged"]
            assert 5 < res["test_psnr"] < 60 and len(res["per_frame"]) == cfg.frames
            assert 0 < res["vis_frac"] <= 1
    verdicts = judge(per_seed)
    assert [v.claim for v in verdicts] == [c.id for c in CLAIMS]
    assert all(isinstance(v, Verdict) for v in verdicts)
    paths = figures(per_seed, tmp_path)
    assert paths and all(p.exists() for p in paths)


def test_every_full_scale_arm_runs():
    from dataclasses import replace

    cfg = replace(SCALES["smoke"], steps=6, frames=2, arms=SCALES["full"].arms, n_checkpoints=1)
    out = run(cfg, 0, NullProgress())
    res = out["motions"]["large"]
    assert set(res) == set(SCALES["full"].arms)
    assert all(not r["diverged"] and r["test_psnr"] > 5 for r in res.values())
