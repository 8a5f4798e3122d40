"""Task A: op-amp sizing as a contextual bandit (spec section 3), every arm on the same data.

A context is a design spec; the policy is an MLP from the normalised spec to 7 independent
categoricals over 16 log-spaced sizing levels (our choice: a factorised "sizing token" policy).
Per iteration ``n_specs`` specs are drawn, ``G`` designs per spec are sampled and evaluated with
:func:`optzoo.copro.opamp.opamp_evaluate`; the learner sees the objectives through the regime's
view (drift switches the view at T/2), and takes ``epochs`` Adam steps on
:math:`-\\frac1B\\sum_x\\sum_i w_{x,i}\\log\\pi(y_i|x)+c\\,\\mathrm{KL}(\\pi_{old}\\|\\pi)` with
:math:`w=q^*` (CoPro) or :math:`w=A/G` (baselines), the exact KL of the factorised policy.

Metric: feasible hypervolume of the union of ``eval_k`` samples per held-out spec, in the
canonical space (gain dB, log10 GBW, power mW), reference point fixed a priori
(:data:`HV_REF`), divided by the box to the ideal point (:data:`HV_IDEAL`), averaged over the
held-out specs.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from optzoo._core.advantages import group_advantages
from optzoo._core.rng import np_rng, torch_generator
from optzoo.copro import copro_e_step
from optzoo.copro.baselines import (
    LagrangianGRPO,
    gdpo_advantages,
    grpo_weighted_sum,
    pareto_rank_advantages,
)
from optzoo.copro.opamp import decode_levels, opamp_evaluate

__all__ = ["ARMS", "BASELINES", "HV_IDEAL", "HV_REF", "REGIMES", "feasible_hv", "group_standardise",
           "igd_plus",
           "nsga2_search", "random_search",
           "sample_specs", "train_arm"]

N_LEVELS = 16
#: minimisation form (-gain dB, -log10 GBW Hz, power mW): reference and ideal points (a priori)
HV_REF = np.array([-40.0, -6.0, 2.0])
HV_IDEAL = np.array([-120.0, -9.5, 0.0])
#: ``copro_uniform`` is CoPro's control: the same M-step, trust region, policy and streams with
#: the E-step's weights replaced by the uniform base p = 1/G (the credited mechanism removed)
ARMS = ("copro", "copro_uniform", "grpo", "grpo_lagrangian", "gdpo", "pareto_rank")
BASELINES = ("grpo", "grpo_lagrangian", "gdpo", "pareto_rank")
#: regime -> (spec family, view drift, near-tie quantisation)
REGIMES = {
    "benign": ("loose", False, False),
    "scarcity": ("tight", False, False),
    "drift": ("loose", True, False),
    "near_ties": ("loose", False, True),
    "scarcity_drift": ("tight", True, False),
}
# Spec families: (pm_min, log sr_min, gain_min, log load, swing_min) ranges (INFERRED, set from
# the feasibility of the uniform initial policy: about 4 % loose, about 0.7 % tight).
_FAMILIES = {
    "loose": ((30.0, 45.0), (math.log(1e6), math.log(5e6)), (40.0, 50.0),
              (math.log(1e-12), math.log(3e-12)), (0.6, 0.8)),
    "tight": ((55.0, 65.0), (math.log(8e6), math.log(2e7)), (55.0, 62.0),
              (math.log(1e-12), math.log(3e-12)), (0.9, 1.0)),
}
_AREA_MAX = 3000.0
# The scalarised baselines (GRPO, GRPO-Lagrangian) standardise each objective within its group
# before the weighted sum (issue 40: the per-objective normalisation practitioners use, as GDPO
# does), then weight the standardised objectives equally; the violation enters raw (in the
# constraints' own units, which drift does not touch) with penalty rho (GRPO) or the
# multipliers (GRPO-Lagrangian). Before issue 40 the sum was of raw objectives with fixed
# canonical weights (1/20 dB, 1 per decade, 1 per mW), which after the drift switch gave power
# 93 % of GRPO's within-group reward spread and the constraints 0 % (review of 2026-12).
_W = (1.0, 1.0, 1.0)
_PENALTY = 1.0


def group_standardise(F, eps=1e-4):
    """Each objective z-scored within its group ([B, G, m] -> [B, G, m]; eps as GDPO's)."""
    return group_advantages(torch.as_tensor(F, dtype=torch.float64), std="unbiased", eps=eps)


def sample_specs(family: str, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``(spec rows [n, 6] for opamp_evaluate, normalised context features [n, 5])``."""
    lo = np.array([r[0] for r in _FAMILIES[family]])
    hi = np.array([r[1] for r in _FAMILIES[family]])
    u = rng.random((n, 5))
    z = lo + (hi - lo) * u
    spec = np.stack([np.exp(z[:, 1]), z[:, 2], np.exp(z[:, 3]), z[:, 0],
                     np.full(n, _AREA_MAX), z[:, 4]], 1)
    return spec, 2 * u - 1


def _view(F, drifted: bool, ties: bool):
    """The learner's view of canonical objectives (gain dB, log10 GBW, power W)."""
    gain, lgbw, pw = F[..., 0], F[..., 1], F[..., 2]
    if ties:
        gain = np.round(gain / 0.5) * 0.5
        lgbw = np.round(lgbw / math.log10(1.02)) * math.log10(1.02)
        pw = np.round(pw / 1e-6) * 1e-6
    if drifted:  # GBW log -> linear (MHz), power mW -> uW: monotone, the first non-affine
        return np.stack([gain, 10.0 ** lgbw / 1e6, pw * 1e6], -1)
    return np.stack([gain, lgbw, pw * 1e3], -1)


def _canon_min(F):
    return np.stack([-F[:, 0], -F[:, 1], F[:, 2] * 1e3], 1)


def feasible_hv(F, g) -> float:
    """HV ratio of the feasible points of (canonical objectives [n, 3], constraints [n, k])."""
    import moocore

    feas = (g <= 0).all(1)
    P = _canon_min(F[feas])
    P = P[(P < HV_REF).all(1)]
    if P.shape[0] == 0:
        return 0.0
    box = float(np.prod(HV_REF - HV_IDEAL))
    return float(moocore.hypervolume(P, ref=HV_REF)) / box


class _Policy(torch.nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(5, hidden), torch.nn.Tanh(),
                                       torch.nn.Linear(hidden, hidden), torch.nn.Tanh(),
                                       torch.nn.Linear(hidden, 7 * N_LEVELS))
        torch.nn.init.zeros_(self.net[-1].weight)
        torch.nn.init.zeros_(self.net[-1].bias)

    def forward(self, ctx):  # [n, 5] -> log-probs [n, 7, L]
        return torch.log_softmax(self.net(ctx).view(-1, 7, N_LEVELS), -1)


def _sample(policy, ctx, k, gen):
    with torch.no_grad():
        logp = policy(ctx)                                             # [n, 7, L]
    probs = logp.exp().repeat_interleave(k, 0).reshape(-1, N_LEVELS)
    a = torch.multinomial(probs, 1, generator=gen).view(-1, 7)
    return a


def _evaluate_policy(policy, specs, ctx, k, gen):
    a = _sample(policy, torch.as_tensor(ctx, dtype=torch.float32), k, gen).numpy()
    F, g = opamp_evaluate(decode_levels(a, N_LEVELS), np.repeat(specs, k, 0))
    n = specs.shape[0]
    F, g = F.reshape(n, k, 3), g.reshape(n, k, -1)
    hv = [feasible_hv(F[i], g[i]) for i in range(n)]
    return float(np.mean(hv)), float((g <= 0).all(-1).mean()), F, g


def arm_weights(arm, Fv, g, senses, lag, *, weights=_W, penalty=_PENALTY):
    """Per-sample weights [B, G] of the loss sum_i w_i log pi_i for one arm (q* for CoPro, the
    uniform 1/G for its control ``copro_uniform``, A / G for the baselines; ``weights`` and
    ``penalty`` are the scalarised baselines', applied to group-standardised objectives)."""
    G = Fv.shape[1]
    if arm == "copro":
        return copro_e_step(Fv, g, senses=senses, warn=False).q.float()
    if arm == "copro_uniform":
        return torch.full(tuple(Fv.shape[:2]), 1.0 / G, dtype=torch.float32)
    if arm == "grpo":
        A = grpo_weighted_sum(group_standardise(Fv), g, senses=senses, weights=weights, penalty=penalty)
    elif arm == "grpo_lagrangian":
        A = lag(group_standardise(Fv), g, senses=senses)
    elif arm == "gdpo":
        A = gdpo_advantages(Fv, g, senses=senses)
    elif arm == "pareto_rank":
        A = pareto_rank_advantages(Fv, g, senses=senses)
    else:
        raise ValueError(f"unknown arm {arm!r}")
    return (A / G).float()


def train_arm(arm, regime, cfg, seed, *, lr, stream="eval", eval_specs=None, record=None,
              keep_samples=0):
    """Train one arm on one regime; returns the final HV ratio, feasibility and traces (and,
    under ``"_samples"``, the final evaluation samples (F, g) of the first ``keep_samples``
    held-out specs, for IGD+; the caller drops them before saving)."""
    family, drift, ties = REGIMES[regime]
    rng = np_rng(seed, "copro", stream, regime, "data")            # same specs for every arm
    gen = torch_generator(seed, "copro", stream, regime, "sample")  # same sampling stream
    init = torch_generator(seed, "copro", stream, "init")
    with torch.random.fork_rng(devices=[]):  # nn.Linear draws from the global RNG: keep it untouched
        policy = _Policy(cfg.hidden)
    with torch.no_grad():  # then re-initialise every weight from the unit's own generator
        for layer in policy.net[:-1]:
            if isinstance(layer, torch.nn.Linear):
                layer.weight.copy_(torch.randn(layer.weight.shape, generator=init)
                                   / math.sqrt(layer.weight.shape[1]))
                layer.bias.zero_()
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    lag = LagrangianGRPO(7, weights=_W, lr_mu=cfg.lag_lr)
    if eval_specs is None:
        eval_specs = sample_specs(family, cfg.eval_specs, np_rng(seed, "copro", stream, regime, "heldout"))
    eg = torch_generator(seed, "copro", stream, regime, "evalsample")
    trace, feas_trace, qf, qent = [], [], [], []
    switch = cfg.iters // 2
    hv_switch = None
    for t in range(cfg.iters):
        specs, ctx = sample_specs(family, cfg.n_specs, rng)
        ctx_t = torch.as_tensor(ctx, dtype=torch.float32)
        a = _sample(policy, ctx_t, cfg.G, gen)
        F, g = opamp_evaluate(decode_levels(a.numpy(), N_LEVELS), np.repeat(specs, cfg.G, 0))
        F = F.reshape(cfg.n_specs, cfg.G, 3)
        g = g.reshape(cfg.n_specs, cfg.G, -1)
        Fv = _view(F, drift and t >= switch, ties)
        senses = ("max", "max", "min")
        w = arm_weights(arm, torch.as_tensor(Fv), torch.as_tensor(g), senses, lag)
        if arm == "copro" and record is not None:
            phi = torch.as_tensor((g <= 0).all(-1), dtype=torch.float32)
            qf.append(float((w * phi).sum(-1).mean()))
            qent.append(float(-(w * torch.log(w)).sum(-1).mean()))
        with torch.no_grad():
            old = policy(ctx_t)
        idx = a.view(cfg.n_specs, cfg.G, 7)
        for _ in range(cfg.epochs):
            logp = policy(ctx_t)                                          # [B, 7, L]
            lp = logp[:, None].expand(-1, cfg.G, -1, -1).gather(-1, idx[..., None])[..., 0].sum(-1)
            kl = (old.exp() * (old - logp)).sum((-1, -2)).mean()
            loss = -(w * lp).sum(-1).mean() + cfg.kl_coef * kl
            opt.zero_grad()
            loss.backward()
            opt.step()
        if record is not None and ((t + 1) % cfg.eval_every == 0 or t + 1 == switch):
            hv, fr, _, _ = _evaluate_policy(policy, *eval_specs, cfg.eval_k, eg)
            if (t + 1) % cfg.eval_every == 0:
                trace.append(hv)
                feas_trace.append(fr)
            if t + 1 == switch:
                hv_switch = hv
    hv, fr, Fe, ge = _evaluate_policy(policy, *eval_specs, cfg.eval_k, eg)
    out = {"hv": hv, "feasible_rate": fr}
    if keep_samples:
        out["_samples"] = [(Fe[i], ge[i]) for i in range(min(keep_samples, Fe.shape[0]))]
    if record is not None:
        out.update(hv_trace=trace, feas_trace=feas_trace, hv_switch=hv_switch)
        if arm == "copro":
            out.update(q_feasible=qf, q_entropy=qent)
        if record == "front":
            out["front"] = {"F": Fe[0].tolist(), "feasible": (ge[0] <= 0).all(-1).tolist()}
    return out


def random_search(regime, cfg, seed, budget_per_spec, eval_specs=None):
    """Uniform random sizing tokens per held-out spec at ``budget_per_spec`` evaluations."""
    family = REGIMES[regime][0]
    if eval_specs is None:
        eval_specs = sample_specs(family, cfg.eval_specs, np_rng(seed, "copro", "eval", regime, "heldout"))
    specs, _ = eval_specs
    rng = np_rng(seed, "copro", "random", regime)
    hv = []
    for s in specs:
        lv = rng.integers(0, N_LEVELS, (budget_per_spec, 7))
        F, g = opamp_evaluate(decode_levels(lv, N_LEVELS), s)
        hv.append(feasible_hv(F, g))
    return float(np.mean(hv))


#: pymoo NSGA-II on the sizing tokens (ours): population 40, integer sampling, SBX and
#: polynomial mutation with rounding (pymoo's integer recipe), Deb's constraint handling
NSGA2_POP = 40


def _sizing_problem(spec):
    """The op-amp sizing tokens of one spec as a pymoo ``Problem`` (minimisation form, G <= 0
    feasible) that keeps every design it evaluates (``.seen``: (F, g) pairs, in order)."""
    from pymoo.core.problem import Problem

    class Sizing(Problem):
        def __init__(self):
            super().__init__(n_var=7, n_obj=3, n_ieq_constr=7, xl=0, xu=N_LEVELS - 1, vtype=int)
            self.seen = []

        def _evaluate(self, x, out, *args, **kwargs):
            F, g = opamp_evaluate(decode_levels(np.rint(x).astype(int), N_LEVELS), spec)
            self.seen.append((F, g))
            out["F"] = np.nan_to_num(_canon_min(F), nan=1e9, posinf=1e9, neginf=-1e9)
            out["G"] = np.nan_to_num(g, nan=1e9, posinf=1e9, neginf=-1e9)

    return Sizing()


def _nsga2(spec, budget, pop, seed):
    """Run pymoo's NSGA-II (the recipe of :data:`NSGA2_POP`) on one spec; every design it
    evaluated, in order, as (F [n, 3], g [n, k])."""
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.operators.crossover.sbx import SBX
    from pymoo.operators.mutation.pm import PM
    from pymoo.operators.repair.rounding import RoundingRepair
    from pymoo.operators.sampling.rnd import IntegerRandomSampling
    from pymoo.optimize import minimize

    problem = _sizing_problem(spec)
    algo = NSGA2(pop_size=pop, sampling=IntegerRandomSampling(),
                 crossover=SBX(prob=1.0, eta=3.0, vtype=float, repair=RoundingRepair()),
                 mutation=PM(eta=3.0, vtype=float, repair=RoundingRepair()),
                 eliminate_duplicates=True)
    minimize(problem, algo, ("n_eval", budget), seed=seed, verbose=False)
    return (np.concatenate([f for f, _ in problem.seen]), np.concatenate([c for _, c in problem.seen]))


#: high-budget NSGA-II for the IGD+ reference fronts (ours): population 100, 20,000 evaluations
IGD_REF_POP, IGD_REF_BUDGET = 100, 20_000


def _norm_feasible(F, g):
    """Feasible points in the canonical minimisation space, scaled by the HV box to [0, 1]-ish."""
    feas = (g <= 0).all(1) & np.isfinite(F).all(1)
    return (_canon_min(F[feas]) - HV_IDEAL) / (HV_REF - HV_IDEAL)


def igd_plus(regime, seed, eval_specs, samples: dict, *, n_specs: int) -> dict:
    """IGD+ (pymoo's ``IGDPlus``) of each arm's feasible evaluation samples on the first
    ``n_specs`` held-out specs, against a reference front per spec: the non-dominated feasible
    points of a high-budget NSGA-II run (:data:`IGD_REF_POP`, :data:`IGD_REF_BUDGET`) together
    with every arm's feasible samples (so no arm lies beyond the reference). Objectives are the
    canonical ones scaled by the HV box; an arm with no feasible sample on a spec scores the
    IGD+ of the HV reference point alone. Lower is better; the mean over specs per arm."""
    from pymoo.indicators.igd_plus import IGDPlus
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    specs, _ = eval_specs
    out = {arm: [] for arm in samples}
    for k in range(n_specs):
        s = int(np_rng(seed, "copro", "igd_ref", regime, k).integers(2 ** 31 - 1))
        pts = [_norm_feasible(*_nsga2(specs[k], IGD_REF_BUDGET, IGD_REF_POP, s))]
        pts += [_norm_feasible(*samples[arm][k]) for arm in samples]
        P = np.unique(np.concatenate(pts), axis=0)
        if P.shape[0] == 0:
            continue
        front = P[NonDominatedSorting().do(P, only_non_dominated_front=True)]
        ind = IGDPlus(front)
        for arm in samples:
            A = _norm_feasible(*samples[arm][k])
            out[arm].append(float(ind(A if A.shape[0] else np.ones((1, 3)))))
    return {arm: (float(np.mean(v)) if v else None) for arm, v in out.items()}


def nsga2_search(regime, cfg, seed, budget_per_spec, eval_specs):
    """pymoo's NSGA-II per held-out spec at ``budget_per_spec`` evaluations (not amortised over
    specs, the reference the spec asks for). The metric is the same as random search's: the
    feasible hypervolume of the first ``budget_per_spec`` designs it evaluated (pymoo may
    evaluate part of one more generation), averaged over the held-out specs."""
    specs, _ = eval_specs
    hv = []
    for k, spec in enumerate(specs):
        s = int(np_rng(seed, "copro", "nsga2", regime, k).integers(2 ** 31 - 1))
        F, g = _nsga2(spec, budget_per_spec, NSGA2_POP, s)
        hv.append(feasible_hv(F[:budget_per_spec], g[:budget_per_spec]))
    return float(np.mean(hv))
