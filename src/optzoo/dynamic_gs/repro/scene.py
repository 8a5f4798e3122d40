"""Generated dynamic scenes and the training loop shared by every arm (spec section 3).

World (unit scale, all INFERRED): a static backdrop of ``bg_side**2`` Gaussians in a
checker pattern on the plane z = 1.2, and 3 foreground objects of ``obj_size`` Gaussians
each, moving rigidly: :math:`c_k(\\tau) = c_{k0} + A(\\cos, \\sin, 0.3\\sin)(2\\pi f_k\\tau+\\phi_k)`
with a rotation about z of angle :math:`(A/0.5)\\,0.6\\sin(2\\pi f_k\\tau+\\phi_k)`; ``A`` is
0.05 (small) or 0.5 (large). 12 cameras on a forward-facing arc (N3DV-like) look at the
origin; cameras 3 and 8 are the test views, camera 6 the validation view (tuning only), the
other 9 train. GT images are rendered at 2x and average-pooled, plus N(0, 0.01^2) noise.

Model (STG-like, :func:`optzoo.dynamic_gs.init_stg`): backdrop rows from the noisy GT
backdrop centres (near-static in time), dynamic rows from noisy GT object centres at 4 training
frames (a subsample of ``init_per_obj`` per object and frame), centre time = that frame.
N is fixed (no densification), which removes a confound.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import torch

from optzoo._core.rng import np_rng
from optzoo.dynamic_gs import (
    Camera,
    MaskedAdam,
    StochasticAttributeAveraging,
    UpdateMixtureAdam,
    init_stg,
    look_at,
    psnr,
    rasterize,
    render_stg,
    sparse_row_grad,
    ssim,
)
from optzoo.dynamic_gs.metrics import ssim_tensor
from optzoo.dynamic_gs.optim import RegSpec, RestateConfig

TEST_CAMS = (3, 8)
VAL_CAM = 6
N_CAMS = 12
#: base learning rates per attribute for a budget of a few hundred steps (3DGS's ratios, the
#: spatial ones raised for the short budget; INFERRED). Means decay exponentially 100x.
BASE_LRS = {"means": 2e-3, "motion": 2e-3, "quats": 2e-3, "omega": 2e-3, "scales": 5e-3,
            "opacities": 5e-2, "times": 1e-3, "t_scales": 5e-3, "colors": 1e-2}
SAA_NAMES = ("colors", "opacities", "scales", "quats")
SSIM_WEIGHT = 0.2


def cameras(width: int, height: int, *, fov_deg: float = 45.0, dist: float = 3.0) -> list[Camera]:
    out = []
    for a in np.linspace(-35.0, 35.0, N_CAMS):
        r = math.radians(float(a))
        eye = (dist * math.sin(r), -0.25, -dist * math.cos(r))
        out.append(Camera.simple(width=width, height=height, fov_deg=fov_deg,
                                 viewmat=look_at(eye, (0.0, 0.0, 0.0), up=(0.0, -1.0, 0.0))))
    return out


def make_world(seed: int, amplitude: float, *, bg_side: int, obj_size: int):
    """GT Gaussians as numpy arrays plus the per-object motion of the world."""
    rng = np_rng(seed, "world")
    g = np.linspace(-1.3, 1.3, bg_side)
    bx, by = np.meshgrid(g, g)
    bg = np.stack([bx.ravel(), by.ravel(), np.full(bx.size, 1.2)], 1)
    check = ((np.arange(bg_side)[:, None] + np.arange(bg_side)[None, :]) % 2).ravel()
    bg_col = np.where(check[:, None] == 1, [0.85, 0.8, 0.7], [0.15, 0.25, 0.5]) + rng.normal(0, 0.04, (bg.shape[0], 3))
    centres = np.array([[-0.55, -0.1, 0.1], [0.0, 0.25, -0.15], [0.55, -0.05, 0.2]])
    base_cols = np.array([[0.9, 0.2, 0.15], [0.2, 0.85, 0.25], [0.95, 0.8, 0.1]])
    offs = rng.normal(0.0, 0.12, (3, obj_size, 3))
    cols = np.clip(base_cols[:, None, :] + rng.normal(0, 0.08, (3, obj_size, 3)), 0, 1)
    freq = rng.uniform(0.5, 1.0, 3)
    phase = rng.uniform(0.0, 2 * math.pi, 3)
    bg_step = 2.6 / max(bg_side - 1, 1)
    return {"bg": bg, "bg_col": np.clip(bg_col, 0, 1), "bg_scale": 0.45 * bg_step, "centres": centres,
            "offs": offs, "cols": cols, "freq": freq, "phase": phase, "amp": float(amplitude)}


def object_positions(world, tau: float) -> np.ndarray:
    """[3, obj_size, 3] positions of the object Gaussians at time tau."""
    arg = 2 * math.pi * world["freq"] * tau + world["phase"]
    a = world["amp"]
    shift = a * np.stack([np.cos(arg), np.sin(arg), 0.3 * np.sin(arg)], 1)
    ang = (a / 0.5) * 0.6 * np.sin(arg)
    c, s = np.cos(ang), np.sin(ang)
    rot = np.zeros((3, 3, 3))
    rot[:, 0, 0], rot[:, 0, 1], rot[:, 1, 0], rot[:, 1, 1], rot[:, 2, 2] = c, -s, s, c, 1
    offs = np.einsum("kij,knj->kni", rot, world["offs"])
    return world["centres"][:, None, :] + shift[:, None, :] + offs


def gt_gaussians(world, tau: float, dtype=torch.float32):
    obj = object_positions(world, tau).reshape(-1, 3)
    means = np.concatenate([world["bg"], obj])
    nb, no = world["bg"].shape[0], obj.shape[0]
    scales = np.concatenate([np.tile([world["bg_scale"], world["bg_scale"], 0.02], (nb, 1)),
                             np.full((no, 3), 0.06)])
    op = np.concatenate([np.full(nb, 0.97), np.full(no, 0.9)])
    cols = np.concatenate([world["bg_col"], world["cols"].reshape(-1, 3)])
    quats = np.tile([1.0, 0.0, 0.0, 0.0], (nb + no, 1))
    t = lambda x: torch.as_tensor(x, dtype=dtype)  # noqa: E731
    return t(means), t(quats), t(scales), t(op), t(cols)


def make_scene(cfg, seed: int, amplitude: float, protocol: str = "all_frames") -> dict:
    """World, cameras, GT images [cams, frames, H, W, 3] and the initial model."""
    world = make_world(seed, amplitude, bg_side=cfg.bg_side, obj_size=cfg.obj_size)
    cams = cameras(cfg.size, cfg.size)
    cams2 = cameras(2 * cfg.size, 2 * cfg.size)
    taus = [f / max(cfg.frames - 1, 1) for f in range(cfg.frames)]
    rng = np_rng(seed, "noise", amplitude)
    imgs = torch.empty(N_CAMS, cfg.frames, cfg.size, cfg.size, 3)
    with torch.no_grad():
        for f, tau in enumerate(taus):
            g = gt_gaussians(world, tau)
            for c in range(N_CAMS):
                big, _ = rasterize(*g, cams2[c])
                small = torch.nn.functional.avg_pool2d(big.permute(2, 0, 1)[None], 2)[0].permute(1, 2, 0)
                imgs[c, f] = small + torch.as_tensor(rng.normal(0, 0.01, small.shape), dtype=torch.float32)
    return {"world": world, "cams": cams, "taus": taus, "images": imgs.clamp(0, 1),
            "init": init_model(world, cfg, seed, train_frames(cfg, protocol)), "backend": cfg.backend}


def init_model(world, cfg, seed: int, frames=None) -> dict[str, torch.Tensor]:
    """The model init; dynamic rows from 4 of the training ``frames`` (every frame if None), so
    a held-out frame never seeds the model."""
    rng = np_rng(seed, "init")
    nb = world["bg"].shape[0]
    bg_idx = rng.choice(nb, size=min(cfg.n_bg, nb), replace=False)
    means = [world["bg"][bg_idx] + rng.normal(0, 0.04, (bg_idx.size, 3))]
    cols = [world["bg_col"][bg_idx] + rng.normal(0, 0.05, (bg_idx.size, 3))]
    times = [np.full(bg_idx.size, 0.5)]
    frames = list(range(cfg.frames)) if frames is None else list(frames)
    init_frames = [frames[i] for i in np.linspace(0, len(frames) - 1, 5)[:4].round().astype(int)]
    for f in init_frames:
        tau = f / max(cfg.frames - 1, 1)
        pos = object_positions(world, tau)
        for k in range(3):
            pick = rng.choice(cfg.obj_size, size=cfg.init_per_obj, replace=False)
            means.append(pos[k, pick] + rng.normal(0, 0.03, (pick.size, 3)))
            cols.append(world["cols"][k, pick] + rng.normal(0, 0.05, (pick.size, 3)))
            times.append(np.full(pick.size, tau))
    t = lambda x: torch.as_tensor(np.concatenate(x), dtype=torch.float32)  # noqa: E731
    splats = init_stg(t(means), t(cols).clamp(0, 1), t(times), scale=0.05, opacity=0.5, t_sigma=0.25,
                      requires_grad=False)
    nbg = bg_idx.size
    with torch.no_grad():  # the backdrop: wider and (near) static in time
        splats["scales"][:nbg] = math.log(world["bg_scale"])
        splats["t_scales"][:nbg] = math.log(1.0 / (2 * 4.0 ** 2))
    return {k: v.detach().clone() for k, v in splats.items()}


# --------------------------------------------------------------------------------------------
# arms


def _gen_lrs(mult: float) -> dict[str, float]:
    return {k: v * mult for k, v in BASE_LRS.items()}


def grad_scales(scene, splats, seq) -> dict[str, float]:
    """Median per-row gradient RMS of each attribute over the first 8 training samples at
    init (training images only): converts Adam learning rates into SGD ones."""
    acc = {k: [] for k in splats}
    for c, f in seq[:8]:
        for p in splats.values():
            p.grad = None
        img, info = render_stg(splats, scene["cams"][c], scene["taus"][f], backend=scene["backend"])
        _loss(img, scene["images"][c, f]).backward()
        vis = info["visibility"]
        for k, p in splats.items():
            if p.grad is not None and bool(vis.any()):
                g = p.grad[vis].reshape(int(vis.sum()), -1)
                acc[k].append(float(g.pow(2).mean(1).sqrt().median()))
    return {k: max(float(np.mean(v)) if v else 1.0, 1e-12) for k, v in acc.items()}


#: the update mixture's components (spec section 1): SSU (strictly sparse update), RSR
#: (re-state regularisation), CC (constant-corrected step, scale-free kappa = 1), SAA
#: (stochastic attribute averaging); DAR (decoupled opacity regularisation) only in the
#: predecessor-style arm ``ssu_rsr_dar``
MIXTURE = ("ssu", "rsr", "cc", "saa")
_NAMED = {"full": set(MIXTURE), "full_no_mix": {"ssu", "rsr"}, "ssu": {"ssu"}, "cc": {"cc"}, "ssu_cc": {"ssu", "cc"},
          "ssu_rsr_dar": {"ssu", "rsr", "dar"}}


def components(name: str) -> frozenset[str]:
    """The components an arm of the update mixture runs: ``"full"`` (all four), ``"full_no_X"``
    (all but X, the ablation of X: everything else, schedules included, unchanged),
    ``"full_no_mix"`` (the mixture's two mixing components, CC and SAA, removed: the strictly
    sparse update with RSR only) or a named partial arm (``"ssu"``, ``"cc"``, ``"ssu_cc"``,
    ``"ssu_rsr_dar"``)."""
    if name in _NAMED:
        return frozenset(_NAMED[name])
    if name.startswith("full_no_") and name[len("full_no_"):] in MIXTURE:
        return frozenset(set(MIXTURE) - {name[len("full_no_"):]})
    raise ValueError(f"The 'name' argument of components must be an update-mixture arm ('full', "
                     f"'full_no_<component>' with a component in {MIXTURE}, or one of {sorted(_NAMED)}). "
                     f"Got {name!r}.")


class Arm:
    """An arm: builds its optimizers over the splats and steps them with the mask."""

    def __init__(self, name, splats, lrs, steps, *, sgd_scale=None, seed=0):
        self.name, self.steps = name, steps
        self.splats = splats
        self.saa = None
        self.swa = None
        groups = [{"params": [p], "lr": lrs[k], "name": k} for k, p in splats.items()]
        if name == "adam":
            self.opt = torch.optim.Adam(groups, eps=1e-15)
        elif name == "masked_adam":
            self.opt = MaskedAdam(groups, eps=1e-15)
        elif name == "sparse_adam":
            self.opt = torch.optim.SparseAdam(groups, eps=1e-15)
        elif name == "sgd":
            for gr in groups:
                gr["lr"] = 0.1 * gr["lr"] / sgd_scale[gr["name"]]
            self.opt = torch.optim.SGD(groups, lr=groups[0]["lr"], momentum=0.9)
        elif name == "swa":
            from torch.optim.swa_utils import AveragedModel

            self.opt = torch.optim.Adam(groups, eps=1e-15)
            self.module = torch.nn.ParameterDict(splats)
            self.swa = AveragedModel(self.module)
        else:
            comps = components(name)
            kw = {}
            if "rsr" in comps:
                kw["restate"] = RestateConfig(every=max(steps // 30, 1), start=max(steps // 30, 1),
                                              end=steps // 2, switch=(7 * steps) // 30)
            if "cc" in comps:
                kw["cc_rel"] = 1.0
            self.opt = UpdateMixtureAdam(groups, eps=1e-15, sparse="ssu" in comps, seed=seed, **kw)
            if "dar" in comps:
                for gr in self.opt.param_groups:
                    if gr["name"] == "opacities":
                        gr["decoupled_reg"] = RegSpec("opacity_l1", weight=1e-3, clip=10.0,
                                                      start=steps // 10, end=steps // 2)
            if "saa" in comps:
                self.saa = StochasticAttributeAveraging(
                    [splats[k] for k in SAA_NAMES], start=steps // 3, every=max(steps // 30, 1), prob=0.1,
                    mix=1.0, seed=seed)
        self._means_lr0 = lrs["means"] * (0.1 / sgd_scale["means"] if name == "sgd" else 1.0)

    def step(self, t, vis):
        for gr in self.opt.param_groups:  # means: exponential decay to 1 % (3DGS schedule shape)
            if gr["name"] == "means":
                gr["lr"] = self._means_lr0 * 0.01 ** (t / max(self.steps - 1, 1))
        if self.name == "sparse_adam":
            for p in self.splats.values():
                sparse_row_grad(p, vis)
            self.opt.step()
        elif self.name in ("adam", "sgd", "swa"):
            self.opt.step()
        else:
            self.opt.step(visibility=vis)
        if self.saa is not None:
            self.saa.step(visibility=vis)
        if self.swa is not None and t >= self.steps // 3 and t % max(self.steps // 30, 1) == 0:
            self.swa.update_parameters(self.module)

    def eval_splats(self):
        if self.swa is not None and self.swa.n_averaged.item() > 0:
            avg = self.swa.module
            return {k: avg[k] for k in self.splats}
        return self.splats


def _loss(img, ref):
    return (1 - SSIM_WEIGHT) * (img - ref).abs().mean() + SSIM_WEIGHT * (1 - ssim_tensor(img, ref))


def train_frames(cfg, protocol: str) -> list[int]:
    """Frames the model trains on: all of them, or the even ones (``"even_odd"``, spec full)."""
    return list(range(cfg.frames)) if protocol == "all_frames" else list(range(0, cfg.frames, 2))


def test_frames(cfg, protocol: str) -> list[int]:
    """Frames the test cameras are scored on: all, or the held-out odd ones (``"even_odd"``)."""
    return list(range(cfg.frames)) if protocol == "all_frames" else list(range(1, cfg.frames, 2))


def sequence(cfg, seed: int, protocol: str = "all_frames") -> list[tuple[int, int]]:
    """The seeded (train camera, frame) sequence, identical for every arm."""
    rng = np_rng(seed, "sequence")
    train = [c for c in range(N_CAMS) if c not in TEST_CAMS and c != VAL_CAM]
    frames = train_frames(cfg, protocol)
    return [(int(train[rng.integers(len(train))]), int(frames[rng.integers(len(frames))]))
            for _ in range(cfg.steps)]


def evaluate(scene, splats, cams_idx, *, with_ssim=False, frames=None):
    """Per-(camera, frame) PSNR array [len(cams), len(frames)] (and mean SSIM); every frame
    unless ``frames`` lists some."""
    frames = range(len(scene["taus"])) if frames is None else frames
    out = np.zeros((len(cams_idx), len(frames)))
    ss = []
    with torch.no_grad():
        for i, c in enumerate(cams_idx):
            for j, f in enumerate(frames):
                img, _ = render_stg(splats, scene["cams"][c], scene["taus"][f], backend=scene["backend"])
                img = img.clamp(0, 1)
                out[i, j] = psnr(img, scene["images"][c, f])
                if with_ssim:
                    ss.append(ssim(img, scene["images"][c, f]))
    return out, (float(np.mean(ss)) if ss else None)


def _diverged(name, mult, step) -> dict:
    warnings.warn(f"dynamic_gs arm {name!r} (lr multiplier {mult:g}) diverged by step {step}; "
                  "recorded as diverged", RuntimeWarning, stacklevel=3)
    return {"diverged": True, "val_psnr": -1e3}


def train_arm(cfg, scene, seq, name, mult, seed, *, sgd_scale, progress=None, full_eval=True,
              protocol="all_frames") -> dict:
    """Train one arm; with ``protocol="even_odd"`` the sequence holds even frames only and the
    test metrics are on the held-out odd frames (train PSNR on the trained frames)."""
    seen, held = train_frames(cfg, protocol), test_frames(cfg, protocol)
    splats = {k: torch.nn.Parameter(v.clone()) for k, v in scene["init"].items()}
    arm = Arm(name, splats, _gen_lrs(mult), cfg.steps, sgd_scale=sgd_scale, seed=seed)
    vis_frac, curve = [], []
    checkpoints = set(np.linspace(0, cfg.steps, cfg.n_checkpoints + 1)[1:].astype(int).tolist())
    t0 = time.process_time()
    diverged = False
    for t, (c, f) in enumerate(seq, start=1):
        for p in splats.values():
            p.grad = None
        try:
            img, info = render_stg(splats, scene["cams"][c], scene["taus"][f], backend=scene["backend"])
        except ValueError:  # the renderer rejects what a diverging step left (e.g. scales exp(s) = 0)
            diverged = True
            break
        loss = _loss(img, scene["images"][c, f])
        if not bool(torch.isfinite(loss)):
            diverged = True
            break
        loss.backward()
        vis = info["visibility"]
        vis_frac.append(float(vis.float().mean()))
        arm.step(t, vis)
        if not all(bool(torch.isfinite(p).all()) for p in splats.values()):
            diverged = True  # a step left NaN/inf in the parameters: recorded, never rendered
            break
        if full_eval and t in checkpoints and t != cfg.steps:
            te, _ = evaluate(scene, arm.eval_splats(), TEST_CAMS, frames=held)
            curve.append((t, float(te.mean())))
        if progress is not None:
            progress.advance()
    train_time = time.process_time() - t0
    ev = arm.eval_splats()
    if diverged or not all(bool(torch.isfinite(p).all()) for p in ev.values()):
        return _diverged(name, mult, t)
    try:
        val, _ = evaluate(scene, ev, (VAL_CAM,), frames=held)
    except ValueError:  # e.g. an averaged (SWA) model the renderer rejects
        return _diverged(name, mult, t)
    out = {"diverged": False, "val_psnr": float(val.mean()), "lr_mult": mult}
    if not full_eval:
        return out
    test, test_ssim = evaluate(scene, ev, TEST_CAMS, with_ssim=True, frames=held)
    train_cams = sorted({c for c, _ in seq})
    train, _ = evaluate(scene, ev, train_cams, frames=seen)
    per_frame = test.mean(0)
    curve.append((cfg.steps, float(test.mean())))
    # recency: frames sampled in the last 10 % of steps vs the others (our definition)
    last = {f for _, f in seq[int(0.9 * len(seq)):]}
    rec_in = [per_frame[j] for j, f in enumerate(held) if f in last]
    rec_out = [per_frame[j] for j, f in enumerate(held) if f not in last]
    recency = float(np.mean(rec_in) - np.mean(rec_out)) if rec_in and rec_out else 0.0
    out.update({"test_psnr": float(test.mean()), "train_psnr": float(train.mean()),
                "gap": float(train.mean() - test.mean()), "test_ssim": test_ssim,
                "per_frame": per_frame.tolist(), "frame_pref": float(per_frame.std()),
                "recency": recency, "vis_frac": float(np.mean(vis_frac)),
                "vis_trace": [float(v) for v in np.asarray(vis_frac)[:: max(len(vis_frac) // 50, 1)]],
                "curve": curve, "cpu_s": train_time})
    if cfg.save_renders:
        with torch.no_grad():
            img, _ = render_stg(ev, scene["cams"][TEST_CAMS[0]], scene["taus"][len(scene["taus"]) // 2],
                                backend=scene["backend"])
        out["render"] = (img.clamp(0, 1).numpy() * 255).round().astype(np.uint8).tolist()
    return out
