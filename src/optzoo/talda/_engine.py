"""Batched numpy runs of TALDA-R and the baselines over (grid point x initialisation).

The reproduction runs hundreds of trajectories at once: one array row per (step-size pair,
initialisation), so a whole tuning grid costs one loop over iterations. The updates are the
same as :func:`talda_solve` / :func:`minimax_solve` (a test compares trajectories), with
analytic gradients from :mod:`optzoo.talda.problems`. Trajectories that reach ``tol`` or
blow up are frozen; gradient evaluations are counted per method (1 or 2 per iteration).
"""

from __future__ import annotations

import numpy as np

from optzoo.talda.constants import LyapunovTerms
from optzoo.talda.talda import talda_update

__all__ = ["run_batch", "log_slope", "CALLS_PER_ITER"]

CALLS_PER_ITER = {"talda": 1, "gda": 1, "ttgda": 1, "ogda": 1, "agda": 2, "eg": 2}
_BLOWUP = 1e12


def run_batch(prob, method: str, a, b, x, y, *, max_iter: int, tol: float = 1e-8,
              terms: LyapunovTerms | None = None, groups: int | None = None,
              lyapunov: bool = False) -> dict:
    """Run ``method`` on rows of ``x, y`` (shape (B, n), (B, m)).

    ``a, b``: per-row step parameters, shape (B,): the x/y multipliers for ``talda`` (needs
    ``terms``), else (lr_x, lr_y). ``groups``: rows form ``groups`` consecutive blocks (one per
    grid point); the run stops at the first iteration where some block has fully converged,
    since no other block can then have a smaller worst-case count (exact early stop for
    tuning). ``lyapunov``: also trace W, S, exact P, eta and rho (talda only).
    Returns ``calls`` (inf if never converged), ``diverged``, ``norms`` (T, B) and traces.
    """
    a = np.asarray(a, dtype=float)[:, None]
    b = np.asarray(b, dtype=float)[:, None]
    x, y = np.array(x, dtype=float), np.array(y, dtype=float)
    B = x.shape[0]
    per = CALLS_PER_ITER[method]
    calls = np.full(B, np.inf)
    div = np.zeros(B, dtype=bool)
    norms, tr = [], {k: [] for k in ("W", "S", "P", "eta", "rho")}
    n_calls = 1
    with np.errstate(all="ignore"):
        gx, gy = prob.grad(x, y)
        prev = (gx, gy)
        S = C = None  # C: the certified decrement of the previous step
        for k in range(max_iter + 1):
            nx2, ny2 = (gx * gx).sum(-1), (gy * gy).sum(-1)
            gn = np.sqrt(nx2 + ny2)
            norms.append(gn)
            live = ~np.isfinite(calls) & ~div
            div |= live & (~np.isfinite(gn) | (gn > _BLOWUP))
            hit = live & (gn <= tol)
            calls[hit] = n_calls
            if method == "talda" and terms is not None:
                W = nx2 / terms.mu_x + terms.w_y * ny2
                S = W if S is None else np.minimum(W, S + C)
                if lyapunov:
                    tr["W"].append(W)
                    tr["S"].append(S)
                    tr["P"].append(prob.lyapunov(x, y, terms.lam))
            done = np.isfinite(calls) | div
            if done.all() or k == max_iter:
                break
            if groups is not None and (np.isfinite(calls).reshape(groups, -1).all(1)).any():
                break
            act = (~done)[:, None].astype(float)
            if method == "talda":
                dx, dy, eta, C = talda_update(gx, gy, M=terms.M, K=terms.K, L_y=terms.L_y, lam=terms.lam)
                if lyapunov:
                    tr["eta"].append(eta)
                    tr["rho"].append(np.sqrt(ny2) / np.sqrt(nx2))
                x = x + act * a * dx
                y = y + act * b * dy
            elif method in ("gda", "ttgda"):
                x, y = x - act * a * gx, y + act * b * gy
            elif method == "ogda":
                x, y = x - act * a * (2 * gx - prev[0]), y + act * b * (2 * gy - prev[1])
                prev = (gx, gy)
            elif method == "agda":
                x = x - act * a * gx
                y = y + act * b * prob.grad(x, y)[1]
            elif method == "eg":
                hx, hy = prob.grad(x - a * gx, y + b * gy)
                x, y = x - act * a * hx, y + act * b * hy
            else:
                raise ValueError(f"unknown method {method!r}")
            gx, gy = prob.grad(x, y)
            n_calls += per
    out = {"calls": calls, "diverged": div, "norms": np.array(norms), "x": x, "y": y,
           "iters": len(norms) - 1}
    if lyapunov:
        out.update({k: np.array(v) for k, v in tr.items()})
    return out


def log_slope(norms: np.ndarray, calls: np.ndarray, per: int) -> np.ndarray:
    """Per-trajectory slope of log|grad f| per iteration over the last half of each run
    (up to convergence). ``norms``: (T, B)."""
    T, B = norms.shape
    fin = np.isfinite(calls)
    ends = np.full(B, T - 1)
    ends[fin] = ((calls[fin] - 1) // per).astype(int)
    out = np.full(B, np.nan)
    with np.errstate(all="ignore"):
        logs = np.log(norms)
    for j in range(B):  # B <= a few dozen: one short polyfit each
        e = ends[j]
        s = e // 2
        if e - s >= 2 and np.isfinite(logs[s:e + 1, j]).all():
            out[j] = np.polyfit(np.arange(s, e + 1), logs[s:e + 1, j], 1)[0]
    return out
