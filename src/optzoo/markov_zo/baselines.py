"""Baselines, all charged through the same :class:`~optzoo.markov_zo.MarkovOracle` counters.

* :func:`markov_sgd_minimize`: first-order SGD on the current Markov sample, with the same
  randomized (MLMC) batching as the paper's ancestor (Beznosikov et al. 2023) or a fixed
  batch (``batch=1`` is plain Markov SGD). A gradient is charged ``grad_cost`` units
  (1, or d+1 for parity with finite differences when only values exist).
* :func:`spsa_minimize`: Spall's SPSA with noisyopt's gain schedules
  :math:`a_k=a/(k+1+0.01n)^{0.602}`, :math:`c_k=c/(k+1)^{0.101}`, Rademacher
  :math:`\\Delta_k`. Our own re-implementation, **draw-for-draw identical** to
  ``noisyopt.minimizeSPSA`` 0.2.3 (tested when noisyopt is installed) but with a private
  ``RandomState`` instead of numpy's global one (noisyopt seeds and draws from numpy's
  global RNG, which a library should not touch), so it is the one SPSA here; the test runs
  noisyopt itself as the reference. Its two evaluations are two ordinary oracle calls, i.e.
  on two consecutive (different) chain states, as for any library SPSA.
"""

from __future__ import annotations

import time

import numpy as np

from optzoo._core.deprecation import renamed_kwargs
from optzoo._core.result import Result, Status, divergence, warn_not_converged
from optzoo._core.rng import np_rng
from optzoo._core.validation import check_array, check_int, check_real, fail
from optzoo.markov_zo.zo import _default_max_level, _resolve_lr, schedule_smoothness, sgd_loop

__all__ = ["markov_sgd_minimize", "spsa_minimize"]


def _check_x0(oracle, x0, owner):
    return check_array("x0", x0, owner=owner, shape=(oracle.dim,))


@renamed_kwargs(iterations="max_iter")
def markov_sgd_minimize(oracle, x0, *, lr=None, mu=None, lr_offset=None, smoothness=None,
                        batching: str = "randomized", batch: int = 1, max_level=None,
                        grad_cost: float = 1.0, max_cost=None, max_iter=None,
                        record_every=None, seed: int = 0) -> Result:
    r"""First-order Markov SGD (MLMC or fixed batch); ``history['calls']`` is the charged cost.

    The default schedule (``mu`` given, no ``lr`` or ``lr_offset``) is
    :math:`\gamma_k = 1/(\mu(k+k_0))` with :math:`k_0 = 4L/\mu`, so the first step is
    :math:`1/(4L)`, inside first-order SGD's stability limit :math:`2/L`; ``smoothness`` =
    :math:`L` (``None``: estimated at ``x0`` with
    :func:`~optzoo.markov_zo.estimate_smoothness`, 80 function calls charged to the cost; never
    below ``mu``). Until December 2026 the default was :math:`k_0 = 4d`, whose first step
    exceeded the stability limit whenever :math:`L > \mu d / 2` (a new user's ridge problem
    ended 1.9e6 above its optimum with status ``budget_used``).

    ``max_iter`` caps the iterations (default 10 000 when ``max_cost`` is not given either;
    ``iterations=`` until December 2026, still accepted for one release with a ``FutureWarning``).
    """
    owner = "markov_sgd_minimize"
    x0 = _check_x0(oracle, x0, owner)
    check_real("grad_cost", grad_cost, owner=owner, low=0.0, closed="neither")
    if batching not in ("randomized", "fixed"):
        fail("batching", owner, "one of 'randomized', 'fixed'", batching)
    check_int("batch", batch, owner=owner, low=1)
    d = oracle.dim
    seed = check_int("seed", seed, owner=owner, low=0)
    start = oracle.cost(grad_cost)
    L_used = None
    if lr is None and lr_offset is None and mu is not None:
        mu = check_real("mu", mu, owner=owner, low=0.0, closed="neither")
        if smoothness is not None:
            smoothness = check_real("smoothness", smoothness, owner=owner, low=0.0, closed="neither")
        L_used = schedule_smoothness(oracle, x0, mu, smoothness, np_rng(seed, "markov_sgd_smoothness"))
        lr_offset = 4.0 * L_used / mu
    step = _resolve_lr(lr, mu, 4.0 * d if lr_offset is None else lr_offset, owner)
    M = _default_max_level(oracle, d) if max_level is None else check_int(
        "max_level", max_level, owner=owner, low=1)
    if max_cost is None and max_iter is None:
        max_iter = 10_000
    rng = np_rng(seed, "markov_sgd")
    cost = lambda: oracle.cost(grad_cost) - start  # noqa: E731
    x, status, msg, k, hist, wall = sgd_loop(
        x0, lambda x, n: oracle.gradients(np.broadcast_to(x, (n, d))), cost, lr=step,
        batching=batching, batch=batch, max_level=M, project=None, max_cost=max_cost,
        max_iter=max_iter, rng=rng, record_every=record_every, owner=owner)
    return Result(x=x, fun=float("nan"), status=status, message=msg, nit=k, nfev=0,
                  wall_time=wall, extra={"history": hist, "grad_calls": k and oracle.grad_calls,
                                         "cost": cost(), "max_level": M,
                                         "smoothness": L_used})


