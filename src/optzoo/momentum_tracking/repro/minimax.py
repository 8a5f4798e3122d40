"""The headline on its own kind of instance: minimax tracking risk under a gradient-variation budget.

The abstract's headline ("in drift-dominated regimes momentum is unavoidably worse") rests on
minimax lower bounds under gradient-variation constraints: a statement about the *worst*
instance of a class, not an average one. Here the class (INFERRED, the paper's was not
available) is every quadratic F_t(theta) = 1/2 (theta - theta*_t)^T A (theta - theta*_t) with
spectrum in [L/kappa, L] (L = 1), gradient noise N(0, s^2 I) and drift whose gradient
variation obeys the per-step budget sup_theta ||grad F_{t+1}(theta) - grad F_t(theta)||_inf =
||A delta_t||_inf <= G for every t.

For a linear method (SGD, heavy ball, Nesterov at fixed (lr, beta)) the error is linear in the
noise and the drift, so for every instance

    sup_drift E||e_T||^2 = E||noise part||^2 + sup_drift ||drift part||^2,

the second term is separable over eigen-directions, and per direction of curvature c it is
(G/c * sum_k |h_k(c)|)^2 (attained by delta_t = -(G/c) sign(h_{T-1-t})). So the worst instance of
the class is isotropic at the worst curvature c* in [L/kappa, L], searched on a stated grid
(``c_grid`` log-spaced points). Each method is tuned for its *own* worst case (inf over the
shared (lr, beta) grid of the sup over c and drift), on the exact theory; the evaluation seeds
then measure the tuned method on its worst instance with the simulator: the noise part as the
steady window MSE of a drift-free run (``inner_seeds`` runs), the drift part as the terminal
error of the noise-free run driven by that method's own worst-case drift (deterministic).

Regimes at one budget G = 1: drift-dominated (s^2 = ``mm_noise_drift``) and noise-dominated
(s^2 = ``mm_noise_noise`` * kappa^3, so that the tuned SGD's noise part exceeds its drift part at
every kappa; the drift part of SGD grows like G^2 kappa^4 / lr^2, its noise part like
lr s^2 kappa / 2).
"""

from __future__ import annotations

import functools

import numpy as np

from optzoo._core.rng import derive_seed

__all__ = ["MOMENTUM_FORMS", "minimax_records", "tune_minimax", "worst_case_risk"]

#: The momentum methods tuned against SGD (EMA is the torch form reparametrised after tuning).
MOMENTUM_FORMS = ("torch", "nesterov")
_POLE_MARGIN = 1e-3  # grid points with a pole within this of the unit circle are left out


def _gain(A: np.ndarray, b: np.ndarray, tol: float = 1e-10, block: int = 128) -> np.ndarray:
    """sum_k |h_k| of x' = A x + b delta, h_k = (A^k b)_0, for a batch of stable 2x2 systems
    (every entry of A's spectral radius < 1). Summed in blocks; a system leaves the batch once
    its remaining tail is below ``tol`` times its sum (bounded by |x| rho^k / (1 - rho))."""
    from optzoo.momentum_tracking.theory import _spectral_radius

    shape = A.shape[:-2]
    A = A.reshape(-1, 2, 2)
    x = np.broadcast_to(b, shape + (2,)).reshape(-1, 2).copy()
    rho = _spectral_radius(A)
    s = np.zeros(A.shape[0])
    idx = np.arange(A.shape[0])
    Ak = A
    while idx.size:
        for _ in range(block):
            s[idx] += np.abs(x[:, 0])
            x = np.einsum("nij,nj->ni", Ak, x)
        # the state's size bounds the tail up to a constant of the (non-normal) 2x2 system
        tail = np.abs(x).sum(1) * 64.0 / np.maximum(1.0 - rho[idx], 1e-12)
        keep = tail > tol * np.maximum(s[idx], 1e-300)
        idx, x, Ak = idx[keep], x[keep], Ak[keep]
    return s.reshape(shape)


def worst_case_risk(c, lr, beta, form: str, noise_var: float, budget: float) -> np.ndarray:
    """Per-coordinate sup over drift (||c delta_t||_inf <= budget) of the steady E e_T^2 at
    curvature ``c``: noise part + (budget/c * sum|h|)^2; ``inf`` where a pole is within
    1e-3 of the unit circle (unstable or nearly so). Broadcasts over c, lr, beta."""
    from optzoo.momentum_tracking.theory import _lyap_ee, _spectral_radius, system_matrices

    c, lr, beta = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (c, lr, beta)))
    A, bx, bd, _, _ = system_matrices(c, lr, beta, form)
    ok = _spectral_radius(A) < 1.0 - _POLE_MARGIN
    A = np.where(ok[..., None, None], A, 0.0)
    drift = (budget / c * _gain(A, bd)) ** 2
    noise = noise_var * _lyap_ee(A, bx) if noise_var > 0 else 0.0
    return np.where(ok, noise + drift, np.inf)


