"""Reproduction of IP-GRM at CPU scale, on records (E1 drift protocol, E2 throughput, E3 hacking).

What can test the paper here, and what cannot (issue 40; review 2026-12 "ipgrm"):

* **Principle drift** (the abstract's first statement) is the one paper claim with a real test:
  ``drift_real`` asks a real instruction-tuned LM (SmolLM2-135M-Instruct), which nobody built to
  drift, the paper's Fig. 2 question, against a control in which the rubric was written, in the
  same coupled prompt by the same judge, after reading the pair's *other* response (the
  credited mechanism, a rubric conditioned on the response it scores, removed). A 135M judge
  cannot tell at quick's 3 pairs a seed (its own informativeness finding was unstable across
  seed sets), so the claim is measured only at ``full``; quick reports the same measurement as the
  finding ``drift_135m`` and its summary says "headline untested at this scale".
* **Suppression of hacking in GRPO** needs RL against a real judge: out of reach on 2 cores.
  Our simulated world has the drift *injected* into the coupled judge, so the gap it shows is
  built in: ``hacking`` is a finding, and its control (the same arms at kappa = 0, the
  injected drift removed) shows the gap is wholly the injection.
* **Throughput** (Table 3, -23.66 %): on our pipelines the cache decodes B*L_P + rows*L_J
  tokens against coupled's rows*(L_P + L_J) (throughput.py ``expected_counts``), so the
  ordering is token arithmetic: checks on counted tokens (``cache_fewer_tokens``,
  ``naive_more_prefill``, ``token_gain_grows``). The CPU times (``time.process_time``, one
  thread: ``MAX_THREADS = 1``) are findings whose size depends on the machine and its load; the
  paper's number comes from a GPU serving stack (vLLM, B200) that this hardware cannot test.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from optzoo._core.rng import derive_seed, np_rng
from optzoo.repro.claim import Claim
from optzoo.repro.evidence import Control, Custom, Paired, Record, Universal, Value, records_of
from optzoo.repro.figures import new_figure, save_figure
from optzoo.repro.judging import deterministic

from .config import PAPER_G, SCALES, Config

__all__ = ["CLAIMS", "HEADLINE", "MAX_THREADS", "SCALES", "Config", "figures", "notes", "run"]

#: one thread per unit (read by the runner): E2's findings are judged on process CPU time, and
#: a second torch thread that spin-waits is billed to the timed pipelines (review C6)
MAX_THREADS = 1

#: the simulated judge's injected drift in E3 (kappa > 0 arms) and its no-drift control
KAPPA, KAPPA0 = 2.0, 0.0
_D, _D0 = f"@{KAPPA}", f"@{KAPPA0}"

_LOAD = ("Process CPU time of one thread on this machine (MAX_THREADS = 1), min over interleaved "
         "repetitions: its size depends on the hardware and on the machine's load (shared caches, "
         "clock), and its sign follows from the token counts of the matching check")


# --------------------------------------------------------------------------- evidence helpers
def _g_parts(per_seed) -> list[int]:
    gs = {int(r.part[1:]) for seed in per_seed for r in seed if r.metric == "cpu_ms"}
    if not gs:
        raise ValueError("no E2 records")
    return sorted(gs)


def _g_paper(per_seed) -> int:
    gs = _g_parts(per_seed)
    return PAPER_G if PAPER_G in gs else gs[-1]


def _exact_or_random(vals, exact: bool):
    return deterministic(vals) if exact else vals


def _at_paper_g(metric: str, arm: str, base: str):
    def fn(per_seed, sub):
        got = Paired(metric, arm, base, "logratio").collect(per_seed, sub)
        return got[f"G{_g_paper(per_seed)}"]
    return fn


def _gain_growth(metric: str):
    """Per seed: log(coupled / cached) at the largest G minus at the smallest G."""
    def fn(per_seed, sub):
        got = Paired(metric, "coupled", "cached", "logratio").collect(per_seed, sub)
        gs = _g_parts(per_seed)
        hi, lo = got[f"G{gs[-1]}"], got[f"G{gs[0]}"]
        if hasattr(hi, "deterministic") and hasattr(lo, "deterministic"):
            return deterministic([hi.values[0] - lo.values[0]])
        return [a - b for a, b in zip(hi, lo, strict=True)]
    return fn


def _hacking(per_seed, sub):
    gold = Paired("gold_final", "ip_cache" + _D, "coupled" + _D).collect(per_seed, sub)[""]
    hack = Paired("hack_final", "coupled" + _D, "ip_cache" + _D).collect(per_seed, sub)[""]
    return {"gold": gold, "hack": hack}


_DRIFT_STATEMENT = (
    "A generative judge that writes its rubric after reading the response raises that response's "
    "score over the rubric it writes from the question alone (paper Fig. 2: +6.6 % for R+ under "
    "P+, +4.6 % for R- under P-, DeepSeek-GRM-16B; only the sign is claimed), with a real judge "
    "nobody built to drift: SmolLM2-135M-Instruct on generated writing pairs.")
_DRIFT_METRIC = ("per seed, mean over its pairs of s(R | P(Q, R)) / s(R | P0(Q)) - 1, Stage-2 "
                 "expected-score readout; parts: R+ under P+ ('plus'), R- under P- ('minus')")
_DRIFT_CONTROL = Control(
    {"own_rubric": "other_rubric"},
    removes="the rubric's conditioning on the response it scores: R is scored under the rubric "
            "the same judge wrote in the same coupled prompt after reading the pair's other "
            "response (P- for R+, P+ for R-); same pairs, P0, template and readout",
    credits="abstract: coupling principles to the response lets the reward model 'rationalize' "
            "it (principle drift); paper §2 / Fig. 2: P+(Q, R+) raises R+'s score, P-(Q, R-) "
            "raises R-'s")

CLAIMS = [
    # --- the paper's claim that this hardware can test, at full only (headline) ---------------
    Claim("drift_real", _DRIFT_STATEMENT, _DRIFT_METRIC, direction="greater", threshold=0.0,
          source="abstract: principle drift of coupled generative RMs; paper §2 Fig. 2",
          evidence=Value("drift_rel", "own_rubric"), control=_DRIFT_CONTROL, scales=("full",)),
    # --- findings: what quick can measure, ours or not evidence for the paper ----------------
    Claim("drift_135m",
          "Quick's reading of drift_real (3 pairs a seed): the 135M judge's principle drift. A "
          "judge this small cannot tell (issue 40: its informativeness was unstable across seed "
          "sets), so this is a finding, not a test of the paper.",
          _DRIFT_METRIC, direction="greater", threshold=0.0, kind="finding",
          source="paper Fig. 2 protocol at quick (judge too small to carry it)",
          evidence=Value("drift_rel", "own_rubric"), control=_DRIFT_CONTROL, scales=("quick",)),
    Claim("real_judge_informative",
          "SmolLM2-135M-Instruct as judge scores the response that follows the instructions (R+) "
          "above the one that does not (R-) under the question-only rubric (is the judge of "
          "drift_real informative at all? Issue 40: at quick its verdict was unstable across seed "
          "sets, a weak judge).",
          "per seed, mean over pairs of s(R+ | P0) - s(R- | P0) on the 1-9 expected-score scale",
          direction="greater", threshold=0.0, kind="finding", source="ours (judge sanity)",
          evidence=Value("discrimination", "p0"), scales=("quick", "full")),
    Claim("hacking",
          "In our simulated world with a judge built to drift (kappa = 2, p_drop = 0.9), GRPO on "
          "the coupled GRM ends with lower gold quality and more hacking than on IP-GRM with the "
          "cache. The drift is injected, so this shows what GRPO does with such a judge, not that "
          "LLM judges drift; the control (kappa = 0) shows the gap is wholly the injection.",
          "final (mean of last 5 steps) gold quality ip_cache - coupled; hack rate coupled - "
          "ip_cache (two parts)",
          direction="greater", threshold=0.0, kind="finding", source="spec E3 (drift injected)",
          evidence=Custom(_hacking, "gold_final ip_cache - coupled; hack_final coupled - ip_cache, "
                          f"kappa = {KAPPA:g}", uses=("coupled" + _D, "ip_cache" + _D)),
          control=Control({"coupled" + _D: "coupled" + _D0, "ip_cache" + _D: "ip_cache" + _D0},
                          removes="the injected drift: the same arms, prompts and seeds with "
                                  "kappa = 0 and p_drop = 0 (the coupled judge is then an IP "
                                  "judge that samples a rubric per response)",
                          credits="abstract: decoupling principles from the response suppresses "
                                  "reward hacking (here the drift it removes is ours)")),
    Claim("gold_falls",
          "In our simulated world, under the drifting coupled judge, gold quality falls during "
          "training while the training reward rises (the paper's Fig. 4 pattern).",
          f"coupled arm at kappa = {KAPPA:g}: gold quality, mean of the last 5 steps - first 3",
          direction="less", threshold=0.0, kind="finding", source="spec E3 (drift injected)",
          evidence=Value("gold_change", "coupled" + _D)),
    Claim("cache_faster",
          f"The cached pipeline takes less CPU time per GRPO step than the coupled one at G = "
          f"{PAPER_G} (the direction of paper Table 3). " + _LOAD + ".",
          f"log(CPU s cached / CPU s coupled) per step at G = {PAPER_G}, prefix reuse",
          direction="less", threshold=0.0, kind="finding", source="paper Table 3 direction; ours (CPU)",
          evidence=Custom(_at_paper_g("cpu_ms", "cached", "coupled"), "cpu_ms: cached vs coupled "
                          f"(log ratio) at G = {PAPER_G}", uses=("cached", "coupled"))),
    Claim("naive_slower",
          "A two-stage judge without the cache takes more CPU time than the coupled one (paper "
          "Table 3: +16.87 %). " + _LOAD + ".",
          f"log(CPU s naive / CPU s coupled) per step at G = {PAPER_G}, prefix reuse",
          direction="greater", threshold=0.0, kind="finding", source="paper Table 3 direction; ours (CPU)",
          evidence=Custom(_at_paper_g("cpu_ms", "naive", "coupled"), "cpu_ms: naive vs coupled "
                          f"(log ratio) at G = {PAPER_G}", uses=("naive", "coupled"))),
    Claim("gain_grows_with_g",
          "The cache's CPU-time gain over the coupled pipeline grows with the group size G "
          "(paper §5.1). " + _LOAD + ".",
          "log(coupled / cached) CPU time at the largest G minus at the smallest G",
          direction="greater", threshold=0.0, kind="finding", source="paper §5.1 direction; ours (CPU)",
          evidence=Custom(_gain_growth("cpu_ms"), "cpu_ms: log(coupled / cached) at max G minus "
                          "at min G", uses=("coupled", "cached"))),
    Claim("cost_model",
          "Our FLOP + per-pass cost model, fitted at the two smallest G, predicts the CPU "
          "times at the larger G within 25 % (our model, not the paper's; CPU time, load-dependent).",
          "mean |predicted / measured - 1| CPU time over the held-out G and pipelines",
          direction="less", threshold=0.25, kind="finding", source="spec E2 (ours)",
          evidence=Value("cost_model_error", "model")),
    # --- checks of our own construction (also unit tests) ------------------------------------
    Claim("cache_fewer_tokens",
          f"Counted operations: at G = {PAPER_G} the cached pipeline decodes fewer tokens than the "
          "coupled one (B*L_P + rows*L_J against rows*(L_P + L_J): our pipelines' arithmetic).",
          f"log(decoded tokens cached / coupled) at G = {PAPER_G} (exact)",
          direction="less", threshold=0.0, kind="check", source="throughput.py expected_counts",
          evidence=Custom(_at_paper_g("decoded_tokens", "cached", "coupled"), "decoded tokens: "
                          "cached vs coupled (exact)", uses=("cached", "coupled"))),
    Claim("naive_more_prefill",
          "Counted operations: the naive two-stage pipeline decodes as many tokens as the coupled "
          "one and prefills more (the question twice, plus the principles).",
          f"log(prefilled tokens naive / coupled) at G = {PAPER_G} (exact)",
          direction="greater", threshold=0.0, kind="check", source="throughput.py expected_counts",
          evidence=Custom(_at_paper_g("prefill_tokens", "naive", "coupled"), "prefilled tokens: "
                          "naive vs coupled (exact)", uses=("naive", "coupled"))),
    Claim("token_gain_grows",
          "Counted operations: the coupled / cached decoded-token ratio grows with G (Stage 1 is "
          "paid once per question, not once per response).",
          "log(decoded coupled / cached) at the largest G minus at the smallest G (exact)",
          direction="greater", threshold=0.0, kind="check", source="throughput.py expected_counts",
          evidence=Custom(_gain_growth("decoded_tokens"), "decoded tokens: log(coupled / cached) "
                          "at max G minus at min G (exact)", uses=("coupled", "cached"))),
    Claim("consistency",
          "A shared cached rubric removes the within-group reward noise that independent "
          "rubric samples add (the noise is our simulator's Dirichlet rubric noise).",
          "log(within-group reward variance unexplained by gold, ip_cache / ip_nocache), "
          "same responses",
          direction="less", threshold=0.0, kind="check", source="spec E3 probe",
          evidence=Paired("within_noise", "ip_cache", "ip_nocache", "logratio")),
    Claim("drift_protocol",
          "measure_drift reports exactly zero drift for a judge built without drift and "
          "positive drift for one built with it (a pipeline test of our simulator).",
          "kappa = 0: every deviation 0; kappa = 1: both interval lows > 0",
          direction="all", kind="check", unit="seed", source="spec E1",
          evidence=Universal("drift_protocol_ok", "sim")),
]

#: The claims that test the abstract's headline (papers.py names them). Only principle drift
#: can be tested by a claim that can fail on this hardware, and only at full (see the module
#: docstring for why hacking suppression and the -23.66 % latency cannot).
HEADLINE = ("drift_real",)


# --------------------------------------------------------------------------- experiments
def _e1(config, seed) -> list[Record]:
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
    out, d = [], {}
    for kappa in (0.0, 1.0):
        j = SimulatedJudge(derive_seed(seed, "e1judge"), drift=kappa, resample=False)
        d[kappa] = measure_drift(j, pairs)
        for s in ("plus", "minus"):
            out.append(Record(f"k{kappa:g}:{s}", "sim", "e1", "sim_drift", d[kappa][s]["estimate"]))
    ok = (float(np.max(np.abs(d[0.0]["plus_values"] + d[0.0]["minus_values"]))) == 0.0
          and all(d[1.0][s]["low"] > 0 for s in ("plus", "minus")))
    out.append(Record("", "sim", "e1", "drift_protocol_ok", float(ok)))
    return out


def _e2(config, seed, progress) -> list[Record]:
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
    out: list[Record] = []
    for share, reps in ((True, config.reps), (False, 1)):
        sfx = "" if share else "_plain"
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
                rows.append({"G": G, "k": k, "cpu_ms": 1000 * best[k]["cpu"], "wall_ms": 1000 * best[k]["wall"],
                             "feat": [flops, o["passes"], dec_rows]})
                part = f"G{G}"
                out += [Record(part, k, "step", "cpu_ms" + sfx, 1000 * best[k]["cpu"], x=G),
                        Record(part, k, "step", "wall_ms" + sfx, 1000 * best[k]["wall"], x=G),
                        Record(part, k, "step", "decoded_tokens" + sfx, o["decoded_tokens"], x=G, exact=True),
                        Record(part, k, "step", "prefill_tokens" + sfx, o["prefill_tokens"], x=G, exact=True)]
        small = [r for r in rows if r["G"] in config.groups[:2]]
        coef = fit_cost_model([r["feat"] for r in small], [r["cpu_ms"] for r in small])
        held = [r for r in rows if r["G"] not in config.groups[:2]] or rows
        err = float(np.mean([abs(float(np.dot(coef, r["feat"])) / r["cpu_ms"] - 1) for r in held]))
        out.append(Record("", "model", "e2", "cost_model_error" + sfx, err))
    return out


def _e3(config, seed, progress) -> list[Record]:
    from optzoo.ipgrm.repro.hacking import consistency_probe, run_grpo

    out: list[Record] = []
    for i, kappa in enumerate(config.kappas):
        for arm in config.arms:
            if arm == "proxy" and i > 0:  # the proxy RM does not depend on kappa: run it once
                continue
            o = run_grpo(arm, seed=seed, steps=config.steps, kappa=kappa, drop_p=0.9 if kappa > 0 else 0.0,
                         progress=progress)
            name, c = f"{arm}@{kappa}", o["curves"]
            out += [Record("", name, "run", "gold_final", float(np.mean(c["gold"][-5:]))),
                    Record("", name, "run", "hack_final", float(np.mean(c["hack"][-5:]))),
                    Record("", name, "run", "gold_change", float(np.mean(c["gold"][-5:]) - np.mean(c["gold"][:3]))),
                    Record("", name, "run", "reward_change",
                           float(np.mean(c["reward"][-5:]) - np.mean(c["reward"][:3])))]
            for key in ("reward", "gold", "hack", "kl"):
                out += [Record("", name, f"t{t:03d}", "curve_" + key, v, x=t) for t, v in enumerate(c[key])]
    probe = consistency_probe(seed=seed, n_groups=config.probe_groups)
    out += [Record("", arm, "probe", "within_noise", probe[arm]) for arm in ("ip_cache", "ip_nocache")]
    return out


def _real(config, seed) -> list[Record]:
    from optzoo.ipgrm.repro.realjudge import real_drift

    o = real_drift(config.real_pairs, seed)
    out = [Record("", "p0", f"pair{i}", "discrimination", a - b)
           for i, (a, b) in enumerate(zip(o["scores"]["plus_p0"], o["scores"]["minus_p0"], strict=True))]
    for s in ("plus", "minus"):
        out += [Record(s, "own_rubric", f"pair{i}", "drift_rel", v) for i, v in enumerate(o[s + "_values"])]
        out += [Record(s, "other_rubric", f"pair{i}", "drift_rel", v)
                for i, v in enumerate(o[s + "_other_values"])]
    out.append(Record("", "judge", "e1_real", "real_cpu_s", o["cpu_s"]))
    return out


def run(config: Config, seed: int, progress) -> list[Record]:
    n_arms = len(config.kappas) * len(config.arms) - ("proxy" in config.arms) * (len(config.kappas) - 1)
    n_units = len(config.groups) * 3 * (config.reps + 1) + n_arms * config.steps + bool(config.real_pairs)
    progress.start(n_units, "ipgrm")
    t0 = time.process_time()
    out = _e1(config, seed) + _e2(config, seed, progress) + _e3(config, seed, progress)
    t1 = time.process_time()
    if config.real_pairs:
        out += _real(config, seed)
        progress.advance()
    t2 = time.process_time()  # the unit's CPU seconds, by phase (not judged; the docs' cost table)
    out += [Record("", "unit", "cpu", "cpu_s_e123", t1 - t0), Record("", "unit", "cpu", "cpu_s_real", t2 - t1)]
    return out


# --------------------------------------------------------------------------- notes and figures
def _mean_of(per_seed, metric, arm, part=None) -> float | None:
    vals = [r.value for s in records_of(per_seed, metric=metric, arm=arm, part=part) for r in s]
    return float(np.mean(vals)) if vals else None


def notes(per_seed) -> dict[str, str]:
    """Numbers a reader wants beside the verdicts: the plain variant, wall time (never judged),
    the reward change under the drifting judge, and the control's drift."""
    out = {}
    try:
        g = _g_paper(per_seed)
    except ValueError:
        return out
    bits = []
    for metric in ("cpu_ms_plain", "wall_ms"):
        a = _mean_of(per_seed, metric, "cached", f"G{g}")
        b = _mean_of(per_seed, metric, "coupled", f"G{g}")
        c = _mean_of(per_seed, metric, "naive", f"G{g}")
        if a and b and c:
            bits.append(f"{metric} at G = {g}: log(cached / coupled) {math.log(a / b):.3g}, "
                        f"log(naive / coupled) {math.log(c / b):.3g} (ratio of means, not judged)")
    if bits:
        out["cache_faster"] = "; ".join(bits)
    rc = _mean_of(per_seed, "reward_change", "coupled" + _D)
    if rc is not None:
        out["gold_falls"] = f"training-reward change of the same arm: {rc:.3g} (mean over seeds)"
    for cid in ("drift_real", "drift_135m"):
        own = [_mean_of(per_seed, "drift_rel", a, s) for a in ("own_rubric", "other_rubric")
               for s in ("plus", "minus")]
        if None not in own:
            out[cid] = (f"mean over seeds and pairs: own rubric plus {own[0]:.3g}, minus {own[1]:.3g}; "
                        f"other response's rubric (control) plus {own[2]:.3g}, minus {own[3]:.3g}")
    return out


