"""Benchmark: tracking-simulator throughput against a plain Python loop over torch.optim.

The anchor runs one ``torch.optim.SGD`` per (setting, seed) on a d-vector, with a Python loop
over steps (what a user would write). optzoo's ``simulate`` runs all settings and seeds in
one [S, G, d] tensor. Throughput = (settings x seeds x steps) / second; we print both and the
ratio. Timings on a shared machine are inflated by contention; the ratio is what matters.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

__all__ = ["main"]


def _anchor(env, lrs, betas, steps: int, seeds: int) -> float:
    import torch

    mu = env.curvatures
    g = torch.Generator().manual_seed(0)
    t0 = time.perf_counter()
    for lr, b in zip(lrs, betas, strict=False):
        for _ in range(seeds):
            p = torch.zeros(env.d, dtype=torch.float64, requires_grad=True)
            opt = torch.optim.SGD([p], lr=lr, momentum=b)
            star = torch.zeros(env.d, dtype=torch.float64)
            for _t in range(steps):
                with torch.no_grad():
                    p.grad = mu * (p - star) + torch.randn(env.d, generator=g, dtype=torch.float64)
                opt.step()
                star += 0.1 * torch.randn(env.d, generator=g, dtype=torch.float64)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    import torch

    from optzoo.momentum_tracking import DriftingQuadratic, simulate

    ap = argparse.ArgumentParser(prog="python -m benchmarks momentum_tracking")
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--anchor-steps", type=int, default=200, help="steps for the (slow) anchor loop")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    env = DriftingQuadratic(args.d, kappa=10.0, drift_scale=0.01, noise_var=1.0, seed=0)
    betas = [0.0, 0.5, 0.8, 0.9, 0.95, 0.99]
    lrs = [0.1] * len(betas)
    G = len(betas)
    t0 = time.perf_counter()
    simulate(env, lr=lrs, momentum=betas, steps=args.steps, seeds=args.seeds)
    t_sim = time.perf_counter() - t0
    t_anc = _anchor(env, lrs, betas, args.anchor_steps, args.seeds)
    thr_sim = G * args.seeds * args.steps / t_sim
    thr_anc = G * args.seeds * args.anchor_steps / t_anc
    res = {"d": args.d, "settings": G, "seeds": args.seeds, "steps_sim": args.steps,
           "steps_anchor": args.anchor_steps, "time_sim_s": t_sim, "time_anchor_s": t_anc,
           "throughput_sim": thr_sim, "throughput_anchor": thr_anc, "speedup": thr_sim / thr_anc,
           "note": "setting x seed x step per second; shared 2-core machine, timings inflated by contention"}
    print(f"optzoo simulate : {thr_sim:12.0f} setting-seed-steps/s ({t_sim:.2f} s for {G}x{args.seeds}x{args.steps})")
    print(f"torch.optim loop: {thr_anc:12.0f} setting-seed-steps/s ({t_anc:.2f} s for {G}x{args.seeds}x{args.anchor_steps})")
    print(f"ratio (optzoo / anchor): {thr_sim / thr_anc:.1f}x")
    out = Path(__file__).parent / "results" / "momentum_tracking.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    return 0
