"""Oracle bookkeeping: counts, batches, ties, comparator path, bad values."""

import functools

import numpy as np
import pytest

from optzoo.comparison import ComparisonOracle, comparison_minimize


def test_counter_counts_every_pair_and_batches():
    orc = ComparisonOracle(lambda Z: Z.sum(1), vectorized=True)
    orc.greater(np.ones((7, 3)), np.zeros((7, 3)))
    orc(np.ones(3), np.zeros(3))
    assert orc.ncomparisons == 8 and orc.nbatches == 2
    calls = []
    plain = ComparisonOracle(lambda x: calls.append(1) or float(x.sum()))
    key = functools.cmp_to_key(plain.cmp)
    sorted([np.array([v]) for v in (3.0, 1.0, 2.0, 0.0)], key=key)
    assert plain.ncomparisons > 0 and len(calls) == 2 * plain.ncomparisons


def test_ties_follow_a_seeded_coin_and_constant_f_terminates():
    a = ComparisonOracle(lambda Z: np.zeros(len(Z)), vectorized=True, seed=3)
    b = ComparisonOracle(lambda Z: np.zeros(len(Z)), vectorized=True, seed=3)
    ra, rb = a.greater(np.ones((50, 2)), np.zeros((50, 2))), b.greater(np.ones((50, 2)), np.zeros((50, 2)))
    assert np.array_equal(ra, rb) and 0 < ra.sum() < 50 and a.nties == 50
    orc = ComparisonOracle(lambda x: 1.0, seed=0)
    for method in ("tr", "ngd"):
        res = comparison_minimize(orc, np.ones(3), eps=0.1, L=1.0, method=method, max_iter=5, stop="plan")
        assert np.isfinite(res.trajectory).all() and res.nit == 5


def test_comparator_path():
    f = lambda x: float(np.sum(x ** 2))  # noqa: E731
    orc = ComparisonOracle.from_comparator(lambda x, y: int(np.sign(f(x) - f(y))), dim=2)
    assert orc(np.ones(2), np.zeros(2)) and not orc(np.zeros(2), np.ones(2))
    boolean = ComparisonOracle.from_comparator(lambda x, y: f(x) > f(y))
    assert boolean.greater(np.ones((2, 2)), np.zeros((2, 2))).all()
    orc.reset()
    res = comparison_minimize(orc, np.array([1.0, -1.0]), eps=0.1, L=1.0, max_iter=3)
    assert np.isnan(res.fun) and res.ncomparisons == orc.ncomparisons
    with pytest.raises(TypeError, match=r"values needs a value function"):
        orc.values(np.ones(2))


def test_bad_values_and_comparators_raise_naming_the_call():
    with pytest.raises(ValueError, match=r"'f' argument of ComparisonOracle must return finite values. Got nan"):
        ComparisonOracle(lambda x: float("nan"))(np.ones(2), np.zeros(2))
    with pytest.raises(TypeError, match=r"'f' argument of ComparisonOracle must be a function returning a real scalar"):
        ComparisonOracle(lambda x: [1.0, 2.0])(np.ones(2), np.zeros(2))
    with pytest.raises(ValueError, match=r"returning 6 values for 6 points"):
        ComparisonOracle(lambda Z: np.ones(2), vectorized=True).greater(np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"'compare' argument of ComparisonOracle must be a comparator"):
        ComparisonOracle.from_comparator(lambda x, y: 0.5)(np.ones(2), np.zeros(2))
    with pytest.raises(TypeError, match=r"'f' argument of ComparisonOracle must be a callable"):
        ComparisonOracle(3.0)
    with pytest.raises(ValueError, match=r"'Y' argument of ComparisonOracle.greater must have the shape"):
        ComparisonOracle(lambda x: 0.0).greater(np.ones((2, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"'X' argument of ComparisonOracle must have shape \(k, 2\)"):
        ComparisonOracle(lambda x: 0.0, dim=2).greater(np.ones(3), np.ones(3))
