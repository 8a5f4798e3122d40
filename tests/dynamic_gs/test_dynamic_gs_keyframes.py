"""The Ex4DGS-like keyframe parametrisation: interpolation, [N, K] masks, sparse update, a fit."""

import math

import pytest
import torch

from optzoo.dynamic_gs import (
    Camera,
    StochasticAttributeAveraging,
    UpdateMixtureAdam,
    init_keyframes,
    keyframe_attributes,
    keyframe_masks,
    keyframe_visibility,
    keyframe_weights,
    make_optimizers,
    render_keyframes,
)

D = torch.float64
INTERPS = ("catmull_rom", "linear")
ROTS = ("nlerp", "slerp")


def _random_splats(n=3, k=5, seed=0, requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    means = torch.randn(n, k, 3, generator=g, dtype=D) * 0.3
    means[..., 2] += 3.0
    quats = torch.randn(n, k, 4, generator=g, dtype=D)
    return init_keyframes(means, torch.rand(n, 3, generator=g, dtype=D), k, quats=quats,
                          requires_grad=requires_grad)


def _unit(q):
    return q / q.norm(dim=-1, keepdim=True)


@pytest.mark.parametrize("interp", INTERPS)
@pytest.mark.parametrize("rot", ROTS)
def test_interpolation_passes_exactly_through_the_keyframes(interp, rot):
    k = 5
    sp = _random_splats(k=k)
    for j in range(k):
        a = keyframe_attributes(sp, j / (k - 1), interp=interp, rot_interp=rot)
        assert torch.equal(a["means"], sp["key_means"][:, j])
        torch.testing.assert_close(a["quats"], _unit(sp["key_quats"][:, j]), rtol=0, atol=1e-15)
        w = keyframe_weights(k, j / (k - 1), interp=interp)
        assert w.tolist() == [1.0 if i == j else 0.0 for i in range(k)]


@pytest.mark.parametrize("k", [2, 3, 6])
def test_weights_are_a_partition_of_unity_with_small_support(k):
    for t in torch.linspace(0, 1, 23, dtype=D).tolist():
        for interp, most in (("catmull_rom", 4), ("linear", 2)):
            w = keyframe_weights(k, t, interp=interp)
            assert abs(float(w.sum()) - 1.0) < 1e-14
            assert 1 <= int((w != 0).sum()) <= most


def test_position_spline_is_c1_at_interior_keyframes_and_linear_is_not():
    k, h, delta = 6, 1.0 / 5, 1e-6
    sp = _random_splats(n=4, k=k, seed=3)
    p = sp["key_means"].detach()

    def mu(t, interp="catmull_rom"):
        return keyframe_attributes(sp, t, interp=interp)["means"]

    kinks = []
    for j in range(1, k - 1):
        tj = j * h
        left = (mu(tj) - mu(tj - delta)) / delta
        right = (mu(tj + delta) - mu(tj)) / delta
        tangent = (p[:, j + 1] - p[:, j - 1]) / (2 * h)      # Catmull-Rom tangent, per unit time
        torch.testing.assert_close(left, tangent, rtol=0, atol=1e-4)
        torch.testing.assert_close(right, tangent, rtol=0, atol=1e-4)
        # continuity of the value itself across the segment boundary
        torch.testing.assert_close(mu(tj - 1e-12), mu(tj + 1e-12), rtol=0, atol=1e-10)
        lin_l = (mu(tj, "linear") - mu(tj - delta, "linear")) / delta
        lin_r = (mu(tj + delta, "linear") - mu(tj, "linear")) / delta
        kinks.append(float((lin_l - lin_r).abs().max()))
    assert min(kinks) > 1e-2   # the contrast: linear interpolation has a kink at keyframes


@pytest.mark.parametrize("interp", INTERPS)
@pytest.mark.parametrize("rot", ROTS)
def test_constant_trajectory_stays_constant(interp, rot):
    n, k = 3, 5
    base = torch.tensor([[0.1, -0.2, 3.0], [0.3, 0.0, 2.5], [-0.4, 0.2, 3.5]], dtype=D)
    q = _unit(torch.tensor([[0.9, 0.1, -0.3, 0.2]] * n, dtype=D))
    sp = init_keyframes(base, torch.ones(n, 3, dtype=D), k, quats=q, requires_grad=False)
    for t in torch.rand(17, generator=torch.Generator().manual_seed(0), dtype=D).tolist() + [0.0, 1.0]:
        a = keyframe_attributes(sp, t, interp=interp, rot_interp=rot)
        assert torch.equal(a["means"], base)
        torch.testing.assert_close(a["quats"], q, rtol=0, atol=1e-15)


@pytest.mark.parametrize("rot", ROTS)
def test_rotation_stays_unit_norm_and_takes_the_short_arc(rot):
    sp = _random_splats(n=8, k=4, seed=5)
    for t in torch.linspace(0, 1, 31, dtype=D).tolist():
        q = keyframe_attributes(sp, t, rot_interp=rot)["quats"]
        torch.testing.assert_close(q.norm(dim=-1), torch.ones(8, dtype=D), rtol=0, atol=1e-12)
    # q and -q are one rotation: the interpolation must not swing through another one
    q0 = _unit(torch.tensor([[0.8, 0.2, 0.5, -0.1]], dtype=D))
    sp2 = init_keyframes(torch.zeros(1, 2, 3, dtype=D), torch.ones(1, 3, dtype=D), 2,
                         quats=torch.stack([q0, -q0], 1), requires_grad=False)
    for t in (0.25, 0.5, 0.75):
        q = keyframe_attributes(sp2, t, rot_interp=rot)["quats"]
        assert float((q * q0).sum().abs()) == pytest.approx(1.0, abs=1e-12)


def test_slerp_has_constant_angular_speed_and_matches_nlerp_at_the_midpoint():
    c, s = math.cos(0.6), math.sin(0.6)          # keyframes 1.2 rad apart about z
    quats = torch.tensor([[[1.0, 0, 0, 0], [c, 0, 0, s]]], dtype=D)
    sp = init_keyframes(torch.zeros(1, 2, 3, dtype=D), torch.ones(1, 3, dtype=D), 2, quats=quats,
                        requires_grad=False)
    for u in (0.1, 0.3, 0.5, 0.9):
        q = keyframe_attributes(sp, u, rot_interp="slerp")["quats"][0]
        assert float(2 * torch.atan2(q[3], q[0])) == pytest.approx(1.2 * u, abs=1e-12)
    mid = [keyframe_attributes(sp, 0.5, rot_interp=r)["quats"] for r in ROTS]
    torch.testing.assert_close(mid[0], mid[1], rtol=0, atol=1e-14)


def test_slerp_gradient_is_finite_at_the_identity_init():
    sp = init_keyframes(torch.zeros(2, 3), torch.ones(2, 3), 4)   # every keyframe equal: theta = 0
    q = keyframe_attributes(sp, 0.3, rot_interp="slerp")["quats"]
    (q * torch.randn(q.shape, generator=torch.Generator().manual_seed(0))).sum().backward()
    assert bool(torch.isfinite(sp["key_quats"].grad).all()) and bool((sp["key_quats"].grad != 0).any())


@pytest.mark.parametrize("interp", INTERPS)
@pytest.mark.parametrize("t", [0.37, 0.4, 0.05, 1.0])
def test_gradients_flow_only_into_slots_with_nonzero_weight(interp, t):
    k = 6
    sp = _random_splats(n=3, k=k, requires_grad=True)
    a = keyframe_attributes(sp, t, interp=interp, rot_interp="slerp")
    g = torch.Generator().manual_seed(1)
    loss = (a["means"] * torch.randn(a["means"].shape, generator=g, dtype=D)).sum() \
        + (a["quats"] * torch.randn(a["quats"].shape, generator=g, dtype=D)).sum()
    loss.backward()
    vis = torch.ones(3, dtype=torch.bool)
    for name, slot_interp in (("key_means", interp), ("key_quats", "linear")):
        mask = keyframe_visibility(vis, k, t, interp=slot_interp)
        grad = sp[name].grad
        assert torch.equal(grad[~mask], torch.zeros_like(grad[~mask]))     # exactly zero elsewhere
        assert bool((grad[mask] != 0).any(-1).all())                      # and used where weighted
    w = keyframe_weights(k, t, interp=interp)
    assert keyframe_visibility(vis, k, t, interp=interp)[0].tolist() == (w != 0).tolist()


def _scene(k=4):
    """Primitive 0 on screen and present; 1 off screen; 2 present only near t = 1."""
    means = torch.tensor([[0.0, 0.0, 3.0], [40.0, 0.0, 3.0], [0.2, 0.1, 3.0]], dtype=D)
    sp = init_keyframes(means, torch.rand(3, 3, generator=torch.Generator().manual_seed(0), dtype=D), k,
                        temporal="rbf", times=torch.tensor([0.5, 0.5, 1.0], dtype=D), scale=0.2, opacity=0.8)
    with torch.no_grad():
        sp["t_scales"][2] = math.log(1.0 / (2 * 0.05 ** 2))
        sp["key_means"].add_(0.05 * torch.randn(sp["key_means"].shape, generator=torch.Generator().manual_seed(2),
                                                dtype=D))
    return sp


def test_temporal_opacity_window_and_rbf():
    n = 2
    win = torch.tensor([[0.3, 0.6], [0.8, 0.5]], dtype=D)        # row 1 given in reverse order
    sp = init_keyframes(torch.zeros(n, 3, dtype=D), torch.ones(n, 3, dtype=D), 3, window=win, t_sigma=0.1,
                        opacity=0.8, requires_grad=False)
    assert set(sp) == {"key_means", "key_quats", "scales", "opacities", "colors", "t_window", "t_scales"}
    assert sp["t_scales"].shape == (n, 2)

    def op(t):
        return keyframe_attributes(sp, t)["opacities"]

    for t in (0.3, 0.45, 0.6):
        torch.testing.assert_close(op(t)[0], torch.tensor(0.8, dtype=D))   # plateau: sigma(o) exactly
    assert float(op(0.1)[0]) == pytest.approx(0.8 * math.exp(-(0.2 ** 2) / (2 * 0.1 ** 2)), rel=1e-12)
    assert float(op(0.9)[0]) == pytest.approx(0.8 * math.exp(-(0.3 ** 2) / (2 * 0.1 ** 2)), rel=1e-12)
    torch.testing.assert_close(op(0.7)[1], torch.tensor(0.8, dtype=D))
    full = init_keyframes(torch.zeros(n, 3, dtype=D), torch.ones(n, 3, dtype=D), 3, requires_grad=False)
    for t in (0.0, 0.5, 1.0):                                            # default window (0, 1)
        torch.testing.assert_close(keyframe_attributes(full, t)["opacities"], torch.full((n,), 0.5, dtype=D))
    rbf = init_keyframes(torch.zeros(n, 3, dtype=D), torch.ones(n, 3, dtype=D), 3, temporal="rbf",
                         times=torch.tensor([0.2, 0.9], dtype=D), t_sigma=0.25, requires_grad=False)
    expected = 0.5 * torch.exp(-(0.6 - torch.tensor([0.2, 0.9], dtype=D)) ** 2 / (2 * 0.25 ** 2))
    torch.testing.assert_close(keyframe_attributes(rbf, 0.6)["opacities"], expected)
    # a closed window makes the row invisible (the space-time part of the mask)
    cam = Camera.simple(width=8, height=8, dtype=D)
    sp3 = init_keyframes(torch.tensor([[0.0, 0, 3], [0.1, 0, 3]], dtype=D), torch.ones(2, 3, dtype=D), 3,
                         window=torch.tensor([[0.0, 1.0], [0.0, 0.2]], dtype=D), t_sigma=0.05, scale=0.2)
    _, info = render_keyframes(sp3, cam, 0.9)
    assert info["visibility"].tolist() == [True, False]
    assert info["keyframe_visibility"][1].tolist() == [False] * 3
    _, info = render_keyframes(sp3, cam, 0.1)
    assert info["visibility"].tolist() == [True, True]


def test_render_masks_cover_the_gradient_support():
    cam = Camera.simple(width=12, height=12, dtype=D)
    sp = _scene()
    img, info = render_keyframes(sp, cam, 0.3)
    assert info["visibility"].tolist() == [True, False, False]
    kv = info["keyframe_visibility"]
    assert kv.shape == (3, 4) and kv.dtype == torch.bool
    assert kv[0].tolist() == (keyframe_weights(4, 0.3) != 0).tolist() and not kv[1:].any()
    (img ** 2).sum().backward()
    for name, p in sp.items():
        m = info["masks"][name]
        assert m.shape == p.shape[:m.ndim]
        assert torch.equal(p.grad[~m], torch.zeros_like(p.grad[~m])), name
    assert bool((sp["key_means"].grad[kv] != 0).any(-1).all())


def test_update_mixture_adam_accepts_the_nk_mask_and_leaves_other_slots_bit_identical():
    cam = Camera.simple(width=12, height=12, dtype=D)
    sp = _scene()
    opts = make_optimizers(sp, {name: 1e-2 for name in sp}, cc=1e-4)
    dense = _scene()
    adam = torch.optim.Adam([dense["key_means"]], lr=1e-2, eps=1e-15)
    for t in (0.0, 0.2, 0.5, 0.8, 1.0, 0.35):     # earlier steps fill the moments of every slot
        for o in opts.values():
            o.zero_grad()
        img, info = render_keyframes(sp, cam, t)
        (img ** 2).mean().backward()
        if t == 0.35:
            p = sp["key_means"]
            before = {"p": p.detach().clone(), **{k: v.clone() for k, v in opts["key_means"].state[p].items()}}
        for name, o in opts.items():
            o.step(visibility=info["masks"][name])
        adam.zero_grad()
        d_img, d_info = render_keyframes(dense, cam, t)
        (d_img ** 2).mean().backward()
        d_before = dense["key_means"].detach().clone()
        adam.step()
    mask = info["masks"]["key_means"]
    st = opts["key_means"].state[sp["key_means"]]
    assert st["count"].shape == (3, 4)
    assert mask.sum() == 4 and (~mask).sum() == 8
    assert torch.equal(sp["key_means"].detach()[~mask], before["p"][~mask])
    for key in ("exp_avg", "exp_avg_sq", "count"):
        assert torch.equal(st[key][~mask], before[key][~mask]), key
        assert not torch.equal(st[key][mask], before[key][mask]), key          # visible slots stepped
    # the contrast: dense Adam moves the zero-gradient slots (implicit update through m != 0)
    moved = (dense["key_means"].detach() != d_before).any(-1)
    assert bool((moved & ~d_info["masks"]["key_means"]).any())
    # SAA takes the same [N, K] mask (per-slot visit counts)
    saa = StochasticAttributeAveraging([sp["key_means"]], start=0, every=1, prob=0.0)
    saa.step(visibility=mask)
    assert saa.state[sp["key_means"]]["n"].tolist() == mask.to(D).tolist()


@pytest.mark.parametrize("which", ["adam", "update_mixture"])
def test_tiny_fit_of_moving_gaussians_recovers_the_trajectory(which):
    cam = Camera.simple(width=16, height=16, fov_deg=60.0, dtype=D)
    k = 4
    traj = torch.tensor([[[-0.5, -0.2, 3.0], [-0.1, 0.1, 3.0], [0.3, 0.2, 3.0], [0.5, -0.1, 3.0]],
                         [[0.4, 0.4, 3.2], [0.2, 0.3, 3.2], [0.0, 0.4, 3.2], [-0.3, 0.2, 3.2]]], dtype=D)
    colors = torch.tensor([[1.0, 0.3, 0.1], [0.1, 0.4, 1.0]], dtype=D)
    truth = init_keyframes(traj, colors, k, scale=0.2, opacity=0.9, requires_grad=False)
    times = [i / 8 for i in range(9)]
    targets = [render_keyframes(truth, cam, t)[0] for t in times]
    noise = 0.12 * torch.randn(traj.shape, generator=torch.Generator().manual_seed(1), dtype=D)
    sp = init_keyframes(traj + noise, colors, k, scale=0.2, opacity=0.9)
    p = sp["key_means"]
    opt = (torch.optim.Adam([p], lr=0.02) if which == "adam" else UpdateMixtureAdam([p], lr=0.02))

    def mean_loss():
        with torch.no_grad():
            return sum(float(((render_keyframes(sp, cam, t)[0] - y) ** 2).mean())
                       for t, y in zip(times, targets, strict=True)) / len(times)

    def xy_error():
        return float((p.detach() - traj)[..., :2].norm())

    l0, e0 = mean_loss(), xy_error()
    for step in range(40):
        i = step % len(times)
        opt.zero_grad()
        img, info = render_keyframes(sp, cam, times[i])
        ((img - targets[i]) ** 2).mean().backward()
        opt.step() if which == "adam" else opt.step(visibility=info["masks"]["key_means"])
    assert mean_loss() < 0.1 * l0
    assert xy_error() < 0.5 * e0


def _sp():
    return init_keyframes(torch.zeros(2, 3), torch.zeros(2, 3), 3, requires_grad=False)


def _with(**kw):
    sp = _sp()
    sp.update(kw)
    return sp


def _nan_in(name):
    sp = _sp()
    sp[name].view(-1)[0] = float("nan")
    return sp


@pytest.mark.parametrize("call,exc,match", [
    (lambda: init_keyframes(torch.zeros(2, 3), torch.zeros(2, 3), 1), ValueError,
     r"'n_keyframes' argument of init_keyframes must be an int in \[2, inf\]\. Got 1\."),
    (lambda: init_keyframes(torch.zeros(2, 3), torch.zeros(2, 3), 2.0), TypeError,
     r"'n_keyframes' argument of init_keyframes must be an int"),
    (lambda: init_keyframes(torch.zeros(2, 4), torch.zeros(2, 3), 3), ValueError,
     r"'means' argument of init_keyframes must be a tensor of shape \[N, 3\] or \[N, 3, 3\].*Got \[2, 4\]"),
    (lambda: init_keyframes(torch.zeros(2, 5, 3), torch.zeros(2, 3), 3), ValueError,
     r"'means' argument of init_keyframes .*n_keyframes=3.*Got \[2, 5, 3\]"),
    (lambda: init_keyframes([[0.0, 0, 0]], torch.zeros(1, 3), 3), TypeError, r"'means' argument of init_keyframes"),
    (lambda: init_keyframes(torch.zeros(2, 3), torch.zeros(3, 3), 3), ValueError,
     r"'colors' argument of init_keyframes must be a tensor of shape \[2, C\]\. Got \[3, 3\]"),
    (lambda: init_keyframes(torch.zeros(2, 3), torch.zeros(2, 3), 3, quats=torch.zeros(2, 3, 4)), ValueError,
     r"'quats' argument of init_keyframes must be quaternions of non-zero norm"),
    (lambda: init_keyframes(torch.full((2, 3), float("nan")), torch.zeros(2, 3), 3), ValueError,
     r"'means' argument of init_keyframes must be finite \(no NaN or inf\)\. Got 'NaN or inf'"),
    (lambda: init_keyframes(torch.zeros(2, 3), torch.zeros(2, 3), 3, t_sigma=0.0), ValueError,
     r"'t_sigma' argument of init_keyframes must be a finite real number in \(0, inf\)"),
    (lambda: init_keyframes(torch.zeros(2, 3), torch.zeros(2, 3), 3, temporal="gmm"), ValueError,
     r"'temporal' argument of init_keyframes must be one of 'window', 'rbf'\. Got 'gmm'"),
    (lambda: init_keyframes(torch.zeros(2, 3), torch.zeros(2, 3), 3, window=torch.zeros(2)), ValueError,
     r"'window' argument of init_keyframes must be None or a tensor of shape \[2, 2\]\. Got \[2\]"),
    (lambda: init_keyframes(torch.zeros(2, 3), torch.zeros(2, 3), 3, times=torch.zeros(2)), ValueError,
     r"'times' argument of init_keyframes must be None with temporal='window'"),
    (lambda: init_keyframes(torch.zeros(2, 3), torch.zeros(2, 3), 3, temporal="rbf", times=torch.zeros(3)),
     ValueError, r"'times' argument of init_keyframes must be None or a tensor of shape \[2\]"),
    (lambda: keyframe_attributes(_with(t_scales=torch.zeros(2)), 0.5), ValueError,
     r"'t_scales' argument of keyframe_attributes must be a tensor of shape \[2, 2\]"),
    (lambda: keyframe_attributes(_nan_in("t_window"), 0.5), ValueError,
     r"'t_window' argument of keyframe_attributes must be finite"),
    (lambda: keyframe_attributes(_sp(), 1.5), ValueError,
     r"'t' argument of keyframe_attributes must be a finite real number in \[0, 1\]\. Got 1\.5\."),
    (lambda: keyframe_attributes(_sp(), -0.1), ValueError, r"'t' argument of keyframe_attributes .*Got -0\.1\."),
    (lambda: keyframe_attributes(_sp(), float("nan")), ValueError, r"'t' argument of keyframe_attributes"),
    (lambda: keyframe_attributes(_sp(), "0.5"), TypeError, r"'t' argument of keyframe_attributes"),
    (lambda: render_keyframes(_sp(), Camera.simple(width=4, height=4), 2.0), ValueError,
     r"'t' argument of keyframe_attributes must be a finite real number in \[0, 1\]"),
    (lambda: keyframe_weights(1, 0.5), ValueError, r"'n_keyframes' argument of keyframe_weights must be an int in \[2, inf\]"),
    (lambda: keyframe_weights(4, 1.01), ValueError, r"'t' argument of keyframe_weights"),
    (lambda: keyframe_weights(4, 0.5, interp="cubic"), ValueError,
     r"'interp' argument of keyframe_weights must be one of 'catmull_rom', 'linear'\. Got 'cubic'"),
    (lambda: keyframe_attributes(_sp(), 0.5, rot_interp="squad"), ValueError,
     r"'rot_interp' argument of keyframe_attributes must be one of 'nlerp', 'slerp'"),
    (lambda: keyframe_attributes({"key_means": torch.zeros(1, 2, 3)}, 0.0), ValueError,
     r"'splats' argument of keyframe_attributes must be a dict with the keys"),
    (lambda: keyframe_attributes([1, 2], 0.0), TypeError, r"'splats' argument of keyframe_attributes must be a dict"),
    (lambda: keyframe_attributes(_with(key_means=torch.zeros(2, 1, 3)), 0.0), ValueError,
     r"'key_means' argument of keyframe_attributes must be a tensor of shape \[N, K, 3\] with K >= 2.*Got \[2, 1, 3\]"),
    (lambda: keyframe_attributes(_with(key_quats=torch.ones(2, 4, 4)), 0.0), ValueError,
     r"'key_quats' argument of keyframe_attributes must be a tensor of shape \[2, 3, 4\].*Got \[2, 4, 4\]"),
    (lambda: keyframe_attributes(_with(scales=torch.zeros(2)), 0.0), ValueError,
     r"'scales' argument of keyframe_attributes must be a tensor of shape \[2, 3\]"),
    (lambda: keyframe_attributes(_with(colors=torch.zeros(3, 3)), 0.0), ValueError,
     r"'colors' argument of keyframe_attributes must be a tensor of shape \[2, C\]"),
    (lambda: keyframe_attributes(_with(key_quats=torch.zeros(2, 3, 4)), 0.0), ValueError,
     r"'key_quats' argument of keyframe_attributes must be quaternions of non-zero norm"),
    (lambda: keyframe_attributes(_nan_in("key_means"), 0.5), ValueError,
     r"'key_means' argument of keyframe_attributes must be finite \(no NaN or inf\)"),
    (lambda: keyframe_attributes(_nan_in("key_quats"), 0.5), ValueError,
     r"'key_quats' argument of keyframe_attributes must be finite"),
    (lambda: keyframe_attributes(_nan_in("t_scales"), 0.5), ValueError,
     r"'t_scales' argument of keyframe_attributes must be finite"),
    (lambda: keyframe_visibility(torch.ones(3), 4, 0.5), TypeError,
     r"'visibility' argument of keyframe_visibility must be a bool torch tensor of shape \[N\]"),
    (lambda: keyframe_visibility(torch.ones(3, 2, dtype=torch.bool), 4, 0.5), ValueError,
     r"'visibility' argument of keyframe_visibility .*Got \[3, 2\]"),
    (lambda: keyframe_masks(_sp(), torch.ones(5, dtype=torch.bool), 0.5), ValueError,
     r"'visibility' argument of keyframe_masks must be a bool tensor of shape \[2\]"),
])
def test_bad_inputs(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
