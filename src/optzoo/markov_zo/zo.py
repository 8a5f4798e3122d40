"""Zero-order SGD with randomized (MLMC) batching under Markovian noise.

Paper: B. Prokhorov, S. Chebykin, A. Gasnikov, A. Beznosikov, "Gradient-Free Approaches is a
Key to an Efficient Interaction with Markovian Stochasticity", ICML 2026, arXiv 2601.01160.
Fidelity: **reconstructed** (only the abstract was available). The batching is the one of
the ancestor paper (Beznosikov et al., NeurIPS 2023, arXiv 2305.15938); the estimators are
the standard sphere-smoothing ones; step sizes and defaults are INFERRED.

Estimators, :math:`e\\sim\\mathrm{Unif}(S^{d-1})`, smoothing radius :math:`t>0`:

.. math::
    g_2(x,e,Z)=\\frac{d}{2t}\\,[F(x+te,Z)-F(x-te,Z)]\\,e,\\qquad
    g_1(x,e,Z)=\\frac{d}{t}\\,F(x+te,Z)\\,e .

Randomized batching at iterate k: :math:`J_k\\sim\\mathrm{Geom}(1/2)`, base batch B, cap M,
estimates :math:`g_{k,i}` on the *consecutive* states :math:`Z_{T_k+i}`,
:math:`g^j_k=(2^jB)^{-1}\\sum_{i\\le 2^jB} g_{k,i}`,

.. math::
    G_k = g^0_k + 2^{J_k}(g^{J_k}_k-g^{J_k-1}_k)\\ \\text{if } 2^{J_k}\\le M,\\ \\text{else } g^0_k;
    \\qquad x_{k+1}=\\Pi_X(x_k-\\gamma_k G_k).

:math:`E[G_k]=E[g^{\\lfloor\\log_2 M\\rfloor}_k]` and the expected number of samples per
iteration is :math:`B(j_{\\max}+2^{-j_{\\max}})`. Default step (INFERRED):
:math:`\\gamma_k=1/(\\mu(k+k_0))`, :math:`k_0=4dL/\\mu` (so :math:`\\gamma_0=1/(4dL)`), with
:math:`L` the smoothness constant of :math:`F(\\cdot,z)`: given as ``smoothness`` or estimated
by :func:`estimate_smoothness` (second differences on one noise state per probe).
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np

from optzoo._core.deprecation import renamed_kwargs
from optzoo._core.result import Result, Status, divergence, objective_divergence, warn_not_converged
from optzoo._core.rng import np_rng
from optzoo._core.validation import check_array, check_choice, check_int, check_real, fail

__all__ = [
    "estimate_smoothness",
    "expected_batch_cost",
    "markov_zo_minimize",
    "mlmc_weights",
    "one_point_estimates",
    "sphere_directions",
    "strongly_convex_lr",
    "two_point_estimates",
    "zo_coefficient",
]

_OWNER = "markov_zo_minimize"


def sphere_directions(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` independent directions uniform on the unit sphere of R^d, shape (n, d)."""
    e = rng.standard_normal((n, d))
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def zo_coefficient(f_plus, f_minus, d: int, smoothing: float):
    """The scalar :math:`c` of an estimate :math:`g=c\\,e`: :math:`\\frac{d}{2t}(F_+-F_-)`
    (two-point) or, with ``f_minus=None``, :math:`\\frac{d}{t}F_+` (one-point). Pure; works
    on floats and arrays, and is the one formula used by the solver and by ``MarkovZOSGD``."""
    if f_minus is None:
        return (d / smoothing) * f_plus
    return (d / (2.0 * smoothing)) * (f_plus - f_minus)


def two_point_estimates(f_plus, f_minus, directions, smoothing: float) -> np.ndarray:
    """:math:`\\frac{d}{2t}(F_+-F_-)e`, one row per sample."""
    d = directions.shape[1]
    # [:, None] before the scalar: ``smoothing`` may be a per-row (n, 1) array (the repro bank)
    return zo_coefficient(np.asarray(f_plus)[:, None], np.asarray(f_minus)[:, None], d,
                          smoothing) * directions


def one_point_estimates(f_plus, directions, smoothing: float) -> np.ndarray:
    """:math:`\\frac{d}{t}F_+e`, one row per sample."""
    d = directions.shape[1]
    return zo_coefficient(np.asarray(f_plus)[:, None], None, d, smoothing) * directions


