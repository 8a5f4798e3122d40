"""comparison benchmark: (1) comparisons per second of the vectorized oracle path (one batched
call of k pairs) against a Python loop of single comparisons, same function, same pairs;
(2) comparisons to the first eps-stationary iterate, CMP-TR and CMP-NGD against CMA-ES (pycma,
ranks from the same counting oracle) on the spec's ramp and separable-cosine families.

``python -m benchmarks comparison [--n 8] [--pairs 20000] [--eps 0.1]``.
Timings on a shared 2-core machine are inflated by contention.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    from optzoo._core.io import atomic_write_json, environment_manifest
    from optzoo.comparison import ComparisonOracle, cma_minimize, comparison_minimize
    from optzoo.comparison.repro.problems import cosine, ramp

    ap = argparse.ArgumentParser(prog="python -m benchmarks comparison")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--pairs", type=int, default=20_000)
    ap.add_argument("--eps", type=float, default=0.1)
    a = ap.parse_args(argv)
    p = ramp(a.n, a.eps, 0)
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(a.pairs, a.n)), rng.normal(size=(a.pairs, a.n))
    vec = ComparisonOracle(p.f, vectorized=True)
    t = time.perf_counter()
    rv = vec.greater(X, Y)
    t_vec = time.perf_counter() - t
    loop = ComparisonOracle(lambda x: float(p.f(x)[0]))
    t = time.perf_counter()
    rl = np.array([loop(x, y) for x, y in zip(X, Y, strict=True)])
    t_loop = time.perf_counter() - t
    speed = {"vectorized_per_s": a.pairs / t_vec, "loop_per_s": a.pairs / t_loop,
             "ratio": t_loop / t_vec, "agree": bool(np.array_equal(rv, rl))}
    print(f"oracle: vectorized {speed['vectorized_per_s']:.3g} comparisons/s, Python loop "
          f"{speed['loop_per_s']:.3g}/s: ratio {speed['ratio']:.1f}x (answers agree: {speed['agree']})")
    counts = {}
    for fam, make in (("ramp", ramp), ("cosine", cosine)):
        prob = make(a.n, a.eps, 0)
        hit = lambda x, prob=prob: bool(prob.grad_norm(x)[0] <= a.eps)  # noqa: E731
        row = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for m in ("tr", "ngd"):
                orc = ComparisonOracle(prob.f, vectorized=True)
                t = time.perf_counter()
                r = comparison_minimize(orc, prob.x0, eps=a.eps, method=m, L=prob.L, rho=prob.rho,
                                        delta_f=prob.delta_f, callback=hit, stop="plan")
                row[f"cmp-{m}"] = {"comparisons": r.ncomparisons, "visited": "callback" in r.message,
                                   "wall_s": time.perf_counter() - t}
            orc = ComparisonOracle(prob.f, vectorized=True)
            t = time.perf_counter()
            r = cma_minimize(orc, prob.x0, sigma0=0.3 * float(np.linalg.norm(prob.x0)), max_iter=20_000,
                             seed=0, callback=hit)
            row["cma-es"] = {"comparisons": r.ncomparisons, "visited": "callback" in r.message,
                             "wall_s": time.perf_counter() - t}
        row["tr_over_cma"] = row["cmp-tr"]["comparisons"] / row["cma-es"]["comparisons"]
        counts[fam] = row
        print(f"{fam:7s} n={a.n} eps={a.eps:g}: " + ", ".join(
            f"{k} {v['comparisons']} comparisons" for k, v in row.items() if isinstance(v, dict))
            + f"; CMP-TR / CMA-ES = {row['tr_over_cma']:.3g}")
    out = Path(__file__).parent / "results" / "comparison.json"
    atomic_write_json(out, {"args": vars(a), "oracle_speed": speed, "to_stationarity": counts,
                            "env": environment_manifest()})
    return 0