@renamed_kwargs(niter="max_iter")
def spsa_minimize(oracle, x0, *, max_iter: int, a: float = 1.0, c: float = 1.0,
                  alpha: float = 0.602, gamma: float = 0.101, record_every=None,
                  seed: int = 0) -> Result:
    """SPSA (noisyopt-identical schedule and draws), ``2 * max_iter + 1`` oracle calls.

    ``max_iter`` is noisyopt's ``niter`` (the name here until December 2026, still accepted for
    one release with a ``FutureWarning``).
    """
    owner = "spsa_minimize"
    x = _check_x0(oracle, x0, owner).copy()
    max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
    a = check_real("a", a, owner=owner, low=0.0, closed="neither")
    c = check_real("c", c, owner=owner, low=0.0, closed="neither")
    rs = np.random.RandomState(check_int("seed", seed, owner=owner, low=0) % 2**32)
    A = 0.01 * max_iter
    start, x_start = oracle.calls, float(np.linalg.norm(x))
    hist = {"calls": [], "x": []}
    t0 = time.perf_counter()
    for k in range(max_iter):
        ak = a / (k + 1.0 + A) ** alpha
        ck = c / (k + 1.0) ** gamma
        delta = rs.choice([-1, 1], size=x.size)
        rs.randint(0, np.iinfo(np.int32).max)  # noisyopt's paired seed: a Markov stream ignores it
        grad = (oracle(x + ck * delta) - oracle(x - ck * delta)) / (2 * ck * delta)
        x -= ak * grad
        why = divergence(x, start=x_start)
        if why is not None:
            msg = f"diverged at iteration {k}: {why}"
            warn_not_converged(owner, msg)
            return Result(x=x, fun=float("nan"), status=Status.DIVERGED, nit=k + 1,
                          message=msg, nfev=oracle.calls - start,
                          wall_time=time.perf_counter() - t0, extra={"history": hist})
        if record_every and (k + 1) % record_every == 0:
            hist["calls"].append(float(oracle.calls - start))
            hist["x"].append(x.copy())
    fun = oracle(x)  # noisyopt evaluates the end point once; charged the same here
    hist["calls"].append(float(oracle.calls - start))
    hist["x"].append(x.copy())
    return Result(x=x, fun=fun, status=Status.BUDGET, message=f"budget of {max_iter} iterations used",
                  nit=max_iter, nfev=oracle.calls - start, wall_time=time.perf_counter() - t0,
                  extra={"history": hist, "implementation": "optzoo (noisyopt-identical)"})

