"""Group-relative advantages that CoPro is compared with (spec section 3, baselines 1-4).

Every function maps a batch of groups (objectives [B, G, m] in the learner's view, ``senses``,
constraints [B, G, k] feasible iff <= 0) to advantages [B, G]; the same policy-gradient loss
:math:`-\\frac1{BG}\\sum A_i\\log\\pi(y_i|x)` plus the same trust region uses them.

1. :func:`grpo_weighted_sum`: GRPO on a weighted sum minus a fixed violation penalty (TRL's
   default ``sum_then_normalize`` with ``reward_weights``), normalised within the group.
2. :class:`LagrangianGRPO`: the same sum with one multiplier per constraint, raised by dual
   ascent on the batch violation rate.
3. :func:`gdpo_advantages`: GDPO normalise-then-sum, the formula of TRL 1.16's
   ``multi_objective_aggregation="normalize_then_sum"`` (each reward z-scored in its group with
   eps 1e-4, weighted sum, then batch normalisation); the constraint enters as one more reward
   :math:`-v`. Re-implemented here because TRL computes it inside ``GRPOTrainer`` only.
4. :func:`pareto_rank_advantages`: ParetoPO-style constrained non-dominated-sorting rank
   (Deb's rules), :math:`-\\text{rank}` z-scored in the group.

Every within-group z-score here is the project's one GRPO advantage,
:func:`optzoo._core.advantages.group_advantages`, with TRL's convention, as these baselines
stand for what a TRL user runs: the unbiased (Bessel) standard deviation and ``eps=1e-4``
(TRL 1.16 ``trl/trainer/grpo_trainer.py`` lines 2770 and 2787, its ``nanstd`` in
``trl/trainer/utils.py`` lines 1041-1043).
"""

from __future__ import annotations

import numpy as np
import torch

from optzoo._core.advantages import group_advantages
from optzoo._core.validation import check_real, fail

__all__ = ["LagrangianGRPO", "gdpo_advantages", "grpo_weighted_sum", "nondominated_rank",
           "pareto_rank_advantages"]


def _signed(objectives, senses):
    F = torch.as_tensor(objectives, dtype=torch.float64)
    if F.ndim != 3:
        fail("objectives", "baselines", "a tensor of shape [B, G, m]", f"shape {tuple(F.shape)}")
    if senses is None:
        senses = ("max",) * F.shape[-1]
    if len(senses) != F.shape[-1] or any(s not in ("max", "min") for s in senses):
        fail("senses", "baselines", f"a tuple of {F.shape[-1]} entries 'max'/'min'", senses)
    sign = torch.tensor([1.0 if s == "max" else -1.0 for s in senses], dtype=torch.float64)
    return F * sign


def _violation(constraints, F):
    if constraints is None:
        return torch.zeros(F.shape[:2], dtype=F.dtype)
    g = torch.as_tensor(constraints, dtype=torch.float64)
    return g.clamp(min=0).sum(-1)


def _trl_group_z(r):
    """Within-group z-score of [B, G, ...] along G, TRL's convention (unbiased std, eps 1e-4)."""
    return group_advantages(r, std="unbiased", eps=1e-4, dim=1)


def grpo_weighted_sum(objectives, constraints=None, *, senses=None, weights=None, penalty=1.0):
    """GRPO advantages of :math:`r=\\sum_k w_k F_k-\\rho\\,v` (signed objectives), z-scored per group."""
    F = _signed(objectives, senses)
    w = torch.ones(F.shape[-1], dtype=F.dtype) if weights is None else torch.as_tensor(weights, dtype=F.dtype)
    penalty = check_real("penalty", penalty, owner="grpo_weighted_sum", low=0.0)
    r = (F * w).sum(-1) - penalty * _violation(constraints, F)
    return _trl_group_z(r)


class LagrangianGRPO:
    """GRPO-Lagrangian: :math:`r=\\sum_k w_kF_k-\\sum_j\\mu_j\\max(g_j,0)`, z-scored per group;
    after each batch :math:`\\mu_j\\leftarrow\\max(0,\\mu_j+\\text{lr}_\\mu(\\text{rate}_j-\\text{target}))`
    with rate_j the batch fraction violating constraint j."""

    def __init__(self, n_constraints: int, *, weights=None, lr_mu=1.0, target=0.0, mu0=0.0):
        self.mu = np.full(int(n_constraints), float(mu0))
        self.weights = weights
        self.lr_mu = check_real("lr_mu", lr_mu, owner="LagrangianGRPO", low=0.0)
        self.target = check_real("target", target, owner="LagrangianGRPO", low=0.0, high=1.0)

    def __call__(self, objectives, constraints, *, senses=None):
        F = _signed(objectives, senses)
        g = torch.as_tensor(constraints, dtype=torch.float64)
        w = torch.ones(F.shape[-1], dtype=F.dtype) if self.weights is None else torch.as_tensor(self.weights, dtype=F.dtype)
        mu = torch.as_tensor(self.mu, dtype=F.dtype)
        r = (F * w).sum(-1) - (g.clamp(min=0) * mu).sum(-1)
        rate = (g > 0).to(F.dtype).mean((0, 1)).numpy()
        self.mu = np.maximum(0.0, self.mu + self.lr_mu * (rate - self.target))
        return _trl_group_z(r)


def gdpo_advantages(objectives, constraints=None, *, senses=None, weights=None):
    """GDPO normalise-then-sum (TRL 1.16 ``normalize_then_sum``), constraint as reward ``-v``."""
    F = _signed(objectives, senses)
    R = torch.cat([F, -_violation(constraints, F)[..., None]], -1) if constraints is not None else F
    w = torch.ones(R.shape[-1], dtype=F.dtype) if weights is None else torch.as_tensor(weights, dtype=F.dtype)
    z = _trl_group_z(R)
    r = (z * w).sum(-1)
    return (r - r.mean()) / (r.std() + 1e-4)


def nondominated_rank(F, v):
    """Constrained non-dominated sorting rank (0 = first front) of each sample, [B, G].

    ``F`` [B, G, m] maximised, ``v`` [B, G] violations; i beats j by Deb's rules."""
    B, G, _ = F.shape
    d = F[:, :, None, :] - F[:, None, :, :]
    pareto = (d >= 0).all(-1) & (d > 0).any(-1)
    feas = v <= 0
    fi, fj = feas[:, :, None], feas[:, None, :]
    vd = v[:, :, None] - v[:, None, :]
    beats = (fi & ~fj) | (~fi & ~fj & (vd < 0)) | (fi & fj & pareto)   # beats[b, i, j]
    rank = torch.full((B, G), -1, dtype=torch.long)
    remaining = torch.ones(B, G, dtype=torch.bool)
    level = 0
    while bool(remaining.any()):
        dominated = (beats & remaining[:, :, None]).any(1)          # some remaining i beats j
        front = remaining & ~dominated
        rank = torch.where(front, torch.full_like(rank, level), rank)
        remaining = remaining & ~front
        level += 1
    return rank


def pareto_rank_advantages(objectives, constraints=None, *, senses=None):
    """ParetoPO-style advantages: :math:`-\\text{rank}` (constrained non-dominated sorting),
    z-scored in the group. Depends only on within-group orders (scale invariant)."""
    F = _signed(objectives, senses)
    rank = nondominated_rank(F, _violation(constraints, F))
    return _trl_group_z(-rank.to(F.dtype))
