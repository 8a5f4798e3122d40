import math

import numpy as np
import pytest
import torch

from optzoo._core.validation import (
    check_bool,
    check_choice,
    check_finite,
    check_int,
    check_real,
    check_type,
    fail,
)


def test_int_message_names_argument_rule_and_value():
    with pytest.raises(ValueError, match=r"^The 'k' argument of densest_k_subgraph must be an int in \[1, 33\]\. Got 50\.$"):
        check_int("k", 50, owner="densest_k_subgraph", low=1, high=33)


@pytest.mark.parametrize("bad", [1.0, "3", True, None])
def test_int_rejects_non_ints_with_type_error(bad):
    with pytest.raises(TypeError, match="must be an int"):
        check_int("k", bad, owner="f", low=1)


def test_int_accepts_numpy_ints():
    assert check_int("k", np.int64(4), owner="f", low=1) == 4


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_real_rejects_non_finite(bad):
    with pytest.raises(ValueError, match=r"The 'lr' argument of SGD must be a finite real number"):
        check_real("lr", bad, owner="SGD", low=0.0)


def test_real_open_interval_text_and_bounds():
    with pytest.raises(ValueError, match=r"in \(0, 1\)\. Got 0\.0\."):
        check_real("beta", 0.0, owner="f", low=0.0, high=1.0, closed="neither")
    assert check_real("beta", 0.5, owner="f", low=0.0, high=1.0, closed="neither") == 0.5
    assert check_real("beta", 1.0, owner="f", low=0.0, high=1.0, closed="right") == 1.0


def test_real_allow_inf():
    assert check_real("t", math.inf, owner="f", low=0.0, allow_inf=True) == math.inf


def test_choice_bool_type_fail():
    with pytest.raises(ValueError, match=r"must be one of 'a', 'b'\. Got 'c'\."):
        check_choice("m", "c", ["a", "b"], owner="f")
    with pytest.raises(TypeError, match="must be a bool"):
        check_bool("flag", 1, owner="f")
    with pytest.raises(TypeError, match=r"must be a graph\. Got list\."):
        check_type("g", [], dict, owner="f", what="a graph")
    with pytest.raises(KeyError):
        fail("x", "f", "rule", 1, exc=KeyError)


def test_check_finite_numpy_and_torch():
    check_finite("x", np.ones(3), owner="f")
    with pytest.raises(ValueError, match="only finite values"):
        check_finite("x", np.array([1.0, np.nan]), owner="f")
    with pytest.raises(ValueError, match="only finite values"):
        check_finite("x", torch.tensor([1.0, float("inf")]), owner="f")


def test_check_device():
    from optzoo._core.validation import check_device

    assert check_device("device", None, owner="f") == torch.device("cpu")
    assert check_device("device", "cpu", owner="f") == torch.device("cpu")
    missing = ["cuda:99", "tpu"] + ([] if torch.cuda.is_available() else ["cuda"])
    for dev in missing:
        with pytest.raises(ValueError, match=rf"The 'device' argument of f must be .*Got '{dev}'\."):
            check_device("device", dev, owner="f")
    with pytest.raises(TypeError, match=r"The 'device' argument of f must be a torch device"):
        check_device("device", 1.5, owner="f")


def test_returned_real():
    from optzoo._core.validation import returned_real

    kw = {"owner": "f", "rule": "a callable returning a number"}
    assert returned_real("g", 2, **kw) == 2.0
    assert returned_real("g", torch.tensor([[1.5]]), **kw) == 1.5
    assert returned_real("g", np.float32(0.25), **kw) == 0.25
    with pytest.raises(TypeError, match=r"'g' argument of f must be a callable returning a number\. "
                                        r"Got 'str'"):
        returned_real("g", "yes", **kw)
    with pytest.raises(TypeError, match=r"Got \(2,\)"):
        returned_real("g", torch.ones(2), **kw)
    with pytest.raises(TypeError, match=r"Got 'bool'"):
        returned_real("g", True, **kw)
