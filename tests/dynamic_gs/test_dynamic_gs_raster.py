"""The splatting renderer: gradients, closed forms, compositing, dense vs tiled, bad inputs."""

import math

import pytest
import torch

from optzoo.dynamic_gs import (
    Camera,
    init_stg,
    look_at,
    rasterize,
    render_stg,
    spacetime_visibility,
    stg_attributes,
)


def _scene(n=3, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    means = torch.randn(n, 3, generator=g, dtype=dtype) * 0.3
    means[:, 2] += 3.0
    quats = torch.randn(n, 4, generator=g, dtype=dtype)
    scales = torch.rand(n, 3, generator=g, dtype=dtype) * 0.2 + 0.15
    op = torch.rand(n, generator=g, dtype=dtype) * 0.5 + 0.3
    col = torch.rand(n, 3, generator=g, dtype=dtype)
    return means, quats, scales, op, col


def test_gradcheck_float64():
    cam = Camera.simple(width=8, height=8, fov_deg=50.0, dtype=torch.float64)
    args = [t.clone().requires_grad_(True) for t in _scene()]

    def f(*a):
        return rasterize(*a, cam)[0]

    assert torch.autograd.gradcheck(f, args, eps=1e-6, atol=1e-5, rtol=1e-4)


def test_single_gaussian_matches_closed_form():
    W = H = 9
    cam = Camera.simple(width=W, height=H, fov_deg=60.0, dtype=torch.float64)
    f = cam.K[0, 0].item()
    z, s, o = 4.0, 0.3, 0.8
    img, info = rasterize(torch.tensor([[0.0, 0.0, z]], dtype=torch.float64),
                          torch.tensor([[1.0, 0, 0, 0]], dtype=torch.float64),
                          torch.full((1, 3), s, dtype=torch.float64), torch.tensor([o], dtype=torch.float64),
                          torch.tensor([[1.0, 0.5, 0.25]], dtype=torch.float64), cam)
    var = (f * s / z) ** 2 + 0.3  # isotropic on the optical axis: J Sigma J^T + low-pass
    ys, xs = torch.meshgrid(torch.arange(H, dtype=torch.float64), torch.arange(W, dtype=torch.float64),
                            indexing="ij")
    d2 = (xs + 0.5 - W / 2) ** 2 + (ys + 0.5 - H / 2) ** 2
    alpha = (o * torch.exp(-0.5 * d2 / var)).clamp(max=0.99)
    alpha = torch.where(alpha >= 1 / 255, alpha, torch.zeros_like(alpha))
    torch.testing.assert_close(img[..., 0], alpha, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(img[..., 2], 0.25 * alpha, rtol=1e-10, atol=1e-12)
    r = math.ceil(math.sqrt(2 * math.log(255 * o) * var))
    assert int(info["radii"][0]) == r


def test_weights_plus_transmittance_is_one():
    cam = Camera.simple(width=10, height=10, dtype=torch.float64)
    means, quats, scales, op, _ = _scene(6)
    img, info = rasterize(means, quats, scales, op, torch.ones(6, 3, dtype=torch.float64), cam,
                          background=torch.ones(3, dtype=torch.float64))
    torch.testing.assert_close(img, torch.ones_like(img), rtol=0, atol=1e-12)
    assert float(info["alpha"].max()) > 0.3


def test_opaque_front_gaussian_occludes():
    cam = Camera.simple(width=8, height=8, dtype=torch.float64)
    means = torch.tensor([[0.0, 0, 5.0], [0.0, 0, 2.0]], dtype=torch.float64)  # back listed first
    img, _ = rasterize(means, torch.tensor([[1.0, 0, 0, 0]] * 2, dtype=torch.float64),
                       torch.tensor([[1.0, 1, 1], [2.0, 2, 2]], dtype=torch.float64),
                       torch.tensor([1.0, 1.0], dtype=torch.float64),
                       torch.tensor([[1.0, 0, 0], [0.0, 0, 1]], dtype=torch.float64), cam)
    centre = img[4, 4]
    assert centre[2] > 0.98 and centre[0] < 0.011  # 0.99 blue in front, 1 % red leaks through


@pytest.mark.parametrize("size,tile", [(16, 8), (13, 4)])
def test_dense_and_tiled_agree(size, tile):
    cam = Camera.simple(width=size, height=size + 3, fov_deg=55.0)
    args = [t.float().requires_grad_(True) for t in _scene(40, seed=3)]
    a, ia = rasterize(*args, cam, backend="dense")
    ga = torch.autograd.grad(a.square().sum(), args)
    b, ib = rasterize(*args, cam, backend="tiled", tile_size=tile)
    gb = torch.autograd.grad(b.square().sum(), args)
    assert (a - b).abs().max() < 1e-5
    torch.testing.assert_close(ia["alpha"], ib["alpha"], rtol=0, atol=1e-5)
    for x, y in zip(ga, gb, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)


def test_radii_mark_culled_gaussians():
    cam = Camera.simple(width=8, height=8)
    means = torch.tensor([[0.0, 0, 3], [0.0, 0, -3], [50.0, 0, 3], [0.0, 0, 3]])
    op = torch.tensor([0.9, 0.9, 0.9, 1e-3])  # behind, off screen, below 1/255
    _, info = rasterize(means, torch.tensor([[1.0, 0, 0, 0]] * 4), torch.full((4, 3), 0.1), op,
                        torch.ones(4, 3), cam)
    assert info["radii"].tolist()[1:] == [0, 0, 0] and info["radii"][0] > 0


def test_stg_parametrisation_and_visibility():
    n = 2
    sp = init_stg(torch.tensor([[0.0, 0, 3], [0.2, 0, 3]]), torch.ones(n, 3), torch.tensor([0.0, 1.0]),
                  t_sigma=0.1, requires_grad=False)
    with torch.no_grad():
        sp["motion"][0, :3] = torch.tensor([1.0, 0, 0])
    a = stg_attributes(sp, 0.5)
    torch.testing.assert_close(a["means"][0], torch.tensor([0.5, 0, 3]))
    expected = 0.5 * math.exp(-(0.5 ** 2) / (2 * 0.1 ** 2))
    assert a["opacities"][0].item() == pytest.approx(expected, rel=1e-5)
    _, info = render_stg(sp, Camera.simple(width=8, height=8), 0.0)
    assert info["visibility"].tolist() == [True, False]  # row 1 is 10 sigma away in time
    vis = spacetime_visibility(torch.tensor([[[3, 3], [0, 0]], [[0, 0], [2, 2]]]), torch.tensor([0.5, 0.001]))
    assert vis.tolist() == [True, False]


def _good():
    return ([[0.0, 0, 3]], [[1.0, 0, 0, 0]], [[0.1, 0.1, 0.1]], [0.5], [[1.0, 1, 1]])


@pytest.mark.parametrize("which,value,match", [
    (2, [[0.1, -0.1, 0.1]], r"'scales' argument of rasterize must be positive"),
    (2, [[0.1, 0.0, 0.1]], r"'scales' argument of rasterize must be positive"),
    (1, [[0.0, 0, 0, 0]], r"'quats' argument of rasterize must be quaternions of non-zero norm"),
    (0, [[float("nan"), 0, 3]], r"'means' argument of rasterize must be finite"),
    (3, [float("inf")], r"'opacities' argument of rasterize must be finite"),
])
def test_bad_gaussians(which, value, match):
    args = [torch.tensor(v) for v in _good()]
    args[which] = torch.tensor(value)
    with pytest.raises(ValueError, match=match):
        rasterize(*args, Camera.simple(width=4, height=4))


@pytest.mark.parametrize("kw,exc,match", [
    (dict(width=0, height=4), ValueError, r"'width' argument of Camera must be an int in \[1, inf\]\. Got 0"),
    (dict(width=4, height=-2), ValueError, r"'height' argument of Camera must be an int"),
    (dict(width=4.5, height=4), TypeError, r"'width' argument of Camera must be an int"),
])
def test_bad_image_size(kw, exc, match):
    with pytest.raises(exc, match=match):
        Camera(torch.eye(4), torch.eye(3), **kw)


@pytest.mark.parametrize("K,match", [
    (torch.tensor([[0.0, 0, 2], [0, 5, 2], [0, 0, 1]]), r"focal lengths fx, fy > 0"),
    (torch.tensor([[5.0, 0, 2], [0, float("nan"), 2], [0, 0, 1]]), r"'K' argument of Camera must be intrinsics"),
    (torch.eye(2), r"'K' argument of Camera must be a 3x3"),
])
def test_bad_intrinsics(K, match):
    with pytest.raises(ValueError, match=match):
        Camera(torch.eye(4), K, 4, 4)


def test_look_at_puts_target_on_the_axis():
    vm = look_at((1.0, 0.5, -3.0), (0.0, 0.0, 0.0), up=(0.0, -1.0, 0.0), dtype=torch.float64)
    x = vm @ torch.tensor([0.0, 0, 0, 1], dtype=torch.float64)
    torch.testing.assert_close(x[:2], torch.zeros(2, dtype=torch.float64), atol=1e-12, rtol=0)
    assert x[2] > 0


def test_nothing_visible_renders_the_background():
    cam = Camera.simple(width=4, height=4)
    img, info = rasterize(torch.tensor([[0.0, 0, -2]]), torch.tensor([[1.0, 0, 0, 0]]), torch.full((1, 3), 0.1),
                          torch.tensor([0.9]), torch.ones(1, 3), cam, background=torch.tensor([0.2, 0.3, 0.4]))
    assert torch.equal(img, torch.tensor([0.2, 0.3, 0.4]).expand(4, 4, 3))
    assert int(info["radii"][0]) == 0
