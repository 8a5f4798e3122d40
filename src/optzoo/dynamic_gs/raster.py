"""A differentiable EWA Gaussian splatting renderer in pure PyTorch (CPU and CUDA).

For each Gaussian with mean :math:`\\mu`, unit quaternion :math:`q`, scales :math:`s>0`,
opacity :math:`o\\in(0,1]` and colour :math:`c`, and a pinhole camera
(world-to-camera :math:`[R_c\\,|\\,t_c]`, intrinsics :math:`f_x,f_y,c_x,c_y`):

.. math::

    \\Sigma = R(q)\\,\\mathrm{diag}(s)^2 R(q)^\\top,\\qquad x = R_c\\mu + t_c,\\qquad
    J = \\begin{pmatrix} f_x/z & 0 & -f_x x/z^2 \\\\ 0 & f_y/z & -f_y y/z^2\\end{pmatrix},

    \\Sigma' = J R_c \\Sigma R_c^\\top J^\\top + 0.3 I \\ \\text{(3DGS low-pass)},\\qquad
    \\alpha_i(p) = \\min\\!\\big(0.99,\\ o_i\\,e^{-\\frac12 (p-\\mu'_i)^\\top \\Sigma'^{-1}_i (p-\\mu'_i)}\\big),

and front-to-back compositing in depth order,
:math:`C(p) = \\sum_i c_i\\alpha_i(p)\\prod_{j<i}(1-\\alpha_j(p)) + T_{final}(p)\\,b`.

Support (the same in both paths, so they agree): a pair (Gaussian, pixel) contributes only
when :math:`\\alpha \\ge 1/255` (the 3DGS/gsplat threshold). A Gaussian's screen radius is
the opacity-aware extent :math:`r = \\lceil\\sqrt{2\\ln(255\\,o)\\,\\lambda_{max}(\\Sigma')}\\rceil`,
outside of which :math:`\\alpha<1/255` always; ``radii == 0`` marks a Gaussian that is behind
the near plane, too transparent (:math:`o<1/255`) or entirely off screen, exactly the
visibility gsplat returns in ``info["radii"]``.

``backend="dense"`` evaluates every (Gaussian, pixel) pair (the reference);
``backend="tiled"`` (the default since December 2026: 9-33x faster in a new user's trial at
500-2000 splats) evaluates only the pairs whose tile the Gaussian's square of radius
:math:`r` touches (gathered into a padded ``[tiles, max per tile]`` table), and agrees with
the dense path to float rounding. No early ray termination (every pair with alpha above the
threshold is composited), which is what makes the two paths exactly comparable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from optzoo._core.validation import check_choice, check_int, check_real, fail

__all__ = ["Camera", "look_at", "project", "quat_to_rotmat", "rasterize"]

ALPHA_MIN = 1.0 / 255.0
ALPHA_MAX = 0.99
LOW_PASS = 0.3


@dataclass(frozen=True)
class Camera:
    """A pinhole camera: ``viewmat`` (4x4 world-to-camera), ``K`` (3x3 intrinsics), image size.

    >>> cam = Camera.simple(width=8, height=8, fov_deg=60.0)
    >>> cam.K.shape
    torch.Size([3, 3])
    """

    viewmat: Tensor
    K: Tensor
    width: int
    height: int

    def __post_init__(self) -> None:
        owner = "Camera"
        check_int("width", self.width, owner=owner, low=1)
        check_int("height", self.height, owner=owner, low=1)
        if not isinstance(self.viewmat, Tensor) or tuple(self.viewmat.shape) != (4, 4):
            fail("viewmat", owner, "a 4x4 torch tensor (world-to-camera)", getattr(self.viewmat, "shape", self.viewmat),
                 exc=TypeError if not isinstance(self.viewmat, Tensor) else ValueError)
        if not isinstance(self.K, Tensor) or tuple(self.K.shape) != (3, 3):
            fail("K", owner, "a 3x3 torch tensor of intrinsics", getattr(self.K, "shape", self.K),
                 exc=TypeError if not isinstance(self.K, Tensor) else ValueError)
        k = self.K.detach().double().cpu()
        if not bool(torch.isfinite(k).all()) or not (k[0, 0] > 0 and k[1, 1] > 0):
            fail("K", owner, "intrinsics with finite entries and focal lengths fx, fy > 0",
                 k.tolist())
        if not bool(torch.isfinite(self.viewmat).all()):
            fail("viewmat", owner, "finite", self.viewmat.tolist())

    @staticmethod
    def simple(*, width: int, height: int, fov_deg: float = 60.0, viewmat: Tensor | None = None,
               dtype=torch.float32) -> Camera:
        """A centred pinhole camera with horizontal field of view ``fov_deg``."""
        check_real("fov_deg", fov_deg, owner="Camera.simple", low=0.0, high=180.0, closed="neither")
        f = 0.5 * width / math.tan(math.radians(fov_deg) / 2)
        K = torch.tensor([[f, 0.0, width / 2], [0.0, f, height / 2], [0.0, 0.0, 1.0]], dtype=dtype)
        vm = torch.eye(4, dtype=dtype) if viewmat is None else viewmat.to(dtype)
        return Camera(vm, K, width, height)


def look_at(eye, target, up=(0.0, 1.0, 0.0), *, dtype=torch.float32) -> Tensor:
    """World-to-camera 4x4 (OpenCV convention: +z forward, +y down) looking from ``eye``."""
    eye, target, up = (torch.as_tensor(v, dtype=torch.float64) for v in (eye, target, up))
    z = target - eye
    if float(z.norm()) < 1e-12:
        fail("target", "look_at", "a point other than eye (there is no viewing direction)", target.tolist())
    z = z / z.norm()
    x = torch.linalg.cross(z, up)
    if float(x.norm()) < 1e-12:
        fail("up", "look_at", "not parallel to the viewing direction", up.tolist())
    x = x / x.norm()
    y = torch.linalg.cross(z, x)
    R = torch.stack([x, y, z])  # rows: camera axes in world coordinates
    vm = torch.eye(4, dtype=torch.float64)
    vm[:3, :3] = R
    vm[:3, 3] = -R @ eye
    return vm.to(dtype)


def quat_to_rotmat(quats: Tensor) -> Tensor:
    """Rotation matrices ``[N, 3, 3]`` from quaternions ``[N, 4]`` (w, x, y, z), normalised."""
    q = quats / quats.norm(dim=-1, keepdim=True)
    w, x, y, z = q.unbind(-1)
    return torch.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], -1).reshape(q.shape[:-1] + (3, 3))


def _check_inputs(means, quats, scales, opacities, colors, owner):
    if not isinstance(means, Tensor) or means.ndim != 2 or means.shape[1] != 3:
        fail("means", owner, "a tensor of shape [N, 3]", getattr(means, "shape", type(means).__name__),
             exc=TypeError if not isinstance(means, Tensor) else ValueError)
    n = means.shape[0]
    for name, t, shape in (("quats", quats, (n, 4)), ("scales", scales, (n, 3)), ("opacities", opacities, (n,))):
        if not isinstance(t, Tensor) or tuple(t.shape) != shape:
            fail(name, owner, f"a tensor of shape {list(shape)}", getattr(t, "shape", type(t).__name__),
                 exc=TypeError if not isinstance(t, Tensor) else ValueError)
    if colors is not None and (not isinstance(colors, Tensor) or colors.ndim != 2 or colors.shape[0] != n):
        fail("colors", owner, "a tensor of shape [N, C]", getattr(colors, "shape", type(colors).__name__),
             exc=TypeError if not isinstance(colors, Tensor) else ValueError)
    for name, t in (("means", means), ("quats", quats), ("scales", scales), ("opacities", opacities),
                    ("colors", colors)):
        if t is not None and not bool(torch.isfinite(t.detach()).all()):
            fail(name, owner, "finite (no NaN or inf)", "NaN or inf")
    if n and not bool((scales.detach() > 0).all()):
        fail("scales", owner, "positive (every scale > 0)", float(scales.detach().min()))
    qn = quats.detach().norm(dim=-1)
    if n and not bool((qn > 1e-12).all()):
        fail("quats", owner, "quaternions of non-zero norm", float(qn.min()))


def project(means: Tensor, quats: Tensor, scales: Tensor, opacities: Tensor, camera: Camera, *,
            near: float = 0.01) -> dict[str, Tensor]:
    """EWA projection: screen means ``[N,2]``, conics (inverse 2D covariances) ``[N,2,2]``,
    depths ``[N]``, radii ``[N]`` (int, 0 = not visible) and the clamped opacities."""
    _check_inputs(means, quats, scales, opacities, None, "project")
    if not isinstance(camera, Camera):
        fail("camera", "project", "a Camera", type(camera).__name__, exc=TypeError)
    vm = camera.viewmat.to(means)
    K = camera.K.to(means)
    Rc, tc = vm[:3, :3], vm[:3, 3]
    xc = means @ Rc.T + tc
    z = xc[:, 2]
    zs = z.clamp(min=near)
    fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
    u = fx * xc[:, 0] / zs + cx
    v = fy * xc[:, 1] / zs + cy
    zero = torch.zeros_like(zs)
    J = torch.stack([fx / zs, zero, -fx * xc[:, 0] / zs ** 2,
                     zero, fy / zs, -fy * xc[:, 1] / zs ** 2], -1).reshape(-1, 2, 3)
    R = quat_to_rotmat(quats)
    M = R * scales[:, None, :]
    cov3 = M @ M.transpose(1, 2)
    T = J @ Rc
    cov2 = T @ cov3 @ T.transpose(1, 2) + LOW_PASS * torch.eye(2, dtype=means.dtype, device=means.device)
    a, b, c = cov2[:, 0, 0], cov2[:, 0, 1], cov2[:, 1, 1]
    det = a * c - b * b
    conic = torch.stack([c, -b, -b, a], -1).reshape(-1, 2, 2) / det[:, None, None]
    with torch.no_grad():
        mid = 0.5 * (a + c)
        lam = mid + torch.sqrt((mid * mid - det).clamp(min=0.0))
        o = opacities.detach().clamp(max=1.0)
        ext = torch.sqrt(2.0 * torch.log((255.0 * o).clamp(min=1.0)) * lam)
        r = torch.ceil(ext)
        on_screen = ((u + r > 0) & (u - r < camera.width) & (v + r > 0) & (v - r < camera.height))
        ok = (z > near) & (o >= ALPHA_MIN) & on_screen & (det > 0)
        radii = torch.where(ok, r, torch.zeros_like(r)).to(torch.int64)
    return {"means2d": torch.stack([u, v], -1), "conics": conic, "depths": z, "radii": radii}


def _alpha(px: Tensor, m2: Tensor, conic: Tensor, op: Tensor) -> Tensor:
    """alpha for pixels ``px [..., P, 2]`` against Gaussians ``[..., G, ...]``: ``[..., G, P]``."""
    d = px.unsqueeze(-3) - m2.unsqueeze(-2)                     # [..., G, P, 2]
    dx, dy = d[..., 0], d[..., 1]
    ca, cb, cc = conic[..., 0, 0, None], conic[..., 0, 1, None], conic[..., 1, 1, None]
    power = -0.5 * (ca * dx * dx + 2 * cb * dx * dy + cc * dy * dy)
    alpha = (op.unsqueeze(-1) * torch.exp(power.clamp(max=0.0))).clamp(max=ALPHA_MAX)
    return torch.where(alpha >= ALPHA_MIN, alpha, torch.zeros_like(alpha))


def _composite(alpha: Tensor, colors: Tensor) -> tuple[Tensor, Tensor]:
    """Front-to-back over axis -2 (Gaussians, depth-sorted): colour ``[..., P, C]``, T_final."""
    log_t = torch.log1p(-alpha)
    csum = torch.cumsum(log_t, dim=-2)
    trans = torch.exp(csum - log_t)                              # exclusive prefix product
    w = alpha * trans
    img = torch.einsum("...gp,...gc->...pc", w, colors)
    return img, torch.exp(csum[..., -1, :])


def rasterize(means: Tensor, quats: Tensor, scales: Tensor, opacities: Tensor, colors: Tensor,
              camera: Camera, *, background: Tensor | None = None, backend: str = "tiled",
              tile_size: int = 8, chunk: int = 4096) -> tuple[Tensor, dict[str, Tensor]]:
    """Render ``[H, W, C]`` and an info dict (``radii``, ``means2d``, ``depths``, ``alpha``
    = 1 - T_final per pixel). ``scales`` are positive standard deviations (not logs),
    ``opacities`` in (0, 1]. Differentiable in every tensor argument.

    >>> import torch
    >>> cam = Camera.simple(width=8, height=8)
    >>> img, info = rasterize(torch.tensor([[0., 0., 3.]]), torch.tensor([[1., 0., 0., 0.]]),
    ...                       torch.full((1, 3), 0.3), torch.tensor([0.9]), torch.ones(1, 3), cam)
    >>> img.shape, int(info["radii"][0]) > 0
    (torch.Size([8, 8, 3]), True)
    """
    owner = "rasterize"
    _check_inputs(means, quats, scales, opacities, colors, owner)
    check_choice("backend", backend, ("dense", "tiled"), owner=owner)
    check_int("tile_size", tile_size, owner=owner, low=1)
    check_int("chunk", chunk, owner=owner, low=1)
    if not isinstance(camera, Camera):
        fail("camera", owner, "a Camera", type(camera).__name__, exc=TypeError)
    H, W = camera.height, camera.width
    C = colors.shape[1]
    bg = torch.zeros(C, dtype=means.dtype, device=means.device) if background is None else background.to(means)
    proj = project(means, quats, scales, opacities, camera)
    vis = proj["radii"] > 0
    order = torch.argsort(proj["depths"].detach())
    order = order[vis[order]]                                    # visible, front to back
    m2, con = proj["means2d"][order], proj["conics"][order]
    op, col = opacities[order].clamp(max=1.0), colors[order]
    ys, xs = torch.meshgrid(torch.arange(H, device=means.device), torch.arange(W, device=means.device),
                            indexing="ij")
    pix = torch.stack([xs, ys], -1).reshape(-1, 2).to(means.dtype) + 0.5   # pixel centres
    if order.numel() == 0:                                      # nothing visible: background
        img = torch.zeros(H * W, C, dtype=means.dtype, device=means.device) + 0.0 * colors.sum()
        tfin = torch.ones(H * W, dtype=means.dtype, device=means.device)
    elif backend == "dense":
        outs, ts = [], []
        for s in range(0, H * W, chunk):
            a = _alpha(pix[s:s + chunk], m2, con, op)
            img, tf = _composite(a, col)
            outs.append(img)
            ts.append(tf)
        img, tfin = torch.cat(outs), torch.cat(ts)
    else:
        img, tfin = _tiled(pix, m2, con, op, col, proj["radii"][order], H, W, tile_size)
    img = img + tfin[:, None] * bg
    info = dict(proj)
    info["alpha"] = (1.0 - tfin).reshape(H, W)
    return img.reshape(H, W, C), info


def _tiled(pix, m2, con, op, col, radii, H, W, ts):
    """Tile-culled compositing: pairs (tile, Gaussian) from the square bounding boxes, depth
    order kept inside each tile, padded with an alpha-0 dummy to ``[tiles, max, ...]``."""
    ty, tx = math.ceil(H / ts), math.ceil(W / ts)
    with torch.no_grad():
        r = radii.to(m2.dtype)
        x0 = torch.floor((m2[:, 0].detach() - r) / ts).clamp(0, tx - 1)
        x1 = torch.floor((m2[:, 0].detach() + r) / ts).clamp(0, tx - 1)
        y0 = torch.floor((m2[:, 1].detach() - r) / ts).clamp(0, ty - 1)
        y1 = torch.floor((m2[:, 1].detach() + r) / ts).clamp(0, ty - 1)
        tcol = torch.arange(tx, device=m2.device, dtype=m2.dtype)
        trow = torch.arange(ty, device=m2.device, dtype=m2.dtype)
        hit = (((tcol[None, None, :] >= x0[:, None, None]) & (tcol[None, None, :] <= x1[:, None, None]))
               & ((trow[None, :, None] >= y0[:, None, None]) & (trow[None, :, None] <= y1[:, None, None])))
        hit = hit.reshape(hit.shape[0], -1).T                       # [tiles, G], G in depth order
        counts = hit.sum(1)
        mx = max(int(counts.max()), 1)
        # stable: rank of each hit inside its tile keeps the depth order
        rank = torch.cumsum(hit.to(torch.int64), 1) - 1
        tile_id, g_id = hit.nonzero(as_tuple=True)
        table = torch.full((ty * tx, mx), m2.shape[0], dtype=torch.int64, device=m2.device)
        table[tile_id, rank[tile_id, g_id]] = g_id
        # pixel index table per tile (padded with pixel 0 for partial tiles; dropped after)
        py = torch.arange(ts, device=m2.device)
        local = (py[:, None] * W + py[None, :]).reshape(-1)          # offsets inside a tile
        oy = (torch.arange(ty, device=m2.device) * ts)[:, None].expand(ty, tx).reshape(-1)
        ox = (torch.arange(tx, device=m2.device) * ts)[None, :].expand(ty, tx).reshape(-1)
        ly, lx = py[:, None].expand(ts, ts).reshape(-1), py[None, :].expand(ts, ts).reshape(-1)
        gy, gx = oy[:, None] + ly[None, :], ox[:, None] + lx[None, :]
        valid = (gy < H) & (gx < W)
        pidx = torch.where(valid, gy * W + gx, torch.zeros_like(gy))
        del local
    pad = lambda t, v: torch.cat([t, torch.full_like(t[:1], v)])  # noqa: E731
    m2p, conp = pad(m2, 0.0), torch.cat([con, torch.eye(2, dtype=con.dtype, device=con.device)[None]])
    opp, colp = pad(op, 0.0), pad(col, 0.0)
    a = _alpha(pix[pidx], m2p[table], conp[table], opp[table])       # [tiles, mx, ts*ts]
    img_t, tf_t = _composite(a, colp[table])                         # [tiles, ts*ts, C], [tiles, ts*ts]
    n = H * W
    img = torch.zeros(n, col.shape[1], dtype=col.dtype, device=col.device)
    tfin = torch.ones(n, dtype=col.dtype, device=col.device)
    sel = valid.reshape(-1)
    img = img.index_put((pidx.reshape(-1)[sel],), img_t.reshape(-1, col.shape[1])[sel])
    tfin = tfin.index_put((pidx.reshape(-1)[sel],), tf_t.reshape(-1)[sel])
    return img, tfin
