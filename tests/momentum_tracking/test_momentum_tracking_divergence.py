"""run_tracking reports divergence by optzoo's one rule (non-finite or growth)."""

import pytest
import torch

from optzoo import NotConvergedWarning
from optzoo.momentum_tracking import DriftingQuadratic, run_tracking


def test_run_tracking_sgd_lr5_reports_diverged_while_still_finite():
    # before: mse ~1e179 (finite) came back with diverged=False and no warning
    env = DriftingQuadratic(3, seed=0)
    with pytest.warns(NotConvergedWarning, match="run_tracking: 4 of 4 seeds diverged"):
        h = run_tracking(lambda p: torch.optim.SGD(p, lr=5.0), env, steps=150, seeds=4)
    assert bool(torch.isfinite(h.final_error).all())  # finite, yet blown up
    assert h.diverged.all() and h.diverged.shape == (4, 1)


def test_stable_tracking_is_not_flagged():
    env = DriftingQuadratic(3, seed=0)
    h = run_tracking(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), env, steps=300, seeds=3)
    assert not h.diverged.any()
