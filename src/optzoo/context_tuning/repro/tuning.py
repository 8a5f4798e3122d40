"""Learning-rate tuning for the Context Tuning reproduction: ``tune``-split tasks of pilot seeds.

Every trained method of a scale gets the same grid and the same tuning tasks (``split="tune"``
of seeds >= 90000, never a judged task or a verdict seed) at that scale's k and number of steps.
A method's rate is the grid point with the highest mean tuning accuracy, ties broken by the
mean label margin. ``ttt_ctkv`` is not tuned on its own: it runs TTT at TTT's rate, then CT-KV
at CT-KV's. The chosen rates are frozen in ``SCALES``; the records are in ``docs/tuning/``,
made by (one thread per worker process, set by the caller as the runner would; quick with
``--jobs 1``)::

    OMP_NUM_THREADS=1 python -m optzoo.context_tuning.repro.tuning --scale full --jobs 2 \
        --out docs/tuning/context_tuning_full.json
"""

from __future__ import annotations

import argparse
import json
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

__all__ = ["GRID", "TUNE_SEEDS", "choices", "choose", "frozen_choices", "tune"]

#: One grid for every method (ratio about 3): the paper's 1e-3 is for 200 steps, and random
#: soft prompts (PEFT prompt / prefix tuning) usually want larger rates than demonstration inits.
#: 3e-4 was added for every arm (issue 40, before any verdict run) when prefix tuning chose 1e-3,
#: then the grid's lowest point, on the cat3 family.
GRID = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
#: Pilot seeds whose ``tune`` split supplies the tuning tasks (one task each at the scale's k).
TUNE_SEEDS = (90000, 90001)


def _one(args) -> dict:
    scale, seed, lr, methods = args
    from optzoo.context_tuning.repro import SCALES
    from optzoo.context_tuning.repro.experiment import run_tasks
    from optzoo.repro.claim import NullProgress

    out = run_tasks(replace(SCALES[scale], tasks=1), seed, NullProgress(), split="tune", methods=methods,
                    lrs={m: lr for m in methods})
    return {"seed": seed, "lr": lr, "mean": out["mean"]}


def tune(scale: str, *, seeds=TUNE_SEEDS, grid=GRID, jobs: int = 1, done=(), methods=None) -> list[dict]:
    """Mean tuning accuracy, margin and losses of every tuned method (default: every trained
    arm of the scale but ttt_ctkv) at every grid point; rows in ``done`` (an earlier run's,
    same scale and family) are kept and their (seed, rate) not rerun."""
    from optzoo.context_tuning.repro import SCALES
    from optzoo.context_tuning.repro.experiment import TRAINED

    if methods is None:
        methods = tuple(m for m in SCALES[scale].methods if m in TRAINED and m != "ttt_ctkv")
    rows = [r for r in done if r["lr"] in grid and r["seed"] in seeds]
    have = {(r["seed"], r["lr"]) for r in rows}
    todo = [(scale, s, lr, methods) for lr in grid for s in seeds if (s, lr) not in have]
    with ProcessPoolExecutor(jobs) as ex:
        return rows + list(ex.map(_one, todo))


def choices(rows: list[dict], *, grid=GRID, seeds=TUNE_SEEDS, steps: int | None = None) -> list:
    """Per method, its rate as a :class:`~optzoo.repro.tuning.Choice` (one protocol for every
    room, :func:`optzoo.repro.tuning.select`): the best mean tuning accuracy, then the best mean
    label margin (lexicographic: the score handed to ``select`` is the rank of (accuracy,
    margin), both kept in ``meta``), ties to the first rate in grid order."""
    from optzoo.repro.tuning import select

    table: dict = {}
    for r in rows:
        for m, v in r["mean"].items():
            table.setdefault(m, {}).setdefault(r["lr"], []).append((v["acc"], v["margin"]))
    out = []
    for m, by_lr in table.items():
        pts = [lr for lr in grid if lr in by_lr] + [lr for lr in by_lr if lr not in grid]
        means = [tuple(float(x) for x in np.mean(np.array(by_lr[lr]), axis=0)) for lr in pts]
        order = sorted(set(means))
        out.append(select(pts, np.asarray([order.index(s) for s in means], dtype=float), stream="tune split",
                          seeds=tuple(seeds), direction="max", arm=m, knob="lr", eval_budget=steps,
                          budget_unit="steps" if steps is not None else "", warn=False,
                          meta={"score": "rank of (mean tuning accuracy, mean label margin)",
                                "acc": [a for a, _ in means], "margin": [g for _, g in means]}))
    return out


def choose(rows: list[dict]) -> dict:
    """{method: (rate, mean tuning accuracy, mean margin)}: best accuracy, then best margin
    (:func:`choices`)."""
    return {c.arm: (c.value, c.meta["acc"][c.index], c.meta["margin"][c.index]) for c in choices(rows)}


#: the frozen choices of the scales that run tuned rates (docs/tuning/, next to the package's
#: source tree; absent from an installed wheel, where no frozen choice is recorded): quick's, and
#: full's for the arms quick does not run (full runs quick's family, k and steps, so quick's
#: choices carry over to the arms both run)
FROZEN = Path(__file__).resolve().parents[4] / "docs" / "tuning" / "context_tuning_quick.json"
FROZEN_FULL = FROZEN.with_name("context_tuning_full.json")


def frozen_choices(config, paths=(FROZEN, FROZEN_FULL)) -> list:
    """The frozen choices that ``config`` runs: those of ``paths`` made at its family, k and steps
    whose rate is the one ``config.lrs`` gives the arm (an arm's first such choice; none for a
    file that is absent)."""
    from optzoo.repro.tuning import load_choices

    lrs = dict(config.lrs)
    out: dict = {}
    for path in map(Path, paths):
        if not path.exists():
            continue
        doc = json.loads(path.read_text())
        if (doc.get("family", "cat2"), doc.get("k"), doc.get("steps")) != (config.family, config.k, config.steps):
            continue
        for c in load_choices(path):
            if c.arm in config.methods and lrs.get(c.arm) == c.value:
                out.setdefault(c.arm, c)
    return list(out.values())


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", default="full")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument("--methods", default=None, help="comma-separated arms (default: every tuned arm)")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    from optzoo.context_tuning.repro import SCALES
    from optzoo.repro.tuning import save_choices

    family = SCALES[a.scale].family
    methods = tuple(a.methods.split(",")) if a.methods else None
    done = []
    if os.path.exists(a.out):  # resume: keep the finished (seed, rate) rows of the same scale and family
        with open(a.out) as f:
            old = json.load(f)
        same = old.get("scale") == a.scale and old.get("family", "cat2") == family
        done = old["rows"] if same and methods is None else []
    rows = tune(a.scale, jobs=a.jobs, done=done, methods=methods)
    best = choose(rows)
    with open(a.out, "w") as f:
        json.dump({"scale": a.scale, "family": family, "k": SCALES[a.scale].k, "steps": SCALES[a.scale].steps,
                   "grid": list(GRID), "seeds": list(TUNE_SEEDS), "rows": rows,
                   "chosen": {m: v[0] for m, v in best.items()}}, f, indent=1)
    save_choices(a.out, choices(rows, steps=SCALES[a.scale].steps))
    for m, (lr, acc, margin) in best.items():
        print(f"{m:12s} lr {lr:g}  tune accuracy {acc:.3f}  margin {margin:.3f}")


if __name__ == "__main__":
    main()
