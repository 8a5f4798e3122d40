"""The reproduction: smoke run, JSON, one verdict per claim, and claims that can fail."""

import json

import numpy as np
import pytest

from optzoo.dfl import repro
from optzoo.repro.claim import VERDICTS, NullProgress


def test_smoke_reproduction(tmp_path):
    cfg = repro.SCALES["smoke"]
    assert 2 <= cfg.seeds <= 3 and repro.SCALES["quick"].seeds >= 5
    per_seed = [repro.run(cfg, s, NullProgress()) for s in range(cfg.seeds)]
    assert json.loads(json.dumps(per_seed, allow_nan=False)) == per_seed  # JSON-clean
    again = repro.run(cfg, 0, NullProgress())
    strip = [{k: v for k, v in r["methods"].items()} for r in again["regret"]]
    assert [{m: d["test_regret"] for m, d in r.items()} for r in strip] == \
        [{m: d["test_regret"] for m, d in r["methods"].items()} for r in per_seed[0]["regret"]]
    verdicts = repro.judge(per_seed)
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert all(v.verdict in VERDICTS and v.summary and v.rule for v in verdicts)
    assert all(("candidate A" in c.statement) or ("candidate B" in c.statement) or c.kind == "check"
               for c in repro.CLAIMS)
    assert not any("paper's loss" in c.statement for c in repro.CLAIMS)
    paths = repro.figures(per_seed, tmp_path)
    assert paths and all(p.exists() and p.stat().st_size > 0 for p in paths)


def _synthetic(good: bool, n=6, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        def r(v):
            return float(v * np.exp(0.03 * rng.standard_normal()))

        cand = 0.10 if good else 0.30
        cells = []
        for prob, deg in (("shortest_path", 4), ("knapsack", 6)):
            ms = {"mse": r(0.2), "spo": r(0.1), "pfyl": r(0.11), "A": r(cand), "B": r(cand)}
            cells.append({"problem": prob, "deg": deg,
                          "methods": {m: {"test_regret": v, "loop_solver_calls": 0 if m in ("mse", "A", "B")
                                          else 100} for m, v in ms.items()}})
        fast = 0.01 if good else 0.5
        timing = [{"problem": p, "precompute_cpu_s": r(0.1) if good else r(5.0),
                   "methods": {m: {"loop_cpu_s": r(v), "epochs": 1,
                                   "solver_calls": 0 if m in ("mse", "A", "B") else 9}
                               for m, v in (("mse", 0.01), ("spo", 1.0), ("A", fast), ("B", fast))}}
                  for p in ("shortest_path", "knapsack")]
        out.append({"config": {"epochs": 20}, "regret": cells, "timing": timing})
    return out


def test_claims_can_hold_and_can_fail():
    good = {v.claim: v.verdict for v in repro.judge(_synthetic(True))}
    bad = {v.claim: v.verdict for v in repro.judge(_synthetic(False))}
    for k in ("A", "B"):
        for cid in (f"regret_competitive_{k}", f"beats_mse_misspecified_{k}", f"speed_{k}",
                    f"speed_near_mse_{k}", f"speed_with_precompute_{k}"):
            assert good[cid] == "reproduced", (cid, good[cid])
            assert bad[cid] == "not reproduced", (cid, bad[cid])
    assert good["solver_free"] == "passed"


def test_dbb_arm_is_pyepo_dbb_with_the_l1_regret_task_loss():
    import pyepo
    import torch

    from optzoo.dfl import FeasibleSetModel, decision_regret, enumerate_knapsack, precompute
    from optzoo.dfl.repro.experiment import DBBRegretLoss

    W, x, c = pyepo.data.knapsack.genData(16, 3, 6, dim=1, deg=4, noise_width=0.5, seed=5)
    m = FeasibleSetModel(enumerate_knapsack(W, 8.0), sense="max")
    ds, _, _ = precompute(m, x, c)
    loss = DBBRegretLoss(m)
    assert isinstance(loss.dbb, pyepo.func.blackboxOpt) and loss.dbb.lambd == 10.0
    pred = torch.randn(16, 6, requires_grad=True)
    val = loss(pred, ds.costs, ds.sols, ds.objs)
    # the value is the mean unnormalised regret of the decisions of pred (MAX sense)
    assert float(val.detach()) == pytest.approx(decision_regret(pred, ds.costs, ds.objs, m, reduction="mean"),
                                       rel=1e-5, abs=1e-6)
    val.backward()
    assert torch.isfinite(pred.grad).all()


def test_solver_free_loop_time_is_the_median_over_rounds():
    from optzoo.dfl.repro import _per_epoch

    t = {"methods": {"A": {"loop_cpu_s": 1.9, "epochs": 40, "round_cpu_s": [0.1, 0.1, 1.6, 0.1],
                           "round_epochs": 10},
                     "spo": {"loop_cpu_s": 2.0, "epochs": 2}}}
    assert _per_epoch(t, "A") == pytest.approx(0.01)     # the slow third round does not count
    assert _per_epoch(t, "spo") == pytest.approx(1.0)



def test_run_passes_each_cells_own_n_train(monkeypatch):
    seen = []

    def fake_problem(problem, deg, cfg, seed, progress, *, n_train=None):
        seen.append((problem, deg, n_train))
        return {"problem": problem, "deg": deg, "methods": {}}

    def fake_time(problem, deg, cfg, seed, progress):
        seen.append((problem, deg, "time"))
        return {"problem": problem, "deg": deg, "methods": {}}

    monkeypatch.setattr(repro, "run_problem", fake_problem)
    monkeypatch.setattr(repro, "time_problem", fake_time)
    cfg = repro.Config(problems=(("shortest_path", 4), ("knapsack", 4, 300), ("knapsack", 6, 300)))
    out = repro.run(cfg, 0, NullProgress())
    # timing on each problem's largest deg; the cells keep their own n_train (None: cfg's)
    assert seen == [("shortest_path", 4, None), ("knapsack", 4, 300), ("knapsack", 6, 300),
                    ("knapsack", 6, "time"), ("shortest_path", 4, "time")]
    assert out["config"]["problems"] == [["shortest_path", 4], ["knapsack", 4, 300], ["knapsack", 6, 300]]
