"""Regret on the separable bandit, the baselines' references, and the smoke reproduction."""

import json

import numpy as np
import pytest

from optzoo.mo_bandit import bandit_regret, bi_knapsack, bi_tsp, separable_categorical
from optzoo.mo_bandit.baselines import (
    exact_knapsack_front,
    pymoo_baseline,
    random_search,
    ws_tsp_front,
)
from optzoo.mo_bandit.metrics import nondominated_mask
from optzoo.repro.claim import NullProgress, Verdict


def test_separable_regret_learns_the_optimum_ts():
    P = separable_categorical(8, 4, 2, noise=0.1, seed=0)
    r = bandit_regret(P, 1500, variant="ts", seed=0)
    R = r["regret"]
    assert R[-1] / 1500 < R[199] / 200  # average regret falls
    assert r["argmax_hits"] >= 0.75


def test_exact_knapsack_front_is_exact_on_small_instance():
    import itertools

    P = bi_knapsack(10, capacity=2.5, seed=2)
    grid = np.array(list(itertools.product([0, 1], repeat=10)))
    V = grid[grid @ P.info["weights"] <= 2.5] @ P.info["values"].T
    true = V[nondominated_mask(-V)]
    F = exact_knapsack_front(P)
    assert sorted(map(tuple, np.round(F, 9))) == sorted(map(tuple, np.round(true, 9)))


def test_ws_tsp_front_endpoints_are_single_objective_optima():
    import itertools

    from optzoo.mo_bandit.problems import tour_lengths

    P = bi_tsp(7, seed=1)
    perms = np.array([(0,) + p for p in itertools.permutations(range(1, 7))])
    F = tour_lengths(P.info["dist"], perms)
    Fr, solver = ws_tsp_front(P, np.array([[1.0, 0.0], [0.0, 1.0]]), use_elkai=False)
    assert solver == "WS-2opt"
    assert Fr[:, 0].min() >= F[:, 0].min() - 1e-9
    assert Fr[:, 0].min() <= F[:, 0].min() * 1.05


@pytest.mark.parametrize("alg", ["nsga2", "moead"])
def test_pymoo_baselines_respect_budget_and_feasibility(alg):
    P = bi_knapsack(20, capacity=4.0, seed=0)
    o = pymoo_baseline(P, 250, algorithm=alg, pop_size=20)
    X, F = o.evaluated()
    assert o.nfev == 250 and all(P.space.contains(x) for x in X)
    o = random_search(bi_tsp(8), 50)
    assert o.nfev == 50


@pytest.fixture(scope="module")
def smoke_runs():
    from optzoo.mo_bandit import repro

    return [repro.run(repro.SCALES["smoke"], s, NullProgress()) for s in (0, 1)]


def test_smoke_reproduction(smoke_runs, tmp_path):
    from optzoo.mo_bandit import repro

    json.dumps(smoke_runs)
    verdicts = repro.judge(smoke_runs)
    assert all(isinstance(v, Verdict) for v in verdicts)
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert [v.kind for v in verdicts] == [c.kind for c in repro.CLAIMS]
    paths = repro.figures(smoke_runs, tmp_path)
    assert paths and all(p.exists() for p in paths)


def test_scales_have_seeds_and_active_decomposition():
    from optzoo.mo_bandit import repro

    assert repro.SCALES["smoke"].seeds in (2, 3)
    assert repro.SCALES["quick"].seeds >= 5 and repro.SCALES["full"].seeds > repro.SCALES["quick"].seeds
    for name in ("quick", "full"):
        cfg = repro.SCALES[name]
        big = [p for p in cfg.problems if repro._make(p, 90000).space.n >= 50]
        assert len(big) >= 3  # the decomposition has several overlapping windows there
        assert repro._windows_at_start(cfg.regret_n, "ucb") > 1 and repro._windows_at_start(cfg.regret_n, "ts") > 1


def test_smoke_is_deterministic(smoke_runs):
    from optzoo.mo_bandit import repro

    again = repro.run(repro.SCALES["smoke"], 0, NullProgress())
    a, b = smoke_runs[0]["problems"]["bi_tsp20"]["methods"], again["problems"]["bi_tsp20"]["methods"]
    for k in a:
        assert a[k]["hv"] == b[k]["hv"] and a[k]["trace"] == b[k]["trace"]
    assert smoke_runs[0]["regret"]["ucb"]["R"] == again["regret"]["ucb"]["R"]


def _synthetic(better: bool, n_seeds: int = 8) -> list[dict]:
    """Per-seed records in the shape run() returns, with D&L clearly better / worse."""
    rng = np.random.default_rng(5)
    B = 1000
    out = []
    for _ in range(n_seeds):
        probs = {}
        for p in ("bi_tsp20", "bi_tsp50", "tri_tsp50", "bi_kp50"):
            edge = {"bi_tsp20": 0.02, "bi_tsp50": 0.06, "tri_tsp50": 0.10, "bi_kp50": 0.05}[p]
            ref = 0.7 + rng.normal(0, 0.005)
            dl = (ref * 0.92 if better else ref * 0.5) + rng.normal(0, 0.003)
            nsga_hv = dl - edge if better else dl + edge
            methods = {"D&L": {"hv": dl, "nfev": B}, "nsga2": {"hv": nsga_hv + rng.normal(0, 0.002), "nfev": B},
                       "random": {"hv": dl - 0.1 if better else dl + 0.1, "nfev": B}}
            probs[p] = {"methods": methods, "reference": {"hv": ref, "solver": "WS-LKH (elkai)"}}
        T = np.unique(np.geomspace(1000, 16000, 9).astype(int)).astype(float)
        R = (5 * np.sqrt(T * np.log(T)) if better else 2.0 * T) * np.exp(rng.normal(0, 0.01, T.size))
        reg = {"T": T.astype(int).tolist(), "R": R.tolist(), "argmax_hits": 0.9}
        out.append({"budget": B, "problems": probs, "regret": {"ucb": reg, "ts": reg},
                    "mobo": {"problem": "bi_tsp20", "budget": 100,
                             "hv_dl": 0.45 + rng.normal(0, 0.005) if better else 0.30 + rng.normal(0, 0.005),
                             "hv_tpe": 0.42 + rng.normal(0, 0.005),
                             "cpu_dl": 0.02 if better else 1.0, "cpu_tpe": 6.0 * np.exp(rng.normal(0, 0.1))}})
    return out


def test_claims_can_fail_on_a_clearly_worse_method():
    from optzoo.mo_bandit import repro

    verdicts = repro.judge(_synthetic(better=False))
    claims = {v.claim: v.verdict for v in verdicts if v.kind == "claim"}
    assert "not reproduced" in claims.values()
    assert all(claims[k] == "not reproduced" for k in
               ("hv_vs_specialised", "vs_mobo_hv", "vs_mobo_cost", "trend", "regret_ucb", "regret_ts"))


def test_claims_hold_on_a_clearly_better_method():
    from optzoo.mo_bandit import repro

    verdicts = repro.judge(_synthetic(better=True))
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert all(v.verdict in ("reproduced", "passed") for v in verdicts), [(v.claim, v.verdict) for v in verdicts]
