r"""Solver-free decision-focused losses: two INFERRED candidates (A, B), neither the paper's.

Paper: "A Solver-Free Training Method for Predict-then-Optimize", ICML 2026, arXiv 2606.19587.
Only its abstract is public: a "measure transformation principle" gives a surrogate that needs
no optimisation-solver call in training, is Fisher consistent and matches state-of-the-art
regret. The loss itself is not public, so these two candidates are ours (fidelity:
reconstructed). They live in ``experimental``; the name ``SolverFreeLoss`` is kept for the
paper's loss once its equations are known.

Setting. Features :math:`x`, costs :math:`c\in\mathbb R^d`, feasible set :math:`S`, decision
:math:`w^*(c)\in\arg\min_{w\in S} c^\top w` (``argmax`` for a MAXIMIZE model), prediction
:math:`\hat c=f_\theta(x)`. Regret :math:`c^\top w^*(\hat c)-c^\top w^*(c)` is piecewise
constant in :math:`\hat c`; :math:`w^*(a\hat c)=w^*(\hat c)` for every :math:`a>0`.

**Candidate A, directional** (needs only the true costs; ignores :math:`S`):

.. math::  \ell_A(\hat c, c) = -\,\frac{c^\top \hat c}{\lVert \hat c\rVert_2}.

Fisher consistent: :math:`\mathbb E[\ell_A\mid x]=-\mathbb E[c\mid x]^\top \hat c/\lVert\hat
c\rVert` is minimised exactly by the positive multiples of :math:`\mathbb E[c\mid x]`, and
:math:`w^*` is scale invariant, so the minimiser's decision is the Bayes decision, for MIN and
MAX models alike. (The spec suggested flipping the sign of :math:`c` for MAXIMIZE models; that
would align :math:`\hat c` with :math:`-\mathbb E[c]` and make a maximising solver pick the
worst decision, so we do not flip: the prediction is the cost the solver is given, whatever
the sense.) Scale invariant in :math:`\hat c`; the gradient
:math:`-(I-\hat u\hat u^\top)c/\lVert\hat c\rVert` (:math:`\hat u=\hat c/\lVert\hat c\rVert`) is
non-zero unless :math:`\hat c\parallel c`.

**Candidate B, softmin over the solution pool** (the data "transformed to the solution
measure": a pool :math:`\Gamma=\{w^*(c_i)\}` pre-computed once, then no solver calls):

.. math::  \ell_B(\hat c, w_i) = s\,\hat c^\top w_i + \tau\log\sum_{w\in\Gamma}
           \exp\!\big(-s\,\hat c^\top w/\tau\big) \;\ge 0,

with :math:`s=+1` for MIN and :math:`-1` for MAX models, i.e. :math:`\tau` times the
cross-entropy of the softmax of :math:`-s\hat c^\top w/\tau` over the pool against the
observed optimum :math:`w_i` (which must be in the pool). As :math:`\tau\to0` it becomes PyEPO's
``contrastiveMAP`` on the same pool, :math:`s(\hat c^\top w_i-\min_{\Gamma}\hat c^\top w)`.
Not Fisher consistent in the decision sense in general: its population minimiser matches the
softmax to the *distribution* of :math:`w^*(c)` given :math:`x`, whose mode need not be the
Bayes decision :math:`w^*(\mathbb E[c\mid x])` (our tests show a counterexample).
:math:`\tau` default 1 (INFERRED; the reproduction picks it on validation from {0.1, 1, 10}).

Both losses take PyEPO's forward signature ``(pred_cost, true_cost, true_sol, true_obj)`` so
they drop into a PyEPO training loop; neither calls ``optmodel.solve``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from optzoo._core.validation import check_choice, check_real, fail

__all__ = ["DirectionalLoss", "PoolSoftminLoss", "directional_loss", "pool_softmin_loss"]

_REDUCTIONS = ("mean", "sum", "none")


def _sense_sign(optmodel, sense, owner: str) -> float:
    """+1 for a minimisation model, -1 for maximisation; ``sense`` must agree with the model."""
    model_sense = None
    if optmodel is not None:
        ms = getattr(optmodel, "modelSense", None)
        if ms is None:
            fail("optmodel", owner, "a PyEPO optModel with a modelSense", type(optmodel).__name__,
                 exc=TypeError)
        model_sense = "min" if int(ms) == 1 else "max" if int(ms) == -1 else None
        if model_sense is None:
            fail("optmodel", owner, "a model whose modelSense is EPO.MINIMIZE or EPO.MAXIMIZE", ms)
    if sense is None:
        sense = model_sense or "min"
    check_choice("sense", sense, ("min", "max"), owner=owner)
    if model_sense is not None and sense != model_sense:
        fail("sense", owner, f"the sense of the optmodel ({model_sense!r})", sense)
    return 1.0 if sense == "min" else -1.0


def _check_costs(name: str, t, owner: str, d: int | None = None, batch: int | None = None) -> Tensor:
    if not isinstance(t, Tensor):
        fail(name, owner, "a torch.Tensor", type(t).__name__, exc=TypeError)
    if not t.is_floating_point():
        fail(name, owner, "a floating-point tensor", t.dtype, exc=TypeError)
    if t.ndim != 2 or t.shape[0] == 0 or t.shape[1] == 0:
        fail(name, owner, "a non-empty tensor of shape (batch, num_cost)", f"shape {tuple(t.shape)}")
    if d is not None and t.shape[1] != d:
        fail(name, owner, f"of shape (batch, {d}) (num_cost of the model / pred_cost)",
             f"shape {tuple(t.shape)}")
    if batch is not None and t.shape[0] != batch:
        fail(name, owner, f"of shape ({batch}, num_cost), the batch of pred_cost",
             f"shape {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"The {name!r} argument of {owner} must contain only finite values. "
                         "Got NaN or inf.")
    return t


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def directional_loss(pred_cost: Tensor, true_cost: Tensor, *, reduction: str = "mean",
                     eps: float = 1e-12, num_cost: int | None = None) -> Tensor:
    r"""Candidate A (INFERRED): :math:`-c^\top\hat c/\lVert\hat c\rVert` per row, reduced.

    Needs no solver and no solution; the same formula for MIN and MAX models (see the module
    docstring). ``eps`` guards :math:`\lVert\hat c\rVert=0`.

    >>> c = torch.tensor([[1.0, 2.0]])
    >>> float(directional_loss(3 * c, c)) == float(directional_loss(c, c))  # scale invariant
    True
    """
    owner = "directional_loss"
    check_choice("reduction", reduction, _REDUCTIONS, owner=owner)
    pred_cost = _check_costs("pred_cost", pred_cost, owner, num_cost)
    true_cost = _check_costs("true_cost", true_cost, owner, pred_cost.shape[1], pred_cost.shape[0])
    norm = pred_cost.norm(dim=1).clamp_min(eps)
    loss = -(true_cost.to(pred_cost.dtype) * pred_cost).sum(1) / norm
    return _reduce(loss, reduction)


def pool_softmin_loss(pred_cost: Tensor, true_sol: Tensor, pool: Tensor, *, tau: float = 1.0,
                      sense: str = "min", reduction: str = "mean") -> Tensor:
    r"""Candidate B (INFERRED): :math:`s\hat c^\top w_i+\tau\log\sum_{w\in\Gamma}
    e^{-s\hat c^\top w/\tau}` per row (:math:`s=\pm1` for min/max), reduced.

    ``pool``: (m, d) solutions (the observed optima ``true_sol`` should be among them; the
    loss is then >= 0). ``tau > 0``; ``tau -> 0`` gives PyEPO's ``contrastiveMAP``.
    """
    owner = "pool_softmin_loss"
    check_choice("reduction", reduction, _REDUCTIONS, owner=owner)
    check_choice("sense", sense, ("min", "max"), owner=owner)
    tau = check_real("tau", tau, owner=owner, low=0.0, closed="neither")
    pred_cost = _check_costs("pred_cost", pred_cost, owner)
    true_sol = _check_costs("true_sol", true_sol, owner, pred_cost.shape[1], pred_cost.shape[0])
    pool = _check_costs("pool", pool, owner, pred_cost.shape[1])
    s = 1.0 if sense == "min" else -1.0
    scores = -s * (pred_cost @ pool.to(pred_cost.dtype).T) / tau          # (B, m)
    own = -s * (pred_cost * true_sol.to(pred_cost.dtype)).sum(1) / tau    # (B,)
    loss = tau * (torch.logsumexp(scores, dim=1) - own)
    return _reduce(loss, reduction)


class DirectionalLoss(nn.Module):
    """Candidate A as a module with PyEPO's forward signature
    ``(pred_cost, true_cost, true_sol=None, true_obj=None)``; ``true_sol``/``true_obj`` are
    accepted and ignored. ``optmodel`` (optional) fixes ``num_cost`` and the sense check;
    ``sense`` given together with ``optmodel`` must agree with its ``modelSense``."""

    def __init__(self, optmodel=None, *, sense: str | None = None, reduction: str = "mean",
                 eps: float = 1e-12) -> None:
        super().__init__()
        owner = "DirectionalLoss"
        _sense_sign(optmodel, sense, owner)
        check_choice("reduction", reduction, _REDUCTIONS, owner=owner)
        self.eps = check_real("eps", eps, owner=owner, low=0.0, closed="neither")
        self.optmodel, self.reduction = optmodel, reduction
        self.num_cost = None if optmodel is None else int(optmodel.num_cost)

    def forward(self, pred_cost: Tensor, true_cost: Tensor, true_sol: Tensor | None = None,
                true_obj: Tensor | None = None) -> Tensor:
        return directional_loss(pred_cost, true_cost, reduction=self.reduction, eps=self.eps,
                                num_cost=self.num_cost)


class PoolSoftminLoss(nn.Module):
    """Candidate B as a module: PyEPO forward signature ``(pred_cost, true_cost, true_sol,
    true_obj)``. The pool is the distinct rows of ``dataset.sols`` (a PyEPO ``optDataset``,
    solved once at construction: that is the one-off pre-computation) or an explicit ``pool``
    tensor. ``sense`` defaults to the model's and must agree with it."""

    def __init__(self, optmodel, *, dataset=None, pool: Tensor | None = None, tau: float = 1.0,
                 sense: str | None = None, reduction: str = "mean") -> None:
        super().__init__()
        owner = "PoolSoftminLoss"
        s = _sense_sign(optmodel, sense, owner)
        self.sense = "min" if s > 0 else "max"
        check_choice("reduction", reduction, _REDUCTIONS, owner=owner)
        self.tau = check_real("tau", tau, owner=owner, low=0.0, closed="neither")
        if (dataset is None) == (pool is None):
            fail("dataset", owner, "given, or else 'pool' (exactly one of them)",
                 "both" if dataset is not None else "neither")
        if dataset is not None:
            sols = getattr(dataset, "sols", None)
            if not isinstance(sols, Tensor):
                fail("dataset", owner, "a pyepo optDataset (with .sols)", type(dataset).__name__,
                     exc=TypeError)
            if len(sols) == 0:
                fail("dataset", owner, "a non-empty dataset", "an empty dataset")
            pool = sols
        pool = _check_costs("pool", pool, owner, int(optmodel.num_cost))
        self.register_buffer("pool", torch.unique(pool.detach().float(), dim=0))
        self.optmodel, self.reduction = optmodel, reduction

    def forward(self, pred_cost: Tensor, true_cost: Tensor | None = None,
                true_sol: Tensor | None = None, true_obj: Tensor | None = None) -> Tensor:
        if true_sol is None:
            fail("true_sol", "PoolSoftminLoss.forward", "the batch of true optimal solutions", None)
        return pool_softmin_loss(pred_cost, true_sol, self.pool, tau=self.tau, sense=self.sense,
                                 reduction=self.reduction)
