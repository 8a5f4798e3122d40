"""``nn.Module`` wrappers: :class:`SafeLogSumExp` (the surrogate with its auxiliary ``alpha``)
and :class:`KLDROLoss` (KL-regularised DRO for any PyTorch model trained by minibatches).

Paper: Gladin et al., "Improved Stochastic Optimization of LogSumExp", arXiv 2509.24894
(ICML 2026). Fidelity: the official code's objective (``alpha`` an ``nn.Parameter``
initialised at 0 and trained by the same optimiser as the model).

Learning rate: the surrogate's per-sample weights reach ``1/rho``; use a learning rate
proportional to ``rho`` for the model and for ``alpha`` (see :mod:`.logsumexp`).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from optzoo._core.validation import check_choice, check_real, fail
from optzoo.safe_kl.logsumexp import (
    _check_rho,
    exact_logsumexp,
    kappa_rho,
    safe_alpha,
    safe_kl_logsumexp,
    sumexp_loss,
)

__all__ = ["SafeLogSumExp", "KLDROLoss"]


class SafeLogSumExp(nn.Module):
    """Safe-KL LogSumExp module: ``forward(scores)`` returns the minibatch surrogate

        alpha + (tau/rho) * mean_i softplus((s_i - alpha)/tau + ln rho)

    with ``alpha`` a parameter of shape ``groups`` (``()`` for one scalar). Train it jointly
    with the model; ``exact(scores)`` gives the true value ``G_rho`` (``normalized`` subtracts
    ``tau * kappa_rho``). After each forward, ``saturation`` holds ``max_i sigma(u_i)``, the
    largest per-sample weight as a fraction of its cap ``1/rho`` (near 1: the cap binds, the
    approximation is loose or ``alpha`` lags behind).

    >>> m = SafeLogSumExp(rho=1e-2)
    >>> loss = m(torch.randn(32))
    >>> loss.backward(); m.alpha.grad is not None
    True
    """

    def __init__(self, rho: float = 1e-2, tau: float = 1.0, *, groups: tuple[int, ...] = (),
                 alpha_init: float = 0.0, normalized: bool = False) -> None:
        super().__init__()
        owner = "SafeLogSumExp"
        self.rho = _check_rho(rho, owner)
        self.tau = check_real("tau", tau, owner=owner, low=0.0, closed="neither")
        alpha_init = check_real("alpha_init", alpha_init, owner=owner)
        self.normalized = bool(normalized)
        if not isinstance(groups, (tuple, list)) or not all(
                isinstance(g, int) and not isinstance(g, bool) and g >= 1 for g in groups):
            fail("groups", owner, "a tuple of positive ints (the shape of alpha; () for a scalar)",
                 groups)
        self.alpha = nn.Parameter(torch.full(tuple(groups), alpha_init))
        self.saturation = float("nan")

    def forward(self, scores: torch.Tensor, weights=None, dim: int = -1) -> torch.Tensor:
        out = safe_kl_logsumexp(scores, self.alpha, rho=self.rho, tau=self.tau, weights=weights,
                                dim=dim, normalized=self.normalized)
        with torch.no_grad():
            a = self.alpha.unsqueeze(dim) if self.alpha.dim() > 0 else self.alpha
            u = (scores - a) / self.tau + math.log(self.rho)
            self.saturation = float(torch.sigmoid(u).max())
        return out

    def exact(self, scores: torch.Tensor, weights=None, dim: int = -1) -> torch.Tensor:
        """The exact ``G_rho`` (or ``F_rho``) of ``scores`` with the optimal ``alpha``."""
        return safe_kl_logsumexp(scores, None, rho=self.rho, tau=self.tau, weights=weights,
                                 dim=dim, normalized=self.normalized)

    @torch.no_grad()
    def reset_alpha(self, scores: torch.Tensor, dim: int = -1) -> None:
        """Set ``alpha`` to the optimum for ``scores`` (e.g. a first batch or the full data)."""
        self.alpha.copy_(safe_alpha(scores, rho=self.rho, tau=self.tau, dim=dim).to(self.alpha))

    def extra_repr(self) -> str:
        return f"rho={self.rho:g}, tau={self.tau:g}, groups={tuple(self.alpha.shape)}"


def _per_sample(losses):
    """(b,) or (b, 1) per-sample losses as (b,); anything else is an error, not a vector."""
    if isinstance(losses, torch.Tensor) and losses.dim() == 2 and losses.shape[1] == 1:
        return losses.squeeze(1)
    if isinstance(losses, torch.Tensor) and losses.dim() != 1:
        fail("per_sample_losses", "KLDROLoss", "a 1-D tensor of per-sample losses, shape (b,) "
             "or (b, 1)", f"shape {tuple(losses.shape)}")
    return losses


class KLDROLoss(nn.Module):
    """KL-regularised DRO loss for minibatch training of any model.

    The target objective is ``lam * ln mean_i exp(l_i / lam)`` over the whole data set
    (= ``sup_Q E_Q l - lam KL(Q||P)``). ``forward(per_sample_losses)`` returns a minibatch
    loss whose minimisation targets it:

    - ``"safe"`` (default): ``alpha + (lam/rho) mean softplus((l - alpha)/lam + ln rho)``;
      unbiased, overflow-free; approximates the objective from below with an O(rho) gap.
    - ``"sumexp"``: ``alpha + lam (mean exp((l - alpha)/lam) - 1)``; unbiased, exact at the
      optimum, overflows at small ``lam``.
    - ``"minibatch"``: ``lam ln mean_batch exp(l/lam)``; biased for small batches.
    - ``"erm"``: ``mean l`` (the non-robust reference).

    Add ``loss_fn.parameters()`` (the scalar ``alpha``) to the optimiser, with a learning
    rate proportional to ``rho`` for ``"safe"``. ``objective(all_losses)`` is the true value.

    >>> model = nn.Linear(3, 1); crit = KLDROLoss(lam=1.0, rho=1e-2)
    >>> opt = torch.optim.SGD(list(model.parameters()) + list(crit.parameters()), lr=1e-3)
    >>> x, y = torch.randn(16, 3), torch.randn(16)
    >>> loss = crit((model(x).squeeze(-1) - y) ** 2); loss.backward(); opt.step()
    """

    def __init__(self, lam: float = 1.0, rho: float = 1e-2, *, estimator: str = "safe",
                 alpha_init: float = 0.0) -> None:
        super().__init__()
        owner = "KLDROLoss"
        self.lam = check_real("lam", lam, owner=owner, low=0.0, closed="neither")
        self.estimator = check_choice("estimator", estimator, ("safe", "sumexp", "minibatch", "erm"),
                                      owner=owner)
        self.rho = _check_rho(rho, owner) if estimator == "safe" else float(rho)
        alpha_init = check_real("alpha_init", alpha_init, owner=owner)
        self.alpha = nn.Parameter(torch.tensor(alpha_init),
                                  requires_grad=estimator in ("safe", "sumexp"))

    def forward(self, per_sample_losses: torch.Tensor) -> torch.Tensor:
        """``per_sample_losses``: shape (b,), or (b, 1) as ``reduction="none"`` gives for a
        one-output model; the result is always a scalar."""
        per_sample_losses = _per_sample(per_sample_losses)
        if self.estimator == "safe":
            return safe_kl_logsumexp(per_sample_losses, self.alpha, rho=self.rho, tau=self.lam)
        if self.estimator == "sumexp":
            return sumexp_loss(per_sample_losses, self.alpha, tau=self.lam)
        if self.estimator == "minibatch":
            return exact_logsumexp(per_sample_losses, tau=self.lam)
        if per_sample_losses.numel() == 0:
            raise ValueError("The 'per_sample_losses' argument of KLDROLoss must be non-empty. Got shape (0,).")
        return per_sample_losses.mean()

    def objective(self, all_losses: torch.Tensor) -> torch.Tensor:
        """True KL-DRO objective ``lam * (logsumexp(l/lam) - ln n)`` on the full data."""
        return exact_logsumexp(all_losses, tau=self.lam)

    def kappa(self) -> float:
        """``kappa_rho``: ``G_rho - F_rho`` per unit of ``lam`` (safe only)."""
        return kappa_rho(self.rho)

    def extra_repr(self) -> str:
        return f"lam={self.lam:g}, rho={self.rho:g}, estimator={self.estimator!r}"
