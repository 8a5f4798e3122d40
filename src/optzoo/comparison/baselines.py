"""Library baselines driven through the same counting :class:`ComparisonOracle`.

* :func:`cma_minimize`: CMA-ES from ``cma`` (pycma), ``CMAEvolutionStrategy.ask/tell``; each
  generation is sorted with ``functools.cmp_to_key(oracle.cmp)`` (every comparison of the
  sort is counted) and the ranks are told as fitness. Exact: CMA-ES reads only the ordering.
  The iterate is the distribution mean after each generation.
* :func:`nelder_mead_minimize`: ``scipy.optimize.minimize(method="Nelder-Mead")``. Its
  decisions depend only on comparisons, but scipy needs values, so it reads ``f`` through
  the oracle's value path and reports ``f-evals * ceil(log2(n + 2))`` as an **upper bound**
  on comparisons (labelled ``comparisons_bound``); it needs an oracle over a value function.

(nevergrad's comparison interface, named by the spec, is not installed here.)
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from optzoo._core.result import Result, Status, divergence, warn_not_converged
from optzoo._core.validation import check_array, check_int, check_real, fail
from optzoo.comparison.oracle import ComparisonOracle

__all__ = ["cma_minimize", "nelder_mead_minimize"]


def _check_oracle(owner, oracle):
    if not isinstance(oracle, ComparisonOracle):
        raise TypeError(f"The 'oracle' argument of {owner} must be a ComparisonOracle. "
                        f"Got {type(oracle).__name__}.")


def cma_minimize(oracle: ComparisonOracle, x0, *, sigma0: float, max_iter: int = 1000,
                 budget: int | None = None, popsize: int | None = None, seed: int = 0,
                 callback=None) -> Result:
    """CMA-ES (pycma) on comparisons only: ranks from sorting with the oracle.

    ``sigma0``: initial step size (the spec's fair default is ``0.3 |x0 - x*|``);
    ``max_iter`` generations; ``budget`` comparisons; ``seed`` is pycma's (the global numpy
    RNG state, which pycma seeds, is restored afterwards). ``callback(mean) -> bool`` stops.
    Returns ``Result`` with ``trajectory`` (means) and ``comparisons_at``.
    """
    owner = "cma_minimize"
    _check_oracle(owner, oracle)
    x = check_array("x0", x0, owner=owner, ndim=1, copy=True)
    sigma0 = check_real("sigma0", sigma0, owner=owner, low=0.0, closed="neither")
    max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
    seed = check_int("seed", seed, owner=owner, low=0)
    if budget is not None:
        budget = check_int("budget", budget, owner=owner, low=1)
    if popsize is not None:
        popsize = check_int("popsize", popsize, owner=owner, low=2)
    if callback is not None and not callable(callback):
        fail("callback", owner, "a callable callback(x) -> bool or None", callback, exc=TypeError)
    import cma

    t0 = time.perf_counter()
    saved = np.random.get_state()
    try:
        opts = {"seed": seed + 1, "verbose": -9, "maxiter": max_iter, "tolfun": 0, "tolx": 0,
                "tolfunhist": 0, "tolflatfitness": 10 ** 9, "tolstagnation": 10 ** 9}
        if popsize is not None:
            opts["popsize"] = popsize
        es = cma.CMAEvolutionStrategy(x, sigma0, opts)
        start = oracle.ncomparisons
        traj, counts = [x.copy()], [0]
        status, message = Status.BUDGET, f"planned {max_iter} generations used"
        key = functools.cmp_to_key(lambda a, b: oracle.cmp(a[1], b[1]))
        nit = 0
        for it in range(max_iter):
            if budget is not None and oracle.ncomparisons - start >= budget:
                status, message = Status.USER_LIMIT, f"comparison budget {budget} used after {it} generations"
                break
            X = es.ask()
            order = [i for i, _ in sorted(enumerate(X), key=key)]
            ranks = np.empty(len(X))
            ranks[order] = np.arange(len(X), dtype=float)
            es.tell(X, ranks.tolist())
            nit = it + 1
            m = np.asarray(es.mean, dtype=float).copy()
            traj.append(m)
            counts.append(oracle.ncomparisons - start)
            why = divergence(m, start=traj[0])
            if why is not None:
                status, message = Status.DIVERGED, f"diverged at generation {nit}: {why}"
                break
            if callback is not None and callback(m):
                status, message = Status.USER_LIMIT, f"stopped by callback after {nit} generations"
                break
    finally:
        np.random.set_state(saved)
    if status is not Status.BUDGET:
        warn_not_converged(owner, message)
    xf = traj[-1]
    fun = float(oracle.values(xf)[0]) if oracle.has_values and np.isfinite(xf).all() else float("nan")
    used = oracle.ncomparisons - start
    return Result(x=xf, fun=fun, status=status, message=message, nit=nit, nfev=used,
                  wall_time=time.perf_counter() - t0,
                  extra={"ncomparisons": used, "trajectory": np.asarray(traj),
                         "comparisons_at": np.asarray(counts), "method": "cma-es (pycma, ranks)",
                         "sigma0": sigma0})


def nelder_mead_minimize(oracle: ComparisonOracle, x0, *, max_iter: int = 1000,
                         callback=None) -> Result:
    """scipy Nelder-Mead; comparisons reported as the bound ``nfev * ceil(log2(n + 2))``.

    The value path of the oracle is read (uncounted), since scipy needs values; the reported
    ``ncomparisons`` is an upper bound on what a comparison-only Nelder-Mead would use
    (a sort of n + 1 vertices plus the accept tests), labelled ``comparisons_bound``.
    """
    owner = "nelder_mead_minimize"
    _check_oracle(owner, oracle)
    if not oracle.has_values:
        raise TypeError(f"The 'oracle' argument of {owner} must wrap a value function (scipy's "
                        "Nelder-Mead needs values). Got a comparator oracle.")
    x = check_array("x0", x0, owner=owner, ndim=1, copy=True)
    max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
    if callback is not None and not callable(callback):
        fail("callback", owner, "a callable callback(x) -> bool or None", callback, exc=TypeError)
    from scipy.optimize import minimize

    t0 = time.perf_counter()
    per_eval = math.ceil(math.log2(x.size + 2))
    evals = [0]
    traj, counts = [x.copy()], [0]
    stopped = []

    def fun(z):
        evals[0] += 1
        return float(oracle.values(z)[0])

    def cb(intermediate_result):
        xk = np.asarray(intermediate_result.x, dtype=float).copy()
        traj.append(xk)
        counts.append(evals[0] * per_eval)
        if callback is not None and callback(xk):
            stopped.append(True)
            raise StopIteration

    res = minimize(fun, x, method="Nelder-Mead", callback=cb,
                   options={"maxiter": max_iter, "maxfev": 10 ** 9, "xatol": 0.0, "fatol": 0.0})
    xf = traj[-1]
    if stopped:
        status, message = Status.USER_LIMIT, f"stopped by callback after {len(traj) - 1} iterations"
    elif divergence(xf, start=traj[0]) is not None:
        status, message = Status.DIVERGED, f"diverged: {divergence(xf, start=traj[0])}"
    elif res.nit >= max_iter:
        status, message = Status.BUDGET, f"planned {max_iter} iterations used"
    else:
        status, message = Status.CONVERGED, f"scipy: {res.message}"
    if not status.success:
        warn_not_converged(owner, message)
    bound = evals[0] * per_eval
    return Result(x=xf, fun=float(oracle.values(xf)[0]), status=status, message=message,
                  nit=len(traj) - 1, nfev=evals[0], wall_time=time.perf_counter() - t0,
                  extra={"ncomparisons": bound, "comparisons_bound": bound,
                         "trajectory": np.asarray(traj), "comparisons_at": np.asarray(counts),
                         "method": "nelder-mead (scipy; comparisons are an upper bound)"})
