"""Vectorised runs of many independent problems at once (used by the reproduction).

A *bank* is P independent copies of the sticky two-state test problem
:math:`F(x,z)=\\tfrac12\\|x-zc\\|^2` (:math:`x^*=0`, :math:`\\|c\\|=1`, :math:`\\mu=L=1`), one
chain per copy, each with its own stay probability. Every method is the library's update
(the same ``mlmc_weights``, ``sphere_directions`` and estimator functions as
:func:`~optzoo.markov_zo.markov_zo_minimize`), run in numpy over all P copies at once.
One level :math:`J_k` is drawn per iteration and shared by the copies (common random
numbers; chains and directions are independent), each copy truncating at its own cap M.
Every function value and gradient is charged to the copy that asked for it.
"""

from __future__ import annotations

import numpy as np

from optzoo.markov_zo.zo import (
    mlmc_weights,
    one_point_estimates,
    sphere_directions,
    two_point_estimates,
)

__all__ = ["run_bank"]


class _Chains:
    """P sticky ±1 chains (stay w.p. p, else a fresh uniform sign), vectorised paths."""

    def __init__(self, stay, rng):
        self.p = np.asarray(stay, dtype=float)
        self.rng = rng
        self.z = rng.choice([-1.0, 1.0], size=self.p.size)

    def path(self, n_used: np.ndarray, n_max: int) -> np.ndarray:
        """(P, n_max) states from the current ones; copy i advances by n_used[i]."""
        P = self.p.size
        move = self.rng.random((P, n_max + 1)) >= self.p[:, None]
        fresh = np.where(self.rng.random((P, n_max + 1)) < 0.5, -1.0, 1.0)
        move[:, 0] = True
        fresh[:, 0] = self.z
        last = np.maximum.accumulate(np.where(move, np.arange(n_max + 1), 0), axis=1)
        path = np.take_along_axis(fresh, last, axis=1)
        self.z = path[np.arange(P), n_used]
        return path[:, :n_max]


def _f(X, Z, c):
    return 0.5 * ((X - Z[..., None] * c) ** 2).sum(-1)


def run_bank(method: str, *, d: int, stay, max_level, lr_mult, budget: float, x0_norm: float,
             seed_rng: np.random.Generator, grad_cost: float = 1.0, batch: int = 1,
             smoothing: float = 1e-4, spsa_c: float = 1.0, lr_offset: float | None = None, checkpoints=(0.125, 0.25, 0.5, 1.0)):
    """Run ``method`` on P copies; returns squared errors at the budget ``checkpoints``, (P, C).

    method: ``zo2`` / ``zo1`` (two/one-point, MLMC), ``zo2_fixed`` (batch ``batch``),
    ``fo`` (first-order MLMC), ``fo_fixed``, ``spsa`` (two plain calls, noisyopt schedule,
    ``lr_mult`` = its ``a``). ``stay``, ``max_level``, ``lr_mult``: per-copy arrays.
    """
    rng = seed_rng
    stay = np.asarray(stay, dtype=float)
    P = stay.size
    M = np.broadcast_to(np.asarray(max_level), (P,)).astype(int)
    lr_mult = np.broadcast_to(np.asarray(lr_mult, dtype=float), (P,))
    c = np.ones(d) / np.sqrt(d)
    x = np.tile(np.ones(d) * x0_norm / np.sqrt(d), (P, 1))
    chains = _Chains(stay, rng)
    cps = np.asarray(checkpoints) * budget
    rec = np.full((P, cps.size), np.nan)
    spent = np.zeros(P)
    active = np.ones(P, dtype=bool)
    k0 = 4.0 * d if lr_offset is None else lr_offset
    niter_spsa = int(budget // 2)
    k = 0
    with np.errstate(over="ignore", invalid="ignore"):  # divergence is recorded, not warned
        return _loop(**locals())


def _loop(method, d, M, lr_mult, c, x, chains, cps, rec, spent, active, k0, niter_spsa, k,
          rng, P, budget, grad_cost, batch, smoothing, spsa_c, **_):
    while active.any():
        if method == "spsa":
            ak = lr_mult / (k + 1.0 + 0.01 * niter_spsa) ** 0.602
            ck = spsa_c / (k + 1.0) ** 0.101
            delta = np.where(rng.random((P, d)) < 0.5, -1.0, 1.0)
            Z = chains.path(np.full(P, 2), 2)  # two separate calls: two consecutive states
            diff = _f(x + ck * delta, Z[:, 0], c) - _f(x - ck * delta, Z[:, 1], c)
            step = ak[:, None] * diff[:, None] / (2 * ck * delta)
            cost = np.full(P, 2.0)
        else:
            if method.endswith("fixed"):
                W = np.full((P, batch), 1.0 / batch)
                n_used = np.full(P, batch)
            else:
                J = int(rng.geometric(0.5))
                ws = {m: mlmc_weights(J, 1, m) for m in np.unique(M)}
                n_max = max(w.size for w in ws.values())
                W = np.zeros((P, n_max))
                n_used = np.zeros(P, dtype=int)
                for m, w in ws.items():
                    W[M == m, :w.size] = w
                    n_used[M == m] = w.size  # not the non-zeros: MLMC weights can be 0
            n_max = W.shape[1]
            Z = chains.path(n_used, n_max)
            if method == "zo2" or method == "zo2_fixed":
                E = sphere_directions(P * n_max, d, rng).reshape(P, n_max, d)
                fp = _f(x[:, None] + smoothing * E, Z, c)
                fm = _f(x[:, None] - smoothing * E, Z, c)
                g = two_point_estimates(fp.ravel(), fm.ravel(), E.reshape(-1, d), smoothing)
                cost = 2.0 * n_used
            elif method == "zo1":
                E = sphere_directions(P * n_max, d, rng).reshape(P, n_max, d)
                fp = _f(x[:, None] + smoothing * E, Z, c)
                g = one_point_estimates(fp.ravel(), E.reshape(-1, d), smoothing)
                cost = 1.0 * n_used
            else:  # first order
                g = (x[:, None] - Z[..., None] * c).reshape(-1, d)
                cost = grad_cost * n_used
            G = np.einsum("pn,pnd->pd", W, g.reshape(P, n_max, d))
            step = (lr_mult / (k + k0))[:, None] * G
        x = np.where(active[:, None], x - step, x)
        before = spent.copy()
        spent = np.where(active, spent + cost, spent)
        err = (x ** 2).sum(1)
        hit = (before[:, None] < cps[None, :]) & (spent[:, None] >= cps[None, :]) & active[:, None]
        rec = np.where(hit, err[:, None], rec)
        bad = ~np.isfinite(err)
        rec[bad & active] = np.where(np.isnan(rec[bad & active]), np.inf, rec[bad & active])
        active &= (spent < budget) & ~bad
        k += 1
    rec[np.isnan(rec)] = np.inf
    return rec
