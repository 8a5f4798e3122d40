"""Reproduction of IP-GRM's claims at CPU scale (E1 drift protocol, E2 throughput, E3 hacking).

E2 decodes with a random-init tinylm GPT-2 (real compute) and is judged on the CPU time of
this process (``time.process_time``), so that waiting for a core on a loaded machine does not
count; wall time is recorded and shown in a figure only. E1 and E3 use the simulated judge,
whose drift is injected and whose rubric noise is ours: what they measure is listed as checks
and findings, never as support for the paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo._core.rng import derive_seed, np_rng
from optzoo.repro.claim import Claim, Verdict
from optzoo.repro.figures import new_figure, save_figure
from optzoo.repro.judging import judge as decide
from optzoo.repro.judging import paired

__all__ = ["CLAIMS", "SCALES", "Config", "figures", "judge", "run"]

#: The group size the paper's latency table was measured at (rollouts n = 8, Table 4).
PAPER_G = 8

CLAIMS = [
    Claim("cache_faster",
          "IP-GRM with the Principle Cache takes less reward compute per GRPO step than the "
          "coupled GRM (paper Table 3: -23.66 % latency; only the direction is claimed here).",
          f"log(CPU s cached / CPU s coupled) per step at G = {PAPER_G}, real decoding with "
          "prefix reuse, min over interleaved repetitions",
          direction="less", threshold=0.0, source="abstract; Table 3"),
    Claim("naive_slower",
          "A two-stage judge without the cache costs more than the coupled GRM (paper Table 3: "
          "+16.87 %).",
          f"log(CPU s naive / CPU s coupled) per step at G = {PAPER_G}",
          direction="greater", threshold=0.0, source="Table 3"),
    Claim("gain_grows_with_g",
          "The cache's gain over the coupled GRM grows with the group size G.",
          "log(coupled / cached) CPU time at the largest G minus at the smallest G",
          direction="greater", threshold=0.0, source="paper 5.1"),
    Claim("drift_real",
          "A generative judge that writes its rubric after reading the response raises that "
          "response's score over the rubric it writes from the question alone (paper Fig. 2: "
          "+6.6 % for R+ under P+, +4.6 % for R- under P-, DeepSeek-GRM-16B), here with a real "
          "judge nobody built to drift: SmolLM2-135M-Instruct.",
          "per seed, mean over its generated writing pairs of s(R | P(Q, R)) / s(R | P0(Q)) - 1, "
          "expected-score readout; parts: R+ under P+ ('plus'), R- under P- ('minus')",
          direction="greater", threshold=0.0, source="paper Fig. 2; spec E1 with a real backend"),
    Claim("cost_model",
          "Our FLOP + per-pass cost model, fitted at the two smallest G, predicts the CPU "
          "times at the larger G within 25 % (our model, not the paper's).",
          "mean |predicted / measured - 1| CPU time over the held-out G and pipelines",
          direction="less", threshold=0.25, kind="finding", source="spec E2 (ours)"),
    Claim("hacking",
          "In our simulated world with a judge built to drift (kappa > 0), GRPO on the coupled "
          "GRM ends with lower gold quality and more hacking than on IP-GRM with the cache.",
          "final (mean of last 5 steps) gold quality ip_cache - coupled; hack rate "
          "coupled - ip_cache",
          direction="greater", threshold=0.0, kind="finding", source="spec E3 (drift injected)"),
    Claim("gold_falls",
          "In our simulated world, under the drifting coupled judge, gold quality falls during "
          "training while the training reward rises (the paper's Fig. 4 pattern).",
          "coupled arm at kappa > 0: gold quality, mean of the last 5 steps - first 3",
          direction="less", threshold=0.0, kind="finding", source="spec E3 (drift injected)"),
    Claim("real_judge_informative",
          "SmolLM2-135M-Instruct as judge scores the response that follows the instructions (R+) "
          "above the one that does not (R-) under the question-only rubric (is the judge of "
          "drift_real informative at all?).",
          "per seed, mean over pairs of s(R+ | P0) - s(R- | P0) on the 1-9 expected-score scale",
          direction="greater", threshold=0.0, kind="finding", source="ours (judge sanity)"),
    Claim("consistency",
          "A shared cached rubric removes the within-group reward noise that independent "
          "rubric samples add (the noise is our simulator's Dirichlet rubric noise).",
          "log(within-group reward variance unexplained by gold, ip_cache / ip_nocache), "
          "same responses",
          direction="less", threshold=0.0, kind="check", source="spec E3 probe"),
    Claim("drift_protocol",
          "measure_drift reports exactly zero drift for a judge built without drift and "
          "positive drift for one built with it (a pipeline test of our simulator).",
          "kappa = 0: every deviation 0; kappa = 1: both interval lows > 0",
          direction="all", kind="check", unit="seed", source="spec E1"),
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
    real_pairs: int = 0  # pairs per seed for the SmolLM2 judge (drift_real); 0: not run
    probe_groups: int = 32
    reps: int = 2
    seeds: int = 2


SCALES = {
    "smoke": Config(),
    "quick": Config(groups=(2, 4, 8, 16), lengths=(16, 48, 24, 32), n_embd=256, n_layer=4, n_head=4,
                    reps=3, steps=30, arms=("proxy", "coupled", "ip_nocache", "ip_cache"),
                    kappas=(2.0, 0.0), probe_groups=64, real_pairs=3, seeds=12),
    "full": Config(groups=(2, 4, 8, 16), n_prompts=4, lengths=(64, 192, 96, 128), n_embd=256, n_layer=4,
                   n_head=4, reps=3, steps=100, arms=("proxy", "coupled", "ip_nocache", "ip_cache"),
                   kappas=(2.0, 1.0, 0.0), n_pairs=200, probe_groups=256, real_pairs=12, seeds=16),
}


def _e1(config, seed):
    from optzoo.ipgrm import SimulatedJudge, measure_drift
    from optzoo.ipgrm.repro.hacking import make_world

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
        d = measure_drift(j, pairs)
        out[str(kappa)] = {"plus": d["plus"], "minus": d["minus"],
                           "max_abs": float(np.max(np.abs(d["plus_values"] + d["minus_values"])))}
    return out


def _e2(config, seed, progress):
    from optzoo.ipgrm.repro.throughput import (
        PIPELINES,
        Lengths,
        build_timing_model,
        fit_cost_model,
        pipeline_cost,
        run_pipeline,
    )

    L = Lengths(*config.lengths)
    model = build_timing_model(n_layer=config.n_layer, n_embd=config.n_embd, n_head=config.n_head,
                               vocab=512, n_positions=max(64, sum(config.lengths)), seed=seed)
    n_params = sum(p.numel() for n, p in model.named_parameters() if "wte" not in n and "wpe" not in n)
    for k in PIPELINES:  # warm-up
        run_pipeline(k, model, n_prompts=1, group=2, lengths=L, seed=seed, prefix_sharing=True)
    out = {}
    for share, reps in ((True, config.reps), (False, 1)):
        rows = []
        for G in config.groups:
            best: dict = {}
            for rep in range(reps):  # interleaved, order rotated every repetition; min over reps
                for i in range(len(PIPELINES)):
                    k = PIPELINES[(i + rep) % len(PIPELINES)]
                    o = run_pipeline(k, model, n_prompts=config.n_prompts, group=G, lengths=L, seed=seed,
                                     prefix_sharing=share)
                    b = best.setdefault(k, {"cpu": float("inf"), "wall": float("inf"), "o": o})
                    b["cpu"], b["wall"] = min(b["cpu"], o["cpu_seconds"]), min(b["wall"], o["seconds"])
                    progress.advance()
            for k in PIPELINES:
                o = best[k]["o"]
                flops = pipeline_cost(o["log"], n_layer=config.n_layer, d=config.n_embd, vocab=512,
                                      n_params=n_params)
                dec_rows = float(sum(b for b, t, c in o["log"] if t == 1))
                rows.append({"G": G, "pipeline": k, "cpu_ms": 1000 * best[k]["cpu"],
                             "wall_ms": 1000 * best[k]["wall"], "flops": flops, "passes": o["passes"],
                             "decode_rows": dec_rows, "prefill_tokens": o["prefill_tokens"],
                             "decoded_tokens": o["decoded_tokens"]})
        small = [r for r in rows if r["G"] in config.groups[:2]]
        coef = fit_cost_model([[r["flops"], r["passes"], r["decode_rows"]] for r in small],
                              [r["cpu_ms"] for r in small])
        for r in rows:
            r["predicted_cpu_ms"] = float(np.dot(coef, [r["flops"], r["passes"], r["decode_rows"]]))
        held = [r for r in rows if r["G"] not in config.groups[:2]] or rows
        err = float(np.mean([abs(r["predicted_cpu_ms"] / r["cpu_ms"] - 1) for r in held]))
        out["shared" if share else "plain"] = {"rows": rows, "cost_model_error": err, "cost_model": coef}
    return out


def run(config: Config, seed: int, progress) -> dict:
    from optzoo.ipgrm.repro.hacking import consistency_probe, run_grpo

    n_arms = len(config.kappas) * len(config.arms) - ("proxy" in config.arms) * (len(config.kappas) - 1)
    n_units = len(config.groups) * 3 * (config.reps + 1) + n_arms * config.steps + bool(config.real_pairs)
    progress.start(n_units, "ipgrm")
    out = {"e1": _e1(config, seed), "e2": _e2(config, seed, progress), "e3": {}}
    for i, kappa in enumerate(config.kappas):
        for arm in config.arms:
            if arm == "proxy" and i > 0:  # the proxy RM does not depend on kappa: run it once
                continue
            o = run_grpo(arm, seed=seed, steps=config.steps, kappa=kappa, drop_p=0.9 if kappa > 0 else 0.0,
                         progress=progress)
            out["e3"][f"{arm}@{kappa}"] = o
    out["probe"] = consistency_probe(seed=seed, n_groups=config.probe_groups)
    if config.real_pairs:
        from optzoo.ipgrm.repro.realjudge import real_drift

        out["e1_real"] = real_drift(config.real_pairs, seed)
        progress.advance()
    return out


def _tail(c, k=5):
    return float(np.mean(c[-k:]))


def _head(c, k=3):
    return float(np.mean(c[:k]))


def _ms(r, G, k, variant="shared", key="cpu_ms"):
    return next(x[key] for x in r["e2"][variant]["rows"] if x["G"] == G and x["pipeline"] == k)


def _groups(per_seed) -> list[int]:
    return sorted({x["G"] for x in per_seed[0]["e2"]["shared"]["rows"]})


def judge(per_seed: list[dict]) -> list[Verdict]:
    if not per_seed:
        raise ValueError("The 'per_seed' argument of judge must hold at least one seed. Got none.")
    c = {cl.id: cl for cl in CLAIMS}
    gs = _groups(per_seed)
    g_at = PAPER_G if PAPER_G in gs else gs[-1]
    gmax, gmin = gs[-1], gs[0]

    def ms(G, k, variant="shared", key="cpu_ms"):
        return [_ms(r, G, k, variant, key) for r in per_seed]

    def wall_ratio(a, b):
        return float(np.mean(paired(ms(g_at, a, key="wall_ms"), ms(g_at, b, key="wall_ms"), "logratio")))

    out = [
        decide(c["cache_faster"], paired(ms(g_at, "cached"), ms(g_at, "coupled"), "logratio"),
               note=f"G = {g_at}",
               numbers={"plain_variant": float(np.mean(paired(ms(g_at, "cached", "plain"),
                                                             ms(g_at, "coupled", "plain"), "logratio"))),
                        "wall_time_logratio (not judged)": wall_ratio("cached", "coupled")}),
        decide(c["naive_slower"], paired(ms(g_at, "naive"), ms(g_at, "coupled"), "logratio"),
               note=f"G = {g_at}",
               numbers={"plain_variant": float(np.mean(paired(ms(g_at, "naive", "plain"),
                                                             ms(g_at, "coupled", "plain"), "logratio"))),
                        "wall_time_logratio (not judged)": wall_ratio("naive", "coupled")}),
        decide(c["gain_grows_with_g"],
               paired(paired(ms(gmax, "coupled"), ms(gmax, "cached"), "logratio"),
                      paired(ms(gmin, "coupled"), ms(gmin, "cached"), "logratio")),
               note=f"G = {gmax} vs G = {gmin}"),
    ]
    real = [r["e1_real"] for r in per_seed if "e1_real" in r]
    if len(real) == len(per_seed):
        pairs = {"pairs_per_seed": real[0]["n_pairs"]}
        out.append(decide(c["drift_real"], {s: [x[s] for x in real] for s in ("plus", "minus")}, numbers=pairs))
    else:
        out.append(decide(c["drift_real"], None, note="not run at this scale (the SmolLM2 judge runs at quick and full)"))
    out.append(decide(c["cost_model"], [r["e2"]["shared"]["cost_model_error"] for r in per_seed]))
    kap = [k for k in per_seed[0]["e3"] if k.startswith("coupled@") and float(k.split("@")[1]) > 0]
    k = kap[0].split("@")[1]

    def curve(arm, key):
        return [r["e3"][f"{arm}@{k}"]["curves"][key] for r in per_seed]

    out.append(decide(c["hacking"], {
        "gold": paired([_tail(x) for x in curve("ip_cache", "gold")], [_tail(x) for x in curve("coupled", "gold")]),
        "hack": paired([_tail(x) for x in curve("coupled", "hack")], [_tail(x) for x in curve("ip_cache", "hack")]),
    }, note=f"kappa = {k}"))
    out.append(decide(c["gold_falls"], [_tail(x) - _head(x) for x in curve("coupled", "gold")],
                      note=f"kappa = {k}",
                      numbers={"reward_change": float(np.mean([_tail(x) - _head(x)
                                                               for x in curve("coupled", "reward")]))}))
    if len(real) == len(per_seed):
        out.append(decide(c["real_judge_informative"], [x["discrimination"] for x in real]))
    else:
        out.append(decide(c["real_judge_informative"], None, note="not run at this scale"))
    out.append(decide(c["consistency"], paired([r["probe"]["ip_cache"] for r in per_seed],
                                               [r["probe"]["ip_nocache"] for r in per_seed], "logratio")))
    out.append(decide(c["drift_protocol"],
                      [r["e1"]["0.0"]["max_abs"] == 0.0
                       and all(r["e1"]["1.0"][s]["low"] > 0 for s in ("plus", "minus")) for r in per_seed],
                      numbers={"plus_kappa1": float(np.mean([r["e1"]["1.0"]["plus"]["estimate"] for r in per_seed])),
                               "minus_kappa1": float(np.mean([r["e1"]["1.0"]["minus"]["estimate"]
                                                              for r in per_seed]))}))
    return out


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []
    runs = per_seed[0]["e3"]
    fig, axes = new_figure(1, 3, figsize=(12, 3.2))
    for name in runs:
        m = {k: np.mean([r["e3"][name]["curves"][k] for r in per_seed], 0) for k in ("reward", "gold", "kl")}
        axes[0].plot(m["reward"], label=name)
        axes[1].plot(m["gold"], label=name)
        axes[2].plot(m["kl"], label=name)
    for ax, t in zip(axes, ("training reward", "gold quality", "KL to init"), strict=True):
        ax.set_title(t)
        ax.set_xlabel("GRPO step")
    axes[0].legend(fontsize=6)
    paths.append(save_figure(fig, outdir / "ipgrm_e3_dynamics.png", dpi=80))

    gs = _groups(per_seed)
    fig, axes = new_figure(1, 3, figsize=(12, 3.2))
    panels = (("shared", "cpu_ms", "CPU ms/step, prefix reuse (judged)"),
              ("shared", "wall_ms", "wall ms/step, prefix reuse (not judged)"),
              ("plain", "cpu_ms", "CPU ms/step, no prefix reuse"))
    for ax, (variant, key, title) in zip(axes, panels, strict=True):
        for k in ("coupled", "naive", "cached"):
            ax.plot(gs, [np.mean([_ms(r, G, k, variant, key) for r in per_seed]) for G in gs], "o-", label=k)
        ax.set_xlabel("group size G")
        ax.set_title(title, fontsize=9)
    axes[0].legend()
    paths.append(save_figure(fig, outdir / "ipgrm_e2_throughput.png", dpi=80))

    fig, ax = new_figure(figsize=(4, 3))
    for i, kappa in enumerate(("0.0", "1.0")):
        for j, s in enumerate(("plus", "minus")):
            e = [r["e1"][kappa][s]["estimate"] for r in per_seed]
            ax.bar(2 * i + j, np.mean(e), yerr=np.std(e) if len(e) > 1 else 0)
    ax.set_xticks(range(4), ["k0 R+", "k0 R-", "k1 R+", "k1 R-"])
    ax.set_ylabel("relative drift (simulated judge)")
    paths.append(save_figure(fig, outdir / "ipgrm_e1_drift.png", dpi=80))
    return paths
