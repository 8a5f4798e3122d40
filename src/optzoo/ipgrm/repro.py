"""Reproduction of IP-GRM's claims at CPU scale (E1 drift protocol, E2 throughput, E3 hacking).

E1 and E3 use the simulated judge (drift injected: a mechanism check, not evidence that LLM
judges drift); E2 times real decoding with a random-init tinylm GPT-2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo._core.rng import derive_seed, np_rng
from optzoo._core.stats import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    bootstrap_ci,
    paired_ci,
    verdict_from_interval,
)
from optzoo.repro.claim import Claim, Verdict

CLAIMS = [
    Claim("cache_throughput", "With real decoding compute, time per GRPO step orders cached < coupled < naive "
          "two-stage, and the cache's gain over coupled grows with the group size G (all pipelines reuse the "
          "shared question's KV prefix, as vLLM's prefix cache does; the plain variant is reported too).",
          "ms/step per pipeline at the largest G (min over reps); speedup vs coupled at largest vs smallest G",
          "paired log-ratio CIs: cached/coupled < 0, coupled/naive < 0; speedup(G_max) - speedup(G_min) > 0"),
    Claim("cost_model", "A FLOP + per-pass cost model fitted at the two smallest G predicts the times at "
          "larger G.", "mean absolute relative error of the out-of-sample predictions",
          "bootstrap CI of the error over seeds below 0.25"),
    Claim("hacking", "With a drifting coupled judge, GRPO hacks the reward (META/BRAG) while IP-GRM with the "
          "cache tracks gold quality.", "final gold quality and hack rate, ip_cache vs coupled (kappa > 0)",
          "paired CIs: gold(ip_cache) - gold(coupled) > 0 and hack(coupled) - hack(ip_cache) > 0"),
    Claim("gold_falls", "Under the drifting coupled judge the training reward rises while gold quality falls.",
          "coupled arm: final - initial reward and gold", "CIs: reward change > 0 and gold change < 0"),
    Claim("consistency", "A shared cached rubric removes within-group reward noise that independent rubrics "
          "add.", "within-group reward variance unexplained by gold quality, same responses",
          "paired log-ratio CI ip_cache / ip_nocache < 0"),
    Claim("drift_protocol", "measure_drift reports zero drift when the judge has none and detects drift "
          "when it has.", "relative score deviation under P+(Q,R+) and P-(Q,R-) vs P0(Q)",
          "kappa=0: every deviation exactly 0; kappa>0: bootstrap CI of both deviations > 0 on every seed"),
]


@dataclass(frozen=True)
class Config:
    groups: tuple = (2, 8)
    n_prompts: int = 2
    lengths: tuple = (16, 48, 24, 32)  # |Q|, |R|, L_P, L_J
    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 2
    steps: int = 15
    arms: tuple = ("coupled", "ip_cache")
    kappas: tuple = (2.0,)
    n_pairs: int = 40
    probe_groups: int = 32
    reps: int = 1


SCALES = {
    "smoke": Config(),
    "quick": Config(groups=(2, 4, 8, 16), lengths=(16, 48, 24, 32), n_embd=256, n_layer=4, n_head=4, reps=2,
                    steps=30, arms=("proxy", "coupled", "ip_nocache", "ip_cache"), kappas=(2.0, 0.0),
                    probe_groups=64),
    "full": Config(groups=(2, 4, 8, 16), n_prompts=4, lengths=(64, 192, 96, 128), n_embd=256, n_layer=4,
                   n_head=4, reps=3, steps=100, arms=("proxy", "coupled", "ip_nocache", "ip_cache"),
                   kappas=(2.0, 1.0, 0.0), n_pairs=200, probe_groups=256),
}


def _e1(config, seed):
    from optzoo.ipgrm.hacking import make_world
    from optzoo.ipgrm.reward import measure_drift
    from optzoo.ipgrm.simulated import SimulatedJudge

    world = make_world(config.n_pairs, derive_seed(seed, "e1"))
    rng = np_rng(seed, "e1pairs")
    pairs = []
    for q in world:
        ks = q.split("keywords: ")[1].split(".")[0].split()
        lo = int(q.split("Length: ")[1].split()[0])
        n_ok = lo + int(rng.integers(0, 4))
        pairs.append((q, " ".join(ks[:2] + [f"f{j:02d}" for j in range(n_ok - 2)]),
                      " ".join(ks[:1] + [f"f{j:02d}" for j in range(max(1, lo // 2))])))
    out = {}
    for kappa in (0.0, 1.0):
        j = SimulatedJudge(derive_seed(seed, "e1judge"), drift=kappa, resample=False)
        d = measure_drift(j, pairs, n_boot=1000, seed=seed)
        out[str(kappa)] = {"plus": d["plus"], "minus": d["minus"],
                           "max_abs": float(np.max(np.abs(d["plus_values"] + d["minus_values"])))}
    return out


def _e2(config, seed, progress):
    import torch

    from optzoo.ipgrm.throughput import (
        PIPELINES,
        Lengths,
        build_timing_model,
        fit_cost_model,
        pipeline_cost,
        run_pipeline,
    )

    torch.set_num_threads(1)
    L = Lengths(*config.lengths)
    model = build_timing_model(n_layer=config.n_layer, n_embd=config.n_embd, n_head=config.n_head,
                               vocab=512, n_positions=max(64, sum(config.lengths)), seed=seed)
    n_params = sum(p.numel() for n, p in model.named_parameters() if "wte" not in n and "wpe" not in n)
    run_pipeline("cached", model, n_prompts=1, group=2, lengths=L, seed=seed)  # warm-up
    out = {}
    for share, reps in ((True, config.reps), (False, 1)):
        rows = []
        for G in config.groups:
            best = {}
            for _ in range(reps):  # interleaved arms, same process and threads; min over reps
                for k in PIPELINES:
                    o = run_pipeline(k, model, n_prompts=config.n_prompts, group=G, lengths=L, seed=seed,
                                     prefix_sharing=share)
                    if k not in best or o["seconds"] < best[k]["seconds"]:
                        best[k] = o
                    progress.advance()
            for k in PIPELINES:
                o = best[k]
                flops = pipeline_cost(o["log"], n_layer=config.n_layer, d=config.n_embd, vocab=512,
                                      n_params=n_params)
                dec_rows = float(sum(b for b, t, c in o["log"] if t == 1))
                rows.append({"G": G, "pipeline": k, "ms": 1000 * o["seconds"], "flops": flops,
                             "passes": o["passes"], "decode_rows": dec_rows,
                             "prefill_tokens": o["prefill_tokens"], "decoded_tokens": o["decoded_tokens"]})
        small = [r for r in rows if r["G"] in config.groups[:2]]
        coef = fit_cost_model([[r["flops"], r["passes"], r["decode_rows"]] for r in small],
                              [r["ms"] for r in small])
        for r in rows:
            r["predicted_ms"] = float(np.dot(coef, [r["flops"], r["passes"], r["decode_rows"]]))
        held = [r for r in rows if r["G"] not in config.groups[:2]] or rows
        err = float(np.mean([abs(r["predicted_ms"] / r["ms"] - 1) for r in held]))
        out["shared" if share else "plain"] = {"rows": rows, "cost_model_error": err, "cost_model": coef}
    out["rows"] = out["shared"]["rows"]
    out["cost_model_error"] = out["shared"]["cost_model_error"]
    return out


def run(config: Config, seed: int, progress) -> dict:
    from optzoo.ipgrm.hacking import consistency_probe, run_grpo

    n_units = len(config.groups) * 3 * (config.reps + 1) + len(config.kappas) * len(config.arms) * config.steps
    progress.start(n_units, "ipgrm")
    out = {"e1": _e1(config, seed), "e2": _e2(config, seed, progress), "e3": {}}
    for kappa in config.kappas:
        for arm in config.arms:
            o = run_grpo(arm, seed=seed, steps=config.steps, kappa=kappa, drop_p=0.9 if kappa > 0 else 0.0,
                         progress=progress)
            out["e3"][f"{arm}@{kappa}"] = o
    out["probe"] = consistency_probe(seed=seed, n_groups=config.probe_groups)
    return out


def _tail(c, k=5):
    return float(np.mean(c[-k:]))


def _head(c, k=3):
    return float(np.mean(c[:k]))


def _ms(r, G, k):
    return next(x["ms"] for x in r["e2"]["rows"] if x["G"] == G and x["pipeline"] == k)


def _worst(vs):
    for v in (NOT_REPRODUCED, INCONCLUSIVE):
        if v in vs:
            return v
    return REPRODUCED


def judge(per_seed: list[dict]) -> list[Verdict]:
    out = []
    gs = sorted({x["G"] for x in per_seed[0]["e2"]["rows"]})
    gmax, gmin = gs[-1], gs[0]
    cc = paired_ci([_ms(r, gmax, "cached") for r in per_seed], [_ms(r, gmax, "coupled") for r in per_seed],
                   transform="logratio")
    cn = paired_ci([_ms(r, gmax, "coupled") for r in per_seed], [_ms(r, gmax, "naive") for r in per_seed],
                   transform="logratio")
    sp = paired_ci([_ms(r, gmax, "coupled") / _ms(r, gmax, "cached") for r in per_seed],
                   [_ms(r, gmin, "coupled") / _ms(r, gmin, "cached") for r in per_seed])
    vs = [verdict_from_interval(cc, higher_is_better=False), verdict_from_interval(cn, higher_is_better=False),
          verdict_from_interval(sp)]
    plain = {k: float(np.mean([next(x["ms"] for x in r["e2"]["plain"]["rows"] if x["G"] == gmax
                                    and x["pipeline"] == k) for r in per_seed])) for k in ("coupled", "naive", "cached")}
    out.append(Verdict("cache_throughput", _worst(vs),
                       f"G={gmax}: log(cached/coupled) {cc}, log(coupled/naive) {cn}; speedup gain G{gmax}-G{gmin} "
                       f"{sp}; without prefix reuse (mean ms, not judged): {plain}",
                       {"log_cached_over_coupled": cc.to_dict(), "log_coupled_over_naive": cn.to_dict(),
                        "speedup_gain": sp.to_dict(), "plain_ms_gmax": plain}))
    ce = bootstrap_ci([r["e2"]["cost_model_error"] for r in per_seed])
    out.append(Verdict("cost_model", verdict_from_interval(ce, threshold=0.25, higher_is_better=False),
                       f"out-of-sample relative error {ce}", ce.to_dict()))
    kap = [k for k in per_seed[0]["e3"] if k.startswith("coupled@") and float(k.split("@")[1]) > 0]
    if kap:
        k = kap[0].split("@")[1]
        gold = paired_ci([_tail(r["e3"][f"ip_cache@{k}"]["curves"]["gold"]) for r in per_seed],
                         [_tail(r["e3"][f"coupled@{k}"]["curves"]["gold"]) for r in per_seed])
        hack = paired_ci([_tail(r["e3"][f"coupled@{k}"]["curves"]["hack"]) for r in per_seed],
                         [_tail(r["e3"][f"ip_cache@{k}"]["curves"]["hack"]) for r in per_seed])
        out.append(Verdict("hacking", _worst([verdict_from_interval(gold), verdict_from_interval(hack)]),
                           f"kappa={k}: gold ip_cache-coupled {gold}; hack coupled-ip_cache {hack}",
                           {"gold_diff": gold.to_dict(), "hack_diff": hack.to_dict()}))
        c = [r["e3"][f"coupled@{k}"]["curves"] for r in per_seed]
        dr = bootstrap_ci([_tail(x["reward"]) - _head(x["reward"]) for x in c])
        dg = bootstrap_ci([_tail(x["gold"]) - _head(x["gold"]) for x in c])
        out.append(Verdict("gold_falls", _worst([verdict_from_interval(dr),
                                                 verdict_from_interval(dg, higher_is_better=False)]),
                           f"coupled arm: reward change {dr}; gold change {dg}",
                           {"reward_change": dr.to_dict(), "gold_change": dg.to_dict()}))
    else:
        for cid in ("hacking", "gold_falls"):
            out.append(Verdict(cid, INCONCLUSIVE, "no kappa > 0 run at this scale"))
    cons = paired_ci([r["probe"]["ip_cache"] for r in per_seed], [r["probe"]["ip_nocache"] for r in per_seed],
                     transform="logratio")
    out.append(Verdict("consistency", verdict_from_interval(cons, higher_is_better=False),
                       f"log(noise ip_cache / ip_nocache) {cons}", cons.to_dict()))
    zero = all(r["e1"]["0.0"]["max_abs"] == 0.0 for r in per_seed)
    pos = all(r["e1"]["1.0"][s]["low"] > 0 for r in per_seed for s in ("plus", "minus"))
    v = REPRODUCED if zero and pos else NOT_REPRODUCED
    out.append(Verdict("drift_protocol", v if len(per_seed) >= 2 else INCONCLUSIVE,
                       f"kappa=0 all deviations zero: {zero}; kappa=1 both CIs > 0 on all seeds: {pos}; "
                       f"mean plus {np.mean([r['e1']['1.0']['plus']['estimate'] for r in per_seed]):.4f}, "
                       f"minus {np.mean([r['e1']['1.0']['minus']['estimate'] for r in per_seed]):.4f}",
                       {"zero_at_kappa0": zero, "positive_at_kappa1": pos}))
    return out


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    paths = []
    runs = per_seed[0]["e3"]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    for name in runs:
        m = {k: np.mean([r["e3"][name]["curves"][k] for r in per_seed], 0) for k in ("reward", "gold", "kl")}
        axes[0].plot(m["reward"], label=name)
        axes[1].plot(m["gold"], label=name)
        axes[2].plot(m["kl"], label=name)
    for ax, t in zip(axes, ("training reward", "gold quality", "KL to init"), strict=True):
        ax.set_title(t)
        ax.set_xlabel("GRPO step")
    axes[0].legend(fontsize=6)
    fig.tight_layout()
    paths.append(outdir / "ipgrm_e3_dynamics.png")
    fig.savefig(paths[-1], dpi=80)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(4, 3))
    gs = sorted({x["G"] for x in per_seed[0]["e2"]["rows"]})
    for k in ("coupled", "naive", "cached"):
        ax.plot(gs, [np.mean([_ms(r, G, k) for r in per_seed]) for G in gs], "o-", label=k)
    ax.set_xlabel("group size G")
    ax.set_ylabel("ms per GRPO step")
    ax.legend()
    fig.tight_layout()
    paths.append(outdir / "ipgrm_e2_throughput.png")
    fig.savefig(paths[-1], dpi=80)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(4, 3))
    for i, kappa in enumerate(("0.0", "1.0")):
        for j, s in enumerate(("plus", "minus")):
            e = [r["e1"][kappa][s]["estimate"] for r in per_seed]
            ax.bar(2 * i + j, np.mean(e), yerr=np.std(e) if len(e) > 1 else 0)
    ax.set_xticks(range(4), ["k0 R+", "k0 R-", "k1 R+", "k1 R-"])
    ax.set_ylabel("relative drift")
    fig.tight_layout()
    paths.append(outdir / "ipgrm_e1_drift.png")
    fig.savefig(paths[-1], dpi=80)
    plt.close(fig)
    return paths
