"""The identities that used to be counted as the paper's claims (issue 37), as unit tests.

For Gaussian directions the ZO kernel of ANY Gram matrix has mean squared relative error
(1 + r_eff)/P, whatever d; the parameter-space cosine is about sqrt(P/(d+P+1)); Rademacher
directions give the same error on dense tangents. None of this depends on a model, so none of
it is evidence about the paper: the reproduction keeps them as checks and findings, and these
tests pin them down.
"""

import math

import numpy as np
import pytest

from optzoo.zo_sgd import effective_rank, expected_gradient_cosine, expected_relative_error


def _embed(X0: np.ndarray, d: int, rng) -> np.ndarray:
    """The same Gram matrix X0 X0^T realised by tangent vectors in R^d (random isometry)."""
    Q, _ = np.linalg.qr(rng.standard_normal((d, X0.shape[1])))
    return X0 @ Q.T


def _sketch_err2(X: np.ndarray, P: int, rng, dist: str = "gaussian", reps: int = 600) -> float:
    K = X @ X.T
    out = []
    for _ in range(reps):
        U = rng.standard_normal((X.shape[1], P)) if dist == "gaussian" else rng.choice([-1.0, 1.0], (X.shape[1], P))
        A = X @ U
        out.append(np.linalg.norm(A @ A.T / P - K) ** 2 / np.linalg.norm(K) ** 2)
    return float(np.mean(out))


@pytest.mark.parametrize("d", [20, 400, 2000])
def test_error_law_is_one_plus_r_over_P_at_any_d(d):
    # was the claim error_vs_P (and the d-independence at fixed r_eff): an identity
    rng = np.random.default_rng(d)
    X0 = rng.standard_normal((6, 12)) * np.array([3.0] * 3 + [1.0] * 9)
    X = _embed(X0, d, rng)
    r = effective_rank(X @ X.T)
    errs = {}
    for P in (8, 64):
        errs[P] = _sketch_err2(X, P, rng)
        assert errs[P] * P / (1 + r) == pytest.approx(1.0, abs=0.25)
        assert math.sqrt(errs[P]) == pytest.approx(expected_relative_error(X @ X.T, P), rel=0.1)
    slope = 0.5 * math.log(errs[64] / errs[8]) / math.log(8.0)  # log RMS error against log P
    assert slope == pytest.approx(-0.5, abs=0.08)


def test_parameter_space_cosine_falls_like_sqrt_P_over_d():
    # was the claim gradient_cosine_vs_d: cos(g_hat, g) ~ sqrt(P / (d + P + 1)) for any g
    rng = np.random.default_rng(1)
    P = 16
    means = {}
    for d in (200, 3200):
        g = rng.standard_normal(d)
        cos = []
        for _ in range(100):
            U = rng.standard_normal((d, P))
            gh = U @ (U.T @ g) / P
            cos.append(gh @ g / (np.linalg.norm(gh) * np.linalg.norm(g)))
        means[d] = float(np.mean(cos))
        assert means[d] == pytest.approx(expected_gradient_cosine(d, P), rel=0.1)
    assert math.log(means[3200] / means[200]) / math.log(16.0) == pytest.approx(-0.5, abs=0.06)


def test_rademacher_matches_gaussian_on_dense_tangents():
    # was the claim gaussian_vs_rademacher: the Rademacher variance only drops the term
    # 2 sum_k a_k^2 b_k^2 / P, negligible for dense tangent vectors
    rng = np.random.default_rng(2)
    X = rng.standard_normal((6, 500))
    g = _sketch_err2(X, 16, rng, "gaussian")
    r = _sketch_err2(X, 16, rng, "rademacher")
    assert abs(math.log(r / g)) < 0.15
