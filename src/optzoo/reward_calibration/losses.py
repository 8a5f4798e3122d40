"""DPO-family pairwise losses and their incentive decomposition.

Paper: Chen, Wu, Yang, Zeng, Zhao, Paisley, Chen, Wang, "Towards Disentangled Preference
Optimization Dynamics: Suppress the Loser, Preserve the Winner", ICML 2026, arXiv 2604.18239.
Fidelity: official-code (formulas checked against the authors' released trainer, never copied).

Every pairwise objective ``L(z_w, z_l)`` of the policy log-probabilities ``z_w = log pi(y_w|x)``
and ``z_l = log pi(y_l|x)`` (reference terms held constant) has the gradient

    grad L = -d_w * grad z_w + d_l * grad z_l,   d_w = -dL/dz_w,   d_l = dL/dz_l,

so the losses differ only in the two scalar *incentives* ``(d_w, d_l)``. With
``m = z_w - z_l``, ``m~ = m - (z_w^ref - z_l^ref)``, ``r = z - z^ref`` and length-averaged
``m_bar = z_w/|y_w| - z_l/|y_l|``:

======  ===============================  =========================  ======================
loss    L                                d_w                        d_l
======  ===============================  =========================  ======================
dpo     -log sig(beta m~)                beta sig(-beta m~)         beta sig(-beta m~)
ipo     (m~ - 1/(2 tau))^2               2 (1/(2 tau) - m~)         2 (1/(2 tau) - m~)
simpo   -log sig(beta m_bar - gamma)     beta sig(gamma - beta m_bar)/|y_w|   .../|y_l|
cpo     -log sig(beta m) - lam z_w       beta sig(-beta m) + lam    beta sig(-beta m)
slic    max(0, gamma - m) - lam z_w      1[m < gamma] + lam         1[m < gamma]
bce     -log sig(r_w) - log sig(-r_l)    sig(-r_w)                  sig(r_l)
======  ===============================  =========================  ======================

The official code hard-codes the SimPO margin to 1 (our ``gamma`` default) and, as in the
paper's table, applies no ``beta`` inside BCE. ``z`` is the *sum* of token log-probabilities
(TRL convention); SimPO needs the response lengths. IPO's ``tau`` is one value used by the loss
and by the calibration alike (the official code falls back to 1.0 in one path and 0.1 in
another; we use 0.1 everywhere, INFERRED).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from optzoo._core.validation import check_choice, check_real, fail

__all__ = ["LOSS_TYPES", "incentives", "pairwise_loss", "preference_loss", "PreferenceLoss"]

LOSS_TYPES = ("dpo", "ipo", "simpo", "cpo", "slic", "bce")

# Paper / official-code defaults per loss (beta, tau, gamma, lam).
DEFAULTS = {"beta": 0.1, "tau": 0.1, "gamma": 1.0, "cpo_lam": 1.0, "slic_lam": 0.1}


def _check_inputs(owner, z_w, z_l, z_w_ref, z_l_ref, loss_type, len_w, len_l):
    check_choice("loss_type", loss_type, LOSS_TYPES, owner=owner)
    named = {"z_w": z_w, "z_l": z_l}
    needs_ref = loss_type in ("dpo", "ipo", "bce")
    if needs_ref:
        if z_w_ref is None or z_l_ref is None:
            fail("z_w_ref" if z_w_ref is None else "z_l_ref", owner,
                 f"a tensor of reference log-probabilities for loss_type={loss_type!r}", None)
        named.update(z_w_ref=z_w_ref, z_l_ref=z_l_ref)
    if loss_type == "simpo":
        if len_w is None or len_l is None:
            fail("len_w" if len_w is None else "len_l", owner,
                 "a tensor of response lengths (> 0) for loss_type='simpo'", None)
        named.update(len_w=len_w, len_l=len_l)
    shape = None
    for name, t in named.items():
        if not isinstance(t, torch.Tensor):
            fail(name, owner, "a torch.Tensor", type(t).__name__, exc=TypeError)
        if not t.is_floating_point():
            t = t.float()
        if shape is None:
            shape = t.shape
        elif t.shape != shape:
            fail(name, owner, f"a tensor with the same shape as 'z_w' {tuple(shape)}",
                 tuple(t.shape))
        if not bool(torch.isfinite(t.detach()).all()):
            fail(name, owner, "a tensor of finite values", "NaN or inf")
    if loss_type == "simpo" and (bool((len_w <= 0).any()) or bool((len_l <= 0).any())):
        fail("len_w", owner, "positive lengths", "a non-positive length")


def _hyper(owner, beta, tau, gamma, lam):
    check_real("beta", beta, owner=owner, low=0.0, closed="neither")
    check_real("tau", tau, owner=owner, low=0.0, closed="neither")
    check_real("gamma", gamma, owner=owner)
    if lam is not None:
        check_real("lam", lam, owner=owner, low=0.0)


def _lam(loss_type, lam):
    if lam is not None:
        return float(lam)
    return DEFAULTS["cpo_lam"] if loss_type == "cpo" else DEFAULTS["slic_lam"]


def incentives(z_w, z_l, z_w_ref=None, z_l_ref=None, *, loss_type: str = "dpo",
               beta: float = 0.1, tau: float = 0.1, gamma: float = 1.0,
               lam: float | None = None, len_w=None, len_l=None):
    """Per-pair incentives ``(d_w, d_l)`` in closed form (detached tensors, shape of ``z_w``).

    ``lam`` defaults to 1.0 for CPO and 0.1 for SLiC (official code). See the module table.

    >>> z = torch.zeros(2)
    >>> d_w, d_l = incentives(z, z, z, z, loss_type="dpo", beta=0.1)
    >>> d_w.tolist(), bool(torch.equal(d_w, d_l))
    ([0.05000000074505806, 0.05000000074505806], True)
    """
    owner = "incentives"
    _check_inputs(owner, z_w, z_l, z_w_ref, z_l_ref, loss_type, len_w, len_l)
    _hyper(owner, beta, tau, gamma, lam)
    out_dtype = z_w.dtype if z_w.is_floating_point() else torch.get_default_dtype()
    with torch.no_grad():
        z_w, z_l = z_w.detach().double(), z_l.detach().double()
        if loss_type in ("dpo", "ipo"):
            mt = (z_w - z_l) - (z_w_ref.detach().double() - z_l_ref.detach().double())
            if loss_type == "dpo":
                d = beta * torch.sigmoid(-beta * mt)
            else:
                d = 2.0 * (1.0 / (2.0 * tau) - mt)
            d_w, d_l = d, d.clone()
        elif loss_type == "simpo":
            lw, ll = len_w.double(), len_l.double()
            s = beta * torch.sigmoid(gamma - beta * (z_w / lw - z_l / ll))
            d_w, d_l = s / lw, s / ll
        elif loss_type == "cpo":
            s = beta * torch.sigmoid(-beta * (z_w - z_l))
            d_w, d_l = s + _lam(loss_type, lam), s
        elif loss_type == "slic":
            s = ((z_w - z_l) < gamma).double()
            d_w, d_l = s + _lam(loss_type, lam), s
        else:  # bce
            d_w = torch.sigmoid(-(z_w - z_w_ref.detach().double()))
            d_l = torch.sigmoid(z_l - z_l_ref.detach().double())
    return d_w.to(out_dtype), d_l.to(out_dtype)


def pairwise_loss(z_w, z_l, z_w_ref=None, z_l_ref=None, *, loss_type: str = "dpo",
                  beta: float = 0.1, tau: float = 0.1, gamma: float = 1.0,
                  lam: float | None = None, len_w=None, len_l=None):
    """Per-pair loss values ``L_i`` (differentiable in ``z_w`` and ``z_l``; no validation).

    Use :func:`preference_loss` for the validated, batch-averaged, optionally calibrated loss.
    """
    if loss_type in ("dpo", "ipo"):
        mt = (z_w - z_l) - (z_w_ref - z_l_ref)
        if loss_type == "dpo":
            return -F.logsigmoid(beta * mt)
        return (mt - 1.0 / (2.0 * tau)) ** 2
    if loss_type == "simpo":
        return -F.logsigmoid(beta * (z_w / len_w - z_l / len_l) - gamma)
    if loss_type == "cpo":
        return -F.logsigmoid(beta * (z_w - z_l)) - _lam(loss_type, lam) * z_w
    if loss_type == "slic":
        return torch.relu(gamma - (z_w - z_l)) - _lam(loss_type, lam) * z_w
    if loss_type == "bce":
        return -F.logsigmoid(z_w - z_w_ref) - F.logsigmoid(-(z_l - z_l_ref))
    raise ValueError(f"unknown loss_type {loss_type!r}")  # unreachable after validation


def preference_loss(z_w, z_l, z_w_ref=None, z_l_ref=None, *, loss_type: str = "dpo",
                    beta: float = 0.1, tau: float = 0.1, gamma: float = 1.0,
                    lam: float | None = None, len_w=None, len_l=None, calibrator=None):
    """Batch-mean pairwise loss and its incentive diagnostics, optionally reward-calibrated.

    With ``calibrator`` (a :class:`~optzoo.reward_calibration.RewardCalibrator`), ``z_w`` and
    ``z_l`` are replaced by their stop-gradient reparameterisations
    ``z_w^rc = a z_w + (1 - a) sg(z_w)``, ``z_l^rc = z_l / a + (1 - 1/a) sg(z_l)`` before the
    loss: the value is unchanged and the gradient becomes ``-a d_w s_w + d_l s_l / a``.

    Returns ``(loss, info)``; ``info`` holds the batch means of ``d_w`` and ``d_l`` and, when
    calibrated, the calibrator's statistics (``alpha``, ``r_hat``, ``r_star_hat``, ...).

    >>> zw = torch.tensor([-5.0, -6.0], requires_grad=True)
    >>> zl = torch.tensor([-5.5, -5.0], requires_grad=True)
    >>> ref = torch.tensor([-5.0, -5.0])
    >>> loss, info = preference_loss(zw, zl, ref, ref, loss_type="dpo")
    >>> round(float(loss), 4), sorted(info)[:2]
    (0.7064, ['d_l', 'd_w'])
    """
    owner = "preference_loss"
    _check_inputs(owner, z_w, z_l, z_w_ref, z_l_ref, loss_type, len_w, len_l)
    if z_w.numel() == 0:  # the mean of no pairs is NaN, and NaN would train the model
        fail("z_w", owner, "a non-empty batch (at least one preference pair)",
             f"shape {tuple(z_w.shape)}")
    _hyper(owner, beta, tau, gamma, lam)
    if calibrator is not None and not callable(getattr(calibrator, "calibrate", None)):
        fail("calibrator", owner, "a RewardCalibrator (an object with a calibrate method) or None",
             calibrator, exc=TypeError)
    kw = dict(loss_type=loss_type, beta=beta, tau=tau, gamma=gamma, lam=lam, len_w=len_w,
              len_l=len_l)
    d_w, d_l = incentives(z_w, z_l, z_w_ref, z_l_ref, **kw)
    info = {"d_w": float(d_w.mean()), "d_l": float(d_l.mean())}
    if calibrator is not None:
        z_w, z_l, cinfo = calibrator.calibrate(z_w, z_l, d_w, d_l)
        info.update(cinfo)
    loss = pairwise_loss(z_w, z_l, z_w_ref, z_l_ref, **kw).mean()
    return loss, info


class PreferenceLoss(torch.nn.Module):
    """``nn.Module`` holding the hyperparameters of :func:`preference_loss`.

    >>> crit = PreferenceLoss("ipo", tau=0.1)
    >>> z = torch.zeros(3, requires_grad=True)
    >>> loss, _ = crit(z, z - 1.0, torch.zeros(3), torch.zeros(3))
    >>> round(float(loss), 4)
    16.0
    """

    def __init__(self, loss_type: str = "dpo", *, beta: float = 0.1, tau: float = 0.1,
                 gamma: float = 1.0, lam: float | None = None, calibrator=None) -> None:
        super().__init__()
        check_choice("loss_type", loss_type, LOSS_TYPES, owner="PreferenceLoss")
        _hyper("PreferenceLoss", beta, tau, gamma, lam)
        self.loss_type, self.beta, self.tau, self.gamma, self.lam = (loss_type, beta, tau,
                                                                     gamma, lam)
        self.calibrator = calibrator

    def forward(self, z_w, z_l, z_w_ref=None, z_l_ref=None, *, len_w=None, len_l=None):
        return preference_loss(z_w, z_l, z_w_ref, z_l_ref, loss_type=self.loss_type,
                               beta=self.beta, tau=self.tau, gamma=self.gamma, lam=self.lam,
                               len_w=len_w, len_l=len_l, calibrator=self.calibrator)

    def extra_repr(self) -> str:
        return f"loss_type={self.loss_type!r}, beta={self.beta}, tau={self.tau}"

