"""Reproduction of dynamic_gs (paper 17): claims, scales, run, judge, figures.

Every arm trains the same STG-like model from the same init on the same generated scene with
the same seeded (train camera, frame) sequence and the same number of steps, rendered by the
same pure-PyTorch splatter (see ``scene.py``). Arms: dense ``torch.optim.Adam`` (eps 1e-15),
``MaskedAdam`` (gsplat SelectiveAdam semantics), ``torch.optim.SGD`` (momentum 0.9) and the
full update mixture (strictly sparse update + RSR + constant correction + SAA); the full scale
adds ``torch.optim.SparseAdam`` and Adam + ``torch.optim.swa_utils.AveragedModel`` (the
per-component ablations exist as arms but are not run: they are untuned). Each arm's
learning-rate multiplier on :data:`GRID` was chosen per motion level on the validation camera
on tuning seeds 80000 and 80001 (``tune``), and is frozen in :data:`TUNED`. Rendering uses the
tiled backend (equal to the dense reference to 1e-5, tested).

Metrics per seed and motion level: mean test PSNR (cameras 3 and 8, every frame), train PSNR
(the train cameras), gap = train - test, frame preference = std over frames of per-frame test
PSNR (our definition). C1-C3 are judged at large motion, paired by seed. Full also runs the
spec's second protocol (train on even frames, test on the held-out odd frames; ``even_odd``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from optzoo.dynamic_gs.repro.scene import grad_scales, make_scene, sequence, train_arm
from optzoo.repro.claim import Claim, Verdict
from optzoo.repro.figures import new_figure, save_figure
from optzoo.repro.judging import judge as decide
from optzoo.repro.judging import paired

__all__ = ["CLAIMS", "SCALES", "TUNED", "Config", "figures", "judge", "run", "tune"]

CLAIMS = [
    Claim("heldout_psnr",
          "At large motion the full update mixture reaches a higher held-out (test camera) PSNR "
          "than dense Adam at the same steps.",
          "test PSNR full mixture - Adam (dB), large motion", direction="greater", threshold=0.0,
          source="abstract; spec C1"),
    Claim("generalization_gap",
          "At large motion the full update mixture has a smaller train/test PSNR gap than Adam.",
          "gap(Adam) - gap(full) in dB, gap = train PSNR - test PSNR, large motion",
          direction="greater", threshold=0.0, source="abstract; spec C2"),
    Claim("frame_preference",
          "At large motion the full update mixture has a lower frame preference than Adam.",
          "std over frames of per-frame test PSNR, Adam - full (dB), large motion",
          direction="greater", threshold=0.0, source="abstract (stochastic attribute averaging); spec C3"),
    Claim("small_motion_parity",
          "At small motion the full mixture and Adam reach the same test PSNR within 0.1 dB "
          "(pre-registered expectation of the spec, not a statement of the paper).",
          "test PSNR full mixture - Adam (dB), small motion", direction="equivalent",
          threshold=0.0, margin=0.1, kind="finding", source="spec section 3 (pre-registered)"),
    Claim("vs_selective_adam",
          "At large motion the full mixture beats masked Adam with gsplat SelectiveAdam "
          "semantics on test PSNR (our comparison; the paper's sparse baseline is unknown).",
          "test PSNR full mixture - MaskedAdam (dB), large motion", direction="greater",
          threshold=0.0, kind="finding", source="spec section 3 (arms)"),
    Claim("heldout_frames_psnr",
          "Trained on the even frames only, the full mixture reaches a higher PSNR than Adam on the "
          "held-out odd frames of the test cameras at large motion (the spec's pre-registered "
          "expectation for stochastic attribute averaging, not a statement of the paper).",
          "even/odd protocol, large motion: test PSNR on odd frames, full mixture - Adam (dB)",
          direction="greater", threshold=0.0, kind="finding",
          source="spec section 3 (full protocol, expected results)"),
]


@dataclass(frozen=True)
class Config:
    size: int = 32
    frames: int = 8
    steps: int = 120
    bg_side: int = 8
    obj_size: int = 24
    n_bg: int = 64
    init_per_obj: int = 16
    motions: tuple = (("large", 0.5), ("small", 0.05))
    arms: tuple = ("adam", "masked_adam", "sgd", "full")
    grid: tuple = (0.5, 1.0, 2.0)
    n_checkpoints: int = 3
    save_renders: bool = True
    backend: str = "tiled"
    protocols: tuple = ("all_frames",)
    seeds: int = 5


#: the learning-rate grid every arm is tuned on (multipliers of BASE_LRS); widened from the
#: spec's {0.5, 1, 2} because tuning on {0.5, 1, 2, 4} (tuning seeds) put most arms on an end
#: of it, then by 1/16 because SGD chose 1/8 at small motion
GRID = (0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
#: the six arms with tuned multipliers (the per-component ablations are not run: untuned)
TUNED_ARMS = ("adam", "masked_adam", "sparse_adam", "sgd", "swa", "full")

SCALES = {
    "smoke": Config(size=16, frames=4, steps=30, bg_side=6, obj_size=8, n_bg=16, init_per_obj=4,
                    motions=(("large", 0.5),), arms=("adam", "full"), n_checkpoints=1,
                    save_renders=False, seeds=2),
    # quick budget by a timing rule (pilot seed 90000, one thread, 2026-12-02): with the tiled
    # renderer a training step costs about 10 ms (dense: 19 ms), a 480-step arm run about 6
    # CPU-s, so 8 arm runs plus GT and evaluation come to about one CPU-minute per seed.
    "quick": Config(steps=480, grid=GRID, n_checkpoints=4, seeds=5),
    # full, sized for about 30 CPU-minutes: the quick world at 16 frames, 4x the steps, the six
    # tuned arms, two motion levels and both protocols (all frames; train even, test odd).
    # Multipliers are the ones tuned at quick's 480 steps (tuning at 1920 steps did not fit).
    "full": Config(frames=16, steps=1920, motions=(("large", 0.5), ("small", 0.05)), arms=TUNED_ARMS,
                   grid=GRID, n_checkpoints=8, protocols=("all_frames", "even_odd"), seeds=3),
}

#: lr multipliers chosen by ``tune``'s rule (the grid value with the highest mean validation
#: PSNR, camera 6, every frame) on tuning seeds 80000 and 80001, quick configuration, both
#: motion levels, every arm of TUNED_ARMS (2026-12-02; scores in docs/tuning/dynamic_gs_quick.json).
TUNED: dict[tuple[str, str], float] = {
    ("adam", "large"): 4.0, ("masked_adam", "large"): 2.0, ("sparse_adam", "large"): 4.0, ("sgd", "large"): 0.5, ("swa", "large"): 4.0, ("full", "large"): 8.0,
    ("adam", "small"): 2.0, ("masked_adam", "small"): 0.5, ("sparse_adam", "small"): 2.0, ("sgd", "small"): 0.125, ("swa", "small"): 4.0, ("full", "small"): 2.0,
}


def _mult(arm: str, motion: str) -> float:
    return TUNED.get((arm, motion), 1.0)


def run(config: Config, seed: int, progress) -> dict:
    """``out["motions"]``: the spec's protocol (train and test at every frame);
    ``out["even_odd"]`` (full): train on even frames, test on the held-out odd ones."""
    out = {"motions": {}}
    total = len(config.protocols) * len(config.motions) * len(config.arms) * config.steps
    progress.start(total, "dynamic_gs arms")
    for protocol in config.protocols:
        dest = out["motions"] if protocol == "all_frames" else out.setdefault(protocol, {})
        for motion, amp in config.motions:
            scene = make_scene(config, seed, amp)
            seq = sequence(config, seed, protocol)
            splats = {k: torch.nn.Parameter(v.clone()) for k, v in scene["init"].items()}
            scales = grad_scales(scene, splats, seq)
            dest[motion] = {arm: train_arm(config, scene, seq, arm, _mult(arm, motion), seed,
                                           sgd_scale=scales, progress=progress, protocol=protocol)
                            for arm in config.arms}
    out["n_rows"] = int(scene["init"]["means"].shape[0])
    return out


def tune(config: Config, seeds=(80000, 80001), motions=None, scores_out=None) -> dict[tuple[str, str], float]:
    """The lr multiplier of each (arm, motion) maximising mean validation PSNR on ``seeds``
    (protocol "all_frames", validation camera 6 at every frame); ``scores_out``, a dict, gets
    every (arm, motion, multiplier)'s validation PSNRs per seed."""
    best = {}
    for motion, amp in (config.motions if motions is None else motions):
        scores = {(a, m): [] for a in config.arms for m in config.grid}
        for s in seeds:
            scene = make_scene(config, s, amp)
            seq = sequence(config, s)
            splats = {k: torch.nn.Parameter(v.clone()) for k, v in scene["init"].items()}
            sc = grad_scales(scene, splats, seq)
            for a in config.arms:
                for m in config.grid:
                    r = train_arm(config, scene, seq, a, m, s, sgd_scale=sc, full_eval=False)
                    scores[(a, m)].append(r["val_psnr"])
        if scores_out is not None:
            scores_out.update({f"{a}|{motion}|{m:g}": [float(x) for x in v] for (a, m), v in scores.items()})
        for a in config.arms:
            best[(a, motion)] = max(config.grid, key=lambda m, a=a: float(np.mean(scores[(a, m)])))
    return best


