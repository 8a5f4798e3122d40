"""dfl's iteration budgets are ``max_iter`` (issue 42): ``train_predictor(max_steps=)`` and
``PortfolioModel(maxiter=)``, the names until December 2026, still work for one release."""

import importlib.util
from pathlib import Path

import numpy as np
import pyepo
import pytest
import torch

from optzoo.dfl import PortfolioModel

_spec = importlib.util.spec_from_file_location("_dfl_rows", Path(__file__).with_name("common_rows.py"))
_rows = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_rows)
_train = _rows._train


def test_train_predictor_max_steps_is_max_iter():
    new = _train(max_iter=3)
    with pytest.warns(FutureWarning, match="'max_steps' argument of train_predictor was renamed to 'max_iter'"):
        old = _train(max_steps=3)
    assert new.nit == old.nit == 3 and torch.equal(new.x, old.x)


def test_portfolio_maxiter_is_max_iter():
    cov, _, _ = pyepo.data.portfolio.genData(5, 3, 6, deg=2, noise_level=1, seed=4)
    assert PortfolioModel(cov, max_iter=7).max_iter == 7
    with pytest.warns(FutureWarning, match="'maxiter' argument of PortfolioModel was renamed to 'max_iter'"):
        m = PortfolioModel(cov, maxiter=7)
    assert m.max_iter == 7 and np.array_equal(m.covariance, PortfolioModel(cov).covariance)
