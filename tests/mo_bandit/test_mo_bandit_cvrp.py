"""Bi-CVRP: the generator, the greedy split decoding, its vectorised evaluation, the OR-Tools
weighted-sum reference front, D&L on it and its place in the reproduction."""

import dataclasses
import itertools

import numpy as np
import pytest

from optzoo.mo_bandit import (
    Permutation,
    bi_cvrp,
    bi_tsp,
    divide_and_learn,
    hv_ratio,
    weight_vectors,
)
from optzoo.mo_bandit.baselines import ws_cvrp_front
from optzoo.mo_bandit.metrics import nondominated_mask
from optzoo.mo_bandit.problems import cvrp_objectives, route_objectives, split_routes
from optzoo.repro.claim import NullProgress


def _slow_objectives(dist, demand, capacity, x):
    """Reference: walk the order customer by customer, one route at a time."""
    lengths, length, load, here = [], 0.0, 0.0, 0
    for c in x:
        node = int(c) + 1
        if load + demand[c] > capacity:  # close the route and start a new one from the depot
            lengths.append(length + dist[here, 0])
            length, load, here = 0.0, 0.0, 0
        length += dist[here, node]
        load += demand[c]
        here = node
    lengths.append(length + dist[here, 0])
    return np.array([sum(lengths), max(lengths)])


# ---- the generator ---------------------------------------------------------------------------

@pytest.mark.parametrize("n,cap,ref", [(20, 30.0, (30.0, 4.0)), (50, 40.0, (45.0, 4.0)),
                                       (100, 50.0, (80.0, 4.0)), (10, 20.0, (30.0, 4.0))])
def test_generator_shapes_capacity_and_reference(n, cap, ref):
    P = bi_cvrp(n, seed=3)
    info = P.info
    assert isinstance(P.space, Permutation) and P.n == n and P.n_objectives == 2
    assert P.sense == ("min", "min") and P.name == f"Bi-CVRP-{n}"
    assert info["coords"].shape == (n + 1, 2) and P.coords.shape == (n, 2)
    assert ((info["coords"] >= 0) & (info["coords"] < 1)).all()
    assert info["dist"].shape == (n + 1, n + 1)
    np.testing.assert_allclose(info["dist"][0, 1], np.linalg.norm(info["coords"][0] - info["coords"][1]))
    assert info["demand"].shape == (n,) and np.issubdtype(info["demand"].dtype, np.integer)
    assert info["demand"].min() >= 1 and info["demand"].max() <= 9
    assert info["capacity"] == cap
    np.testing.assert_array_equal(P.ref_point, ref)
    np.testing.assert_array_equal(P.ideal_point, [0.0, 0.0])


def test_generator_demands_cover_one_to_nine_and_capacity_rule():
    d = bi_cvrp(2000, seed=0).info["demand"]
    assert set(np.unique(d).tolist()) == set(range(1, 10))
    assert bi_cvrp(30, seed=0).info["capacity"] == pytest.approx(30 + 10 / 3)  # interpolated, ours
    assert bi_cvrp(20, capacity=12.0, seed=0).info["capacity"] == 12.0


def test_generator_is_deterministic_per_seed():
    a, b, c = bi_cvrp(20, seed=7), bi_cvrp(20, seed=7), bi_cvrp(20, seed=8)
    for key in ("coords", "demand"):
        np.testing.assert_array_equal(a.info[key], b.info[key])
    assert not np.array_equal(a.info["coords"], c.info["coords"])
    x = np.arange(20)
    np.testing.assert_array_equal(a.evaluate(x), b.evaluate(x))


# ---- the split decoding and the evaluation ----------------------------------------------------

def test_hand_checked_tiny_instance():
    # depot (0,0); customers 0: (1,0), 1: (2,0), 2: (0,1); demands 5 each; capacity 10
    coords = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    dist = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    demand, cap = np.array([5, 5, 5]), 10.0
    routes = split_routes([0, 1, 2], demand, cap)
    assert [r.tolist() for r in routes] == [[0, 1], [2]]
    # routes 0->(1,0)->(2,0)->0 = 1 + 1 + 2 = 4 and 0->(0,1)->0 = 2
    np.testing.assert_allclose(cvrp_objectives(dist, demand, cap, [[0, 1, 2]]), [[6.0, 4.0]])
    # [2, 0] then [1]: 1 + sqrt(2) + 1 and 2 + 2
    np.testing.assert_allclose(cvrp_objectives(dist, demand, cap, [[2, 0, 1]]),
                               [[6.0 + np.sqrt(2.0), 4.0]])
    np.testing.assert_allclose(route_objectives(dist, [[2, 0], [1], []]), [6.0 + np.sqrt(2.0), 4.0])
    # capacity 15: a single route through everyone
    np.testing.assert_allclose(cvrp_objectives(dist, demand, 15.0, [[0, 1, 2]]),
                               [[1 + 1 + np.sqrt(5.0) + 1] * 2])


