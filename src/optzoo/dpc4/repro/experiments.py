"""The experiments of the DP-C4 reproduction: one function per task, records out.

Every arm gets the same (z, q, T) from one calibration by Opacus' RDP accountant (so the same
epsilon), the same data, the same Poisson batches and noise draws within a stream (common
random numbers: the arms differ only in their update) and the same tuning grid. Task A and the
steps sweep select (lr, C) on an independent tuning stream (own Poisson batches and noise) and
report a second, evaluation stream; Task B selects on a validation split. Tuning on private
data is not privatised (stated in the docs).

Arms (Task A and the sweep run them through :func:`optzoo.dpc4.repro.tasks.run_linear`):

* ``dpsgd``: DP-SGD, constant threshold C (Opacus semantics; Task B: real Opacus);
* ``dpc4``: DP-C4 (anchor memory): shifted clipping clip(g_i - h_i, C_t) with the decaying
  threshold C_t = c0 / sqrt(1 + t), public mean-anchor memory;
* ``dpc4_noshift`` (control): the same decaying threshold and noise z C_t, without the shift
  (no anchors, no memory: clip(g_i, C_t)), i.e. DP-C4 with its bias correction removed;
* ``dpc4_const`` (control, Task A): DP-C4 with its anchors but a constant threshold (gamma =
  0), i.e. without the adaptive (decaying) threshold the noise reduction is credited to.

A run whose evaluation diverges is recorded with a NaN value, a ``diverged`` record and a
RuntimeWarning naming the arm; it is never raised nor replaced.
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np

from optzoo.repro.evidence import Record

#: run_linear method and threshold-decay exponent gamma of each Task A arm
LINEAR_ARMS = {"dpsgd": ("dpsgd", 0.5), "dpc4": ("dpc4", 0.5), "dpc4_noshift": ("decay", 0.5),
               "dpc4_const": ("dpc4", 0.0)}


def derive(seed: int, *keys) -> int:
    from optzoo._core.rng import derive_seed

    return derive_seed(seed, *keys)


@lru_cache(maxsize=256)
def noise_multiplier(eps: float, delta: float, steps: int, q: float) -> float:
    """The constant z that makes ``steps`` sampled Gaussian releases compose to ``eps``."""
    from optzoo.dpc4.accounting import calibrate

    return float(calibrate(eps, delta=delta, steps=steps, sample_rate=q)[0])


def finite(value: float, *, arm: str, where: str) -> float:
    """``value`` if finite; else NaN with a RuntimeWarning naming the arm (a diverged run)."""
    v = float(value)
    if math.isfinite(v):
        return v
    warnings.warn(f"dpc4: arm {arm!r} diverged ({where}: {v!r}); recorded as NaN", RuntimeWarning, stacklevel=2)
    return float("nan")


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


def toy_holds(t: dict) -> bool:
    return (abs(t["dpsgd"] - t["dpsgd_fixed_point"]) < 1e-6 and abs(t["dpc4"] - t["mean"]) < 1e-6
            and abs(t["dpc4_ef"] - t["mean"]) < 1e-6 and abs(t["dpsgd"] - t["mean"]) > 0.1)


def _grid(config):
    lr_g, c_g = np.meshgrid(config.grid_lr, config.grid_c, indexing="ij")
    return lr_g.ravel(), c_g.ravel()


def _choose(grid, scores, *, arm: str, context: str, knob: str = "(lr, c)", reps: int = 0,
            steps: int, direction: str = "min", stream: str = "tune"):
    """The tuning choice (:func:`optzoo.repro.tuning.select`) with this room's rule: a non-finite
    score (a diverged run) loses, ties go to the first point of the grid, and when every point
    diverged the first is used. ``reps``: noise replicates averaged into a score."""
    from optzoo.repro.tuning import select

    return select([tuple(map(float, g)) if isinstance(g, tuple) else float(g) for g in grid],
                  np.asarray(scores, dtype=float), stream=stream,
                  seeds=tuple(f"rep{k}" for k in range(reps)), arm=arm, knob=knob, context=context,
                  direction=direction, if_all_nonfinite="first", eval_budget=steps, budget_unit="steps")


def _rep_mean(x: np.ndarray, k: int) -> np.ndarray:
    """Mean over consecutive groups of ``k`` replicate rows (a diverged replicate gives inf)."""
    x = np.where(np.isfinite(x), x, np.inf).reshape(-1, k)
    return x.mean(-1)


def _edge(value: float, grid) -> float:
    """1 when the picked value is an end of a grid of >= 2 values (the grid may be too narrow)."""
    g = sorted(grid)
    return float(len(g) >= 2 and value in (g[0], g[-1]))


def task_a(config, seed: int, progress) -> list[Record]:
    """Strongly convex Task A: every arm tuned on the same grid, per (problem, epsilon).

    Per cell (part ``problem@eps=e``): excess empirical risk f(x_T) - f*, test accuracy, the
    injected noise variance (update units, summed over steps), and the noise that reaches the
    iterate: the squared distance per coordinate between the evaluation run and the same run
    with the noise switched off (same Poisson batches, same selected configuration).
    """
    import torch

    from optzoo.dpc4.accounting import PrivacyLedger
    from optzoo.dpc4.repro.tasks import make_problem, objective, run_linear, test_metric

    lr_g, c_g = _grid(config)
    G, E = len(lr_g), len(config.eps)
    recs: list[Record] = []
    for name, q in config.problems:
        prob = make_problem(name, seed)
        zs = [noise_multiplier(e, config.delta, config.steps, q) for e in config.eps]
        for e, z in zip(config.eps, zs, strict=True):  # epsilon recomputed from the noise used
            led = PrivacyLedger(delta=config.delta)
            led.history = [(z, q, config.steps)]
            ok = 0.98 * e <= led.epsilon() <= e + 1e-9 and led.cross_check_epsilon() <= led.epsilon() + 1e-9
            recs.append(Record("task_a", "accounting", f"{name}@eps={e}", "privacy_ok", float(ok)))
        K, Ke = config.tune_reps, config.eval_reps
        rows_lr = torch.as_tensor(np.repeat(np.tile(lr_g, E), K))  # (eps, grid, rep) rows
        rows_c = torch.as_tensor(np.repeat(np.tile(c_g, E), K))
        rows_z = torch.as_tensor(np.repeat(zs, G * K))
        seed_t, seed_e = derive(seed, name, "tune"), derive(seed, name, "eval")  # shared by all arms
        for arm in config.arms:
            m, gamma = LINEAR_ARMS[arm]
            w, _, _ = run_linear(prob, m, lr0=rows_lr, c0=rows_c, z=rows_z, steps=config.steps, gamma=gamma,
                                 sample_rate=q, seed=seed_t)
            tune = _rep_mean((objective(prob, w) - prob.f_star).numpy(), K).reshape(E, G)
            progress.advance()
            choices = [_choose(list(zip(lr_g, c_g, strict=True)), tune[j], arm=arm, context=f"{name}@eps={e}",
                               reps=K, steps=config.steps) for j, e in enumerate(config.eps)]
            picks = [ch.index for ch in choices]
            recs += [r for ch in choices for r in ch.to_records()]
            lr_p = torch.as_tensor([lr_g[k] for k in picks], dtype=torch.float64)
            c_p = torch.as_tensor([c_g[k] for k in picks], dtype=torch.float64)
            # evaluation: the picked configuration, Ke noise replicates (shared Poisson batches)
            w, nv, _ = run_linear(prob, m, lr0=lr_p.repeat_interleave(Ke), c0=c_p.repeat_interleave(Ke),
                                  z=torch.as_tensor(np.repeat(zs, Ke)), steps=config.steps, gamma=gamma,
                                  sample_rate=q, seed=seed_e)
            progress.advance()
            # the same evaluation run with the noise off: same batches (the sampling stream
            # does not depend on the noise), so the difference is the noise reaching x_T
            w0, _, _ = run_linear(prob, m, lr0=lr_p, c0=c_p, z=torch.zeros(E), steps=config.steps, gamma=gamma,
                                  sample_rate=q, seed=seed_e)
            progress.advance()
            reach = ((w - w0.repeat_interleave(Ke, dim=0)) ** 2).mean(-1).numpy()
            sub = (objective(prob, w) - prob.f_star).numpy()
            acc = test_metric(prob, w).numpy()
            nv = nv.numpy()
            for j, e in enumerate(config.eps):
                sl, part = slice(j * Ke, (j + 1) * Ke), f"{name}@eps={e}"
                where = f"Task A {part}"
                vals = {"excess_risk": finite(np.mean(sub[sl]), arm=arm, where=where),
                        "noise_reach": finite(np.mean(reach[sl]), arm=arm, where=where),
                        "noise_var": finite(np.mean(nv[sl]), arm=arm, where=where),
                        "test_acc": finite(np.mean(acc[sl]), arm=arm, where=where)}
                vals["diverged"] = float(any(math.isnan(v) for v in vals.values()))
                vals.update(lr=float(lr_p[j]), c=float(c_p[j]), lr_edge=_edge(float(lr_p[j]), config.grid_lr),
                            c_edge=_edge(float(c_p[j]), config.grid_c))
                recs += [Record(part, arm, "", k, v) for k, v in vals.items()]
    return recs


def steps_sweep(config, seed: int, progress) -> list[Record]:
    """Excess risk against T on ``sweep_problem``, (lr, C) tuned per T on the tuning stream.

    Two regimes per T: ``fixed_eps`` (z recalibrated so that every T is ``sweep_eps``-DP) and
    ``fixed_z`` (the z of the ``sweep_eps``-DP run at the largest T, for every T: epsilon grows
    with T up to ``sweep_eps``). Records ``excess_<regime>`` at every T (x = T) and
    ``excess_<regime>_tail`` at the two largest T. Non-private SGD (lr tuned the same way) for
    reference.
    """
    import torch

    from optzoo.dpc4.repro.tasks import make_problem, objective, run_linear

    name, q, e = config.sweep_problem, config.sweep_q, config.sweep_eps
    prob = make_problem(name, seed)
    lr_g, c_g = _grid(config)
    G = len(lr_g)
    steps = list(config.sweep_steps)
    z_fixed = noise_multiplier(e, config.delta, max(steps), q)
    z_eps = [noise_multiplier(e, config.delta, T, q) for T in steps]
    regimes = ("fixed_eps", "fixed_z")
    K, Ke = config.tune_reps, config.eval_reps
    recs: list[Record] = []

    def put(arm, regime, T, value):
        recs.append(Record(name, arm, f"T={T}", f"excess_{regime}", value, x=T))
        if T in steps[-2:]:
            recs.append(Record(name, arm, f"T={T}", f"excess_{regime}_tail", value, x=T))

    for arm in config.sweep_arms:
        m, gamma = LINEAR_ARMS[arm]
        for T, z_e in zip(steps, z_eps, strict=True):
            w, _, _ = run_linear(prob, m, lr0=torch.as_tensor(np.repeat(np.tile(lr_g, 2), K)),
                                 c0=torch.as_tensor(np.repeat(np.tile(c_g, 2), K)),
                                 z=torch.as_tensor(np.repeat([z_e, z_fixed], G * K)), steps=T, gamma=gamma,
                                 sample_rate=q, seed=derive(seed, "sweep", T, "tune"))
            tune = _rep_mean((objective(prob, w) - prob.f_star).numpy(), K).reshape(2, G)
            progress.advance()
            choices = [_choose(list(zip(lr_g, c_g, strict=True)), tune[j], arm=arm, context=f"T={T} {r}",
                               reps=K, steps=T) for j, r in enumerate(regimes)]
            picks = [ch.index for ch in choices]
            recs += [r for ch in choices for r in ch.to_records()]
            w, _, _ = run_linear(prob, m, lr0=torch.as_tensor(np.repeat([lr_g[k] for k in picks], Ke)),
                                 c0=torch.as_tensor(np.repeat([c_g[k] for k in picks], Ke)),
                                 z=torch.as_tensor(np.repeat([z_e, z_fixed], Ke)), steps=T, gamma=gamma,
                                 sample_rate=q, seed=derive(seed, "sweep", T, "eval"))
            sub = (objective(prob, w) - prob.f_star).numpy()
            progress.advance()
            for j, r in enumerate(regimes):
                put(arm, r, T, finite(np.mean(sub[j * Ke:(j + 1) * Ke]), arm=arm, where=f"sweep {r} T={T}"))
                recs.append(Record(name, arm, f"T={T}", f"lr_edge_{r}", _edge(float(lr_g[picks[j]]), config.grid_lr)))
    lr_s = torch.as_tensor(np.asarray(config.grid_lr, dtype=float))
    for T in steps:
        subs = {}
        for stream in ("tune", "eval"):
            w, _, _ = run_linear(prob, "sgd", lr0=lr_s, c0=torch.ones_like(lr_s), z=torch.zeros_like(lr_s),
                                 steps=T, sample_rate=q, seed=derive(seed, "sweep", T, stream))
            subs[stream] = (objective(prob, w) - prob.f_star).numpy()
        ch = _choose(config.grid_lr, subs["tune"], arm="sgd", knob="lr", context=f"T={T}", steps=T)
        recs.append(Record(name, "sgd", f"T={T}", "excess_nonprivate", float(subs["eval"][ch.index]), x=T))
        recs += ch.to_records()
        progress.advance()
    return recs


B_ARMS = ("opacus_dpsgd", "dpc4", "dpc4_noshift")


def task_b(config, seed: int, progress) -> list[Record]:
    """Non-convex Task B: DP-C4 (our optimizer), its no-shift control (our DPSGD with DP-C4's
    decaying threshold) and real Opacus DP-SGD on the digits MLP, the same (lr, C) grid each,
    selection on validation accuracy. Part ``eps=e``; test accuracy in points."""
    from optzoo.dpc4.repro import digits

    data = digits.load(seed)
    fns = {"opacus_dpsgd": digits.run_opacus, "dpc4": digits.run_dpc4, "dpc4_noshift": digits.run_noshift}
    recs: list[Record] = []
    for e in config.b_eps:
        z = noise_multiplier(e, config.delta, config.b_steps, config.b_q)
        part = f"eps={e}"
        eps_used = {}
        for arm in B_ARMS:
            runs = []
            for lr in config.b_lr:
                for c in config.b_c:
                    r = fns[arm](data, seed=seed, lr=lr, c=c, z=z, steps=config.b_steps, sample_rate=config.b_q,
                                 delta=config.delta)
                    r.update(lr=lr, c=c)
                    runs.append(r)
                    progress.advance()
            # the highest validation accuracy: ties to the first; a NaN run never beats a finite one
            choice = _choose([(r["lr"], r["c"]) for r in runs], [r["val_acc"] for r in runs], arm=arm,
                             context=part, steps=config.b_steps, direction="max", stream="validation")
            best = runs[choice.index]
            recs += choice.to_records()
            acc = finite(100.0 * best["test_acc"], arm=arm, where=f"Task B {part}")
            eps_used[arm] = best["epsilon"]
            recs += [Record(part, arm, "", "test_acc_pts", acc),
                     Record(part, arm, "", "diverged", float(math.isnan(acc))),
                     Record(part, arm, "", "lr", best["lr"]), Record(part, arm, "", "c", best["c"]),
                     Record(part, arm, "", "lr_edge", _edge(best["lr"], config.b_lr)),
                     Record(part, arm, "", "c_edge", _edge(best["c"], config.b_c))]
        a = eps_used["opacus_dpsgd"]
        ok = all(abs(a - v) <= 1e-6 * max(abs(v), 1e-12) and v <= e + 1e-9 for v in eps_used.values())
        recs.append(Record("task_b", "accounting", part, "privacy_ok", float(ok)))
    return recs


def task_b_sweep(config, seed: int, progress) -> list[Record]:
    """Non-convex "diminishing neighbourhood": at the fixed z of the ``b_sweep_eps``-DP run at
    the largest T, the squared norm of the full training gradient at the final iterate, per T
    (x = T), for DP-C4 and its no-shift control, (lr, C) fixed to the grid's middle."""
    from optzoo.dpc4.repro import digits

    if not config.b_sweep_steps:
        return []
    data = digits.load(seed)
    z = noise_multiplier(config.b_sweep_eps, config.delta, max(config.b_sweep_steps), config.b_q)
    lr = sorted(config.b_lr)[len(config.b_lr) // 2]
    c = sorted(config.b_c)[len(config.b_c) // 2]
    fns = {"dpc4": digits.run_dpc4, "dpc4_noshift": digits.run_noshift}
    recs = []
    for arm, fn in fns.items():
        for T in config.b_sweep_steps:
            r = fn(data, seed=seed, lr=lr, c=c, z=z, steps=T, sample_rate=config.b_q, delta=config.delta,
                   grad_norm=True)
            recs.append(Record("digits", arm, f"T={T}", "grad_norm_sq",
                               finite(r["grad_norm_sq"], arm=arm, where=f"Task B sweep T={T}"), x=T))
            progress.advance()
    return recs
