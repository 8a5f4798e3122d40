"""The analytic log-linear testbed, where the disentanglement band can be checked exactly.

A policy over ``N`` candidates ``pi(y) ∝ exp(theta^T phi(y))`` has log-probabilities
``z(y) = theta^T phi(y) - logsumexp(Phi theta)`` and scores ``s(y) = phi(y) - E_pi phi``, both
in closed form. One gradient step ``theta += eta (d_w s_w - d_l s_l)`` changes ``z_w`` and
``z_l`` by the first-order amounts of :func:`~optzoo.reward_calibration.first_order_change`
plus ``O(eta^2)``; the band ``rho r* <= d_w/d_l <= r*/rho`` then predicts the signs exactly
for every case not within ``O(eta)`` of a band edge. The overlap of two candidates' features
sets ``rho``. (The testbed is the spec's; its sampling distributions are ours, INFERRED.)
"""

from __future__ import annotations

import torch

from optzoo._core.rng import torch_generator
from optzoo._core.validation import check_int, check_real, check_type

__all__ = ["LogLinearPolicy", "band_sign_check"]


class LogLinearPolicy:
    """Batched log-linear policies: ``features`` (C, N, D), ``theta`` (C, D), float64.

    >>> pol = LogLinearPolicy(torch.eye(3)[None], torch.zeros(1, 3))
    >>> [round(v, 4) for v in pol.logp()[0].tolist()]
    [-1.0986, -1.0986, -1.0986]
    """

    def __init__(self, features, theta) -> None:
        check_type("features", features, torch.Tensor, owner="LogLinearPolicy", what="a tensor")
        check_type("theta", theta, torch.Tensor, owner="LogLinearPolicy", what="a tensor")
        if features.ndim != 3 or theta.shape != (features.shape[0], features.shape[2]):
            raise ValueError("The 'theta' argument of LogLinearPolicy must have shape (C, D) "
                             f"matching features (C, N, D). Got {tuple(theta.shape)} and "
                             f"{tuple(features.shape)}.")
        self.features = features.double()
        self.theta = theta.double().clone()

    def logp(self, theta=None):
        th = self.theta if theta is None else theta
        logits = torch.einsum("cnd,cd->cn", self.features, th)
        return logits - torch.logsumexp(logits, dim=1, keepdim=True)

    def scores(self, y):
        """``s(y) = phi(y) - E_pi phi`` for one candidate index per policy (C, D)."""
        p = self.logp().exp()
        mean = torch.einsum("cn,cnd->cd", p, self.features)
        return self.features[torch.arange(len(y)), y] - mean

    def step(self, y_w, y_l, d_w, d_l, *, lr: float):
        """Return ``(dz_w, dz_l)`` of one exact gradient step (the policy is updated)."""
        s_w, s_l = self.scores(y_w), self.scores(y_l)
        before = self.logp()
        self.theta = self.theta + lr * (d_w[:, None] * s_w - d_l[:, None] * s_l)
        after = self.logp()
        idx = torch.arange(len(y_w))
        return after[idx, y_w] - before[idx, y_w], after[idx, y_l] - before[idx, y_l]


