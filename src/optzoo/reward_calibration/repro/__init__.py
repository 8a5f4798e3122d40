"""Reproduction of reward calibration (arXiv 2604.18239) on the tinylm toy language, on records.

Per seed: (1) TRL parity of our DPO loss and gradients on one identical batch (a check);
(2) SFT reference (the ``toy`` checkpoint, else our own seeded SFT), then DPO / IPO / SimPO with
and without reward calibration (RC) on high-overlap pairs (k = 1 substituted token) and DPO on
low-overlap pairs (k = 10), plus DPO + NLL (TRL's ``sft`` term, the old ``rpo_alpha``) in the
same loop, and, where the scale asks for it, a real TRL ``DPOTrainer`` run with that NLL term;
the gold reward of policy samples for every arm; (3) the exact log-linear testbed of the
disentanglement band (a check). All arms share reference, pairs, batch order, steps, optimiser
and learning rate. Nothing is tuned (paper/code defaults beta = 0.1, tau = 0.1,
ema_beta = 0.98, phi = LM head, rpo_alpha = 1).

Arms (record field ``arm``; ``part`` = the loss):

* ``rc``: the loss with reward calibration (the paper's method), k = 1;
* ``base``: the same trainer with calibration off and nothing else changed (the control of
  every paper claim: the credited mechanism, the RC rescaling, removed);
* ``rc_k10`` / ``base_k10``: DPO with / without RC on low-overlap pairs (k = 10);
* ``nll``: DPO + NLL in our loop; ``nll_trl``: the real TRL run (full only);
* ``ours``: the checks (TRL parity, exact band testbed).

Issue 40: the room moved from its own ``judge()`` to records, declared evidence and a control
per claim; ``rc_suppresses_loser`` became a check (RC scales the loser's incentive by
1/alpha > 0 and never flips it, so the loser falls whenever the base objective pushes it down);
statements that are the spec's, not the abstract's, are findings.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo.repro.claim import Claim
from optzoo.repro.evidence import Control, Custom, Paired, Record, Universal, Value, records_of
from optzoo.repro.figures import new_figure, save_figure

__all__ = ["CLAIMS", "HEADLINE", "SCALES", "Config", "figures", "notes", "run", "training_arms"]

LOSSES = ("dpo", "ipo", "simpo")

#: One torch thread per unit: the tiny model gains nothing from a second intra-op thread, and
#: on a loaded machine two spinning threads made a quick unit several times slower (pilot).
MAX_THREADS = 1

#: "At or above the reference" for a held-out mean log-likelihood change: non-inferior to 0
#: within this many nats (ours; the summed response log-probability has 11 tokens).
PRESERVE_MARGIN = 0.1

#: The control of every paper claim: the same trainer with calibration off, nothing else
#: changed (same reference, pairs, batch order, steps, optimiser, learning rate, loss).
NO_RC = Control(
    arms={"rc": "base"},
    removes="reward calibration (the alpha rescaling of the chosen/rejected gradients toward the "
            "band centre) switched off; the same loss, reference, pairs, batch order, steps, Adam "
            "and learning rate",
    credits="abstract: 'we propose reward calibration (RC), a plug-and-play method that "
            "adaptively rebalances the updates for chosen and rejected responses to satisfy the "
            "DB'; 'RC leads to more disentangled dynamics, with better downstream performance'")

_PRESERVE = ("abstract: the DB tells 'when training can follow the desired path: suppress the "
             "loser while preserving the winner'; RC 'rebalances the updates ... to satisfy the "
             "DB' (title: 'Preserve the Winner')")


def _only(evidence, part: str):
    """Custom evidence: ``evidence`` restricted to one part (one loss)."""
    def fn(per_seed, sub):
        return evidence.collect([[r for r in seed if r.part == part] for seed in per_seed], sub)
    return fn


def _vs_nll(per_seed, sub):
    """RC DPO against DPO + NLL: the real TRL run where every seed has one, else our loop."""
    trl = all(any(r.arm == "nll_trl" for r in seed) for seed in per_seed)
    return _only(Paired("dz_w", "rc", "nll_trl" if trl else "nll"), "dpo")(per_seed, sub)


def _rc_winner(loss: str) -> Claim:
    return Claim(
        f"rc_{loss}",
        f"With {loss.upper() if loss != 'simpo' else 'SimPO'} and high-overlap pairs (k = 1), reward "
        "calibration keeps the chosen likelihood at or above the reference (preserves the winner).",
        f"held-out mean dz_w of the RC {loss} arm after training (nats vs the reference)",
        direction="noninferior", threshold=0.0, margin=PRESERVE_MARGIN, source=_PRESERVE,
        evidence=Custom(_only(Value("dz_w", "rc"), loss), f"dz_w of rc, part {loss}", uses=("rc",)),
        control=NO_RC)


CLAIMS = [
    # --- the paper's claims (abstract), each against RC switched off -------------------------
    _rc_winner("dpo"),
    _rc_winner("ipo"),
    _rc_winner("simpo"),
    Claim("rc_winner_after_transient",
          "After the early stage (the first half of training), RC keeps the chosen likelihood from "
          "falling: its held-out change over the second half is at or above 0, for every loss.",
          "held-out mean dz_w at the end minus at half-way (nats), RC arm, per loss",
          direction="noninferior", threshold=0.0, margin=PRESERVE_MARGIN,
          source="abstract: 'suppress the loser while preserving the winner, possibly after an "
                 "early stage'",
          evidence=Value("dz_w_late", "rc"), control=NO_RC),
    Claim("rc_raises_winner_vs_base",
          "RC gives more disentangled dynamics: it ends with a higher chosen likelihood than the "
          "same objective without it.",
          "paired held-out mean dz_w, RC - base (nats), per loss",
          direction="greater", threshold=0.0,
          source="abstract: 'RC leads to more disentangled dynamics'",
          evidence=Paired("dz_w", "rc", "base"), control=NO_RC),
    Claim("gold_reward",
          "RC improves the quality of what the policy generates (the paper's downstream claim, "
          "hedged by its authors as 'often' / 'observed across several settings').",
          "paired mean gold reward of temperature-1 samples, RC - base, per loss",
          direction="greater", threshold=0.0,
          source="abstract: 'with better downstream performance observed across several settings' "
                 "(v2: 'often improves downstream performance')",
          evidence=Paired("gold", "rc", "base"), control=NO_RC),
    # --- findings: the spec's expectations and our comparisons, not the abstract's -----------
    Claim("base_displaces",
          "With high-overlap pairs (k = 1) the base objectives lower the chosen likelihood "
          "(likelihood displacement, the problem RC addresses). The abstract's premise, but our "
          "k = 1 world is built to displace: evidence about the toy, not the paper.",
          "held-out mean dz_w of the base arm (nats vs the reference), per loss",
          direction="less", threshold=0.0, kind="finding",
          source="abstract premise; spec 1 (why DPO displaces), 7 (verify displacement at k = 1)",
          evidence=Value("dz_w", "base")),
    Claim("rc_accuracy",
          "RC keeps preference accuracy: non-inferior to the base objective by 2 points.",
          "paired held-out preference accuracy 1[m~ > 0], RC - base, per loss",
          direction="noninferior", threshold=0.0, margin=0.02, kind="finding",
          source="spec 3 judge (non-inferiority)", evidence=Paired("accuracy", "rc", "base")),
    Claim("low_overlap_control",
          "With low-overlap pairs (k = 10, rho near 0) base DPO and RC behave alike.",
          "paired held-out mean dz_w, RC - base DPO at k = 10 (nats)",
          direction="equivalent", threshold=0.0, margin=0.5, kind="finding",
          source="spec 3 expected", evidence=Paired("dz_w", "rc_k10", "base_k10")),
    Claim("vs_rpo_alpha",
          "RC preserves the winner at least as well as TRL's NLL term (rpo_alpha = 1), "
          "without an extra loss term (our comparison; the spec says RC may lose to it).",
          "paired held-out mean dz_w, RC DPO - DPO + NLL (nats)",
          direction="noninferior", threshold=0.0, margin=PRESERVE_MARGIN, kind="finding",
          source="spec 3 expected (versus rpo_alpha)",
          evidence=Custom(_vs_nll, "dz_w: rc vs nll_trl (the TRL run) where every seed has it, else "
                          "vs nll (our loop), part dpo", uses=("rc", "nll", "nll_trl"))),
    # --- checks of our own code (also unit tests) --------------------------------------------
    Claim("rc_suppresses_loser",
          "With RC the rejected likelihood still falls. Near-automatic: RC multiplies the loser's "
          "incentive by 1/alpha > 0 and never flips its sign, so the loser falls whenever the base "
          "objective pushes it down (a property of the rescaling, tested in the unit tests).",
          "held-out mean dz_l of the RC arm (nats), per loss",
          direction="less", threshold=0.0, kind="check",
          source="title ('Suppress the Loser'); spec C1", evidence=Value("dz_l", "rc")),
    Claim("trl_parity",
          "Our DPO loss and its parameter gradients equal TRL DPOTrainer's on identical "
          "batches (our code against the library).",
          "|loss diff| <= 1e-4 and max relative gradient diff <= 1e-4 on the seed's batch",
          direction="all", kind="check", unit="seed", source="spec 4.9",
          evidence=Universal("trl_parity", "ours")),
    Claim("band_exact",
          "On the log-linear testbed the band predicts the signs of the exact one-step changes "
          "of z_w and z_l, and the calibrated ratio lies in the band (our formula against our "
          "testbed).",
          "every judged testbed case agrees; the measured second-order error stays below the "
          "margin that selects the judged cases (2 eta^2 max|s|^4 (d_w + d_l)^2), so the "
          "first-order sign prediction is valid on every judged case",
          direction="all", kind="check", unit="seed", source="spec 4.4",
          evidence=Universal("band_exact", "ours")),
]

#: The claims that test the abstract's headline (papers.py names them): preserve the winner
#: (strictly, and after the early stage), more disentangled dynamics, better downstream results.
HEADLINE = ("rc_dpo", "rc_winner_after_transient", "rc_raises_winner_vs_base", "gold_reward")


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
                    gold_prompts=32, gold_per_prompt=8, seeds=8),
    "full": Config(losses=("dpo", "ipo", "simpo", "cpo", "slic", "bce"), steps=300, batch=32,
                   n_train=4096, n_eval=1024, trl_rpo=True, parity_pairs=32,
                   testbed_cases=20000, trace_every=10, gold_prompts=64, gold_per_prompt=32,
                   seeds=10),
}

#: Per-arm scalars written as records (held-out means unless named otherwise).
_METRICS = ("dz_w", "dz_l", "displaced", "accuracy", "gold", "skipped", "dz_w_late", "dz_l_late")
_TRACE = ("dz_w_train", "dz_l_train", "loss", "log_r", "log_r_star", "rho", "alpha")


def _role(arm: dict) -> tuple[str, str]:
    """``(arm, part)`` record fields of a training arm."""
    if arm.get("nll_weight"):
        return "nll", arm["loss_type"]
    role = "rc" if arm["rc"] else "base"
    return (role if arm["k"] == 1 else f"{role}_k{arm['k']}"), arm["loss_type"]


def _arm_records(arm: str, part: str, res: dict) -> list[Record]:
    res = dict(res)
    if "dz_w_mid" in res:
        res["dz_w_late"] = res["dz_w"] - res["dz_w_mid"]
        res["dz_l_late"] = res["dz_l"] - res["dz_l_mid"]
    out = [Record(part, arm, "heldout", m, res[m]) for m in _METRICS if m in res]
    tr = res.get("trace") or {}
    steps = tr.get("step", [])
    for key in _TRACE:
        vals = tr.get(key) or []
        for step, v in zip(steps[len(steps) - len(vals):], vals, strict=True):
            out.append(Record(part, arm, f"t{step}", f"trace_{key}", v, x=step))
    if tr.get("rho"):  # mean traced cosine over the second half (the overlap the band sees)
        rho = tr["rho"][len(tr["rho"]) // 2:]
        out.append(Record(part, arm, "heldout", "rho_late", float(np.mean(rho))))
    return out


def training_arms(config: Config) -> list[dict]:
    """The arms ``toy.train_arms`` trains in one unit: every ``rc`` arm has a ``base`` twin
    that differs only in ``rc`` (calibration off), the control of every paper claim."""
    arms = [dict(loss_type=lt, rc=rc, k=1) for lt in config.losses for rc in (False, True)]
    if config.control:
        arms += [dict(loss_type="dpo", rc=rc, k=10) for rc in (False, True)]
    if config.nll_arm:
        arms.append(dict(loss_type="dpo", rc=False, k=1, nll_weight=config.rpo_alpha))
    return arms


def run(config: Config, seed: int, progress) -> list[Record]:
    from optzoo.reward_calibration.repro import toy
    from optzoo.reward_calibration.testbed import band_sign_check

    arms = training_arms(config)
    progress.start(config.steps + 3, "reward_calibration")
    out: list[Record] = []
    tb = band_sign_check(seed, n_cases=config.testbed_cases)
    ok = (tb["agree_w"] == 1.0 and tb["agree_l"] == 1.0 and bool(tb["rho_nonpos_ok"])
          and bool(tb["calibrated_in_band"]) and tb["calibrated_disentangled"] == 1.0
          and tb["max_err_over_eta2"] < 2.0)  # below the selection margin
    out += [Record("", "ours", "testbed", "band_exact", float(ok)),
            Record("", "ours", "testbed", "band_checked_w", tb["n_checked_w"]),
            Record("", "ours", "testbed", "band_checked_l", tb["n_checked_l"]),
            Record("", "ours", "testbed", "band_err_over_eta2", tb["max_err_over_eta2"])]
    progress.advance()
    ref, source = toy.reference_model(seed, sft_steps=config.sft_steps)
    out.append(Record("", "ours", "reference", "ref_is_checkpoint",
                      float(source.startswith("checkpoint"))))
    ks = sorted({a["k"] for a in arms})
    data = {k: toy.make_data(seed, k=k, n_train=config.n_train, n_eval=config.n_eval)
            for k in ks}
    tp = data[1][0].pairs
    par = toy.trl_parity(ref, tp.__class__(
        *(getattr(tp, f)[:config.parity_pairs] for f in
          ("prompts", "chosen", "rejected", "gold_chosen", "gold_rejected"))), seed=seed)
    out += [Record("", "ours", "batch", "trl_parity",
                   float(par["loss_abs_diff"] <= 1e-4 and par["grad_rel_diff"] <= 1e-4)),
            Record("", "ours", "batch", "parity_loss_abs_diff", par["loss_abs_diff"]),
            Record("", "ours", "batch", "parity_grad_rel_diff", par["grad_rel_diff"])]
    progress.advance()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # RC skip warnings are counted instead
        results = toy.train_arms(ref, arms, data, steps=config.steps, batch=config.batch,
                                 lr=config.lr, seed=seed, phi=config.phi,
                                 ema_beta=config.ema_beta, trace_every=config.trace_every,
                                 progress=progress, gold_prompts=config.gold_prompts,
                                 gold_per_prompt=config.gold_per_prompt, eval_mid=True)
    for a, res in zip(arms, results, strict=True):
        out += _arm_records(*_role(a), res)
    if config.trl_rpo:
        held = data[1][1]
        ref_held = toy._logps_pairs(ref, held)
        res = toy.trl_rpo_arm(ref, data[1][0], held, steps=config.steps, batch=config.batch,
                              lr=config.lr, seed=seed, rpo_alpha=config.rpo_alpha,
                              ref_held=ref_held)
        out += _arm_records("nll_trl", "dpo", res)
    progress.advance()
    return out


def _mean(per_seed, metric: str, arm: str, part: str | None = None) -> float | None:
    vals = [r.value for s in records_of(per_seed, metric=metric, arm=arm, part=part) for r in s]
    return float(np.mean(vals)) if vals else None


def notes(per_seed) -> dict[str, str]:
    """What the control arms and the diagnostics did, per claim."""
    out = {}
    for lt in LOSSES:
        b, r = _mean(per_seed, "displaced", "base", lt), _mean(per_seed, "displaced", "rc", lt)
        if b is not None and r is not None:
            out[f"rc_{lt}"] = (f"Held-out displacement rate P(dz_w < 0): base {b:.2f}, RC {r:.2f}; "
                               f"base dz_w {_mean(per_seed, 'dz_w', 'base', lt):.3g} nats")
    late = [f"{lt}: base {_mean(per_seed, 'dz_w_late', 'base', lt):.3g}"
            for lt in LOSSES if _mean(per_seed, "dz_w_late", "base", lt) is not None]
    if late:
        out["rc_winner_after_transient"] = "Second-half dz_w without RC (mean): " + ", ".join(late)
    r1, r10 = _mean(per_seed, "rho_late", "rc", "dpo"), _mean(per_seed, "rho_late", "rc_k10", "dpo")
    if r1 is not None and r10 is not None:
        out["low_overlap_control"] = (f"Mean traced rho (LM-head phi, second half): k = 1 {r1:.3f}, "
                                      f"k = 10 {r10:.3f}")
    trl = all(any(r.arm == "nll_trl" for r in seed) for seed in per_seed)
    out["vs_rpo_alpha"] = ("NLL baseline: " + ("TRL DPOTrainer run" if trl
                                               else "our loop with TRL's sft term"))
    ck = [r.value for s in records_of(per_seed, metric="ref_is_checkpoint") for r in s]
    if ck:
        out["base_displaces"] = (f"Reference: the committed toy checkpoint on {int(sum(ck))}/{len(ck)} "
                                 "seeds, else our seeded SFT")
    return out


def _trace(per_seed, metric: str, arm: str, part: str, seed: int = 0):
    rows = sorted((r.x, r.value) for r in per_seed[seed]
                  if r.metric == f"trace_{metric}" and r.arm == arm and r.part == part)
    return np.array([x for x, _ in rows]), np.array([v for _, v in rows])


def figures(per_seed, outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths: list[Path] = []
    if not per_seed or not per_seed[0]:
        return paths
    seed0 = per_seed[0]
    losses = [lt for lt in dict.fromkeys(r.part for r in seed0 if r.arm == "rc" and r.part)]
    if not losses:
        return paths
    fig, axes = new_figure(1, len(losses), figsize=(4 * len(losses), 3.2), squeeze=False)
    for ax, loss in zip(axes[0], losses, strict=True):
        for tag, col in (("base", "tab:red"), ("rc", "tab:blue")):
            x, w = _trace(per_seed, "dz_w_train", tag, loss)
            _, lo = _trace(per_seed, "dz_l_train", tag, loss)
            ax.plot(x, w, color=col, label=f"{tag} z_w")
            ax.plot(x, lo, color=col, ls="--", label=f"{tag} z_l")
        ax.axhline(0, color="k", lw=0.5)
        ax.set_title(f"{loss}, k = 1 (first seed)")
        ax.set_xlabel("step")
        ax.set_ylabel("log-prob change vs reference")
    axes[0][0].legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "likelihood_traces.png", dpi=90))

    steps, log_r = _trace(per_seed, "log_r", "rc", "dpo")
    if len(log_r):
        _, ls = _trace(per_seed, "log_r_star", "rc", "dpo")
        _, rho = _trace(per_seed, "rho", "rc", "dpo")
        _, alpha = _trace(per_seed, "alpha", "rc", "dpo")
        rho = np.clip(rho, 1e-6, 1.0)
        fig, ax = new_figure(figsize=(5, 3.2))
        ax.fill_between(steps, ls + np.log(rho), ls - np.log(rho), color="tab:green", alpha=0.25,
                        label="band (rho > 0)")
        ax.plot(steps, log_r, color="tab:red", label="log r (raw)")
        ax.plot(steps, log_r + 2 * np.log(alpha), color="tab:blue", label="log alpha^2 r (calibrated)")
        ax.set_xlabel("step")
        ax.set_title("DPO + RC, k = 1: band trace (LM-head phi)")
        ax.legend(fontsize=7)
        paths.append(save_figure(fig, outdir / "band_trace.png", dpi=90))

    names = list(dict.fromkeys((r.arm, r.part) for r in seed0 if r.metric == "displaced"))
    keys = [k for k in ("displaced", "accuracy", "gold")
            if all(any(r.metric == k and (r.arm, r.part) == n for r in seed0) for n in names)]
    fig, axes = new_figure(1, len(keys), figsize=(5 * len(keys), 3.4), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        vals = np.array([[next(r.value for r in s if r.metric == key and (r.arm, r.part) == n)
                          for n in names] for s in per_seed])
        ax.bar(range(len(names)), vals.mean(0), yerr=vals.std(0) if len(per_seed) > 1 else None,
               color=["tab:blue" if a.startswith("rc") else "tab:red" for a, _ in names])
        ax.set_xticks(range(len(names)), [f"{p}_{a}" for a, p in names], rotation=60, fontsize=7,
                      ha="right")
        ax.set_title(f"{'held-out ' if key != 'gold' else 'sample '}{key} "
                     f"(mean over {len(per_seed)} seeds)")
    paths.append(save_figure(fig, outdir / "displacement_accuracy_gold.png", dpi=90))
    return paths