def expected_batch_cost(batch: int, max_level: int) -> float:
    """Expected samples per iteration of randomized batching: :math:`B(j_{\\max}+2^{-j_{\\max}})`.

    >>> expected_batch_cost(1, 8), round(expected_batch_cost(4, 64), 2)
    (3.125, 24.06)
    """
    batch = check_int("batch", batch, owner="expected_batch_cost", low=1)
    max_level = check_int("max_level", max_level, owner="expected_batch_cost", low=1)
    jmax = int(math.floor(math.log2(max_level)))
    return batch * (jmax + 2.0 ** (-jmax))


def mlmc_weights(level: int, batch: int, max_level: int) -> np.ndarray:
    """Weights ``w`` with :math:`G=\\sum_i w_i g_i` for a drawn level :math:`J` (length = samples used).

    ``level`` is :math:`J\\ge 1`; if :math:`2^J>M` only the base batch is used.
    """
    if 2 ** level > max_level:
        return np.full(batch, 1.0 / batch)
    n = 2 ** level * batch
    half = n // 2
    w = np.zeros(n)
    w[:batch] = 1.0 / batch
    w[:n] += 2 ** level / n
    w[:half] -= 2 ** level / half
    return w


def strongly_convex_lr(mu: float, offset: float):
    """The step schedule :math:`\\gamma_k = 1/(\\mu(k+k_0))`."""
    mu = check_real("mu", mu, owner="strongly_convex_lr", low=0.0, closed="neither")
    offset = check_real("offset", offset, owner="strongly_convex_lr", low=1.0)
    return lambda k: 1.0 / (mu * (k + offset))


def estimate_smoothness(oracle, x, *, probes: int = 16, step: float = 1e-3,
                        seed: int | np.random.Generator = 0) -> float:
    """Estimate the smoothness constant :math:`L` of :math:`F(\\cdot,z)` at ``x`` for the step
    rule, from function values only: ``5 * probes`` calls, one chain tick per probe.

    Each probe draws unit directions :math:`e, f` and evaluates five points on **one** state
    (``oracle.same_state``): second differences give :math:`q=e^\\top H_ze` and
    :math:`p=f^\\top H_ze` (exact on quadratics), and

    .. math:: \\hat L = \\frac{d\\,\\overline{p^2}}{\\bar q}\\approx
        \\frac{E\\|H_ze\\|^2}{E\\,e^\\top H_ze},

    which is :math:`\\lambda` for :math:`H_z=\\lambda I`, :math:`\\|a\\|^2` for a least-squares
    row :math:`H_z=aa^\\top`, and at least :math:`\\mathrm{tr}(H)/d` in general (enough for the
    zero-order step :math:`\\gamma_0=1/(4dL)`, whose stability needs
    :math:`\\gamma<2/\\mathrm{tr}(H)`). Returns NaN when the curvature is not positive
    (a non-convex or non-smooth probe); the caller then falls back to :math:`L=\\mu`.

    >>> import numpy as np
    >>> from optzoo.markov_zo import StickyChain, MarkovOracle, estimate_smoothness
    >>> orc = MarkovOracle(lambda X, Z: 2.0 * (X ** 2).sum(1) + Z, StickyChain([0.0, 1.0], 0.5),
    ...                    dim=3, vectorized=True)
    >>> round(estimate_smoothness(orc, np.ones(3)) / 4.0, 1), orc.calls   # H = 4 I
    (1.0, 80)
    """
    owner = "estimate_smoothness"
    if not hasattr(oracle, "same_state"):
        fail("oracle", owner, "an oracle with same_state() (a MarkovOracle)", type(oracle).__name__,
             exc=TypeError)
    probes = check_int("probes", probes, owner=owner, low=1)
    h = check_real("step", step, owner=owner, low=0.0, closed="neither")
    rng = seed if isinstance(seed, np.random.Generator) else np_rng(
        check_int("seed", seed, owner=owner, low=0), "markov_zo_smoothness")
    d = oracle.dim
    x = check_array("x", x, owner=owner, shape=(d,))
    E, Fd = sphere_directions(probes, d, rng), sphere_directions(probes, d, rng)
    X = np.broadcast_to(x, (probes, d))
    f0, fe, fme, ff, fef = oracle.same_state(X, X + h * E, X - h * E, X + h * Fd, X + h * (E + Fd))
    q = (fe + fme - 2.0 * f0) / h**2
    p = (fef - fe - ff + f0) / h**2
    den = float(np.mean(q))
    if not (math.isfinite(den) and den > 0):
        return float("nan")
    return float(d * np.mean(p * p) / den)


