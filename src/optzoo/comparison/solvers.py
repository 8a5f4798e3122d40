"""Finding an epsilon-stationary point with a comparison oracle: CMP-TR and CMP-NGD.

Paper: Wang, Zhang, Tao, Zhang, Li, "Finding Stationary Points by Comparisons", ICML 2026,
arXiv 2606.27082 (abstract: an epsilon-stationary point is **visited** after
O~(n^2 / eps^1.5) comparisons; prior bound O~(n / eps^2), Zhang & Li 2024). Fidelity:
**reconstructed**: the algorithm below is OUR reconstruction with the abstract's costs.

``method="tr"`` (CMP-TR, INFERRED): at each iterate

1. :math:`\\hat g` = ``normalized_gradient`` (accuracy ``delta_g``);
2. :math:`M \\approx \\nabla^2 f/\\|\\nabla f\\|` = ``normalized_hessian`` (accuracy
   ``delta_h``, span ``4 R``), which carries the ratio :math:`\\|\\nabla f\\|/\\|\\nabla^2 f\\|`;
3. the trust-region step :math:`s=\\arg\\min_{\\|s\\|\\le R}\\ \\hat g^\\top s+\\tfrac12 s^\\top M s`,
   :math:`R = c_R\\sqrt{\\varepsilon/\\rho}`, solved exactly (eigendecomposition and a
   bisection on the secular equation, hard case included);
4. safeguard (default on): one comparison :math:`O_f(x+s, x)`; a step that does not
   decrease ``f`` is halved up to three times (one comparison each), else the iterate stays.

It runs :math:`T=\\lceil c_T\\sqrt\\rho\\,\\Delta/\\varepsilon^{1.5}\\rceil` iterations: with an
exact model each step is epsilon-stationary or decreases ``f`` by
:math:`\\Omega(\\varepsilon^{1.5}/\\sqrt\\rho)` (the standard trust-region argument).

``method="ngd"`` (CMP-NGD, Zhang & Li 2024): :math:`x \\leftarrow x - \\tfrac{\\varepsilon}{2L}\\hat g`
for :math:`T=\\lceil c_T L\\Delta/\\varepsilon^2\\rceil` steps.

Both methods **visit** a stationary point but cannot tell which iterate it is (they never
see :math:`\\|\\nabla f\\|`): the whole trajectory is returned and ``res.x`` is the last iterate.
"""

from __future__ import annotations

import math
import time

import numpy as np

from optzoo._core.result import Result, Status, divergence, warn_not_converged
from optzoo._core.rng import np_rng
from optzoo._core.validation import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_real,
    fail,
)
from optzoo.comparison.estimators import (
    _normalized_gradient,
    _scaled_hessian,
    default_radius,
)
from optzoo.comparison.oracle import ComparisonOracle

__all__ = ["comparison_minimize", "iteration_budget", "trust_region_step"]

_OWNER = "comparison_minimize"
METHODS = ("tr", "ngd")
#: What CMP-TR's model uses as its Hessian: ``"estimate"`` (the comparison estimate, the
#: method), ``"none"`` (zero, the Hessian routine not run: an ablation), ``"random"`` (the
#: estimate's spectral norm on a random symmetric matrix: an ablation that pays the same
#: comparisons and keeps only the scale).
HESSIANS = ("estimate", "none", "random")
STOPS = ("test", "plan")


def _random_symmetric(rng, n: int, norm: float) -> np.ndarray:
    """A random symmetric matrix (GOE) rescaled to spectral norm ``norm``."""
    A = rng.normal(size=(n, n))
    A = 0.5 * (A + A.T)
    nrm = float(np.linalg.norm(A, 2))
    return A * (norm / nrm) if nrm > 0 else A


