"""The reproduction package: smoke run, JSON-clean output, one verdict per claim, and that the
claims can fail (synthetic per-seed metrics where Safe-KL is clearly worse / better)."""

import ast
import json
from pathlib import Path

import numpy as np
import pytest

from optzoo.repro.claim import NullProgress, Verdict
from optzoo.safe_kl import repro


@pytest.fixture(scope="module")
def smoke():
    cfg = repro.SCALES["smoke"]
    return [repro.run(cfg, s, NullProgress()) for s in range(cfg.seeds)]


def test_scales_carry_seeds():
    assert repro.SCALES["smoke"].seeds in (2, 3)
    assert repro.SCALES["quick"].seeds >= 5
    assert repro.SCALES["full"].seeds > repro.SCALES["quick"].seeds


def test_smoke_reproduction(smoke, tmp_path):
    again = repro.run(repro.SCALES["smoke"], 0, NullProgress())
    assert json.loads(json.dumps(again)) == json.loads(json.dumps(smoke[0]))  # JSON-clean, deterministic
    verdicts = repro.judge(smoke)
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert [v.kind for v in verdicts] == [c.kind for c in repro.CLAIMS]
    assert all(isinstance(v, Verdict) for v in verdicts)
    paths = repro.figures(smoke, tmp_path)
    assert paths and all(p.exists() for p in paths)


def test_bias_fixed_points_are_consistent(smoke):
    # Safe-KL's fixed point does not depend on the batch (unbiased); minibatch-LSE's does.
    for r in smoke:
        bs = r["A"]["datasets"]["diabetes"]["batches"]
        assert bs["200"]["bias_gap"]["safe_0.01"] == pytest.approx(bs["5"]["bias_gap"]["safe_0.01"], rel=1e-6)
        assert bs["5"]["bias_gap"]["minibatch_lse"] > bs["200"]["bias_gap"]["minibatch_lse"]
        assert all(g >= -1e-9 for b in bs.values() for g in b["bias_gap"].values())


def _fake(seed: int, better: bool) -> dict:
    """Per-seed metrics in the shape run() returns; Safe-KL clearly better or clearly worse."""
    rng = np.random.default_rng(seed)
    f = 0.1 if better else 10.0  # safe gap / LSE gap
    ds = {}
    for dn in ("diabetes", "synthetic"):
        bs = {}
        for b, lse in (("200", 1e-4), ("20", 1e-3), ("5", 1e-2)):
            g = lse * np.exp(0.1 * rng.normal())
            bs[b] = {"bias_gap": {"minibatch_lse": g, "safe_0.01": f * g, "sumexp": 0.0}, "sgd": {}}
        ds[dn] = {"batches": bs}
    acc_safe, acc_sum = (0.8, 0.6) if better else (0.6, 0.8)
    fail_safe = 0 if better else 3
    methods = {"safe_0.01@lam=1": {"test_acc": acc_safe + 0.01 * rng.normal(), "failed_runs": 0},
               "sumexp@lam=1": {"test_acc": acc_sum + 0.01 * rng.normal(), "failed_runs": 0},
               "safe_0.01@lam=0.01": {"test_acc": 0.5, "failed_runs": fail_safe},
               "sumexp@lam=0.01": {"test_acc": float("nan"), "failed_runs": 5}}
    eps = {e: {"safe": {"gap": f * 0.01 * np.exp(0.1 * rng.normal()), "failed_runs": fail_safe},
               "pot_asgd": {"gap": 0.01, "failed_runs": 1}, "pot_dual": {"gap": 0.1, "failed_runs": 0}}
           for e in ("0.1", "0.01")}
    return {"seed": seed, "A": {"datasets": ds}, "B": {"methods": methods}, "C": {"eps": eps},
            "P": {"gaps": [0.3, 0.05, 0.005, 0.0005], "slope": 1.0}}


def test_claims_can_fail_and_hold():
    worse = repro.judge([_fake(s, better=False) for s in range(6)])
    better = repro.judge([_fake(s, better=True) for s in range(6)])
    claims = [c.id for c in repro.CLAIMS if c.kind == "claim"]
    w = {v.claim: v.verdict for v in worse}
    b = {v.claim: v.verdict for v in better}
    assert any(w[c] == "not reproduced" for c in claims)
    for c in ("less_bias", "stable", "dro_accuracy", "eot"):
        assert w[c] == "not reproduced", c
        assert b[c] == "reproduced", c
    assert b["lse_bias_grows"] == "reproduced"


def test_less_bias_is_judged_per_dataset_and_batch():
    per_seed = [_fake(s, better=True) for s in range(6)]
    for r in per_seed:  # Safe-KL worse on one part only: the claim must not hide it
        g = r["A"]["datasets"]["synthetic"]["batches"]["20"]["bias_gap"]
        g["safe_0.01"] = 10.0 * g["minibatch_lse"]
    v = repro.judge(per_seed)[0]
    assert v.claim == "less_bias" and v.verdict == "not reproduced"
    assert {p.name for p in v.parts} == {"diabetes/b20", "diabetes/b5", "synthetic/b20", "synthetic/b5"}


def test_library_does_not_import_repro_nor_set_threads():
    root = Path(repro.__file__).parents[1]
    for f in root.glob("*.py"):
        tree = ast.parse(f.read_text())
        mods = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        mods += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not any("safe_kl.repro" in m for m in mods), f
    for f in Path(repro.__file__).parent.glob("*.py"):
        assert "set_num_threads" not in f.read_text(), f