def schedule_smoothness(oracle, x0, mu: float, smoothness, rng) -> float:
    """The ``L`` of a default ``1/(mu (k + k0))`` schedule: ``smoothness`` if given, else
    :func:`estimate_smoothness` at ``x0`` (charged to the oracle); never below ``mu``.

    ``L >= mu`` for every mu-strongly convex L-smooth F; NaN (no positive curvature seen) and
    oracles without ``same_state()`` fall back to ``L = mu``."""
    if smoothness is None and hasattr(oracle, "same_state"):
        smoothness = estimate_smoothness(oracle, x0, seed=rng)
    return mu if smoothness is None or not smoothness >= mu else smoothness


def check_smoothing_resolution(owner: str, smoothing: float, scale: float, eps: float) -> None:
    """Refuse a smoothing radius below the float resolution of the iterate's scale
    (``eps * max(1, scale)``, ``eps`` the dtype's machine epsilon): there the two evaluations
    differ by less than rounding, every estimate is 0 and the run never moves (a new user's
    trial: ``smoothing=1e-300`` ended ``budget_used`` at its start)."""
    res = eps * max(1.0, float(scale))
    if smoothing < res:
        fail("smoothing", owner, f"at least the float resolution of the iterate (here {res:.2g} = "
             "finfo(dtype).eps x max(1, |x|_inf)); below it x + t e and x - t e evaluate alike "
             "and every estimate is 0", smoothing)


def _check_common(owner, *, feedback, smoothing, batching, batch, max_level):
    check_choice("feedback", feedback, ("one_point", "two_point"), owner=owner)
    check_real("smoothing", smoothing, owner=owner, low=0.0, closed="neither")
    check_choice("batching", batching, ("randomized", "fixed"), owner=owner)
    check_int("batch", batch, owner=owner, low=1)
    if max_level is not None:
        check_int("max_level", max_level, owner=owner, low=1)
        if max_level & (max_level - 1):
            warnings.warn(f"max_level={max_level} is not a power of 2; levels above "
                          f"2^{int(math.log2(max_level))} are never used.", stacklevel=3)


def _resolve_lr(lr, mu, offset, owner):
    if lr is None:
        if mu is None:
            fail("lr", owner, "a positive float or a callable k -> step (or give 'mu' for "
                 "the default 1/(mu (k + k0)) schedule)", lr)
        return strongly_convex_lr(mu, offset)
    if callable(lr):
        return lr
    lr = check_real("lr", lr, owner=owner, low=0.0, closed="neither")
    return lambda k: lr


def _default_max_level(oracle, d: int) -> int:
    tau = getattr(getattr(oracle, "chain", None), "mixing_time", d)
    return 2 ** int(math.ceil(math.log2(d + tau)))


def sgd_loop(x0, estimate, cost, *, lr, batching, batch, max_level, project, max_cost,
             max_iter, rng, record_every, owner):
    """Shared driver: ``estimate(x, n) -> (n, d)`` per-sample estimates on consecutive states.

    Used by :func:`markov_zo_minimize` and the first-order baselines so that every method
    runs the same batching and bookkeeping code.
    """
    x = np.array(x0, dtype=float)
    start = float(np.linalg.norm(x))
    jmax_cap = max_level
    hist = {"calls": [], "x": [], "batch_size": []}
    # a fixed-budget method: spending the budget with bounded iterates is its normal end
    status, msg, k = Status.BUDGET, "", 0
    t0 = time.perf_counter()
    while True:
        if max_iter is not None and k >= max_iter:
            msg = f"iteration limit {max_iter} reached"
            break
        if max_cost is not None and cost() >= max_cost:
            msg = f"oracle budget {max_cost:g} reached"
            break
        if batching == "randomized":
            w = mlmc_weights(int(rng.geometric(0.5)), batch, jmax_cap)
        else:
            w = np.full(batch, 1.0 / batch)
        g = estimate(x, w.size)
        step = lr(k)
        if not (isinstance(step, (int, float, np.floating)) and math.isfinite(step) and step > 0):
            fail("lr", owner, "a callable returning positive finite floats", step)
        x_new = x - step * (w @ g)
        if project is not None:
            x_new = np.asarray(project(x_new), dtype=float)
            if x_new.shape != x.shape:
                fail("project", owner, f"a callable returning an array of shape {x.shape}",
                     x_new.shape)
        why = divergence(x_new, start=start)
        if why is not None:
            status, msg = Status.DIVERGED, f"diverged at iteration {k}: {why}"
            break
        x = x_new
        k += 1
        hist["batch_size"].append(w.size)
        if record_every and k % record_every == 0:
            hist["calls"].append(float(cost()))
            hist["x"].append(x.copy())
    if status is Status.DIVERGED:
        warn_not_converged(owner, msg, stacklevel=4)
    hist["calls"].append(float(cost()))
    hist["x"].append(x.copy())
    return x, status, msg, k, hist, time.perf_counter() - t0


