"""Reproduction of rpo (arXiv 2508.06214) on records: claims, controls, scales, run, figures.

Every arm trains on the same batched differentiable torch environment with the same
environment-step budget, the same actor / critic widths and critic recipe, and is evaluated
by the same protocol: the deterministic (mean) action on ``eval_envs`` fresh episodes whose
start states are drawn from ``derive_seed(seed, "eval", env)`` (identical for every arm of a
seed), at ``checkpoints`` evenly spaced budgets. Per seed and environment, AUC is the mean
evaluation return over the checkpoints and final is the last one.

Arms (every one in the same unit, on the same seed, budget and evaluation starts):

* ``rpo``: RPO, M = 5 epochs on the cached action gradients with ratio weight, clip, KL and
  entropy bonus;
* ``rpo_m1``: the control of both claims (RPO's stabilised reuse removed): the same RPO
  configuration (entropy bonus, AdamW, learning rate and schedule) with M = 1, so the ratio is 1
  and the clip and KL are inactive: no reuse;
* ``naive``: naive reuse, the baseline of ``stable_reuse``: the same RPO with M = 5 but no ratio
  weight, no clip and no KL (entropy bonus kept: issue 40), its learning rate tuned on the same
  grid as every tuned arm;
* ``shac``: SHAC (M = 1, no regularisers, SHAC's Adam and linear decay);
* at full also stable-baselines3 ``ppo`` on ``as_gymnasium`` copies of the environment at the
  same budget, ``rpo10`` / ``naive10`` (M = 10), ``shac_lr5`` (SHAC with 5x the learning rate)
  and ``ppo_x10`` (PPO at 10x the budget, context only).

Learning rates: one grid for every tuned arm, tuned on pilot seeds >= 90000 and frozen in ``LR``
(:mod:`optzoo.rpo.repro.tuning`); never chosen on the evaluation seeds (docs/papers/rpo.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from optzoo._core.rng import derive_seed
from optzoo.repro.claim import Claim
from optzoo.repro.evidence import Control, Custom, Paired, Record, records_of
from optzoo.repro.figures import new_figure, save_figure

__all__ = ["CLAIMS", "FROZEN", "HEADLINE", "LR", "MAX_THREADS", "SCALES", "Config", "figures",
           "frozen_choices", "notes", "run"]

#: One torch thread per unit: the networks are tiny (16 environments, 32 units), so a second
#: thread only waits, and on a loaded machine its spinning made one unit take over half an hour.
MAX_THREADS = 1

_ABSTRACT = ("abstract: RPO 'enables stable sample reuse' of the reparameterization gradients "
             "(where 'naive attempts risk exacerbating instability') by a clipped surrogate with "
             "KL regularization, and so 'maintains superior sample efficiency'")

REUSE = Control(
    arms={"rpo": "rpo_m1"},
    removes="RPO's stabilised sample reuse: the same RPO configuration (entropy bonus, AdamW, "
            "learning rate and its schedule, networks, critic) with M = 1 epoch on the cached "
            "action gradients, so the ratio is 1 and the clip and KL are inactive",
    credits=_ABSTRACT)


def _pairs(metrics, arm: str, baseline: str, extra=()):
    """Custom evidence: ``arm`` vs ``baseline`` on each metric (parts '<env> <metric>'), plus
    ``extra`` (arm, baseline, label) pairs read only when their records exist (full's M = 10)."""

    def fn(per_seed, sub):
        out = {}
        for a, b, label in ((arm, baseline, ""), *extra):
            a2, b2 = sub.get(a, a), sub.get(b, b)
            if label and not all(any(r.arm == x for s in per_seed for r in s) for x in (a2, b2)):
                continue
            for m in metrics:
                for p, v in Paired(m, a2, b2).collect(per_seed).items():
                    out[f"{p} {m}{label}"] = v
        return out

    uses = tuple(dict.fromkeys((arm, baseline) + tuple(x for e in extra for x in e[:2])))
    text = f"{' and '.join(metrics)}: {arm} vs {baseline} (difference, paired per seed)"
    if extra:
        text += "; " + "; ".join(f"{a} vs {b}{label}" for a, b, label in extra)
    return Custom(fn, text, uses=uses)


CLAIMS = [
    Claim("rpo_vs_shac",
          "RPO reaches higher returns than SHAC per environment step (same samples, networks and "
          "critic), by area under the evaluation curve and at the end of the budget.",
          "RPO minus SHAC evaluation return (AUC over checkpoints; final), paired per seed",
          direction="greater", threshold=0.0,
          source="abstract: RPO 'maintains superior sample efficiency' and 'consistently outperforms "
                 "or achieves state-of-the-art' (against RPG methods such as SHAC)",
          evidence=_pairs(("auc", "final"), "rpo", "shac"), control=REUSE),
    Claim("stable_reuse",
          "Reusing the cached action gradients for M = 5 epochs with RPO's ratio weight, clip and "
          "KL beats naive reuse (the same M epochs on the same gradients without them, entropy "
          "bonus kept), by AUC and at the end of the budget.",
          "RPO minus naive-reuse evaluation return at the same M (AUC; final), paired per seed; at "
          "full also M = 10",
          direction="greater", threshold=0.0,
          source="abstract: RPO 'enables stable sample reuse' where 'naive attempts risk "
                 "exacerbating instability'",
          evidence=_pairs(("auc", "final"), "rpo", "naive", extra=(("rpo10", "naive10", " M=10"),)),
          control=Control({"rpo": "rpo_m1", "rpo10": "rpo_m1"}, removes=REUSE.removes,
                          credits=REUSE.credits)),
    Claim("naive_reuse_pays",
          "Ours, from the pilot: naive reuse (entropy bonus kept) still beats no reuse at RPO's "
          "settings (M = 1), so in this task reuse without the stabilisers is not harmful.",
          "naive-reuse minus RPO(M=1) evaluation return (AUC; final), paired per seed",
          direction="greater", threshold=0.0, kind="finding", source="ours (issue 40 pilot)",
          evidence=_pairs(("auc", "final"), "naive", "rpo_m1")),
    Claim("rpo_vs_ppo",
          "RPO beats model-free PPO (stable-baselines3, RL Zoo's Pendulum settings, tuned lr) at "
          "equal environment steps.",
          "RPO minus SB3 PPO evaluation return (AUC over checkpoints; final), paired per seed",
          direction="greater", threshold=0.0, kind="finding",
          source="ICLR reviews (PPO baseline; the abstract names no baseline); spec C3",
          evidence=_pairs(("auc", "final"), "rpo", "ppo"), scales=("full",)),
    Claim("reuse_control",
          "RPO's M epochs beat SHAC given M times the learning rate (the reviewers' control for "
          "RPO's M-times more gradient steps).",
          "RPO minus SHAC(5x lr) final evaluation return, paired per seed",
          direction="greater", threshold=0.0, kind="finding",
          source="ICLR reviews (asked for the control); spec C2",
          evidence=_pairs(("final",), "rpo", "shac_lr5"), scales=("full",)),
]

#: The claims that test the abstract's headline (papers.py names them).
HEADLINE = ("rpo_vs_shac", "stable_reuse")


@dataclass(frozen=True)
class Config:
    envs: tuple = ("pendulum",)
    num_envs: int = 16
    horizon: int = 16
    iterations: int = 400
    hidden: tuple = (32, 32)
    critic_iterations: int = 8
    epochs: int = 5
    arms: tuple = ("rpo", "rpo_m1", "shac", "naive")
    ppo: bool = True
    ppo_context: bool = False  # also PPO at 10x the budget
    checkpoints: int = 6
    eval_envs: int = 16
    seeds: int = 5


# Actor learning rates at quick's configuration, one grid {1e-3, 3e-3, 1e-2, 3e-2, 1e-1} for rpo,
# shac and naive, chosen on pilot seeds 90000-90001 (``optzoo.rpo.repro.tuning``, records in
# docs/tuning/rpo_quick.json; every choice inside the grid); ppo (full only) from the earlier pilot,
# not re-tuned; rpo_m1 takes RPO's (it is RPO with the reuse removed and nothing else changed).
# The critic keeps SHAC's 1e-3 for every arm.
LR = {"rpo": 1e-2, "shac": 1e-2, "naive": 1e-2, "ppo": 3e-3}
#: the tuning choices behind LR (grid, per-seed AUCs, written by ``optzoo.rpo.repro.tuning``), as
#: :class:`~optzoo.repro.tuning.Choice`\ s (absent from an installed wheel: then none recorded)
FROZEN = Path(__file__).resolve().parents[4] / "docs" / "tuning" / "rpo_quick.json"


def frozen_choices(cfg) -> list:
    """The frozen tuning choice of each arm ``cfg`` runs that has one (rpo, shac, naive; rpo_m1
    is not tuned: it runs RPO's rate)."""
    from optzoo.repro.tuning import load_choices

    return [c for c in load_choices(FROZEN) if c.arm in cfg.arms] if FROZEN.exists() else []

SCALES = {
    "smoke": Config(num_envs=8, horizon=8, iterations=6, hidden=(16,), critic_iterations=2,
                    checkpoints=2, eval_envs=4, ppo=False, seeds=2),
    # PPO (a finding's baseline, ~60 CPU-s a seed) runs at full only, so that quick, with the
    # reuse control added, stays below its former ~2 CPU-minutes a seed
    "quick": Config(seeds=5, ppo=False),
    "full": Config(envs=("pendulum", "cartpole", "acrobot", "reacher"), num_envs=32, horizon=32,
                   iterations=300, hidden=(64, 64), critic_iterations=16,
                   arms=("rpo", "rpo_m1", "shac", "naive", "rpo10", "naive10", "shac_lr5"),
                   ppo_context=True, checkpoints=10, seeds=5),
}


def _env(name: str, n: int):
    from optzoo.rpo import envs

    cls = {"pendulum": envs.PendulumSwingUp, "cartpole": envs.CartPoleSwingUp,
           "acrobot": envs.AcrobotSwingUp, "reacher": envs.Reacher2D}[name]
    return cls(num_envs=n)


def _arm_config(arm: str, cfg: Config, lr: float | None = None):
    """``arm``'s configuration at ``cfg``; ``lr`` replaces its frozen actor rate (tuning only)."""
    from optzoo.rpo import RPOConfig, shac_config

    common = {"horizon": cfg.horizon, "hidden": cfg.hidden, "critic_hidden": cfg.hidden,
              "critic_iterations": cfg.critic_iterations}
    if arm in ("rpo", "rpo10", "rpo_m1"):
        m = {"rpo": cfg.epochs, "rpo10": 10, "rpo_m1": 1}[arm]
        return RPOConfig(epochs=m, actor_lr=LR["rpo"] if lr is None else lr, **common)
    if arm in ("naive", "naive10"):
        # RPO minus ratio weight, clip and KL; the entropy bonus (ent_coef) stays RPO's
        return RPOConfig(epochs=cfg.epochs if arm == "naive" else 10, clip=False,
                         ratio_weight=False, kl_coef=0.0, actor_lr=LR["naive"] if lr is None else lr, **common)
    if arm == "shac":
        return shac_config(actor_lr=LR["shac"] if lr is None else lr, **common)
    if arm == "shac_lr5":
        return shac_config(actor_lr=min(5 * LR["shac"], 0.5), **common)
    raise ValueError(f"The 'arm' argument of _arm_config must be a known arm. Got {arm!r}.")


def _checkpoints(cfg: Config) -> list[int]:
    total = cfg.num_envs * cfg.horizon * cfg.iterations
    return [int(round(total * (k + 1) / cfg.checkpoints)) for k in range(cfg.checkpoints)]


def _run_arm(arm, name, cfg, seed, eval_env, eval_seed, lr=None):
    from optzoo.rpo import RPO, evaluate

    algo = RPO(_env(name, cfg.num_envs), _arm_config(arm, cfg, lr))
    marks = _checkpoints(cfg)
    out = {"steps": [], "returns": []}

    def cb(a, rec):
        while marks and rec["env_steps"] >= marks[0]:
            out["steps"].append(marks.pop(0))
            out["returns"].append(float(np.mean(evaluate(a.policy(), eval_env, seed=eval_seed))))

    t0 = time.process_time()
    # one training seed for every RP arm of a seed: the same initial networks and first
    # windows (common random numbers for the paired comparisons)
    res = algo.train(cfg.num_envs * cfg.horizon * cfg.iterations,
                     seed=derive_seed(seed, "train", name) % (2 ** 31), callback=cb)
    h = res.history.as_arrays()
    out.update(cpu_s=time.process_time() - t0, status=res.status.value, skipped=res.skipped,
               in_band=h["in_band"].tolist(), kl=h["kl"].tolist())
    if res.status.value == "diverged":  # a diverged run scores the worst return it reached
        while marks:
            out["steps"].append(marks.pop(0))
            out["returns"].append(min(out["returns"], default=float("nan")))
    return out


def _records(name: str, arm: str, out: dict) -> list[Record]:
    rec = [Record(name, arm, "eval", "auc", float(np.mean(out["returns"]))),
           Record(name, arm, "eval", "final", float(out["returns"][-1])),
           Record(name, arm, "run", "cpu_s", float(out["cpu_s"]))]
    rec += [Record(name, arm, f"ck{k}", "return", float(r), x=float(s))
            for k, (s, r) in enumerate(zip(out["steps"], out["returns"], strict=True))]
    if "status" in out:
        rec.append(Record(name, arm, "run", "diverged", float(out["status"] == "diverged")))
        rec.append(Record(name, arm, "run", "skipped", float(out["skipped"])))
        n = len(out["in_band"])
        every = max(1, n // 50)  # the clip-band and KL curves, thinned to about 50 points
        for i in range(0, n, every):
            rec.append(Record(name, arm, f"it{i}", "in_band", float(out["in_band"][i]), x=float(i)))
            rec.append(Record(name, arm, f"it{i}", "kl", float(out["kl"][i]), x=float(i)))
    return rec


def run(config: Config, seed: int, progress) -> list[Record]:
    cfg = config
    n_units = len(cfg.envs) * (len(cfg.arms) + int(cfg.ppo) + int(cfg.ppo and cfg.ppo_context))
    progress.start(n_units, "rpo")
    out: list[Record] = [Record("", "", "config", "torch_threads", float(torch.get_num_threads()))]
    for name in cfg.envs:
        eval_env = _env(name, cfg.eval_envs)
        eval_seed = derive_seed(seed, "eval", name) % (2 ** 31)
        for arm in cfg.arms:
            out += _records(name, arm, _run_arm(arm, name, cfg, seed, eval_env, eval_seed))
            progress.advance()
        if cfg.ppo:
            from optzoo.rpo.repro.ppo import run_ppo

            budget = cfg.num_envs * cfg.horizon * cfg.iterations
            for key, mult in (("ppo", 1), ("ppo_x10", 10))[: 1 + int(cfg.ppo_context)]:
                res = run_ppo(lambda k, name=name: _env(name, 1), mult * budget,
                              [c * mult for c in _checkpoints(cfg)], eval_env, eval_seed,
                              seed=derive_seed(seed, key, name) % (2 ** 31),
                              hidden=cfg.hidden, learning_rate=LR["ppo"])
                out += _records(name, key, res)
                progress.advance()
    for choice in frozen_choices(cfg):  # the frozen tuning behind the rates run
        out += choice.to_records()
    return out


def _mean_of(per_seed, metric: str, arm: str, part: str) -> float:
    vals = [r.value for s in records_of(per_seed, metric=metric, arm=arm, part=part) for r in s]
    return float(np.mean(vals)) if vals else float("nan")


def notes(per_seed) -> dict[str, str]:
    """Every arm's mean AUC and final return, diverged runs, and PPO at 10x the budget."""
    parts = sorted({r.part for s in per_seed for r in s if r.metric == "auc"})
    arms = list(dict.fromkeys(r.arm for s in per_seed for r in s if r.metric == "auc"))
    rows, div = [], []
    for p in parts:
        rows.append(f"{p}: " + ", ".join(
            f"{a} {_mean_of(per_seed, 'auc', a, p):.0f}/{_mean_of(per_seed, 'final', a, p):.0f}"
            for a in arms if any(r.arm == a and r.part == p for s in per_seed for r in s)))
        for a in arms:
            n = sum(r.value > 0.5 for s in records_of(per_seed, metric="diverged", arm=a, part=p) for r in s)
            if n:
                div.append(f"{p} {a}: {n} diverged run(s), scored at their worst evaluation")
    table = "Mean AUC/final evaluation return per arm: " + "; ".join(rows)
    out = {"rpo_vs_shac": table, "stable_reuse": "See rpo_vs_shac's note for every arm's means"}
    if div:
        out["rpo_vs_shac"] += ". " + "; ".join(div)
    ctx = [f"{p} PPO(10x) final mean {_mean_of(per_seed, 'final', 'ppo_x10', p):.0f}" for p in parts
           if any(r.arm == "ppo_x10" for s in per_seed for r in s)]
    if ctx:
        out["rpo_vs_ppo"] = "Context: " + "; ".join(ctx)
    return out


def figures(per_seed, outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    envs = list(dict.fromkeys(r.part for s in per_seed for r in s if r.metric == "return"))
    arms = [a for a in dict.fromkeys(r.arm for s in per_seed for r in s if r.metric == "return")
            if a != "ppo_x10"]
    paths = []
    fig, axes = new_figure(1, len(envs), figsize=(4.5 * len(envs), 3.5), squeeze=False)
    for ax, e in zip(axes[0], envs, strict=True):
        lows = []
        for j, arm in enumerate(arms):
            rows = records_of(per_seed, metric="return", arm=arm, part=e)
            if not rows[0]:
                continue
            steps = np.array([r.x for r in rows[0]], dtype=float)
            R = np.array([[r.value for r in row] for row in rows], dtype=float)
            ax.plot(steps, R.T, color=f"C{j}", lw=0.6, alpha=0.35)  # every seed
            med = np.median(R, 0)
            lows.append(float(med.min()))
            ax.plot(steps, med, color=f"C{j}", marker="o", ms=3, label=arm)
        lo = max(min(lows) * 1.2, -4000.0) if lows else -4000.0
        ax.set_ylim(bottom=lo)
        ax.set(title=f"{e} (y axis cut at {lo:.0f})", xlabel="environment steps",
               ylabel="evaluation return (median; thin: seeds)")
        ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "return_vs_steps.png", dpi=90))
    fig, axes = new_figure(1, 2, figsize=(9, 3.3), squeeze=False)
    e = envs[0]
    for arm in arms:
        band = records_of(per_seed, metric="in_band", arm=arm, part=e)
        if not band[0]:
            continue
        kl = records_of(per_seed, metric="kl", arm=arm, part=e)
        x = [r.x for r in band[0]]
        axes[0, 0].plot(x, np.nanmean([[r.value for r in row] for row in band], axis=0), label=arm)
        axes[0, 1].semilogy(x, np.maximum(np.nanmean([[r.value for r in row] for row in kl], axis=0),
                                          1e-12), label=arm)
    axes[0, 0].set(title=f"{e}: fraction of samples in the clip band", xlabel="iteration")
    axes[0, 1].set(title=f"{e}: KL(pi_old || pi) after the M epochs", xlabel="iteration")
    axes[0, 0].legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "clip_band_and_kl.png", dpi=90))
    return paths
