"""The ramp-family statements that used to be claims are arithmetic of our reconstruction
(December review): each is an identity of the iteration count (ramp length over a fixed step)
times the exact per-step cost. They are ``check``s in the reproduction and tested here."""

import math
import warnings

import numpy as np

from optzoo.comparison import ComparisonOracle, comparison_minimize, gradient_cost, hessian_cost
from optzoo.comparison.repro.problems import ramp

EPSS = (0.3, 0.1, 0.03)
DIMS = (2, 4, 8, 16)


def _slope(x, y):
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def _iters(eps, step):
    """Steps to bring y_1 from 1/eps to the stationary set |tanh y_1| <= 1/2."""
    return math.ceil((1.0 / eps - math.atanh(0.5)) / step)


def _predicted(method, n, eps):
    if method == "tr":
        return _iters(eps, math.sqrt(eps)) * (gradient_cost(n, 0.125) + hessian_cost(n, 0.125) + 1)
    return _iters(eps, eps / 2.0) * gradient_cost(n, 0.125)


def test_ramp_comparisons_are_iterations_times_the_per_step_cost():
    for n, eps in ((2, 0.3), (4, 0.1)):
        p = ramp(n, eps, seed=3)
        orc = ComparisonOracle(p.f, vectorized=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = comparison_minimize(orc, p.x0, eps=eps, L=1.0, delta_f=p.delta_f, stop="plan",
                                      callback=lambda x, p=p, eps=eps: bool(p.grad_norm(x)[0] <= eps))
        # every step accepted at the first safeguard comparison: cost = nit x (g + H + 1)
        assert res.ncomparisons == res.nit * (gradient_cost(n, 0.125) + hessian_cost(n, 0.125) + 1)
        assert abs(res.ncomparisons - _predicted("tr", n, eps)) <= 2 * (gradient_cost(n, 0.125)
                                                                        + hessian_cost(n, 0.125) + 1)


def test_eps_slopes_are_predicted_without_the_oracle():
    for n in DIMS:
        tr = _slope(EPSS, [_predicted("tr", n, e) for e in EPSS])
        ngd = _slope(EPSS, [_predicted("ngd", n, e) for e in EPSS])
        assert abs(tr + 1.5) < 0.02          # the old claim eps_slope_tr: -1.50
        assert abs(ngd + 2.06) < 0.02        # the old claim eps_slope_ngd: -2.06


def test_n_slope_is_the_slope_of_the_per_step_cost():
    for eps in EPSS:
        s = _slope(DIMS, [_predicted("tr", n, eps) for n in DIMS])
        per_step = _slope(DIMS, [gradient_cost(n, 0.125) + hessian_cost(n, 0.125) + 1 for n in DIMS])
        assert abs(s - per_step) < 1e-12 and 1.8 < s < 2.0   # the old claim n_slope_tr: 1.87


def test_crossover_and_ratio_are_predicted_without_the_oracle():
    cells = [(n, e) for n in DIMS for e in EPSS]
    key = {c: c[0] * math.sqrt(c[1]) for c in cells}
    ratio = {c: _predicted("tr", *c) / _predicted("ngd", *c) for c in cells}
    assert math.log(ratio[min(cells, key=key.get)]) < 0 < math.log(ratio[max(cells, key=key.get)])
    s = _slope([key[c] for c in cells], [ratio[c] for c in cells])
    assert 0.6 < s < 0.8                     # the old finding ratio_scaling: 0.709
