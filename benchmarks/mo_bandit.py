"""D&L vs pymoo NSGA-II: evaluations per second and wall time to a hypervolume target.

``python -m benchmarks mo_bandit [--budget 5000] [--seed 0]`` on Bi-TSP-50 and Bi-KP-100 (the
issue's instances). Both methods get the same budget of distinct evaluations; every evaluation
is time-stamped, so "time to target" is the wall time until the archive of all evaluated points
first reaches the target HV ratio (90% of the lower of the two final HVs). Timings on a shared
2-core machine are inflated by contention.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np


def _timed(problem):
    stamps: list[float] = []
    inner = problem.evaluate

    def evaluate(x):
        stamps.append(time.perf_counter())
        return inner(x)

    return replace(problem, evaluate=evaluate), stamps


def main(argv=None) -> int:
    from optzoo.mo_bandit import bi_knapsack, bi_tsp, divide_and_learn
    from optzoo.mo_bandit.baselines import pymoo_baseline
    from optzoo.mo_bandit.metrics import hv_trace

    ap = argparse.ArgumentParser(prog="python -m benchmarks mo_bandit")
    ap.add_argument("--budget", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rows = {}
    for P0 in (bi_tsp(50, seed=args.seed), bi_knapsack(100, seed=args.seed)):
        ref, ideal = P0.ref_point * P0.sign, P0.ideal_point * P0.sign
        res = {}
        for name in ("D&L", "NSGA-II"):
            P, stamps = _timed(P0)
            t0 = time.perf_counter()
            if name == "D&L":
                F = divide_and_learn(P, args.budget, seed=args.seed, n_trace=2).F_all * P.sign
            else:
                F = pymoo_baseline(P, args.budget, algorithm="nsga2", seed=args.seed).evaluated()[1]
            wall = time.perf_counter() - t0
            cps = np.unique(np.linspace(1, len(F), 50).astype(int))
            res[name] = {"wall": wall, "nfev": len(F), "evals_per_s": len(F) / wall,
                         "cps": cps, "trace": hv_trace(F, ref, ideal, cps),
                         "t": np.array(stamps) - t0}
        target = 0.9 * min(r["trace"][-1] for r in res.values())
        for r in res.values():
            k = next(i for i, h in enumerate(r["trace"]) if h >= target)
            r["evals_to_target"] = int(r["cps"][k])
            r["time_to_target"] = float(r["t"][r["cps"][k] - 1])
            r["final_hv"] = r["trace"][-1]
        a, b = res["D&L"], res["NSGA-II"]
        print(f"{P0.name}: budget {args.budget}, HV target {target:.4f}")
        for name, r in res.items():
            print(f"  {name:8s} wall {r['wall']:7.2f} s  {r['evals_per_s']:8.0f} evals/s  final HV "
                  f"{r['final_hv']:.4f}  target after {r['evals_to_target']} evals / {r['time_to_target']:.2f} s")
        print(f"  ratio D&L/NSGA-II: wall {a['wall'] / b['wall']:.2f}x, time to target "
              f"{a['time_to_target'] / max(b['time_to_target'], 1e-9):.2f}x")
        rows[P0.name] = {k: {kk: vv for kk, vv in v.items() if kk not in ("cps", "trace", "t")}
                         for k, v in res.items()}
        rows[P0.name]["target"] = target
    out = Path(__file__).parent / "results" / "mo_bandit.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"budget": args.budget, "seed": args.seed, "results": rows}, indent=2))
    print(f"wrote {out}")
    return 0
