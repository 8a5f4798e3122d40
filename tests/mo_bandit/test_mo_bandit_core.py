"""Property tests of the D&L core (spec section 4) and its error cases."""

import itertools

import numpy as np
import pytest

from optzoo.mo_bandit import (
    Binary,
    Categorical,
    MOProblem,
    Oracle,
    Permutation,
    bi_knapsack,
    bi_tsp,
    divide_and_learn,
    hv_ratio,
    hypervolume,
    nondominated_mask,
    separable_categorical,
    toy_accelerator,
    tri_tsp,
)
from optzoo.mo_bandit.bandit import (
    BanditStats,
    RewardNormalizer,
    construct,
    coverage,
    decompose,
    overlap_at,
    perturb,
)
from optzoo.mo_bandit.dnl import VARIANTS, _valid_mask

CFG = VARIANTS["ucb"]


def _stats(space, seed=0):
    return BanditStats(space.n, space.n_values, _valid_mask(space), CFG, np.random.default_rng(seed))


@pytest.mark.parametrize("n,d,o", [(20, 25, 18), (50, 25, 18), (50, 10, 3), (7, 3, 1), (13, 5, 0), (12, 4, 0)])
def test_decomposition_covers_and_partitions(n, d, o):
    wins = decompose(n, d, o)
    c = coverage(wins, n)
    assert (c >= 1).all()
    assert all(len(np.unique(w)) == len(w) for w in wins)
    if o == 0:
        assert (c == 1).all() and sorted(np.concatenate(wins).tolist()) == list(range(n))


def test_overlap_schedule_non_increasing():
    o = [overlap_at(18, t, 0.1) for t in range(1, 2000)]
    assert o[0] == 18 and all(a >= b for a, b in zip(o[:-1], o[1:], strict=True))
    assert o[-1] == int(np.floor(18 * 1999 ** -0.1))


@pytest.mark.parametrize("space", [Permutation(15), Binary(15, weights=np.linspace(0.1, 1, 15), capacity=2.0),
                                   Categorical([[0, 1, 2], [5], ["a", "b"], [1, 2, 3, 4]] * 3)])
def test_construction_always_feasible(space):
    rng = np.random.default_rng(0)
    st = _stats(space)
    for _ in range(30):
        st.Q = rng.normal(size=st.Q.shape)
        st.N = rng.integers(0, 5, size=st.N.shape).astype(float)
        st.S = rng.normal(size=st.S.shape)
        wins = decompose(space.n, int(rng.integers(1, space.n + 1)), 0)
        x = construct(space, st, wins, coverage(wins, space.n))
        assert space.contains(x), x
        y = perturb(space, x, wins[0], 3, rng)
        assert space.contains(y)


def test_update_algebra_matches_closed_form():
    space = Categorical([list(range(4))] * 6)
    st = _stats(space)
    rng = np.random.default_rng(1)
    counts = np.ones(6, dtype=int)
    xs, rts = [], []
    for _ in range(40):
        x = rng.integers(0, 4, size=6)
        rt = st.update(x, float(rng.normal()), counts)
        xs.append(x)
        rts.append(rt)
        assert np.allclose(st.W.sum(1), 1.0)
    xs, rts = np.array(xs), np.array(rts)
    for p in range(6):
        for v in range(4):
            sel = xs[:, p] == v
            assert st.N[p, v] == sel.sum()
            if sel.any():
                assert np.isclose(st.Q[p, v], rts[sel].mean())


def test_ftrl_increment_capped_and_pi_floor():
    space = Categorical([list(range(3))] * 2)
    st = _stats(space)
    st.W = np.array([[1.0, 1e-9, 1e-9], [1 / 3, 1 / 3, 1 / 3]])
    st.norm.hist.extend([0.0] * 20 + [10.0] * 20)
    st.update(np.array([1, 0]), -100.0, np.ones(2, dtype=int))
    assert st.S[0, 1] == pytest.approx(100.0)  # (1 - (-2)) / 0.01 = 300 -> capped at 100
    assert st.S[1, 0] == pytest.approx(3.0 / (1 / 3))


