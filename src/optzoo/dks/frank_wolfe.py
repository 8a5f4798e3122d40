r"""Frank-Wolfe and saddle-escaping Frank-Wolfe (SE-FW) on the loaded DkS relaxation.

Paper: Q. Lu, N. D. Sidiropoulos, A. Konar, "On Densest k-Subgraph Mining and Diagonal
Loading: Optimization Landscape and Finite-Step Exact Convergence Analysis", ICML 2026,
arXiv 2410.07388. Fidelity: the relaxation, the FW step, L, the start point and the top-k
rounding follow the authors' AAAI predecessor code (read, never copied); the escape rule is
RECONSTRUCTED from the abstract.

Frank-Wolfe on :math:`\max_{x\in C_{n,k}} \tfrac12 x^\top(A+\lambda I)x`, from
:math:`x_0=(k/n)1`::

    g = M x;  s = 1_{top-k(g)} (ties: lower node id);  d = s - x;  gap = g^T d >= 0
    short step (predecessor code):  gamma = min(1, gap / (L ||d||^2))
    exact line search (INFERRED):   q = d^T M d;  gamma = 1 if q >= 0 else min(1, gap / -q)
    x <- x + gamma d

SE-FW (INFERRED rule, provably monotone): when ``gap <= eps_gap`` (default
:math:`10^{-10}(1+|f|)`) and x has fractional coordinates F, pick the pair i, j in F whose
best segment end :math:`x + t(e_i - e_j)` gains the most (gain :math:`t(g_i-g_j) +
t^2(\lambda-A_{ij})`, so pairs with :math:`A_{ij}=0` are favoured, as the spec asks), move
there and resume FW. f never decreases and one more coordinate becomes integral. Stop at an
integral point with ``gap <= eps_gap``: a certified FW-stationary vertex, a local maximiser
for :math:`\lambda>1`. If ``max_iter`` runs out first, round with top-k(x) and warn.

Escape trigger (INFERRED; ``trigger="gain"``, the default since issue 18): besides
``gap <= eps_gap``, a *stall test* escapes while ``gap > eps_gap`` when (a) the FW step does
not reach a vertex (gamma < 1) and (b) some pair among the 64 fractional coordinates farthest
from {0, 1} gains more than the gap at *both* ends of its feasible segment. The gap bounds
the first-order gain of every feasible move, so (b) says f has a local minimum along
e_i - e_j that rises above anything first order promises: the positive-curvature direction of
a strict saddle (at a saddle the fractional coordinates share one gradient value, so both
ends gain about t^2(lam - A_ij)). Near a vertex FW is heading to, one end of every pair is
first-order descent, so (b) fails; and both-end gains are at most (lam - A_ij)/4, so the test
is only evaluated when gap < lam/4 (a cost screen, not a tuning constant). It needs no
tolerance and is scale-free (gains and gap are both in units of f). Changed after a
counterexample: on the planted G(150, p) of the quick reproduction's seed 2 with k = 5,
short-step FW approaches a non-integral stationary point with gap ~ 1/t and the old trigger
alone never fires (cap reached with 9 edges); the stall test fires at t ~ 50 and SE-FW ends
integral with 10 edges. On 216 pilot runs (seeds >= 90000) it changed nothing on any run
whose old trajectory met no saddle. ``trigger="gap"`` restores the old rule alone.

Start (``init``): ``"uniform"`` (k/n)1, the predecessor's; ``"peel"`` greedy peeling's k-set
(a vertex: f never decreases from it, so the result has at least peeling's edges); a vector
of C_{n,k}, k node indices or a boolean mask.

Engineering (ours, mathematically identical): the gradient is updated by linearity,
:math:`g^+ = (1-\gamma)g + \gamma M 1_S`, where :math:`M1_S` needs only the rows of S
(O(vol(S) + n) per step instead of a full SpMV, one scipy row gather and a bincount) and is
reused while the FW vertex S repeats (it does for most steps near convergence); g is
recomputed exactly every ``refresh`` steps and whenever the iterate lands on a vertex.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from optzoo._core.result import Result, Status
from optzoo._core.validation import check_choice, check_device, check_int, check_real
from optzoo.dks._common import NotConvergedWarning, make_result, prepare
from optzoo.dks.relaxation import indicator_matvec, lipschitz, pair_endpoints, topk_indices

__all__ = ["frank_wolfe", "se_frank_wolfe", "fw_core", "NumpyOps", "random_start"]

INT_TOL = 1e-9  # coordinates this close to 0 or 1 count as integral
MAX_PAIR_CANDIDATES = 64  # all pairs among at most this many fractional coordinates


class NumpyOps:
    """The handful of vector operations the FW loop needs, on scipy CSR + numpy."""

    def __init__(self, adj, lam: float):
        self.adj, self.lam, self.n = adj, lam, adj.shape[0]
        self.unit = bool((adj.data == 1).all())
        self._last = (None, None)  # (S, M 1_S): FW's vertex often repeats near convergence

    def asarray(self, x):
        return np.array(x, dtype=np.float64)

    def grad(self, x):
        out = self.adj @ x
        out += self.lam * x
        return out

    def indicator_grad(self, nodes):
        """M 1_S (read-only: callers that modify it take a copy)."""
        last_s, last_r = self._last
        if last_s is not None and np.array_equal(last_s, nodes):
            return last_r
        r = indicator_matvec(self.adj, nodes, unit_weights=self.unit)
        r[nodes] += self.lam
        r.flags.writeable = False
        self._last = (nodes, r)
        return r

    def indicator(self, nodes):
        x = np.zeros(self.n)
        x[nodes] = 1.0
        return x

    def topk(self, v, k):
        return topk_indices(v, k)

    def sum_at(self, v, idx) -> float:
        return float(v[idx].sum())

    def dot(self, a, b) -> float:
        return float(a @ b)

    def frac_index(self, x) -> np.ndarray:
        return np.flatnonzero((x > INT_TOL) & (x < 1.0 - INT_TOL))

    def n_frac(self, x) -> int:
        return int(np.count_nonzero((x > INT_TOL) & (x < 1.0 - INT_TOL)))

    def is_binary(self, x) -> bool:
        return bool(((x == 0.0) | (x == 1.0)).all())

    def scale_add(self, v, gamma, idx_or_vec):
        """(1 - gamma) v + gamma w, in place; w an index set (vertex) or a vector."""
        v *= 1.0 - gamma
        if isinstance(idx_or_vec, np.ndarray) and idx_or_vec.dtype.kind == "f":
            v += gamma * idx_or_vec  # (one temporary; numpy has no fused axpy)
        else:
            v[idx_or_vec] += gamma
        return v

    def get(self, v, i) -> float:
        return float(v[i])

    def set(self, v, i, val) -> None:
        v[i] = val

    def add_row(self, g, node, coef) -> None:
        a, b = self.adj.indptr[node], self.adj.indptr[node + 1]
        g[self.adj.indices[a:b]] += coef * self.adj.data[a:b]
        g[node] += coef * self.lam

    def sub_adj(self, idx) -> np.ndarray:
        return self.adj[idx][:, idx].toarray()

    def sub_adj_rect(self, rows, cols) -> np.ndarray:
        return self.adj[rows][:, cols].toarray()

    def to_numpy(self, v) -> np.ndarray:
        return np.asarray(v)


def _pair_target(xi, xj, t):
    """End of the segment x + t(e_i - e_j) in direction sign(t), landing exactly on a bound."""
    if t > 0:
        return (1.0, xj - (1.0 - xi)) if 1.0 - xi <= xj else (xi + xj, 0.0)
    return (0.0, xj + xi) if xi <= 1.0 - xj else (xi - (1.0 - xj), 1.0)


def _best_pair(ops, x, g, frac: np.ndarray, lam: float, saddle_above: float | None = None):
    """Best escape move among fractional pairs: (gain, i, j, t, a_ij).

    With ``saddle_above`` = the FW gap, only pairs along which f gains more than it at *both*
    ends of the feasible segment count (a local minimum of f along the pair, up to the gap: the
    saddle signature); returns None when there is none.
    """
    cand = frac[:MAX_PAIR_CANDIDATES]
    xs = ops.to_numpy(x[cand]).astype(np.float64)
    gs = ops.to_numpy(g[cand]).astype(np.float64)
    a = ops.sub_adj(cand)
    ii, jj = np.triu_indices(cand.size, 1)
    (t_lo, gain_lo), (t_hi, gain_hi) = pair_endpoints(
        xs[ii], xs[jj], gs[ii], gs[jj], a[ii, jj], lam
    )
    use_hi = gain_hi >= gain_lo
    gain = np.where(use_hi, gain_hi, gain_lo)
    t = np.where(use_hi, t_hi, t_lo)
    if saddle_above is not None:
        ok = np.minimum(gain_lo, gain_hi) > saddle_above
        if not ok.any():
            return None
        gain = np.where(ok, gain, -np.inf)
    b = int(np.argmax(gain))  # first maximiser: lowest (i, j) in candidate order
    return float(gain[b]), int(cand[ii[b]]), int(cand[jj[b]]), float(t[b]), float(a[ii[b], jj[b]])


def _most_fractional(ops, x, frac: np.ndarray) -> np.ndarray:
    """The (at most MAX_PAIR_CANDIDATES) fractional coordinates farthest from {0, 1}, in index
    order: a saddle's pair sits away from the bounds, while FW leaves many tiny masses."""
    if frac.size <= MAX_PAIR_CANDIDATES:
        return frac
    xs = ops.to_numpy(x[frac]).astype(np.float64)
    return frac[topk_indices(np.minimum(xs, 1.0 - xs), MAX_PAIR_CANDIDATES)]  # O(|F|)