def trust_region_step(g, M, radius: float) -> np.ndarray:
    """Exact minimiser of ``g.s + s.M.s / 2`` over ``|s| <= radius`` (More-Sorensen
    characterisation: ``(M + lam I) s = -g``, ``M + lam I >= 0``, ``lam (radius - |s|) = 0``).

    >>> import numpy as np
    >>> trust_region_step(np.array([1.0, 0.0]), np.eye(2), 10.0).tolist()   # Newton step inside
    [-1.0, 0.0]
    >>> trust_region_step(np.array([1.0, 0.0]), np.zeros((2, 2)), 0.5).tolist()  # boundary
    [-0.5, 0.0]
    """
    g = np.asarray(g, dtype=float)
    M = 0.5 * (np.asarray(M, dtype=float) + np.asarray(M, dtype=float).T)
    lam, V = np.linalg.eigh(M)
    gv = V.T @ g
    lmin = float(lam[0])
    if lmin > 0:
        s = -gv / lam
        if np.linalg.norm(s) <= radius:
            return V @ s

    def norm_at(mu):
        return float(np.linalg.norm(gv / (lam + mu)))

    lo = max(0.0, -lmin)
    small = np.abs(gv[np.isclose(lam, lmin, rtol=1e-10, atol=1e-14)])
    if small.max(initial=0.0) < 1e-12 * max(1.0, float(np.linalg.norm(gv))):  # hard case
        denom = lam - lmin
        keep = denom > 1e-12 * max(1.0, abs(lmin))
        s = np.zeros_like(gv)
        s[keep] = -gv[keep] / denom[keep]
        ns = float(np.linalg.norm(s))
        if ns <= radius:
            j = int(np.argmin(lam))
            s[j] = math.sqrt(max(radius ** 2 - ns ** 2, 0.0))
            return V @ s
    lo = lo + 1e-15 * max(1.0, abs(lo))
    hi = max(lo, 0.0) + float(np.linalg.norm(g)) / radius + abs(lmin) + 1.0
    while norm_at(hi) > radius:
        hi *= 2.0
    for _ in range(200):  # bisection on the monotone |s(mu)|
        mid = 0.5 * (lo + hi)
        if norm_at(mid) > radius:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-14 * max(1.0, hi):
            break
    s = -gv / (lam + hi)
    ns = float(np.linalg.norm(s))
    if ns > 0:  # on the boundary: remove the bisection's last ulps of slack
        s *= radius / ns
    return V @ s


#: the largest plan run without an explicit max_iter, budget or callback (a plan of 1e7
#: iterations is about ten hours at 3.5 ms each; eps = 1e-12 planned 3.6e19 and hung)
MAX_PLANNED = 10_000_000


def iteration_budget(method: str, *, eps: float, L: float, rho: float, delta_f: float,
                     c_T: float = 12.0) -> int:
    """Planned iterations: ``ceil(c_T sqrt(rho) delta_f / eps^1.5)`` (tr) or
    ``ceil(c_T L delta_f / eps^2)`` (ngd). Constants INFERRED."""
    if method == "tr":
        return max(1, math.ceil(c_T * math.sqrt(rho) * delta_f / eps ** 1.5))
    return max(1, math.ceil(c_T * L * delta_f / eps ** 2))


