"""Markov chains that drive the noise of a :class:`~optzoo.markov_zo.oracle.MarkovOracle`.

Every chain exposes the same small interface:

* ``state``: the current noise state :math:`Z_T`;
* ``advance(n=1)``: move the clock :math:`T \\to T+n`;
* ``sample(n)``: return :math:`(Z_T, \\dots, Z_{T+n-1})` and leave the chain at :math:`Z_{T+n}`;
* ``mixing_time``: :math:`\\tau(1/4)=\\min\\{t\\ge 1:\\sup_z\\|Q^t(z,\\cdot)-\\pi\\|_{TV}\\le 1/4\\}`.

The paper's mixing assumption (INFERRED, as in its ancestor arXiv 2305.15938) is uniform
geometric ergodicity, :math:`\\sup_z\\|Q^t(z,\\cdot)-\\pi\\|_{TV}\\le(1/4)^{\\lfloor t/\\tau\\rfloor}`.
Finite chains satisfy it; :class:`AR1Chain` does not (see its docstring).
"""

from __future__ import annotations

import math

import numpy as np

from optzoo._core.rng import np_rng
from optzoo._core.validation import check_int, check_real, fail

__all__ = ["AR1Chain", "FiniteChain", "StickyChain"]

_MAX_TAU_SEARCH = 10**7


def _rng(seed, owner):
    if seed is None:
        seed = 0
    if isinstance(seed, np.random.Generator):
        return seed
    return np_rng(check_int("seed", seed, owner=owner, low=0))


def _check_pi(pi, k, owner):
    if pi is None:
        return np.full(k, 1.0 / k)
    pi = np.asarray(pi, dtype=float)
    if pi.shape != (k,) or not np.isfinite(pi).all() or (pi < 0).any() or abs(pi.sum() - 1) > 1e-9:
        fail("pi", owner, f"a probability vector of length {k}", pi)
    return pi / pi.sum()


