"""The experiments of the DP-C4 reproduction: one function per task, plain metrics out.

Every method gets the same (z, q, T) from one calibration by Opacus' RDP accountant (so the
same epsilon), the same data, the same Poisson batches within a stream and the same tuning
grid. Task A and the steps sweep select (lr, C) on an independent tuning stream (own Poisson
batches and noise) and report a second, evaluation stream; Task B selects on a validation
split. Tuning on private data is not privatised (stated in the docs).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


def derive(seed: int, *keys) -> int:
    from optzoo._core.rng import derive_seed

    return derive_seed(seed, *keys)


@lru_cache(maxsize=256)
def noise_multiplier(eps: float, delta: float, steps: int, q: float) -> float:
    """The constant z that makes ``steps`` sampled Gaussian releases compose to ``eps``."""
    from optzoo.dpc4.accounting import calibrate

    return float(calibrate(eps, delta=delta, steps=steps, sample_rate=q)[0])


def toy(a: np.ndarray, steps: int, clip: float = 1.0) -> dict:
    """Noise-free full-batch clipped GD (DP-SGD with z = 0) against DP-C4 (both memories) on
    f_i(x) = (x - a_i)^2 / 2, with the clipped-GD fixed point found by bisection."""
    import torch

    from optzoo.dpc4.core import dpc4_init, dpc4_update, dpsgd_update

    at = torch.as_tensor(a, dtype=torch.float64)
    n = len(a)
    idx = torch.arange(n)
    xs = {k: torch.zeros(1, dtype=torch.float64) for k in ("dpsgd", "dpc4", "dpc4_ef")}
    st = {"dpc4": dpc4_init(1, memory="anchor", num_records=n), "dpc4_ef": dpc4_init(1, memory="ef")}
    trace = {k: [] for k in xs}
    for t in range(steps):
        for k in xs:
            g = (xs[k] - at)[:, None]
            if k == "dpsgd":
                u, _ = dpsgd_update(g, expected_batch_size=n, sample_rate=1.0, clip=clip, noise_multiplier=0.0)
            else:
                u, st[k], _ = dpc4_update(g, st[k], indices=idx, expected_batch_size=n, sample_rate=1.0,
                                          clip1=clip, clip2=clip, noise_multiplier=0.0,
                                          feedback_noise_multiplier=0.0)
            xs[k] = xs[k] - 0.5 * u
            if t % max(1, steps // 100) == 0:
                trace[k].append(float(xs[k]))
    # clipped GD's fixed point solves sum_i clip(x - a_i, C) = 0 (monotone in x): bisection
    lo, hi = float(a.min()), float(a.max())
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.clip(mid - a, -clip, clip).sum() < 0 else (lo, mid)
    return {"a": a.tolist(), "mean": float(a.mean()), "dpsgd_fixed_point": 0.5 * (lo + hi),
            **{k: float(v) for k, v in xs.items()}, "trace": trace}


def _grid(config):
    lr_g, c_g = np.meshgrid(config.grid_lr, config.grid_c, indexing="ij")
    return lr_g.ravel(), c_g.ravel()


def _select(tune_sub: np.ndarray) -> int:
    """Index of the best tuning-stream configuration (a diverged run counts as +inf)."""
    return int(np.argmin(np.where(np.isfinite(tune_sub), tune_sub, np.inf)))


def _rep_mean(x: np.ndarray, k: int) -> np.ndarray:
    """Mean over consecutive groups of ``k`` replicate rows (a diverged replicate gives inf)."""
    x = np.where(np.isfinite(x), x, np.inf).reshape(-1, k)
    return x.mean(-1)


def task_a(config, seed: int, progress) -> dict:
    """Strongly convex Task A: tuned DP-C4 against tuned DP-SGD per (problem, epsilon).

    Per cell: excess empirical risk f(x_T) - f*, test accuracy, the injected noise variance
    (update units, summed over steps), and the noise that reaches the iterate: the squared
    distance per coordinate between the evaluation run and the same run with the noise
    switched off (same Poisson batches, same selected configuration).
    """
    import torch

    from optzoo.dpc4.accounting import PrivacyLedger
    from optzoo.dpc4.repro.tasks import make_problem, objective, run_linear, test_metric

    lr_g, c_g = _grid(config)
    G, E = len(lr_g), len(config.eps)
    out = {}
    for name, q in config.problems:
        prob = make_problem(name, seed)
        zs = [noise_multiplier(e, config.delta, config.steps, q) for e in config.eps]
        cells = {}
        for e, z in zip(config.eps, zs, strict=True):  # epsilon recomputed from the noise used
            led = PrivacyLedger(delta=config.delta)
            led.history = [(z, q, config.steps)]
            cells[str(e)] = {"z": z, "eps_rdp": led.epsilon(), "eps_prv": led.cross_check_epsilon()}
        K, Ke = config.tune_reps, config.eval_reps
        rows_lr = torch.as_tensor(np.repeat(np.tile(lr_g, E), K))  # (eps, grid, rep) rows
        rows_c = torch.as_tensor(np.repeat(np.tile(c_g, E), K))
        rows_z = torch.as_tensor(np.repeat(zs, G * K))
        res = {"n": prob.n, "d": prob.X.shape[1], "q": q, "f_star": prob.f_star, "cells": cells}
        for m in config.methods:
            seed_t, seed_e = derive(seed, name, m, "tune"), derive(seed, name, m, "eval")
            w, _, _ = run_linear(prob, m, lr0=rows_lr, c0=rows_c, z=rows_z, steps=config.steps,
                                 sample_rate=q, seed=seed_t)
            tune = _rep_mean((objective(prob, w) - prob.f_star).numpy(), K).reshape(E, G)
            progress.advance()
            picks = [_select(tune[j]) for j in range(E)]
            lr_p = torch.as_tensor([lr_g[k] for k in picks], dtype=torch.float64)
            c_p = torch.as_tensor([c_g[k] for k in picks], dtype=torch.float64)
            # evaluation: the picked configuration, Ke noise replicates (shared Poisson batches)
            w, nv, _ = run_linear(prob, m, lr0=lr_p.repeat_interleave(Ke), c0=c_p.repeat_interleave(Ke),
                                  z=torch.as_tensor(np.repeat(zs, Ke)), steps=config.steps,
                                  sample_rate=q, seed=seed_e)
            progress.advance()
            # the same evaluation run with the noise off: same batches (the sampling stream
            # does not depend on the noise), so the difference is the noise reaching x_T
            w0, _, _ = run_linear(prob, m, lr0=lr_p, c0=c_p, z=torch.zeros(E), steps=config.steps,
                                  sample_rate=q, seed=seed_e)
            progress.advance()
            reach = ((w - w0.repeat_interleave(Ke, dim=0)) ** 2).mean(-1).numpy()
            sub = (objective(prob, w) - prob.f_star).numpy()
            acc = test_metric(prob, w).numpy()
            nv = nv.numpy()
            per_eps = {}
            for j, e in enumerate(config.eps):
                sl = slice(j * Ke, (j + 1) * Ke)
                per_eps[str(e)] = {
                    "sub": float(np.mean(sub[sl])), "noise_var": float(np.mean(nv[sl])),
                    "noise_reach": float(np.mean(reach[sl])), "test": float(np.mean(acc[sl])),
                    "lr": float(lr_p[j]), "c": float(c_p[j]), "grid_sub_tune": tune[j].tolist(),
                }
            res[m] = per_eps
        out[name] = res
    return out


def steps_sweep(config, seed: int, progress) -> dict:
    """Excess risk against T on ``sweep_problem``, (lr, C) tuned per T on the tuning stream.

    Two regimes per T: ``fixed_eps`` (z recalibrated so that every T is ``sweep_eps``-DP) and
    ``fixed_z`` (the z of the ``sweep_eps``-DP run at the largest T, for every T: epsilon grows
    with T up to ``sweep_eps``). Non-private SGD (lr tuned the same way) for reference.
    """
    import torch

    from optzoo.dpc4.repro.tasks import make_problem, objective, run_linear

    name, q, e = config.sweep_problem, config.sweep_q, config.sweep_eps
    prob = make_problem(name, seed)
    lr_g, c_g = _grid(config)
    G = len(lr_g)
    z_fixed = noise_multiplier(e, config.delta, max(config.sweep_steps), q)
    out = {"problem": name, "eps": e, "q": q, "steps": list(config.sweep_steps), "z_fixed": z_fixed, "z_eps": []}
    for T in config.sweep_steps:
        out["z_eps"].append(noise_multiplier(e, config.delta, T, q))
    regimes = ("fixed_eps", "fixed_z")
    K, Ke = config.tune_reps, config.eval_reps
    for m in ("dpsgd", "dpc4"):
        res = {r: [] for r in regimes}
        res.update({f"{r}_cfg": [] for r in regimes})
        for T, z_e in zip(config.sweep_steps, out["z_eps"], strict=True):
            w, _, _ = run_linear(prob, m, lr0=torch.as_tensor(np.repeat(np.tile(lr_g, 2), K)),
                                 c0=torch.as_tensor(np.repeat(np.tile(c_g, 2), K)),
                                 z=torch.as_tensor(np.repeat([z_e, z_fixed], G * K)), steps=T,
                                 sample_rate=q, seed=derive(seed, "sweep", m, T, "tune"))
            tune = _rep_mean((objective(prob, w) - prob.f_star).numpy(), K).reshape(2, G)
            progress.advance()
            picks = [_select(tune[j]) for j in range(2)]
            w, _, _ = run_linear(prob, m, lr0=torch.as_tensor(np.repeat([lr_g[k] for k in picks], Ke)),
                                 c0=torch.as_tensor(np.repeat([c_g[k] for k in picks], Ke)),
                                 z=torch.as_tensor(np.repeat([z_e, z_fixed], Ke)), steps=T,
                                 sample_rate=q, seed=derive(seed, "sweep", m, T, "eval"))
            sub = (objective(prob, w) - prob.f_star).numpy()
            progress.advance()
            for j, r in enumerate(regimes):
                res[r].append(float(np.mean(sub[j * Ke:(j + 1) * Ke])))
                res[f"{r}_cfg"].append([float(lr_g[picks[j]]), float(c_g[picks[j]])])
        out[m] = res
    sgd = []
    lr_s = torch.as_tensor(np.asarray(config.grid_lr, dtype=float))
    for T in config.sweep_steps:
        subs = {}
        for stream in ("tune", "eval"):
            w, _, _ = run_linear(prob, "sgd", lr0=lr_s, c0=torch.ones_like(lr_s), z=torch.zeros_like(lr_s),
                                 steps=T, sample_rate=q, seed=derive(seed, "sweep", "sgd", T, stream))
            subs[stream] = (objective(prob, w) - prob.f_star).numpy()
        sgd.append(float(subs["eval"][_select(subs["tune"])]))
        progress.advance()
    out["sgd"] = sgd
    return out


def task_b(config, seed: int, progress) -> dict:
    """Non-convex Task B: DP-C4 (our optimizer) against real Opacus DP-SGD on the digits MLP."""
    from optzoo.dpc4.repro import digits

    data = digits.load(seed)
    out = {}
    for e in config.b_eps:
        z = noise_multiplier(e, config.delta, config.b_steps, config.b_q)
        cell = {"z": z}
        for m, fn, key in (("opacus_dpsgd", digits.run_opacus, "clip"), ("dpc4", digits.run_dpc4, "c0")):
            best = None
            for lr in config.b_lr:
                for c in config.b_c:
                    r = fn(data, seed=seed, lr=lr, z=z, steps=config.b_steps, sample_rate=config.b_q,
                           delta=config.delta, **{key: c})
                    r.update(lr=lr, c=c)
                    if best is None or r["val_acc"] > best["val_acc"]:
                        best = r
                    progress.advance()
            cell[m] = best
        out[str(e)] = cell
    return out
