"""Divide & Learn (D&L): the solver users call.

``divide_and_learn(problem, budget)`` runs, for each weight vector w (uniform grid for m = 2,
Dirichlet(1) draws for m >= 3), the official main loop on the scalarised reward
``F_w(x) = -sum_i w_i f_i(x) / scale_i`` (objectives in minimisation form):

    x <- random feasible;  stats <- 0
    for it = 1 .. max_iter:
        rebuild windows when o_t = floor(o_0 it^-alpha) changes; re-decompose every 80 its
        for each window: x' <- zeroth-order local search(x, window)
                         if F(x') > F(x): x <- x', update(stats, x', F(x'))
        every 10 its:    x_c <- construct(stats); update(stats, x_c, F(x_c)); keep the better
        stop after `patience` non-improving iterations or when this weight's budget is used

All evaluations go through one counting :class:`~optzoo.mo_bandit.spaces.Oracle`; the returned
Pareto archive is the non-dominated set of *every* evaluated point (our fairness rule; the
code-faithful archive of every 5th incumbent is in ``extra["incumbent_archive"]``).

INFERRED choices (see docs/papers/mo_bandit.md): the evaluation budget is split evenly over
the weights (leftover passes on to later weights), the local-search reading (one probe per
round, accept if better), the wrap-around window size rule, log(0) = -inf in the FTRL bonus.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, fields, replace

import numpy as np

from optzoo._core.deprecation import renamed_kwargs
from optzoo._core.result import Result, Status
from optzoo._core.rng import np_rng
from optzoo._core.validation import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_real,
    fail,
)

from .bandit import BanditStats, construct, coverage, decompose, overlap_at, perturb
from .metrics import hv_trace, hypervolume, nondominated_mask
from .spaces import OWNER, BudgetExhausted, Oracle, as_problem

__all__ = ["DLConfig", "VARIANTS", "divide_and_learn", "weight_vectors", "bandit_regret"]


@dataclass(frozen=True)
class DLConfig:
    """Hyperparameters (official ``configs/*.yaml``; ``max_iter`` is the official
    ``max_iterations``, 400 because the base class overwrites the config value in its
    constructor; ``DLConfig(max_iterations=...)`` still works for one release)."""

    expert: str = "ucb"                 # "ucb" or "ts" ("uniform": no learning, a control)
    learning_rate: float = 0.5          # eta of EXP3
    ucb_coefficient: float = 3.0
    initial_temperature: float = 1.0
    temp_decay: float = 0.98
    hybrid_ratio: float = 0.5           # rho_0
    adaptive_hybrid: bool = True
    decomposition_size: int = 25        # d
    overlap: int = 18                   # o_0
    overlap_decay_rate: float = 0.1     # alpha
    max_iter: int = 400
    nb_rounds: int = 5                  # local-search rounds per window
    patience: int = 20
    use_lagrangian: bool = True
    dual_step_size: float = 1.0
    accelerated: bool = True
    use_ftrl: bool = True
    ftrl_rate: float = 0.3
    n_weight_vectors: int = 25
    redecompose_every: int = 80
    construct_every: int = 10
    archive_every: int = 5


DLConfig.__init__ = renamed_kwargs("DLConfig", max_iterations="max_iter")(DLConfig.__init__)

VARIANTS = {
    "ucb": DLConfig(),
    "ts": DLConfig(expert="ts", learning_rate=0.1, ucb_coefficient=0.0, temp_decay=0.995,
                   decomposition_size=35, nb_rounds=15, patience=60, use_ftrl=False),
}


def _validate_config(cfg: DLConfig) -> DLConfig:
    o = OWNER
    check_choice("expert", cfg.expert, ("ucb", "ts", "uniform"), owner=o)
    for name in ("learning_rate", "initial_temperature", "dual_step_size"):
        check_real(name, getattr(cfg, name), owner=o, low=0.0, closed="neither")
    for name in ("ucb_coefficient", "overlap_decay_rate"):
        check_real(name, getattr(cfg, name), owner=o, low=0.0)
    for name in ("temp_decay", "hybrid_ratio", "ftrl_rate"):
        check_real(name, getattr(cfg, name), owner=o, low=0.0, high=1.0)
    for name in ("decomposition_size", "max_iter", "nb_rounds", "patience",
                 "n_weight_vectors", "redecompose_every", "construct_every", "archive_every"):
        check_int(name, getattr(cfg, name), owner=o, low=1)
    check_int("overlap", cfg.overlap, owner=o, low=0, high=cfg.decomposition_size - 1)
    for name in ("adaptive_hybrid", "use_lagrangian", "accelerated", "use_ftrl"):
        check_bool(name, getattr(cfg, name), owner=o)
    return cfg


def weight_vectors(m: int, k: int, *, seed: int = 0) -> np.ndarray:
    """k weight vectors on the simplex: uniform grid for m = 2, Dirichlet(1) draws for m >= 3."""
    if m == 1:
        return np.ones((1, 1))
    if m == 2:
        a = np.linspace(0.0, 1.0, k) if k > 1 else np.array([0.5])
        return np.stack([a, 1.0 - a], 1)
    return np_rng(seed, "dirichlet", m, k).dirichlet(np.ones(m), size=k)


def _valid_mask(space) -> np.ndarray:
    if space.kind == "categorical":
        return (np.arange(space.n_values)[None, :] < space.sizes[:, None]).astype(float)
    return np.ones((space.n, space.n_values))


def _redecompose(problem, windows, d, rng) -> list[np.ndarray]:
    """Keep the first third of sliding windows and add "metric" groups: the d nearest items of
    up to 5 random centres (when the problem has coordinates), else 3 random contiguous chunks."""
    n = problem.n
    keep = windows[: max(1, len(windows) // 3)]
    groups = []
    if problem.coords is not None:
        c = np.asarray(problem.coords)
        for centre in rng.choice(n, size=min(5, n), replace=False):
            groups.append(np.argsort(np.linalg.norm(c - c[centre], axis=1))[:d])
    else:
        for _ in range(3):
            s = int(rng.integers(n))
            groups.append(np.arange(s, s + d) % n)
    wins = keep + [np.unique(g) for g in groups]
    missing = np.setdiff1d(np.arange(n), np.concatenate(wins))
    if missing.size:  # the sequential construction needs every position covered
        wins.append(missing)
    return wins


def _local_search(space, F, x, fx, window, cfg, rng, n):
    """Zeroth-order local search in one window (one evaluated probe per round)."""
    best_x, best_f = x, fx
    cur_x, cur_f = x, fx
    g_m, k = 0.0, 1
    delta = 1.0 / n
    for _ in range(min(cfg.nb_rounds, len(window))):
        y = perturb(space, cur_x, window, k, rng)
        fy = F(y)
        g = (fy - cur_f) / delta
        g_m = 0.9 * g_m + 0.1 * g
        k = 3 if abs(g_m) > 0.1 else 2 if abs(g_m) > 0.01 else 1
        if g > 0:
            cur_x, cur_f = y, fy
            if fy > best_f:
                best_x, best_f = y, fy
    return best_x, best_f


def _solve_weight(problem, oracle, w, cfg, cap, rng, log):
    space = problem.space
    n = space.n
    scale = problem.scale if problem.scale is not None else np.ones(problem.n_objectives)
    coef = w / scale

    def F(x):
        if oracle.nfev >= cap and oracle.use_cache and np.asarray(x, dtype=np.int64).tobytes() not in oracle.cache:
            raise BudgetExhausted("weight budget used")
        return -float(coef @ oracle(x))

    stats = BanditStats(n, space.n_values, _valid_mask(space), cfg, rng)
    d = min(cfg.decomposition_size, n)
    o_cur = min(overlap_at(cfg.overlap, 1, cfg.overlap_decay_rate), d - 1)
    windows = decompose(n, d, o_cur)
    counts = coverage(windows, n)
    incumbents, stale, it = [], 0, 0
    try:
        x = space.random(rng)
        fx = F(x)
        for it in range(1, cfg.max_iter + 1):
            o_t = min(overlap_at(cfg.overlap, it, cfg.overlap_decay_rate), d - 1)
            if o_t != o_cur:
                o_cur, windows = o_t, decompose(n, d, o_t)
                counts = coverage(windows, n)
            if it % cfg.redecompose_every == 0:
                windows = _redecompose(problem, windows, d, rng)
                counts = coverage(windows, n)
            log["overlap"].append(o_cur)
            improved = False
            for win in windows:
                y, fy = _local_search(space, F, x, fx, win, cfg, rng, n)
                if fy > fx:
                    x, fx, improved = y, fy, True
                    stats.update(x, fy, counts)
            if it % cfg.construct_every == 0:
                xc = construct(space, stats, windows, counts)
                fc = F(xc)
                stats.update(xc, fc, counts)
                if fc > fx:
                    x, fx, improved = xc, fc, True
            incumbents.append(x)
            stale = 0 if improved else stale + 1
            if stale >= cfg.patience:
                break
    except BudgetExhausted:
        pass
    log["lambda"].append(stats.lam_trace)
    return incumbents[:: cfg.archive_every], it, stale >= cfg.patience


def _hv_point(name: str, value, m: int) -> np.ndarray:
    """A reference or ideal point: m finite numbers, one per objective (never broadcast)."""
    return check_array(name, value, owner=OWNER, shape=(m,))


def divide_and_learn(problem, budget: int = 10_000, *, space=None, n_objectives=None, sense=None,
                     variant: str = "ucb", weights=None, ref_point=None, ideal_point=None,
                     n_trace: int = 20, seed: int = 0, **options) -> Result:
    """Divide & Learn on a multi-objective combinatorial problem.

    Parameters
    ----------
    problem : an :class:`MOProblem` (see ``optzoo.mo_bandit.problems``), a pymoo ``Problem``
        with integer/binary bounded variables, or a callable ``f(x) -> (m,)`` over the decision
        vector (then ``space`` and ``n_objectives`` are required; ``sense`` defaults to all "min").
    budget : objective evaluations (distinct points; cache hits are free).
    variant : ``"ucb"`` or ``"ts"`` (the two official configs); ``options`` override any
        :class:`DLConfig` field, e.g. ``n_weight_vectors=10``.
    weights : optional (k, m) weight vectors (rows on the simplex); default from the variant.
    ref_point, ideal_point : HV points in the problem's own sense (default: the problem's),
        each of shape (m,). ``ref_point`` alone gives ``extra["hypervolume"]``; with
        ``ideal_point`` too, the HV ratio ``extra["hv"]`` and ``extra["hv_trace"]``.

    Returns
    -------
    Result with ``x`` the Pareto set (k, n), ``fun`` its objective vectors (k, m, problem's own
    sense), ``nfev``, and ``extra``: ``X_all``/``F_all`` (every evaluation), ``hv_trace``
    (evaluations, HV ratio) when HV points are known, ``hv``, ``hypervolume`` (absolute), ``incumbent_archive``,
    ``weights``, ``lambda_trace``, ``overlap_trace``.

    Examples
    --------
    >>> from optzoo.mo_bandit import bi_tsp, divide_and_learn
    >>> res = divide_and_learn(bi_tsp(10, seed=0), budget=300, n_weight_vectors=3, seed=0)
    >>> res.nfev <= 300 and res.fun.shape[1] == 2
    True
    """
    t0 = time.perf_counter()
    budget = check_int("budget", budget, owner=OWNER, low=1)
    seed = check_int("seed", seed, owner=OWNER)
    check_choice("variant", variant, tuple(VARIANTS), owner=OWNER)
    prob = as_problem(problem, space=space, n_objectives=n_objectives, sense=sense)
    known = {f.name for f in fields(DLConfig)}
    for key in options:
        if key not in known:
            raise TypeError(f"divide_and_learn got an unexpected option {key!r}; options are "
                            f"DLConfig fields: {', '.join(sorted(known))}.")
    cfg = _validate_config(replace(VARIANTS[variant], **options))
    m = prob.n_objectives
    if m == 1:
        warnings.warn("divide_and_learn with a single objective: the archive holds one point.",
                      stacklevel=2)
    if weights is None:
        W = weight_vectors(m, cfg.n_weight_vectors, seed=seed)
    else:
        W = np.asarray(weights, dtype=float)
        if W.ndim != 2 or W.shape[1] != m or not np.isfinite(W).all() or (W < 0).any() \
                or not np.allclose(W.sum(1), 1.0, atol=1e-6):
            fail("weights", OWNER, f"a (k, {m}) array of non-negative rows summing to 1", weights)
    ref = prob.ref_point if ref_point is None else _hv_point("ref_point", ref_point, m)
    ideal = prob.ideal_point if ideal_point is None else _hv_point("ideal_point", ideal_point, m)
    if (ref_point is not None or ideal_point is not None) and ref is not None \
            and ideal is not None and not (ref * prob.sign > ideal * prob.sign).all():
        fail("ref_point", OWNER, f"worse than ideal_point {ideal.tolist()} in every objective "
             f"(sense {prob.sense})", ref.tolist())
    oracle = Oracle(prob, budget)
    rng = np_rng(seed, "divide_and_learn")
    log = {"overlap": [], "lambda": []}
    inc_archive, converged, nits = [], [], 0
    for i, w in enumerate(W):
        cap = oracle.nfev + max(1, oracle.remaining // (len(W) - i))
        if oracle.remaining <= 0:
            break
        inc, its, conv = _solve_weight(prob, oracle, w, cfg, cap, rng, log)
        inc_archive.extend(inc)
        converged.append(conv)
        nits += its
    X, F = oracle.evaluated()
    keep = nondominated_mask(F)
    extra = {"X_all": X, "F_all": F * prob.sign, "weights": W, "lambda_trace": log["lambda"],
             "overlap_trace": log["overlap"], "incumbent_archive": np.array(inc_archive),
             "config": cfg}
    if ref is not None:  # the absolute HV needs only r; the ratio (hv, hv_trace) needs z too
        extra["hypervolume"] = hypervolume(F, ref * prob.sign)
    if ref is not None and ideal is not None:
        sref, sideal = ref * prob.sign, ideal * prob.sign
        cps = np.unique(np.linspace(1, max(len(F), 1), n_trace).astype(int))
        extra["hv_trace"] = list(zip(cps.tolist(), hv_trace(F, sref, sideal, cps), strict=True))
        extra["hv"] = extra["hv_trace"][-1][1] if len(F) else 0.0
    used_all = oracle.nfev >= budget
    # a planned evaluation budget that was spent is the normal end of D&L (success); stopping
    # early is CONVERGED only when every weight vector converged
    if used_all:
        status = Status.BUDGET
    else:
        status = Status.CONVERGED if all(converged) else Status.USER_LIMIT
    msg = (f"{len(W)} weight vectors, {oracle.nfev}/{budget} evaluations, "
           f"{int(keep.sum())} non-dominated points")
    return Result(x=X[keep], fun=F[keep] * prob.sign, status=status, message=msg, nit=nits,
                  nfev=oracle.nfev, wall_time=time.perf_counter() - t0, extra=extra)


def bandit_regret(problem, T: int, *, weight=None, variant: str = "ucb", seed: int = 0,
                  **options) -> dict:
    """Full-bandit regret of the D&L expert mix: each round constructs x_t from the shared
    statistics, observes the noisy scalarised reward and updates. Needs ``problem.info``'s
    ``expected`` and ``optimum`` (e.g. :func:`~optzoo.mo_bandit.problems.separable_categorical`).

    Returns ``{"regret": cumulative R(t) for t = 1..T, "opt": r(x*), "x_star", "argmax_hits"}``.
    """
    T = check_int("T", T, owner="bandit_regret", low=1)
    prob = as_problem(problem, owner="bandit_regret")
    if "expected" not in prob.info or "optimum" not in prob.info:
        fail("problem", "bandit_regret", "a problem with known 'expected' and 'optimum' (info)",
             prob.name)
    cfg = _validate_config(replace(VARIANTS[variant], **options))
    m = prob.n_objectives
    w = np.full(m, 1.0 / m) if weight is None else np.asarray(weight, dtype=float)
    x_star, opt = prob.info["optimum"](w)
    coef = w * prob.sign  # the problem is in its own sense; reward = w . f for "max"
    rng = np_rng(seed, "bandit_regret")
    space = prob.space
    stats = BanditStats(space.n, space.n_values, _valid_mask(space), cfg, rng)
    d = min(cfg.decomposition_size, space.n)
    regret = np.empty(T)
    o_cur, windows = None, None
    total = 0.0
    for t in range(1, T + 1):
        o_t = min(overlap_at(cfg.overlap, t, cfg.overlap_decay_rate), d - 1)
        if o_t != o_cur:
            o_cur, windows = o_t, decompose(space.n, d, o_t)
            counts = coverage(windows, space.n)
        x = construct(space, stats, windows, counts)
        r = -float(coef @ np.asarray(prob.evaluate(x)))
        stats.update(x, r, counts)
        total += opt - float(w @ prob.info["expected"](x))
        regret[t - 1] = total
    hits = float((stats.Q.argmax(1) == x_star).mean())
    return {"regret": regret, "opt": opt, "x_star": x_star, "argmax_hits": hits}
