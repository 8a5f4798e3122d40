"""The reproduction on records: smoke run, the claims' contract, headline claims that can fail
under their controls (first-order with the same batching; a cheap gradient), and the bank's SPSA
path against noisyopt itself."""

import json
import math
import warnings

import numpy as np
import pytest

from optzoo._core.io import to_jsonable
from optzoo.markov_zo import repro
from optzoo.markov_zo.repro.bank import _Chains, _NoisyoptDraws, run_bank
from optzoo.repro.claim import VERDICTS, NullProgress
from optzoo.repro.evidence import Record, as_records
from optzoo.repro.judging import check_claims, judge_claims

HEADLINE = ("tau_independence", "zo_vs_fo_at_cost")


def test_smoke_reproduction(tmp_path):
    check_claims(repro.CLAIMS)
    assert set(HEADLINE) == set(repro.HEADLINE)
    assert all(c.kind == "claim" for c in repro.CLAIMS if c.id in HEADLINE)
    assert {c.id for c in repro.CLAIMS if c.kind == "claim"} == set(HEADLINE)
    cfg = repro.SCALES["smoke"]
    assert 2 <= cfg.seeds <= 3 and repro.SCALES["quick"].seeds >= 5
    assert repro._headline_dims(cfg) and repro._headline_dims(repro.SCALES["quick"]) == [50]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a diverged one-point run warns
        per_seed = [repro.run(cfg, s, NullProgress()) for s in range(cfg.seeds)]
        again = repro.run(cfg, 0, NullProgress())
    assert again == per_seed[0]  # same seed, same records
    back = [as_records(json.loads(json.dumps(to_jsonable(seed)))) for seed in per_seed]
    for a, b in zip(back, per_seed, strict=True):  # JSON round trip (inf stays inf)
        assert [(r.part, r.arm, r.instance, r.metric) for r in a] == \
            [(r.part, r.arm, r.instance, r.metric) for r in b]
    verdicts = judge_claims(repro.CLAIMS, per_seed, scale="smoke", notes=repro.notes(per_seed))
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert [v.kind for v in verdicts] == [c.kind for c in repro.CLAIMS]
    assert all(v.verdict in VERDICTS and v.summary and v.rule for v in verdicts)
    by_id = {v.claim: v for v in verdicts}
    for c in repro.CLAIMS:
        v = by_id[c.id]
        assert "could not be read" not in v.summary, v.summary
        if c.kind == "claim":  # every claim has its control judged on the same units
            assert v.control is not None and v.control.verdict in VERDICTS and v.control_removes
    # Smoke's 2 seeds decide nothing, but the controls already look different (seeded numbers):
    # first-order error grows with tau more than zero-order's, and a cheap gradient makes
    # first-order win at equal cost
    for c in HEADLINE:
        assert by_id[c].control.parts[0].estimate > by_id[c].parts[0].estimate + 1.0, c
    paths = repro.figures(per_seed, tmp_path)
    assert paths and all(p.exists() and p.stat().st_size > 0 for p in paths)
    assert set(repro.SCALES) >= {"smoke", "quick", "full"}


def _world(paper_right: bool, n: int = 8, seed: int = 0) -> list[list[Record]]:
    """Records of run()'s headline layout at d = 50 in two worlds. Paper right: zero-order error
    ~ (d + tau) / N (the abstract's form: tau-free below d), first-order error ~ 3 tau (d + 1) / N at equal cost.
    Paper wrong: zero-order pays tau like first-order does, (d + tau) tau / N. The cheap
    first-order arm is the first-order one divided by d + 1 in both worlds."""
    rng = np.random.default_rng(seed)
    d, taus = 50, np.array([1.0, 3.0, 10.0, 30.0])
    out = []
    for _ in range(n):
        recs = []
        noise = np.exp(0.1 * rng.standard_normal((3, taus.size)))
        zo = 2 * (d + taus) / 5e4 * (1 if paper_right else taus) * noise[0]
        fo = 3 * taus * (d + 1) / 5e4 * noise[1]
        arms = {"zo": zo, "fo": fo, "fo_cheap": fo / (d + 1) * noise[2]}
        for arm, e in arms.items():
            for t, v in zip(taus, e, strict=True):
                recs.append(Record(f"d={d}", arm, f"tau={t:g}", "err_below_d", v, x=t))
            recs.append(Record(f"d={d}", arm, "tau<d", "tau_growth", float(np.max(np.log(e[1:] / e[0])))))
        out.append(recs)
    return out


def test_headline_claims_can_fail_and_survive_their_control():
    claims = [c for c in repro.CLAIMS if c.id in HEADLINE + ("first_order_contrast",)]
    right = {v.claim: v for v in judge_claims(claims, _world(True), scale="quick")}
    wrong = {v.claim: v for v in judge_claims(claims, _world(False), scale="quick")}
    for c in HEADLINE:
        # the paper right: reproduced, and its control is not: it counts
        assert right[c].verdict == "reproduced" and right[c].status == "reproduced", right[c].summary
        assert right[c].control.verdict == "not reproduced", right[c].control.summary
    assert right["first_order_contrast"].verdict == "reproduced"
    # the paper wrong (zero-order pays tau too): tau_independence and the contrast fail
    assert wrong["tau_independence"].verdict == "not reproduced", wrong["tau_independence"].summary
    assert wrong["first_order_contrast"].verdict == "not reproduced"


def test_diverged_arm_is_recorded_non_finite_with_a_warning():
    with pytest.warns(RuntimeWarning, match="arm 'one_point' diverged"):
        repro._warn_nonfinite("one_point", "d=10", [1.0, math.inf])
    recs = [[Record("p", "two_point", "tau=1", "err_1v2", 1.0),
             Record("p", "one_point", "tau=1", "err_1v2", math.inf)] for _ in range(3)]
    v = judge_claims([c for c in repro.CLAIMS if c.id == "two_vs_one_point"], recs)[0]
    assert v.verdict == "inconclusive" and v.parts[0].nonfinite == 3


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
