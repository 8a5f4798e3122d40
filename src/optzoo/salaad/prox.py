"""The proximal operators and the per-block ADMM sweep of SALAAD (arXiv 2602.00942).

Pure functions on tensors; the wrapper in :mod:`optzoo.salaad.salaad` keeps the state.

* singular-value thresholding, the prox of :math:`\\tau\\|\\cdot\\|_*`:
  :math:`\\mathrm{SVT}_\\tau(M) = U\\,\\mathrm{diag}((\\sigma-\\tau)_+)\\,V^\\top`;
* soft thresholding, the prox of :math:`\\tau\\|\\cdot\\|_1`:
  :math:`\\mathrm{soft}_\\tau(Z) = \\mathrm{sign}(Z)(|Z|-\\tau)_+`;
* one structured sweep on a block (the order of the official code, as described in the spec):

  .. math::

     L &\\leftarrow \\mathrm{SVT}_{\\alpha/\\rho}(X - S + Y/\\rho), \\quad
       r = \\min\\{j : \\textstyle\\sum_{i\\le j}\\tilde\\sigma_i^2 \\ge e \\sum_i \\tilde\\sigma_i^2\\} \\\\
     \\alpha &\\leftarrow \\alpha + \\rho k_\\alpha (r/R - r^*)
       \\;[+\\, \\rho k_d \\max(0, (r - r_{prev})/R) \\text{ after } d_{start} \\text{ updates}] \\\\
     S &\\leftarrow \\mathrm{soft}_{\\beta/\\rho}(X - L + Y/\\rho), \\quad
     \\beta \\leftarrow \\beta + \\rho k_\\beta (\\mathrm{nnz}(S)/mn - d^*) \\;[+\\ldots] \\\\
     Y &\\leftarrow Y + \\rho (X - L - S).

  With :math:`\\rho` fixed this is integral control of the thresholds
  :math:`\\tau_L=\\alpha/\\rho` and :math:`\\tau_S=\\beta/\\rho`. Clamping
  :math:`\\alpha,\\beta \\ge 0` (a threshold below zero is not a proximal step) is ours (INFERRED).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["BlockState", "admm_sweep", "energy_rank", "soft_threshold", "svt"]


def svt(M: torch.Tensor, tau: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Singular-value thresholding: ``(L, shrunk singular values)``, SVD in float32 or wider.

    ``L = argmin_L tau ||L||_* + 1/2 ||L - M||_F^2``.

    >>> L, s = svt(torch.diag(torch.tensor([3.0, 1.0])), 2.0)
    >>> s.tolist(), L.tolist()
    ([1.0, 0.0], [[1.0, 0.0], [0.0, 0.0]])
    """
    work = M if M.dtype in (torch.float32, torch.float64) else M.float()
    U, s, Vh = torch.linalg.svd(work, full_matrices=False)
    s = (s - tau).clamp_min(0.0)
    return (U * s) @ Vh, s


def soft_threshold(Z: torch.Tensor, tau: float) -> torch.Tensor:
    """``argmin_S tau ||S||_1 + 1/2 ||S - Z||_F^2 = sign(Z) (|Z| - tau)_+`` elementwise.

    >>> soft_threshold(torch.tensor([-2.0, 0.5, 3.0]), 1.0).tolist()
    [-1.0, 0.0, 2.0]
    """
    return torch.sign(Z) * (Z.abs() - tau).clamp_min(0.0)


def energy_rank(s: torch.Tensor, energy: float, *, power: int = 2) -> int:
    """Smallest ``j`` with ``sum_{i<=j} s_i^power >= energy * sum_i s_i^power`` (0 if all zero).

    Training records ``power=2`` (sigma^2 energy); the deployment allocation uses ``power=1``
    (cumulative sigma), as in the official code. ``energy=1``: the numerical rank (singular
    values above ``1e-6`` of the largest).

    >>> energy_rank(torch.tensor([3.0, 1.0, 0.0]), 0.9)
    1
    """
    w = s.double() ** power
    total = float(w.sum())
    if total <= 0.0:
        return 0
    if energy >= 1.0:  # the numerical rank: float round-off of a low-rank product is not rank
        return int((s > float(s.max()) * 1e-6).sum())
    c = torch.cumsum(w, 0)
    return int(torch.searchsorted(c, torch.tensor(energy * total, dtype=c.dtype)).item()) + 1


class BlockState(NamedTuple):
    """One block's split: ``L`` (low rank), ``S`` (sparse), ``Y`` (multiplier), the
    threshold integrators ``alpha`` and ``beta``, and the last measured rank/density."""

    L: torch.Tensor
    S: torch.Tensor
    Y: torch.Tensor
    alpha: float
    beta: float
    rank: int
    nnz: int


def admm_sweep(X: torch.Tensor, st: BlockState, *, rho: float, rank_ratio: float, density: float,
               k_alpha: float, k_beta: float, k_d: float = 0.0, late: bool = False,
               energy: float = 0.999) -> BlockState:
    """One structured step on one block (pure: returns a new :class:`BlockState`).

    ``X`` is the current dense weight (any float dtype; the work is done in the dtype of
    ``st.L``). ``late``: add the ``k_d`` term that resists rank/density growth (the official
    code switches it on after 1500 controller updates).
    """
    X = X.to(st.L.dtype)
    m, n = X.shape
    R = min(m, n)
    L, s = svt(X - st.S + st.Y / rho, st.alpha / rho)
    L = L.to(st.L.dtype)
    r = energy_rank(s, energy)
    alpha = st.alpha + rho * k_alpha * (r / R - rank_ratio)
    if late:
        alpha += rho * k_d * max(0.0, (r - st.rank) / R)
    S = soft_threshold(X - L + st.Y / rho, st.beta / rho)
    nnz = int(torch.count_nonzero(S))
    beta = st.beta + rho * k_beta * (nnz / (m * n) - density)
    if late:
        beta += rho * k_d * max(0.0, (nnz - st.nnz) / (m * n))
    Y = st.Y + rho * (X - L - S)
    return BlockState(L, S, Y, max(alpha, 0.0), max(beta, 0.0), r, nnz)