@pytest.mark.parametrize("n", [1, 7, 20, 50])
def test_split_visits_every_customer_once_within_capacity_and_greedily(n):
    P = bi_cvrp(n, seed=1)
    d, cap = P.info["demand"], P.info["capacity"]
    rng = np.random.default_rng(0)
    for _ in range(50):
        x = rng.permutation(n)
        routes = split_routes(x, d, cap)
        np.testing.assert_array_equal(np.concatenate(routes), x)  # the order, cut into routes
        assert all(len(r) and d[r].sum() <= cap for r in routes)
        # greedy: a route closes only when the next customer does not fit
        assert all(d[r].sum() + d[nxt[0]] > cap for r, nxt in zip(routes[:-1], routes[1:], strict=True))


@pytest.mark.parametrize("n", [5, 20, 50, 100])
def test_vectorised_evaluation_matches_a_slow_loop(n):
    P = bi_cvrp(n, seed=2)
    dist, d, cap = P.info["dist"], P.info["demand"], P.info["capacity"]
    rng = np.random.default_rng(n)
    X = np.stack([rng.permutation(n) for _ in range(64)])
    F = cvrp_objectives(dist, d, cap, X)
    slow = np.array([_slow_objectives(dist, d, cap, x) for x in X])
    np.testing.assert_allclose(F, slow, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.stack([P.evaluate(x) for x in X]), slow, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.stack([route_objectives(dist, P.info["decode"](x)) for x in X]),
                               slow, rtol=1e-12, atol=1e-12)
    assert (F[:, 1] <= F[:, 0] + 1e-12).all()


def test_a_customer_heavier_than_the_capacity_gets_its_own_route():
    routes = split_routes([0, 1, 2], np.array([3, 12, 3]), 10.0)
    assert [r.tolist() for r in routes] == [[0], [1], [2]]


@pytest.mark.parametrize("make,exc,match", [
    (lambda: bi_cvrp(0), ValueError, r"The 'n' argument of bi_cvrp must be an int in \[1, inf\]\. Got 0\."),
    (lambda: bi_cvrp(2.5), TypeError, r"The 'n' argument of bi_cvrp must be an int.*Got 2\.5"),
    (lambda: bi_cvrp(10, capacity=5), ValueError,
     r"The 'capacity' argument of bi_cvrp must be a finite real number in \[9, inf\]\. Got 5\.0\."),
    (lambda: bi_cvrp(10, capacity=np.inf), ValueError, r"'capacity' argument of bi_cvrp .* Got inf"),
    (lambda: bi_cvrp(10, capacity="30"), TypeError, r"'capacity' argument of bi_cvrp .* Got '30'"),
    (lambda: bi_cvrp(10, seed=1.5), TypeError, r"The 'seed' argument of bi_cvrp must be an int\. Got 1\.5"),
    (lambda: ws_cvrp_front(bi_tsp(5), [[0.5, 0.5]]), TypeError,
     r"The 'problem' argument of ws_cvrp_front must be a Bi-CVRP MOProblem .* Got 'Bi-TSP-5'"),
    (lambda: ws_cvrp_front(bi_cvrp(5), [[0.5, 0.6]]), ValueError,
     r"The 'weights' argument of ws_cvrp_front must be a \(k, 2\) array of non-negative rows summing to 1"),
    (lambda: ws_cvrp_front(bi_cvrp(5), [0.5, 0.5]), ValueError, r"'weights' argument of ws_cvrp_front .* shape"),
    (lambda: ws_cvrp_front(bi_cvrp(5), [[0.5, 0.5]], time_limit_s=0), ValueError,
     r"The 'time_limit_s' argument of ws_cvrp_front must be a finite real number in \(0, inf\)\. Got 0\.0"),
    (lambda: ws_cvrp_front(bi_cvrp(5), [[0.5, 0.5]], solution_limit=0), ValueError,
     r"The 'solution_limit' argument of ws_cvrp_front must be an int in \[1, inf\]\. Got 0"),
])
def test_bad_inputs_name_argument_rule_and_value(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


# ---- the OR-Tools reference front --------------------------------------------------------------

def _check_routes(P, routes):
    d, cap, n = P.info["demand"], P.info["capacity"], P.n
    assert sorted(np.concatenate(routes).tolist()) == list(range(n))
    assert all(d[r].sum() <= cap for r in routes)


def test_ortools_front_is_nondominated_and_matches_its_routes():
    pytest.importorskip("ortools")
    P = bi_cvrp(12, seed=4)
    F, solver, R = ws_cvrp_front(P, weight_vectors(2, 6), time_limit_s=0.05, return_routes=True)
    assert solver == "WS-OR-Tools routing" and F.shape[1] == 2 and len(F) == len(R) >= 1
    assert nondominated_mask(F).all()
    for f, routes in zip(F, R, strict=True):
        _check_routes(P, routes)
        np.testing.assert_allclose(f, route_objectives(P.info["dist"], routes), rtol=1e-12)
        lengths = [_slow_objectives(P.info["dist"], P.info["demand"], np.inf, r)[0] for r in routes]
        np.testing.assert_allclose(f, [sum(lengths), max(lengths)], rtol=1e-12)
    # with a solution limit (and a time limit that does not bind) the search is deterministic;
    # with only a time limit it depends on the machine's speed
    a, _ = ws_cvrp_front(P, weight_vectors(2, 6), time_limit_s=30.0, solution_limit=20)
    b, _ = ws_cvrp_front(P, weight_vectors(2, 6), time_limit_s=30.0, solution_limit=20)
    np.testing.assert_array_equal(a, b)


def test_ortools_end_points_beat_every_greedy_split_order_and_hv_is_sane():
    pytest.importorskip("ortools")
    P = bi_cvrp(7, seed=5)
    perms = np.array(list(itertools.permutations(range(7))))
    G = cvrp_objectives(P.info["dist"], P.info["demand"], P.info["capacity"], perms)
    F, _ = ws_cvrp_front(P, np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]), time_limit_s=0.1)
    # OR-Tools chooses routes freely, so it is at least as good as the best decoded order
    assert F[:, 0].min() <= G[:, 0].min() + 1e-9
    assert F[:, 1].min() <= G[:, 1].min() + 1e-9
    r, z = P.ref_point, P.ideal_point
    hv = hv_ratio(F, r, z)
    assert 0.0 < hv <= 1.0
    # three supported points against the whole decoded space's front (5040 orders): close to it
    # (on seeds 0-5 it was above it; the decoded front also has unsupported points)
    assert hv >= 0.95 * hv_ratio(G, r, z)


