"""markov_zo benchmark: oracle calls per second and time to a target accuracy, ZO-MLMC
(``markov_zo_minimize``, same-state pairs) against SPSA (noisyopt schedule; noisyopt itself
too when installed), on the sticky two-state quadratic, same oracle, budget and start.

``python -m benchmarks markov_zo [--d 20] [--tau 10] [--calls 40000]``.
Timings on a shared 2-core machine are inflated by contention.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np


def _oracle(d, tau, seed):
    from optzoo.markov_zo import MarkovOracle, StickyChain

    c = np.ones(d) / math.sqrt(d)
    ch = StickyChain.with_mixing_time([-1.0, 1.0], tau, seed=seed)
    return MarkovOracle(lambda X, Z: 0.5 * ((X - Z[:, None] * c) ** 2).sum(1), ch, dim=d,
                        vectorized=True)


def _time_to_target(hist, wall, target):
    errs = [float(np.sum(x ** 2)) for x in hist["x"]]
    calls = hist["calls"]
    for e, c in zip(errs, calls, strict=False):
        if e <= target:
            return c, wall * c / calls[-1]
    return None, None


def main(argv=None) -> int:
    from optzoo._core.io import atomic_write_json, environment_manifest
    from optzoo.markov_zo import markov_zo_minimize, spsa_minimize

    ap = argparse.ArgumentParser(prog="python -m benchmarks markov_zo")
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--tau", type=int, default=10)
    ap.add_argument("--calls", type=int, default=40_000)
    a = ap.parse_args(argv)
    d, x0 = a.d, np.ones(a.d)
    target = 1e-2 * d
    rows = {}
    orc = _oracle(d, a.tau, 0)
    t = time.perf_counter()
    r = markov_zo_minimize(orc, x0, mu=1.0, max_calls=a.calls, record_every=20, seed=0)
    wall = time.perf_counter() - t
    rows["zo_mlmc"] = {"wall_s": wall, "calls": r.nfev, "calls_per_s": r.nfev / wall,
                       "final_err": float(np.sum(r.x ** 2))}
    rows["zo_mlmc"]["calls_to_target"], rows["zo_mlmc"]["time_to_target_s"] = _time_to_target(
        r.history, wall, target)
    orc = _oracle(d, a.tau, 0)
    t = time.perf_counter()
    r = spsa_minimize(orc, x0, max_iter=a.calls // 2, a=0.5, c=1.0, record_every=10, seed=0)
    wall = time.perf_counter() - t
    rows["spsa"] = {"wall_s": wall, "calls": r.nfev, "calls_per_s": r.nfev / wall,
                    "final_err": float(np.sum(r.x ** 2))}
    rows["spsa"]["calls_to_target"], rows["spsa"]["time_to_target_s"] = _time_to_target(
        r.history, wall, target)
    try:
        from optzoo.markov_zo import noisyopt_spsa_minimize

        orc = _oracle(d, a.tau, 0)
        t = time.perf_counter()
        r = noisyopt_spsa_minimize(orc, x0, niter=a.calls // 2, a=0.5, c=1.0, seed=0)
        wall = time.perf_counter() - t
        rows["noisyopt_spsa"] = {"wall_s": wall, "calls": r.nfev, "calls_per_s": r.nfev / wall,
                                 "final_err": float(np.sum(r.x ** 2))}
    except ImportError:
        rows["noisyopt_spsa"] = "noisyopt not installed"
    for k, v in rows.items():
        print(f"{k:14s} {v}")
    ratio = rows["zo_mlmc"]["calls_per_s"] / rows["spsa"]["calls_per_s"]
    print(f"oracle calls/s ratio ZO-MLMC / SPSA: {ratio:.2f} (target err <= {target:g}; "
          f"shared 2-core machine, timings inflated by contention)")
    out = Path(__file__).parent / "results" / "markov_zo.json"
    atomic_write_json(out, {"args": vars(a), "target": target, "rows": rows,
                            "calls_per_s_ratio": ratio, "env": environment_manifest()})
    return 0
