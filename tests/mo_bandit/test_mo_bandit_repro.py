"""Regret on the separable bandit, the baselines' references, and the smoke reproduction."""

import numpy as np
import pytest

from optzoo.mo_bandit import (
    bandit_regret,
    bi_knapsack,
    bi_tsp,
    divide_and_learn,
    separable_categorical,
)
from optzoo.mo_bandit.baselines import (
    exact_knapsack_front,
    pymoo_baseline,
    random_search,
    ws_tsp_front,
)
from optzoo.mo_bandit.metrics import nondominated_mask
from optzoo.repro.claim import CHECK_WORDS, CLAIM_WORDS
from optzoo.repro.evidence import Record, run_in_process
from optzoo.repro.judging import check_claims, judge_claims


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

    return run_in_process(repro, "smoke")


def test_smoke_reproduction_controls_and_figures(smoke_runs, tmp_path):
    from optzoo.mo_bandit import repro

    check_claims(repro.CLAIMS)
    verdicts = judge_claims(repro.CLAIMS, smoke_runs, scale="smoke", notes=repro.notes(smoke_runs))
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    for v, c in zip(verdicts, repro.CLAIMS, strict=True):
        assert v.kind == c.kind and v.summary and v.rule
        assert v.verdict in (CHECK_WORDS if c.kind == "check" else CLAIM_WORDS)
        assert "could not be read" not in v.summary, (c.id, v.summary)
        if c.kind == "claim":
            assert c.control is not None and v.control is not None, c.id
            assert "could not be read" not in v.control.summary, (c.id, v.control.summary)
    by = {v.claim: v for v in verdicts}
    assert by["equal_budget"].verdict == by["control_differs"].verdict == "passed"
    assert set(repro.HEADLINE) <= {c.id for c in repro.CLAIMS if c.kind == "claim"}
    assert repro.MAX_THREADS == 1  # vs_mobo_cost is judged on process CPU time
    paths = repro.figures(smoke_runs, tmp_path)
    assert paths and all(p.exists() for p in paths)


def test_every_arm_has_its_control_on_the_same_parts(smoke_runs):
    """The control arm of every claim is run in the same units, on the same parts/instances."""
    seed = smoke_runs[0]
    parts = lambda arm, metric: {(r.part, r.instance) for r in seed if r.arm == arm and r.metric == metric}  # noqa: E731
    assert parts("dl_paper", "ratio_ref") == parts("dl_uniform_paper", "ratio_ref") != set()
    assert parts("dl_bo", "cpu") == parts("dl_uniform_bo", "cpu") != set()
    assert parts("ucb", "regret_norm") == parts("uniform", "regret_norm") != set()
    assert parts("dl", "evals_to_target") == parts("dl_uniform", "evals_to_target") != set()


