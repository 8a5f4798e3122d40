"""Non-smooth strongly convex problems (spec environment 3): x* and the public solver."""

import numpy as np
import pytest

from optzoo.markov_zo import MarkovOracle, StickyChain, markov_zo_minimize
from optzoo.markov_zo.repro.nonsmooth import (
    nonsmooth_instance,
    nonsmooth_objective,
    nonsmooth_values,
    run_bank_nonsmooth,
)


def _instance(d=5, S=6, seed=0):
    return nonsmooth_instance(d, S, 1.0, np.random.default_rng(seed))


def test_xstar_is_the_minimizer():
    inst = _instance()
    A, b, pi, xs = inst["A"], inst["b"], inst["pi"], inst["xstar"]
    assert abs(inst["gap"]) < 1e-8  # primal = dual value at the returned pair
    rng = np.random.default_rng(1)
    # f is 1-strongly convex: f(x* + h) - f* >= |h|^2 / 2 for every h
    for h in 10.0 ** rng.uniform(-4, 0, 200)[:, None] * rng.standard_normal((200, 5)):
        assert nonsmooth_objective(xs + h, A, b, 1.0, pi) - inst["fstar"] >= 0.5 * h @ h - 1e-9
    # the values function matches the definition, row by row
    X, Z = rng.standard_normal((4, 5)), np.array([0, 3, 5, 1])
    want = [abs(A[z] @ x - b[z]) + 0.5 * x @ x for x, z in zip(X, Z, strict=True)]
    np.testing.assert_allclose(nonsmooth_values(X, Z, A, b, 1.0), want, rtol=1e-12)


def test_markov_zo_minimize_converges_on_nonsmooth_problem():
    inst = _instance()
    A, b, xs = inst["A"], inst["b"], inst["xstar"]
    chain = StickyChain.with_mixing_time(np.arange(6), 5, seed=0)
    orc = MarkovOracle(lambda X, Z: nonsmooth_values(X, Z.astype(int), A, b, 1.0), chain, dim=5,
                       vectorized=True)
    x0 = xs + 1.0
    res = markov_zo_minimize(orc, x0, mu=1.0, smoothing=1e-3, max_calls=20_000, seed=0)
    rel = np.sum((res.x - xs) ** 2) / np.sum((x0 - xs) ** 2)
    assert rel < 1e-2, rel  # measured ~8e-4 (seeds 0-3 all below 1.2e-3)
    assert nonsmooth_objective(res.x, A, b, 1.0, inst["pi"]) - inst["fstar"] < 1e-2
    assert res.nfev >= 20_000


def test_nonsmooth_bank_two_point_beats_start_and_rejects_bad_method():
    inst = _instance(seed=2)
    x0 = inst["xstar"] + 1.0
    rec = run_bank_nonsmooth("zo2", inst, stay=np.zeros(3), max_level=16, lr_mult=1.0,
                             smoothing=1e-3, lr_offset=20.0, budget=4000, x0=x0,
                             rng=np.random.default_rng(0))
    assert rec.shape == (3, 4) and np.all(rec[:, -1] < 0.1 * 5)
    with pytest.raises(ValueError, match="'method'.*'zo2' or 'zo1'.*'zo3'"):
        run_bank_nonsmooth("zo3", inst, stay=np.zeros(1), max_level=16, lr_mult=1.0,
                           smoothing=1e-3, lr_offset=20.0, budget=10, x0=x0,
                           rng=np.random.default_rng(0))