def _tie_swap(ops, x, g, lam: float):
    """At a vertex with a first-order tie, a swap i (in S) -> j (out) that still raises f.

    Along e_j - e_i the gain of the full swap is (g_j - g_i) + (lam - A_ij); at a tie the first
    term is ~0 and the second is > 0 whenever lam > A_ij (the spec's INFERRED tie caveat), so
    the vertex is stationary but not a local maximiser. Returns (i, j, A_ij, gain) or None.
    """
    xs = ops.to_numpy(x)
    gs = np.asarray(ops.to_numpy(g), dtype=np.float64)
    inside = xs > 0.5
    if inside.all() or not inside.any():
        return None
    g_in, g_out = gs[inside], gs[~inside]
    lo, hi = float(g_in.min()), float(g_out.max())
    tol = 1e-9 * (1.0 + abs(lo))
    if hi < lo - tol:
        return None  # strict local maximiser
    ii = np.flatnonzero(inside)[g_in <= hi + tol][:MAX_PAIR_CANDIDATES]
    jj = np.flatnonzero(~inside)[g_out >= lo - tol][:MAX_PAIR_CANDIDATES]
    a = ops.sub_adj_rect(ii, jj)
    gain = (gs[jj][None, :] - gs[ii][:, None]) + (lam - a)
    b = int(np.argmax(gain))
    bi, bj = np.unravel_index(b, gain.shape)
    if gain[bi, bj] <= tol:
        return None
    return int(ii[bi]), int(jj[bj]), float(a[bi, bj]), float(gain[bi, bj])


