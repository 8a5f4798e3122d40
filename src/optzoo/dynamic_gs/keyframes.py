"""An explicit keyframe space-time Gaussian parametrisation, Ex4DGS-like (spec P-B; INFERRED).

Every primitive ``i`` stores its position and its rotation at ``K`` keyframes on the uniform grid
:math:`\\tau_k = k/(K-1)`, :math:`k = 0..K-1`, of the normalised time :math:`t\\in[0, 1]`
(``key_means`` ``[N, K, 3]``, ``key_quats`` ``[N, K, 4]``). With :math:`s = t(K-1)`, segment
:math:`j = \\min(\\lfloor s\\rfloor, K-2)` and :math:`u = s - j\\in[0, 1]`:

.. math::

    \\mu_i(t) = h_{00}(u)\\,p_j + h_{10}(u)\\,m_j + h_{01}(u)\\,p_{j+1} + h_{11}(u)\\,m_{j+1},\\qquad
    m_k = \\tfrac12(p_{k+1} - p_{k-1})

(uniform Catmull-Rom, a cubic Hermite spline; ``interp="catmull_rom"``, the default) with the
phantom keyframes :math:`p_{-1} = 2p_0 - p_1`, :math:`p_K = 2p_{K-1} - p_{K-2}` (one-sided end
tangents), or :math:`\\mu_i(t) = (1-u)p_j + u\\,p_{j+1}` (``interp="linear"``, the spec's P-B).
Either way :math:`\\mu_i(t) = \\sum_k w_k(t)\\,p_{ik}` with weights that depend on ``t`` only
(:func:`keyframe_weights`), sum to one, and are non-zero on at most 4 (cubic) or 2 (linear)
slots, and on exactly one slot at a keyframe time. Rotations use the two slots ``j, j+1``:

.. math::

    q_i(t) = \\mathrm{normalize}\\big((1-u)\\,\\hat q_j + u\\,\\sigma\\hat q_{j+1}\\big),\\qquad
    \\hat q = q/\\lVert q\\rVert,\\ \\sigma = \\mathrm{sign}(\\hat q_j\\cdot\\hat q_{j+1})

(``rot_interp="nlerp"``, on the short arc) or the constant-speed arc
:math:`\\mathrm{slerp}(\\hat q_j, \\sigma\\hat q_{j+1}; u)` (``rot_interp="slerp"``, the default, as
Ex4DGS; it falls back to nlerp below 0.08 degrees, where both agree). Scales :math:`e^{s_i}` and
colours are constant in time; the opacity :math:`\\alpha_i(t) = \\sigma(o_i)\\,g_i(t)` carries either
the Ex4DGS visibility window (``temporal="window"``, the default; ``t_window`` ``[N, 2]``,
``t_scales`` ``[N, 2]``), with :math:`a = \\min(w_{i0}, w_{i1})`, :math:`b = \\max(w_{i0}, w_{i1})`,

.. math::

    g_i(t) = \\exp\\big(-e^{\\ell_{i0}}\\max(a-t, 0)^2 - e^{\\ell_{i1}}\\max(t-b, 0)^2\\big)

(1 on :math:`[a, b]`, Gaussian edges outside), or the STG radial basis
:math:`g_i(t) = \\exp(-e^{\\ell_i}(t-\\tau_i)^2)` (``temporal="rbf"``; ``times``, ``t_scales`` ``[N]``).

Sparse update: a primitive is visible at (camera, t) as in
:func:`~optzoo.dynamic_gs.dynamic.spacetime_visibility`; its keyframe slot ``k`` is visible
when, in addition, :math:`w_k(t)\\ne 0` (:func:`keyframe_visibility`, shape ``[N, K]``). The
interpolation gathers only those slots, so every other slot's gradient is exactly zero, and
``UpdateMixtureAdam(sparse=True).step(visibility=mask)`` leaves them (value, moments, count)
bit-identical. :func:`keyframe_masks` gives the right mask for every attribute.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from optzoo._core.validation import check_choice, check_int, check_real, fail
from optzoo.dynamic_gs.dynamic import spacetime_visibility
from optzoo.dynamic_gs.raster import ALPHA_MIN, Camera, rasterize

__all__ = [
    "KEYFRAME_ATTRIBUTES",
    "KEYFRAME_TEMPORAL",
    "init_keyframes",
    "keyframe_attributes",
    "keyframe_masks",
    "keyframe_visibility",
    "keyframe_weights",
    "render_keyframes",
]

#: attribute -> trailing shape ("K" = the keyframe count, "C" = colour channels)
KEYFRAME_ATTRIBUTES = {"key_means": ("K", 3), "key_quats": ("K", 4), "scales": (3,), "opacities": (),
                       "colors": ("C",)}
#: temporal-opacity model -> its attributes (trailing shapes); the model is read from the keys
KEYFRAME_TEMPORAL = {"window": {"t_window": (2,), "t_scales": (2,)}, "rbf": {"times": (), "t_scales": ()}}

_INTERP = ("catmull_rom", "linear")
_ROT_INTERP = ("nlerp", "slerp")
_TEMPORAL = tuple(KEYFRAME_TEMPORAL)
_SNAP = 1e-9          # |t (K-1) - k| below this counts as the keyframe time k
_SLERP_MIN = 1e-6     # 1 - |cos(theta)| below this: nlerp (theta < ~0.08 degrees)


def _shape(x) -> object:
    return list(x.shape) if isinstance(x, Tensor) else type(x).__name__


def _support(n_keyframes: int, t: float, interp: str) -> list[tuple[int, float]]:
    """(slot, weight) pairs with weight != 0, by slot; the weights sum to one."""
    s = t * (n_keyframes - 1)
    r = round(s)
    if abs(s - r) <= _SNAP:
        s = float(r)
    j = min(int(math.floor(s)), n_keyframes - 2)
    u = s - j
    w: dict[int, float] = {}

    def add(k: int, c: float) -> None:
        if k < 0:                                   # p_-1 = 2 p_0 - p_1
            add(0, 2.0 * c)
            add(1, -c)
        elif k >= n_keyframes:                      # p_K = 2 p_{K-1} - p_{K-2}
            add(n_keyframes - 1, 2.0 * c)
            add(n_keyframes - 2, -c)
        else:
            w[k] = w.get(k, 0.0) + c

    if interp == "linear":
        add(j, 1.0 - u)
        add(j + 1, u)
    else:
        u2, u3 = u * u, u * u * u
        h00, h10, h01, h11 = 2 * u3 - 3 * u2 + 1, u3 - 2 * u2 + u, -2 * u3 + 3 * u2, u3 - u2
        add(j, h00)
        add(j + 1, h01)
        add(j + 1, 0.5 * h10)                       # m_j = (p_{j+1} - p_{j-1}) / 2
        add(j - 1, -0.5 * h10)
        add(j + 2, 0.5 * h11)                       # m_{j+1} = (p_{j+2} - p_j) / 2
        add(j, -0.5 * h11)
    return [(k, c) for k, c in sorted(w.items()) if c != 0.0]


def _check_kt(n_keyframes, t, owner: str) -> tuple[int, float]:
    return (check_int("n_keyframes", n_keyframes, owner=owner, low=2),
            check_real("t", t, owner=owner, low=0.0, high=1.0))


def keyframe_weights(n_keyframes: int, t: float, *, interp: str = "catmull_rom",
                     dtype=torch.float64) -> Tensor:
    """The ``[K]`` interpolation weights :math:`w_k(t)` (zero outside the support).

    >>> keyframe_weights(5, 0.5).tolist()          # a keyframe time: that slot only
    [0.0, 0.0, 1.0, 0.0, 0.0]
    >>> keyframe_weights(5, 0.375).tolist()        # mid-segment 1: slots 0..3
    [-0.0625, 0.5625, 0.5625, -0.0625, 0.0]
    """
    o = "keyframe_weights"
    n_keyframes, t = _check_kt(n_keyframes, t, o)
    check_choice("interp", interp, _INTERP, owner=o)
    w = torch.zeros(n_keyframes, dtype=dtype)
    for k, c in _support(n_keyframes, t, interp):
        w[k] = c
    return w


def keyframe_visibility(visibility: Tensor, n_keyframes: int, t: float, *,
                        interp: str = "catmull_rom") -> Tensor:
    """The ``[N, K]`` mask: row visible (``visibility`` ``[N]`` bool) and :math:`w_k(t)\\ne 0`.
    ``interp="linear"`` is the support of the rotations (nlerp and slerp use slots ``j, j+1``)."""
    o = "keyframe_visibility"
    n_keyframes, t = _check_kt(n_keyframes, t, o)
    check_choice("interp", interp, _INTERP, owner=o)
    if not isinstance(visibility, Tensor) or visibility.dtype != torch.bool:
        fail("visibility", o, "a bool torch tensor of shape [N]", getattr(visibility, "dtype", type(visibility).__name__),
             exc=TypeError)
    if visibility.ndim != 1:
        fail("visibility", o, "a bool torch tensor of shape [N]", list(visibility.shape))
    slot = torch.zeros(n_keyframes, dtype=torch.bool, device=visibility.device)
    slot[[k for k, _ in _support(n_keyframes, t, interp)]] = True
    return visibility[:, None] & slot[None, :]


def init_keyframes(means: Tensor, colors: Tensor, n_keyframes: int, *, quats: Tensor | None = None,
                   temporal: str = "window", window: Tensor | None = None, times: Tensor | None = None,
                   scale: float = 0.05, opacity: float = 0.5, t_sigma: float | None = None,
                   requires_grad: bool = True) -> dict[str, torch.nn.Parameter]:
    """Keyframe splats. ``means`` ``[N, 3]`` (static: the same position at every keyframe) or
    ``[N, K, 3]`` (a trajectory); ``quats`` ``None`` (identity), ``[N, 4]`` or ``[N, K, 4]``;
    colours ``[N, C]``; log-scale ``log(scale)``, opacity logit of ``opacity``.

    ``temporal="window"``: plateau ``window`` ``[N, 2]`` (default ``(0, 1)``: visible over the whole
    sequence, as Ex4DGS initialises its dynamic points) with Gaussian edges of std ``t_sigma``
    (default 0.1). ``temporal="rbf"``: centre ``times`` ``[N]`` (default 0.5) and std ``t_sigma``
    (default 1.0, at least 88 % of the opacity over the whole sequence). Either way
    ``t_scales = log(1/(2 t_sigma^2))``."""
    o = "init_keyframes"
    n_keyframes = check_int("n_keyframes", n_keyframes, owner=o, low=2)
    check_choice("temporal", temporal, _TEMPORAL, owner=o)
    if not isinstance(means, Tensor):
        fail("means", o, "a tensor of shape [N, 3] or [N, K, 3]", type(means).__name__, exc=TypeError)
    if not ((means.ndim == 2 and means.shape[1] == 3)
            or (means.ndim == 3 and means.shape[1:] == (n_keyframes, 3))):
        fail("means", o, f"a tensor of shape [N, 3] or [N, {n_keyframes}, 3] (n_keyframes={n_keyframes})",
             list(means.shape))
    n, dt, dev = means.shape[0], means.dtype, means.device
    if not isinstance(colors, Tensor) or colors.ndim != 2 or colors.shape[0] != n:
        fail("colors", o, f"a tensor of shape [{n}, C]", _shape(colors),
             exc=TypeError if not isinstance(colors, Tensor) else ValueError)
    if quats is None:
        quats = torch.zeros(n, 4, dtype=dt, device=dev)
        quats[:, 0] = 1.0
    if not isinstance(quats, Tensor) or tuple(quats.shape) not in ((n, 4), (n, n_keyframes, 4)):
        fail("quats", o, f"None or a tensor of shape [{n}, 4] or [{n}, {n_keyframes}, 4]", _shape(quats),
             exc=TypeError if not isinstance(quats, Tensor) else ValueError)
    if temporal == "rbf":
        tname, tval, tshape = "times", times, (n,)
        if tval is None:
            tval = torch.full(tshape, 0.5, dtype=dt, device=dev)
        other = ("window", window)
    else:
        tname, tval, tshape = "window", window, (n, 2)
        if tval is None:
            tval = torch.tensor([0.0, 1.0], dtype=dt, device=dev).expand(n, 2)
        other = ("times", times)
    if other[1] is not None:
        fail(other[0], o, f"None with temporal={temporal!r}", _shape(other[1]))
    if not isinstance(tval, Tensor) or tuple(tval.shape) != tshape:
        fail(tname, o, f"None or a tensor of shape {list(tshape)}", _shape(tval),
             exc=TypeError if not isinstance(tval, Tensor) else ValueError)
    for name, v in (("means", means), ("colors", colors), ("quats", quats), (tname, tval)):
        if not bool(torch.isfinite(v.detach()).all()):
            fail(name, o, "finite (no NaN or inf)", "NaN or inf")
    if n and not bool((quats.detach().norm(dim=-1) > 1e-12).all()):
        fail("quats", o, "quaternions of non-zero norm", float(quats.detach().norm(dim=-1).min()))
    check_real("scale", scale, owner=o, low=0.0, closed="neither")
    check_real("opacity", opacity, owner=o, low=0.0, high=1.0, closed="neither")
    if t_sigma is None:
        t_sigma = 1.0 if temporal == "rbf" else 0.1
    check_real("t_sigma", t_sigma, owner=o, low=0.0, closed="neither")

    def per_key(x: Tensor) -> Tensor:
        x = x.detach().to(dt)
        return x[:, None].expand(n, n_keyframes, x.shape[-1]).clone() if x.ndim == 2 else x.clone()

    raw = {
        "key_means": per_key(means), "key_quats": per_key(quats),
        "scales": torch.full((n, 3), math.log(scale), dtype=dt, device=dev),
        "opacities": torch.full((n,), math.log(opacity / (1 - opacity)), dtype=dt, device=dev),
        "colors": colors.detach().to(dt).clone(),
        ("times" if temporal == "rbf" else "t_window"): tval.detach().to(dt).clone(),
        "t_scales": torch.full(tshape, math.log(1.0 / (2 * t_sigma ** 2)), dtype=dt, device=dev),
    }
    return {k: torch.nn.Parameter(v, requires_grad=requires_grad) for k, v in raw.items()}


def _check_splats(splats, owner: str) -> tuple[int, str]:
    """Keys, shapes and finiteness; returns (K, temporal model)."""
    if not isinstance(splats, dict):
        fail("splats", owner, "a dict of tensors", type(splats).__name__, exc=TypeError)
    temporal = "window" if "t_window" in splats else "rbf"
    keys = {**KEYFRAME_ATTRIBUTES, **KEYFRAME_TEMPORAL[temporal]}
    missing = set(keys) - set(splats)
    if missing:
        fail("splats", owner, f"a dict with the keys {sorted(KEYFRAME_ATTRIBUTES)} plus "
             "('t_window', 't_scales') or ('times', 't_scales')", sorted(missing))
    for k in keys:
        if not isinstance(splats[k], Tensor):
            fail(k, owner, "a torch tensor", type(splats[k]).__name__, exc=TypeError)
    km = splats["key_means"]
    if km.ndim != 3 or km.shape[2] != 3 or km.shape[1] < 2:
        fail("key_means", owner, "a tensor of shape [N, K, 3] with K >= 2 keyframes", list(km.shape))
    n, n_keyframes = km.shape[:2]
    want = {"key_quats": (n, n_keyframes, 4), "scales": (n, 3), "opacities": (n,),
            **{k: (n,) + shape for k, shape in KEYFRAME_TEMPORAL[temporal].items()}}
    for k, shape in want.items():
        if tuple(splats[k].shape) != shape:
            fail(k, owner, f"a tensor of shape {list(shape)} (N={n}, K={n_keyframes} from key_means)",
                 list(splats[k].shape))
    if splats["colors"].ndim != 2 or splats["colors"].shape[0] != n:
        fail("colors", owner, f"a tensor of shape [{n}, C]", list(splats["colors"].shape))
    for k in keys:
        if not bool(torch.isfinite(splats[k].detach()).all()):
            fail(k, owner, "finite (no NaN or inf)", "NaN or inf")
    qn = splats["key_quats"].detach().norm(dim=-1)
    if n and not bool((qn > 1e-12).all()):
        fail("key_quats", owner, "quaternions of non-zero norm", float(qn.min()))
    return n_keyframes, temporal


def _blend(x: Tensor, sup: list[tuple[int, float]]) -> Tensor:
    """sum_k w_k x[:, k] written around the largest-weight slot a, x_a + sum w_k (x_k - x_a):
    exact at keyframe times and for constant trajectories; only the support is read."""
    a = max(range(len(sup)), key=lambda i: sup[i][1])
    out = x[:, sup[a][0]]
    rest = [i for i in range(len(sup)) if i != a]
    if rest:
        idx = torch.tensor([sup[i][0] for i in rest], device=x.device)
        w = torch.tensor([sup[i][1] for i in rest], dtype=x.dtype, device=x.device)
        out = out + (w[None, :, None] * (x[:, idx] - out[:, None])).sum(1)
    return out


def _rotation(q: Tensor, n_keyframes: int, t: float, rot_interp: str) -> Tensor:
    sup = _support(n_keyframes, t, "linear")
    q = q / q.norm(dim=-1, keepdim=True)
    if len(sup) == 1:
        return q[:, sup[0][0]]
    (j, _), (_, u) = sup
    q0, q1 = q[:, j], q[:, j + 1]
    dot = (q0 * q1).sum(-1, keepdim=True)
    q1 = torch.where(dot < 0, -q1, q1)               # short arc (q and -q are one rotation)
    cos = dot.abs()
    lerp = _blend(torch.stack([q0, q1], 1), [(0, 1.0 - u), (1, u)])
    lerp = lerp / lerp.norm(dim=-1, keepdim=True)
    if rot_interp == "nlerp":
        return lerp
    small = cos > 1.0 - _SLERP_MIN
    theta = torch.acos(torch.where(small, torch.full_like(cos, 0.5), cos))   # safe in both branches
    sl = (torch.sin((1.0 - u) * theta) * q0 + torch.sin(u * theta) * q1) / torch.sin(theta)
    out = torch.where(small, lerp, sl)
    return out / out.norm(dim=-1, keepdim=True)


def keyframe_attributes(splats: dict[str, Tensor], t: float, *, interp: str = "catmull_rom",
                        rot_interp: str = "slerp") -> dict[str, Tensor]:
    """Time-``t`` renderer inputs, as :func:`~optzoo.dynamic_gs.dynamic.stg_attributes`:
    ``means``, ``quats`` (unit), ``scales`` (positive), ``opacities`` (temporal), ``colors``."""
    o = "keyframe_attributes"
    n_keyframes, temporal = _check_splats(splats, o)
    t = check_real("t", t, owner=o, low=0.0, high=1.0)
    check_choice("interp", interp, _INTERP, owner=o)
    check_choice("rot_interp", rot_interp, _ROT_INTERP, owner=o)
    means = _blend(splats["key_means"], _support(n_keyframes, t, interp))
    quats = _rotation(splats["key_quats"], n_keyframes, t, rot_interp)
    if temporal == "rbf":
        d = t - splats["times"]
        gate = torch.exp(-torch.exp(splats["t_scales"]) * d * d)
    else:
        w, ls = splats["t_window"], torch.exp(splats["t_scales"])
        d_in = torch.relu(torch.minimum(w[:, 0], w[:, 1]) - t)          # before the window opens
        d_out = torch.relu(t - torch.maximum(w[:, 0], w[:, 1]))         # after it closes
        gate = torch.exp(-ls[:, 0] * d_in * d_in - ls[:, 1] * d_out * d_out)
    op = torch.sigmoid(splats["opacities"]) * gate
    return {"means": means, "quats": quats, "scales": torch.exp(splats["scales"]), "opacities": op,
            "colors": splats["colors"]}


def keyframe_masks(splats: dict[str, Tensor], visibility: Tensor, t: float, *,
                   interp: str = "catmull_rom") -> dict[str, Tensor]:
    """One sparse-update mask per attribute: ``[N, K]`` for ``key_means`` (the position
    support) and ``key_quats`` (slots ``j, j+1``), ``visibility`` ``[N]`` for the others."""
    o = "keyframe_masks"
    if not isinstance(splats, dict) or "key_means" not in splats or not isinstance(splats["key_means"], Tensor) \
            or splats["key_means"].ndim != 3:
        fail("splats", o, "a dict with 'key_means' of shape [N, K, 3]", _shape(splats.get("key_means"))
             if isinstance(splats, dict) else type(splats).__name__)
    n, n_keyframes = splats["key_means"].shape[:2]
    check_choice("interp", interp, _INTERP, owner=o)
    if isinstance(visibility, Tensor) and tuple(visibility.shape) != (n,):
        fail("visibility", o, f"a bool tensor of shape [{n}]", list(visibility.shape))
    out = {}
    for name in splats:
        if name == "key_means":
            out[name] = keyframe_visibility(visibility, n_keyframes, t, interp=interp)
        elif name == "key_quats":
            out[name] = keyframe_visibility(visibility, n_keyframes, t, interp="linear")
        else:
            out[name] = visibility
    return out


def render_keyframes(splats: dict[str, Tensor], camera: Camera, t: float, *, interp: str = "catmull_rom",
                     rot_interp: str = "slerp", eps_t: float = ALPHA_MIN, **kwargs) -> tuple[Tensor, dict]:
    """Render at time ``t`` (``kwargs`` go to :func:`~optzoo.dynamic_gs.raster.rasterize`).
    ``info["visibility"]`` ``[N]`` is the space-time mask, ``info["keyframe_visibility"]``
    ``[N, K]`` the position-slot mask and ``info["masks"]`` the mask of every attribute
    (pass ``info["masks"][name]`` to that attribute's optimizer)."""
    a = keyframe_attributes(splats, t, interp=interp, rot_interp=rot_interp)
    img, info = rasterize(a["means"], a["quats"], a["scales"], a["opacities"], a["colors"], camera, **kwargs)
    vis = spacetime_visibility(info["radii"], a["opacities"], eps_t=eps_t)
    info["temporal_opacity"] = a["opacities"].detach()
    info["visibility"] = vis
    info["masks"] = keyframe_masks(splats, vis, t, interp=interp)
    info["keyframe_visibility"] = info["masks"]["key_means"]
    return img, info