def band_sign_check(seed: int, *, n_cases: int = 2000, n_candidates: int = 50,
                    dim: int = 16, lr: float = 1e-4) -> dict:
    """Random instances (overlap, theta, ratio r) -> agreement of the band with exact steps.

    Returns the fraction of cases, among those whose first-order change is farther than
    ``2 eta^2 max(|s|)^4 (d_w + d_l)^2`` from zero, where the band predicts the sign of the exact ``dz_w`` and
    ``dz_l``; the largest first-order error divided by ``eta^2``; the same for rho <= 0 cases
    with positive incentives (``dz_w > 0 > dz_l`` expected); and whether the calibrated ratio
    ``r*`` always lies in the band and gives ``dz_w >= 0 >= dz_l``.
    """
    owner = "band_sign_check"
    n_cases = check_int("n_cases", n_cases, owner=owner, low=1)
    check_int("n_candidates", n_candidates, owner=owner, low=3)
    check_int("dim", dim, owner=owner, low=2)
    lr = check_real("lr", lr, owner=owner, low=0.0, closed="neither")
    g = torch_generator(seed, "loglinear")
    C, N, D = n_cases, n_candidates, dim
    feats = torch.randn(C, N, D, generator=g, dtype=torch.float64)
    # Overlap: the loser's features are c * winner's + noise, with c spanning negative to high.
    c = torch.rand(C, 1, generator=g, dtype=torch.float64) * 1.6 - 0.4
    scale = torch.exp(torch.randn(C, 1, generator=g, dtype=torch.float64) * 0.3)
    feats[:, 1] = scale * (c * feats[:, 0] + (1 - c.abs()).clamp(min=0.05)
                           * torch.randn(C, D, generator=g, dtype=torch.float64))
    theta = 0.3 * torch.randn(C, D, generator=g, dtype=torch.float64)
    y_w, y_l = torch.zeros(C, dtype=torch.long), torch.ones(C, dtype=torch.long)
    pol = LogLinearPolicy(feats, theta)
    s_w, s_l = pol.scores(y_w), pol.scores(y_l)
    nw, nl = s_w.norm(dim=1), s_l.norm(dim=1)
    rho = (s_w * s_l).sum(1) / (nw * nl)
    r_star = nl / nw
    r = torch.exp(torch.rand(C, generator=g, dtype=torch.float64) * 6 - 3)
    d_l = torch.ones(C, dtype=torch.float64)
    d_w = r.clone()
    pred_w = lr * (d_w * nw ** 2 - d_l * (s_w * s_l).sum(1))
    pred_l = lr * (d_w * (s_w * s_l).sum(1) - d_l * nl ** 2)
    act_w, act_l = pol.step(y_w, y_l, d_w, d_l, lr=lr)
    big = torch.maximum(nw, nl) ** 4 * (d_w + d_l) ** 2
    # Cases whose first-order change exceeds this margin are judged: the sign prediction is
    # valid there as long as the second-order error stays below it (checked: err < 2).
    margin = 2 * lr ** 2 * big
    pos = rho > 0
    band_w = torch.where(pos, r >= rho * r_star, torch.ones_like(pos))  # predicts dz_w >= 0
    band_l = torch.where(pos, r <= r_star / rho.clamp(min=1e-300), torch.ones_like(pos))
    ok_w = (pred_w.abs() > margin)
    ok_l = (pred_l.abs() > margin)
    agree_w = ((act_w >= 0) == band_w)[ok_w]
    agree_l = ((act_l <= 0) == band_l)[ok_l]
    err = torch.maximum((act_w - pred_w).abs(), (act_l - pred_l).abs()) / (lr ** 2 * big)
    neg = ~pos
    neg_ok = bool(((act_w > 0) & (act_l < 0))[neg & ok_w & ok_l].all())
    # Calibrated ratio r* (band centre): a fresh step from the same theta.
    pol_c = LogLinearPolicy(feats, theta)
    cw, cl = pol_c.step(y_w, y_l, r_star, d_l, lr=lr)
    lo, hi = rho * r_star, r_star / rho.clamp(min=1e-300)
    centred = bool(((r_star >= lo - 1e-12) & (r_star <= hi + 1e-12))[pos].all())
    cal_ok = ((cw >= 0) & (cl <= 0))
    return {"n_cases": C, "n_checked_w": int(ok_w.sum()), "n_checked_l": int(ok_l.sum()),
            "agree_w": float(agree_w.double().mean()), "agree_l": float(agree_l.double().mean()),
            "max_err_over_eta2": float(err.max()), "n_rho_nonpos": int(neg.sum()),
            "rho_nonpos_ok": neg_ok, "calibrated_in_band": centred,
            "calibrated_disentangled": float(cal_ok.double().mean()),
            "frac_displacing_dpo": float(((rho * r_star) > 1).double().mean())}
