"""The reproduction: smoke run, JSON, one verdict per claim, claims that can fail and hold."""

import json

import numpy as np

from optzoo.repro.claim import VERDICTS, NullProgress
from optzoo.zo_sgd import repro


def test_smoke_reproduction(tmp_path):
    cfg = repro.SCALES["smoke"]
    assert cfg.seeds >= 2 and repro.SCALES["quick"].seeds >= 5
    per_seed = [repro.run(cfg, s, NullProgress()) for s in range(cfg.seeds)]
    assert json.loads(json.dumps(per_seed, allow_nan=False)) == per_seed
    verdicts = repro.judge(per_seed)
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert [v.kind for v in verdicts] == [c.kind for c in repro.CLAIMS]
    assert all(v.verdict in VERDICTS and v.summary and v.rule for v in verdicts)
    paths = repro.figures(per_seed, tmp_path)
    assert paths and all(p.exists() and p.stat().st_size > 0 for p in paths)


def _synthetic(holds: bool, n: int = 6, seed: int = 0) -> list[dict]:
    """run()'s layout with errors ~ sqrt(V / P) flat in d (holds) or ~ d / P^0.1 (fails)."""
    rng = np.random.default_rng(seed)
    Ps, Pr, Vs, Pc, ds = [1, 4, 16, 64], [1, 4, 16], [2, 8], [16, 64], [3e4, 1e5, 4e5]
    out = []
    for _ in range(n):
        cells = []
        for d in ds:
            def noisy(v):
                return (np.asarray(v, float) * np.exp(0.02 * rng.standard_normal(np.shape(v)))).tolist()
            P = np.asarray(Ps, float)
            err = {f"gaussian/{V}": noisy(np.sqrt((1 + V) / P) if holds else (d / 3e4) * P ** -0.1)
                   for V in Vs}
            err |= {f"rademacher/{V}": noisy(np.sqrt((1 + V) / np.asarray(Pr, float)) * (1 if holds else 2))
                    for V in Vs}
            cells.append({"d": d, "err": err, "r_eff": {str(V): float(V) for V in Vs},
                          "entry": {f"gaussian/{V}": [0.1] * len(Ps) for V in Vs},
                          "bound": {str(V): [None, None, 0.5 if holds else 0.01, 0.4] for V in Vs},
                          "param_cos": noisy(np.sqrt(np.asarray(Pc) / d) if holds else [0.5] * len(Pc)),
                          "func_cos": noisy([0.8] * len(Pc) if holds else [8e3 / d] * len(Pc)),
                          "param_cos_pred": np.sqrt(np.asarray(Pc) / d).tolist()})
        out.append({"cells": cells, "config": {"perturbations": Ps, "rademacher_perturbations": Pr,
                                               "outputs": Vs, "cosine_perturbations": Pc}})
    return out


def test_claims_can_fail_and_can_hold():
    good = {v.claim: v.verdict for v in repro.judge(_synthetic(True))}
    bad = {v.claim: v.verdict for v in repro.judge(_synthetic(False))}
    measured = [c.id for c in repro.CLAIMS if c.kind == "claim" and c.id != "training"]
    assert all(good[c] == "reproduced" for c in measured), good
    assert all(bad[c] != "reproduced" for c in measured), bad
    assert sum(bad[c] == "not reproduced" for c in measured) >= 4, bad
    assert good["variance_law"] == "passed" and bad["variance_law"] == "failed"
    assert good["jl_bound"] == "passed" and bad["jl_bound"] == "failed"
    assert good["training"] == "inconclusive"