# ---- D&L on Bi-CVRP and the reproduction -------------------------------------------------------

def test_divide_and_learn_runs_on_bi_cvrp():
    P = bi_cvrp(10, seed=0)
    a = divide_and_learn(P, 200, n_weight_vectors=3, seed=1)
    b = divide_and_learn(P, 200, n_weight_vectors=3, seed=1)
    assert 0 < a.nfev <= 200 and a.fun.shape[1] == 2 and nondominated_mask(a.fun).all()
    assert all(P.space.contains(x) for x in a.X_all)
    np.testing.assert_allclose(np.stack([P.evaluate(x) for x in a.x]), a.fun)
    np.testing.assert_array_equal(a.x, b.x)
    assert 0.0 < a.hv <= 1.0


def test_repro_makes_and_runs_bi_cvrp():
    pytest.importorskip("ortools")
    from optzoo.mo_bandit import repro

    assert "bi_cvrp20" in repro.SCALES["quick"].problems
    assert {"bi_cvrp20", "bi_cvrp50"} <= set(repro.SCALES["full"].problems)
    P = repro._make("bi_cvrp20", 0)
    assert P.name == "Bi-CVRP-20" and repro._PRETTY["bi_cvrp50"] == "Bi-CVRP-50"
    np.testing.assert_array_equal(P.info["coords"], repro._make("bi_cvrp20", 0).info["coords"])
    with pytest.raises(ValueError, match="unknown mo_bandit problem 'bi_vrp20'"):
        repro._make("bi_vrp20", 0)
    cfg = dataclasses.replace(repro.SCALES["smoke"], problems=("bi_cvrp20",), regret_variants=(),
                              optuna_budget=0, ws_weights=3, cvrp_time_s=0.05)
    out = repro.run(cfg, 0, NullProgress())
    ref = [r for r in out if r.arm == "reference" and r.part == "Bi-CVRP-20" and r.metric == "hv"]
    assert [r.instance for r in ref] == ["WS-OR-Tools routing"] and 0 < ref[0].value <= 1
    hv = {r.arm: r.value for r in out if r.metric == "hv" and r.part == "Bi-CVRP-20"}
    assert {"dl", "nsga2", "random", "reference"} <= set(hv) and all(0 <= v <= 1 for v in hv.values())
    assert all(r.value == 1.0 for r in out if r.metric == "budget_ok")
