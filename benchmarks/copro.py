"""``python -m benchmarks copro``: CoPro E-step throughput (groups/s, batched torch projected
Newton) against a per-group scipy L-BFGS-B solve of the same bounded dual, the op-amp model's
evaluations/s, and exact 3-D hypervolume time of moocore against pymoo's HV. Ratios printed."""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np


def _scipy_groups(est, lambda_max):
    """Solve each group's dual with scipy L-BFGS-B (same psi, targets, box); returns q [B, G]."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    psi = np.stack([est.feasible.numpy(), est.win_rate.numpy(), -est.ambiguity.numpy()], -1)
    tg = est.targets.numpy()
    b = np.nan_to_num(np.stack([tg[:, 0], tg[:, 1], -tg[:, 2]], -1))
    act = est.diagnostics["active"].numpy()
    out = np.empty(psi.shape[:2])
    for i in range(psi.shape[0]):
        P, bi = psi[i], b[i]

        def f(lam, P=P, bi=bi):
            z = P @ lam
            q = np.exp(z - logsumexp(z))
            return logsumexp(z) - np.log(P.shape[0]) - lam @ bi, q @ P - bi

        bounds = [(0.0, lambda_max if a else 0.0) for a in act[i]]
        r = minimize(f, np.zeros(3), jac=True, method="L-BFGS-B", bounds=bounds,
                     options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 500})
        z = P @ r.x
        out[i] = np.exp(z - logsumexp(z))
    return out


def main(argv=None) -> int:
    import torch

    from optzoo._core.io import atomic_write_json, environment_manifest
    from optzoo.copro import copro_e_step
    from optzoo.copro.opamp import decode_levels, opamp_evaluate

    ap = argparse.ArgumentParser(prog="python -m benchmarks copro")
    ap.add_argument("--groups", type=int, default=4096)
    ap.add_argument("--G", type=int, default=16)
    ap.add_argument("--scipy-groups", type=int, default=256)
    ap.add_argument("--evals", type=int, default=200_000)
    a = ap.parse_args(argv)
    gen = torch.Generator().manual_seed(0)
    F = torch.randn(a.groups, a.G, 3, generator=gen, dtype=torch.float64)
    g = torch.randn(a.groups, a.G, 2, generator=gen, dtype=torch.float64) + 0.8
    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copro_e_step(F[:8], g[:8])
        t = time.perf_counter()
        est = copro_e_step(F, g)
        wall = time.perf_counter() - t
        rows["copro_e_step_torch"] = {"groups": a.groups, "wall_s": wall, "groups_per_s": a.groups / wall}
        sub = copro_e_step(F[:a.scipy_groups], g[:a.scipy_groups])
    t = time.perf_counter()
    qs = _scipy_groups(sub, 50.0)
    wall = time.perf_counter() - t
    rows["scipy_lbfgsb_per_group"] = {"groups": a.scipy_groups, "wall_s": wall,
                                      "groups_per_s": a.scipy_groups / wall,
                                      "max_abs_q_diff": float(np.abs(qs - sub.q.numpy()).max())}
    if torch.cuda.is_available():
        Fc, gc = F.cuda(), g.cuda()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            copro_e_step(Fc[:8], gc[:8])
            torch.cuda.synchronize()
            t = time.perf_counter()
            ec = copro_e_step(Fc, gc)
            torch.cuda.synchronize()
            wall = time.perf_counter() - t
        rows["copro_e_step_cuda"] = {"groups_per_s": a.groups / wall,
                                     "max_abs_q_diff_vs_cpu": float((ec.q.cpu() - est.q).abs().max())}
    x = decode_levels(np.random.default_rng(0).integers(0, 16, (a.evals, 7)))
    t = time.perf_counter()
    opamp_evaluate(x)
    wall = time.perf_counter() - t
    rows["opamp_evaluate"] = {"evals": a.evals, "evals_per_s": a.evals / wall}
    import moocore
    from pymoo.indicators.hv import HV

    P = np.random.default_rng(1).random((400, 3))
    ref = np.full(3, 1.1)
    hv = HV(ref_point=ref)
    h1, h2 = moocore.hypervolume(P, ref=ref), hv(P)  # warm-up (first calls load libraries)
    t = time.process_time()
    for _ in range(200):
        moocore.hypervolume(P, ref=ref)
    t1 = (time.process_time() - t) / 200
    t = time.process_time()
    for _ in range(200):
        hv(P)
    t2 = (time.process_time() - t) / 200
    rows["hv_moocore_vs_pymoo"] = {"points": 400, "moocore_cpu_s": t1, "pymoo_cpu_s": t2,
                                   "same_value": bool(abs(h1 - h2) < 1e-9)}
    for k, v in rows.items():
        print(f"{k:26s} {v}")
    ratio = rows["copro_e_step_torch"]["groups_per_s"] / rows["scipy_lbfgsb_per_group"]["groups_per_s"]
    print(f"E-step groups/s ratio batched torch / per-group scipy: {ratio:.1f} "
          "(shared 2-core machine: timings inflated by contention)")
    out = Path(__file__).parent / "results" / "copro.json"
    atomic_write_json(out, {"args": vars(a), "rows": rows, "groups_per_s_ratio": ratio,
                            "env": environment_manifest()})
    return 0
