"""The smoke reproduction runs and yields well-formed verdicts and figures."""

import json

from optzoo.repro.claim import NullProgress, Verdict
from optzoo.salaad.repro import CLAIMS, SCALES, figures, judge, run


def test_smoke_reproduction(tmp_path):
    cfg = SCALES["smoke"]
    per_seed = [json.loads(json.dumps(run(cfg, s, NullProgress()))) for s in range(cfg.seeds)]
    r = per_seed[0]
    assert set(r["methods"]) == {"salaad", "svd", "prune", "rpca"}
    for m, d in r["methods"].items():
        assert all(p <= b for p, b in zip(d["params"], r["budgets"], strict=True)), m
    assert r["entropy"] < r["dense_nll"]
    verdicts = judge(per_seed)
    assert [v.claim for v in verdicts] == [c.id for c in CLAIMS]
    assert all(isinstance(v, Verdict) for v in verdicts)
    assert next(v for v in verdicts if v.claim == "one_run").verdict == "passed"
    # the SLTrain-style baseline (full scale; smoke runs it at one budget to test the path)
    s = r["sltrain"]
    assert s["fractions"] == [0.5] and s["params"][0] <= s["budget"][0] == r["budgets"][0]
    assert s["budget"][0] - s["params"][0] < 0.02 * s["budget"][0]   # the budget is spent, not left idle
    assert r["entropy"] < s["nll"][0] < 2 * r["dense_nll"]
    v = next(v for v in verdicts if v.claim == "vs_sltrain")
    assert v.kind == "finding" and "training runs" in v.summary
    paths = figures(per_seed, tmp_path)
    assert paths and all(p.exists() for p in paths)