def _pair_escape(ops, x, g, pair, lam, f, t, gap, n_frac, trigger, escapes) -> float:
    """Apply the pair move (in place on x and g), record it, return the new f."""
    gain, i, j, tt, aij = pair
    xi, xj = _pair_target(ops.get(x, i), ops.get(x, j), tt)
    step_t = xi - ops.get(x, i)
    ops.set(x, i, xi)
    ops.set(x, j, xj)
    ops.add_row(g, i, step_t)
    ops.add_row(g, j, -step_t)
    f_new = 0.5 * ops.dot(x, g)
    escapes.append({"iter": t, "kind": "pair", "i": i, "j": j, "t": step_t, "a_ij": aij,
                    "curvature": 2.0 * (lam - aij), "gain": gain, "f_before": f,
                    "f_after": f_new, "n_frac_before": int(n_frac), "gap": float(gap),
                    "trigger": trigger})
    return f_new


def fw_core(ops, k: int, lam: float, L: float, *, x0=None, max_iter: int = 200,
            step: str = "short", gap_tol: float | None = None, escape: bool = True,
            trigger: str = "gain", refresh: int = 50, record: bool = True) -> dict[str, Any]:
    """The (SE-)FW loop on any backend ``ops`` (numpy here, torch in ``torch_backend``).

    One pass = one FW step or one escape; ``max_iter`` bounds the passes. Returns the final
    selection (node indices), why it stopped and the traces.
    """
    n = ops.n
    x = ops.asarray(x0) if x0 is not None else ops.asarray(np.full(n, k / n))
    g = ops.grad(x)
    f = 0.5 * ops.dot(x, g)
    gap_trace, f_trace, frac_trace, escapes = [], [], [], []
    n_fw = n_snap = since_refresh = 0
    reason, gap = "max_iter", float("inf")
    for t in range(max_iter + 1):
        s = ops.topk(g, k)
        gs = ops.sum_at(g, s)
        gx = ops.dot(g, x)
        gap = gs - gx
        eps = gap_tol if gap_tol is not None else 1e-10 * (1.0 + abs(f))
        if record:
            gap_trace.append(max(gap, 0.0))
            f_trace.append(f)
            frac_trace.append(ops.n_frac(x))
        if t == max_iter:
            if gap <= eps and ops.is_binary(x):
                reason = "integral"
            break
        if gap > eps:
            ms = ops.indicator_grad(s)
            dd = k - 2.0 * ops.sum_at(x, s) + ops.dot(x, x)  # ||s - x||^2
            if step == "short":
                gamma = min(1.0, gap / (L * dd)) if dd > 0 else 1.0
            else:
                q = ops.sum_at(ms, s) - 2.0 * gs + gx  # d^T M d
                gamma = 1.0 if q >= 0 else min(1.0, gap / -q)
            pair = None
            if escape and trigger == "gain" and gamma < 1.0 and gap < 0.25 * lam:
                # Stall test (see the module docstring): FW does not reach a vertex this step
                # and some fractional pair gains more than the gap at both ends of its segment.
                # Both-end gains are at most (lam - A_ij)/4 <= lam/4 (A >= 0), hence the screen.
                frac = ops.frac_index(x)
                if frac.size >= 2:
                    frac = np.asarray(ops.to_numpy(frac), dtype=np.int64)
                    pair = _best_pair(ops, x, g, _most_fractional(ops, x, frac), lam,
                                      saddle_above=gap)
            if pair is not None:
                f = _pair_escape(ops, x, g, pair, lam, f, t, gap, frac.size, "gain", escapes)
                escapes[-1]["gamma"] = gamma
                continue
            if gamma >= 1.0:
                x, g = ops.indicator(s), ops.asarray(ms)  # a copy: g is updated in place
                since_refresh = 0
            else:
                x = ops.scale_add(x, gamma, s)
                g = ops.scale_add(g, gamma, ms)
                since_refresh += 1
                if since_refresh >= refresh:
                    g, since_refresh = ops.grad(x), 0
            f = 0.5 * ops.dot(x, g)
            n_fw += 1
            continue
        frac = ops.frac_index(x)
        if frac.size == 0:
            if ops.is_binary(x):
                swap = _tie_swap(ops, x, g, lam) if escape else None
                if swap is None:
                    reason = "integral"
                    break
                i, j, aij, gain = swap
                ops.set(x, i, 0.0)
                ops.set(x, j, 1.0)
                ops.add_row(g, i, -1.0)
                ops.add_row(g, j, 1.0)
                f_new = 0.5 * ops.dot(x, g)
                escapes.append({"iter": t, "kind": "swap", "i": i, "j": j, "t": 1.0,
                                "a_ij": aij, "curvature": 2.0 * (lam - aij), "gain": gain,
                                "f_before": f, "f_after": f_new, "n_frac_before": 0,
                                "gap": gap, "trigger": "gap"})
                f = f_new
                continue
            # Within INT_TOL of a vertex but not on it: land on it and re-check the gap there.
            x = ops.indicator(ops.topk(x, k))
            g = ops.grad(x)
            f = 0.5 * ops.dot(x, g)
            n_snap += 1
            continue
        if not escape:
            reason = "fractional_stationary"
            break
        frac = np.asarray(ops.to_numpy(frac), dtype=np.int64)
        if frac.size == 1:  # 1^T x = k is an integer, so this one is float noise
            x = ops.indicator(ops.topk(x, k))
            g = ops.grad(x)
            f = 0.5 * ops.dot(x, g)
            n_snap += 1
            continue
        pair = _best_pair(ops, x, g, frac, lam)
        if pair[0] < -1e-12 * (1.0 + abs(f)):
            reason = "no_monotone_escape"  # only possible when lam < A_ij (relaxation not tight)
            break
        f = _pair_escape(ops, x, g, pair, lam, f, t, gap, frac.size, "gap", escapes)
    integral = reason == "integral"
    sel = ops.to_numpy(ops.topk(x, k)) if not integral else np.flatnonzero(ops.to_numpy(x) > 0.5)
    return {
        "nodes": np.asarray(sel, dtype=np.int64),
        "reason": reason,
        "integral": integral,
        "gap": max(float(gap), 0.0),
        "f": float(f),
        "nit": n_fw + len(escapes) + n_snap,
        "n_fw_steps": n_fw,
        "n_escapes": len(escapes),
        "n_snaps": n_snap,
        "n_fractional": int(ops.n_frac(x)),
        "gap_trace": gap_trace,
        "f_trace": f_trace,
        "frac_trace": frac_trace,
        "escapes": escapes,
        "x": ops.to_numpy(x),
    }


