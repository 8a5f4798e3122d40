"""The one rename mechanism: an old keyword or function name works for one release, with a
FutureWarning that names both spellings."""

import inspect
import warnings

import pytest

from optzoo._core.deprecation import deprecated_alias, renamed_kwargs


@renamed_kwargs(niter="max_iter", iters="max_iter")
def _solve(x, *, max_iter: int = 10, tol: float = 0.0):
    """Doc of the solver."""
    return x, max_iter, tol


class _Model:
    @renamed_kwargs("_Model", maxiter="max_iter")
    def __init__(self, *, max_iter: int = 5):
        self.max_iter = max_iter


def _new(a, b=2):
    """The new function."""
    return a + b


_old = deprecated_alias(_new, "_old")


def test_new_keyword_is_silent_and_signature_shows_only_new_names():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _solve(1, max_iter=3) == (1, 3, 0.0)
        assert _solve(1) == (1, 10, 0.0)
    params = inspect.signature(_solve).parameters
    assert "max_iter" in params and "niter" not in params and "iters" not in params
    assert _solve.__name__ == "_solve" and _solve.__doc__ == "Doc of the solver."
    assert _solve.__renamed_kwargs__ == {"niter": "max_iter", "iters": "max_iter"}


@pytest.mark.parametrize("old", ["niter", "iters"])
def test_old_keyword_maps_to_new_with_future_warning(old):
    with pytest.warns(FutureWarning, match=rf"The '{old}' argument of _solve was renamed to 'max_iter'; "
                                           rf"'{old}' will be removed in the next release\."):
        assert _solve(1, **{old: 7}, tol=1e-3) == (1, 7, 1e-3)


def test_old_and_new_together_is_a_type_error():
    with pytest.raises(TypeError, match=r"_solve got both 'niter' \(deprecated\) and 'max_iter'"):
        _solve(1, niter=3, max_iter=4)


def test_class_init_uses_the_class_name():
    with pytest.warns(FutureWarning, match=r"The 'maxiter' argument of _Model was renamed to 'max_iter'"):
        assert _Model(maxiter=9).max_iter == 9
    assert list(inspect.signature(_Model).parameters) == ["max_iter"]


def test_warning_points_at_the_caller():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _solve(0, niter=1)
    assert caught[0].filename == __file__


def test_bad_rename_is_rejected():
    with pytest.raises(ValueError, match="new name of 'a'"):
        renamed_kwargs(a="a")


def test_deprecated_alias_warns_and_delegates():
    with pytest.warns(FutureWarning, match=r"^_old was renamed to _new; _old will be removed in the next release\.$"):
        assert _old(1, b=5) == 6
    assert _old.__name__ == "_old" and _old.__deprecated_alias_of__ is _new
    assert "Deprecated alias" in _old.__doc__ and inspect.signature(_old) == inspect.signature(_new)
