"""Reproduction of Gladin et al., "Improved Stochastic Optimization of LogSumExp" (arXiv
2509.24894, ICML 2026) on bundled / generated data (California housing and MNIST are
downloads, so diabetes, digits and a synthetic set replace them).

A: KL-DRO least squares (diabetes + heavy-tailed synthetic): true-objective gap to the
   L-BFGS optimum after SGD, minibatch-LSE vs SumExp vs Safe-KL, batches {200, 20, 5}.
B: KL-DRO MLP on digits with 25% label noise: clean-test accuracy, true DRO objective,
   NaN/overflow runs (lam = 1 and 0.01).
C: semi-discrete entropic OT (eps = 0.1, 0.01): Safe-KL semi-dual vs POT ASGD and POT's
   minibatch dual, true semi-dual gap and transport-cost error; NaN runs.
P: deterministic properties (F - F_rho >= 0 and ~ linear in rho).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo._core.rng import np_rng
from optzoo._core.stats import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    paired_ci,
    verdict_all,
    verdict_from_interval,
)
from optzoo.repro.claim import Claim, Verdict

CLAIMS = [
    Claim("less_bias", "At small batches, SGD on the Safe-KL surrogate (rho = 0.01) reaches a lower TRUE "
          "LogSumExp objective than SGD on the minibatch LogSumExp.",
          "gap to the L-BFGS optimum after SGD, batches 20 and 5, both data sets",
          "paired CI of mean log(gap_safe / gap_minibatch) over seeds < 0"),
    Claim("lse_bias_grows", "The minibatch-LSE gap grows as the batch shrinks.",
          "minibatch-LSE gap at batch 5 vs batch 200", "paired CI of mean log(gap_5 / gap_200) > 0"),
    Claim("approx_order_rho", "0 <= LSE - F_rho and the gap shrinks about linearly in rho on bounded scores.",
          "F - F_rho on phi ~ N(0, 4), n = 1000, rho in {1e-2, 1e-3, 1e-4}",
          "all gaps >= 0 and log-log slope in [0.8, 1.2] on every seed"),
    Claim("stable", "Safe-KL never overflows; SumExp (DRO, lam = 0.01) and naive-exp POT solvers (OT, eps = 0.01) do.",
          "NaN/inf runs over each method's lr grid and all seeds",
          "safe count = 0 and baseline count > 0"),
    Claim("dro_accuracy", "Safe-KL DRO training is at least as accurate on clean test data as SumExp (lam = 1).",
          "clean-test accuracy of safe (rho = 0.01) minus SumExp, each at its validation-chosen lr",
          "paired CI of the difference > -0.01 (non-inferiority, 1 point)"),
    Claim("eot", "The Safe-KL semi-dual solver reaches a true dual gap no larger than POT's ASGD at the same "
          "number of sampled source points (INFERRED application).",
          "true semi-dual gap at eps = 0.1 and 0.01", "paired CI of mean log(gap_safe / gap_asgd) < 0"),
]


@dataclass(frozen=True)
class Config:
    parts: tuple = ("A", "P")
    datasets: tuple = ("diabetes",)
    batches: tuple = (20,)
    epochs: int = 3
    rhos: tuple = (0.01,)
    lr_lo: float = -6.0
    lr_hi: float = -1.0
    n_lr: int = 11
    lams: tuple = (1.0, 0.01)
    b_rhos: tuple = (0.1, 0.01)
    b_lr_lo: float = -4.0
    b_lr_hi: float = 0.0
    b_n_lr: int = 5
    hidden: int = 32
    b_epochs: int = 10
    b_batch: int = 50
    c_eps: tuple = (0.1, 0.01)
    c_n_source: int = 1000
    c_n_target: int = 100
    c_samples: int = 4000
    c_batch: int = 50
    c_lr_mults: tuple = (0.3, 1.0, 3.0, 10.0)
    c_rho: float = 1e-3


SCALES = {
    "smoke": Config(),
    "quick": Config(parts=("A", "B", "C", "P"), datasets=("diabetes", "synthetic"), batches=(200, 20, 5),
                    epochs=8, rhos=(0.1, 0.01, 0.001)),
    "full": Config(parts=("A", "B", "C", "P"), datasets=("diabetes", "synthetic"), batches=(200, 20, 5),
                   epochs=50, rhos=(0.1, 0.01, 0.001, 0.0001), lr_lo=-7.0, lr_hi=0.0, n_lr=15, b_epochs=40,
                   b_n_lr=9, c_n_source=5000, c_n_target=500, c_samples=50000, c_eps=(0.1, 0.03, 0.01),
                   c_lr_mults=(0.1, 0.3, 1.0, 3.0, 10.0, 30.0)),
}


def _properties(seed: int) -> dict:
    import torch

    from optzoo.safe_kl.logsumexp import exact_logsumexp, safe_kl_logsumexp

    phi = torch.as_tensor(np_rng(seed, "P").normal(0.0, 2.0, size=1000))
    F = float(exact_logsumexp(phi))
    rhos = [1e-1, 1e-2, 1e-3, 1e-4]
    gaps = [F - float(safe_kl_logsumexp(phi, rho=r, normalized=True)) for r in rhos]
    slope = float(np.polyfit(np.log(rhos[1:]), np.log(np.maximum(gaps[1:], 1e-300)), 1)[0])
    return {"rhos": rhos, "gaps": gaps, "slope": slope}


def run(config: Config, seed: int, progress) -> dict:
    out: dict = {"seed": seed}
    if "P" in config.parts:
        out["P"] = _properties(seed)
    if "A" in config.parts:
        from optzoo.safe_kl._repro_regression import run_regression

        out["A"] = run_regression(config, seed, progress)
    if "B" in config.parts:
        from optzoo.safe_kl._repro_dro import run_dro

        out["B"] = run_dro(config, seed, progress)
    if "C" in config.parts:
        from optzoo.safe_kl._repro_ot import run_ot

        out["C"] = run_ot(config, seed, progress)
    return out


def _pos(x: float) -> float:
    return max(float(x), 1e-12)


def judge(per_seed: list[dict]) -> list[Verdict]:
    v: list[Verdict] = []
    # less_bias / lse_bias_grows (A)
    lr_safe, lr_grow, detail = [], [], {}
    for r in per_seed:
        A = r.get("A")
        if not A or "safe_0.01" not in A["methods"]:
            continue
        ls, lg = [], []
        for dn, d in A["datasets"].items():
            for bs, res in d["batches"].items():
                detail[f"{dn}/b{bs}"] = detail.get(f"{dn}/b{bs}", []) + [
                    (res["safe_0.01"]["gap"], res["minibatch_lse"]["gap"])]
                if int(bs) <= 20:
                    ls.append(np.log(_pos(res["safe_0.01"]["gap"])) - np.log(_pos(res["minibatch_lse"]["gap"])))
            if "5" in d["batches"] and "200" in d["batches"]:
                lg.append(np.log(_pos(d["batches"]["5"]["minibatch_lse"]["gap"]))
                          - np.log(_pos(d["batches"]["200"]["minibatch_lse"]["gap"])))
        if ls:
            lr_safe.append(float(np.mean(ls)))
        if lg:
            lr_grow.append(float(np.mean(lg)))
    means = {k: [float(np.mean([a for a, _ in x])), float(np.mean([b for _, b in x]))] for k, x in detail.items()}
    if lr_safe:
        ci = paired_ci(lr_safe, [0.0] * len(lr_safe))
        v.append(Verdict("less_bias", verdict_from_interval(ci, higher_is_better=False),
                         f"mean log(gap_safe/gap_lse) at batch<=20: {ci}",
                         {"log_ratio": ci.to_dict(), "mean_gaps_safe_lse": means}))
    else:
        v.append(Verdict("less_bias", INCONCLUSIVE, "experiment A not run at this scale"))
    if lr_grow:
        ci = paired_ci(lr_grow, [0.0] * len(lr_grow))
        v.append(Verdict("lse_bias_grows", verdict_from_interval(ci), f"mean log(gap_b5/gap_b200): {ci}",
                         {"log_ratio": ci.to_dict()}))
    else:
        v.append(Verdict("lse_bias_grows", INCONCLUSIVE, "needs batches 5 and 200 (quick scale)"))
    # approx_order_rho (P)
    P = [r["P"] for r in per_seed if "P" in r]
    holds = [min(p["gaps"]) >= 0 and 0.8 <= p["slope"] <= 1.2 for p in P]
    v.append(Verdict("approx_order_rho", verdict_all(holds),
                     f"slopes {[round(p['slope'], 3) for p in P]}, gaps at rho=1e-3 "
                     f"{[round(p['gaps'][2], 5) for p in P]}", {"slopes": [p["slope"] for p in P]}))
    # stable (B, C)
    cnt = {"safe_dro": 0, "sumexp_dro": 0, "safe_ot": 0, "pot_ot": 0}
    seen = False
    for r in per_seed:
        if "B" in r:
            seen = True
            for k, m in r["B"]["methods"].items():
                if k.endswith("lam=0.01") and k.startswith("safe"):
                    cnt["safe_dro"] += m["failed_runs"]
                if k == "sumexp@lam=0.01":
                    cnt["sumexp_dro"] += m["failed_runs"]
        if "C" in r and "0.01" in r["C"]["eps"]:
            e = r["C"]["eps"]["0.01"]
            cnt["safe_ot"] += e["safe"]["failed_runs"]
            cnt["pot_ot"] += e["pot_asgd"]["failed_runs"] + e["pot_dual"]["failed_runs"]
    if not seen:
        v.append(Verdict("stable", INCONCLUSIVE, "experiments B and C not run at this scale", cnt))
    else:
        ok = cnt["safe_dro"] == 0 and cnt["safe_ot"] == 0
        bad = cnt["sumexp_dro"] > 0 or cnt["pot_ot"] > 0
        v.append(Verdict("stable", REPRODUCED if ok and bad else NOT_REPRODUCED,
                         f"NaN/inf runs: {cnt}", cnt))
    # dro_accuracy (B)
    s, e = [], []
    for r in per_seed:
        if "B" in r:
            ms = r["B"]["methods"]
            a, b = ms["safe_0.01@lam=1"]["test_acc"], ms["sumexp@lam=1"]["test_acc"]
            s.append(a if np.isfinite(a) else 0.0)
            e.append(b if np.isfinite(b) else 0.0)
    if s:
        ci = paired_ci(s, e)
        v.append(Verdict("dro_accuracy", verdict_from_interval(ci, threshold=-0.01),
                         f"test acc safe - SumExp: {ci}", {"diff": ci.to_dict(), "safe": s, "sumexp": e}))
    else:
        v.append(Verdict("dro_accuracy", INCONCLUSIVE, "experiment B not run at this scale"))
    # eot (C)
    lr = []
    for r in per_seed:
        if "C" in r:
            g = [np.log(_pos(e["safe"]["gap"])) - np.log(_pos(e["pot_asgd"]["gap"]))
                 if np.isfinite(e["pot_asgd"]["gap"]) else -np.inf for e in r["C"]["eps"].values()]
            lr.append(float(np.mean(np.maximum(g, -20.0))))
    if lr:
        ci = paired_ci(lr, [0.0] * len(lr))
        v.append(Verdict("eot", verdict_from_interval(ci, higher_is_better=False),
                         f"mean log(gap_safe/gap_asgd): {ci}", {"log_ratio": ci.to_dict()}))
    else:
        v.append(Verdict("eot", INCONCLUSIVE, "experiment C not run at this scale"))
    return v


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from optzoo.safe_kl.logsumexp import f_rho

    outdir = Path(outdir)
    paths = []
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    for rho in (0.5, 0.2, 0.1, 0.01):
        t = np.linspace(0, 1 / rho, 400)
        ax.plot(t, f_rho(t, rho) - f_rho(1.0, rho), label=f"rho={rho:g}")
    t = np.linspace(1e-6, 8, 300)
    ax.plot(t, t * np.log(t) - t + 1, "k--", label="KL: t ln t - t + 1")
    ax.set_xlim(0, 8)
    ax.set_ylim(-0.2, 6)
    ax.set_xlabel("t = dnu/dmu")
    ax.set_title("Safe-KL generator (normalised)")
    ax.legend(fontsize=7)
    paths.append(outdir / "f_rho.png")
    fig.savefig(paths[-1], dpi=90, bbox_inches="tight")
    plt.close(fig)

    A = [r["A"] for r in per_seed if "A" in r]
    if A:
        dsets = list(A[0]["datasets"])
        bs = list(A[0]["datasets"][dsets[0]]["batches"])
        fig, axes = plt.subplots(len(dsets), len(bs), figsize=(3.6 * len(bs), 2.8 * len(dsets)), squeeze=False)
        for i, dn in enumerate(dsets):
            for j, b in enumerate(bs):
                ax = axes[i, j]
                for name in A[0]["datasets"][dn]["batches"][b]:
                    cur = np.array([a["datasets"][dn]["batches"][b][name]["gap_curve"] for a in A], float)
                    m = np.nanmean(np.maximum(cur, 1e-8), 0)
                    ax.plot(m, label=name)
                ax.set_yscale("log")
                ax.set_title(f"{dn}, batch {b}", fontsize=9)
                ax.set_xlabel("epoch")
                ax.set_ylabel("true objective - optimum")
        axes[0, 0].legend(fontsize=6)
        paths.append(outdir / "A_gap_vs_epoch.png")
        fig.savefig(paths[-1], dpi=90, bbox_inches="tight")
        plt.close(fig)
    C = [r["C"] for r in per_seed if "C" in r]
    if C:
        eps = list(C[0]["eps"])
        fig, axes = plt.subplots(1, len(eps), figsize=(4 * len(eps), 3), squeeze=False)
        for j, e in enumerate(eps):
            ax = axes[0, j]
            for name in ("safe", "pot_asgd", "pot_dual"):
                cur = np.array([c["eps"][e][name]["gap_curve"] for c in C], float)
                x = np.linspace(1, len(cur[0]), len(cur[0])) / len(cur[0])
                ax.plot(x, np.nanmean(np.maximum(cur, 1e-8), 0), "o-", label=name)
            ax.set_yscale("log")
            ax.set_xlabel("fraction of the sample budget")
            ax.set_ylabel("true semi-dual gap")
            ax.set_title(f"eps = {e}")
        axes[0, 0].legend(fontsize=7)
        paths.append(outdir / "C_ot_gap.png")
        fig.savefig(paths[-1], dpi=90, bbox_inches="tight")
        plt.close(fig)
    return paths
