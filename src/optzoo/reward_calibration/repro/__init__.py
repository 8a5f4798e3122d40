"""Reproduction of reward calibration (arXiv 2604.18239) on the tinylm toy language.

Per seed: (1) TRL parity of our DPO loss and gradients on one identical batch (a check);
(2) SFT reference (the ``toy`` checkpoint, else our own seeded SFT), then DPO / IPO / SimPO with
and without reward calibration (RC) on high-overlap pairs (k = 1 substituted token) and DPO on
low-overlap pairs (k = 10), plus DPO + NLL (TRL's ``sft`` term, the old ``rpo_alpha``) in the
same loop, and, where the scale asks for it, a real TRL ``DPOTrainer`` run with that NLL term;
the gold reward of policy samples for every arm; (3) the exact log-linear testbed of the
disentanglement band (a check). All arms share reference, pairs, batch order, steps, optimiser
and learning rate. Nothing is tuned (paper/code defaults beta = 0.1, tau = 0.1,
ema_beta = 0.98, phi = LM head, rpo_alpha = 1).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo.repro.claim import Claim, Verdict
from optzoo.repro.figures import new_figure, save_figure
from optzoo.repro.judging import judge as decide
from optzoo.repro.judging import paired

__all__ = ["CLAIMS", "SCALES", "Config", "figures", "judge", "run"]

LOSSES = ("dpo", "ipo", "simpo")

#: "At or above the reference" for a held-out mean log-likelihood change: non-inferior to 0
#: within this many nats (ours; the summed response log-probability has 11 tokens).
PRESERVE_MARGIN = 0.1

CLAIMS = [
    Claim("base_displaces",
          "With high-overlap pairs (k = 1) the base objectives lower the chosen likelihood "
          "(likelihood displacement, the problem RC addresses).",
          "held-out mean dz_w of the base arm (nats vs the reference), per loss",
          direction="less", threshold=0.0, source="spec 1 (why DPO displaces), 3 expected"),
    Claim("rc_dpo",
          "With DPO and high-overlap pairs, reward calibration keeps the chosen likelihood at "
          "or above the reference (preserves the winner).",
          "held-out mean dz_w of the RC DPO arm (nats)",
          direction="noninferior", threshold=0.0, margin=PRESERVE_MARGIN,
          source="title; spec C1"),
    Claim("rc_ipo", "As rc_dpo, for IPO.", "held-out mean dz_w of the RC IPO arm (nats)",
          direction="noninferior", threshold=0.0, margin=PRESERVE_MARGIN, source="spec C1"),
    Claim("rc_simpo", "As rc_dpo, for SimPO.", "held-out mean dz_w of the RC SimPO arm (nats)",
          direction="noninferior", threshold=0.0, margin=PRESERVE_MARGIN, source="spec C1"),
    Claim("rc_suppresses_loser",
          "With RC the rejected likelihood still falls (suppress the loser).",
          "held-out mean dz_l of the RC arm (nats), per loss",
          direction="less", threshold=0.0, source="title; spec C1"),
    Claim("rc_raises_winner_vs_base",
          "RC ends with a higher chosen likelihood than the same objective without it.",
          "paired held-out mean dz_w, RC - base (nats), per loss",
          direction="greater", threshold=0.0, source="spec 3 judge (C1)"),
    Claim("rc_accuracy",
          "RC keeps preference accuracy: non-inferior to the base objective by 2 points.",
          "paired held-out preference accuracy 1[m~ > 0], RC - base, per loss",
          direction="noninferior", threshold=0.0, margin=0.02, source="spec 3 judge"),
    Claim("low_overlap_control",
          "With low-overlap pairs (k = 10, rho near 0) base DPO and RC behave alike.",
          "paired held-out mean dz_w, RC - base DPO at k = 10 (nats)",
          direction="equivalent", threshold=0.0, margin=0.5, source="spec 3 expected"),
    Claim("gold_reward",
          "RC improves the quality of what the policy generates (the paper's downstream claim, "
          "hedged by its authors as 'often' / 'observed across several settings').",
          "paired mean gold reward of temperature-1 samples, RC - base, per loss",
          direction="greater", threshold=0.0, source="spec C2"),
    Claim("vs_rpo_alpha",
          "RC preserves the winner at least as well as TRL's NLL term (rpo_alpha = 1), "
          "without an extra loss term (our comparison; the spec says RC may lose to it).",
          "paired held-out mean dz_w, RC DPO - DPO + NLL (nats)",
          direction="noninferior", threshold=0.0, margin=PRESERVE_MARGIN, kind="finding",
          source="spec 3 expected (versus rpo_alpha)"),
    Claim("trl_parity",
          "Our DPO loss and its parameter gradients equal TRL DPOTrainer's on identical "
          "batches (our code against the library).",
          "|loss diff| <= 1e-4 and max relative gradient diff <= 1e-4 on the seed's batch",
          direction="all", kind="check", unit="seed", source="spec 4.9"),
    Claim("band_exact",
          "On the log-linear testbed the band predicts the signs of the exact one-step changes "
          "of z_w and z_l, and the calibrated ratio lies in the band (our formula against our "
          "testbed).",
          "every judged testbed case agrees; the measured second-order error stays below the "
          "margin that selects the judged cases (2 eta^2 max|s|^4 (d_w + d_l)^2), so the "
          "first-order sign prediction is valid on every judged case",
          direction="all", kind="check", unit="seed", source="spec 4.4"),
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
    gold_prompts: int = 16
    gold_per_prompt: int = 8
    seeds: int = 2


SCALES = {
    "smoke": Config(losses=LOSSES, steps=20, seeds=2),
    "quick": Config(losses=LOSSES, steps=200, batch=16, n_train=2048, n_eval=512,
                    trl_rpo=False, parity_pairs=16, testbed_cases=2000, trace_every=10,
                    gold_prompts=32, gold_per_prompt=8, seeds=6),
    "full": Config(losses=("dpo", "ipo", "simpo", "cpo", "slic", "bce"), steps=300, batch=32,
                   n_train=4096, n_eval=1024, trl_rpo=True, parity_pairs=32,
                   testbed_cases=20000, trace_every=10, gold_prompts=64, gold_per_prompt=32,
                   seeds=10),
}


def run(config: Config, seed: int, progress) -> dict:
    from optzoo.reward_calibration.repro import toy
    from optzoo.reward_calibration.testbed import band_sign_check

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
    tp = data[1][0].pairs
    out["parity"] = toy.trl_parity(ref, tp.__class__(
        *(getattr(tp, f)[:config.parity_pairs] for f in
          ("prompts", "chosen", "rejected", "gold_chosen", "gold_rejected"))), seed=seed)
    progress.advance()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # RC skip warnings are counted instead
        results = toy.train_arms(ref, arms, data, steps=config.steps, batch=config.batch,
                                 lr=config.lr, seed=seed, phi=config.phi,
                                 ema_beta=config.ema_beta, trace_every=config.trace_every,
                                 progress=progress, gold_prompts=config.gold_prompts,
                                 gold_per_prompt=config.gold_per_prompt)
    out["arms"] = {_arm_name(a): r for a, r in zip(arms, results, strict=True)}
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
    return [r["arms"][arm][key] for r in per_seed]


def _losses(per_seed) -> list[str]:
    """The losses every seed ran at k = 1 (base and RC), in the canonical order."""
    have = set.intersection(*(set(r["arms"]) for r in per_seed)) if per_seed else set()
    extra = sorted({n.split("_")[0] for n in have} - set(LOSSES))
    return [lt for lt in (*LOSSES, *extra) if f"{lt}_k1_base" in have and f"{lt}_k1_rc" in have]


def _per_loss(per_seed, fn) -> dict:
    return {lt: fn(lt) for lt in _losses(per_seed)}


def judge(per_seed: list[dict]) -> list[Verdict]:
    c = {cl.id: cl for cl in CLAIMS}
    if not per_seed:
        raise ValueError("The 'per_seed' argument of judge must hold at least one seed. Got none.")

    def base(lt, key="dz_w"):
        return _vals(per_seed, f"{lt}_k1_base", key)

    def rc(lt, key="dz_w"):
        return _vals(per_seed, f"{lt}_k1_rc", key)

    def disp(lt):
        return {"base_displaced_rate": float(np.mean(base(lt, "displaced"))),
                "rc_displaced_rate": float(np.mean(rc(lt, "displaced")))}

    out = [decide(c["base_displaces"], _per_loss(per_seed, base))]
    for lt in LOSSES:
        out.append(decide(c[f"rc_{lt}"], rc(lt), numbers=disp(lt)))
    out.append(decide(c["rc_suppresses_loser"], _per_loss(per_seed, lambda lt: rc(lt, "dz_l"))))
    out.append(decide(c["rc_raises_winner_vs_base"],
                      _per_loss(per_seed, lambda lt: paired(rc(lt), base(lt)))))
    out.append(decide(c["rc_accuracy"], _per_loss(
        per_seed, lambda lt: paired(rc(lt, "accuracy"), base(lt, "accuracy")))))
    out.append(decide(c["low_overlap_control"],
                      paired(_vals(per_seed, "dpo_k10_rc", "dz_w"),
                             _vals(per_seed, "dpo_k10_base", "dz_w")),
                      numbers={"base_dz_w": float(np.mean(_vals(per_seed, "dpo_k10_base", "dz_w"))),
                               "rc_dz_w": float(np.mean(_vals(per_seed, "dpo_k10_rc", "dz_w")))}))
    out.append(decide(c["gold_reward"], _per_loss(
        per_seed, lambda lt: paired(rc(lt, "gold"), base(lt, "gold")))))
    out.append(_judge_rpo(per_seed, c["vs_rpo_alpha"]))
    par = [r["parity"] for r in per_seed]
    out.append(decide(c["trl_parity"],
                      [p["loss_abs_diff"] <= 1e-4 and p["grad_rel_diff"] <= 1e-4 for p in par],
                      numbers={"worst_loss_abs_diff": max(p["loss_abs_diff"] for p in par),
                               "worst_grad_rel_diff": max(p["grad_rel_diff"] for p in par)}))
    tb = [r["testbed"] for r in per_seed]
    ok = [t["agree_w"] == 1.0 and t["agree_l"] == 1.0 and bool(t["rho_nonpos_ok"])
          and bool(t["calibrated_in_band"]) and t["calibrated_disentangled"] == 1.0
          and t["max_err_over_eta2"] < 2.0 for t in tb]  # below the selection margin
    out.append(decide(c["band_exact"], ok, numbers={
        "checked_w": sum(t["n_checked_w"] for t in tb),
        "checked_l": sum(t["n_checked_l"] for t in tb),
        "worst_err_over_bound": max(t["max_err_over_eta2"] for t in tb)}))
    return out


def _judge_rpo(per_seed, claim: Claim) -> Verdict:
    """RC DPO against DPO + NLL: the real TRL run where every seed has one, else our loop."""
    rc = _vals(per_seed, "dpo_k1_rc", "dz_w")
    if all("trl_rpo" in r for r in per_seed):
        rpo, src = [r["trl_rpo"]["dz_w"] for r in per_seed], "TRL DPOTrainer run"
    else:
        rpo, src = _vals(per_seed, "dpo_k1_base_nll", "dz_w"), "our loop with TRL's sft term"
    return decide(claim, paired(rc, rpo), note=f"NLL baseline: {src}",
                  numbers={"rpo_dz_w": float(np.mean(rpo)), "source": src})


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths: list[Path] = []
    runs = [r for r in per_seed if "arms" in r]
    if not runs:
        return paths
    r0 = runs[0]
    losses = _losses(runs)
    fig, axes = new_figure(1, len(losses), figsize=(4 * len(losses), 3.2), squeeze=False)
    for ax, loss in zip(axes[0], losses, strict=True):
        for tag, col in (("base", "tab:red"), ("rc", "tab:blue")):
            tr = r0["arms"][f"{loss}_k1_{tag}"]["trace"]
            ax.plot(tr["step"], tr["dz_w_train"], color=col, label=f"{tag} z_w")
            ax.plot(tr["step"], tr["dz_l_train"], color=col, ls="--", label=f"{tag} z_l")
        ax.axhline(0, color="k", lw=0.5)
        ax.set_title(f"{loss}, k = 1 (seed {r0['seed']})")
        ax.set_xlabel("step")
        ax.set_ylabel("log-prob change vs reference")
    axes[0][0].legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "likelihood_traces.png", dpi=90))

    tr = r0["arms"].get("dpo_k1_rc", {}).get("trace", {})
    if tr.get("log_r"):
        fig, ax = new_figure(figsize=(5, 3.2))
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
        paths.append(save_figure(fig, outdir / "band_trace.png", dpi=90))

    names = list(r0["arms"])
    keys = ["displaced", "accuracy"] + (["gold"] if all("gold" in r0["arms"][n] for n in names)
                                        else [])
    fig, axes = new_figure(1, len(keys), figsize=(5 * len(keys), 3.4), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        vals = np.array([[r["arms"][n][key] for n in names] for r in runs])
        ax.bar(range(len(names)), vals.mean(0), yerr=vals.std(0) if len(runs) > 1 else None,
               color=["tab:blue" if "_rc" in n else "tab:red" for n in names])
        ax.set_xticks(range(len(names)), names, rotation=60, fontsize=7, ha="right")
        ax.set_title(f"{'held-out ' if key != 'gold' else 'sample '}{key} "
                     f"(mean over {len(runs)} seeds)")
    paths.append(save_figure(fig, outdir / "displacement_accuracy_gold.png", dpi=90))
    return paths
