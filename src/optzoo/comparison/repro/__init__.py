"""Reproduction of comparison (arXiv 2606.27082): claims, scales, run, judge, figures.

The paper's claim is about **worst-case query complexity**: CMP-TR visits an
eps-stationary point after O~(n^2/eps^1.5) comparisons against O~(n/eps^2) for CMP-NGD
(Zhang & Li 2024). Neither bound wins uniformly: their ratio scales as n sqrt(eps), so the new
bound wins only for small n sqrt(eps). The reproduction measures, on the ramp family (whose
exponents are the worst case of both bounds; ``problems.ramp``), the comparisons each method
uses until its first iterate with |grad f| <= eps (the evaluator reads the true gradient through
a callback; the methods never see it), and fits the eps- and n-exponents per seed.

Baselines through the same counting oracle: CMA-ES (pycma, ranks from sorting with the
oracle) and scipy Nelder-Mead (comparisons reported as an upper bound), on the ramp and on the
benign separable-cosine family, where CMA-ES is expected to win in absolute counts. The
quantum part is SIMULATED: a query ledger (formula per iteration times measured iterations;
no quantum execution) and a small statevector check of the phase oracle.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo.comparison import (
    ComparisonOracle,
    cma_minimize,
    comparison_minimize,
    fourier_sampling,
    fundamental_probability,
    nelder_mead_minimize,
    phase_oracle,
)
from optzoo.comparison.repro.problems import cosine, ramp
from optzoo.repro.claim import Claim, Verdict
from optzoo.repro.figures import new_figure, save_figure
from optzoo.repro.judging import judge as decide
from optzoo.repro.judging import paired

__all__ = ["CLAIMS", "SCALES", "Config", "figures", "judge", "run"]

CLAIMS = [
    Claim("eps_slope_tr",
          "On the ramp family CMP-TR needs comparisons growing as eps^-1.5 (the abstract's "
          "O~(n^2/eps^1.5)), clearly apart from the prior eps^-2.",
          "slope of log(comparisons to eps-stationarity, CMP-TR) against log eps, per n",
          direction="equivalent", threshold=-1.5, margin=0.25, source="abstract; spec C1"),
    Claim("eps_slope_ngd",
          "On the same family the prior comparison method CMP-NGD needs eps^-2 (the O~(n/eps^2) "
          "bound the abstract improves on).",
          "slope of log(comparisons to eps-stationarity, CMP-NGD) against log eps, per n",
          direction="equivalent", threshold=-2.0, margin=0.25, source="abstract (prior bound); spec C2"),
    Claim("n_slope_tr",
          "CMP-TR's comparisons grow as n^2 (up to logs) at fixed eps.",
          "slope of log(comparisons, CMP-TR) against log n, per eps",
          direction="equivalent", threshold=2.0, margin=0.2, source="abstract; spec C3"),
    Claim("crossover_small",
          "Where n sqrt(eps) is smallest, CMP-TR uses fewer comparisons than CMP-NGD (the new "
          "bound wins there).",
          "log(comparisons CMP-TR / CMP-NGD) at the smallest n sqrt(eps) of the grid",
          direction="less", threshold=0.0, source="abstract's bounds; spec C4"),
    Claim("crossover_large",
          "Where n sqrt(eps) is largest, CMP-TR uses more comparisons than CMP-NGD: the new "
          "bound does not win uniformly.",
          "log(comparisons CMP-TR / CMP-NGD) at the largest n sqrt(eps) of the grid",
          direction="greater", threshold=0.0, source="abstract's bounds (ratio ~ n sqrt(eps)); spec C4"),
    Claim("ratio_scaling",
          "The ratio of comparisons CMP-TR / CMP-NGD scales as n sqrt(eps), the ratio of the two "
          "bounds (our derivation from the abstract's bounds).",
          "slope of log(CMP-TR / CMP-NGD) against log(n sqrt(eps)) over the grid",
          direction="equivalent", threshold=1.0, margin=0.3, kind="finding",
          source="spec section 2 (derived)"),
    Claim("cma_vs_tr_benign",
          "On the benign separable-cosine family CMA-ES (ranks only) needs fewer comparisons "
          "than CMP-TR to visit an eps-stationary point (the spec's expectation; the paper's "
          "claim is about the worst case, not about CMA-ES).",
          "log(comparisons CMA-ES / CMP-TR), separable cosine, mean over the family's n",
          direction="less", threshold=0.0, kind="finding", source="spec section 3"),
    Claim("quantum_ledger_linear",
          "SIMULATED (no quantum execution): the query ledger of the quantum routines, charged "
          "per CMP-TR iteration, grows linearly in n.",
          "slope of log(simulated quantum queries) against log n, per eps",
          direction="equivalent", threshold=1.0, margin=0.3, kind="check",
          source="abstract (O~(n/eps^1.5)); spec C5; counts are our formula x measured iterations"),
    Claim("statevector_born",
          "SIMULATED statevector of the comparison phase oracle plus textbook Fourier sampling "
          "(our circuit, not the paper's routine): the measured frequency of the fundamental "
          "matches the closed form 8/(N^2 sin^2(pi/N)).",
          "empirical minus exact probability of frequency +-1 on the gradient axis",
          direction="equivalent", threshold=0.0, margin=0.03, kind="check",
          source="spec section 1 (statevector mode)"),
    Claim("visits_benign",
          "CMP-TR visits an eps-stationary point of the separable-cosine family within its "
          "planned iteration budget.",
          "first eps-stationary iterate reached before the planned iterations end",
          direction="all", kind="check", unit="instance", source="spec property test 5"),
]


@dataclass(frozen=True)
class Config:
    dims: tuple = (2, 4, 8, 16)
    epss: tuple = (0.3, 0.1, 0.03)
    cma_dims: tuple = (2, 8)          # ramp baselines (CMA-ES, Nelder-Mead) on these n
    benign_dims: tuple = (2, 4)       # separable cosine
    benign_eps: float = 0.1
    q: int = 6                        # statevector grid: 2^q points per axis, n = 2
    shots: int = 4000
    max_gen: int = 20_000             # CMA-ES generations / Nelder-Mead iterations cap
    seeds: int = 6


# The quick grid is the spec's (n in {2,4,8}, eps in {0.3,0.1,0.03}) plus n = 16, added on CPU
# time alone (pilot seed 90000: n = 16 costs about 4 s of CPU) to widen the n-range of the
# slope fits; 6 seeds (>= 5). The per-seed spread of the counts is small (the instances differ
# by a rotation and a tiny transverse start), so the intervals are far narrower than the
# effects (0.5 in slope, log 2 in ratio).
SCALES = {
    "smoke": Config(dims=(2, 3), epss=(0.3, 0.1), cma_dims=(2,), benign_dims=(2,), q=4,
                    shots=2000, max_gen=2000, seeds=2),
    "quick": Config(),
    "full": Config(dims=(2, 4, 8, 16, 32), epss=(0.3, 0.1, 0.03, 0.01, 0.003), cma_dims=(2, 8, 32),
                   benign_dims=(2, 4, 8, 16), q=10, shots=20_000, max_gen=200_000, seeds=10),
}


def _first_visit(problem, eps):
    return lambda x: bool(problem.grad_norm(x)[0] <= eps)


def _run_theory(problem, method, eps, seed, *, ledger=False):
    orc = ComparisonOracle(problem.f, vectorized=True, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = comparison_minimize(orc, problem.x0, eps=eps, method=method, L=problem.L,
                                  rho=problem.rho, delta_f=problem.delta_f,
                                  quantum_ledger=ledger, callback=_first_visit(problem, eps))
    hit = "callback" in res.message
    return {"comparisons": int(res.ncomparisons), "iterations": res.nit, "visited": hit,
            "planned": res.planned_iterations,
            "quantum": res.quantum_queries if ledger else None}


def _run_baseline(problem, which, eps, seed, max_gen):
    orc = ComparisonOracle(problem.f, vectorized=True, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if which == "cma":
            xstar = problem.Q.T @ np.zeros(problem.n)
            sigma0 = 0.3 * float(np.linalg.norm(problem.x0 - xstar))
            res = cma_minimize(orc, problem.x0, sigma0=sigma0, max_iter=max_gen, seed=seed,
                               callback=_first_visit(problem, eps))
        else:
            res = nelder_mead_minimize(orc, problem.x0, max_iter=max_gen,
                                       callback=_first_visit(problem, eps))
    return {"comparisons": int(res.ncomparisons), "iterations": res.nit,
            "visited": "callback" in res.message}


def _statevector(cfg, seed):
    rng = np.random.default_rng([seed, 7])
    c = float(rng.uniform(0.5, 2.0))
    lam = rng.uniform(0.5, 2.0, size=2)

    def f(Z):
        Z = np.atleast_2d(Z)
        return c * Z[:, 0] + 0.5 * (lam * Z ** 2).sum(1)

    diag = phase_oracle(f, np.zeros(2), radius=1e-3, q=cfg.q)
    out = fourier_sampling(diag, shots=cfg.shots, seed=seed)
    s = out["samples"]
    fund = float(np.mean((np.abs(s[:, 0]) == 1) & (s[:, 1] == 0)))
    # diagnostic only: the same textbook circuit on a generic gradient direction
    theta = float(rng.uniform(0.0, 2.0 * math.pi))
    g = np.array([math.cos(theta), math.sin(theta)])
    diag2 = phase_oracle(lambda Z: np.atleast_2d(Z) @ g, np.zeros(2), radius=1e-3, q=cfg.q)
    s2 = fourier_sampling(diag2, shots=cfg.shots, seed=seed + 1)["samples"].astype(float)
    cos = (s2 @ g) / np.maximum(np.linalg.norm(s2, axis=1), 1e-300)
    return {"q": cfg.q, "shots": cfg.shots, "fundamental_measured": fund,
            "fundamental_exact": fundamental_probability(cfg.q),
            "diag_is_pm1": bool(np.isin(diag, (-1.0, 1.0)).all()),
            "oracle_squared_is_identity": out["oracle_squared_is_identity"],
            "norm_error": abs(out["norm_after_qft"] - 1.0),
            "generic_direction_cos_gt_0.9": float(np.mean(cos > 0.9))}


def run(config: Config, seed: int, progress) -> dict:
    cfg = config
    steps = len(cfg.dims) * len(cfg.epss) + len(cfg.cma_dims) * len(cfg.epss) + len(cfg.benign_dims) + 1
    progress.start(steps, "comparison")
    out: dict = {"config": {"dims": list(cfg.dims), "epss": list(cfg.epss),
                            "cma_dims": list(cfg.cma_dims), "benign_dims": list(cfg.benign_dims),
                            "benign_eps": cfg.benign_eps}}
    ramp_rows = []
    for n in cfg.dims:
        for eps in cfg.epss:
            p = ramp(n, eps, seed)
            row = {"n": n, "eps": eps, "tr": _run_theory(p, "tr", eps, seed, ledger=True),
                   "ngd": _run_theory(p, "ngd", eps, seed)}
            ramp_rows.append(row)
            progress.advance()
    for n in cfg.cma_dims:
        for eps in cfg.epss:
            p = ramp(n, eps, seed)
            row = next((r for r in ramp_rows if r["n"] == n and r["eps"] == eps), None)
            if row is None:
                row = {"n": n, "eps": eps, "tr": _run_theory(p, "tr", eps, seed, ledger=True),
                       "ngd": _run_theory(p, "ngd", eps, seed), "extra_dim": True}
                ramp_rows.append(row)
            row["cma"] = _run_baseline(p, "cma", eps, seed, cfg.max_gen)
            row["nelder_mead_bound"] = _run_baseline(p, "nm", eps, seed, cfg.max_gen)
            progress.advance()
    out["ramp"] = ramp_rows
    benign = []
    for n in cfg.benign_dims:
        p = cosine(n, cfg.benign_eps, seed)
        benign.append({"n": n, "eps": cfg.benign_eps,
                       "tr": _run_theory(p, "tr", cfg.benign_eps, seed),
                       "ngd": _run_theory(p, "ngd", cfg.benign_eps, seed),
                       "cma": _run_baseline(p, "cma", cfg.benign_eps, seed, cfg.max_gen),
                       "nelder_mead_bound": _run_baseline(p, "nm", cfg.benign_eps, seed, cfg.max_gen)})
        progress.advance()
    out["benign"] = benign
    out["statevector"] = _statevector(cfg, seed)
    progress.advance()
    return out


def _grid(r, method, key="comparisons"):
    """{(n, eps): value} over the main grid (rows added only for the baselines excluded)."""
    return {(row["n"], row["eps"]): row[method][key] for row in r["ramp"] if not row.get("extra_dim")}


def _cell(r, n, eps):
    return next(row for row in r["ramp"] if row["n"] == n and row["eps"] == eps)


def _slope(x, y):
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def judge(per_seed: list[dict]) -> list[Verdict]:
    """One verdict per CLAIMS entry, in order, each from :func:`optzoo.repro.judging.judge`."""
    cfg = per_seed[0]["config"]
    dims, epss = cfg["dims"], cfg["epss"]
    ev, notes, nums = {}, {}, {}
    for cid, m in (("eps_slope_tr", "tr"), ("eps_slope_ngd", "ngd")):
        ev[cid] = {f"n={n}": [_slope(epss, [_grid(r, m)[(n, e)] for e in epss]) for r in per_seed]
                   for n in dims}
    ev["n_slope_tr"] = {f"eps={e:g}": [_slope(dims, [_grid(r, "tr")[(n, e)] for n in dims])
                                      for r in per_seed] for e in epss}
    ngd_n = {f"eps={e:g}": float(np.mean([_slope(dims, [_grid(r, "ngd")[(n, e)] for n in dims])
                                          for r in per_seed])) for e in epss}
    notes["n_slope_tr"] = ("for reference, CMP-NGD's n-slopes (O~(n), log factors included): "
                           + ", ".join(f"{k}: {v:.3g}" for k, v in ngd_n.items()))
    nums["n_slope_tr"] = {f"ngd_{k}": v for k, v in ngd_n.items()}
    cells = [(n, e) for n in dims for e in epss]
    key = {c: c[0] * math.sqrt(c[1]) for c in cells}
    small, large = min(cells, key=key.get), max(cells, key=key.get)
    for cid, cell in (("crossover_small", small), ("crossover_large", large)):
        ev[cid] = paired([_grid(r, "tr")[cell] for r in per_seed],
                         [_grid(r, "ngd")[cell] for r in per_seed], "logratio")
        notes[cid] = f"cell n={cell[0]}, eps={cell[1]:g} (n sqrt(eps) = {key[cell]:.3g})"
    ev["ratio_scaling"] = [_slope([key[c] for c in cells],
                                  [_grid(r, "tr")[c] / _grid(r, "ngd")[c] for c in cells])
                           for r in per_seed]
    wins = [c for c in cells if np.mean([_grid(r, "tr")[c] < _grid(r, "ngd")[c] for r in per_seed]) > 0.5]
    notes["ratio_scaling"] = ("cells where CMP-TR used fewer comparisons (majority of seeds): "
                              + (", ".join(f"(n={n}, eps={e:g})" for n, e in wins) or "none"))
    ev["cma_vs_tr_benign"] = [float(np.mean(paired([b["cma"]["comparisons"] for b in r["benign"]],
                                                   [b["tr"]["comparisons"] for b in r["benign"]],
                                                   "logratio"))) for r in per_seed]
    unvisited = sum(not b[m]["visited"] for r in per_seed for b in r["benign"] for m in ("cma", "tr"))
    base_cells = [(row["n"], row["eps"]) for row in per_seed[0]["ramp"] if "cma" in row]
    ramp_cma = {f"n={n},eps={e:g}": float(np.mean([
        math.log(_cell(r, n, e)["cma"]["comparisons"] / _cell(r, n, e)["tr"]["comparisons"])
        for r in per_seed])) for n, e in base_cells}
    notes["cma_vs_tr_benign"] = (f"{unvisited} (seed, n, method) runs hit the cap before visiting; on the "
                                 "ramp family, mean log(CMA-ES / CMP-TR): " + ", ".join(
                                     f"{k}: {v:.2g}" for k, v in ramp_cma.items()))
    nums["cma_vs_tr_benign"] = {f"ramp_log_cma_over_tr_{k}": v for k, v in ramp_cma.items()}
    ev["quantum_ledger_linear"] = {
        f"eps={e:g}": [_slope(dims, [_grid(r, "tr", "quantum")[(n, e)] for n in dims]) for r in per_seed]
        for e in epss}
    notes["quantum_ledger_linear"] = "simulated query complexity (no quantum execution)"
    ev["statevector_born"] = [r["statevector"]["fundamental_measured"] - r["statevector"]["fundamental_exact"]
                              for r in per_seed]
    sv_ok = all(r["statevector"]["diag_is_pm1"] and r["statevector"]["oracle_squared_is_identity"]
                and r["statevector"]["norm_error"] < 1e-12 for r in per_seed)
    notes["statevector_born"] = (f"SIMULATED; oracle diagonal +-1, U^2 = I and QFT norm within 1e-12 on "
                                 f"every seed: {sv_ok}; textbook circuit on a generic direction put "
                                 f"{np.mean([r['statevector']['generic_direction_cos_gt_0.9'] for r in per_seed]):.2f}"
                                 " of shots within cos > 0.9 (not the paper's routine)")
    ev["visits_benign"] = [b["tr"]["visited"] for r in per_seed for b in r["benign"]]
    return [decide(cl, ev[cl.id], note=notes.get(cl.id, ""), numbers=nums.get(cl.id)) for cl in CLAIMS]


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    cfg = per_seed[0]["config"]
    dims, epss = cfg["dims"], cfg["epss"]
    paths = []

    def med(method, n, e, key="comparisons"):
        return float(np.median([_grid(r, method, key)[(n, e)] for r in per_seed]))

    fig, axes = new_figure(1, 2, figsize=(10, 3.8))
    for i, n in enumerate(dims):
        for m, ls in (("tr", "-"), ("ngd", "--")):
            ys = [med(m, n, e) for e in epss]
            axes[0].loglog(epss, ys, ls, marker="o", color=f"C{i}",
                           label=f"CMP-{m.upper()} n={n} (slope {_slope(epss, ys):.2f})")
    axes[0].set(xlabel="eps", ylabel="comparisons to first eps-stationary iterate",
                title="ramp family: eps-scaling (median over seeds)")
    axes[0].legend(fontsize=6)
    for j, e in enumerate(epss):
        for m, ls in (("tr", "-"), ("ngd", "--")):
            ys = [med(m, n, e) for n in dims]
            axes[1].loglog(dims, ys, ls, marker="o", color=f"C{j}",
                           label=f"CMP-{m.upper()} eps={e:g} (slope {_slope(dims, ys):.2f})")
    axes[1].set(xlabel="n", ylabel="comparisons", title="n-scaling")
    axes[1].legend(fontsize=6)
    paths.append(save_figure(fig, outdir / "scaling.png", dpi=90))

    fig, axes = new_figure(1, 2, figsize=(10, 3.8))
    cells = [(n, e) for n in dims for e in epss]
    xs = [n * math.sqrt(e) for n, e in cells]
    ratio = [med("tr", n, e) / med("ngd", n, e) for n, e in cells]
    axes[0].loglog(xs, ratio, "o")
    for (n, e), x, y in zip(cells, xs, ratio, strict=True):
        axes[0].annotate(f"n={n},eps={e:g}", (x, y), fontsize=5)
    axes[0].axhline(1.0, color="k", lw=0.8)
    axes[0].set(xlabel="n sqrt(eps)", ylabel="comparisons CMP-TR / CMP-NGD",
                title="crossover: CMP-TR wins only below the line")
    # measured vs theory, one constant per method fitted on the smallest instance
    n0, e0 = min(dims), max(epss)
    for m, shape, col in (("tr", lambda n, e: n ** 2 / e ** 1.5, "C0"),
                          ("ngd", lambda n, e: n / e ** 2, "C3")):
        C = med(m, n0, e0) / shape(n0, e0)
        th = [C * shape(n, e) for n, e in cells]
        axes[1].loglog(th, [med(m, n, e) for n, e in cells], "o", color=col,
                       label=f"CMP-{m.upper()} vs C {'n^2/eps^1.5' if m == 'tr' else 'n/eps^2'}")
    lims = axes[1].get_xlim()
    axes[1].loglog(lims, lims, "k--", lw=0.8)
    axes[1].set(xlabel="theory shape (C fitted on the smallest instance)", ylabel="measured",
                title="measured vs theory")
    axes[1].legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "crossover.png", dpi=90))

    fig, ax = new_figure(figsize=(5, 3.8))
    for j, e in enumerate(epss):
        ax.loglog(dims, [med("tr", n, e, "quantum") for n in dims], "o-", color=f"C{j}",
                  label=f"simulated quantum, eps={e:g}")
        ax.loglog(dims, [med("tr", n, e) for n in dims], "x--", color=f"C{j}",
                  label=f"classical CMP-TR, eps={e:g}")
    ax.set(xlabel="n", ylabel="queries", title="SIMULATED query ledger (no quantum execution)")
    ax.legend(fontsize=6)
    paths.append(save_figure(fig, outdir / "quantum_ledger_simulated.png", dpi=90))

    rows = [row for row in per_seed[0]["ramp"] if "cma" in row]
    if rows:
        fig, ax = new_figure(figsize=(6, 3.8))
        labels = [f"n={row['n']},eps={row['eps']:g}" for row in rows]
        x = np.arange(len(rows))
        for k, (m, name) in enumerate((("tr", "CMP-TR"), ("ngd", "CMP-NGD"), ("cma", "CMA-ES"),
                                       ("nelder_mead_bound", "Nelder-Mead (bound)"))):
            vals = [np.median([next(rr for rr in r["ramp"] if rr["n"] == row["n"] and rr["eps"] == row["eps"])[m]
                               ["comparisons"] for r in per_seed]) for row in rows]
            ax.bar(x + 0.2 * k, vals, width=0.2, label=name)
        ax.set_yscale("log")
        ax.set_xticks(x + 0.3, labels, rotation=45, fontsize=6)
        ax.set(ylabel="comparisons (median)", title="ramp family, all methods")
        ax.legend(fontsize=6)
        paths.append(save_figure(fig, outdir / "baselines_ramp.png", dpi=90))
    return paths