def figures(per_seed, outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = []
    names = sorted({r.arm for s in per_seed for r in s if r.metric == "curve_gold"})
    fig, axes = new_figure(1, 3, figsize=(12, 3.2))
    for name in names:
        for ax, key in zip(axes, ("reward", "gold", "kl"), strict=True):
            rows = records_of(per_seed, metric="curve_" + key, arm=name)
            n = min(len(s) for s in rows)
            m = np.mean([[r.value for r in sorted(s, key=lambda r: r.x)][:n] for s in rows], 0)
            ax.plot(m, label=name)
    for ax, t in zip(axes, ("training reward", "gold quality", "KL to init"), strict=True):
        ax.set_title(t)
        ax.set_xlabel("GRPO step")
    axes[0].legend(fontsize=6)
    paths.append(save_figure(fig, outdir / "ipgrm_e3_dynamics.png", dpi=80))

    gs = _g_parts(per_seed)
    fig, axes = new_figure(1, 3, figsize=(12, 3.2))
    panels = (("cpu_ms", "CPU ms/step, prefix reuse (findings)"),
              ("wall_ms", "wall ms/step, prefix reuse (not judged)"),
              ("cpu_ms_plain", "CPU ms/step, no prefix reuse"))
    for ax, (metric, title) in zip(axes, panels, strict=True):
        for k in ("coupled", "naive", "cached"):
            ax.plot(gs, [_mean_of(per_seed, metric, k, f"G{G}") for G in gs], "o-", label=k)
        ax.set_xlabel("group size G")
        ax.set_title(title, fontsize=9)
    axes[0].legend()
    paths.append(save_figure(fig, outdir / "ipgrm_e2_throughput.png", dpi=80))

    fig, ax = new_figure(figsize=(4, 3))
    labels = ["k0:plus", "k0:minus", "k1:plus", "k1:minus"]
    for i, part in enumerate(labels):
        e = [r.value for s in records_of(per_seed, metric="sim_drift", part=part) for r in s]
        ax.bar(i, np.mean(e), yerr=np.std(e) if len(e) > 1 else 0)
    ax.set_xticks(range(4), labels)
    ax.set_ylabel("relative drift (simulated judge)")
    paths.append(save_figure(fig, outdir / "ipgrm_e1_drift.png", dpi=80))

    own = records_of(per_seed, metric="drift_rel")
    if any(own):
        fig, ax = new_figure(figsize=(4.5, 3))
        for i, (arm, s) in enumerate((a, s) for s in ("plus", "minus") for a in ("own_rubric", "other_rubric")):
            e = [float(np.mean([r.value for r in seed if r.arm == arm and r.part == s])) for seed in own if seed]
            ax.bar(i, np.mean(e), yerr=np.std(e) / math.sqrt(len(e)) if len(e) > 1 else 0,
                   color="C0" if arm == "own_rubric" else "C7")
        ax.set_xticks(range(4), ["R+|P+", "R+|P-", "R-|P-", "R-|P+"])
        ax.set_ylabel("s / s(P0) - 1 (SmolLM2-135M)")
        ax.axhline(0, color="k", lw=0.5)
        paths.append(save_figure(fig, outdir / "ipgrm_e1_real_drift.png", dpi=80))
    return paths