def random_start(n: int, k: int, seed: int) -> np.ndarray:
    """A random point of C_{n,k} near the uniform start (breaks symmetric saddles)."""
    rng = np.random.default_rng(seed)
    u = rng.random(n)
    u -= u.mean()
    base = k / n
    amp = 0.5 * min(base, 1.0 - base) / max(float(np.abs(u).max()), 1e-12)
    return base + amp * u


INITS = ("uniform", "peel")
TRIGGERS = ("gain", "gap")


def resolve_init(init, g, k: int, *, owner: str):
    """The start point of the FW loop: None (uniform), or a feasible vector of C_{n,k}.

    ``"uniform"``: (k/n)1, the predecessor's start. ``"peel"``: the indicator of greedy
    peeling's k-set. A float vector of length n in [0, 1] summing to k: itself. Anything else
    array-like: k distinct node *indices* (``extra["node_indices"]`` of a DkS result), or a
    boolean mask of length n with k entries set; its indicator.
    """
    from optzoo._core.validation import fail

    if isinstance(init, str):
        init = check_choice("init", init, INITS, owner=owner)
        if init == "uniform":
            return None
        from optzoo.dks.baselines import peeling_order

        x = np.ones(g.n)
        x[peeling_order(g.adj, stop_at=k)] = 0.0
        return x
    try:
        arr = np.asarray(init)
    except Exception:  # noqa: BLE001 - anything numpy cannot read is reported below
        arr = np.asarray([object()])
    rule = (f"'uniform', 'peel', a vector in [0, 1]^{g.n} summing to k = {k}, {k} distinct "
            f"node indices in [0, {g.n - 1}] or a boolean mask of length {g.n} with {k} set")
    if arr.ndim == 1 and arr.dtype == bool and arr.size == g.n:
        if int(arr.sum()) != k:
            fail("init", owner, rule, f"a boolean mask with {int(arr.sum())} entries set")
        return arr.astype(np.float64)
    if arr.ndim == 1 and arr.dtype.kind in "iu":
        idx = np.unique(arr)
        if idx.size != arr.size or arr.size != k or (arr.size and (idx[0] < 0 or idx[-1] >= g.n)):
            fail("init", owner, rule,
                 f"{arr.size} integer entries ({idx.size} distinct"
                 + (f", in [{idx[0]}, {idx[-1]}])" if arr.size else ")"))
        x = np.zeros(g.n)
        x[idx] = 1.0
        return x
    if arr.dtype.kind == "f":
        x = arr.astype(np.float64)
        if x.shape != (g.n,) or not np.isfinite(x).all() or (x < 0).any() or (x > 1).any() \
                or abs(x.sum() - k) > 1e-6 * k:
            fail("init", owner, rule, f"a float array of shape {x.shape}, "
                 f"sum {x.sum() if x.size and np.isfinite(x).all() else float('nan'):g}")
        return x
    fail("init", owner, rule, f"{type(init).__name__} of dtype {arr.dtype}")