class StickyChain:
    """Stay with probability ``stay_prob``, otherwise resample a state from ``pi``.

    Transition matrix :math:`P = pI + (1-p)\\mathbf 1\\pi^\\top`; so
    :math:`Q^t(z,\\cdot)=p^t\\delta_z+(1-p^t)\\pi`, the TV distance is
    :math:`p^t(1-\\pi(z))`, and :math:`\\tau(1/4)` is the least :math:`t\\ge1` with
    :math:`p^t(1-\\pi_{\\min})\\le 1/4`. Any scalar function of the state has
    autocorrelation :math:`\\rho^k` with :math:`\\rho=p`. For two equally likely states this
    is the symmetric "flip" chain with flip probability :math:`(1-p)/2`.

    Parameters
    ----------
    states : array of shape (K, ...); ``states[i]`` is the noise value of state ``i``.
    stay_prob : :math:`p\\in[0,1)`.
    pi : stationary law (default uniform). The chain starts at a draw from ``pi``.
    seed : int or ``numpy.random.Generator``.

    >>> ch = StickyChain([-1.0, 1.0], stay_prob=0.5, seed=0)
    >>> ch.mixing_time
    1
    >>> StickyChain.with_mixing_time([-1.0, 1.0], 30, seed=0).mixing_time
    30
    """

    uniformly_ergodic = True

    def __init__(self, states, stay_prob: float, *, pi=None, seed=0):
        owner = "StickyChain"
        self.states = np.asarray(states, dtype=float)
        if self.states.ndim == 0 or self.states.shape[0] < 1:
            fail("states", owner, "an array with at least one state along axis 0", states)
        if not np.isfinite(self.states).all():
            fail("states", owner, "finite", "NaN or inf")
        self.stay_prob = check_real("stay_prob", stay_prob, owner=owner, low=0.0, high=1.0, closed="left")
        self.pi = _check_pi(pi, self.states.shape[0], owner)
        self._rng = _rng(seed, owner)
        self._cum = np.cumsum(self.pi)
        self.index = int(self._draw(1)[0])

    def _draw(self, n: int) -> np.ndarray:
        # Inverse-CDF draws: rng.choice(p=...) costs ~20 us a call, this is ~1 us.
        return np.minimum(np.searchsorted(self._cum, self._rng.random(n), side="right"),
                          self.pi.size - 1)

    @classmethod
    def with_mixing_time(cls, states, mixing_time: int, *, pi=None, seed=0) -> StickyChain:
        """The sticky chain whose exact :math:`\\tau(1/4)` equals ``mixing_time``."""
        tau = check_int("mixing_time", mixing_time, owner="StickyChain.with_mixing_time", low=1)
        k = np.asarray(states).shape[0] if np.ndim(states) else 1
        pi_arr = _check_pi(pi, k, "StickyChain.with_mixing_time")
        c = 1.0 - pi_arr.min()
        if c <= 0.25:  # even p -> 1 would not matter; only tau = 1 is reachable then
            if tau != 1:
                fail("mixing_time", "StickyChain.with_mixing_time",
                     "1 for this stationary law (1 - min(pi) <= 1/4 mixes in one step)", tau)
            return cls(states, 0.0, pi=pi, seed=seed)
        # p^tau * c = 1/4 exactly puts tau(1/4) at tau; shade down one ulp-ish for rounding.
        p = (0.25 / c) ** (1.0 / tau) * (1.0 - 1e-12)
        return cls(states, p, pi=pi, seed=seed)

    @property
    def rho(self) -> float:
        """Lag-one autocorrelation of any function of the state."""
        return self.stay_prob

    @property
    def mixing_time(self) -> int:
        c = 1.0 - self.pi.min()
        p = self.stay_prob
        if p == 0.0 or c <= 0.25:
            return 1
        return max(1, math.ceil(math.log(0.25 / c) / math.log(p) - 1e-9))

    def tv_distance(self, t: int) -> float:
        """Exact :math:`\\sup_z\\|Q^t(z,\\cdot)-\\pi\\|_{TV}`."""
        return float(self.stay_prob ** t * (1.0 - self.pi.min()))

    @property
    def state(self):
        return self.states[self.index]

    def sample_indices(self, n: int) -> np.ndarray:
        """Indices of :math:`Z_T..Z_{T+n-1}`; leaves the chain at :math:`Z_{T+n}` (vectorised)."""
        n = int(n)
        if n <= 0:
            return np.empty(0, dtype=np.int64)
        # Draw n moves: slot i decides Z_{T+i} from Z_{T+i-1}; slot 0 is the current state.
        move = self._rng.random(n) >= self.stay_prob
        fresh = self._draw(n)
        move[0] = True
        fresh[0] = self.index
        last = np.maximum.accumulate(np.where(move, np.arange(n), 0))
        idx = fresh[last]
        # The chain's next state Z_{T+n}.
        if self._rng.random() >= self.stay_prob:
            self.index = int(self._draw(1)[0])
        else:
            self.index = int(idx[-1])
        return idx

    def sample(self, n: int) -> np.ndarray:
        return self.states[self.sample_indices(n)]

    def advance(self, n: int = 1) -> None:
        self.sample_indices(n)

    def transition_matrix(self) -> np.ndarray:
        k = self.pi.size
        return self.stay_prob * np.eye(k) + (1.0 - self.stay_prob) * np.outer(np.ones(k), self.pi)


