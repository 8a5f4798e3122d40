"""Reproduction of reward calibration (arXiv 2604.18239) on the tinylm toy language.

Per seed: (1) TRL parity of our DPO loss and gradients on one identical batch; (2) SFT reference
(the ``toy`` checkpoint, else our own seeded SFT), then DPO / IPO / SimPO with and without
reward calibration on high-overlap pairs (k = 1 substituted token) and DPO on low-overlap
pairs (k = 10), plus DPO + NLL (TRL's ``sft`` term, the old ``rpo_alpha``) in the same loop,
and at quick scale a real TRL ``DPOTrainer`` run with that NLL term; (3) the exact log-linear
testbed of the disentanglement band. All arms share reference, pairs, batch order, steps,
optimiser and learning rate. Nothing is tuned on the evaluation seeds (no tuning at all:
paper/code defaults beta = 0.1, tau = 0.1, ema_beta = 0.98, phi = LM head, rpo_alpha = 1).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo._core.stats import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    mean_ci,
    paired_ci,
    verdict_all,
)
from optzoo.repro.claim import Claim, Verdict

CLAIMS = [
    Claim("trl_parity", "Our DPO loss and its parameter gradients equal TRL DPOTrainer's on "
          "identical batches.", "max |loss diff|, max relative gradient diff",
          "both <= 1e-4 on every seed"),
    Claim("rc_dpo", "In the high-overlap regime base DPO lowers the chosen likelihood while "
          "reward calibration keeps it at or above the reference, still lowers the rejected "
          "one, at non-inferior preference accuracy.", "held-out mean dz_w, dz_l, accuracy",
          "base dz_w CI < 0; RC - base dz_w CI > 0; RC dz_w CI low >= 0; RC dz_l CI < 0; "
          "accuracy RC - base CI low > -0.02"),
    Claim("rc_ipo", "Same as rc_dpo for IPO.", "held-out mean dz_w, dz_l, accuracy",
          "as rc_dpo"),
    Claim("rc_simpo", "Same as rc_dpo for SimPO.", "held-out mean dz_w, dz_l, accuracy",
          "as rc_dpo"),
    Claim("low_overlap_control", "With low-overlap pairs (k = 10) base DPO and RC behave alike.",
          "held-out mean dz_w, RC - base", "paired CI of the difference contains 0"),
    Claim("vs_rpo_alpha", "RC preserves the winner at least as well as TRL's NLL term "
          "(rpo_alpha = 1), without an extra loss term.", "held-out dz_w and accuracy, RC DPO "
          "vs TRL DPOTrainer(loss_type=[sigmoid, sft], loss_weights=[1, 1])",
          "paired CI of dz_w(RC) - dz_w(RPO) >= 0 (reproduced if > 0, not if < 0)"),
    Claim("band_exact", "On the log-linear testbed the band predicts the signs of the exact "
          "one-step changes of z_w and z_l, and the calibrated ratio r* lies in the band.",
          "sign agreement away from O(eta^2) of the edges", "100 % on every seed"),
]


@dataclass(frozen=True)
class Config:
    losses: tuple = ("dpo",)
    steps: int = 20
    batch: int = 8
    lr: float = 1e-3
    n_train: int = 256
    n_eval: int = 128
    control: bool = True
    nll_arm: bool = True
    trl_rpo: bool = False
    rpo_alpha: float = 1.0
    parity_pairs: int = 8
    testbed_cases: int = 500
    phi: str = "head"
    ema_beta: float = 0.98
    sft_steps: int = 300
    trace_every: int = 5


SCALES = {
    "smoke": Config(),
    "quick": Config(losses=("dpo", "ipo", "simpo"), steps=60, batch=16, n_train=2048,
                    n_eval=512, trl_rpo=True, parity_pairs=16, testbed_cases=2000,
                    trace_every=5),
    "full": Config(losses=("dpo", "ipo", "simpo", "cpo", "slic", "bce"), steps=300, batch=32,
                   n_train=4096, n_eval=1024, trl_rpo=True, parity_pairs=32,
                   testbed_cases=20000, trace_every=10),
}


def run(config: Config, seed: int, progress) -> dict:
    import torch

    from optzoo.reward_calibration import toy
    from optzoo.reward_calibration.testbed import band_sign_check

    torch.set_num_threads(1)
    out: dict = {"seed": seed}
    arms = [dict(loss_type=lt, rc=rc, k=1) for lt in config.losses for rc in (False, True)]
    if config.control:
        arms += [dict(loss_type="dpo", rc=rc, k=10) for rc in (False, True)]
    if config.nll_arm:
        arms.append(dict(loss_type="dpo", rc=False, k=1, nll_weight=config.rpo_alpha))
    progress.start(config.steps + 3, "reward_calibration")
    out["testbed"] = band_sign_check(seed, n_cases=config.testbed_cases)
    progress.advance()
    ref, source = toy.reference_model(seed, sft_steps=config.sft_steps)
    out["reference"] = source
    ks = sorted({a["k"] for a in arms})
    data = {k: toy.make_data(seed, k=k, n_train=config.n_train, n_eval=config.n_eval)
            for k in ks}
    out["parity"] = toy.trl_parity(ref, data[1][0].pairs.__class__(
        *(getattr(data[1][0].pairs, f)[:config.parity_pairs] for f in
          ("prompts", "chosen", "rejected", "gold_chosen", "gold_rejected"))), seed=seed)
    progress.advance()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # RC skip warnings are counted instead
        results = toy.train_arms(ref, arms, data, steps=config.steps, batch=config.batch,
                                 lr=config.lr, seed=seed, phi=config.phi,
                                 ema_beta=config.ema_beta, trace_every=config.trace_every,
                                 progress=progress)
    out["arms"] = {_arm_name(a): r for a, r in zip(arms, results, strict=False)}
    if config.trl_rpo:
        held = data[1][1]
        ref_held = toy._logps_pairs(ref, held)
        out["trl_rpo"] = toy.trl_rpo_arm(ref, data[1][0], held, steps=config.steps,
                                         batch=config.batch, lr=config.lr, seed=seed,
                                         rpo_alpha=config.rpo_alpha, ref_held=ref_held)
    progress.advance()
    return out


def _arm_name(arm: dict) -> str:
    name = f"{arm['loss_type']}_k{arm['k']}_{'rc' if arm['rc'] else 'base'}"
    return name + ("_nll" if arm.get("nll_weight") else "")


def _vals(per_seed, arm, key):
    return [r["arms"][arm][key] for r in per_seed if arm in r.get("arms", {})]


def _judge_rc(per_seed, loss) -> Verdict:
    cid = f"rc_{loss}"
    b, c = f"{loss}_k1_base", f"{loss}_k1_rc"
    bw, cw = _vals(per_seed, b, "dz_w"), _vals(per_seed, c, "dz_w")
    if len(cw) < 2 or len(bw) != len(cw):
        return Verdict(cid, INCONCLUSIVE, f"{loss} not run at this scale (needs >= 2 seeds).")
    base_w, rc_w = mean_ci(bw), mean_ci(cw)
    rc_l = mean_ci(_vals(per_seed, c, "dz_l"))
    diff = paired_ci(cw, bw)
    acc = paired_ci(_vals(per_seed, c, "accuracy"), _vals(per_seed, b, "accuracy"))
    disp = (mean_ci(_vals(per_seed, b, "displaced")), mean_ci(_vals(per_seed, c, "displaced")))
    nums = {"base_dz_w": base_w.to_dict(), "rc_dz_w": rc_w.to_dict(), "rc_dz_l": rc_l.to_dict(),
            "rc_minus_base_dz_w": diff.to_dict(), "rc_minus_base_accuracy": acc.to_dict(),
            "base_displaced_rate": disp[0].estimate, "rc_displaced_rate": disp[1].estimate}
    text = (f"base dz_w {base_w}; RC dz_w {rc_w}; RC dz_l {rc_l}; RC - base dz_w {diff}; "
            f"accuracy RC - base {acc}; displaced {disp[0].estimate:.2f} -> "
            f"{disp[1].estimate:.2f}")
    if base_w.high >= 0:
        return Verdict(cid, INCONCLUSIVE, "no clear displacement by base: " + text, nums)
    if (diff.low > 0 and rc_w.low >= 0 and rc_l.high < 0 and acc.low > -0.02):
        return Verdict(cid, REPRODUCED, text, nums)
    if rc_w.high < 0 or diff.high < 0 or acc.high < -0.02:
        why = ("RC reduces but does not remove the displacement: " if diff.low > 0 else "")
        return Verdict(cid, NOT_REPRODUCED, why + text, nums)
    return Verdict(cid, INCONCLUSIVE, text, nums)


def judge(per_seed: list[dict]) -> list[Verdict]:
    out = []
    par = [r["parity"] for r in per_seed if "parity" in r]
    holds = [p["loss_abs_diff"] <= 1e-4 and p["grad_rel_diff"] <= 1e-4 for p in par]
    worst = {"loss_abs_diff": max((p["loss_abs_diff"] for p in par), default=float("nan")),
             "grad_rel_diff": max((p["grad_rel_diff"] for p in par), default=float("nan"))}
    out.append(Verdict("trl_parity", verdict_all(holds),
                       f"worst |loss diff| {worst['loss_abs_diff']:.2e}, worst relative "
                       f"gradient diff {worst['grad_rel_diff']:.2e} over {len(par)} seeds",
                       worst))
    for loss in ("dpo", "ipo", "simpo"):
        out.append(_judge_rc(per_seed, loss))
    bw, cw = _vals(per_seed, "dpo_k10_base", "dz_w"), _vals(per_seed, "dpo_k10_rc", "dz_w")
    if len(bw) >= 2 and len(bw) == len(cw):
        d = paired_ci(cw, bw)
        v = REPRODUCED if d.low <= 0 <= d.high else NOT_REPRODUCED
        out.append(Verdict("low_overlap_control", v,
                           f"k = 10: base dz_w {mean_ci(bw)}; RC dz_w {mean_ci(cw)}; RC - base "
                           f"{d}", {"rc_minus_base_dz_w": d.to_dict()}))
    else:
        out.append(Verdict("low_overlap_control", INCONCLUSIVE, "control not run"))
    out.append(_judge_rpo(per_seed))
    tb = [r["testbed"] for r in per_seed if "testbed" in r]
    ok = [t["agree_w"] == 1.0 and t["agree_l"] == 1.0 and t["rho_nonpos_ok"]
          and t["calibrated_in_band"] and t["calibrated_disentangled"] == 1.0
          and t["max_err_over_eta2"] <= 1.0 for t in tb]
    out.append(Verdict("band_exact", verdict_all(ok),
                       f"{sum(ok)}/{len(ok)} seeds: band sign predictions exact on "
                       f"{sum(t['n_checked_w'] for t in tb)} + {sum(t['n_checked_l'] for t in tb)}"
                       f" checked cases; worst second-order error "
                       f"{max((t['max_err_over_eta2'] for t in tb), default=float('nan')):.2f}"
                       " eta^2 |s|^4 (d_w+d_l)^2",
                       {"seeds_ok": sum(ok), "n": len(ok)}))
    return out


def _judge_rpo(per_seed) -> Verdict:
    rc = _vals(per_seed, "dpo_k1_rc", "dz_w")
    trl = [r["trl_rpo"] for r in per_seed if "trl_rpo" in r]
    ours = _vals(per_seed, "dpo_k1_base_nll", "dz_w")
    if len(trl) == len(rc) and len(rc) >= 2:
        rpo_w, rpo_acc, src = ([t["dz_w"] for t in trl], [t["accuracy"] for t in trl],
                               "TRL DPOTrainer run")
    elif len(ours) == len(rc) and len(rc) >= 2:
        rpo_w, rpo_acc, src = ours, _vals(per_seed, "dpo_k1_base_nll", "accuracy"), \
            "our loop with TRL's sft term"
    else:
        return Verdict("vs_rpo_alpha", INCONCLUSIVE, "RPO baseline not run at this scale")
    d = paired_ci(rc, rpo_w)
    acc = paired_ci(_vals(per_seed, "dpo_k1_rc", "accuracy"), rpo_acc)
    v = REPRODUCED if d.low > 0 else NOT_REPRODUCED if d.high < 0 else INCONCLUSIVE
    nums = {"rc_minus_rpo_dz_w": d.to_dict(), "rc_minus_rpo_accuracy": acc.to_dict(),
            "rpo_dz_w": mean_ci(rpo_w).to_dict(), "source": src}
    if ours and len(ours) == len(rc):
        nums["our_loop_rpo_dz_w"] = mean_ci(ours).to_dict()
    return Verdict("vs_rpo_alpha", v, f"RC - RPO ({src}) dz_w {d}; accuracy {acc}; RPO dz_w "
                   f"{mean_ci(rpo_w)}", nums)


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    paths = []
    runs = [r for r in per_seed if "arms" in r]
    if not runs:
        return paths
    r0 = runs[0]
    losses = sorted({n.split("_")[0] for n in r0["arms"] if "_k1_" in n and "nll" not in n})
    fig, axes = plt.subplots(1, len(losses), figsize=(4 * len(losses), 3.2), squeeze=False)
    for ax, loss in zip(axes[0], losses, strict=False):
        for tag, col in (("base", "tab:red"), ("rc", "tab:blue")):
            tr = r0["arms"][f"{loss}_k1_{tag}"]["trace"]
            ax.plot(tr["step"], tr["dz_w_train"], color=col, label=f"{tag} z_w")
            ax.plot(tr["step"], tr["dz_l_train"], color=col, ls="--", label=f"{tag} z_l")
        ax.axhline(0, color="k", lw=0.5)
        ax.set_title(f"{loss}, k = 1 (seed {r0['seed']})")
        ax.set_xlabel("step")
        ax.set_ylabel("log-prob change vs reference")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    paths.append(outdir / "likelihood_traces.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)

    tr = r0["arms"].get("dpo_k1_rc", {}).get("trace", {})
    if tr.get("log_r"):
        fig, ax = plt.subplots(figsize=(5, 3.2))
        steps = np.array(tr["step"][-len(tr["log_r"]):])
        ls, rho = np.array(tr["log_r_star"]), np.clip(np.array(tr["rho"]), 1e-6, 1.0)
        lo, hi = ls + np.log(rho), ls - np.log(rho)
        ax.fill_between(steps, lo, hi, color="tab:green", alpha=0.25, label="band (rho > 0)")
        ax.plot(steps, tr["log_r"], color="tab:red", label="log r (raw)")
        ax.plot(steps, np.array(tr["log_r"]) + 2 * np.log(tr["alpha"]), color="tab:blue",
                label="log alpha^2 r (calibrated)")
        ax.set_xlabel("step")
        ax.set_title("DPO + RC, k = 1: band trace (LM-head phi)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        paths.append(outdir / "band_trace.png")
        fig.savefig(paths[-1], dpi=90)
        plt.close(fig)

    names = list(r0["arms"])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    for ax, key in zip(axes, ("displaced", "accuracy"), strict=False):
        vals = np.array([[r["arms"][n][key] for n in names] for r in runs])
        ax.bar(range(len(names)), vals.mean(0), yerr=vals.std(0) if len(runs) > 1 else None,
               color=["tab:blue" if "_rc" in n else "tab:red" for n in names])
        ax.set_xticks(range(len(names)), names, rotation=60, fontsize=7, ha="right")
        ax.set_title(f"held-out {key} (mean over {len(runs)} seeds)")
    fig.tight_layout()
    paths.append(outdir / "displacement_accuracy.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)
    return paths
