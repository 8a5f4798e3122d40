"""Ask/tell driver: the same run as the function call, and clear errors on misuse."""

import numpy as np
import pytest

from optzoo.mo_bandit import DivideAndLearn, Permutation, divide_and_learn


def _f(x):
    x = np.asarray(x)
    return np.array([float(np.abs(np.diff(x)).sum()), float((x * np.arange(x.size)).sum())])


def test_ask_tell_gives_the_function_calls_archive():
    kw = dict(space=Permutation(8), n_objectives=2, seed=3)
    ref = divide_and_learn(_f, 120, **kw)
    opt = DivideAndLearn(budget=120, **kw)
    asked = 0
    while (x := opt.ask()) is not None:
        opt.tell(x, _f(x))
        asked += 1
    res = opt.result()
    assert opt.done and asked == res.nfev == ref.nfev
    np.testing.assert_array_equal(res.x, ref.x)
    np.testing.assert_array_equal(res.fun, ref.fun)
    assert opt.ask() is None  # stays finished


def test_misuse_is_refused_with_the_rule():
    opt = DivideAndLearn(Permutation(6), n_objectives=2, budget=30, seed=0)
    with pytest.raises(RuntimeError, match=r"'x' argument of DivideAndLearn.tell must be the point "
                                           r"returned by the last ask\(\) \(none is pending\)"):
        opt.tell([0, 1, 2, 3, 4, 5], [0.0, 0.0])
    x = opt.ask()
    with pytest.raises(RuntimeError, match=r"'ask' argument of DivideAndLearn must be called after tell"):
        opt.ask()
    with pytest.raises(ValueError, match=r"'x' argument of DivideAndLearn.tell must be the point"):
        opt.tell(x[::-1], [0.0, 0.0])
    with pytest.raises(RuntimeError, match=r"'result' argument of DivideAndLearn must be called once"):
        opt.result()
    opt.tell(x, [np.nan, 0.0])  # the run itself rejects non-finite objectives
    with pytest.raises(ValueError, match=r"must return finite"):
        opt.ask()


def test_bad_arguments_raise_at_construction_and_close_stops_the_worker():
    with pytest.raises(ValueError, match=r"'budget' argument of DivideAndLearn must be an int"):
        DivideAndLearn(Permutation(6), n_objectives=2, budget=0)
    with pytest.raises(ValueError, match=r"'variant' argument of divide_and_learn"):
        DivideAndLearn(Permutation(6), n_objectives=2, variant="exp3")
    opt = DivideAndLearn(Permutation(6), n_objectives=2, budget=50, seed=0)
    x = opt.ask()
    opt.tell(x, _f(x))
    opt.close()
    assert opt.done and opt.ask() is None and not opt._thread.is_alive()
