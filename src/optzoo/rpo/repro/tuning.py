"""Actor learning rates of the RPO reproduction: one grid for every tuned arm, pilot seeds only.

RPO, SHAC and naive reuse are each run at every rate of one shared grid, on the pilot seeds
(>= 90000, never a verdict seed), at quick's configuration (the clipped pendulum, quick's
budget, networks and critic), with the same evaluation protocol as a unit. An arm's rate is the
grid point with the highest mean evaluation-return AUC over the pilot seeds, ties to the first
in grid order (:func:`optzoo.repro.tuning.select`). When any arm's choice is an end of the
grid, the grid is widened once at that end by one point, for every arm, and every arm is
chosen again on the wider grid. ``rpo_m1`` (the reuse control) is not tuned: it is RPO with the
reuse removed and nothing else changed, so it runs RPO's rate (no choice is recorded for it, so
the report's tuning table compares the tuned arms only); its rows in the file show its score
there. The choices are frozen in ``LR`` and ``docs/tuning/rpo_quick.json``, made by (one
thread per worker process, set by the caller as the runner would)::

    OMP_NUM_THREADS=1 python -m optzoo.rpo.repro.tuning --jobs 2 --out docs/tuning/rpo_quick.json
"""

from __future__ import annotations

import argparse
import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

__all__ = ["GRID", "TUNED", "TUNE_SEEDS", "WIDEN", "choices", "tune", "widened"]

#: one grid for every tuned arm (ratio about 3), spanning the rates the earlier pilots found
#: useful for any arm (RPO 1e-2, SHAC 3e-2, naive 3e-3 / 1e-2) by a factor of 3 or more each way
GRID = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
#: the one point added below or above GRID, for every arm, when some arm chooses that end
WIDEN = (3e-4, 3e-1)
TUNE_SEEDS = (90000, 90001)
TUNED = ("rpo", "shac", "naive")
_ENV = "pendulum"


def _one(args) -> dict:
    arm, lr, seed = args
    from optzoo._core.rng import derive_seed
    from optzoo.rpo.repro import SCALES, _env, _run_arm

    cfg = SCALES["quick"]
    out = _run_arm(arm, _ENV, cfg, seed, _env(_ENV, cfg.eval_envs), derive_seed(seed, "eval", _ENV) % (2 ** 31),
                   lr=lr)
    return {"arm": arm, "lr": lr, "seed": seed, "auc": float(np.mean(out["returns"])),
            "final": float(out["returns"][-1]), "status": out["status"], "cpu_s": float(out["cpu_s"])}


def tune(grid=GRID, *, seeds=TUNE_SEEDS, arms=TUNED, jobs: int = 1, done=()) -> list[dict]:
    """One row per (arm, rate, seed) of ``grid`` x ``seeds``; rows in ``done`` are kept and not
    rerun."""
    rows = [r for r in done if r["arm"] in arms and r["lr"] in grid and r["seed"] in seeds]
    have = {(r["arm"], r["lr"], r["seed"]) for r in rows}
    todo = [(a, lr, s) for a in arms for lr in grid for s in seeds if (a, lr, s) not in have]
    with ProcessPoolExecutor(jobs) as ex:
        return rows + list(ex.map(_one, todo))


def choices(rows: list[dict], grid=GRID, *, seeds=TUNE_SEEDS, arms=TUNED) -> list:
    """Each tuned arm's :class:`~optzoo.repro.tuning.Choice` (best mean AUC, ties to the first)
    on ``grid``."""
    from optzoo.repro.tuning import select
    from optzoo.rpo.repro import SCALES

    cfg = SCALES["quick"]
    budget = cfg.num_envs * cfg.horizon * cfg.iterations
    table = {(r["arm"], r["lr"], r["seed"]): r["auc"] for r in rows}

    return [select(grid, np.array([[table[(a, lr, s)] for s in seeds] for lr in grid]), seeds=tuple(seeds),
                   stream="pilot seeds (quick configuration, clipped pendulum)", direction="max", arm=a,
                   knob="actor_lr", eval_budget=budget, budget_unit="env steps", warn=False,
                   meta={"score": "mean evaluation-return AUC", "note": "one grid for rpo, shac and naive"})
            for a in arms]


def widened(chosen: list, grid=GRID) -> tuple:
    """``grid`` with WIDEN's point added at each end that some tuned arm chose (else ``grid``)."""
    lo = any(c.value == grid[0] for c in chosen if c.arm in TUNED)
    hi = any(c.value == grid[-1] for c in chosen if c.arm in TUNED)
    return (WIDEN[0],) * lo + tuple(grid) + (WIDEN[1],) * hi


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    from optzoo.repro.tuning import save_choices

    out = Path(a.out)
    done = json.loads(out.read_text()).get("rows", []) if out.exists() else []
    rows = tune(GRID, jobs=a.jobs, done=done)
    grid = widened(choices(rows, GRID))
    if grid != GRID:  # widened once, for every arm
        rows = tune(grid, jobs=a.jobs, done=rows)
    chosen = choices(rows, grid)
    rpo = next(c.value for c in chosen if c.arm == "rpo")
    rows = [r for r in rows if r["arm"] != "rpo_m1"] + tune((rpo,), arms=("rpo_m1",), jobs=a.jobs, done=done)
    rows.sort(key=lambda r: (r["arm"], r["lr"], r["seed"]))
    out.write_text(json.dumps({"scale": "quick", "env": _ENV, "grid": list(grid), "seeds": list(TUNE_SEEDS),
                               "rule": "highest mean AUC over the pilot seeds, ties to the first rate; a grid "
                                       "end chosen widens the grid once at that end for every arm",
                               "rows": rows}, indent=1) + "\n")
    save_choices(out, chosen)
    for c in chosen:
        print(f"{c.arm:7s} actor_lr {c.value:g}  mean AUC {c.scores[c.index]:.0f}"
              + ("  (grid end)" if c.at_edge else ""))


if __name__ == "__main__":
    main()
