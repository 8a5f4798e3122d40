"""One result vocabulary: public names, the budget status, the divergence rule, check_array."""

import warnings

import numpy as np
import pytest
import torch

import optzoo
from optzoo import NotConvergedWarning, Result, Status
from optzoo._core.result import DIVERGENCE_GROWTH, SUCCESS, diverged_mask, divergence
from optzoo._core.validation import check_array


def test_public_names_and_one_warning_class():
    from optzoo._core import Result as R2
    from optzoo.dks import NotConvergedWarning as DksW
    from optzoo.talda import NotConvergedWarning as TaldaW

    assert {"Result", "Status", "NotConvergedWarning"} <= set(optzoo.__all__)
    assert R2 is Result and DksW is NotConvergedWarning and TaldaW is NotConvergedWarning
    # the old classes derived from RuntimeWarning (dks) and UserWarning (talda): both still catch it
    assert issubclass(NotConvergedWarning, RuntimeWarning) and issubclass(NotConvergedWarning, UserWarning)


def test_budget_status_counts_as_success_and_user_limit_keeps_its_meaning():
    assert Status.BUDGET.value == "budget_used" and Status.USER_LIMIT.value == "user_limit"
    assert Result(x=None, fun=0.0, status=Status.BUDGET).success
    assert not Result(x=None, fun=0.0, status=Status.USER_LIMIT).success
    assert SUCCESS == {Status.OPTIMAL, Status.CONVERGED, Status.BUDGET}
    assert all(s.success == (s in SUCCESS) for s in Status)


def test_result_is_typed_at_construction_and_shows_x_and_success():
    r = Result(x=np.arange(3.0), fun=np.float32(2.5), status="converged", nit=np.int64(4))
    assert r.status is Status.CONVERGED and type(r.fun) is float and type(r.nit) is int
    text = repr(r)
    assert "success=True" in text and "x=array([0., 1., 2.])" in text
    assert "x=<ndarray shape=(100,)" in repr(Result(x=np.zeros(100), fun=0.0, status=Status.BUDGET))
    r.status = Status.DIVERGED  # success follows status, never stale
    assert not r.success and r.to_dict()["success"] is False
    with pytest.raises(ValueError):
        Result(x=None, fun=0.0, status="not_a_status")


def test_divergence_rule():
    assert divergence(np.ones(3), start=np.ones(3)) is None
    assert "non-finite" in divergence(np.array([1.0, np.nan]))
    assert "non-finite" in divergence(torch.tensor([np.inf]))
    assert "exceeds" in divergence(np.array([2e8 + 10]), start=1.0 - 1.0)
    assert divergence(np.array([DIVERGENCE_GROWTH * 2.5]), start=np.ones(1) * 2) is None
    m = diverged_mask(np.array([1.0, np.nan, 1e9, np.inf]), start=0.0)
    assert m.tolist() == [False, True, True, True]
    mt = diverged_mask(torch.tensor([1.0, 1e20]), start=torch.tensor([0.0, 1e13]))
    assert mt.tolist() == [False, False]


def test_warning_is_emitted_once_with_the_owner():
    from optzoo._core.result import warn_not_converged

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_not_converged("f", "diverged at iteration 3")
    assert len(caught) == 1 and caught[0].category is NotConvergedWarning
    assert str(caught[0].message) == "f: diverged at iteration 3"


def test_check_array():
    assert check_array("x", [1, 2], owner="f", shape=(2,)).dtype == np.float64
    assert check_array("x", torch.ones(2, 3), owner="f", shape=(None, 3)).shape == (2, 3)
    with pytest.raises(ValueError, match=r"The 'x' argument of f must be an array of shape \(n, 3\)\. Got shape \(2,\)\."):
        check_array("x", [1, 2], owner="f", shape=(None, 3))
    with pytest.raises(ValueError, match="'x' argument of f must contain only finite values"):
        check_array("x", [1.0, np.nan], owner="f")
    with pytest.raises(ValueError, match="non-empty"):
        check_array("x", [], owner="f")
    with pytest.raises(ValueError, match="with 2 dimensions. Got shape"):
        check_array("x", [1.0], owner="f", ndim=2)
    with pytest.raises(TypeError, match="'x' argument of f must be an array-like"):
        check_array("x", "abc", owner="f")
    with pytest.raises(TypeError, match="'x' argument of f must be an array-like"):
        check_array("x", [[1.0], [1.0, 2.0]], owner="f")
    a = np.ones(2)
    assert check_array("x", a, owner="f", copy=True) is not a
