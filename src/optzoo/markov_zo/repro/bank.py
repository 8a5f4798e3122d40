"""Vectorised runs of many independent problems at once (used by the reproduction).

A *bank* is P independent copies of the sticky two-state test problem
:math:`F(x,z)=\\tfrac12\\|x-zc\\|^2` (:math:`x^*=0`, :math:`\\|c\\|=1`, :math:`\\mu=L=1`), one
chain per copy, each with its own stay probability. Every method is the library's update
(the same ``mlmc_weights``, ``sphere_directions`` and estimator functions as
:func:`~optzoo.markov_zo.markov_zo_minimize`), run in numpy over all P copies at once.
One level :math:`J_k` is drawn per iteration and shared by the copies (common random
numbers; chains and directions are independent), each copy truncating at its own cap M.
Every function value and gradient is charged to the copy that asked for it.

SPSA (``method="spsa"``) is the one method that is not the library's update: it is
``noisyopt.minimizeSPSA`` 0.2.3 (``paired=True``, no bounds) run against plain Markov calls, so
its two evaluations fall on two consecutive chain states. Each copy draws its directions from
its own ``RandomState(seed)`` in exactly the order noisyopt draws them from ``np.random`` after
``np.random.seed(seed)`` (``_NoisyoptDraws``); ``tests/markov_zo/test_markov_zo_repro.py``
checks the bank's path against noisyopt itself, draw for draw.
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

_I32_MAX = np.iinfo(np.int32).max  # noisyopt's paired seed: randint(0, 2**31 - 1)


class _NoisyoptDraws:
    """noisyopt 0.2.3's per-iteration draws from a legacy ``RandomState(seed)``, in blocks.

    Each iteration noisyopt calls ``choice([-1, 1], size=d)`` (d masked 32-bit draws, kept bit
    0) and then ``randint(0, 2**31 - 1)`` (one 31-bit masked draw, rejected if it equals
    2**31 - 1). Both consume the raw MT19937 32-bit stream, which is drawn here in bulk as
    ``randint(0, 2**32, dtype=uint32)``; the rare rejection is replayed exactly.
    """

    def __init__(self, seed: int, d: int):
        self.rs = np.random.RandomState(int(seed) % 2**32)
        self.d = d
        self.buf = np.empty(0, dtype=np.uint32)

    def _need(self, n: int) -> None:
        if self.buf.size < n:
            more = max(n - self.buf.size, 256 * (self.d + 1))
            self.buf = np.concatenate(
                [self.buf, self.rs.randint(0, 2**32, size=more, dtype=np.uint32)])

    def block(self, n_iter: int) -> np.ndarray:
        """Rademacher directions of the next ``n_iter`` iterations, shape (n_iter, d)."""
        d, out, i = self.d, np.empty((n_iter, self.d)), 0
        while i < n_iter:
            left = n_iter - i
            self._need(left * (d + 1))
            u = self.buf[:left * (d + 1)].reshape(left, d + 1)
            rejected = (u[:, d] & _I32_MAX) == _I32_MAX
            m = int(np.argmax(rejected)) if rejected.any() else left
            out[i:i + m] = np.where(u[:m, :d] & 1, 1.0, -1.0)
            if m == left:
                self.buf = self.buf[left * (d + 1):]
                break
            out[i + m] = np.where(u[m, :d] & 1, 1.0, -1.0)  # its seed draw was rejected: redraw
            self.buf = self.buf[m * (d + 1) + d + 1:]
            while True:
                self._need(1)
                ok = (self.buf[0] & _I32_MAX) != _I32_MAX
                self.buf = self.buf[1:]
                if ok:
                    break
            i += m + 1
        return out


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
             smoothing: float = 1e-4, spsa_c: float = 1.0, lr_offset: float | None = None,
             checkpoints=(0.125, 0.25, 0.5, 1.0), spsa_seeds=None, chains=None):
    """Run ``method`` on P copies; returns squared errors at the budget ``checkpoints``, (P, C).

    method: ``zo2`` / ``zo1`` (two/one-point, MLMC), ``zo2_fixed`` (batch ``batch``),
    ``fo`` (first-order MLMC), ``fo_fixed``, ``spsa`` (two plain calls, noisyopt schedule,
    ``lr_mult`` = its ``a``; ``spsa_seeds``: per-copy noisyopt seeds, drawn from ``seed_rng``
    when omitted). ``stay``, ``max_level``, ``lr_mult``: per-copy arrays. ``chains``: an object
    with ``path(n_used, n_max)`` replacing the sticky chains (tests replay a recorded path).
    """
    rng = seed_rng
    stay = np.asarray(stay, dtype=float)
    P = stay.size
    M = np.broadcast_to(np.asarray(max_level), (P,)).astype(int)
    lr_mult = np.broadcast_to(np.asarray(lr_mult, dtype=float), (P,))
    c = np.ones(d) / np.sqrt(d)
    x = np.tile(np.ones(d) * x0_norm / np.sqrt(d), (P, 1))
    chains = _Chains(stay, rng) if chains is None else chains
    cps = np.asarray(checkpoints) * budget
    rec = np.full((P, cps.size), np.nan)
    spent = np.zeros(P)
    active = np.ones(P, dtype=bool)
    k0 = 4.0 * d if lr_offset is None else lr_offset
    niter_spsa = int(budget // 2)
    draws = None
    if method == "spsa":
        seeds = (rng.integers(0, 2**31, size=P) if spsa_seeds is None
                 else np.broadcast_to(np.asarray(spsa_seeds), (P,)))
        draws = [_NoisyoptDraws(s, d) for s in seeds]
    k = 0
    with np.errstate(over="ignore", invalid="ignore"):  # divergence is recorded, not warned
        return _loop(**locals())


def _loop(method, d, M, lr_mult, c, x, chains, cps, rec, spent, active, k0, niter_spsa, k,
          rng, P, budget, grad_cost, batch, smoothing, spsa_c, draws, **_):
    block = np.empty((P, 0, d))
    while active.any():
        if method == "spsa":
            ak = lr_mult / (k + 1.0 + 0.01 * niter_spsa) ** 0.602
            ck = spsa_c / (k + 1.0) ** 0.101
            j = k % 256
            if j == 0:
                block = np.stack([dr.block(256) for dr in draws])
            delta = block[:, j]
            Z = chains.path(np.full(P, 2), 2)  # two separate calls: two consecutive states
            diff = _f(x + ck * delta, Z[:, 0], c) - _f(x - ck * delta, Z[:, 1], c)
            step = ak[:, None] * (diff[:, None] / (2 * ck * delta))
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
