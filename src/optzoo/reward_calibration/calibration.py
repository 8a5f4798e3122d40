"""Reward calibration (RC) and the disentanglement band (DB).

First-order likelihood dynamics of one gradient step of size ``eta`` on a pairwise loss with
incentives ``(d_w, d_l)`` and scores ``s_w = grad z_w``, ``s_l = grad z_l``::

    dz_w ~ eta (d_w |s_w|^2 - d_l <s_w, s_l>),     dz_l ~ eta (d_w <s_w, s_l> - d_l |s_l|^2).

With ``r = d_w / d_l``, ``r* = |s_l| / |s_w|`` and ``rho = cos(s_w, s_l)``::

    dz_w >= 0  <=>  r >= rho r*,      dz_l <= 0  <=>  r <= r* / rho      (rho > 0)

so the *disentanglement band* is ``rho r* <= r <= r*/rho``; for ``rho <= 0`` both hold for any
positive incentives. (The derivation is ours, INFERRED; it matches the band edges the official
code plots and logs.) DPO has ``r = 1`` and displaces the winner whenever ``rho r* > 1``.

Reward calibration replaces ``z_w, z_l`` by the stop-gradient reparameterisations

    z_w^rc = a z_w + (1 - a) sg(z_w),   z_l^rc = z_l / a + (1 - 1/a) sg(z_l),
    a = exp(1/2 (log r*_hat - log r_hat)),

which leave every forward value unchanged and turn the gradient into
``-a d_w s_w + d_l s_l / a``: the effective ratio ``a^2 r`` is the band's geometric centre
``r*_hat``. As in the official code, ``r_hat`` and ``r*_hat`` are log-domain EMAs (``ema_beta``
0.98) of the batch-mean incentives (clamped at ``eps``) and of ``|g_w|``, ``|g_l|``, the
gradients of the batch means of ``z_w`` and ``z_l`` restricted to a small parameter subset phi
(two extra ``autograd.grad`` calls). ``joint_clip`` rescales ``g_w`` and ``g_l`` by one common
factor (ratio preserved). INFERRED hardening: when a batch-mean incentive is ``<= eps`` (SLiC
with an inactive hinge, IPO overshooting its target) the step is left uncalibrated with a
warning instead of producing an extreme ``a``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from optzoo._core.validation import check_real, fail

__all__ = ["Band", "RewardCalibrator", "band_edges", "disentanglement_band",
           "first_order_change"]


@dataclass(frozen=True)
class Band:
    """The disentanglement band ``[lower, upper]`` for the incentive ratio ``r = d_w / d_l``."""

    lower: float
    upper: float
    r_star: float
    rho: float

    def contains(self, r: float) -> bool:
        return self.lower <= r <= self.upper


def band_edges(r_star: float, rho: float) -> tuple[float, float]:
    """``(rho r*, r*/rho)`` for ``rho`` in (0, 1] (``rho`` = 1: the band is the point r*).

    >>> band_edges(2.0, 0.5)
    (1.0, 4.0)
    """
    check_real("r_star", r_star, owner="band_edges", low=0.0, closed="neither")
    check_real("rho", rho, owner="band_edges", low=0.0, high=1.0, closed="right")
    return rho * r_star, r_star / rho


def _flat(g) -> torch.Tensor:
    if isinstance(g, torch.Tensor):
        return g.detach().reshape(-1).double()
    return torch.cat([t.detach().reshape(-1).double() for t in g])


def disentanglement_band(g_w, g_l) -> Band:
    """The band from two score (gradient) vectors, tensors or sequences of tensors.

    For ``rho <= 0`` the band is ``[0, inf]`` (any positive ratio preserves the winner and
    suppresses the loser) and a warning says so.

    >>> b = disentanglement_band(torch.tensor([1.0, 0.0]), torch.tensor([2.0, 2.0]))
    >>> round(b.rho, 4), round(b.r_star, 4), round(b.lower, 4), round(b.upper, 4)
    (0.7071, 2.8284, 2.0, 4.0)
    """
    gw, gl = _flat(g_w), _flat(g_l)
    if gw.shape != gl.shape:
        fail("g_l", "disentanglement_band", f"a vector with {gw.numel()} entries like 'g_w'",
             gl.numel())
    for name, g in (("g_w", gw), ("g_l", gl)):
        if not bool(torch.isfinite(g).all()):
            fail(name, "disentanglement_band", "a vector of finite values", "NaN or inf")
        if float(g.norm()) == 0.0:
            fail(name, "disentanglement_band", "a non-zero vector", "the zero vector")
    nw, nl = float(gw.norm()), float(gl.norm())
    rho = float(gw @ gl) / (nw * nl)
    r_star = nl / nw
    if rho <= 0.0:
        warnings.warn(f"rho = {rho:.3g} <= 0: the disentanglement band is unbounded",
                      RuntimeWarning, stacklevel=2)
        return Band(0.0, math.inf, r_star, rho)
    rho = min(rho, 1.0)
    return Band(rho * r_star, r_star / rho, r_star, rho)


def first_order_change(d_w, d_l, s_w, s_l, *, lr: float):
    """Predicted ``(dz_w, dz_l)`` of one gradient step of size ``lr`` (first order)."""
    check_real("lr", lr, owner="first_order_change", low=0.0, closed="neither")
    sw, sl = _flat(s_w), _flat(s_l)
    ww, ll, wl = float(sw @ sw), float(sl @ sl), float(sw @ sl)
    return lr * (d_w * ww - d_l * wl), lr * (d_w * wl - d_l * ll)


class RewardCalibrator:
    """Stateful RC: EMA statistics plus the stop-gradient reparameterisation of ``z_w, z_l``.

    ``params`` is the subset phi used to estimate ``r*`` (the LM head in the official code).

    >>> w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    >>> calib = RewardCalibrator([w], ema_beta=0.0)
    >>> z_w, z_l = (w * torch.tensor([1.0, 0.0])).sum(), (w * torch.tensor([3.0, 0.0])).sum()
    >>> zw_rc, zl_rc, info = calib.calibrate(z_w[None], z_l[None], torch.ones(1), torch.ones(1))
    >>> round(info["alpha"] ** 2, 4), abs(float(zw_rc) - float(z_w)) < 1e-6
    (3.0, True)
    """

    def __init__(self, params: Iterable[torch.Tensor], *, ema_beta: float = 0.98,
                 eps: float = 1e-12, joint_clip: float | None = None) -> None:
        owner = "RewardCalibrator"
        params = [p for p in params] if not isinstance(params, torch.Tensor) else [params]
        if not params:
            fail("params", owner, "a non-empty iterable of tensors", params)
        for p in params:
            if not isinstance(p, torch.Tensor):
                fail("params", owner, "an iterable of torch.Tensor", type(p).__name__,
                     exc=TypeError)
            if not p.requires_grad:
                fail("params", owner, "tensors with requires_grad=True", "a frozen tensor")
        self.params: Sequence[torch.Tensor] = params
        self.ema_beta = check_real("ema_beta", ema_beta, owner=owner, low=0.0, high=1.0,
                                   closed="left")
        self.eps = check_real("eps", eps, owner=owner, low=0.0, closed="neither")
        self.joint_clip = (None if joint_clip is None else
                           check_real("joint_clip", joint_clip, owner=owner, low=0.0,
                                      closed="neither"))
        self.reset()

    def reset(self) -> None:
        self.state = {"log_dw": None, "log_dl": None, "log_gw": None, "log_gl": None,
                      "inner": None, "steps": 0, "skipped": 0}

    def _ema(self, key: str, value: float) -> float:
        old = self.state[key]
        new = value if old is None else self.ema_beta * old + (1.0 - self.ema_beta) * value
        self.state[key] = new
        return new

    def _grads(self, z_w, z_l):
        gw = torch.autograd.grad(z_w.mean(), self.params, retain_graph=True, allow_unused=True)
        gl = torch.autograd.grad(z_l.mean(), self.params, retain_graph=True, allow_unused=True)
        flat = [torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1).double()
                           for g, p in zip(gs, self.params, strict=False)]) for gs in (gw, gl)]
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            # Every rank must use the same alpha: average the (small) phi-gradients.
            for f in flat:
                torch.distributed.all_reduce(f)
                f /= torch.distributed.get_world_size()
        return flat

    def statistics(self, z_w, z_l, d_w, d_l) -> dict | None:
        """Update the EMAs from one batch; ``None`` (and a warning) when the step is skipped."""
        mw, ml = float(d_w.detach().double().mean()), float(d_l.detach().double().mean())
        if not self._incentives_ok(mw, ml):
            return None
        gw, gl = self._grads(z_w, z_l)
        return self.update(mw, ml, gw, gl)

    def _incentives_ok(self, mw: float, ml: float) -> bool:
        if mw <= self.eps or ml <= self.eps or not (math.isfinite(mw) and math.isfinite(ml)):
            self.state["skipped"] += 1
            warnings.warn(f"reward calibration skipped: batch-mean incentives d_w={mw:.3g}, "
                          f"d_l={ml:.3g} (need both > eps={self.eps:g}); the hinge is inactive "
                          "or the target margin is overshot", RuntimeWarning, stacklevel=4)
            return False
        return True

    def update(self, mean_d_w: float, mean_d_l: float, g_w, g_l) -> dict | None:
        """EMA update from batch-mean incentives and phi-gradients computed by the caller
        (e.g. one batched ``autograd.grad`` for many runs, or all-reduced under FSDP)."""
        mw, ml = float(mean_d_w), float(mean_d_l)
        if not self._incentives_ok(mw, ml):
            return None
        gw, gl = _flat(g_w), _flat(g_l)
        nw, nl = float(gw.norm()), float(gl.norm())
        inner = float(gw @ gl)
        if self.joint_clip is not None:
            c = min(1.0, self.joint_clip / max(math.hypot(nw, nl), 1e-300))
            nw, nl, inner = c * nw, c * nl, c * c * inner
        if nw <= self.eps or nl <= self.eps:
            self.state["skipped"] += 1
            warnings.warn("reward calibration skipped: a phi-gradient norm is <= eps (phi does "
                          "not influence z_w or z_l)", RuntimeWarning, stacklevel=3)
            return None
        log_dw, log_dl = self._ema("log_dw", math.log(mw)), self._ema("log_dl", math.log(ml))
        log_gw, log_gl = self._ema("log_gw", math.log(nw)), self._ema("log_gl", math.log(nl))
        inner_ema = self._ema("inner", inner)
        self.state["steps"] += 1
        log_r, log_rs = log_dw - log_dl, log_gl - log_gw
        rho = inner / (nw * nl)
        alpha = math.exp(0.5 * (log_rs - log_r))
        r_inst, rs_inst = mw / ml, nl / nw
        if rho > 0:
            lo, hi = rho * rs_inst, rs_inst / min(rho, 1.0)
        else:
            lo, hi = 0.0, math.inf
        return {"alpha": alpha, "r_hat": math.exp(log_r), "r_star_hat": math.exp(log_rs),
                "rho": rho, "inner_ema": inner_ema, "r": r_inst, "r_star": rs_inst,
                "band_lower": lo, "band_upper": hi, "in_band_raw": lo <= r_inst <= hi,
                "in_band_calibrated": lo <= alpha ** 2 * r_inst <= hi}

    @staticmethod
    def rescale(z_w, z_l, alpha: float):
        """The stop-gradient reparameterisation: same values, gradients scaled by a and 1/a."""
        return (alpha * z_w + (1.0 - alpha) * z_w.detach(),
                z_l / alpha + (1.0 - 1.0 / alpha) * z_l.detach())

    def calibrate(self, z_w, z_l, d_w, d_l, *, training: bool = True):
        """``(z_w_rc, z_l_rc, info)``; a no-op without grad, outside training or on a skip."""
        off = {"alpha": 1.0, "applied": False}
        if not (training and torch.is_grad_enabled() and z_w.requires_grad
                and z_l.requires_grad):
            return z_w, z_l, off
        stats = self.statistics(z_w, z_l, d_w, d_l)
        if stats is None:
            return z_w, z_l, off
        z_w_rc, z_l_rc = self.rescale(z_w, z_l, stats["alpha"])
        return z_w_rc, z_l_rc, dict(stats, applied=True)

    def state_dict(self) -> dict:
        return dict(self.state)

    def load_state_dict(self, state: dict) -> None:
        self.state = dict(state)
