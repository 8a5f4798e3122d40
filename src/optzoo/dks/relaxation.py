r"""The diagonally loaded relaxation of densest k-subgraph (Lu, Sidiropoulos, Konar;
arXiv 2410.07388, ICML 2026) and the facts about it that the tests and the reproduction check.

Problem: :math:`\max_{x\in\{0,1\}^n,\ 1^\top x=k} \tfrac12 x^\top A x = |E(S)|`.
Relaxation: :math:`\max_{x\in C_{n,k}} f_\lambda(x) = \tfrac12 x^\top (A+\lambda I) x` over
:math:`C_{n,k}=\{x\in[0,1]^n: 1^\top x = k\}`. For binary feasible ``x`` the loading only adds
:math:`\lambda k/2`, so the combinatorial argmax is unchanged.

* gradient :math:`g = Mx`, :math:`M = A+\lambda I`; Lipschitz constant
  :math:`L = \lambda_{\max}(A)+\lambda` (Perron-Frobenius: :math:`|\lambda_{\min}(A)|\le\lambda_{\max}(A)`).
* linear maximisation oracle over :math:`C_{n,k}`: the indicator of the k largest gradient
  entries (ties broken by the lower node id, so runs are reproducible).
* pairwise move along :math:`u=e_i-e_j`:
  :math:`\varphi(t) = f(x) + t(g_i-g_j) + t^2(\lambda - A_{ij})`, convex when
  :math:`\lambda\ge A_{ij}`, so an endpoint of the feasible segment is at least as good.
  Repeating it gives a binary point no worse than ``x``: the (reconstructed) tightness proof
  for :math:`\lambda\ge 1` (:math:`\lambda\ge\max w` on weighted graphs: INFERRED).
* integral ``x = 1_S`` is FW-stationary iff
  :math:`\min_{i\in S}(\deg_S(i)+\lambda) \ge \max_{j\notin S}\deg_S(j)`; with strict inequality
  it is a strict local maximiser (every feasible swap :math:`e_j - e_i` decreases f to first
  order). On a tie the second-order term :math:`\lambda - A_{ij}` decides (INFERRED caveat).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = [
    "objective",
    "gradient",
    "lipschitz",
    "topk_indices",
    "fw_gap",
    "pair_endpoints",
    "pairwise_round",
    "local_max_test",
    "indicator_matvec",
]


def objective(adj, x: np.ndarray, lam: float) -> float:
    """:math:`f_\\lambda(x) = \\tfrac12 x^\\top (A+\\lambda I) x`."""
    return 0.5 * float(x @ (adj @ x) + lam * (x @ x))


def gradient(adj, x: np.ndarray, lam: float) -> np.ndarray:
    """:math:`(A+\\lambda I)x`: one sparse matrix-vector product."""
    return adj @ x + lam * x


def indicator_matvec(adj, nodes: np.ndarray, *, unit_weights: bool | None = None) -> np.ndarray:
    """:math:`A 1_S` from the rows of S only: O(vol(S) + n) instead of a full SpMV.

    ``unit_weights=True`` (all stored weights 1, checked by the caller once) counts column
    indices without reading the weights; ``None`` checks the rows of S.
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    rows = adj[nodes]  # scipy's C++ row gather; A is symmetric, so row sums = column sums
    if unit_weights is None:
        unit_weights = bool((rows.data == 1).all())
    if unit_weights:
        return np.bincount(rows.indices, minlength=adj.shape[0]).astype(np.float64)
    return np.bincount(rows.indices, weights=rows.data, minlength=adj.shape[0])


def lipschitz(adj, lam: float, *, seed: int = 0, method: str = "eigsh") -> tuple[float, str]:
    """:math:`L = \\lambda_{\\max}(A) + \\lambda` and how it was obtained.

    ``eigsh`` (ARPACK, top algebraic eigenvalue, start vector ``v0`` drawn from ``seed`` so
    runs are reproducible) as in the predecessor's code; on failure, or with
    ``method="gershgorin"``, the cheap upper bound max weighted degree + lambda.
    """
    n = adj.shape[0]
    gersh = float(np.asarray(adj.sum(axis=1)).max()) + lam
    if method == "gershgorin" or n < 3:
        if n < 3:  # ARPACK needs n > k + 1; a 2-node graph has lambda_max = its edge weight
            return float(np.abs(np.linalg.eigvalsh(adj.toarray())).max()) + lam, "dense"
        return gersh, "gershgorin"
    from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, eigsh

    v0 = np.random.default_rng(seed).random(n) + 0.5  # positive, like the Perron vector
    try:
        val, vec = eigsh(adj, k=1, which="LA", v0=v0, tol=1e-6, maxiter=max(1000, 10 * n))
        lam_max = float(val[0])
    except (ArpackNoConvergence, ArpackError):
        warnings.warn("eigsh did not converge; using the Gershgorin bound for L (smaller "
                      "Frank-Wolfe steps, same guarantees).", RuntimeWarning, stacklevel=2)
        return gersh, "gershgorin"
    if not np.isfinite(lam_max) or lam_max <= 0:
        return gersh, "gershgorin"
    # A Ritz value is below lambda_max; adding the residual norm (an eigenvalue lies within it
    # of the Ritz value) keeps L an upper bound without asking ARPACK for full precision.
    v = vec[:, 0] / np.linalg.norm(vec[:, 0])
    resid = float(np.linalg.norm(adj @ v - lam_max * v))
    return min(lam_max + resid + lam, gersh), "eigsh"