def _vals(per_seed, motion, arm, key):
    return [s["motions"][motion][arm].get(key, np.nan) for s in per_seed]


def _ok(per_seed, motion, *arms):
    return all(motion in s["motions"] and all(a in s["motions"][motion] and not s["motions"][motion][a]["diverged"]
                                              for a in arms) for s in per_seed)


def judge(per_seed: list[dict]) -> list[Verdict]:
    c1, c2, c3, small, vs_sel, held = CLAIMS
    out = []
    big = "large"
    note_div = "an arm diverged on some seed; not judged"
    if _ok(per_seed, big, "adam", "full"):
        d = paired(_vals(per_seed, big, "full", "test_psnr"), _vals(per_seed, big, "adam", "test_psnr"))
        out.append(decide(c1, d, numbers={
            "adam_test_psnr": float(np.mean(_vals(per_seed, big, "adam", "test_psnr"))),
            "full_test_psnr": float(np.mean(_vals(per_seed, big, "full", "test_psnr")))}))
        g = paired(_vals(per_seed, big, "adam", "gap"), _vals(per_seed, big, "full", "gap"))
        out.append(decide(c2, g, numbers={"adam_gap": float(np.mean(_vals(per_seed, big, "adam", "gap"))),
                                          "full_gap": float(np.mean(_vals(per_seed, big, "full", "gap")))}))
        fp = paired(_vals(per_seed, big, "adam", "frame_pref"), _vals(per_seed, big, "full", "frame_pref"))
        out.append(decide(c3, fp))
    else:
        out += [decide(c, None, note=note_div) for c in (c1, c2, c3)]
    if _ok(per_seed, "small", "adam", "full"):
        d = paired(_vals(per_seed, "small", "full", "test_psnr"), _vals(per_seed, "small", "adam", "test_psnr"))
        out.append(decide(small, d))
    else:
        out.append(decide(small, None, note="small motion not run at this scale or an arm diverged"))
    if _ok(per_seed, big, "masked_adam", "full"):
        d = paired(_vals(per_seed, big, "full", "test_psnr"), _vals(per_seed, big, "masked_adam", "test_psnr"))
        out.append(decide(vs_sel, d))
    else:
        out.append(decide(vs_sel, None, note="MaskedAdam not run at this scale or an arm diverged"))
    eo = [s.get("even_odd", {}) for s in per_seed]
    if all(big in e and not e[big]["adam"]["diverged"] and not e[big]["full"]["diverged"] for e in eo):
        d = paired([e[big]["full"]["test_psnr"] for e in eo], [e[big]["adam"]["test_psnr"] for e in eo])
        out.append(decide(held, d))
    else:
        out.append(decide(held, None, note="the even/odd protocol is run at full scale only (or an arm diverged)"))
    return out


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []
    if not per_seed:
        return paths
    motions = list(per_seed[0]["motions"])
    arms = list(per_seed[0]["motions"][motions[0]])
    # test PSNR vs step
    fig, axes = new_figure(1, len(motions), figsize=(4.2 * len(motions), 3.2), squeeze=False)
    for ax, mo in zip(axes[0], motions, strict=True):
        for a in arms:
            cs = [s["motions"][mo][a].get("curve") for s in per_seed if not s["motions"][mo][a]["diverged"]]
            if cs:
                steps = [t for t, _ in cs[0]]
                ax.plot(steps, np.mean([[v for _, v in c] for c in cs], 0), marker="o", label=a)
        ax.set_title(f"{mo} motion")
        ax.set_xlabel("step")
        ax.set_ylabel("test PSNR (dB)")
    axes[0, 0].legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "test_psnr_vs_step.png"))
    # gap bars and per-frame curves
    fig, axes = new_figure(1, 2, figsize=(9, 3.2))
    w = 0.8 / max(len(arms), 1)
    for i, a in enumerate(arms):
        gaps = [np.nanmean([s["motions"][mo][a].get("gap", np.nan) for s in per_seed]) for mo in motions]
        axes[0].bar(np.arange(len(motions)) + i * w, gaps, width=w, label=a)
        pf = [s["motions"][motions[0]][a].get("per_frame") for s in per_seed
              if not s["motions"][motions[0]][a]["diverged"]]
        if pf:
            axes[1].plot(np.mean(pf, 0), marker=".", label=a)
    axes[0].set_xticks(np.arange(len(motions)) + 0.4 - w / 2, motions)
    axes[0].set_ylabel("train - test PSNR (dB)")
    axes[1].set_xlabel("frame")
    axes[1].set_ylabel(f"test PSNR, {motions[0]} motion")
    axes[0].legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "gap_and_per_frame.png"))
    # visible fraction
    fig, ax = new_figure(figsize=(4.5, 3))
    for a in arms:
        tr = per_seed[0]["motions"][motions[0]][a].get("vis_trace")
        if tr:
            ax.plot(tr, label=a)
    ax.set_xlabel("step (subsampled)")
    ax.set_ylabel("fraction of rows visible")
    paths.append(save_figure(fig, outdir / "visible_fraction.png"))
    # renders
    r0 = per_seed[0]["motions"][motions[0]]
    shown = [a for a in arms if r0[a].get("render") is not None]
    if shown:
        fig, axes = new_figure(1, len(shown), figsize=(2.2 * len(shown), 2.4), squeeze=False)
        for ax, a in zip(axes[0], shown, strict=True):
            ax.imshow(np.asarray(r0[a]["render"], dtype=np.uint8))
            ax.set_title(a, fontsize=8)
            ax.axis("off")
        paths.append(save_figure(fig, outdir / "renders_test_view.png"))
    return paths
