"""Baselines the update mixture is compared against, where no CPU library object exists.

* :class:`MaskedAdam`: the semantics of gsplat's ``gsplat.optimizers.SelectiveAdam``
  (gsplat 1.5.3, a fused CUDA kernel, so it cannot run here): a ``torch.optim.Adam`` whose
  ``step(visibility)`` updates the moments and the parameter of visible rows only, with **no
  bias correction** and eps added to :math:`\\sqrt v` (read from gsplat's source; our own
  code). Invisible rows keep parameter and moments unchanged. Written as a plain masked loop,
  independently of :class:`~optzoo.dynamic_gs.UpdateMixtureAdam`, so the two cross-check.
* :func:`sparse_row_grad`: turns a dense gradient into the sparse COO gradient of the visible
  rows that ``torch.optim.SparseAdam`` (lazy moments, global-step bias correction) consumes.

Dense ``torch.optim.Adam``, ``torch.optim.SGD`` (momentum) and
``torch.optim.swa_utils.AveragedModel`` are used as they are.
"""

from __future__ import annotations

import torch
from torch import Tensor

from optzoo._core.validation import check_real, fail
from optzoo.dynamic_gs.optim import check_visibility

__all__ = ["MaskedAdam", "sparse_row_grad"]


class MaskedAdam(torch.optim.Adam):
    """gsplat ``SelectiveAdam`` semantics on CPU or CUDA in plain torch:
    :math:`m \\leftarrow \\beta_1 m + (1-\\beta_1)g`, :math:`v \\leftarrow \\beta_2 v+(1-\\beta_2)g^2`,
    :math:`\\theta \\leftarrow \\theta - \\eta\\, m/(\\sqrt v+\\varepsilon)` on rows with
    ``visibility`` True; nothing changes elsewhere. ``state["step"]`` counts calls.
    """

    def __init__(self, params, lr: float = 1e-3, eps: float = 1e-15, betas=(0.9, 0.999)):
        check_real("lr", lr, owner="MaskedAdam", low=0.0)
        check_real("eps", eps, owner="MaskedAdam", low=0.0)
        if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
            fail("betas", "MaskedAdam", "a pair (beta1, beta2) in [0, 1)", betas)
        for b in betas:
            check_real("betas", b, owner="MaskedAdam", low=0.0, high=1.0, closed="left")
        super().__init__(params, lr=lr, eps=eps, betas=tuple(betas))

    @torch.no_grad()
    def step(self, closure=None, *, visibility: Tensor | None = None):
        if visibility is None:
            fail("visibility", "MaskedAdam.step", "a bool mask (gsplat SelectiveAdam needs one)", None)
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                mask = check_visibility(visibility, p, owner="MaskedAdam")
                st = self.state[p]
                if not st:
                    st["step"] = torch.zeros((), dtype=torch.float32)
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                st["step"] += 1
                g = p.grad
                if not bool(torch.isfinite(g[mask]).all()):
                    raise FloatingPointError("MaskedAdam: NaN/inf gradient in a visible row")
                w = mask.reshape(mask.shape + (1,) * (p.ndim - mask.ndim)).expand_as(p)
                m = torch.where(w, b1 * st["exp_avg"] + (1 - b1) * g, st["exp_avg"])
                v = torch.where(w, b2 * st["exp_avg_sq"] + (1 - b2) * g * g, st["exp_avg_sq"])
                new = torch.where(w, p - group["lr"] * m / (v.sqrt() + group["eps"]), p)
                st["exp_avg"].copy_(m)
                st["exp_avg_sq"].copy_(v)
                p.copy_(new)
        return loss


def sparse_row_grad(param: Tensor, visibility: Tensor) -> None:
    """Replace ``param.grad`` by a sparse COO tensor holding the visible rows of the dense
    gradient (the input ``torch.optim.SparseAdam`` expects; ``[N]`` masks only)."""
    if param.grad is None:
        fail("param", "sparse_row_grad", "a tensor with a gradient", None)
    mask = check_visibility(visibility, param, owner="sparse_row_grad")
    if mask.ndim != 1:
        fail("visibility", "sparse_row_grad", "a 1-D [N] mask", list(mask.shape))
    idx = mask.nonzero().T
    g = param.grad
    param.grad = torch.sparse_coo_tensor(idx, g[mask], g.shape, check_invariants=False).coalesce()
