"""comparison's rows of the common table (tests/test_common.py): every solver it ships."""

from __future__ import annotations

import numpy as np


def _oracle(seed=0):
    from optzoo.comparison import ComparisonOracle

    return ComparisonOracle(lambda X: (0.5 * X ** 2 + np.cos(X)).sum(1) + 0.3 * X[:, 0],
                            vectorized=True, seed=seed)


X0 = np.array([2.0, -1.5, 0.5])


def rows(Bad, SolverInfo, OptimInfo):
    from optzoo.comparison import (
        ComparisonOracle,
        cma_minimize,
        comparison_minimize,
        nelder_mead_minimize,
    )

    def tr(**kw):
        return comparison_minimize(_oracle(), X0, **{"eps": 0.1, "L": 1.0, "max_iter": 4, **kw})

    def ngd(**kw):
        return comparison_minimize(_oracle(), X0, **{"eps": 0.1, "L": 1.0, "method": "ngd", "max_iter": 20, **kw})

    def cma(**kw):
        return cma_minimize(_oracle(), X0, **{"sigma0": 1.0, "max_iter": 15, **kw})

    def nm(**kw):
        return nelder_mead_minimize(_oracle(), X0, **{"max_iter": 30, **kw})

    own = "comparison_minimize"
    bad_tr = [
        Bad("eps<=0", lambda: tr(eps=0.0), ValueError,
            rf"'eps' argument of {own} must be a finite real number in \(0, inf\)\. Got 0\.0"),
        Bad("x0 2-D", lambda: comparison_minimize(_oracle(), np.ones((2, 2)), eps=0.1, L=1.0), ValueError,
            rf"'x0' argument of {own} must be an array with 1 dimension"),
        Bad("x0 string", lambda: comparison_minimize(_oracle(), "abc", eps=0.1, L=1.0), TypeError,
            rf"'x0' argument of {own}"),
        Bad("budget<=0", lambda: tr(budget=0), ValueError, rf"'budget' argument of {own} must be an int in \[1, inf\]"),
        Bad("budget float", lambda: tr(budget=10.5), TypeError, rf"'budget' argument of {own}"),
        Bad("method", lambda: tr(method="newton"), ValueError, rf"'method' argument of {own} must be one of 'tr', 'ngd'"),
        Bad("rho<=0", lambda: tr(rho=-1.0), ValueError, rf"'rho' argument of {own}"),
        Bad("hessian", lambda: tr(hessian="identity"), ValueError,
            rf"'hessian' argument of {own} must be one of 'estimate', 'none', 'random'"),
        Bad("oracle not an oracle", lambda: comparison_minimize(lambda x: 0.0, X0, eps=0.1, L=1.0), TypeError,
            rf"'oracle' argument of {own} must be a ComparisonOracle"),
        Bad("f returns nan", lambda: comparison_minimize(
            ComparisonOracle(lambda x: float("nan")),
            X0, eps=0.1, L=1.0, max_iter=2), ValueError, r"'f' argument of ComparisonOracle must return finite values"),
        Bad("f returns vector", lambda: comparison_minimize(
            ComparisonOracle(lambda x: np.ones(2)),
            X0, eps=0.1, L=1.0, max_iter=2), TypeError, r"'f' argument of ComparisonOracle must be a function returning a real scalar"),
        Bad("plan beyond the cap (trial D2: eps=1e-12 hung)", lambda: comparison_minimize(
            _oracle(), X0, eps=1e-12, L=1.0), ValueError,
            rf"'eps' argument of {own} must be large enough that the planned iteration count \(here "
            r"[0-9.e+]+, from eps, L, rho and delta_f\) stays below 1e\+07, or give max_iter, budget "
            r"or a stopping callback"),
        Bad("comparator returns a string (trial D15)", lambda: comparison_minimize(
            ComparisonOracle.from_comparator(lambda a, b: "yes", dim=3), X0, eps=0.1, L=1.0, max_iter=2),
            TypeError, r"'compare' argument of ComparisonOracle must be a comparator returning a bool "
                       r"or a value in \{-1, 0, 1\} per pair\. Got \['yes'\]"),
    ]
    nonfinite = Bad("x0 nan", lambda: comparison_minimize(
        _oracle(), np.array([1.0, np.nan, 0.0]), eps=0.1, L=1.0), ValueError,
        rf"'x0' argument of {own} must contain only finite values")
    bad_cma = [
        Bad("sigma0<=0", lambda: cma(sigma0=0.0), ValueError, r"'sigma0' argument of cma_minimize"),
        Bad("budget<=0", lambda: cma(budget=0), ValueError, r"'budget' argument of cma_minimize"),
    ]
    bad_nm = [
        Bad("comparator oracle", lambda: nelder_mead_minimize(
            ComparisonOracle.from_comparator(
                lambda a, b: 1), X0), TypeError, r"'oracle' argument of nelder_mead_minimize must wrap a value"),
        Bad("max_iter<=0", lambda: nm(max_iter=0), ValueError, r"'max_iter' argument of nelder_mead_minimize"),
    ]
    solvers = [
        SolverInfo("comparison_minimize-tr", tr, bad=bad_tr, seed_kw=None, nonfinite=nonfinite),
        SolverInfo("comparison_minimize-ngd", ngd, seed_kw=None, nonfinite=nonfinite),
        SolverInfo("comparison-cma_minimize", cma, bad=bad_cma, stochastic=True),
        SolverInfo("comparison-nelder_mead_minimize", nm, bad=bad_nm, seed_kw=None),
    ]
    return [], solvers