def test_dual_bounds_and_inert_when_uncovered_twice():
    space = Permutation(12)
    st = _stats(space)
    counts = np.array([1] * 6 + [3] * 6)
    rng = np.random.default_rng(2)
    for _ in range(500):
        st.update(rng.permutation(12), float(rng.normal()), counts)
        assert ((st.lam >= 0) & (st.lam <= 10)).all()
    assert (st.lam[:6] == 0).all() and (st.lam[6:] > 0).all()
    # lambda only increases (viol >= 0.1): check monotone trace
    assert all(a <= b + 1e-15 for a, b in zip(st.lam_trace[:-1], st.lam_trace[1:], strict=True))


def test_dual_penalty_never_changes_a_choice():
    space = Permutation(10)
    a, b = _stats(space, 5), _stats(space, 5)
    rng = np.random.default_rng(0)
    for st in (a, b):
        st.Q = np.random.default_rng(9).normal(size=st.Q.shape)
        st.N = np.random.default_rng(8).integers(1, 5, size=st.N.shape).astype(float)
    b.lam = rng.uniform(0, 10, size=10)
    wins = decompose(10, 4, 2)
    c = coverage(wins, 10)
    for _ in range(20):
        assert np.array_equal(construct(space, a, wins, c), construct(space, b, wins, c))


def test_reward_normaliser_forms():
    nz = RewardNormalizer()
    assert nz(5.0) == pytest.approx(np.tanh(0.5))
    vals = [nz(float(r)) for r in range(1, 9)]
    assert all(-1 < v < 1 for v in vals)
    for r in range(9, 40):
        v = nz(float(r))
        assert -2 <= v <= 2
    assert nz(1e6) == 2.0 and nz(-1e6) == -2.0


def test_hv_matches_pymoo_and_edges():
    from pymoo.indicators.hv import HV

    rng = np.random.default_rng(0)
    F = rng.random((40, 3))
    assert hypervolume(F, np.ones(3)) == pytest.approx(HV(ref_point=np.ones(3))(F))
    assert hv_ratio(np.zeros((1, 2)), np.ones(2), np.zeros(2)) == pytest.approx(1.0)
    assert hv_ratio(np.full((3, 2), 2.0), np.ones(2), np.zeros(2)) == 0.0
    P = bi_knapsack(50, seed=0)  # maximise: ratio via sign flip
    assert 0 < hv_ratio(-np.array([[20.0, 20.0]]), -P.ref_point, -P.ideal_point) == pytest.approx(225 / 625)


def test_nondominated_mask_matches_brute_force():
    rng = np.random.default_rng(3)
    F = rng.integers(0, 6, size=(60, 2)).astype(float)
    mask = nondominated_mask(F)
    for i in range(len(F)):
        dominated = any((F[j] <= F[i]).all() and (F[j] < F[i]).any() for j in range(len(F)))
        dup_before = any((F[j] == F[i]).all() for j in range(i))
        assert mask[i] == (not dominated and not dup_before)


def test_weighted_sum_optimum_on_tiny_tsp():
    P = bi_tsp(7, seed=3)
    perms = np.array([(0,) + p for p in itertools.permutations(range(1, 7))])
    from optzoo.mo_bandit.problems import tour_lengths
    F = tour_lengths(P.info["dist"], perms)
    res = divide_and_learn(P, 720, weights=np.array([[1.0, 0.0]]), seed=0, patience=400)
    assert res.F_all[:, 0].min() == pytest.approx(F[:, 0].min())


def test_archive_is_exactly_nondominated_set_and_below_true_front():
    P = bi_knapsack(12, capacity=3.0, seed=0)
    grid = np.array(list(itertools.product([0, 1], repeat=12)))
    feas = grid[grid @ P.info["weights"] <= 3.0]
    Ftrue = -(feas @ P.info["values"].T)
    ref = np.zeros(2)
    res = divide_and_learn(P, 400, n_weight_vectors=5, seed=1, ref_point=ref, ideal_point=np.full(2, 6.0))
    Fall = -res.F_all
    expect = Fall[nondominated_mask(Fall)]
    assert sorted(map(tuple, -res.fun)) == sorted(map(tuple, expect))
    assert nondominated_mask(-res.fun).all()
    assert hypervolume(-res.fun, ref) <= hypervolume(Ftrue, ref) + 1e-12


@pytest.mark.parametrize("maker", [lambda: bi_tsp(12, seed=1), lambda: tri_tsp(12, seed=1),
                                   lambda: bi_knapsack(30, seed=1), toy_accelerator,
                                   lambda: separable_categorical(10, 4, seed=1)])