def comparison_minimize(oracle: ComparisonOracle, x0, *, eps: float, method: str = "tr",
                        L: float | None = None, rho: float = 1.0, delta_f: float = 1.0,
                        max_iter: int | None = None, budget: int | None = None,
                        delta_g: float = 0.125, delta_h: float = 0.125, radius: float | None = None,
                        c_R: float = 1.0, c_T: float = 12.0, hessian_span: float = 4.0,
                        safeguard: bool = True, quantum_ledger: bool = False,
                        hessian: str = "estimate", seed: int = 0, callback=None,
                        stop: str = "test") -> Result:
    """Visit an ``eps``-stationary point of ``f`` using only comparisons.

    Parameters
    ----------
    oracle : a :class:`ComparisonOracle` (every comparison is counted there).
    x0 : start, a finite 1-D array.
    eps : target gradient norm epsilon (> 0).
    method : ``"tr"`` (CMP-TR, this paper's bound, our reconstruction) or ``"ngd"``
        (CMP-NGD, Zhang & Li 2024).
    L, rho, delta_f : declared gradient-Lipschitz constant (required: no default, since the
        stopping test's certificate holds only for the declared ``L``), Hessian-Lipschitz
        constant and ``f(x0) - inf f`` (upper bounds, default 1); they set the step (``eps/(2L)``), the trust radius
        (``c_R sqrt(eps/rho)``) and the planned iteration count (:func:`iteration_budget`).
        Comparisons cannot check them: ``f`` and ``f / 200`` give the same comparisons, so an
        ``L`` understated 200-fold describes ``f / 200``, for which a start with
        ``|grad f| <= 200 eps`` is already ``eps``-stationary; CMP-NGD then oscillates with
        steps far too long and ends as ``budget_used``. Declare honest upper bounds.
        A plan above ``MAX_PLANNED`` (1e7) iterations is refused unless ``max_iter``, ``budget``
        or ``callback`` bounds the run.
    max_iter : overrides the planned iteration count.
    budget : optional cap on comparisons; hitting it before the planned iterations end is
        ``Status.USER_LIMIT`` plus a ``NotConvergedWarning``.
    delta_g, delta_h : accuracies of the normalized gradient / Hessian estimates.
    radius : probe radius r (default ``1e-4 max(1, |x|)`` at each iterate).
    safeguard : compare ``f(x + s)`` with ``f(x)`` before moving (CMP-TR only).
    quantum_ledger : also charge, per iteration, the SIMULATED quantum query cost (see
        :class:`~optzoo.comparison.quantum.QuantumQueryLedger`); no quantum execution.
    hessian : CMP-TR only: the matrix its trust-region model uses. ``"estimate"`` (default,
        the method): the comparison estimate of ``H / |grad f|``. Two ablations for controls,
        same step rule, radius and safeguard: ``"none"``: the zero matrix, and the Hessian
        routine is not run (no comparisons spent on it; the step is ``-R g_hat``, a
        normalized-gradient step of the trust radius); ``"random"``: the routine is run (same
        comparisons) but its estimate is replaced by a random symmetric matrix of the same
        spectral norm (the scale ``|grad f| / |H|`` kept, the curvature's directions lost).
    seed : seed of ``hessian="random"``'s matrices (unused otherwise).
    callback : ``callback(x) -> bool`` after every iteration; ``True`` stops the run
        (``Status.USER_LIMIT``; used by evaluators that know the true gradient).
    stop : ``"test"`` (default): before each step, one more comparison tests stationarity:
        with ``u = g_hat / |g_hat|`` and ``t = 2 (1 - delta_g) eps / L``, ``f(x - t u) >= f(x)``
        certifies ``|grad f(x)| <= eps`` for an ``L``-smooth ``f`` (the descent lemma: were
        ``|grad f| > eps``, ``f(x - t u) <= f(x) - t (1 - delta_g) |grad f| + L t^2 / 2 <
        f(x)``), given the estimate's accuracy ``delta_g``; the run then stops as
        ``Status.CONVERGED`` at ``x``. ``"plan"``: the worst-case plan of
        :func:`iteration_budget` with no test (the paper's analysis; ``Status.BUDGET``).

    Returns
    -------
    Result with ``x`` (last iterate; the method does not certify it), ``fun`` (``f(x)`` when
    the oracle wraps a value function, read outside the count; NaN for a comparator),
    ``nit``, ``nfev`` = ``ncomparisons``, and ``extra``: ``trajectory`` (T+1, n),
    ``comparisons_at`` (cumulative count at each iterate), ``quantum_queries``
    (simulated, or None), ``planned_iterations``, ``accepted``.
    Certified by the test: ``Status.CONVERGED``; planned iterations used: ``Status.BUDGET``
    (a success: the plan is the method's worst-case bound).

    >>> import numpy as np
    >>> orc = ComparisonOracle(lambda z: float(np.sum(z ** 2) + np.cos(z[0])), seed=0)
    >>> res = comparison_minimize(orc, np.array([2.0, 1.0]), eps=0.1, L=3.0, rho=1.0,
    ...                           delta_f=5.0, max_iter=30)
    >>> res.status.value, res.nfev == orc.ncomparisons
    ('converged', True)
    """
    t0 = time.perf_counter()
    if not isinstance(oracle, ComparisonOracle):
        raise TypeError(f"The 'oracle' argument of {_OWNER} must be a ComparisonOracle (wrap f with "
                        f"ComparisonOracle(f)). Got {type(oracle).__name__}.")
    x = check_array("x0", x0, owner=_OWNER, ndim=1, copy=True)
    eps = check_real("eps", eps, owner=_OWNER, low=0.0, closed="neither")
    method = check_choice("method", method, METHODS, owner=_OWNER)
    if L is None:
        fail("L", _OWNER, "declared: an upper bound on the gradient's Lipschitz constant (comparisons "
             "cannot see f's scale, and the stopping test certifies |grad f| <= eps only for the "
             "declared L)", None)
    L = check_real("L", L, owner=_OWNER, low=0.0, closed="neither")
    rho = check_real("rho", rho, owner=_OWNER, low=0.0, closed="neither")
    delta_f = check_real("delta_f", delta_f, owner=_OWNER, low=0.0, closed="neither")
    delta_g = check_real("delta_g", delta_g, owner=_OWNER, low=0.0, high=1.0, closed="right")
    delta_h = check_real("delta_h", delta_h, owner=_OWNER, low=0.0, high=1.0, closed="right")
    c_R = check_real("c_R", c_R, owner=_OWNER, low=0.0, closed="neither")
    c_T = check_real("c_T", c_T, owner=_OWNER, low=0.0, closed="neither")
    hessian_span = check_real("hessian_span", hessian_span, owner=_OWNER, low=0.0, closed="neither")
    if radius is not None:
        radius = check_real("radius", radius, owner=_OWNER, low=0.0, closed="neither")
    safeguard = check_bool("safeguard", safeguard, owner=_OWNER)
    quantum_ledger = check_bool("quantum_ledger", quantum_ledger, owner=_OWNER)
    hessian = check_choice("hessian", hessian, HESSIANS, owner=_OWNER)
    seed = check_int("seed", seed, owner=_OWNER, low=0)
    stop = check_choice("stop", stop, STOPS, owner=_OWNER)
    if hessian != "estimate" and method != "tr":
        fail("hessian", _OWNER, "'estimate' when method is 'ngd' (CMP-NGD uses no Hessian)", hessian)
    rng = np_rng(seed, "comparison_minimize", "random-hessian") if hessian == "random" else None
    T = iteration_budget(method, eps=eps, L=L, rho=rho, delta_f=delta_f, c_T=c_T)
    if T > MAX_PLANNED and max_iter is None and budget is None and callback is None:
        fail("eps", _OWNER, f"large enough that the planned iteration count (here {T:.3g}, "
             f"from eps, L, rho and delta_f) stays below {MAX_PLANNED:.0e}, or give max_iter, "
             "budget or a stopping callback (the plan bounds the iterations even with the stopping test)", eps)
    if max_iter is not None:
        T = check_int("max_iter", max_iter, owner=_OWNER, low=1)
    if budget is not None:
        budget = check_int("budget", budget, owner=_OWNER, low=1)
    if callback is not None and not callable(callback):
        fail("callback", _OWNER, "a callable callback(x) -> bool or None", callback, exc=TypeError)
    if oracle.dim is not None and x.size != oracle.dim:
        fail("x0", _OWNER, f"an array of length {oracle.dim} (the oracle's dim)", x.size)
    r0 = radius if radius is not None else default_radius(x)
    if oracle.has_values:
        f0 = float(oracle.values(x)[0])
        if r0 * eps < 1e-10 * abs(f0):
            warn_not_converged(_OWNER, f"radius * eps = {r0 * eps:.3g} is below 1e-10 |f(x0)| = "
                               f"{1e-10 * abs(f0):.3g}: comparisons may drown in float64 rounding")

    ledger = None
    if quantum_ledger:
        from optzoo.comparison.quantum import QuantumQueryLedger

        ledger = QuantumQueryLedger(n=x.size)
    start_count = oracle.ncomparisons
    R = c_R * math.sqrt(eps / rho)
    step = eps / (2.0 * L)
    t_test = 2.0 * (1.0 - delta_g) * eps / L
    traj, counts, accepted = [x.copy()], [0], 0
    status, message = Status.BUDGET, f"planned {T} iterations used"
    nit = 0
    for it in range(T):
        if budget is not None and oracle.ncomparisons - start_count >= budget:
            status, message = Status.USER_LIMIT, (f"comparison budget {budget} used after {it} of "
                                                  f"{T} planned iterations")
            break
        r = radius if radius is not None else default_radius(x)
        g_hat, _ = _normalized_gradient(oracle, x, delta_g, r)
        if ledger is not None:
            ledger.charge_gradient(delta_g)
        if stop == "test":
            u = g_hat / max(float(np.linalg.norm(g_hat)), 1e-300)
            decreases = oracle.greater(x, x - t_test * u)[0]
            if ledger is not None:
                ledger.charge(1, "stopping test")
            if not decreases:
                status, message = Status.CONVERGED, (
                    f"stationarity certified at iteration {it}: no decrease at step {t_test:.3g} "
                    f"along -g_hat, so |grad f| <= eps = {eps:g} for an L-smooth f with the "
                    f"declared L = {L:g} (given the estimate's accuracy delta_g = {delta_g:g})")
                break
        if method == "ngd":
            x = x - step * g_hat
            accepted += 1
        else:
            if hessian == "none":
                M = np.zeros((x.size, x.size))
            else:
                M, _ = _scaled_hessian(oracle, x, g_hat, delta_h, r, hessian_span * R)
                if ledger is not None:
                    ledger.charge_hessian(delta_h)
                if rng is not None:
                    M = _random_symmetric(rng, x.size, float(np.linalg.norm(M, 2)))
            # M = 0: the exact trust-region minimiser is the boundary step along -g_hat
            s = -R * g_hat if hessian == "none" else trust_region_step(g_hat, M, R)
            if safeguard:
                for _ in range(4):
                    worse = oracle.greater(x + s, x)[0]
                    if ledger is not None:
                        ledger.charge(1, "safeguard")
                    if not worse:
                        break
                    s = 0.5 * s
                else:
                    s = np.zeros_like(s)
            if np.any(s):
                accepted += 1
            x = x + s
        nit = it + 1
        traj.append(x.copy())
        counts.append(oracle.ncomparisons - start_count)
        why = divergence(x, start=traj[0])
        if why is not None:
            status, message = Status.DIVERGED, f"diverged at iteration {nit}: {why}"
            break
        if callback is not None and callback(x):
            status, message = Status.USER_LIMIT, f"stopped by callback after {nit} of {T} iterations"
            break
    if not status.success:
        warn_not_converged(_OWNER, message)
    fun = float(oracle.values(x)[0]) if oracle.has_values and np.isfinite(x).all() else float("nan")
    used = oracle.ncomparisons - start_count
    return Result(x=x, fun=fun, status=status, message=message, nit=nit, nfev=used,
                  wall_time=time.perf_counter() - t0,
                  extra={"ncomparisons": used, "trajectory": np.asarray(traj),
                         "comparisons_at": np.asarray(counts), "method": method,
                         "planned_iterations": T, "accepted": accepted, "stop": stop,
                         "trust_radius": R if method == "tr" else None, "hessian": hessian,
                         "step": step if method == "ngd" else None,
                         "quantum_queries": None if ledger is None else ledger.total,
                         "quantum_ledger": None if ledger is None else ledger.as_dict()})
