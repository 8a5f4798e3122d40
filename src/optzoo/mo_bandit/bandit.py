"""The learning core of Divide & Learn: decomposition, shared statistics, expert mix, dual.

Paper: Singh, Wu, Yang, Rosing, Yu, Ma, "Divide and Learn: Multi-Objective Combinatorial
Optimization at Scale", ICML 2026, arXiv 2602.11346. Fidelity: official-code (behaviour read
from esha-singh/Divide-and-Learn as described in our spec; no code copied).

Decomposition (windows of size d, step d - o, diminishing overlap o_t = floor(o_0 t^-alpha)),
shared per-(position, value) statistics updated after a reward r (normalised to r~):

    N[p,v] += 1,   Q[p,v] += (r~ - Q[p,v]) / N[p,v]                       (running mean)
    pi = max(W[p,v] / sum_v' W[p,v'], 0.01)
    W[p,v] *= exp(eta r~ / (pi n)),  then rows of W renormalised          (EXP3 / Hedge)
    S[p,v] += min((1 - r~) / pi, 100)                                     (FTRL loss)
    tau *= tau_decay

for v = x_p at every position p, and the dual (overlap coordination), for c_p > 1:

    viol_p = (c_p - 1) Var_v Q[p,.] (1 - N[p,x_p] / sum_v N[p,v]) + 0.1
    lam~ = clip(exp(log max(lam, 1e-10) + eta_dual / sqrt(s) * viol), 0, 10)
    lam  = clip(lam~ + (1 - 2/(s+1)) (lam~ - lam_prev), 0, 10)          (Nesterov)

Position-wise expert choice over the feasible values V_p with penalised score
Q'[p,v] = Q[p,v] - lam_p (c_p - 1): FTRL with probability ``ftrl_rate``; else EXP3 sampling
softmax((log W + 0.1 Q') / tau) with probability rho_p = rho_0 (1 - u_p / 2),
u_p = 1 / (1 + ln(1 + sum_v N[p,v] / n)); else UCB argmax Q' + c sqrt(ln(t+1) / N)
(``"ts"`` variant: Gaussian posterior sample instead of UCB).

``expert="uniform"`` (not an official config; the reproduction's control) replaces the whole
expert mix by a uniform draw over the feasible values: the statistics are still updated but
never read, so nothing is learned; everything else (decomposition, local search, budget) is
unchanged.

Note (our derivation, see docs): the dual penalty lam_p (c_p - 1) is the same for every value
at position p, so it shifts all scores of that position equally and can never change a choice
(argmax and softmax are shift-invariant). It is kept because the official code has it.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

__all__ = ["decompose", "overlap_at", "coverage", "RewardNormalizer", "BanditStats",
           "construct", "perturb"]


def overlap_at(o0: int, t: int, alpha: float) -> int:
    """Diminishing overlap ``floor(o0 * t^-alpha)`` for iteration ``t >= 1``."""
    return int(math.floor(o0 * max(t, 1) ** (-alpha) + 1e-12))


def decompose(n: int, d: int, o: int) -> list[np.ndarray]:
    """Sliding windows of size ``d`` with overlap ``o`` (step ``d - o``) covering ``0..n-1``.

    The last window is padded by wrap-around when ``o > 0`` (with ``o = 0`` it is truncated, so
    the windows partition the positions); one extra wrap-around window
    ``(n-o..n-1, 0..o-1)`` is added when ``2 <= o`` and ``2 o <= n`` (INFERRED size rule).
    """
    d = max(1, min(d, n))
    o = max(0, min(o, d - 1))
    step = d - o
    wins, start = [], 0
    while True:
        if start + d >= n:
            if o > 0 or start + d == n:
                idx = np.arange(start, start + d) % n
                idx = idx[np.sort(np.unique(idx, return_index=True)[1])]
            else:
                idx = np.arange(start, n)
            wins.append(idx)
            break
        wins.append(np.arange(start, start + d))
        start += step
    if o >= 2 and 2 * o <= n and len(wins) > 1:
        wins.append(np.concatenate([np.arange(n - o, n), np.arange(o)]))
    return wins


def coverage(windows: list[np.ndarray], n: int) -> np.ndarray:
    """``c_p``: how many windows contain position ``p``."""
    return np.bincount(np.concatenate(windows), minlength=n)


class RewardNormalizer:
    """Normalised reward: percentile clip once 10 rewards are seen, tanh(z-score) before."""

    def __init__(self, maxlen: int = 1000):
        self.hist: deque[float] = deque(maxlen=maxlen)

    def __call__(self, r: float) -> float:
        self.hist.append(float(r))
        h = np.fromiter(self.hist, dtype=float)
        if h.size == 1:
            return math.tanh(r / 10.0)
        if h.size < 10:
            sd = h.std()
            return math.tanh((r - h.mean()) / sd) if sd > 0 else 0.0
        p10, p90 = np.percentile(h, [10, 90])
        return float(np.clip((r - p10) / max(p90 - p10, 1e-12), -2.0, 2.0))


class BanditStats:
    """Q, N, W, S over (position, value), dual variables and temperature (one weight vector)."""

    def __init__(self, n: int, n_values: int, valid: np.ndarray, cfg, rng: np.random.Generator):
        self.n, self.k, self.cfg, self.rng = n, n_values, cfg, rng
        self.valid = valid
        self.Q = np.zeros((n, n_values))
        self.N = np.zeros((n, n_values))
        self.W = valid / valid.sum(1, keepdims=True)
        self.S = np.zeros((n, n_values))
        self.lam = np.zeros(n)
        self.mom = np.zeros(n)
        self.s = 0
        self.t = 0
        self.tau = cfg.initial_temperature
        self.norm = RewardNormalizer()
        self.pos = np.arange(n)
        self.lam_trace: list[float] = []

    def update(self, x: np.ndarray, r: float, counts: np.ndarray) -> float:
        cfg, p, v = self.cfg, self.pos, np.asarray(x)
        rt = self.norm(r)
        self.N[p, v] += 1.0
        self.Q[p, v] += (rt - self.Q[p, v]) / self.N[p, v]
        pi = np.maximum(self.W[p, v] / self.W.sum(1), 0.01)
        self.W[p, v] *= np.exp(cfg.learning_rate * rt / (pi * self.n))
        self.S[p, v] += np.minimum((1.0 - rt) / pi, 100.0)
        self.W /= self.W.sum(1, keepdims=True)
        # Keep every feasible value reachable by the log-weight sampler after underflow.
        np.maximum(self.W, 1e-300 * self.valid, out=self.W)
        self.tau *= cfg.temp_decay
        self.t += 1
        if cfg.use_lagrangian:
            self.dual_update(v, counts)
        return rt

    def dual_update(self, x: np.ndarray, counts: np.ndarray) -> None:
        cfg = self.cfg
        m = counts > 1
        if not m.any():
            self.lam_trace.append(float(self.lam.max()))
            return
        vk = self.valid.sum(1)
        mean = (self.Q * self.valid).sum(1) / vk
        var = (((self.Q - mean[:, None]) * self.valid) ** 2).sum(1) / vk
        share = self.N[self.pos, x] / np.maximum(self.N.sum(1), 1.0)
        viol = (counts - 1) * var * (1.0 - share) + 0.1
        self.s += 1
        eta = cfg.dual_step_size / math.sqrt(self.s)
        if cfg.accelerated:
            new = np.clip(np.exp(np.log(np.maximum(self.lam, 1e-10)) + eta * viol), 0.0, 10.0)
            y = np.clip(new + (1.0 - 2.0 / (self.s + 1)) * (new - self.lam), 0.0, 10.0)
        else:
            self.mom = 0.9 * self.mom + viol
            y = np.clip(self.lam + eta * self.mom, 0.0, 10.0)
        self.lam = np.where(m, y, self.lam)
        self.lam_trace.append(float(self.lam.max()))

    def choose(self, p: int, avail: np.ndarray, c_p: int) -> int:
        cfg, rng = self.cfg, self.rng
        if cfg.expert == "uniform":
            return int(avail[rng.integers(avail.size)])
        pen = self.lam[p] * (c_p - 1) if cfg.use_lagrangian else 0.0
        q = self.Q[p, avail] - pen
        nn = self.N[p, avail]
        if cfg.use_ftrl and rng.random() < cfg.ftrl_rate:
            with np.errstate(divide="ignore"):
                score = -self.S[p, avail] - np.log(nn) / math.sqrt(self.n) - pen
            return int(avail[_argmax_random(score, rng)])
        rho = cfg.hybrid_ratio
        if cfg.adaptive_hybrid:
            rho *= 1.0 - 0.5 / (1.0 + math.log1p(self.N[p].sum() / self.n))
        if rng.random() < rho:
            logits = (np.log(self.W[p, avail]) + 0.1 * q) / max(self.tau, 1e-12)
            logits -= logits.max()
            prob = np.exp(logits)
            return int(avail[rng.choice(avail.size, p=prob / prob.sum())])
        if cfg.expert == "ts":
            score = q + rng.standard_normal(avail.size) / np.sqrt(nn + 1.0)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                score = q + cfg.ucb_coefficient * np.sqrt(math.log(self.t + 1.0) / nn)
            score[nn == 0] = np.inf
        return int(avail[_argmax_random(score, rng)])


    def choose_all(self, counts: np.ndarray) -> np.ndarray:
        """The expert mix at every position at once (positions independent: categorical or
        unconstrained binary spaces). Same distribution as :meth:`choose` per position."""
        cfg, rng, n = self.cfg, self.rng, self.n
        valid = self.valid > 0
        if cfg.expert == "uniform":
            return np.argmax(np.where(valid, rng.random(self.Q.shape), -1.0), axis=1)
        pen = (self.lam * (counts - 1))[:, None] if cfg.use_lagrangian else 0.0
        q = self.Q - pen
        u = rng.random((2, n))
        with np.errstate(divide="ignore", invalid="ignore"):
            ftrl = -self.S - np.log(self.N) / math.sqrt(n) - pen
            rho = np.full(n, cfg.hybrid_ratio)
            if cfg.adaptive_hybrid:
                rho *= 1.0 - 0.5 / (1.0 + np.log1p(self.N.sum(1) / n))
            gumbel = -np.log(-np.log(rng.random(self.Q.shape)))
            exp3 = (np.log(self.W) + 0.1 * q) / max(self.tau, 1e-12) + gumbel
            if cfg.expert == "ts":
                last = q + rng.standard_normal(self.Q.shape) / np.sqrt(self.N + 1.0)
            else:
                last = q + cfg.ucb_coefficient * np.sqrt(math.log(self.t + 1.0) / self.N)
                last[self.N == 0] = np.inf
        use_ftrl = (u[0] < cfg.ftrl_rate) if cfg.use_ftrl else np.zeros(n, dtype=bool)
        use_exp3 = ~use_ftrl & (u[1] < rho)
        score = np.where(use_ftrl[:, None], ftrl, np.where(use_exp3[:, None], exp3, last))
        score = np.where(valid, score, -np.inf)
        best = score == score.max(1, keepdims=True)
        return np.argmax(np.where(best & valid, rng.random(self.Q.shape), -1.0), axis=1)


def _argmax_random(score: np.ndarray, rng: np.random.Generator) -> int:
    best = np.flatnonzero(score == score.max())
    return int(best[0] if best.size == 1 else best[rng.integers(best.size)])


def _available(space, x: np.ndarray, p: int, used: np.ndarray, load: list) -> np.ndarray:
    if space.kind == "permutation":
        return np.flatnonzero(~used)
    if space.kind == "categorical":
        return np.arange(space.sizes[p])
    if space.weights is not None and space.feasible_fn is None:
        return np.array([0, 1]) if load[0] + space.weights[p] <= space.capacity + 1e-12 else np.array([0])
    trial = np.where(x < 0, 0, x)
    trial[p] = 1
    return np.array([0, 1]) if space.feasible(trial) else np.array([0])


def construct(space, stats: BanditStats, windows: list[np.ndarray], counts: np.ndarray) -> np.ndarray:
    """Sequential construction: walk the windows, pick each unassigned position's value with the
    expert mix among its feasible values; feasible by construction."""
    n = space.n
    if space.kind == "categorical" or (space.kind == "binary" and space.weights is None
                                       and space.feasible_fn is None):
        return stats.choose_all(counts).astype(np.int64)
    x = np.full(n, -1, dtype=np.int64)
    used = np.zeros(space.n_values, dtype=bool)
    load = [0.0]
    for win in windows:
        for p in win:
            if x[p] >= 0:
                continue
            v = stats.choose(int(p), _available(space, x, int(p), used, load), int(counts[p]))
            x[p] = v
            if space.kind == "permutation":
                used[v] = True
            elif space.kind == "binary" and v == 1 and space.weights is not None:
                load[0] += space.weights[p]
    left = np.flatnonzero(x < 0)
    if left.size:  # only if the windows missed positions; fill feasibly
        if space.kind == "permutation":
            x[left] = np.flatnonzero(~used)[: left.size]
        else:
            x[left] = 0
    return x


def perturb(space, x: np.ndarray, window: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` feasible edits inside ``window``: swap two positions (permutation), feasible bit
    flip (binary), or change one category (categorical)."""
    y = x.copy()
    w = np.asarray(window)
    for _ in range(k):
        if space.kind == "permutation":
            if w.size < 2:
                break
            i, j = rng.choice(w, size=2, replace=False)
            y[i], y[j] = y[j], y[i]
        elif space.kind == "categorical":
            cand = w[space.sizes[w] > 1]
            if cand.size == 0:
                break
            p = int(cand[rng.integers(cand.size)])
            v = int(rng.integers(space.sizes[p] - 1))
            y[p] = v + (v >= y[p])
        else:
            for p in rng.permutation(w):
                y[p] ^= 1
                if y[p] == 0 or space.feasible(y):
                    break
                y[p] = 0
    return y
