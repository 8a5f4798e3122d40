"""Update mixture for explicit dynamic Gaussian splatting (paper 17).

Ding et al., "Improving Explicit Dynamic Gaussian Splatting Optimization via Update Mixture",
ICML 2026 (no arXiv id). Fidelity: reconstructed (abstract only); every equation is ours and
listed in ``docs/papers/dynamic_gs.md``.

* :class:`UpdateMixtureAdam`: strictly sparse (space-time masked, per-primitive bias
  correction), constant-corrected Adam with re-state (RSR) and decoupled attribute (DAR)
  regularisation; :func:`mixture_adam_update` is its pure functional step.
* :class:`StochasticAttributeAveraging`: visit-weighted attribute averages with stochastic
  mixing (against frame preference).
* Baselines: :class:`MaskedAdam` (gsplat ``SelectiveAdam`` semantics), :func:`sparse_row_grad`
  (feeds ``torch.optim.SparseAdam``).
* A pure-PyTorch differentiable EWA splatting renderer (:func:`rasterize`, dense and
  tile-culled) and an STG-like space-time parametrisation (:func:`init_stg`,
  :func:`stg_attributes`, :func:`render_stg`, :func:`spacetime_visibility`) and an
  Ex4DGS-like keyframe one (:func:`init_keyframes`, :func:`keyframe_attributes`,
  :func:`render_keyframes`, :func:`keyframe_visibility`: ``[N, K]`` masks per keyframe slot).

>>> import torch
>>> from optzoo.dynamic_gs import UpdateMixtureAdam
>>> w = torch.nn.Parameter(torch.zeros(3, 2))
>>> opt = UpdateMixtureAdam([w], lr=0.1)
>>> w.grad = torch.ones(3, 2)
>>> opt.step(visibility=torch.tensor([True, False, True]))
>>> w[1].tolist()   # invisible row: untouched
[0.0, 0.0]

Everything here needs torch, so importing this package imports torch (``import optzoo`` does not).
"""

from optzoo.dynamic_gs.baselines import MaskedAdam, sparse_row_grad
from optzoo.dynamic_gs.dynamic import (
    STG_ATTRIBUTES,
    init_stg,
    render_stg,
    spacetime_visibility,
    stg_attributes,
)
from optzoo.dynamic_gs.keyframes import (
    KEYFRAME_ATTRIBUTES,
    KEYFRAME_TEMPORAL,
    init_keyframes,
    keyframe_attributes,
    keyframe_masks,
    keyframe_visibility,
    keyframe_weights,
    render_keyframes,
)
from optzoo.dynamic_gs.metrics import psnr, ssim
from optzoo.dynamic_gs.optim import (
    RegSpec,
    RestateConfig,
    RowState,
    StochasticAttributeAveraging,
    UpdateMixtureAdam,
    check_visibility,
    make_optimizers,
    mixture_adam_update,
    update_mixture_adam_update,  # noqa: F401  (deprecated alias, December 2026; not in __all__)
)
from optzoo.dynamic_gs.raster import Camera, look_at, project, quat_to_rotmat, rasterize

__all__ = [
    "Camera",
    "KEYFRAME_ATTRIBUTES",
    "KEYFRAME_TEMPORAL",
    "MaskedAdam",
    "RegSpec",
    "RestateConfig",
    "RowState",
    "STG_ATTRIBUTES",
    "StochasticAttributeAveraging",
    "UpdateMixtureAdam",
    "check_visibility",
    "init_keyframes",
    "init_stg",
    "keyframe_attributes",
    "keyframe_masks",
    "keyframe_visibility",
    "keyframe_weights",
    "look_at",
    "make_optimizers",
    "mixture_adam_update",
    "project",
    "psnr",
    "quat_to_rotmat",
    "rasterize",
    "render_keyframes",
    "render_stg",
    "spacetime_visibility",
    "sparse_row_grad",
    "ssim",
    "stg_attributes",
]
