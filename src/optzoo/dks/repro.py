"""Reproduction of Lu, Sidiropoulos & Konar (ICML 2026, arXiv 2410.07388): diagonal loading
and saddle-escaping Frank-Wolfe for densest k-subgraph.

``run`` solves every (graph, k) instance with every method on the same graph and seed:
SE-FW (lam 1 and 1.5, short step; lam 1 exact line search), plain FW (lam 1), the AdamW
parameterisation, greedy peeling, the truncated power method, top-k of the leading
eigenvector, random-restart SE-FW with the peeling time as budget, and the exact MIP on small
graphs. It also runs the tightness experiment (pairwise rounding of random fractional points).
``judge`` turns the per-seed metrics into verdicts with ``optzoo._core.stats``.

Log ratios of edge counts use add-one smoothing, log((a + 1) / (b + 1)), so an instance where
a method finds 0 edges stays finite (documented in docs/papers/dks.md). Instances are paired
over (graph, k, seed); ego-Facebook is the same graph for every seed (only eigsh's start
vector and the restarts change), so its pairs are not independent across seeds.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from optzoo._core.rng import derive_seed
from optzoo._core.stats import (
    INCONCLUSIVE,
    paired_ci,
    verdict_all,
    verdict_from_interval,
)
from optzoo.repro.claim import Claim, Verdict

__all__ = ["CLAIMS", "SCALES", "Config", "run", "judge", "figures"]

CLAIMS = [
    Claim("tightness", "For lam >= 1 the loaded relaxation is tight: pairwise rounding never "
          "lowers f; below lam = 1 it can fail (K_n).",
          "min over random fractional x of f(round(x)) - f(x); K5 uniform point at lam = 0.5",
          "min >= -1e-9 on every graph and seed, and the K5 counterexample at lam = 0.5 exists"),
    Claim("dichotomy", "For lam > 1 non-integral stationary points are strict saddles and "
          "integral stationary points are local maximisers.",
          "curvature u^T M u and f change at every SE-FW escape (lam = 1.5); local-max test at "
          "every integral SE-FW output",
          "every escape has u^T M u > 0 and raises f; every integral output is a strict local max"),
    Claim("finite_step", "SE-FW reaches an integral stationary point in finitely many steps with "
          "FW-gap rate O(1/sqrt(t)).",
          "SE-FW (default: lam 1, short step, T = 200) ends integral with gap <= eps before T; "
          "min_{s<=t} gap_s <= C/sqrt(t+1)",
          "both hold on 100% of instances"),
    Claim("density_vs_peel", "FW finds denser k-subgraphs than the baselines (predecessor's "
          "'FW best'), here against greedy peeling.",
          "log((|E|_SE-FW + 1) / (|E|_peel + 1)) paired over (graph, k, seed)",
          "95% bootstrap CI of the mean > 0"),
    Claim("near_optimal", "SE-FW is within 10% of the optimum on small graphs.",
          "log((|E|_SE-FW + 1) / (OPT + 1)), OPT the proven MIP optimum or, where the time limit "
          "hit, the MIP's certified upper bound (conservative)",
          "95% bootstrap CI of the mean > log 0.9"),
    Claim("speed", "FW is faster than greedy peeling of equal engineering quality (timing, "
          "reported).", "log(t_peel / t_SE-FW) paired over ego-Facebook (graph, k, seed)",
          "95% bootstrap CI of the mean > 0"),
]


@dataclass(frozen=True)
class Config:
    """One scale of the reproduction (all sizes are per seed)."""

    name: str
    named_graphs: tuple[str, ...]
    named_ks: tuple[int, ...]
    planted: tuple[tuple[str, int, int], ...]  # (kind, n, planted size k0)
    planted_ks: tuple[int, ...]  # 0 means "k0"
    mip_max_n: int
    mip_time_limit: float
    facebook_ks: tuple[int, ...]
    large: tuple[tuple[str, int], ...]
    large_ks: tuple[int, ...]
    tightness_trials: int
    lams: tuple[float, ...] = (1.0, 1.5)
    lam_sweep: tuple[float, ...] = ()
    max_iter: int = 200
    adamw: bool = True
    restarts: bool = True


SCALES = {
    "smoke": Config("smoke", ("K5", "C8", "karate"), (5, 10), (("gnp", 60, 8),), (8,), 60, 5.0,
                    (), (), (), 5, adamw=True, restarts=False),
    "quick": Config("quick", ("K5", "C8", "K6_in_sparse", "karate", "les_miserables"), (5, 10),
                    (("gnp", 60, 8), ("gnp", 100, 10), ("gnp", 200, 15), ("sbm", 60, 8),
                     ("sbm", 100, 10)), (5, 0), 200, 10.0, (10, 50, 100, 200),
                    (("lfr", 2000),), (10, 30, 100), 20),
    "full": Config("full", ("K5", "C8", "K6_in_sparse", "karate", "les_miserables",
                            "florentine", "davis"), (5, 10, 20),
                   (("gnp", 60, 8), ("gnp", 100, 10), ("gnp", 200, 15), ("sbm", 60, 8),
                    ("sbm", 100, 10), ("sbm", 200, 15)), (5, 0, 20), 200, 60.0,
                   tuple(range(10, 201, 10)),
                   (("lfr", 2000), ("lfr", 4000), ("holme_kim", 4000), ("caveman", 4000)),
                   (10, 30, 100, 300), 100, lam_sweep=(0.5, 1.0, 1.5, 2.0)),
}

FIXED_K = {"K5": 3, "C8": 4, "K6_in_sparse": 6}
TRACE_GRAPHS = ("K5", "C8", "K6_in_sparse")


def _instances(cfg: Config, seed: int):
    from optzoo.dks import repro_data as rd

    out, notes = [], {}
    for name in cfg.named_graphs:
        g = rd.named_graph(name)
        ks = (FIXED_K[name],) if name in FIXED_K else tuple(k for k in cfg.named_ks if k < g.n)
        out.append((name, "small", g, ks))
    for kind, n, k0 in cfg.planted:
        g = rd.planted_graph(kind, n, k0, seed)
        ks = tuple(sorted({k0 if k == 0 else k for k in cfg.planted_ks}))
        out.append((f"planted_{kind}_{n}", "planted", g, ks))
    if cfg.facebook_ks:
        g, fallback = rd.facebook(seed)
        notes["facebook_fallback"] = fallback
        out.append(("ego_facebook" if not fallback else "holme_kim_4039 (facebook fallback)",
                    "facebook", g, cfg.facebook_ks))
    for kind, n in cfg.large:
        g, used = rd.large_graph(kind, n, seed)
        notes[f"{kind}_{n}_generator"] = used
        out.append((f"{used}_{n}", "large", g, cfg.large_ks))
    return out, notes


def _methods(cfg: Config):
    m = [("se-fw", 1.0, "short"), ("se-fw", 1.5, "short"), ("se-fw", 1.0, "exact"),
         ("fw", 1.0, "short")]
    m += [("se-fw", lam, "short") for lam in cfg.lam_sweep if lam not in (1.0, 1.5)]
    return m


def _key(method, lam, step):
    return method if (lam, step) == (1.0, "short") else f"{method}(lam={lam:g},{step})"


def _fw_record(res, graph, k, lam, cfg):
    from optzoo.dks.relaxation import local_max_test

    rec = {"edges": res.fun, "time": res.wall_time, "status": str(res.status), "nit": res.nit,
           "n_escapes": res.n_escapes, "integral": bool(res.integral),
           "final_gap": res.final_gap, "n_fractional": res.n_fractional}
    if res.integral:
        lm = local_max_test(graph.adj, res.node_indices, lam)
        rec.update(local_max=lm["stationary"], strict_local_max=lm["strict"],
                   margin=lm["margin"])
    # FW-gap rate bound C / sqrt(t + 1), C = max(2 h0, L diam^2), diam^2 <= 2k, h0 bounded by
    # (best upper bound on |E| + lam k / 2) - f(x0): tightness makes that bound on max f valid.
    gaps = np.minimum.accumulate(np.asarray(res.gap_trace, dtype=float))
    h0 = res.upper_bound + lam * k / 2.0 - res.f_trace[0]
    C = max(2.0 * h0, res.L * 2.0 * k)
    bound = C / np.sqrt(np.arange(gaps.size) + 1.0)
    rec["gap_bound_ok"] = bool((gaps <= bound * (1 + 1e-9)).all())
    rec["gap_bound_C"] = float(C)
    rec["escapes"] = [{"kind": e["kind"], "curvature": e["curvature"], "gain": e["gain"],
                       "df": e["f_after"] - e["f_before"], "iter": e["iter"]}
                      for e in res.escapes]
    return rec


def _tightness(graphs, cfg: Config, seed: int) -> dict[str, Any]:
    from optzoo.dks.relaxation import objective, pairwise_round

    rng = np.random.default_rng(derive_seed(seed, "tightness"))
    worst, trials = math.inf, 0
    worst_weighted = math.inf
    for g in graphs:
        for k in (2, max(2, g.n // 4), max(2, g.n // 2)):
            if k >= g.n:
                continue
            for _ in range(cfg.tightness_trials):
                u = rng.random(g.n) ** 3
                x = k * u / u.sum()
                if x.max() > 1:  # mix with the uniform point until inside the box
                    a = (1 - k / g.n) / (x.max() - k / g.n)
                    x = a * x + (1 - a) * (k / g.n)
                for lam in cfg.lams:
                    y = pairwise_round(g.adj, x, lam)
                    d = objective(g.adj, y, lam) - objective(g.adj, x, lam)
                    worst = min(worst, d / (1 + abs(objective(g.adj, x, lam))))
                    trials += 1
                w = g.adj.copy()
                w.data = np.exp(rng.normal(size=w.data.size))
                w = (w + w.T) / 2.0  # symmetric weights
                lam_w = float(w.data.max())
                y = pairwise_round(w, x, lam_w)
                d = objective(w, y, lam_w) - objective(w, x, lam_w)
                worst_weighted = min(worst_weighted, d / (1 + abs(objective(w, x, lam_w))))
    # K_n counterexample below lam = 1 (spec: K5, k = 3, lam = 0.5 gives 4.05 > 3.75).
    n, k = 5, 3
    kn = {}
    for lam in (0.5, 1.0):
        f_uniform = 0.5 * (k / n) ** 2 * n * (n - 1) + 0.5 * lam * k * k / n
        f_binary = k * (k - 1) / 2 + lam * k / 2
        kn[str(lam)] = {"f_uniform": f_uniform, "f_best_binary": f_binary}
    return {"worst_rel_change": worst, "worst_rel_change_weighted": worst_weighted,
            "trials": trials, "kn": kn}


def run(config: Config, seed: int, progress) -> dict[str, Any]:
    """One seed: every instance, every method; plain JSON-serialisable metrics."""
    import torch

    from optzoo.dks import baselines as bl
    from optzoo.dks.frank_wolfe import frank_wolfe, se_frank_wolfe
    from optzoo.dks.torch_backend import adamw_dks

    torch.set_num_threads(1)
    t_start = time.perf_counter()
    instances, notes = _instances(config, seed)
    units = sum(len(ks) for *_, ks in instances)
    progress.start(units + 1, f"dks {config.name} seed {seed}")
    records, traces = [], {}
    for name, family, g, ks in instances:
        for k in ks:
            row = {"graph": name, "family": family, "n": g.n, "m": g.m, "k": k, "seed": seed,
                   "methods": {}}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for method, lam, step in _methods(config):
                    fn = se_frank_wolfe if method == "se-fw" else frank_wolfe
                    res = fn(g, k, lam=lam, step=step, max_iter=config.max_iter, seed=seed)
                    key = _key(method, lam, step)
                    row["methods"][key] = _fw_record(res, g, k, lam, config)
                    if method == "se-fw" and step == "short" and (
                            name in TRACE_GRAPHS or (lam == 1.0 and family != "small")):
                        traces[f"{name}|k={k}|{key}"] = {
                            "gap": res.gap_trace, "frac": res.frac_trace,
                            "f": res.f_trace, "C": row["methods"][key]["gap_bound_C"],
                            "escape_iters": [e["iter"] for e in res.escapes]}
                peel = bl.greedy_peeling(g, k)
                row["methods"]["peel"] = {"edges": peel.fun, "time": peel.wall_time}
                for key, res in (("tpm", bl.truncated_power(g, k)),
                                 ("eigen", bl.eigenvector_topk(g, k, seed=seed))):
                    row["methods"][key] = {"edges": res.fun, "time": res.wall_time}
                if config.adamw:
                    res = adamw_dks(g, k, seed=seed)
                    row["methods"]["adamw"] = {"edges": res.fun, "time": res.wall_time}
                if config.restarts:
                    res = bl.random_restart_fw(g, k, time_budget=peel.wall_time, seed=seed)
                    row["methods"]["rr-fw"] = {"edges": res.fun, "time": res.wall_time,
                                               "restarts": res.restarts}
                if g.n <= config.mip_max_n and family in ("small", "planted"):
                    res = bl.mip_dks(g, k, time_limit=config.mip_time_limit)
                    row["methods"]["mip"] = {"edges": res.fun, "time": res.wall_time,
                                             "status": str(res.status),
                                             "mip_gap": res.extra.get("mip_gap"),
                                             "dual_bound": res.extra.get("dual_bound")}
            row["upper_bound"] = float(peel.upper_bound)
            records.append(row)
            progress.advance()
    small = [g for _, fam, g, _ in instances if fam in ("small", "planted")]
    tight = _tightness(small, config, seed)
    progress.advance()
    return {"scale": config.name, "seed": seed, "records": records, "traces": traces,
            "tightness": tight, "notes": notes, "wall_time": time.perf_counter() - t_start}


# --------------------------------------------------------------------------- judge


def _pairs(per_seed, a_key, b_key, *, families=None, require=None):
    rows = []
    for d in per_seed:
        for r in d["records"]:
            if families and r["family"] not in families:
                continue
            ma, mb = r["methods"].get(a_key), r["methods"].get(b_key)
            if ma is None or mb is None or (require and not require(mb)):
                continue
            if not (np.isfinite(ma["edges"]) and np.isfinite(mb["edges"])):
                continue
            rows.append((r, ma, mb))
    return rows


def _paired_verdict(claim, rows, value, threshold, what, value_b=None):
    if len(rows) < 2:
        return Verdict(claim, INCONCLUSIVE, f"only {len(rows)} paired instance(s)", {"n": len(rows)})
    a = [value(ma) for _, ma, _ in rows]
    b = [(value_b or value)(mb) for _, _, mb in rows]
    ci = paired_ci(a, b, transform="logratio")
    verdict = verdict_from_interval(ci, threshold=threshold)
    diff = np.array(a) - np.array(b)
    worst = sorted(zip(diff, [f"{r['graph']} k={r['k']} seed={r['seed']}" for r, _, _ in rows]))[:3]
    nums = {"mean_log_ratio": ci.estimate, "ci_low": ci.low, "ci_high": ci.high, "n": ci.n,
            "wins": int((diff > 0).sum()), "ties": int((diff == 0).sum()),
            "losses": int((diff < 0).sum()), "threshold": threshold,
            "worst": [{"instance": w, "diff": float(d)} for d, w in worst]}
    summary = (f"{what}: mean log ratio {ci.estimate:.4f} [{ci.low:.4f}, {ci.high:.4f}] over "
               f"{ci.n} (graph, k, seed) pairs; wins/ties/losses {nums['wins']}/{nums['ties']}/"
               f"{nums['losses']}")
    return Verdict(claim, verdict, summary, nums)


def judge(per_seed: list[dict[str, Any]]) -> list[Verdict]:
    out = []
    # tightness
    t = [d["tightness"] for d in per_seed]
    holds = [x["worst_rel_change"] >= -1e-9 and x["worst_rel_change_weighted"] >= -1e-9
             for x in t]
    kn = t[0]["kn"] if t else {}
    counter = bool(kn) and kn["0.5"]["f_uniform"] > kn["0.5"]["f_best_binary"] + 1e-12
    v = verdict_all(holds + [counter])
    out.append(Verdict("tightness", v,
                       f"worst relative f change under pairwise rounding "
                       f"{min(x['worst_rel_change'] for x in t):.2e} (unweighted), "
                       f"{min(x['worst_rel_change_weighted'] for x in t):.2e} (weighted, lam = "
                       f"max w) over {sum(x['trials'] for x in t)} trials; K5 lam=0.5 uniform "
                       f"f = {kn['0.5']['f_uniform']:.3g} vs best binary "
                       f"{kn['0.5']['f_best_binary']:.3g}",
                       {"trials": sum(x["trials"] for x in t), "k5": kn,
                        "worst": min(x["worst_rel_change"] for x in t)}))
    # dichotomy: lam = 1.5 runs
    key15 = _key("se-fw", 1.5, "short")
    esc_ok, lm_ok, n_esc, n_int, bad = [], [], 0, 0, []
    for d in per_seed:
        for r in d["records"]:
            m = r["methods"].get(key15)
            if m is None:
                continue
            for e in m["escapes"]:
                ok = e["curvature"] > 0 and e["df"] > 0
                esc_ok.append(ok)
                n_esc += 1
                if not ok:
                    bad.append(f"escape {r['graph']} k={r['k']} seed={r['seed']}")
            if m["integral"]:
                n_int += 1
                lm_ok.append(bool(m["strict_local_max"]))
                if not m["strict_local_max"]:
                    bad.append(f"not strict local max {r['graph']} k={r['k']} seed={r['seed']}")
    out.append(Verdict("dichotomy", verdict_all(esc_ok + lm_ok),
                       f"lam=1.5: {sum(esc_ok)}/{n_esc} escapes had u^T M u > 0 and raised f; "
                       f"{sum(lm_ok)}/{n_int} integral outputs passed the strict local-max test",
                       {"escapes": n_esc, "escapes_ok": sum(esc_ok), "integral_outputs": n_int,
                        "local_max_ok": sum(lm_ok), "counterexamples": bad[:10]}))
    # finite_step on the default configuration (lam 1, short step, T from the config)
    fin, rate, bad = [], [], []
    exact_fin = []
    for d in per_seed:
        for r in d["records"]:
            m = r["methods"]["se-fw"]
            ok = m["integral"] and m["final_gap"] >= 0
            fin.append(ok)
            rate.append(m["gap_bound_ok"])
            if not ok:
                bad.append(f"{r['graph']} k={r['k']} seed={r['seed']} ({m['status']}, "
                           f"{m['n_fractional']} fractional)")
            ex = r["methods"].get(_key("se-fw", 1.0, "exact"))
            if ex is not None:
                exact_fin.append(ex["integral"])
    out.append(Verdict("finite_step", verdict_all(fin + rate),
                       f"SE-FW (lam 1, short step) ended integral before T on {sum(fin)}/"
                       f"{len(fin)} instances; gap rate bound held on {sum(rate)}/{len(rate)}; "
                       f"with exact line search {sum(exact_fin)}/{len(exact_fin)} ended integral",
                       {"integral": sum(fin), "instances": len(fin), "rate_ok": sum(rate),
                        "exact_step_integral": sum(exact_fin), "counterexamples": bad[:10]}))
    edges = lambda m: m["edges"] + 1.0  # noqa: E731  add-one smoothing
    out.append(_paired_verdict("density_vs_peel", _pairs(per_seed, "se-fw", "peel"), edges, 0.0,
                               "SE-FW vs greedy peeling"))
    # Against the MIP's certified reference: the optimum where HiGHS proved it, else its dual
    # (upper) bound, rounded down to an integer edge count. Using the bound keeps time-limited
    # instances in the sample (dropping them would drop the hardest ones) and can only make
    # SE-FW look worse than it is.
    def certified(m):
        if m.get("status") == "optimal":
            return m["edges"] + 1.0
        return math.floor(m["dual_bound"] + 1e-6) + 1.0

    opt = _pairs(per_seed, "se-fw", "mip",
                 require=lambda m: m.get("status") == "optimal" or m.get("dual_bound") is not None)
    out.append(_paired_verdict("near_optimal", opt, edges, math.log(0.9),
                               "SE-FW vs MIP optimum (or its certified upper bound where the "
                               "time limit hit)", value_b=certified))
    fb = _pairs(per_seed, "peel", "se-fw", families=("facebook",))
    out.append(_paired_verdict("speed", fb, lambda m: max(m["time"], 1e-6), 0.0,
                               "time ratio peel / SE-FW on ego-Facebook"))
    return out


# --------------------------------------------------------------------------- figures


def figures(per_seed: list[dict[str, Any]], outdir) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    d0 = per_seed[0]
    # 1. gap traces (min so far) with C / sqrt(t + 1)
    fig, ax = plt.subplots(figsize=(6, 4))
    shown = [(k, v) for k, v in d0["traces"].items() if "|se-fw" in k and "K5" not in k
             and "C8" not in k][:8]
    for name, tr in shown:
        gaps = np.minimum.accumulate(np.asarray(tr["gap"], dtype=float))
        t = np.arange(1, gaps.size + 1)
        pos = gaps > 0
        ax.loglog(t[pos], gaps[pos], label=name.split("|")[0] + " " + name.split("|")[1])
        ax.loglog(t, tr["C"] / np.sqrt(t), ":", color=ax.lines[-1].get_color(), lw=0.8)
    ax.set_xlabel("iteration t + 1")
    ax.set_ylabel("min_{s<=t} FW gap")
    ax.set_title("SE-FW gap (solid) vs C/sqrt(t+1) (dotted)")
    ax.legend(fontsize=6)
    paths.append(_save(fig, outdir / "dks_gap_trace.png"))
    # 2. fractional count and escapes on the symmetric graphs
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, tr in d0["traces"].items():
        if name.split("|")[0] not in TRACE_GRAPHS:
            continue
        line, = ax.plot(tr["frac"], label=name.replace("|", " "))
        for it in tr["escape_iters"]:
            ax.axvline(it, color=line.get_color(), ls="--", lw=0.6)
    ax.set_xlabel("iteration")
    ax.set_ylabel("fractional coordinates")
    ax.set_title("symmetric graphs: fractional count, escapes dashed")
    ax.legend(fontsize=6)
    paths.append(_save(fig, outdir / "dks_escapes.png"))
    # 3. normalised density vs k on ego-Facebook (mean over seeds)
    fb = [r for d in per_seed for r in d["records"] if r["family"] == "facebook"]
    if fb:
        fig, ax = plt.subplots(figsize=(6, 4))
        ks = sorted({r["k"] for r in fb})
        for meth in fb[0]["methods"]:
            ys = [np.mean([2 * r["methods"][meth]["edges"] / (r["k"] * (r["k"] - 1))
                           for r in fb if r["k"] == k and meth in r["methods"]]) for k in ks]
            ax.plot(ks, ys, marker="o", label=meth, lw=1)
        ax.set_xlabel("k")
        ax.set_ylabel("density 2|E(S)| / (k(k-1))")
        ax.set_title(fb[0]["graph"])
        ax.legend(fontsize=6)
        paths.append(_save(fig, outdir / "dks_facebook_density.png"))
    # 4. time per method (all instances, all seeds)
    allrec = [r for d in per_seed for r in d["records"]]
    meths = sorted({m for r in allrec for m in r["methods"]})
    fig, ax = plt.subplots(figsize=(7, 4))
    data = [[max(r["methods"][m]["time"], 1e-6) for r in allrec if m in r["methods"]]
            for m in meths]
    ax.boxplot(data)
    ax.set_xticks(range(1, len(meths) + 1), meths, rotation=45, fontsize=7, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("wall time per (graph, k) [s]")
    fig.tight_layout()
    paths.append(_save(fig, outdir / "dks_time.png"))
    return paths


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
