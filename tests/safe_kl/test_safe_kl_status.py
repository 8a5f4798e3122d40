"""semidiscrete_eot runs on a planned budget: its normal end is Status.BUDGET (success)."""

import numpy as np
import pytest

from optzoo import NotConvergedWarning, Status
from optzoo.safe_kl import semidiscrete_eot


def test_semidiscrete_eot_budget_used_is_success():
    rng = np.random.default_rng(0)
    res = semidiscrete_eot(rng.normal(size=(50, 2)), rng.normal(size=(5, 2)), eps=0.5, max_iter=20,
                           batch_size=8, seed=0)
    assert res.status is Status.BUDGET and res.success and res.nit == 20


def test_semidiscrete_eot_blow_up_is_diverged_with_a_warning():
    rng = np.random.default_rng(0)
    with pytest.warns(NotConvergedWarning, match="semidiscrete_eot: the potential diverged"):
        res = semidiscrete_eot(rng.normal(size=(50, 2)), rng.normal(size=(5, 2)) * 1e6, eps=1e-3,
                               lr=1e12, max_iter=20, batch_size=8, seed=0)
    assert res.status is Status.DIVERGED and not res.success
