"""Reproduction of paper 06 (TALDA) with TALDA-R, our reconstruction, on records (spec ``talda.md``).

Fidelity **reconstructed**: only the abstract was available; TALDA-R (surrogate, three actions,
step rule, certified rate) is ours. The claims below are the abstract's statements measured on
TALDA-R; the seed is the unit of replication (within a seed, runs over the evaluation inits are
averaged). See :mod:`.experiments` for the protocol (equal tuning grids, tuning inits and
budgets in gradient calls for every tuned arm; nothing extrapolated).

Arms (every one run in the same unit on the same inits):

* ``talda``: TALDA-R at its certified steps; ``talda_tuned``: its step multipliers tuned;
* ``talda_nocorr`` / ``talda_nocorr_tuned``: the same method with the Lyapunov correction
  (action 3, the coupling-aware x-step [1 - K rho]_+ / M) removed: K = 0, i.e. plain GDA at
  TALDA-R's steps, tuned on the same multiplier grid, tuning inits and budget;
* ``talda_blind``: the same design with L_xy replaced by l = max(L_x, L_y, L_xy) (still valid
  bounds, still certified; no explicit dependence on the cross-smoothness);
* ``gda_tuned``, ``agda_tuned``, ``eg_tuned``, ``ogda_tuned``: the baselines on the same grid;
  ``agda_theory``: AGDA at its recalled theory steps, run for TALDA-R's gradient calls.

Why the claims are built this way (issue 38). The December review found "6/6 reproduced"
overstated: tuned plain GDA needs no more gradient calls than tuned TALDA-R at weak coupling;
``vs_agda_theory`` races against recalled, unchecked AGDA steps; ``lyapunov`` checks our own
certificate; ``coupling`` is near-automatic. Here the headline (linear convergence with an
L_xy-dependent rate, sharper under weak coupling) is tested by ``linear``, ``coupling`` and
``weak_coupling_vs_gda``, each against a control that removes the Lyapunov design;
``weak_coupling_tuned`` (vs AGDA) keeps its control visible; the AGDA-theory race is a finding,
the certificate and surrogate are checks.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from optzoo.repro.claim import Claim
from optzoo.repro.evidence import Control, Custom, Paired, Record, Universal, records_of

from .experiments import SCALES, STEP_WINDOW, TOL, Config, _tune, run_settings, step_grid

__all__ = ["CLAIMS", "HEADLINE", "SCALES", "WEAK", "Config", "figures", "notes", "run"]

#: weak coupling (spec C4): eps <= this on the P2 and P3 families
WEAK = 0.03
#: the coupling claim's threshold: the rate at the smallest coupling at least twice the rate at
#: the largest (eps from 0 to 0.3 on P2, 0 to 1 = l on P3), fixed before the pilot
COUPLING_FACTOR = 2.0

_AGDA = ("AGDA's theory steps tau_x = mu_y^2 / (18 l^3), tau_y = 1/l are recalled from Yang, "
         "Kiyavash & He (NeurIPS 2020, arXiv 2002.09621) and were not checked against the text")

_NOCORR = ("the Lyapunov correction (action 3: the coupling-aware x-step [1 - K rho]_+ / M, K = "
           "L_xy[(1+lam)/mu_y + lam/L_y]) replaced by plain GDA's fixed x-step: K = 0")
_CREDITS = ("abstract: the method 'enforces Lyapunov descent by construction' (a single-loop "
            "algorithm designed from the Lyapunov analysis), which yields linear convergence under "
            "two-sided PL with a rate depending explicitly on the cross-smoothness constant")


def _weak(part: str) -> bool:
    fam, _, eps = part.partition(":")
    return fam in ("P2", "P3") and float(eps) <= WEAK


def _weak_paired(metric: str, arm: str, baseline: str):
    def fn(per_seed, sub):
        got = Paired(metric, arm, baseline, "logratio").collect(per_seed, sub)
        return {p: v for p, v in got.items() if _weak(p)} or None
    return fn


def _coupling(per_seed, sub) -> dict:
    """Per family and seed: mean over inits of log(rate at smallest eps / rate at largest eps)."""
    arm = sub.get("talda", "talda")
    out = {}
    for fam in ("P2", "P3"):
        vals = []
        for seed in per_seed:
            by: dict = {}
            for r in seed:
                if r.arm == arm and r.metric == "rate" and r.part.startswith(fam + ":"):
                    by.setdefault(float(r.part.split(":")[1]), {})[r.instance] = r.value
            if len(by) < 2:
                continue
            lo, hi = by[min(by)], by[max(by)]
            d = [math.log(lo[k] / hi[k]) if lo[k] > 0 and hi[k] > 0 else float("nan") for k in sorted(lo)]
            vals.append(float(np.mean(d)))
        if vals:
            out[fam] = vals
    if not out:
        raise ValueError("no P2/P3 coupling sweep at this scale")
    return out


CLAIMS = [
    # --- the headline: claims that can fail, each against the Lyapunov design removed --------
    Claim("linear",
          "TALDA-R at its certified steps converges linearly on two-sided PL problems (P1-P4, incl. "
          "the nonconvex-nonconcave P1): every run reaches |grad f| <= 1e-8 within the budget "
          "(1e4 gradient calls, 2e4 on P4) with a negative log-slope.",
          "per (seed, setting, init): the TALDA-R run reached 1e-8 within the budget and the "
          "slope of log|grad f| over the last half of the run is < 0",
          direction="all", unit="instance",
          source="abstract: 'linear convergence' under two-sided PL for the single-loop method that "
                 "enforces Lyapunov descent by construction",
          evidence=Universal("linear", "talda"),
          control=Control({"talda": "talda_nocorr"},
                          removes=_NOCORR + ", at the same theory steps (1/M, 1/L_y)",
                          credits=_CREDITS)),
    Claim("coupling",
          "The rate depends explicitly on the cross-smoothness L_xy: TALDA-R's measured linear "
          f"rate at the smallest coupling is more than {COUPLING_FACTOR:g}x its rate at the largest "
          "(P2: eps 0 vs 0.3; P3: eps 0 vs 1).",
          "mean over eval inits of log(measured rate at smallest eps / at largest eps), rate = "
          "-slope of log|grad f| per gradient call over the last half of the run, paired by init; "
          "one part per family",
          direction="greater", threshold=math.log(COUPLING_FACTOR),
          source="abstract: 'the rate depends explicitly on the cross-smoothness constant'",
          evidence=Custom(_coupling, "log(rate at smallest eps / rate at largest eps) of talda, per "
                          "family", uses=("talda",)),
          control=Control({"talda": "talda_blind"},
                          removes="the explicit L_xy in the design: the same method with L_xy replaced "
                                  "by l = max(L_x, L_y, L_xy) in M, K, w_y and lam* (still valid "
                                  "bounds, still certified)",
                          credits="abstract: 'the rate depends explicitly on the cross-smoothness "
                                  "constant' and is 'sharper for weakly coupled problems'")),
    Claim("weak_coupling_vs_gda",
          "At weak coupling (eps <= 0.03), tuned TALDA-R needs fewer gradient calls than tuned "
          "plain GDA (same step grid, tuning inits and budget in gradient calls).",
          "mean over eval inits of log(tuned GDA calls / tuned TALDA-R calls), unconverged runs at "
          "the budget; one part per (family, eps)",
          direction="greater", threshold=0.0,
          source="abstract: the rate is 'sharper for weakly coupled problems'",
          evidence=Custom(_weak_paired("calls", "gda_tuned", "talda_tuned"),
                          "calls: gda_tuned vs talda_tuned (log ratio, paired), parts eps <= 0.03",
                          uses=("gda_tuned", "talda_tuned")),
          control=Control({"talda_tuned": "talda_nocorr_tuned"},
                          removes=_NOCORR + "; tuned on the same multiplier grid, tuning inits and "
                                  "budget (plain GDA on TALDA-R's grid)",
                          credits=_CREDITS)),
    Claim("weak_coupling_tuned",
          "At weak coupling (eps <= 0.03), tuned TALDA-R needs fewer gradient calls than tuned "
          "AGDA (same step grid, tuning inits and budget in gradient calls).",
          "mean over eval inits of log(tuned AGDA calls / tuned TALDA-R calls), unconverged at the "
          "budget; one part per (family, eps)",
          direction="greater", threshold=0.0,
          source="abstract: 'sharper for weakly coupled problems' (spec C4 narrows it to AGDA)",
          evidence=Custom(_weak_paired("calls", "agda_tuned", "talda_tuned"),
                          "calls: agda_tuned vs talda_tuned (log ratio, paired), parts eps <= 0.03",
                          uses=("agda_tuned", "talda_tuned")),
          control=Control({"talda_tuned": "talda_nocorr_tuned"},
                          removes=_NOCORR + "; tuned on the same multiplier grid, tuning inits and "
                                  "budget (plain GDA on TALDA-R's grid)",
                          credits=_CREDITS)),
    # --- findings: the spec's or ours, not the abstract's -----------------------------------
    Claim("vs_agda_theory",
          "Theory vs theory: after the gradient calls TALDA-R needed, AGDA at its theory steps "
          "has a larger |grad f|, in every setting. " + _AGDA + ", so this races against a "
          "recalled step size, not a checked guarantee.",
          "mean over eval inits of log10(|grad f| of AGDA-theory / |grad f| of TALDA-R), both after "
          "TALDA-R's gradient calls (measured; nothing extrapolated); one part per setting",
          direction="greater", threshold=0.0, kind="finding", source="spec C3 (recalled constants)",
          evidence=Paired("log10_grad_norm_at_talda_calls", "agda_theory", "talda")),
    Claim("learning",
          "On robust least squares (diabetes data, PL but not strongly convex) TALDA-R converges "
          "to the least-squares solution set.",
          "per (seed, gamma, init): converged, distance to x_ls + null(A) <= 1e-5 and shrunk >= 1e4",
          direction="all", unit="instance", kind="finding", source="spec C6 (learning illustration)",
          evidence=Universal("ls_converged", "talda")),
    Claim("weak_coupling_tuned_iters",
          "Ours (anticipated by spec C4): counted in iterations instead of gradient calls, tuned "
          "TALDA-R is not ahead of tuned AGDA at weak coupling (eps <= 0.03): its per-call "
          "advantage comes from AGDA's second gradient call per iteration.",
          "mean over eval inits of log(tuned AGDA iterations / tuned TALDA-R iterations), both "
          "censored at the smaller iteration budget (AGDA's); one part per (family, eps)",
          direction="less", threshold=0.0, kind="finding", source="spec C4; issue 18 (equal iterations)",
          evidence=Custom(_weak_paired("iters_capped", "agda_tuned", "talda_tuned"),
                          "iters_capped: agda_tuned vs talda_tuned (log ratio), parts eps <= 0.03",
                          uses=("agda_tuned", "talda_tuned"))),
    # --- checks of our own construction (also unit tests) -----------------------------------
    Claim("lyapunov",
          "Our certificate holds along the runs: the exact (idealized) Lyapunov function P is "
          "non-increasing and stays below the computable surrogate S on every TALDA-R run.",
          "per (seed, setting, init): P_{k+1} <= P_k (1e-10 relative slack) and P_k <= S_k",
          direction="all", unit="instance", kind="check", source="spec §4.6 (our derivation, §1.3)",
          evidence=Universal("lyapunov_ok", "talda")),
    Claim("surrogate_descent",
          "By construction, the surrogate S_{k+1} = min(W_{k+1}, S_k + C_k) never increases, "
          "contracts by (1 - r) every step and stays below W.",
          "per (seed, setting, init): S non-increasing, S_{k+1} <= (1 - r) S_k and S_k <= W_k",
          direction="all", unit="instance", kind="check", source="spec §4.6",
          evidence=Universal("surrogate_ok", "talda")),
]

#: The claims that test the abstract's headline (papers.py names them).
HEADLINE = ("linear", "coupling", "weak_coupling_vs_gda")

_TABLE_ARMS = ("talda", "talda_tuned", "talda_nocorr_tuned", "gda_tuned", "agda_tuned", "eg_tuned",
               "ogda_tuned")


def run(config: Config, seed: int, progress) -> list[Record]:
    return run_settings(config, seed, progress)


def _medians(per_seed, metric="calls") -> dict[str, dict[str, float]]:
    """part -> arm -> median over (seed, init) of ``metric``."""
    acc: dict = {}
    for seed in per_seed:
        for r in seed:
            if r.metric == metric and r.instance.startswith("i"):
                acc.setdefault(r.part, {}).setdefault(r.arm, []).append(r.value)
    return {p: {a: float(np.median(v)) for a, v in row.items()} for p, row in acc.items()}


def notes(per_seed) -> dict[str, str]:
    """The weak-coupling median table (every tuned arm), and what each control did."""
    med = _medians(per_seed)
    out = {}
    weak = [p for p in med if _weak(p)]
    if weak:
        rows = []
        for p in weak:
            row = med[p]
            rows.append(f"{p}: " + ", ".join(f"{a} {row[a]:.4g}" for a in _TABLE_ARMS if a in row))
        out["weak_coupling_vs_gda"] = ("Median gradient calls over (seed, init) at weak coupling: "
                                       + "; ".join(rows))
        out["weak_coupling_tuned"] = "Median table in weak_coupling_vs_gda's note"
    lin = [r.value for s in records_of(per_seed, metric="linear", arm="talda_nocorr") for r in s]
    if lin:
        out["linear"] = (f"Without the correction (same steps, K = 0) {int(sum(lin))}/{len(lin)} runs "
                         "converged linearly within the budget")
    rates = _medians(per_seed, "rate")
    bits = [f"{p}: talda {rates[p]['talda']:.3g}, talda_blind {rates[p]['talda_blind']:.3g}"
            for p in rates if "talda_blind" in rates[p] and "talda" in rates[p]]
    if bits:
        out["coupling"] = "Median measured rate per gradient call: " + "; ".join(bits)
    return out


def figures(per_seed, outdir: Path) -> list[Path]:
    from .plots import draw

    return draw(per_seed, Path(outdir))


# kept for ``benchmarks/talda.py`` (tunes a method on the reproduction's grid)
_ = (_tune, step_grid, STEP_WINDOW, TOL)
