"""Train a named tiny checkpoint from scratch: ``python -m optzoo.tinylm.train NAME``.

Deterministic (fixed seed, one torch thread, batches drawn from ``derive_seed(seed, step)``),
shows progress, and writes into the checkpoint folder (default: the package's own
``checkpoints/NAME``): ``model.safetensors`` (fp16), ``config.json``, the tokenizer files and
``manifest.json`` (recipe, command, steps, final loss, loss trajectory, evaluation numbers,
sha256 of the weights, package versions).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from optzoo._core.validation import check_choice, check_int

__all__ = ["RECIPES", "Recipe", "train", "main", "CHECKPOINT_DIR"]

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"


@dataclass(frozen=True)
class Recipe:
    """How one named checkpoint is trained (the whole recipe is written into its manifest)."""

    task: str  # "icl" or "toy"
    arch: str = "gpt2"
    model: dict = field(default_factory=dict)
    steps: int = 1000
    batch_size: int = 64
    lr: float = 1e-3
    warmup: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    seed: int = 0
    data: dict = field(default_factory=dict)
    description: str = ""


RECIPES: dict[str, Recipe] = {
    "icl": Recipe(
        task="icl",
        model=dict(n_layer=3, n_embd=64, n_head=4, n_positions=128),
        steps=3000, batch_size=64, lr=2e-3, warmup=100,
        data=dict(n_features=6, k_min=1, k_max=16, layout="fused"),
        description="GPT-2 pre-trained on the single-feature ICL family (optzoo.tinylm.icl), "
        "fused layout, k drawn in [1, 16] per step.",
    ),
    "toy": Recipe(
        task="toy",
        model=dict(n_layer=2, n_embd=64, n_head=2, n_positions=32),
        steps=600, batch_size=64, lr=3e-3, warmup=50,
        data=dict(good_fraction=0.7, n_bad_substitutions=3),
        description="GPT-2 SFT on the toy language (70/30 teacher / corrupted responses), "
        "the reference model of reward_calibration.",
    ),
}


def _task_module(task: str):
    if task == "icl":
        from optzoo.tinylm import icl_train

        return icl_train
    from optzoo.tinylm import toy_train

    return toy_train


def _lr_at(step: int, recipe: Recipe) -> float:
    if step < recipe.warmup:
        return recipe.lr * (step + 1) / recipe.warmup
    frac = (step - recipe.warmup) / max(1, recipe.steps - recipe.warmup)
    return recipe.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


def train(name: str, *, steps: int | None = None, stop_at: int | None = None,
          out: str | Path | None = None, progress: bool = True, eval_every: int = 0,
          log=None) -> dict:
    """Train checkpoint ``name`` and return its manifest.

    ``steps`` replaces the recipe's schedule length; ``stop_at`` runs the same schedule but
    stops after that many steps (a snapshot of the longer run, bit-identical to it).
    With ``out=None`` nothing is written (used by the pinned-trajectory test).
    """
    import torch

    name = check_choice("name", name, sorted(RECIPES), owner="train")
    recipe = RECIPES[name]
    schedule = recipe.steps if steps is None else check_int("steps", steps, owner="train", low=1)
    total = schedule if stop_at is None else check_int("stop_at", stop_at, owner="train", low=1,
                                                       high=schedule)
    if schedule != recipe.steps:
        recipe = dataclasses.replace(recipe, steps=schedule)
    torch.set_num_threads(1)
    task = _task_module(recipe.task)
    model, tokenizer = task.build(recipe)
    opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr, betas=(0.9, 0.98),
                            weight_decay=recipe.weight_decay)
    model.train()
    losses: list[float] = []
    evals: list[dict] = []
    t0 = time.perf_counter()
    bar = _bar(total, name) if progress else None
    for step in range(total):
        for g in opt.param_groups:
            g["lr"] = _lr_at(step, recipe)
        loss = task.loss(model, recipe, step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.grad_clip)
        opt.step()
        losses.append(float(loss.detach()))
        if bar is not None:
            bar(step + 1, losses[-1])
        if eval_every and (step + 1) % eval_every == 0:
            model.eval()
            ev = task.quick_eval(model, recipe)
            model.train()
            ev["step"] = step + 1
            ev["elapsed_s"] = round(time.perf_counter() - t0, 1)
            evals.append(ev)
            if log:
                log(ev)
            if out is not None:
                _save(model, tokenizer, recipe, name, losses, evals, out, partial=True)
    model.eval()
    manifest = {
        "name": name,
        "recipe": dataclasses.asdict(recipe),
        "steps": total,
        "schedule_steps": schedule,
        "final_loss": float(sum(losses[-50:]) / len(losses[-50:])),
        "loss_trajectory_first": losses[:40],
        "loss_every_100": losses[::100],
        "train_seconds": round(time.perf_counter() - t0, 1),
        "quick_evals": evals,
    }
    if out is not None:
        manifest = _save(model, tokenizer, recipe, name, losses, evals, out, partial=False,
                         base=manifest)
    return manifest


def _save(model, tokenizer, recipe, name, losses, evals, out, *, partial, base=None):
    import torch

    from optzoo._core.io import atomic_write_json, environment_manifest

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    half = _copy_half(model)
    half.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    sha = hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest()
    manifest = dict(base or {"name": name, "recipe": dataclasses.asdict(recipe),
                             "steps": len(losses), "quick_evals": evals,
                             "loss_trajectory_first": losses[:40]})
    manifest["partial"] = partial
    manifest["final_loss"] = float(sum(losses[-50:]) / max(1, len(losses[-50:])))
    manifest["command"] = "python -m optzoo.tinylm.train " + name + (
        f" --stop-at {len(losses)}" if len(losses) != recipe.steps else "")
    manifest["sha256"] = {"model.safetensors": sha}
    manifest["parameters"] = int(sum(p.numel() for p in model.parameters()))
    manifest["dtype"] = "float16"
    env = environment_manifest()
    manifest["versions"] = dict(env["packages"], python=env["python"],
                                **_extra_versions())
    manifest["cpu"] = env["cpu"]
    manifest["torch_threads"] = torch.get_num_threads()
    if not partial:
        manifest["eval"] = _task_module(recipe.task).full_eval_from_disk(out, recipe)
    atomic_write_json(out / "manifest.json", manifest)
    return manifest


def _extra_versions() -> dict:
    from importlib import metadata

    out = {}
    for pkg in ("tokenizers", "safetensors"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _copy_half(model):
    import copy

    return copy.deepcopy(model).half()


def _bar(total: int, name: str):
    """A minimal stderr progress line (rich bars misbehave under nohup)."""
    t0 = time.perf_counter()
    every = max(1, total // 200)

    def update(step: int, loss: float) -> None:
        if step % every and step != total:
            return
        rate = step / max(1e-9, time.perf_counter() - t0)
        eta = (total - step) / max(rate, 1e-9)
        sys.stderr.write(f"\r[{name}] step {step}/{total} loss {loss:.4f} "
                         f"{rate:.2f} step/s eta {eta / 60:.1f} min ")
        if step == total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return update


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m optzoo.tinylm.train", description=__doc__)
    parser.add_argument("name", choices=sorted(RECIPES))
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps")
    parser.add_argument("--stop-at", type=int, default=None,
                        help="stop after N steps of the (unchanged) schedule: a snapshot")
    parser.add_argument("--out", default=None,
                        help="output folder (default: the package's checkpoints/NAME)")
    parser.add_argument("--eval-every", type=int, default=0,
                        help="quick evaluation (and partial save) every N steps")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else CHECKPOINT_DIR / args.name

    def log(ev):
        print("\n" + " ".join(f"{k}={v}" for k, v in ev.items()), flush=True)

    manifest = train(args.name, steps=args.steps, stop_at=args.stop_at, out=out,
                     eval_every=args.eval_every, log=log)
    print(f"wrote {out} (final loss {manifest['final_loss']:.4f}, "
          f"sha256 {manifest['sha256']['model.safetensors'][:12]}...)")
    print("eval:", manifest.get("eval"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