class FiniteChain:
    """A general finite-state chain given by its transition matrix ``P`` (rows sum to one).

    The stationary law is the left eigenvector of ``P`` for eigenvalue 1; ``mixing_time``
    is the exact :math:`\\tau(1/4)` from matrix powers (an irreducible aperiodic chain is
    required, otherwise ``mixing_time`` raises).

    >>> ch = FiniteChain([[0.9, 0.1], [0.1, 0.9]], states=[-1.0, 1.0], seed=0)
    >>> ch.mixing_time  # TV(t) = 0.8**t / 2
    4
    """

    uniformly_ergodic = True

    def __init__(self, P, *, states=None, seed=0):
        owner = "FiniteChain"
        P = np.asarray(P, dtype=float)
        if P.ndim != 2 or P.shape[0] != P.shape[1] or not np.isfinite(P).all() or (P < 0).any() \
                or np.abs(P.sum(axis=1) - 1).max() > 1e-9:
            fail("P", owner, "a square row-stochastic matrix", P)
        self.P = P / P.sum(axis=1, keepdims=True)
        k = P.shape[0]
        self.states = np.arange(k, dtype=float) if states is None else np.asarray(states, dtype=float)
        if self.states.shape[0] != k:
            fail("states", owner, f"an array with {k} states along axis 0", self.states.shape)
        w, v = np.linalg.eig(self.P.T)
        pi = np.abs(np.real(v[:, np.argmin(np.abs(w - 1.0))]))
        self.pi = pi / pi.sum()
        self._cum = np.cumsum(self.P, axis=1)
        self._rng = _rng(seed, owner)
        self.index = int(self._rng.choice(k, p=self.pi))
        self._tau = None

    def tv_distance(self, t: int) -> float:
        Q = np.linalg.matrix_power(self.P, int(t))
        return float(0.5 * np.abs(Q - self.pi[None, :]).sum(axis=1).max())

    @property
    def mixing_time(self) -> int:
        if self._tau is None:
            Q, t = self.P.copy(), 1
            while 0.5 * np.abs(Q - self.pi[None, :]).sum(axis=1).max() > 0.25:
                Q, t = Q @ self.P, t + 1
                if t > 100_000:
                    raise ValueError("FiniteChain: the chain does not mix within 1e5 steps "
                                     "(reducible or periodic?).")
            self._tau = t
        return self._tau

    @property
    def state(self):
        return self.states[self.index]

    def sample_indices(self, n: int) -> np.ndarray:
        n = int(n)
        out = np.empty(n, dtype=np.int64)
        u = self._rng.random(n)
        i = self.index
        for t in range(n):  # sequential by nature; n is one batch, not the data set
            out[t] = i
            i = min(int(np.searchsorted(self._cum[i], u[t], side="right")), self.pi.size - 1)
        self.index = i
        return out

    def sample(self, n: int) -> np.ndarray:
        return self.states[self.sample_indices(n)]

    def advance(self, n: int = 1) -> None:
        self.sample_indices(n)


class AR1Chain:
    """Gaussian AR(1) noise :math:`Z_{t+1}=\\rho Z_t+\\sqrt{1-\\rho^2}\\,\\xi_t`, stationary N(0, I).

    **Outside the paper's assumption.** On :math:`\\mathbb R^m` this chain is geometrically
    but not *uniformly* ergodic: from a far start :math:`z` the law :math:`Q^t(z,\\cdot)` is
    :math:`N(\\rho^t z,(1-\\rho^{2t})I)`, whose TV distance to :math:`\\pi` tends to 1 as
    :math:`|z|\\to\\infty` for every fixed t, so :math:`\\sup_z\\mathrm{TV}=1`. Its
    ``mixing_time`` is therefore only the autocorrelation proxy
    :math:`\\lceil\\ln 2/\\ln(1/|\\rho|)\\rceil` (the lag at which correlation falls to 1/2),
    provided so users can test how the method behaves beyond the theory.

    >>> AR1Chain(0.9, dim=3, seed=0).sample(5).shape
    (5, 3)
    """

    uniformly_ergodic = False

    def __init__(self, rho: float, *, dim: int = 1, seed=0):
        owner = "AR1Chain"
        self.rho = check_real("rho", rho, owner=owner, low=-1.0, high=1.0, closed="neither")
        self.dim = check_int("dim", dim, owner=owner, low=1)
        self._rng = _rng(seed, owner)
        self._z = self._rng.standard_normal(self.dim)

    @property
    def mixing_time(self) -> int:
        r = abs(self.rho)
        if r <= 0.5:
            return 1
        return math.ceil(math.log(2.0) / math.log(1.0 / r) - 1e-9)

    @property
    def state(self):
        return self._z.copy()

    def sample(self, n: int) -> np.ndarray:
        from scipy.signal import lfilter

        n = int(n)
        if n <= 0:
            return np.empty((0, self.dim))
        xi = self._rng.standard_normal((n, self.dim)) * math.sqrt(1.0 - self.rho ** 2)
        xi[0] = self._z
        path = lfilter([1.0], [1.0, -self.rho], xi, axis=0)  # Z_t = rho Z_{t-1} + xi_t
        nxt = self.rho * path[-1] + math.sqrt(1.0 - self.rho ** 2) * self._rng.standard_normal(self.dim)
        self._z = nxt
        return path

    def advance(self, n: int = 1) -> None:
        self.sample(n)