def _solve(graph, k, *, owner, escape, lam, max_iter, step, gap_tol, init, trigger, seed,
           device, symmetrize, lipschitz_method="eigsh") -> Result:
    t0 = time.perf_counter()
    g, k = prepare(graph, k, owner=owner, symmetrize=symmetrize, lam=lam)
    max_iter = check_int("max_iter", max_iter, owner=owner, low=0)
    step = check_choice("step", step, ("short", "exact"), owner=owner)
    trigger = check_choice("trigger", trigger, TRIGGERS, owner=owner)
    seed = check_int("seed", seed, owner=owner, low=0)
    if device is not None and str(device) != "numpy":
        device = check_device("device", device, owner=owner)
    if gap_tol is not None:
        gap_tol = check_real("gap_tol", gap_tol, owner=owner, low=0.0)
    x0 = resolve_init(init, g, k, owner=owner) if k < g.n else None
    if k == g.n:
        return make_result(g, k, np.arange(g.n), method=owner, status=Status.OPTIMAL,
                           message="k = n: the whole graph", wall_time=time.perf_counter() - t0)
    L, how = lipschitz(g.adj, lam, seed=seed, method=lipschitz_method)
    if device is None or str(device) == "numpy":
        ops = NumpyOps(g.adj, lam)
    else:
        from optzoo.dks.torch_backend import TorchOps

        ops = TorchOps(g, lam, device=device)
    out = fw_core(ops, k, lam, L, x0=x0, max_iter=max_iter, step=step, gap_tol=gap_tol,
                  escape=escape, trigger=trigger)
    wall = time.perf_counter() - t0
    if out["reason"] == "integral":
        status = Status.CONVERGED
        msg = (f"integral stationary point after {out['nit']} iterations, "
               f"{out['n_escapes']} escapes")
    elif out["reason"] == "max_iter":
        status = Status.USER_LIMIT
        msg = (f"max_iter={max_iter} reached with {out['n_fractional']} fractional coordinates "
               f"and gap {out['gap']:.3g}; top-k rounding applied")
        warnings.warn(f"{owner}: {msg}", NotConvergedWarning, stacklevel=3)
    elif out["reason"] == "fractional_stationary":
        status = Status.CONVERGED
        msg = (f"fractional stationary point after {out['nit']} iterations "
               f"({out['n_fractional']} fractional coordinates); top-k rounding applied")
    else:
        status = Status.CONVERGED
        msg = ("fractional stationary point with no monotone pairwise escape (lam < max "
               "weight); top-k rounding applied")
    return make_result(
        g, k, out["nodes"], method=owner, status=status, message=msg, nit=out["nit"],
        nfev=out["n_fw_steps"] + 1, wall_time=wall, lam_max=L - lam if how == "eigsh" else None,
        lam=lam, L=L, L_method=how, step=step, seed=seed, final_gap=out["gap"],
        integral=out["integral"], stop_reason=out["reason"], n_escapes=out["n_escapes"],
        n_fw_steps=out["n_fw_steps"], n_fractional=out["n_fractional"],
        gap_trace=out["gap_trace"], f_trace=out["f_trace"], frac_trace=out["frac_trace"],
        escapes=out["escapes"], f_relaxed=out["f"], x_end=out["x"], device=str(device or "cpu"),
        init=init if isinstance(init, str) else "given", trigger=trigger,
    )


