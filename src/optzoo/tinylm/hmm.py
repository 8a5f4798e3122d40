"""A random hidden Markov language with an exact Bayes floor (salaad spec, section 3).

``n_states`` hidden states with a transition matrix that is low rank plus sparse (a rank-k
non-negative mixture plus a few strong sparse jumps and some self-persistence, rows normalised)
and sparse Dirichlet emissions over ``vocab`` tokens (each state emits from its own random
subset of ``support`` tokens). Sequences are sampled on the fly, vectorised over the batch; the
hidden chain starts from its stationary law, so the token process is stationary.

Two exact quantities, both by the forward algorithm:

* :meth:`HiddenMarkovTask.bayes_nll`: the mean per-token NLL of *given* sequences under the
  Bayes predictor that knows the HMM, ``-(1/(T-1)) sum_t log p(x_t | x_<t)``: the absolute
  floor for a causal LM scored on the same sequences (positions 2..T);
* :meth:`HiddenMarkovTask.entropy`: its expectation, the conditional block entropy
  ``H(X_2..X_T | X_1) / (T-1)`` in nats/token, by exhaustive enumeration of all ``vocab**T``
  sequences (tiny HMMs only). It decreases in ``T`` towards the entropy rate.

INFERRED (ours): every constant of the family (rank-4 mixture with Gamma(0.3) factors, jump
density 0.05 with weights U(0, 4), +2 on the diagonal, 12-token Dirichlet(0.5) supports); the
spec fixes only 32 states, 128 tokens, sparse Dirichlet emissions and a low-rank-plus-sparse
transition matrix. Importing this module does not import torch (``sample`` does).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optzoo._core.rng import np_rng
from optzoo._core.validation import check_bool, check_int, check_real, fail

__all__ = ["HiddenMarkovTask"]

_ENUM_LIMIT = 2_000_000


@dataclass
class HiddenMarkovTask:
    """``HiddenMarkovTask(n_states=32, vocab=128, seed=0)``: a seeded random HMM language.

    After construction: ``transition`` (``n_states x n_states``, rows sum to 1), ``emission``
    (``n_states x vocab``, at most ``support`` non-zeros a row) and ``stationary`` (the left
    eigenvector of ``transition`` for eigenvalue 1), all float64 numpy arrays.

    >>> import math
    >>> task = HiddenMarkovTask(n_states=4, vocab=8, support=4, seed=0)
    >>> x = task.sample(3, 10, seed=1)
    >>> tuple(x.shape), bool(0 < task.bayes_nll(x) < math.log(8))
    ((3, 10), True)
    """

    n_states: int = 32
    vocab: int = 128
    seed: int = 0
    rank: int = 4
    jump_density: float = 0.05
    support: int = 12
    concentration: float = 0.5

    def __post_init__(self) -> None:
        o = "HiddenMarkovTask"
        check_int("n_states", self.n_states, owner=o, low=2)
        check_int("vocab", self.vocab, owner=o, low=2)
        check_int("seed", self.seed, owner=o, low=0)
        check_int("rank", self.rank, owner=o, low=1, high=self.n_states)
        check_real("jump_density", self.jump_density, owner=o, low=0.0, high=1.0)
        check_int("support", self.support, owner=o, low=1, high=self.vocab)
        check_real("concentration", self.concentration, owner=o, low=0.0, closed="neither")
        g = np_rng(self.seed, "hmm")
        H, V = self.n_states, self.vocab
        U = g.gamma(0.3, size=(H, self.rank))
        W = g.gamma(0.3, size=(self.rank, H))
        low = U @ W
        low /= low.sum(1, keepdims=True)
        jumps = (g.random((H, H)) < self.jump_density) * g.random((H, H)) * 4.0
        np.fill_diagonal(jumps, jumps.diagonal() + 2.0)  # some persistence
        T = low + jumps
        self.transition = T / T.sum(1, keepdims=True)
        E = np.zeros((H, V))
        for h in range(H):
            idx = g.choice(V, size=self.support, replace=False)
            E[h, idx] = g.dirichlet(np.full(self.support, self.concentration))
        self.emission = E
        w, v = np.linalg.eig(self.transition.T)
        pi = np.abs(np.real(v[:, np.argmin(np.abs(w - 1.0))]))
        self.stationary = pi / pi.sum()

    def sample(self, batch: int, length: int, *, seed: int):
        """``batch x length`` int64 token tensor (torch); the hidden chain starts from its
        stationary law. The same ``seed`` gives the same tokens."""
        import torch

        o = "HiddenMarkovTask.sample"
        batch = check_int("batch", batch, owner=o, low=1)
        length = check_int("length", length, owner=o, low=1)
        seed = check_int("seed", seed, owner=o, low=0)
        g = np_rng(seed, "hmm-sample")
        cT, cE = np.cumsum(self.transition, 1), np.cumsum(self.emission, 1)
        h = np.searchsorted(np.cumsum(self.stationary), g.random(batch) * (1 - 1e-12))
        out = np.empty((batch, length), dtype=np.int64)
        for t in range(length):  # a loop over time only; every step is vectorised over the batch
            u = g.random(batch)[:, None]
            out[:, t] = np.minimum((u > cE[h]).sum(1), self.vocab - 1)
            u = g.random(batch)[:, None]
            h = np.minimum((u > cT[h]).sum(1), self.n_states - 1)
        return torch.from_numpy(out)

    def _log_conditionals(self, x: np.ndarray) -> np.ndarray:
        """``log p(x_t | x_<t)`` for every row and position (``B x T``), normalised forward pass."""
        B, T = x.shape
        out = np.empty((B, T))
        with np.errstate(divide="ignore", invalid="ignore"):  # impossible rows: -inf / nan, caught by callers
            return self._forward(x, out)

    def _forward(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        T = x.shape[1]
        alpha = self.stationary[None, :] * self.emission[:, x[:, 0]].T
        c = alpha.sum(1)
        out[:, 0] = np.log(c)
        alpha /= c[:, None]
        for t in range(1, T):
            alpha = (alpha @ self.transition) * self.emission[:, x[:, t]].T
            c = alpha.sum(1)
            out[:, t] = np.log(c)
            alpha /= c[:, None]
        return out

    def bayes_nll(self, tokens, *, skip_first: bool = True) -> float:
        """Exact mean NLL (nats/token) of the Bayes predictor that knows the HMM, over
        positions 2..T (``skip_first``: the positions a causal LM is scored on) or 1..T."""
        o = "HiddenMarkovTask.bayes_nll"
        check_bool("skip_first", skip_first, owner=o)
        x = np.asarray(tokens)
        if x.ndim != 2 or x.shape[1] < (2 if skip_first else 1) or x.shape[0] < 1:
            fail("tokens", o, "a (batch, length) array of token ids with length >= 2 (>= 1 without "
                 "skip_first)", f"shape {x.shape}")
        if not np.issubdtype(x.dtype, np.integer) or x.min() < 0 or x.max() >= self.vocab:
            fail("tokens", o, f"integer token ids in [0, {self.vocab - 1}]",
                 f"dtype {x.dtype}, range [{x.min()}, {x.max()}]")
        lc = self._log_conditionals(x.astype(np.int64))
        if skip_first:
            lc = lc[:, 1:]
        if not np.isfinite(lc).all():
            fail("tokens", o, "sequences of positive probability under the HMM",
                 f"{int((~np.isfinite(lc)).any(1).sum())} impossible sequence(s)")
        return float(-lc.mean())

    def entropy(self, length: int, *, skip_first: bool = True) -> float:
        """Exact ``H(X_2..X_T | X_1) / (T-1)`` (``skip_first``) or ``H(X_1..X_T) / T`` in
        nats/token: the expectation of :meth:`bayes_nll` over sequences of ``length`` tokens,
        by enumerating all ``vocab**length`` sequences (at most 2e6)."""
        o = "HiddenMarkovTask.entropy"
        length = check_int("length", length, owner=o, low=2 if skip_first else 1)
        check_bool("skip_first", skip_first, owner=o)
        n = self.vocab ** length
        if n > _ENUM_LIMIT:
            fail("length", o, f"a length with vocab**length <= {_ENUM_LIMIT} (exhaustive enumeration)",
                 f"{length} (vocab**length = {n})")
        x = np.stack(np.unravel_index(np.arange(n), (self.vocab,) * length), axis=1)
        lc = self._log_conditionals(x)
        logp = lc.sum(1)
        p = np.exp(logp)
        keep = p > 0
        if skip_first:
            h = -(p[keep] * (logp[keep] - lc[keep, 0])).sum() / (length - 1)
        else:
            h = -(p[keep] * logp[keep]).sum() / length
        return float(h)