@renamed_kwargs(iterations="max_iter")
def markov_zo_minimize(oracle, x0, *, feedback: str = "two_point", lr=None, mu=None,
                       smoothness: float | None = None,
                       lr_offset=None, smoothing: float = 1e-4, batching: str = "randomized",
                       batch: int = 1, max_level: int | None = None, project=None,
                       max_calls: int | None = None, max_iter: int | None = None,
                       record_every: int | None = None, seed: int = 0) -> Result:
    """Minimize :math:`f(x)=E_\\pi F(x,Z)` with zero-order feedback from a Markov oracle.

    Parameters
    ----------
    oracle : a :class:`~optzoo.markov_zo.MarkovOracle` (``two_point`` needs ``pairs``).
    x0 : start, shape (d,) with d = ``oracle.dim``.
    feedback : ``"two_point"`` (default) or ``"one_point"``.
    lr : float, callable ``k -> step``, or None for :math:`1/(\\mu(k+k_0))` (needs ``mu``).
    smoothness : :math:`L`, the smoothness constant of :math:`F(\\cdot,z)`, used only by the
        default schedule; ``None`` estimates it at ``x0`` with :func:`estimate_smoothness`
        (80 calls, charged to the budget; ``extra["smoothness"]``). Never below ``mu``.
    lr_offset : :math:`k_0` of the default schedule (default :math:`4dL/\\mu`, INFERRED: the
        first step is :math:`1/(4dL)`; at :math:`L=\\mu` this is the old :math:`4d`).
    smoothing : radius :math:`t>0` (default 1e-4, INFERRED for smooth problems). For
        non-smooth :math:`F(\\cdot,z)` (M-Lipschitz, e.g. :math:`|a_z^\\top x-b_z|+\\frac{\\mu}{2}\\|x\\|^2`)
        the two-point estimator is unbiased for the ball-smoothed :math:`f_t`, with
        :math:`0\\le f_t-f\\le Mt`; take :math:`t\\propto\\varepsilon/M` for accuracy
        :math:`\\varepsilon` (spec; tested in ``tests/markov_zo/test_markov_zo_nonsmooth.py``).
    batching : ``"randomized"`` (MLMC, the paper) or ``"fixed"`` (``batch`` samples per step).
    batch, max_level : B and M; M defaults to :math:`2^{\\lceil\\log_2(d+\\tau)\\rceil}` with
        :math:`\\tau` the chain's ``mixing_time`` (d if unknown).
    project : optional :math:`\\Pi_X`, a callable returning an array of the same shape.
    max_calls : budget in function values (checked before each iteration, so the last batch
        may overshoot by at most one batch); max_iter : iteration cap (default 10 000 when
        neither is given; ``iterations=`` until December 2026, still accepted for one release
        with a ``FutureWarning``).
    record_every : store ``x`` and the call count every this many iterations.

    Returns a :class:`~optzoo.Result` with ``status`` ``BUDGET`` (no stopping test: the
    method is run on a budget, which counts as success) or ``DIVERGED`` (non-finite, or
    beyond the project's growth bound, with a ``NotConvergedWarning``), ``nfev`` = function
    values used (smoothness probes included) and
    ``history`` = {calls, x, batch_size}. ``fun`` is the mean of the values observed in the
    last iteration (noisy: f is never observed without noise).

    >>> import numpy as np
    >>> from optzoo.markov_zo import StickyChain, MarkovOracle, markov_zo_minimize
    >>> c = np.ones(5) / np.sqrt(5)
    >>> ch = StickyChain([-1.0, 1.0], stay_prob=0.9, seed=0)
    >>> orc = MarkovOracle(lambda X, Z: 0.5 * ((X - Z[:, None] * c) ** 2).sum(1), ch, dim=5,
    ...                    vectorized=True)
    >>> res = markov_zo_minimize(orc, np.ones(5), mu=1.0, max_calls=20_000, seed=0)
    >>> bool(np.sum(res.x ** 2) < 0.05), res.nfev >= 20_000
    (True, True)
    """
    owner = _OWNER
    if not all(hasattr(oracle, a) for a in ("values", "dim", "calls")):
        fail("oracle", owner, "a MarkovOracle (with 'values', 'dim' and 'calls')",
             type(oracle).__name__,
             exc=TypeError)
    _check_common(owner, feedback=feedback, smoothing=smoothing, batching=batching, batch=batch,
                  max_level=max_level)
    if feedback == "two_point" and not hasattr(oracle, "pairs"):
        raise TypeError(f"The 'oracle' argument of {owner} must expose pairs() for "
                        f"feedback='two_point' (same noise state for both evaluations). "
                        f"Got {type(oracle).__name__}.")
    x0 = check_array("x0", x0, owner=owner, shape=(oracle.dim,))
    check_smoothing_resolution(owner, smoothing, float(np.max(np.abs(x0), initial=0.0)),
                               float(np.finfo(np.float64).eps))
    d = oracle.dim
    if smoothness is not None:
        smoothness = check_real("smoothness", smoothness, owner=owner, low=0.0, closed="neither")
    if max_calls is not None:
        max_calls = check_int("max_calls", max_calls, owner=owner, low=1)
    if max_iter is not None:
        max_iter = check_int("max_iter", max_iter, owner=owner, low=0)
    if max_calls is None and max_iter is None:
        max_iter = 10_000
    if record_every is not None:
        record_every = check_int("record_every", record_every, owner=owner, low=1)
    M = _default_max_level(oracle, d) if max_level is None else max_level
    seed = check_int("seed", seed, owner=owner, low=0)
    rng = np_rng(seed, "markov_zo")
    last = {"f": float("nan")}
    start_calls = oracle.calls
    L_used = None
    if lr is None and lr_offset is None and mu is not None:
        mu = check_real("mu", mu, owner=owner, low=0.0, closed="neither")
        L_used = schedule_smoothness(oracle, x0, mu, smoothness, np_rng(seed, "markov_zo_smoothness"))
        lr_offset = 4.0 * d * L_used / mu
    offset = 4.0 * d if lr_offset is None else lr_offset
    step = _resolve_lr(lr, mu, offset, owner)

    def estimate(x, n):
        E = sphere_directions(n, d, rng)
        if feedback == "two_point":
            fp, fm = oracle.pairs(x + smoothing * E, x - smoothing * E)
            last["f"] = float(0.5 * (fp.mean() + fm.mean()))
            last.setdefault("f0", last["f"])
            return two_point_estimates(fp, fm, E, smoothing)
        fp = oracle.values(x + smoothing * E)
        last["f"] = float(fp.mean())
        last.setdefault("f0", last["f"])
        return one_point_estimates(fp, E, smoothing)

    budget = None if max_calls is None else start_calls + max_calls
    x, status, msg, k, hist, wall = sgd_loop(
        x0, estimate, lambda: oracle.calls, lr=step, batching=batching, batch=batch,
        max_level=M, project=project, max_cost=budget, max_iter=max_iter, rng=rng,
        record_every=record_every, owner=owner)
    hist["calls"] = [c - start_calls for c in hist["calls"]]
    why = objective_divergence(last["f"], start=last["f0"]) if "f0" in last else None
    if status is Status.BUDGET and why is not None:
        status, msg = Status.DIVERGED, f"diverged by the end of the run: {why}"
        warn_not_converged(owner, msg)
    return Result(x=x, fun=last["f"], status=status, message=msg, nit=k,
                  nfev=oracle.calls - start_calls, wall_time=wall,
                  extra={"history": hist, "max_level": M, "feedback": feedback,
                         "batching": batching, "seed": seed, "smoothness": L_used,
                         "lr_offset": offset})