def se_frank_wolfe(graph, k, *, lam: float = 1.0, max_iter: int = 200, step: str = "short",
                   gap_tol: float | None = None, init="uniform", trigger: str = "gain",
                   seed: int = 0, device=None, symmetrize: bool = True) -> Result:
    """Saddle-escaping Frank-Wolfe (SE-FW) for densest k-subgraph.

    Returns a :class:`~optzoo._core.result.Result`: ``x`` the chosen node labels, ``fun``
    = |E(S)| recomputed from the graph, ``status`` CONVERGED at a certified integral
    stationary point (a local maximiser for lam > 1, not a global certificate) or USER_LIMIT
    after ``max_iter`` (with a warning). ``extra``: density, n_escapes, gap_trace, f_trace,
    frac_trace, escapes (each with its ``trigger`` and the ``gap`` it fired at), L,
    upper_bound, init, trigger, x_end (the relaxed point where the loop stopped) ...

    ``init``: ``"uniform"`` (default, the predecessor's (k/n)1), ``"peel"`` (greedy
    peeling's k-set), a vector in [0, 1]^n summing to k, k distinct node *indices*
    (``extra["node_indices"]`` of a result) or a boolean mask with k entries set.
    ``trigger``: ``"gain"`` (default: escape at gap <= gap_tol, or earlier by the stall test
    of the module docstring, an INFERRED choice changed after a counterexample) or
    ``"gap"`` (only at gap <= gap_tol, the rule before issue 18).

    >>> import networkx as nx
    >>> res = se_frank_wolfe(nx.complete_graph(5), 3)
    >>> res.fun, str(res.status), res.n_escapes > 0
    (3.0, 'converged', True)
    """
    return _solve(graph, k, owner="se_frank_wolfe", escape=True, lam=lam, max_iter=max_iter,
                  step=step, gap_tol=gap_tol, init=init, trigger=trigger, seed=seed,
                  device=device, symmetrize=symmetrize)


def frank_wolfe(graph, k, *, lam: float = 1.0, max_iter: int = 200, step: str = "short",
                gap_tol: float | None = None, init="uniform", seed: int = 0, device=None,
                symmetrize: bool = True) -> Result:
    """Plain Frank-Wolfe on the loaded relaxation (the predecessor's algorithm): stops at the
    first point with ``gap <= gap_tol`` (integral or not) and rounds with top-k(x)."""
    return _solve(graph, k, owner="frank_wolfe", escape=False, lam=lam, max_iter=max_iter,
                  step=step, gap_tol=gap_tol, init=init, trigger="gap", seed=seed,
                  device=device, symmetrize=symmetrize)
