"""An explicit dynamic (space-time) Gaussian parametrisation, STG-like (INFERRED).

Per primitive ``i`` (attribute names are the keys of the ``splats`` dict):

.. math::

    \\mu_i(\\tau) = \\mu_i + \\sum_{k=1}^{3} b_{ik}(\\tau-\\tau_i)^k,\\qquad
    q_i(\\tau) = \\mathrm{normalize}(q_i + \\omega_i(\\tau-\\tau_i)),\\qquad
    \\alpha_i(\\tau) = \\sigma(o_i)\\,\\exp(-e^{\\ell_i}(\\tau-\\tau_i)^2),

scales :math:`e^{s_i}` and colours :math:`c_i` constant in time (SpacetimeGaussians' polynomial
motion, linear rotation and temporal radial-basis opacity, without its feature decoder).
:func:`spacetime_visibility` is the mask of the strictly sparse update: a row is visible at
(camera, time) when its screen radius is positive and :math:`\\alpha_i(\\tau)\\ge\\varepsilon_\\tau`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from optzoo._core.validation import check_real, fail
from optzoo.dynamic_gs.raster import ALPHA_MIN, Camera, rasterize

__all__ = ["STG_ATTRIBUTES", "init_stg", "render_stg", "spacetime_visibility", "stg_attributes"]

#: attribute -> trailing shape
STG_ATTRIBUTES = {"means": (3,), "motion": (9,), "quats": (4,), "omega": (4,), "scales": (3,),
                  "opacities": (), "times": (), "t_scales": (), "colors": (3,)}


def init_stg(means: Tensor, colors: Tensor, times: Tensor, *, scale: float = 0.05, opacity: float = 0.5,
             t_sigma: float = 0.25, requires_grad: bool = True) -> dict[str, torch.nn.Parameter]:
    """Splats at rest: no motion, identity rotation, log-scale ``log(scale)``, opacity logit of
    ``opacity``, temporal std ``t_sigma`` (``e^l = 1/(2 t_sigma^2)``), centre times ``times``."""
    o = "init_stg"
    if not isinstance(means, Tensor) or means.ndim != 2 or means.shape[1] != 3:
        fail("means", o, "a tensor of shape [N, 3]", getattr(means, "shape", type(means).__name__))
    n = means.shape[0]
    if not isinstance(colors, Tensor) or tuple(colors.shape) != (n, 3):
        fail("colors", o, f"a tensor of shape [{n}, 3]", getattr(colors, "shape", type(colors).__name__))
    if not isinstance(times, Tensor) or tuple(times.shape) != (n,):
        fail("times", o, f"a tensor of shape [{n}]", getattr(times, "shape", type(times).__name__))
    check_real("scale", scale, owner=o, low=0.0, closed="neither")
    check_real("opacity", opacity, owner=o, low=0.0, high=1.0, closed="neither")
    check_real("t_sigma", t_sigma, owner=o, low=0.0, closed="neither")
    dt, dev = means.dtype, means.device
    quats = torch.zeros(n, 4, dtype=dt, device=dev)
    quats[:, 0] = 1.0
    raw = {
        "means": means.clone(), "motion": torch.zeros(n, 9, dtype=dt, device=dev), "quats": quats,
        "omega": torch.zeros(n, 4, dtype=dt, device=dev),
        "scales": torch.full((n, 3), math.log(scale), dtype=dt, device=dev),
        "opacities": torch.full((n,), math.log(opacity / (1 - opacity)), dtype=dt, device=dev),
        "times": times.to(dt).clone(),
        "t_scales": torch.full((n,), math.log(1.0 / (2 * t_sigma ** 2)), dtype=dt, device=dev),
        "colors": colors.to(dt).clone(),
    }
    return {k: torch.nn.Parameter(v, requires_grad=requires_grad) for k, v in raw.items()}


def stg_attributes(splats: dict[str, Tensor], t: float) -> dict[str, Tensor]:
    """Time-``t`` renderer inputs: ``means``, ``quats``, ``scales`` (positive), ``opacities``
    (temporal), ``colors``."""
    missing = set(STG_ATTRIBUTES) - set(splats)
    if missing:
        fail("splats", "stg_attributes", f"a dict with the keys {sorted(STG_ATTRIBUTES)}", sorted(missing))
    check_real("t", t, owner="stg_attributes")
    for k, v in splats.items():
        if k in STG_ATTRIBUTES and not bool(torch.isfinite(v.detach()).all()):
            fail(k, "stg_attributes", "finite (no NaN or inf)", "NaN or inf")
    d = t - splats["times"]
    b = splats["motion"].reshape(-1, 3, 3)
    means = splats["means"] + d[:, None] * b[:, 0] + (d ** 2)[:, None] * b[:, 1] + (d ** 3)[:, None] * b[:, 2]
    quats = splats["quats"] + d[:, None] * splats["omega"]
    op = torch.sigmoid(splats["opacities"]) * torch.exp(-torch.exp(splats["t_scales"]) * d * d)
    return {"means": means, "quats": quats, "scales": torch.exp(splats["scales"]), "opacities": op,
            "colors": splats["colors"]}


def spacetime_visibility(radii: Tensor, temporal_opacity: Tensor, *, eps_t: float = ALPHA_MIN) -> Tensor:
    """Rows to step: ``radii > 0`` (gsplat ``info["radii"]``: ``[N]``, ``[C, N]`` or
    ``[C, N, 2]``, reduced as "visible in any camera") and ``temporal_opacity >= eps_t``."""
    check_real("eps_t", eps_t, owner="spacetime_visibility", low=0.0, high=1.0)
    if not isinstance(radii, Tensor) or radii.ndim not in (1, 2, 3):
        fail("radii", "spacetime_visibility", "a tensor of shape [N], [C, N] or [C, N, 2]",
             getattr(radii, "shape", type(radii).__name__))
    vis = radii > 0
    if vis.ndim == 3:
        vis = vis.all(-1)
    if vis.ndim == 2:
        vis = vis.any(0)
    if not isinstance(temporal_opacity, Tensor) or tuple(temporal_opacity.shape) != tuple(vis.shape):
        fail("temporal_opacity", "spacetime_visibility", f"a tensor of shape {list(vis.shape)}",
             getattr(temporal_opacity, "shape", type(temporal_opacity).__name__))
    return vis & (temporal_opacity.detach() >= eps_t)


def render_stg(splats: dict[str, Tensor], camera: Camera, t: float, **kwargs) -> tuple[Tensor, dict]:
    """Render the dynamic scene at time ``t``; ``info["visibility"]`` is the space-time mask."""
    a = stg_attributes(splats, t)
    img, info = rasterize(a["means"], a["quats"], a["scales"], a["opacities"], a["colors"], camera, **kwargs)
    info["temporal_opacity"] = a["opacities"].detach()
    info["visibility"] = spacetime_visibility(info["radii"], a["opacities"])
    return img, info
