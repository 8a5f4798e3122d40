"""Reproduction of paper 06 (TALDA) with TALDA-R, our reconstruction (spec ``talda.md`` §2-3).

Fidelity **reconstructed**: only the abstract was available; TALDA-R (surrogate, actions,
step rule, certified rate) is ours. The claims below are the abstract's statements measured on
TALDA-R; the seed is the unit of replication (within a seed, runs over the evaluation inits
are averaged). See :mod:`.experiments` for the protocol (equal tuning grids, equal budgets in
gradient calls, no extrapolation).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from optzoo.repro.claim import Claim, Verdict
from optzoo.repro.judging import judge as decide

from .experiments import SCALES, STEP_WINDOW, TOL, Config, _tune, run_settings, step_grid

__all__ = ["CLAIMS", "SCALES", "Config", "figures", "judge", "run"]

#: weak coupling (spec C4): eps <= this on the P2 and P3 families
WEAK = 0.03
_AGDA = ("AGDA's theory steps tau_x = mu_y^2 / (18 l^3), tau_y = 1/l are recalled from Yang, "
         "Kiyavash & He (NeurIPS 2020, arXiv 2002.09621) and were not checked against the text")

CLAIMS = [
    Claim("linear",
          "TALDA-R converges linearly on two-sided PL problems (P1-P4, incl. the nonconvex-"
          "nonconcave P1): every run reaches |grad f| <= 1e-8 with a negative log-slope.",
          "per (seed, setting): every TALDA-R run reached 1e-8 within the budget and the slope of "
          "log|grad f| over the last half of the run is < 0",
          direction="all", unit="instance", source="abstract ('linear convergence'); spec C1"),
    Claim("coupling",
          "The rate depends on the cross-smoothness L_xy: TALDA-R needs more gradient calls at the "
          "largest coupling than at the smallest (P2 and P3 families).",
          "mean over eval inits of log(calls at largest eps / calls at smallest eps), paired by "
          "init, unconverged runs at the budget; one part per family",
          direction="greater", threshold=0.0, source="abstract ('rate depends explicitly on the "
          "cross-smoothness constant'); spec C2"),
    Claim("vs_agda_theory",
          "Theory vs theory: TALDA-R at its certified steps reaches 1e-8 in fewer gradient calls "
          "than AGDA at its theory steps, in every setting. " + _AGDA + ".",
          "mean over eval inits of log10(|grad f| of AGDA-theory / |grad f| of TALDA-R), both "
          "after the gradient calls TALDA-R needed (measured; nothing extrapolated); one part per setting",
          direction="greater", threshold=0.0, source="abstract ('recovers worst-case guarantees, "
          "sharper for weakly coupled problems'); spec C3"),
    Claim("weak_coupling_tuned",
          "At weak coupling (eps <= 0.03), tuned TALDA-R needs no more gradient calls than tuned "
          "AGDA (same step grid, same budget in gradient calls).",
          "mean over eval inits of log(tuned AGDA calls / tuned TALDA-R calls), unconverged at the "
          "budget; one part per (family, eps)",
          direction="greater", threshold=0.0, source="spec C4 (abstract: 'sharper for weakly "
          "coupled problems')"),
    Claim("lyapunov",
          "Lyapunov descent: along every TALDA-R run the exact (idealized) Lyapunov function P "
          "is non-increasing and stays below the computable surrogate S.",
          "per (seed, setting): P_{k+1} <= P_k (1e-10 relative slack) and P_k <= S_k on every run",
          direction="all", unit="instance", source="abstract ('enforces Lyapunov descent by "
          "construction'); spec C5"),
    Claim("learning",
          "On robust least squares (diabetes data, PL but not strongly convex) TALDA-R converges "
          "to the least-squares solution set.",
          "per (seed, gamma): every run converged, its distance to x_ls + null(A) is <= 1e-5 and "
          "shrank by >= 1e4",
          direction="all", unit="instance", source="spec C6 (learning illustration)"),
    Claim("weak_coupling_tuned_iters",
          "Ours (anticipated by spec C4): counted in iterations instead of gradient calls, tuned "
          "TALDA-R is not ahead of tuned AGDA at weak coupling (eps <= 0.03): its per-call "
          "advantage comes from AGDA's second gradient call per iteration.",
          "mean over eval inits of log(tuned AGDA iterations / tuned TALDA-R iterations), both "
          "censored at the smaller iteration budget (AGDA's); one part per (family, eps)",
          direction="less", threshold=0.0, kind="finding", source="spec C4; issue 18 (equal iterations)"),
    Claim("surrogate_descent",
          "By construction, the surrogate S_{k+1} = min(W_{k+1}, S_k + C_k) never increases, "
          "contracts by (1 - r) every step and stays below W.",
          "per (seed, setting): S non-increasing, S_{k+1} <= (1 - r) S_k and S_k <= W_k on every run",
          direction="all", unit="instance", kind="check", source="spec §4.6"),
]


def run(config: Config, seed: int, progress) -> dict:
    return run_settings(config, seed, progress)


def _key(s) -> str:
    return f"{s['family']}:{s['param']:g}"


def _capped(v, cap) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    return np.where(np.isfinite(v), v, cap)


def _per_seed(per_seed, fn, where=lambda s: True) -> dict[str, list[float]]:
    """{setting key: [fn(setting) per seed]} over the settings present in every seed."""
    out: dict[str, list[float]] = {}
    for r in per_seed:
        for s in r["settings"]:
            if where(s):
                out.setdefault(_key(s), []).append(float(fn(s)))
    return {k: v for k, v in out.items() if len(v) == len(per_seed)}


def _log_ratio_tuned(s, a, b, what) -> float:
    ta, tb = s["tuned"][a], s["tuned"][b]
    if what == "calls":
        ca, cb = _capped(ta["calls"], s["budget_calls"]), _capped(tb["calls"], s["budget_calls"])
    else:
        # one cap for both: AGDA's iteration budget is half TALDA-R's (equal gradient calls), so
        # capping each at its own budget would count an unconverged AGDA run as the faster one
        cap = min(ta["iter_budget"], tb["iter_budget"])
        ca, cb = np.minimum(_capped(ta["iters"], cap), cap), np.minimum(_capped(tb["iters"], cap), cap)
    return float(np.mean(np.log(ca) - np.log(cb)))


def _median_table(per_seed) -> dict:
    table: dict = {}
    for r in per_seed:
        for s in r["settings"]:
            row = table.setdefault(_key(s), {})
            row.setdefault("talda_theory", []).extend(s["talda"]["calls"])
            for m, t in s["tuned"].items():
                row.setdefault(f"{m}_tuned", []).extend(t["calls"])
    return {k: {m: float(np.median(v)) for m, v in row.items()} for k, row in table.items()}


def judge(per_seed: list[dict]) -> list[Verdict]:
    c = {cl.id: cl for cl in CLAIMS}
    allset = [s for r in per_seed for s in r["settings"]]
    linear = [bool(np.isfinite(s["talda"]["calls"]).all() and (np.asarray(s["talda"]["slope"]) < 0).all())
              for s in allset]
    coupling = {}
    for fam in ("P2", "P3"):
        vals = []
        for r in per_seed:
            ss = {s["param"]: s for s in r["settings"] if s["family"] == fam}
            if len(ss) >= 2:
                lo, hi = ss[min(ss)], ss[max(ss)]
                vals.append(float(np.mean(np.log(_capped(hi["talda"]["calls"], hi["budget_calls"]))
                                          - np.log(_capped(lo["talda"]["calls"], lo["budget_calls"])))))
        if vals and len(vals) == len(per_seed):
            coupling[fam] = vals
    vs_agda = _per_seed(per_seed, lambda s: np.mean(
        np.log10(np.asarray(s["agda_theory"]["grad_norm_at_talda_calls"], dtype=float))
        - np.log10(np.maximum(np.asarray(s["talda"]["final_norm"], dtype=float), 1e-300))))
    weak = lambda s: s["family"] in ("P2", "P3") and s["param"] <= WEAK and {"agda", "talda"} <= set(s["tuned"])  # noqa: E731
    wk_calls = _per_seed(per_seed, lambda s: _log_ratio_tuned(s, "agda", "talda", "calls"), weak)
    wk_iters = _per_seed(per_seed, lambda s: _log_ratio_tuned(s, "agda", "talda", "iters"), weak)
    lyap = [bool(s["talda"]["P_monotone"] and s["talda"]["P_le_S"]) for s in allset]
    p4 = [s for s in allset if s["family"] == "P4"]
    learning = [bool(np.isfinite(s["talda"]["calls"]).all() and max(s["ls_dist"]) <= 1e-5
                     and all(d <= 1e-4 * d0 for d, d0 in zip(s["ls_dist"], s["ls_dist0"], strict=True)))
                for s in p4]
    surrogate = [bool(s["talda"]["S_monotone"] and s["talda"]["S_contracts"] and s["talda"]["S_le_W"])
                 for s in allset]
    table = _median_table(per_seed)
    rates = {_key(s): {"talda_certified": s["certified_rate"], "agda_recalled": s["agda_rate"]}
             for s in per_seed[0]["settings"]}
    # a custom config without the needed settings: one placeholder value, judged undecided
    none = {"no settings at this scale": [0.0]}
    return [
        decide(c["linear"], linear, numbers={"runs": sum(len(s["talda"]["calls"]) for s in allset)}),
        decide(c["coupling"], coupling or none, numbers={"certified_rate": rates}),
        decide(c["vs_agda_theory"], vs_agda or none),
        decide(c["weak_coupling_tuned"], wk_calls or none, numbers={"median_calls": table},
               note="tuned GDA, EG and OGDA are in the median table"),
        decide(c["lyapunov"], lyap, numbers={"max_P_increase": max(
            [s["talda"]["max_P_increase"] for s in allset], default=0.0)}),
        decide(c["learning"], learning, note="" if p4 else "P4 is not run at this scale",
               numbers={"max_ls_dist": max([max(s["ls_dist"]) for s in p4], default=None)}),
        decide(c["weak_coupling_tuned_iters"], wk_iters or none),
        decide(c["surrogate_descent"], surrogate),
    ]


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    from .plots import draw

    return draw(per_seed, Path(outdir))


# kept for ``benchmarks/talda.py`` (tunes a method on the reproduction's grid)
_ = (_tune, step_grid, STEP_WINDOW, TOL)
