"""Bad inputs to divide_and_learn found in trial (issue 17, item 5): each a clear error."""

import numpy as np
import pytest

from optzoo.mo_bandit import Binary, MOProblem, bi_tsp, divide_and_learn


def _f(x):
    return np.array([x.sum(), (1 - x).sum()], dtype=float)


def _run(budget=40, **kw):
    return divide_and_learn(_f, budget, space=Binary(6), n_objectives=2, n_weight_vectors=2,
                            seed=0, **kw)


def test_sense_string_means_every_objective():
    res = _run(sense="max")
    assert res.fun.max() == 6  # maximised: some point takes all six ones
    assert MOProblem(Binary(3), _f, 2, sense="max").sense == ("max", "max")
    with pytest.raises(ValueError, match=r"The 'sense' argument of MOProblem must be one of "
                                         r"'min', 'max'\. Got 'up'\."):
        _run(sense="up")


def test_sense_conflicting_with_the_problem_is_an_error():
    with pytest.raises(ValueError, match=r"The 'sense' argument of divide_and_learn must be None "
                                         r"or the MOProblem's own sense \('min', 'min'\)\. "
                                         r"Got 'max'\."):
        divide_and_learn(bi_tsp(8, seed=0), 30, sense="max")


def test_ref_point_alone_gives_the_hypervolume():
    res = _run(sense="max", ref_point=[0.0, 0.0])
    assert res.extra["hypervolume"] > 0 and "hv" not in res.extra
    both = _run(sense="max", ref_point=[0.0, 0.0], ideal_point=[6.0, 6.0])
    assert both.extra["hv"] == pytest.approx(both.extra["hypervolume"] / 36.0)


@pytest.mark.parametrize("kw, pattern", [
    (dict(ref_point=[1.0]), r"'ref_point' argument of divide_and_learn must be an array of "
                            r"shape \(2,\)\. Got shape \(1,\)\."),
    (dict(ref_point=[1.0, 2.0, 3.0]), r"'ref_point' .* shape \(2,\)"),
    (dict(ref_point=[np.nan, 1.0]), r"'ref_point' argument of divide_and_learn must contain only finite values"),
    (dict(ideal_point=[0.0, np.inf]), r"'ideal_point' argument of divide_and_learn must contain only finite values"),
    (dict(ref_point=[-1.0, -1.0], ideal_point=[0.0, 0.0]),
     r"'ref_point' argument of divide_and_learn must be worse than ideal_point"),
])
def test_bad_hv_points(kw, pattern):
    with pytest.raises(ValueError, match=pattern):
        _run(**kw)


def test_trial2_metric_and_objective_inputs():  # trial 2, items 6 and 8
    from optzoo.mo_bandit import hv_ratio, hypervolume, nondominated_mask

    ref = np.array([2.0, 2.0])
    with pytest.raises(ValueError, match=r"The 'F' argument of hypervolume must be free of NaN.*"
                                         r"Got \[nan, 1\.0\]\."):
        hypervolume(np.array([[np.nan, 1.0], [1.0, 1.0]]), ref)
    with pytest.raises(ValueError, match=r"The 'F' argument of hypervolume must be a 2-D array of "
                                         r"shape \(n, 2\)"):
        hypervolume(np.array([1.0, 1.0, 1.0]), ref)
    assert hypervolume(np.zeros((0, 2)), ref) == 0.0
    with pytest.raises(ValueError, match=r"The 'ideal_point' argument of hv_ratio must be a point "
                                         r"that differs from ref_point in every objective"):
        hv_ratio(np.array([[1.0, 1.0]]), ref, ref)
    with pytest.raises(ValueError, match=r"The 'F' argument of nondominated_mask must be a 2-D array"):
        nondominated_mask(np.array([1.0, 2.0]))
    assert nondominated_mask([]).shape == (0,)
    with pytest.raises(TypeError, match=r"The 'problem' argument of divide_and_learn must return an "
                                        r"objective vector of 2 real numbers\. Got 'ab'"):
        divide_and_learn(lambda x: "ab", 10, space=Binary(3), n_objectives=2, seed=0)
