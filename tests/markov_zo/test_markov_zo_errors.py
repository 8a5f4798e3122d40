"""Bad input raises with the project's message template."""

import numpy as np
import pytest

from optzoo.markov_zo import (
    MarkovOracle,
    StickyChain,
    markov_sgd_minimize,
    markov_zo_minimize,
    spsa_minimize,
)


def _orc(d=3):
    return MarkovOracle(lambda x, z: float(np.sum(x ** 2)) + z, StickyChain([0.0, 1.0], 0.5), dim=d)


@pytest.mark.parametrize("kw,exc,match", [
    ({"smoothing": 0.0}, ValueError, r"'smoothing' argument of markov_zo_minimize must be a finite real number in \(0, inf\)"),
    ({"smoothing": -1.0}, ValueError, r"'smoothing'.*Got -1.0"),
    ({"feedback": "three_point"}, ValueError, r"'feedback'.*one of 'one_point', 'two_point'"),
    ({"batch": 0}, ValueError, r"'batch'.*int in \[1, inf\]"),
    ({"max_level": 0}, ValueError, r"'max_level'"),
    ({"lr": -1.0}, ValueError, r"'lr'.*\(0, inf\)"),
    ({"lr": None}, ValueError, r"'lr'.*give 'mu'"),
    ({"lr": lambda k: -1.0}, ValueError, r"callable returning positive finite floats"),
    ({"batching": "adaptive"}, ValueError, r"'batching'"),
    ({"seed": 1.5}, TypeError, r"'seed'"),
])
def test_solver_argument_errors(kw, exc, match):
    args = {"lr": 0.1, **kw}
    with pytest.raises(exc, match=match):
        markov_zo_minimize(_orc(), np.ones(3), max_iter=2, **args)


def test_dimension_mismatch_and_nonfinite_start():
    with pytest.raises(ValueError, match=r"'x0'.*shape \(3,\)\. Got shape \(4,\)"):
        markov_zo_minimize(_orc(), np.ones(4), lr=0.1)
    with pytest.raises(ValueError, match=r"'x0'.*finite"):
        markov_zo_minimize(_orc(), np.array([1.0, np.nan, 0.0]), lr=0.1)
    with pytest.raises(ValueError, match=r"'X'.*shape \(n, 3\).*Got \(1, 2\)"):
        _orc().values(np.ones(2))
    with pytest.raises(ValueError, match=r"'x0' argument of spsa_minimize.*Got shape \(2,\)"):
        spsa_minimize(_orc(), np.ones(2), max_iter=3)


def test_nonfinite_oracle_values_raise():
    orc = MarkovOracle(lambda x, z: float("nan"), StickyChain([0.0, 1.0], 0.5), dim=2)
    with pytest.raises(ValueError, match="must return finite values"):
        markov_zo_minimize(orc, np.ones(2), lr=0.1, max_iter=3)
    orc = MarkovOracle(lambda x, z: float("inf"), StickyChain([0.0, 1.0], 0.5), dim=2)
    with pytest.raises(ValueError, match="must return finite values"):
        orc.pair(np.zeros(2), np.ones(2))


@pytest.mark.parametrize("ret, got", [(None, "'NoneType'"), ("a", "'str'"), (np.ones(3), r"\(3,\)")])
def test_oracle_values_that_are_not_numbers_raise(ret, got):  # trial 2, item 8
    orc = MarkovOracle(lambda x, z: ret, StickyChain([0.0, 1.0], 0.5), dim=2)
    with pytest.raises(TypeError, match=r"The 'fun' argument of MarkovOracle must be a callable "
                                        r"F\(x, z\) returning one real number\. Got " + got):
        markov_zo_minimize(orc, np.ones(2), lr=0.1, max_iter=3)
    vec = MarkovOracle(lambda X, Z: "ab", StickyChain([0.0, 1.0], 0.5), dim=2, vectorized=True)
    with pytest.raises(TypeError, match=r"The 'fun' argument of MarkovOracle must be a vectorized"):
        vec.values(np.ones((2, 2)))


def test_chain_errors():
    with pytest.raises(ValueError, match=r"'mixing_time' argument of StickyChain.with_mixing_time must be an int in \[1, inf\]. Got 0"):
        StickyChain.with_mixing_time([0.0, 1.0], 0)
    with pytest.raises(ValueError, match=r"'stay_prob'.*\[0, 1\).*Got 1.0"):
        StickyChain([0.0, 1.0], 1.0)
    with pytest.raises(ValueError, match=r"'pi'"):
        StickyChain([0.0, 1.0], 0.5, pi=[0.5, 0.6])


