"""The reproduction: smoke run, JSON, one verdict per claim, claims that can fail, and the
bank's SPSA path against noisyopt itself."""

import json
import math

import numpy as np
import pytest

from optzoo.markov_zo import repro
from optzoo.markov_zo.repro.bank import _Chains, _NoisyoptDraws, run_bank
from optzoo.repro.claim import VERDICTS, NullProgress


def test_smoke_reproduction(tmp_path):
    cfg = repro.SCALES["smoke"]
    assert 2 <= cfg.seeds <= 3 and repro.SCALES["quick"].seeds >= 5
    per_seed = [repro.run(cfg, s, NullProgress()) for s in range(cfg.seeds)]
    again = repro.run(cfg, 0, NullProgress())
    assert again["sweep"] == per_seed[0]["sweep"]  # same seed, same numbers
    assert json.loads(json.dumps(per_seed, allow_nan=False)) == per_seed  # JSON-clean
    verdicts = repro.judge(per_seed)
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert [v.kind for v in verdicts] == [c.kind for c in repro.CLAIMS]
    assert all(v.verdict in VERDICTS and v.summary and v.rule for v in verdicts)
    paths = repro.figures(per_seed, tmp_path)
    assert paths and all(p.exists() and p.stat().st_size > 0 for p in paths)
    assert set(repro.SCALES) >= {"smoke", "quick", "full"}


def _synthetic(better: bool, n: int = 8, seed: int = 0) -> list[dict]:
    """Per-seed results in run()'s layout where ZO-MLMC is clearly better (or worse) than
    every baseline and the rates have (or miss) the lower bound's shape."""
    rng = np.random.default_rng(seed)
    dims, taus = [10, 50], [1.0, 3.0, 10.0, 30.0, 100.0, 300.0]
    t = np.asarray(taus)

    def noisy(v):
        return (np.asarray(v, dtype=float) * np.exp(0.05 * rng.standard_normal(np.shape(v)))).tolist()

    out = []
    for _ in range(n):
        r = {"config": {"dims": dims, "taus": taus, "budget": 1000, "reps": 2},
             "sweep": {}, "rate": {}, "checkpoints": [0.125, 0.25, 0.5, 1.0]}
        for d in dims:
            zo = 0.01 * (1 + t / d) if better else 0.01 * t
            fo = 0.01 * t if better else 0.01 * np.ones_like(t)
            r["sweep"][str(d)] = {"zo": [noisy([v] * 4) for v in zo],
                                  "fo": [noisy([v] * 4) for v in fo],
                                  "crossover_pred": float(d) if better else 1.5}
            shape = (d + 1.0) if better else 1.0
            r["rate"][str(d)] = {"taus": [1.0, 3.0], "half": noisy([2e-3 * shape] * 2),
                                 "full": noisy([1e-3 * shape if better else 1.9e-3] * 2)}
        big, small = (1.0, 0.01) if better else (0.01, 1.0)
        r["sweep"]["50"]["zo"][-1] = noisy([small] * 4)
        r["baselines"] = {"d": 50, "taus": [1, 300],
                          **{k: {"err": noisy([big, big])} for k in ("sgd_b1", "zo_b1", "spsa")}}
        for key in ("one_vs_two", "one_vs_two_nonsmooth"):
            r[key] = {"two": noisy([small, small]), "one": noisy([big, big])}
        r["variance_law"] = [{"measured": v, "predicted": 1.0} for v in noisy([1.0] * 3)]
        out.append(r)
    return out


def test_claims_can_fail_and_can_hold():
    worse = repro.judge(_synthetic(better=False))
    assert any(v.kind == "claim" and v.verdict == "not reproduced" for v in worse)
    assert all(v.verdict != "reproduced" for v in worse if v.kind == "claim")
    better = repro.judge(_synthetic(better=True))
    assert [v.verdict for v in better if v.kind == "claim"] == (
        ["reproduced"] * sum(c.kind == "claim" for c in repro.CLAIMS))
    assert all(v.verdict == "passed" for v in better if v.kind == "check")


def test_noisyopt_draws_match_numpy_global_stream():
    for seed, d in ((3, 4), (12345, 50), (7, 1)):
        dr = _NoisyoptDraws(seed, d)
        got = np.concatenate([dr.block(256), dr.block(100), dr.block(300)])
        saved = np.random.get_state()  # noisyopt's stream is numpy's global one: restore it
        try:
            np.random.seed(seed)
            want = []
            for _ in range(656):
                want.append(np.random.choice([-1, 1], size=d))
                np.random.randint(0, np.iinfo(np.int32).max)
        finally:
            np.random.set_state(saved)
        np.testing.assert_array_equal(got, np.asarray(want, dtype=float))


class _Recorded(_Chains):
    def __init__(self, stay, rng):
        super().__init__(stay, rng)
        self.seen = []

    def path(self, n_used, n_max):
        p = super().path(n_used, n_max)
        self.seen.extend(p[0, : int(n_used[0])].tolist())
        return p


@pytest.mark.parametrize("d", [4, 10])
def test_bank_spsa_path_matches_noisyopt_draw_for_draw(d):
    """The bank's SPSA (the path the reproduction runs) against noisyopt.minimizeSPSA itself,
    fed the same chain states in the same order: same directions, same iterates."""
    noisyopt = pytest.importorskip("noisyopt")
    budget, seed, a = 600, 11, 0.5
    chains = _Recorded(np.array([0.9]), np.random.default_rng(5))
    rec = run_bank("spsa", d=d, stay=[0.9], max_level=16, lr_mult=a, budget=budget,
                   x0_norm=math.sqrt(d), seed_rng=np.random.default_rng(1), spsa_seeds=[seed],
                   chains=chains, checkpoints=(0.25, 0.5, 1.0))
    states = iter(chains.seen + [1.0])  # noisyopt evaluates the end point once more
    c = np.ones(d) / np.sqrt(d)

    def f(x, seed=None):  # noisyopt passes its paired seed; a Markov stream ignores it
        return 0.5 * float(((x - next(states) * c) ** 2).sum())

    errs = []
    saved = np.random.get_state()
    try:
        np.random.seed(seed)
        res = noisyopt.minimizeSPSA(f, np.ones(d), niter=budget // 2, paired=True, a=a, c=1.0,
                                    callback=lambda x: errs.append(float((x ** 2).sum())))
    finally:
        np.random.set_state(saved)
    assert len(chains.seen) == budget  # two consecutive states per iteration, all consumed
    want = [errs[int(q * budget) // 2 - 1] for q in (0.25, 0.5, 1.0)]
    np.testing.assert_allclose(rec[0], want, rtol=1e-10)
    np.testing.assert_allclose(float((res.x ** 2).sum()), rec[0, -1], rtol=1e-10)
