"""The SIMULATED statevector check of the comparison phase oracle."""

import numpy as np
import pytest

from optzoo.comparison import fourier_sampling, fundamental_probability, phase_oracle


def test_phase_oracle_is_diagonal_pm1_and_self_inverse_and_qft_preserves_norm():
    d = phase_oracle(lambda Z: Z[:, 0] - 2 * Z[:, 1] + (Z ** 2).sum(1), np.array([0.3, -0.2]), radius=1e-3, q=5)
    assert d.shape == (32, 32) and np.isin(d, (-1.0, 1.0)).all()
    out = fourier_sampling(d, shots=100, seed=0)
    assert out["oracle_squared_is_identity"]
    assert abs(out["norm_after_oracle"] - 1.0) < 1e-12 and abs(out["norm_after_qft"] - 1.0) < 1e-12


@pytest.mark.parametrize("q", [3, 4, 6])
def test_born_rule_matches_the_closed_form(q):
    d = phase_oracle(lambda Z: 1.7 * Z[:, 0] + 0.4 * Z[:, 1] ** 2, np.zeros(2), radius=1e-3, q=q)
    out = fourier_sampling(d, shots=20000, seed=1)
    P = out["probabilities"]
    assert abs(P[1, 0] + P[-1, 0] - fundamental_probability(q)) < 1e-12
    s = out["samples"]
    emp = np.mean((np.abs(s[:, 0]) == 1) & (s[:, 1] == 0))
    assert abs(emp - fundamental_probability(q)) < 5 * np.sqrt(0.25 / 20000)
    assert np.all(s[:, 1] == 0)  # gradient along axis 0: no weight off that axis


def test_statevector_limits():
    with pytest.raises(ValueError, match=r"'q' argument of phase_oracle must be such that n \* q <= 24"):
        phase_oracle(lambda Z: Z.sum(1), np.zeros(3), radius=1e-3, q=9)