def test_two_point_needs_pairs_and_oracle_kinds():
    class OnlyValues:
        dim, calls = 2, 0

        def values(self, X):
            self.calls += len(X)
            return np.zeros(len(X))

    with pytest.raises(TypeError, match=r"must expose pairs\(\)"):
        markov_zo_minimize(OnlyValues(), np.ones(2), lr=0.1, max_iter=1)
    res = markov_zo_minimize(OnlyValues(), np.ones(2), lr=0.1, max_iter=2, feedback="one_point")
    assert res.nit == 2
    with pytest.raises(TypeError, match=r"'chain' argument of MarkovOracle"):
        MarkovOracle(lambda x, z: 0.0, object(), dim=2)
    with pytest.raises(TypeError, match=r"needs a 'grad'"):
        markov_sgd_minimize(_orc(), np.ones(3), lr=0.1, max_iter=1)


def test_projection_shape_and_max_level_warning():
    with pytest.raises(ValueError, match=r"'project'.*shape \(3,\)"):
        markov_zo_minimize(_orc(), np.ones(3), lr=0.1, max_iter=1, project=lambda x: x[:2])
    with pytest.warns(UserWarning, match="not a power of 2"):
        markov_zo_minimize(_orc(), np.ones(3), lr=0.1, max_iter=1, max_level=10)


def test_torch_optimizer_errors():
    import torch

    from optzoo.markov_zo import MarkovZOSGD

    w = torch.nn.Parameter(torch.ones(2))
    with pytest.raises(TypeError, match=r"'stream' argument of MarkovZOSGD"):
        MarkovZOSGD([w], stream=[1, 2])
    with pytest.raises(ValueError, match=r"'smoothing' argument of MarkovZOSGD"):
        MarkovZOSGD([w], stream=StickyChain([0.0], 0.0), smoothing=0.0)
    opt = MarkovZOSGD([w], stream=StickyChain([0.0], 0.0))
    with pytest.raises(ValueError, match=r"'closure'.*finite losses"):
        opt.step(lambda z: torch.tensor(float("nan")))


def _aniso_oracle(h, grad=True):
    from optzoo.markov_zo import MarkovOracle, StickyChain

    h = np.asarray(h, dtype=float)
    c = np.ones(h.size) / np.sqrt(h.size)
    return MarkovOracle(lambda X, Z: 0.5 * (h * (X - Z[:, None] * c) ** 2).sum(1),
                        StickyChain([-1.0, 1.0], stay_prob=0.9, seed=0), dim=h.size, vectorized=True,
                        grad=(lambda X, Z: h * (X - Z[:, None] * c)) if grad else None)


def test_objective_far_above_its_start_is_diverged_not_success():
    """December trial D5: an iterate below the iterate rule's bound whose objective exploded
    (f - f* = 2.3e15) ended `budget_used`. The objective rule of `_core` catches it."""
    from optzoo import NotConvergedWarning
    from optzoo.markov_zo import markov_zo_minimize

    orc = _aniso_oracle([1e3, 1e3, 1e3], grad=False)
    with pytest.warns(NotConvergedWarning, match=r"markov_zo_minimize: diverged by the end of the "
                                                 r"run: objective .* exceeds its start"):
        res = markov_zo_minimize(orc, np.ones(3), lr=3e-3, max_iter=8, batching="fixed")
    assert res.status == "diverged" and not res.success
    assert np.linalg.norm(res.x) < 1e8  # the iterate rule alone would have called it a budget stop


def test_markov_sgd_default_schedule_is_stable_when_L_exceeds_mu_d():
    """December trial D5: the default k0 = 4d took a first step 8x beyond 2/L here and ended
    far from x* = 0 as a success; k0 = 4 L / mu with L estimated at x0 converges."""
    from optzoo.markov_zo import markov_sgd_minimize

    res = markov_sgd_minimize(_aniso_oracle([10.0, 0.1, 0.1]), np.ones(3), mu=0.1, max_iter=3000)
    assert res.success and 5.0 < res.extra["smoothness"] < 20.0
    assert np.linalg.norm(res.x) < 0.5  # from |x0| = 1.7: the old default ended at |x| > 1e3