def test_uniform_expert_removes_only_the_learning():
    """expert='uniform' draws the construction uniformly (the statistics are never read): on the
    separable bandit its regret is linear and the learner's is not; the local search, weights and
    budget are the same (D&L with either expert spends the same budget on the same weights)."""
    P = separable_categorical(20, 8, 2, noise=0.1, seed=3)
    T = 3000
    r_u = bandit_regret(P, T, seed=0, expert="uniform")["regret"]
    r_l = bandit_regret(P, T, seed=0)["regret"]
    # uniform: constant expected regret per round (linear); learner: falling
    assert abs((r_u[-1] - r_u[T // 2 - 1]) / (r_u[T // 2 - 1]) - 1.0) < 0.1
    assert r_l[-1] - r_l[T // 2 - 1] < 0.5 * (r_u[-1] - r_u[T // 2 - 1])
    Q = bi_tsp(20, seed=0)
    a = divide_and_learn(Q, 400, n_weight_vectors=2, seed=1)
    b = divide_and_learn(Q, 400, n_weight_vectors=2, seed=1, expert="uniform")
    assert a.nfev == b.nfev == 400 and np.array_equal(a.extra["weights"], b.extra["weights"])
    assert b.extra["config"].expert == "uniform" and a.extra["config"].expert == "ucb"
    for f in ("decomposition_size", "overlap", "nb_rounds", "patience", "max_iter"):
        assert getattr(a.extra["config"], f) == getattr(b.extra["config"], f)


def test_regret_claim_slope_fails_on_the_control_at_smoke(smoke_runs):
    from optzoo.mo_bandit import repro

    c = next(c for c in repro.CLAIMS if c.id == "regret_ucb")
    got = c.evidence.collect(smoke_runs)["regret"]
    ctl = c.evidence.collect(smoke_runs, c.control.arms)["regret"]
    assert all(x < y for x, y in zip(got, ctl, strict=True))
    assert min(ctl) > 0.3  # linear regret: excess slope near 0.45


def test_scales_have_seeds_and_active_decomposition():
    from optzoo.mo_bandit import repro

    assert repro.SCALES["smoke"].seeds in (2, 3)
    assert repro.SCALES["quick"].seeds >= 5 and repro.SCALES["full"].seeds > repro.SCALES["quick"].seeds
    for name in ("quick", "full"):
        cfg = repro.SCALES[name]
        big = [p for p in cfg.problems if repro._make(p, 90000).space.n >= 50]
        assert len(big) >= 3  # the decomposition has several overlapping windows there
        assert repro._windows_at_start(cfg.regret_n, "ucb") > 1 and repro._windows_at_start(cfg.regret_n, "ts") > 1
        assert {"bi_tsp20", "bi_tsp50", "bi_kp50", "bi_cvrp20"} <= set(cfg.paper_problems)
        assert cfg.paper_weights == 25 and cfg.paper_budget >= 300_000  # the official loop
        assert cfg.mobo_problem in cfg.uniform_problems


def test_smoke_is_deterministic(smoke_runs):
    from optzoo.mo_bandit import repro

    again = repro.run(repro.SCALES["smoke"], 0, _Null())
    key = lambda r: (r.part, r.arm, r.instance, r.metric)  # noqa: E731
    a = {key(r): r.value for r in smoke_runs[0] if r.metric not in ("cpu", "cpu_regret")}
    b = {key(r): r.value for r in again if r.metric not in ("cpu", "cpu_regret")}
    assert a == b


class _Null:
    def start(self, total, description=""):
        pass

    def advance(self, n=1):
        pass


def _synthetic(better: bool, n_seeds: int = 8) -> list[list[Record]]:
    """Records in the shape run() returns: the method ("dl" arms) clearly better or worse, and
    its control ("uniform" arms) always like the worse method."""
    from optzoo.mo_bandit import repro

    rng = np.random.default_rng(5)
    out = []
    for _ in range(n_seeds):
        recs = []
        for good, suffix in ((better, ""), (False, "_uniform")):
            for p in ("Bi-TSP-20", "Bi-TSP-50", "Bi-KP-50", "Bi-CVRP-20"):
                recs.append(Record(p, f"dl{suffix}_paper", "ratio", "ratio_ref",
                                   (0.9 if good else 0.5) + rng.normal(0, 0.01)))
            recs.append(Record("Bi-TSP-20", f"dl{suffix}", "target", "evals_to_target",
                               (0.3 if good else 400.0) * np.exp(rng.normal(0, 0.1))))
            recs.append(Record("Bi-TSP-20, B=100", f"dl{suffix}_bo", "cpu", "cpu",
                               (0.01 if good else 5.0) * np.exp(rng.normal(0, 0.1))))
            recs.append(Record("Bi-TSP-20, B=100", f"dl{suffix}_bo", "hv", "hv",
                               (0.45 if good else 0.30) + rng.normal(0, 0.005)))
            for p, edge in (("Bi-TSP-20", 0.02), ("Bi-TSP-50", 0.06), ("Tri-TSP-50", 0.10)):
                recs.append(Record(p, f"dl{suffix}", "hv", "hv", 0.5 + (edge if good else -edge)
                                   + rng.normal(0, 0.002)))
        for p in ("Bi-TSP-20", "Bi-TSP-50", "Tri-TSP-50"):
            recs.append(Record(p, "nsga2", "hv", "hv", 0.5))
        recs.append(Record("Bi-TSP-20", "tpe", "target", "evals_to_target", 60.0))
        recs.append(Record("Bi-TSP-20, B=100", "tpe", "cpu", "cpu", 5.0 * np.exp(rng.normal(0, 0.1))))
        recs.append(Record("Bi-TSP-20, B=100", "tpe", "hv", "hv", 0.42 + rng.normal(0, 0.005)))
        T = np.unique(np.geomspace(1000, 16000, 9).astype(int)).astype(float)
        for arm, good in (("ucb", better), ("ts", better), ("uniform", False)):
            R = (5 * np.sqrt(T * np.log(T)) if good else 2.0 * T) * np.exp(rng.normal(0, 0.01, T.size))
            recs += [Record("regret", arm, f"T{int(t)}", "regret_norm", r / np.sqrt(t * np.log(t)), x=t)
                     for t, r in zip(T, R, strict=True)]
        out.append(recs)
    claims = [c for c in repro.CLAIMS if c.kind == "claim"]
    return claims, out


def test_claims_fail_on_a_clearly_worse_method_and_their_controls_never_reproduce():
    claims, recs = _synthetic(better=False)
    for v in judge_claims(claims, recs, scale="quick"):
        assert v.verdict == "not reproduced", (v.claim, v.summary)
        assert v.control.verdict == "not reproduced", (v.claim, v.control.summary)


def test_claims_hold_on_a_clearly_better_method_and_survive_their_controls():
    claims, recs = _synthetic(better=True)
    for v in judge_claims(claims, recs, scale="quick"):
        assert v.verdict == "reproduced", (v.claim, v.summary)
        assert v.status == "reproduced", (v.claim, v.control.summary)