@functools.lru_cache(maxsize=64)
def tune_minimax(kappa: float, noise_var: float, budget: float, lrs: tuple, betas: tuple,
                 forms: tuple, c_points: int, *, arm: str = "momentum", context: str = "") -> dict:
    """inf over (form, beta, lr) of sup over c in [1/kappa, 1] of :func:`worst_case_risk`.

    Returns the chosen form, beta, lr, the worst curvature c* and the exact minimax risk, and
    the :class:`~optzoo.repro.tuning.Choice` (``"choice"``) over the joint grid in (form, beta,
    lr) order: the lowest worst-case risk, a non-finite one loses, ties to the first."""
    from optzoo.repro.tuning import select

    cs = np.geomspace(1.0 / kappa, 1.0, c_points) if kappa > 1 else np.array([1.0])
    lr = np.asarray(lrs, dtype=float)
    grid, worsts, risks = [], [], []
    for form in forms:
        for b in betas:
            if b == 0.0 and form != forms[0]:
                continue
            risk = worst_case_risk(cs[None, :], lr[:, None], b, form, noise_var, budget)
            grid += [(form, float(b), float(v)) for v in lr]
            worsts.append(risk.max(1))
            risks += list(risk)
    choice = select(grid, np.concatenate(worsts), stream="exact theory", arm=arm, knob="(form, beta, lr)",
                    context=context, if_all_nonfinite="first", meta={"c_points": len(cs)})
    form, b, lr_j = choice.value
    k = choice.index
    return {"form": form, "beta": b, "lr": lr_j, "c": float(cs[int(np.argmax(risks[k]))]),
            "risk": choice.scores[k], "choice": choice}


def _measure(cfg, seed: int, part: str, regime: str, pick: dict, noise_var: float) -> tuple[float, float]:
    """Simulated worst-case risk per coordinate of one tuned method on its worst instance:
    (noise part from a drift-free run, drift part from the worst-case-drift run)."""
    from optzoo.momentum_tracking import DriftingQuadratic, simulate

    kw = dict(lr=[pick["lr"]], momentum=[pick["beta"]], form=[pick["form"]])
    env = DriftingQuadratic(curvatures=pick["c"], d=cfg.d, drift="random_walk", drift_scale=0.0,
                            noise_var=noise_var, init_error=0.0,
                            seed=derive_seed(seed, "minimax", part, regime))  # common noise for both arms
    h = simulate(env, **kw, steps=cfg.mm_steps, seeds=cfg.inner_seeds)
    noise = float(h.mse_steady[:, 0].mean()) / cfg.d
    adv = env.replace(drift="adversarial", drift_scale=cfg.mm_budget / pick["c"], noise_var=0.0)
    ha = simulate(adv, **kw, steps=cfg.mm_steps, seeds=1, burn_in=0)
    drift = float(ha.final_error[0, 0, 0]) ** 2
    return noise, drift


def minimax_records(cfg, seed: int) -> list:
    """Records of the headline: per kappa (part) and regime, the tuned SGD's and the tuned
    momentum's simulated worst-case risk (metric ``worst_risk``), plus the exact values and
    the chosen settings (metrics ``theory_risk``, ``beta``, ``lr``, ``c_worst``; exact)."""
    from optzoo.repro.evidence import Record

    lrs = tuple(np.geomspace(cfg.mm_lr_min, cfg.mm_lr_max, cfg.mm_lr_points).tolist())
    out = []
    for kappa in cfg.mm_kappas:
        part = f"kappa={kappa:g}"
        for regime, s2, suffix in (("drift", cfg.mm_noise_drift, ""),
                                   ("noise", cfg.mm_noise_noise * kappa**3, "_noise_dominated")):
            arms = {"sgd": ((0.0,), ("torch",)), "momentum": (tuple(cfg.betas), MOMENTUM_FORMS)}
            for arm, (betas, forms) in arms.items():
                pick = tune_minimax(float(kappa), float(s2), cfg.mm_budget, lrs, betas, forms, cfg.mm_c_points,
                                    arm=arm + suffix, context=part)
                noise, drift = _measure(cfg, seed, part, regime, pick, s2)
                name = arm + suffix
                out.append(Record(part, name, "worst_case", "worst_risk", noise + drift))
                out.append(Record(part, name, "worst_case", "drift_share", drift / (noise + drift)))
                for metric, value in (("theory_risk", pick["risk"]), ("beta", pick["beta"]),
                                      ("lr", pick["lr"]), ("c_worst", pick["c"]),
                                      ("nesterov", float(pick["form"] == "nesterov"))):
                    out.append(Record(part, name, "worst_case", metric, value, exact=True))
                out += pick["choice"].to_records()
    return out
