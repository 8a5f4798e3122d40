"""CoPro M-step: weighted maximum likelihood toward q* plus a KL trust region.

.. math::

    \\mathcal L(\\theta) = -\\frac1B\\sum_x\\sum_i q^*_{x,i}\\,\\overline{\\log\\pi_\\theta}(y_i|x)
    \\; + \\; c\\cdot\\frac1B\\sum_x \\widehat{\\mathrm{KL}}(\\pi_{old}(\\cdot|x)\\,\\|\\,\\pi_\\theta(\\cdot|x))

:math:`\\overline{\\log\\pi}` is the token-averaged sequence log-likelihood (INFERRED
normalisation). :math:`\\widehat{\\mathrm{KL}}` is the k3 estimator on the sampled tokens,
:math:`r-1-\\log r` with :math:`r=\\pi_\\theta/\\pi_{old}` (unbiased for
:math:`\\mathrm{KL}(\\pi_{old}\\|\\pi_\\theta)` under samples of :math:`\\pi_{old}`), or an exact KL
that the caller passes (``kl=``, e.g. from full logits over a small vocabulary).
``trust_region="kl_penalty"`` keeps ``coef`` = c fixed; ``"kl_constraint"`` is the MPO-style hard
bound :math:`\\mathrm{KL}\\le\\varepsilon_M` whose multiplier :class:`CoProLoss` updates by dual
ascent, :math:`c\\leftarrow\\max(0, c+\\text{lr}_c(\\widehat{\\mathrm{KL}}-\\varepsilon_M))`.

The loss is a policy gradient with *nonnegative* advantages :math:`A_i=Gq^*_i` and no ratio
clipping. Over a tabular policy it has the closed form
:math:`\\pi_{new}=(q+c\\,\\pi_{old})/(1+c)` (:func:`tabular_m_step`). Fidelity: reconstructed.
"""

from __future__ import annotations

import torch

from optzoo._core.validation import check_choice, check_real, fail

__all__ = ["CoProLoss", "copro_loss", "k3_kl", "tabular_m_step"]

TRUST_REGIONS = ("kl_penalty", "kl_constraint")


def _seq_mean(x, mask):
    if x.ndim == 2:
        return x
    if mask is None:
        return x.mean(-1)
    m = mask.to(x.dtype)
    return (x * m).sum(-1) / m.sum(-1).clamp(min=1.0)


def k3_kl(logp_new, logp_old, mask=None):
    """Per-context k3 estimate of KL(pi_old || pi_new) from sampled tokens: [B, G(, T)] -> [B]."""
    d = logp_new - logp_old
    k3 = torch.exp(d) - 1.0 - d
    return _seq_mean(k3, mask).mean(-1)


def _check(logp_new, logp_old, q, mask, owner):
    for name, t in (("logp_new", logp_new), ("logp_old", logp_old), ("q", q)):
        if not isinstance(t, torch.Tensor):
            fail(name, owner, "a torch.Tensor", type(t).__name__, exc=TypeError)
    if logp_new.ndim not in (2, 3):
        fail("logp_new", owner, "a tensor of shape [B, G] or [B, G, T]", f"shape {tuple(logp_new.shape)}")
    if logp_old.shape != logp_new.shape:
        fail("logp_old", owner, f"a tensor of the shape of logp_new {tuple(logp_new.shape)}",
             f"shape {tuple(logp_old.shape)}")
    if q.shape != logp_new.shape[:2]:
        fail("q", owner, f"a tensor of shape [B, G] = {tuple(logp_new.shape[:2])}", f"shape {tuple(q.shape)}")
    if bool((q < 0).any()) or not bool(torch.isfinite(q).all()):
        fail("q", owner, "nonnegative and finite (the E-step weights)", "negative or non-finite entries")
    if mask is not None and mask.shape != logp_new.shape:
        fail("mask", owner, f"a tensor of the shape of logp_new {tuple(logp_new.shape)}",
             f"shape {tuple(mask.shape)}")
    if not bool(torch.isfinite(logp_old).all()):
        fail("logp_old", owner, "finite", "NaN or inf")