def topk_indices(v: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest entries, ties broken by the lower index; sorted ascending.

    O(n) (one ``np.partition``), deterministic unlike ``argpartition`` on ties.
    """
    n = v.shape[0]
    if k >= n:
        return np.arange(n)
    thr = -np.partition(-v, k - 1)[k - 1]  # the k-th largest value (selecting near the front
    # of -v is about twice as fast as near the back of v)
    above = np.flatnonzero(v > thr)
    need = k - above.size
    tied = np.flatnonzero(v == thr)[:need]
    return np.sort(np.concatenate([above, tied]))


def fw_gap(g: np.ndarray, x: np.ndarray, k: int) -> tuple[float, np.ndarray]:
    """Frank-Wolfe gap :math:`\\max_{s\\in C} g^\\top (s - x) \\ge 0` and the maximising vertex."""
    s = topk_indices(g, k)
    return float(g[s].sum() - g @ x), s


def pair_endpoints(xi: float, xj: float, gi: float, gj: float, aij: float, lam: float):
    """The two ends of the feasible segment of :math:`x + t(e_i - e_j)` and their gains.

    Returns ``((t_lo, gain_lo), (t_hi, gain_hi))`` with
    :math:`\\text{gain}(t) = t(g_i - g_j) + t^2(\\lambda - A_{ij})`.
    """
    t_lo = -np.minimum(xi, 1.0 - xj)  # works on scalars and arrays
    t_hi = np.minimum(1.0 - xi, xj)
    c = lam - aij
    return (t_lo, t_lo * (gi - gj) + t_lo * t_lo * c), (t_hi, t_hi * (gi - gj) + t_hi * t_hi * c)


def _apply_pair(x, i, j, t):
    """Move ``x`` by ``t(e_i - e_j)`` landing exactly on the bound that stops the segment."""
    if t > 0:
        if 1.0 - x[i] <= x[j]:
            t = 1.0 - x[i]
            x[j] -= t
            x[i] = 1.0
        else:
            t = x[j]
            x[i] += t
            x[j] = 0.0
    elif t < 0:
        if x[i] <= 1.0 - x[j]:
            t = -x[i]
            x[j] += x[i]
            x[i] = 0.0
        else:
            t = -(1.0 - x[j])
            x[i] -= 1.0 - x[j]
            x[j] = 1.0
    return t


def pairwise_round(adj, x: np.ndarray, lam: float, *, tol: float = 1e-9) -> np.ndarray:
    """Round a feasible fractional ``x`` to a binary ``y`` by pairwise endpoint moves.

    Each move takes two fractional coordinates i, j and goes to the better end of the segment
    :math:`x + t(e_i - e_j)`; one more coordinate becomes 0 or 1. For :math:`\\lambda \\ge
    A_{ij}` the move never lowers f (the tightness construction), so ``f(y) >= f(x)`` up to
    rounding error. Coordinates within ``tol`` of 0 or 1 count as integral.
    """
    x = np.array(x, dtype=np.float64)
    g = gradient(adj, x, lam)
    while True:
        frac = np.flatnonzero((x > tol) & (x < 1.0 - tol))
        if frac.size < 2:
            break
        i, j = int(frac[0]), int(frac[1])
        aij = float(adj[i, j])
        (t_lo, gl), (t_hi, gh) = pair_endpoints(x[i], x[j], g[i], g[j], aij, lam)
        t = t_hi if gh >= gl else t_lo
        t = _apply_pair(x, i, j, t)
        _pair_gradient_update(adj, g, i, j, t, lam)
    # 1^T x = k up to float error: whatever is left within tol of an integer is snapped.
    return np.round(x)


def _pair_gradient_update(adj, g, i, j, t, lam):
    """g += t * M (e_i - e_j) using only rows i and j of A."""
    for node, sign in ((i, t), (j, -t)):
        a, b = adj.indptr[node], adj.indptr[node + 1]
        g[adj.indices[a:b]] += sign * adj.data[a:b]
        g[node] += sign * lam


def local_max_test(adj, nodes: np.ndarray, lam: float) -> dict[str, Any]:
    """KKT / local-maximum test at the vertex :math:`1_S`.

    Returns ``stationary`` (FW gap 0: min over S of :math:`g_i` >= max outside of
    :math:`g_j`), ``strict`` (strict inequality: every feasible swap decreases f to first
    order, hence a strict local maximiser), ``margin`` (min_S g - max_notS g) and
    ``tie_second_order`` (on a tie: whether every tied swap has :math:`\\lambda - A_{ij} < 0`,
    i.e. still decreases f; INFERRED caveat of the spec).
    """
    n = adj.shape[0]
    nodes = np.asarray(nodes, dtype=np.int64)
    inside = np.zeros(n, dtype=bool)
    inside[nodes] = True
    deg_s = indicator_matvec(adj, nodes)
    if inside.all():
        return {"stationary": True, "strict": True, "margin": float("inf"),
                "tie_second_order": True}
    g_in = deg_s[inside] + lam
    g_out = deg_s[~inside]
    margin = float(g_in.min() - g_out.max())
    stationary = margin >= -1e-9
    strict = margin > 1e-9
    tie_ok = True
    if stationary and not strict:
        ii = np.flatnonzero(inside)[np.abs(g_in - g_in.min()) <= 1e-9]
        jj = np.flatnonzero(~inside)[np.abs(g_out - g_out.max()) <= 1e-9]
        sub = adj[ii][:, jj].toarray()
        tie_ok = bool((lam - sub < 0).all())
    return {"stationary": bool(stationary), "strict": bool(strict), "margin": margin,
            "tie_second_order": tie_ok}
