"""The quantum comparison oracle, SIMULATED on a classical machine (no quantum execution).

Paper claim (abstract): with a quantum comparison oracle (superposition queries) an
epsilon-stationary point is visited after O~(n / eps^1.5) queries. The paper's quantum
routines were not available, so this module does two honest things and no more:

1. :class:`QuantumQueryLedger` (**simulated query complexity, no quantum execution**): the
   classical CMP-TR runs as usual and, per iteration, the ledger is charged what the theorem's
   quantum routines would cost: ``ceil(log2(n / delta))`` for a normalized gradient (the
   companion paper's O(log(n/delta)), constant 1 INFERRED) and ``n ceil(log2(1 / delta))``
   for the normalized Hessian (INFERRED: the O~(n) per iteration that O~(n/eps^1.5) implies),
   plus one per safeguard comparison. These counts are formulas times measured iteration
   counts, never a measured speed-up.
2. A small **statevector simulation** of the comparison phase oracle
   :math:`U|z\\rangle = (-1)^{[f(x+rz) > f(x-rz)]}|z\\rangle` on a grid of :math:`2^q` points per
   axis in :math:`[-1,1)^n` (diagonal, :math:`\\pm1`, self-inverse), followed by the textbook
   Fourier-sampling circuit (uniform superposition, one oracle call, QFT via
   ``numpy.fft.fftn``, measurement). That circuit is OURS, not the paper's routine: it is a
   check that the simulated oracle and circuit obey the Born rule against a closed form
   (for a gradient along a grid axis the fundamental frequency has probability
   :math:`8/(N^2\\sin^2(\\pi/N))`, :math:`N=2^q`), not evidence for the paper's bound.
   The classical cost of building the oracle is :math:`2\\cdot 2^{nq}` evaluations of ``f``.
"""

from __future__ import annotations

import math

import numpy as np

from optzoo._core.validation import check_array, check_int, check_real, fail

__all__ = [
    "QuantumQueryLedger",
    "fourier_sampling",
    "fundamental_probability",
    "phase_oracle",
]

SIMULATED = "simulated query complexity (no quantum execution)"


class QuantumQueryLedger:
    """Charges the SIMULATED quantum query cost of CMP-TR's subroutines (see module docstring).

    >>> led = QuantumQueryLedger(n=8)
    >>> led.charge_gradient(0.125), led.charge_hessian(0.125), led.total
    (6, 24, 30)
    """

    label = SIMULATED

    def __init__(self, n: int):
        self.n = check_int("n", n, owner="QuantumQueryLedger", low=1)
        self.by_kind: dict[str, int] = {}

    def charge(self, k: int, kind: str) -> int:
        k = int(k)
        self.by_kind[kind] = self.by_kind.get(kind, 0) + k
        return k

    def charge_gradient(self, delta: float) -> int:
        """O(log(n/delta)) per normalized gradient (companion paper; constant 1 INFERRED)."""
        return self.charge(max(1, math.ceil(math.log2(self.n / delta))), "gradient")

    def charge_hessian(self, delta: float) -> int:
        """O~(n log(1/delta)) per normalized Hessian (INFERRED from the headline bound)."""
        return self.charge(self.n * max(1, math.ceil(math.log2(1.0 / delta))), "hessian")

    @property
    def total(self) -> int:
        return int(sum(self.by_kind.values()))

    def as_dict(self) -> dict:
        return {"label": self.label, "total": self.total, **self.by_kind}


def _grid(q: int) -> np.ndarray:
    N = 2 ** q
    return -1.0 + (2.0 * np.arange(N) + 1.0) / N  # symmetric, never 0


def phase_oracle(f, x, *, radius: float, q: int, vectorized: bool = True) -> np.ndarray:
    """The diagonal of the comparison phase oracle on the grid, shape ``(2^q,) * n``:
    ``(-1)^[f(x + r z) > f(x - r z)]``. Costs ``2 * 2^(n q)`` classical evaluations of ``f``
    (the exponential price of simulating superposition queries classically)."""
    x = check_array("x", x, owner="phase_oracle", ndim=1)
    q = check_int("q", q, owner="phase_oracle", low=1, high=12)
    radius = check_real("radius", radius, owner="phase_oracle", low=0.0, closed="neither")
    n = x.size
    if n * q > 24:
        fail("q", "phase_oracle", "such that n * q <= 24 (2^24 amplitudes) on this machine", q)
    axes = np.meshgrid(*([_grid(q)] * n), indexing="ij")
    Z = np.stack([a.reshape(-1) for a in axes], axis=1)
    P, Mn = x + radius * Z, x - radius * Z
    if vectorized:
        fp, fm = np.asarray(f(P), dtype=float), np.asarray(f(Mn), dtype=float)
    else:
        fp = np.array([float(f(p)) for p in P])
        fm = np.array([float(f(m)) for m in Mn])
    if not (np.isfinite(fp).all() and np.isfinite(fm).all()):
        raise ValueError("The 'f' argument of phase_oracle must return finite values. Got NaN or inf.")
    return np.where(fp > fm, -1.0, 1.0).reshape((2 ** q,) * n)


def fourier_sampling(diag: np.ndarray, *, shots: int, seed: int = 0) -> dict:
    """Simulate: uniform superposition, one phase-oracle call, QFT, measure ``shots`` times.

    Returns ``{"probabilities", "samples" (shots, n) signed frequencies, "norm_after_oracle",
    "norm_after_qft", "oracle_squared_is_identity"}``.
    """
    diag = np.asarray(diag)
    if not np.isin(diag, (-1.0, 1.0)).all():
        fail("diag", "fourier_sampling", "a +-1 phase diagonal", "other values")
    shots = check_int("shots", shots, owner="fourier_sampling", low=1)
    N = diag.shape[0]
    psi = np.full(diag.shape, 1.0 / math.sqrt(diag.size), dtype=complex)
    psi = diag * psi
    norm1 = float(np.linalg.norm(psi))
    twice = bool(np.array_equal(diag * diag, np.ones_like(diag)))
    amp = np.fft.fftn(psi, norm="ortho")
    prob = np.abs(amp) ** 2
    norm2 = float(math.sqrt(prob.sum()))
    rng = np.random.default_rng(seed)
    flat = rng.choice(prob.size, size=shots, p=prob.reshape(-1) / prob.sum())
    idx = np.stack(np.unravel_index(flat, prob.shape), axis=1)
    freq = np.where(idx >= N // 2, idx - N, idx)
    return {"probabilities": prob, "samples": freq, "norm_after_oracle": norm1,
            "norm_after_qft": norm2, "oracle_squared_is_identity": twice}


def fundamental_probability(q: int) -> float:
    """Closed form: probability of frequency +-1 on the axis of a gradient along that axis,
    ``8 / (N^2 sin^2(pi / N))`` with ``N = 2^q`` (-> 8 / pi^2 as q grows)."""
    N = 2 ** int(q)
    return 8.0 / (N ** 2 * math.sin(math.pi / N) ** 2)