def copro_loss(logp_new, logp_old, *, q, mask=None, trust_region="kl_penalty", coef=1.0, kl=None,
               return_stats=False):
    """The CoPro M-step loss (scalar tensor).

    ``logp_new`` / ``logp_old``: per-token log-probabilities of the sampled tokens under the
    current and the sampling policy, [B, G, T] (or sequence log-probs [B, G]); ``mask`` [B, G, T]
    marks real tokens. ``q`` [B, G]: the E-step weights (``est.q``; detached). ``coef``: c >= 0.
    ``kl``: an exact per-context KL [B] (or scalar) to use instead of the k3 estimate.
    ``return_stats``: also return ``{"nll", "kl"}`` (detached floats).
    """
    owner = "copro_loss"
    check_choice("trust_region", trust_region, TRUST_REGIONS, owner=owner)
    coef = check_real("coef", coef, owner=owner, low=0.0)
    _check(logp_new, logp_old, q, mask, owner)
    q = q.detach().to(logp_new.dtype)
    lp = _seq_mean(logp_new, mask)                          # [B, G]
    nll = -(q * lp).sum(-1).mean()
    klv = k3_kl(logp_new, logp_old.detach(), mask) if kl is None else torch.as_tensor(kl)
    klm = klv.mean()
    loss = nll + coef * klm
    if return_stats:
        return loss, {"nll": float(nll.detach()), "kl": float(klm.detach())}
    return loss


class CoProLoss(torch.nn.Module):
    """The CoPro M-step loss as an ``nn.Module`` holding its hyperparameters.

    ``coef`` c is a buffer (it travels in ``state_dict``); with
    ``trust_region="kl_constraint"``, :meth:`dual_step` updates it after each optimizer step by
    :math:`c\\leftarrow\\max(0, c+\\text{coef\\_lr}(\\widehat{KL}-\\text{kl\\_bound}))`.
    Call it like :func:`copro_loss`; ``last_stats`` holds the last ``{"nll", "kl"}``.
    """

    def __init__(self, *, trust_region="kl_penalty", coef=1.0, kl_bound=0.01, coef_lr=1.0):
        super().__init__()
        owner = "CoProLoss"
        check_choice("trust_region", trust_region, TRUST_REGIONS, owner=owner)
        self.trust_region = trust_region
        self.kl_bound = check_real("kl_bound", kl_bound, owner=owner, low=0.0, closed="neither")
        self.coef_lr = check_real("coef_lr", coef_lr, owner=owner, low=0.0)
        c = check_real("coef", coef, owner=owner, low=0.0)
        self.register_buffer("coef", torch.tensor(c, dtype=torch.float64))
        self.last_stats: dict = {}

    def forward(self, logp_new, logp_old, *, q, mask=None, kl=None):
        loss, stats = copro_loss(logp_new, logp_old, q=q, mask=mask, trust_region=self.trust_region,
                                 coef=float(self.coef), kl=kl, return_stats=True)
        self.last_stats = stats
        return loss

    def dual_step(self, kl: float) -> float:
        """One dual-ascent step on c (a no-op for ``"kl_penalty"``); returns the new c."""
        kl = check_real("kl", kl, owner="CoProLoss.dual_step")
        if self.trust_region == "kl_constraint":
            self.coef.fill_(max(0.0, float(self.coef) + self.coef_lr * (kl - self.kl_bound)))
        return float(self.coef)

    def extra_repr(self) -> str:
        return (f"trust_region={self.trust_region!r}, coef={float(self.coef):g}, "
                f"kl_bound={self.kl_bound:g}, coef_lr={self.coef_lr:g}")


def tabular_m_step(q, pi_old, *, coef=1.0):
    """Exact minimiser over the simplex of :math:`-\\sum_i q_i\\log\\pi_i + c\\,\\mathrm{KL}(\\pi_{old}\\|\\pi)`:
    :math:`\\pi_{new}=(q+c\\,\\pi_{old})/(1+c)` (stationarity: :math:`(q_i+c\\pi_{old,i})/\\pi_i=1+c`).

    Torch tensors in give a tensor out (dtype promoted as torch does, on ``q``'s device);
    anything else gives a float64 numpy array."""
    import numpy as np

    coef = check_real("coef", coef, owner="tabular_m_step", low=0.0)
    if isinstance(q, torch.Tensor) or isinstance(pi_old, torch.Tensor):
        q = torch.as_tensor(q)
        pi_old = torch.as_tensor(pi_old, device=q.device)
        dtype = torch.promote_types(torch.promote_types(q.dtype, pi_old.dtype), torch.get_default_dtype())
        q, pi_old = q.to(dtype), pi_old.to(dtype)
    else:
        q, pi_old = np.asarray(q, dtype=float), np.asarray(pi_old, dtype=float)
    if q.shape != pi_old.shape:
        fail("pi_old", "tabular_m_step", f"an array of the shape of q {q.shape}", f"shape {pi_old.shape}")
    return (q + coef * pi_old) / (1.0 + coef)