def test_budget_never_exceeded_and_determinism(maker):
    P = maker()
    a = divide_and_learn(P, 150, n_weight_vectors=3, seed=4)
    b = divide_and_learn(P, 150, n_weight_vectors=3, seed=4)
    assert a.nfev <= 150 and len(a.F_all) == a.nfev
    if not P.info.get("noisy"):
        assert np.array_equal(a.x, b.x) and np.array_equal(a.fun, b.fun)
    assert all(P.space.contains(x) for x in a.X_all)


def test_oracle_cache_is_free():
    P = bi_tsp(6, seed=0)
    o = Oracle(P, 2)
    x = np.arange(6)
    o(x)
    o(x)
    o(x[::-1])
    assert o.nfev == 2
    o(x)  # cached: no error
    from optzoo.mo_bandit import BudgetExhausted
    with pytest.raises(BudgetExhausted):
        o(np.array([1, 0, 2, 3, 4, 5]))


def test_callable_and_pymoo_problem_interfaces():
    def f(x):
        return np.array([x.sum(), (1 - x).sum() + 0.5 * x[0]])

    r = divide_and_learn(f, 100, space=Binary(8), n_objectives=2, n_weight_vectors=3, seed=0)
    assert r.fun.shape[1] == 2 and r.nfev <= 100
    from pymoo.core.problem import ElementwiseProblem

    class Toy(ElementwiseProblem):
        def __init__(self):
            super().__init__(n_var=5, n_obj=2, xl=1, xu=4, vtype=int)

        def _evaluate(self, x, out, *args, **kwargs):
            out["F"] = [float(((x - 1) ** 2).sum()), float(((x - 4) ** 2).sum())]

    r = divide_and_learn(Toy(), 200, n_weight_vectors=3, seed=0)
    assert r.X_all.max() <= 3 and r.fun[:, 0].min() == 0.0 and r.fun[:, 1].min() == 0.0


def _bad(x):
    return np.array([np.nan, 1.0])


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(problem=bi_tsp(6), budget=0), ValueError, "'budget' argument of divide_and_learn must be an int in \\[1, inf\\]. Got 0"),
    (dict(problem=bi_tsp(6), budget=10, variant="x"), ValueError, "'variant'"),
    (dict(problem=bi_tsp(6), budget=10, overlap=30), ValueError, "'overlap'"),
    (dict(problem=bi_tsp(6), budget=10, weights=[[0.2, 0.2]]), ValueError, "'weights'"),
    (dict(problem=bi_tsp(6), budget=10, n_objectives=3), ValueError, "'n_objectives'"),
    (dict(problem=bi_tsp(6), budget=10, foo=1), TypeError, "unexpected option 'foo'"),
    (dict(problem=_bad, budget=10, space=Binary(3), n_objectives=2), ValueError, "must return finite objectives"),
    (dict(problem=lambda x: np.ones(3), budget=10, space=Binary(3), n_objectives=2), ValueError, "shape \\(2,\\)"),
    (dict(problem=lambda x: np.ones(2), budget=10), TypeError, "'space'"),
    (dict(problem=[1, 2], budget=10), TypeError, "'problem' argument of divide_and_learn must be an MOProblem"),
])
def test_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        divide_and_learn(**kwargs)


@pytest.mark.parametrize("make,exc,match", [
    (lambda: Permutation(0), ValueError, "'n' argument of Permutation must be an int in \\[1, inf\\]. Got 0"),
    (lambda: Binary(0), ValueError, "'n' argument of Binary"),
    (lambda: Categorical([]), ValueError, "'options' argument of Categorical"),
    (lambda: Categorical([[1], []]), ValueError, "options\\[1\\]"),
    (lambda: MOProblem("perm", lambda x: x, 2), TypeError, "'space' argument of MOProblem"),
    (lambda: MOProblem(Permutation(3), lambda x: x, 2, sense=("min",)), ValueError, "'sense'"),
])
def test_space_errors(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


def test_single_objective_warns():
    with pytest.warns(UserWarning, match="single objective"):
        divide_and_learn(lambda x: np.array([float(x.sum())]), 20, space=Binary(4), n_objectives=1)
