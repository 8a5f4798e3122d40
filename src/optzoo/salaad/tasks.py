"""A random hidden Markov language: the synthetic task of the SALAAD reproduction.

``n_states`` hidden states with a transition matrix that is low rank plus sparse (a rank-k
non-negative mixture plus a few strong sparse jumps, rows normalised) and sparse Dirichlet
emissions over ``vocab`` tokens (each state emits from its own random subset). Sequences are
sampled on the fly, vectorised over the batch. :meth:`HiddenMarkovTask.bayes_nll` runs the
forward algorithm and gives the exact Bayes-optimal per-token NLL of given sequences: an
absolute floor against which a model's NLL is reported.

(A task family for ``optzoo.tinylm``; it lives here until it moves there.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from optzoo._core.rng import np_rng
from optzoo._core.validation import check_int, check_real

__all__ = ["HiddenMarkovTask"]


@dataclass
class HiddenMarkovTask:
    """``HiddenMarkovTask(n_states=32, vocab=128, seed=0)``; all choices INFERRED (spec 3).

    >>> task = HiddenMarkovTask(n_states=4, vocab=8, seed=0)
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

    def sample(self, batch: int, length: int, *, seed: int) -> torch.Tensor:
        """``batch x length`` int64 tokens; the hidden chain starts from its stationary law."""
        batch = check_int("batch", batch, owner="HiddenMarkovTask.sample", low=1)
        length = check_int("length", length, owner="HiddenMarkovTask.sample", low=1)
        g = np_rng(seed, "hmm-sample")
        cT, cE = np.cumsum(self.transition, 1), np.cumsum(self.emission, 1)
        h = np.searchsorted(np.cumsum(self.stationary), g.random(batch) * (1 - 1e-12))
        out = np.empty((batch, length), dtype=np.int64)
        for t in range(length):
            u = g.random(batch)[:, None]
            out[:, t] = np.minimum((u > cE[h]).sum(1), self.vocab - 1)
            u = g.random(batch)[:, None]
            h = np.minimum((u > cT[h]).sum(1), self.n_states - 1)
        return torch.from_numpy(out)

    def bayes_nll(self, tokens: torch.Tensor, *, skip_first: bool = True) -> float:
        """Exact mean NLL (nats/token) of the Bayes predictor that knows the HMM, over
        positions 2..T (``skip_first``: the positions a causal LM is scored on)."""
        x = np.asarray(tokens, dtype=np.int64)
        B, T = x.shape
        alpha = self.stationary[None, :] * self.emission[:, x[:, 0]].T
        c = alpha.sum(1)
        alpha /= c[:, None]
        total = np.zeros(B) if skip_first else -np.log(c)
        for t in range(1, T):
            alpha = (alpha @ self.transition) * self.emission[:, x[:, t]].T
            c = alpha.sum(1)
            alpha /= c[:, None]
            total -= np.log(c)
        return float(total.sum() / (B * (T - 1 if skip_first else T)))
