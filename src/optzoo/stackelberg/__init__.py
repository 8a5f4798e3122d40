"""Stackelberg learning rates: a fast linear head (follower) over a slow body (leader).

S. Zeng, S. Bhatt, S. Ganesh, *Rethinking Neural Network Learning Rates: A Stackelberg
Perspective*, ICML 2026, arXiv 2605.15530 (paper 13). Fidelity: **reconstructed** (abstract
only; every inferred choice is listed in ``docs/papers/stackelberg.md``).

* :func:`stackelberg_param_groups`, :func:`split_head`: body/head groups for any torch optimizer.
* :class:`StackelbergGD`: alternating (or simultaneous) two-time-scale GD.
* :func:`exact_head_best_response`, :func:`stackelberg_objective`: the ridge head W*(theta) and
  the reduced objective Phi(theta) = L(theta, W*(theta)).
* :func:`curvature`, :func:`hessian_top_eig`: lambda_max of Hess Phi and Hess L by Lanczos or
  power iteration on ``torch.func`` HVPs.
* Stand-ins for per-layer LR libraries that may be absent: :func:`layer_decay_param_groups`
  (timm-style LLRD; timm needs torchvision), :func:`mup_sgd_param_groups` (muP's SGD rule; the
  reproduction uses the real ``mup.MuSGD`` when ``mup`` is installed).
"""

from optzoo.stackelberg.baselines import layer_decay_param_groups, mup_sgd_param_groups
from optzoo.stackelberg.best_response import (
    exact_head_best_response,
    head_features,
    stackelberg_objective,
)
from optzoo.stackelberg.curvature import curvature, hessian_top_eig
from optzoo.stackelberg.groups import (
    ball_projection,
    box_projection,
    split_head,
    stackelberg_param_groups,
)
from optzoo.stackelberg.optim import StackelbergGD, stackelberg_gd_update

__all__ = [
    "StackelbergGD",
    "ball_projection",
    "box_projection",
    "curvature",
    "exact_head_best_response",
    "head_features",
    "hessian_top_eig",
    "layer_decay_param_groups",
    "mup_sgd_param_groups",
    "split_head",
    "stackelberg_gd_update",
    "stackelberg_objective",
    "stackelberg_param_groups",
]
