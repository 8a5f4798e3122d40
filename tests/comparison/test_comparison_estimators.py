"""The subroutines' mathematics: sign lemma P1, normalized gradient and Hessian accuracy and cost."""

import math

import numpy as np
import pytest

from optzoo.comparison import (
    ComparisonOracle,
    gradient_cost,
    hessian_cost,
    normalized_gradient,
    normalized_hessian,
    sign_probe,
)
from optzoo.comparison.repro.problems import quadratic


def test_sign_lemma_p1_on_a_function_with_known_rho():
    # f = sum cos(x_i): Hessian diag(-cos), rho = 1 (third derivative sin, per axis |u_i|^3 <= ...)
    rng = np.random.default_rng(0)
    n, k = 5, 4000
    X = rng.normal(size=(k, n)) * 2
    U = rng.normal(size=(k, n))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    r = 10 ** rng.uniform(-3, -0.5, size=k)
    orc = ComparisonOracle(lambda Z: np.cos(Z).sum(1), vectorized=True)
    got = sign_probe(orc, X, U, r)
    dd = (-np.sin(X) * U).sum(1)
    margin = np.abs(dd) > 1.0 * r ** 2 / 6
    assert margin.sum() > 3000
    assert np.array_equal(got[margin], dd[margin] > 0)
    assert orc.ncomparisons == k


@pytest.mark.parametrize("delta", [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6])
@pytest.mark.parametrize("n", [1, 2, 5, 16])
def test_normalized_gradient_on_linear_f(n, delta):
    a = np.random.default_rng(n).normal(size=n)
    orc = ComparisonOracle(lambda Z: Z @ a, vectorized=True)
    g, cost = normalized_gradient(orc, np.random.default_rng(1).normal(size=n), delta=delta)
    assert np.linalg.norm(g - a / np.linalg.norm(a)) <= delta
    assert cost == orc.ncomparisons == gradient_cost(n, delta)
    assert cost <= n * (2 + math.log2(2 * math.sqrt(n) / delta))


def test_gradient_cost_is_linear_in_n_and_in_log_one_over_delta():
    ns = np.array([8, 16, 32, 64, 128])
    c = np.array([gradient_cost(int(n), 1e-3) for n in ns])
    slope = np.polyfit(np.log(ns), np.log(c), 1)[0]
    assert 1.0 <= slope < 1.15  # n log n with the sqrt(n) in the bisection range
    ds = 10.0 ** -np.arange(1, 8)
    c = np.array([gradient_cost(8, d) for d in ds])
    assert np.allclose(np.diff(c), np.diff(c).mean(), atol=7.0)  # affine in log(1/delta)


@pytest.mark.parametrize("n", [2, 4, 7])
@pytest.mark.parametrize("delta", [1e-1, 1e-3])
def test_normalized_hessian_on_quadratics(n, delta):
    A, b = quadratic(n, seed=n)
    orc = ComparisonOracle(lambda Z: 0.5 * np.einsum("ki,ij,kj->k", Z, A, Z) + Z @ b, vectorized=True)
    x = np.random.default_rng(n).normal(size=n)
    est = normalized_hessian(orc, x, delta=delta, span=100.0)
    assert np.allclose(est.matrix, est.matrix.T)
    assert np.linalg.norm(est.matrix - A / np.linalg.norm(A, 2), 2) <= delta
    g = A @ x + b
    assert np.linalg.norm(est.scaled - A / np.linalg.norm(g), 2) <= 2 * delta * np.linalg.norm(A / np.linalg.norm(g), 2)
    assert est.comparisons == orc.ncomparisons == gradient_cost(n, delta / (2 * n)) + hessian_cost(n, delta)


def test_hessian_cost_grows_as_n_squared_log():
    ns = np.array([8, 16, 32, 64, 128])
    c = np.array([hessian_cost(int(n), 1e-3) for n in ns])
    assert abs(np.polyfit(np.log(ns), np.log(c), 1)[0] - 2.0) <= 0.2
    ds = 10.0 ** -np.arange(2, 8)
    c = np.array([hessian_cost(8, d) for d in ds], dtype=float)
    assert np.all(np.diff(c) > 0) and np.ptp(np.diff(c)) <= 2 * 36  # affine in log(1/delta)


def test_estimators_reject_bad_input():
    orc = ComparisonOracle(lambda x: float(x.sum()))
    with pytest.raises(ValueError, match=r"'delta' argument of normalized_gradient must be a finite real number in \(0, 1\]"):
        normalized_gradient(orc, np.ones(2), delta=0.0)
    with pytest.raises(ValueError, match=r"'radius' argument of normalized_hessian"):
        normalized_hessian(orc, np.ones(2), radius=-1.0)
    with pytest.raises(ValueError, match=r"'x' argument of normalized_gradient must contain only finite"):
        normalized_gradient(orc, np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match=r"'g_hat' argument of normalized_hessian must be a unit vector"):
        normalized_hessian(orc, np.ones(2), g_hat=np.ones(2))
    with pytest.raises(TypeError, match=r"'oracle' argument of normalized_gradient must be a ComparisonOracle"):
        normalized_gradient(lambda a, b: True, np.ones(2))
