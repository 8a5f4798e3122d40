"""Incremental coarsening updates: DIGC (growth) and ACNR (adaptive reassignment).

Gupta, Kumar, Singh, Yadav, Sun, Kumar, "Adapting to Evolving Graphs: A Scalable Framework
for Dynamic Coarsening", ICML 2026. Official code: abhigupta23/Dynamic-Graph-Coarsening
(``DGC`` = DIGC, ``DGC2`` = ACNR). Fidelity: official-code objectives; solver INFERRED.

Nodes are aligned survivors first (S, the first ``s`` rows of ``A``), new nodes after (N).
With ``C_S`` the survivors' previous loading rows, ``M2 = A[S, N]``, ``M4 = A[N, N]``:

DIGC (C_S frozen, learn ΔC >= 0, |N| x k)::

    min  omega ||ΔC^T M2^T C_S + C_S^T M2 ΔC + ΔC^T M4 ΔC||_F^2 + ||ΔC 1 - 1||^2
         + zeta ||ΔC X~_{t-1} - X_N||_F^2

ACNR (also refine survivor rows C+ = C_S + ΔC_R; A_surv = C_S^T A_{t-1}[S,S] C_S)::

    min  omega ||C_t^T A_t C_t - A_surv||_F^2 + ||ΔC_N 1 - 1||^2 + (beta/2) ||C+ - M2 ΔC_N||_F^2
         + zeta ||ΔC_N X~_{t-1} - X_N||_F^2 + (alpha/2) ||C+^T M1 C+ - A_surv||_F^2

Scalability (ours): only the survivors in ``refine`` (by default those touched by an edge
edit, a deletion or a new node) are free in ACNR; every other row is frozen, which is exact
for the beta term (a frozen row has no new neighbour) and makes every k x k residual a sum
of products ``U_i^T V_i`` of thin blocks. The residual is then never formed when k exceeds
the number of thin rows: ``||U^T V||_F^2 = <U U^T, V V^T>`` and ``W (U^T V) = (W U^T) V``, so
an iteration costs O(nnz(A[Y, :]) k + m^2 k + m d k) for m = |N| + |refine|, independent of p.

Solvers: ``"pgd"`` (default, INFERRED stand-in for the paper's convergent solver):
projected gradient with Armijo backtracking and exact row-simplex projection, warm-started
at the neighbours' membership; ``"sgd"``: the official code's SGD (lr 0.01, Nesterov 0.9,
weight decay 1e-4, gradient-norm clip 5, clamp >= 1e-10 and l1-normalise rows, <= 200
iterations, stop when the relative change < 1e-4 five times in a row after >= 20), started
from a seeded sparse random matrix (density 0.15).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from optzoo._core.result import Result, Status, divergence, warn_not_converged
from optzoo._core.rng import np_rng
from optzoo._core.validation import check_array, check_choice, check_int, check_real, fail

from .fgc import project_rows_simplex

__all__ = ["digc_update", "acnr_update"]


class _LowRank:
    """E = S + S^T + sum_i U_i^T V_i + K0 with S = U_0^T V_0 (k x k), held by thin factors.

    Dense (k x k) when k <= the number of thin rows, else the Gram form. ``K0`` is the
    constant part, given both dense (``K0``, for the dense path) and factored (``K0U``,
    ``K0V``, for the Gram path).
    """

    def __init__(self, sym: tuple, U: list, V: list, K0=None, K0U=(), K0V=()):
        U0, V0 = sym
        k = U0.shape[1]
        rows = 2 * U0.shape[0] + sum(u.shape[0] for u in U) + sum(u.shape[0] for u in K0U)
        if k <= rows:
            S = U0.T @ V0
            E = S + S.T
            for u, v in zip(U, V, strict=True):
                E += u.T @ v
            self.E = E if K0 is None else E + K0
            self.U = self.V = None
        else:
            self.E = None
            Us = [U0, V0, *U, *K0U]
            Vs = [V0, U0, *V, *K0V]
            self.U = np.vstack([u for u in Us if u.shape[0]])
            self.V = np.vstack([v for v in Vs if v.shape[0]])

    def sqnorm(self) -> float:
        if self.E is not None:
            return float(np.sum(self.E * self.E))
        return float(np.sum((self.U @ self.U.T) * (self.V @ self.V.T)))

    def left(self, W: np.ndarray) -> np.ndarray:
        """W @ E."""
        if self.E is not None:
            return W @ self.E
        return (W @ self.U.T) @ self.V


class _Blocks:
    """Everything the objective needs, cut from the aligned graph once per update."""

    def __init__(self, A, A_prev_S, C_S, Xc, X_new, refine, omega, zeta, alpha, beta):
        A = sp.csr_matrix(A)
        s = C_S.shape[0]
        p = A.shape[0]
        n = p - s
        self.s, self.n = s, n
        refine = np.zeros(0, dtype=np.int64) if refine is None else np.asarray(refine, np.int64)
        self.r = r = refine.size
        Y_idx = np.concatenate([refine, np.arange(s, p)])
        C_S = sp.csr_matrix(C_S)
        keep = np.ones(s)
        keep[refine] = 0.0
        C_F = sp.diags(keep) @ C_S  # frozen survivors only (refined rows zeroed)
        A_Y = A[Y_idx]
        self.P = np.asarray((A_Y[:, :s] @ C_F).todense())
        self.AYY = A_Y[:, Y_idx].tocsr()
        self.Xc, self.XN = Xc, np.asarray(X_new, dtype=np.float64)
        self.omega, self.zeta, self.alpha, self.beta = omega, zeta, alpha, beta
        self.k = C_S.shape[1]
        if r:
            CRo = np.asarray(C_S[refine].todense())
            Aold_R = sp.csr_matrix(A_prev_S)[refine]
            Po = np.asarray((Aold_R @ C_F).todense())
            BoC = np.asarray(Aold_R[:, refine] @ CRo)
            self.CRo = CRo
            # K0 = C_F^T A_FF C_F - A_surv = -(Po^T CRo + CRo^T Po + CRo^T B_o CRo)
            self.K0U = [-Po, -CRo, -CRo]
            self.K0V = [CRo, Po, BoC]
            T = Po.T @ CRo
            self.K0 = -(T + T.T + CRo.T @ BoC)
            self.ARN = self.AYY[:r, r:].tocsr()
            self.ARR = self.AYY[:r, :r].tocsr()
        else:
            self.CRo = np.zeros((0, self.k))
            self.K0U, self.K0V, self.K0 = [], [], None

    def value_grad(self, Y: np.ndarray, need_grad: bool = True):
        r = self.r
        CR, D = Y[:r], Y[r:]
        AY = self.AYY @ Y
        E1 = _LowRank((self.P, Y), [Y], [AY], self.K0, self.K0U, self.K0V)
        rs = D.sum(axis=1) - 1.0
        Rf = D @ self.Xc - self.XN
        f = self.omega * E1.sqnorm() + float(rs @ rs) + self.zeta * float(np.sum(Rf * Rf))
        G = None
        if need_grad:
            G = 4.0 * self.omega * E1.left(self.P + AY)
            G[r:] += 2.0 * rs[:, None] + 2.0 * self.zeta * (Rf @ self.Xc.T)
        if r and (self.alpha > 0 or self.beta > 0):
            Dm = CR - self.ARN @ D
            f += 0.5 * self.beta * float(np.sum(Dm * Dm))
            PR = self.P[:r]
            ACR = self.ARR @ CR
            E5 = _LowRank((PR, CR), [CR], [ACR], self.K0, self.K0U, self.K0V)
            f += 0.5 * self.alpha * E5.sqnorm()
            if need_grad:
                G[:r] += self.beta * Dm + 2.0 * self.alpha * E5.left(PR + ACR)
                G[r:] -= self.beta * (self.ARN.T @ Dm)
        return f, G

    def warm_start(self) -> np.ndarray:
        """Refined rows keep their old values; a new node starts at its neighbours' mean
        membership, an isolated one at the supernode with the nearest coarse feature row."""
        D = self.P[self.r:].copy()
        # Edges among new nodes are ignored here: their memberships are not known yet.
        mass = D.sum(axis=1)
        iso = mass <= 0
        D[~iso] /= mass[~iso, None]
        if iso.any():
            d2 = ((self.XN[iso, None, :] - self.Xc[None, :, :]) ** 2).sum(-1)
            D[iso] = 0.0
            D[np.flatnonzero(iso), d2.argmin(axis=1)] = 1.0
        return np.vstack([self.CRo, D])


def _solve(blocks: _Blocks, *, solver, max_iter, tol, seed, owner):
    t0 = time.perf_counter()
    m, k = blocks.r + blocks.n, blocks.k
    trace = []
    nfev = 0
    status = Status.USER_LIMIT
    if solver == "pgd":
        # Monotone accelerated projected gradient (FISTA with backtracking and restart,
        # Beck & Teboulle 2009): plain projected gradient needs thousands of steps here.
        Y = project_rows_simplex(blocks.warm_start())
        f, G = blocks.value_grad(Y)
        nfev += 1
        trace.append(f)
        step = 1.0 / max(1.0, float(np.sqrt(np.sum(G * G))))
        Y_prev, t_mom = Y, 1.0
        quiet = 0
        it = 0
        for it in range(1, max_iter + 1):  # noqa: B007 (it is reported after the loop)
            t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_mom * t_mom))
            Z = Y + ((t_mom - 1.0) / t_next) * (Y - Y_prev)
            fz, Gz = (f, G) if t_mom == 1.0 else blocks.value_grad(Z)
            nfev += t_mom != 1.0
            while True:
                Yn = project_rows_simplex(Z - step * Gz)
                fn, _ = blocks.value_grad(Yn, need_grad=False)
                nfev += 1
                Dl = Yn - Z
                if fn <= fz + float(np.sum(Gz * Dl)) + float(np.sum(Dl * Dl)) / (2 * step) \
                        or step < 1e-14:
                    break
                step *= 0.5
            if fn > f:  # momentum overshot: restart from Y (the next step is plain PG)
                t_mom, Y_prev = 1.0, Y
                quiet = 0
                continue
            rel = (f - fn) / max(abs(f), 1e-300)
            Y_prev, Y = Y, Yn
            f, G = blocks.value_grad(Y)
            nfev += 1
            trace.append(f)
            t_mom = t_next
            step *= 1.5
            quiet = quiet + 1 if rel < tol else 0
            if quiet >= 3 or not np.any(Y - Y_prev):
                status = Status.CONVERGED
                break
    else:
        lr, mom, wd, clip = 0.01, 0.9, 1e-4, 5.0
        rng = np_rng(seed, "sgd-init")
        Y0 = np.where(rng.random((blocks.n, k)) < 0.15, rng.standard_normal((blocks.n, k)), 0.0)
        Y = np.vstack([blocks.CRo, np.maximum(Y0, 1e-10)])
        Y /= Y.sum(axis=1, keepdims=True)
        buf = np.zeros_like(Y)
        f, G = blocks.value_grad(Y)
        nfev += 1
        trace.append(f)
        quiet = 0
        it = 0
        for it in range(1, max_iter + 1):
            gn = float(np.sqrt(np.sum(G * G)))
            if gn > clip:
                G = G * (clip / gn)
            d = G + wd * Y
            buf = mom * buf + d
            Y = np.maximum(Y - lr * (d + mom * buf), 1e-10)
            Y /= Y.sum(axis=1, keepdims=True)
            fn, G = blocks.value_grad(Y)
            nfev += 1
            quiet = quiet + 1 if abs(f - fn) / max(abs(f), 1e-300) < tol else 0
            f = fn
            trace.append(f)
            if it >= 20 and quiet >= 5:
                status = Status.CONVERGED
                break
    why = divergence(Y, name="C") or divergence(f, start=abs(trace[0]), name="the objective")
    if why is not None:
        status = Status.DIVERGED
    kkt = float(np.linalg.norm(Y - project_rows_simplex(Y - G))) if m else 0.0
    # NotConvergedWarning is a RuntimeWarning: filters on the old category keep working
    if status is Status.USER_LIMIT:
        warn_not_converged(owner, f"stopped at max_iter={max_iter} before the relative objective "
                           f"change fell below tol={tol}.", stacklevel=4)
    elif status is Status.DIVERGED:
        warn_not_converged(owner, f"diverged after {it} iterations: {why}", stacklevel=4)
    return Y, Result(None, float(f), status, f"{owner} ({solver}): {status} after {it} iterations",
                     nit=it, nfev=nfev, wall_time=time.perf_counter() - t0,
                     extra={"trace": trace, "kkt_residual": kkt})


def _check_common(A, C_S, Xc, X_new, owner):
    if not sp.issparse(A):
        fail("A", owner, "a scipy.sparse adjacency (survivors first, new nodes last)",
             type(A).__name__, exc=TypeError)
    s = C_S.shape[0]
    p = A.shape[0]
    if A.shape != (p, p) or s > p:
        fail("A", owner, f"a square matrix with at least {s} rows (the survivors)", A.shape)
    Xc = check_array("Xc", Xc, owner=owner, shape=(C_S.shape[1], None))  # one row per supernode
    X_new = check_array("X_new", X_new, owner=owner, shape=(p - s, Xc.shape[1]), nonempty=False)
    return Xc, X_new


def digc_update(A, C_S, Xc, X_new, *, omega: float = 1.0, zeta: float = 1.0,
                solver: str = "pgd", max_iter: int = 200, tol: float = 1e-4,
                seed: int = 1) -> Result:
    """DIGC growth update: learn the new nodes' rows ΔC with the survivors frozen.

    Parameters
    ----------
    A : aligned adjacency at time t (scipy.sparse, survivors first, the |N| new nodes last).
    C_S : survivors' previous loading rows (|S| x k, scipy.sparse or dense).
    Xc : previous coarse features X~_{t-1} (k x d).
    X_new : features of the new nodes (|N| x d).
    omega, zeta : weights of the structure-stability and feature-fit terms (code: TPE-tuned).

    Returns a :class:`Result`: ``x`` = ΔC (dense |N| x k, rows on the simplex), ``fun`` the
    objective, ``extra["trace"]`` the objective per iteration, ``extra["kkt_residual"]``.

    >>> import numpy as np, scipy.sparse as sp
    >>> A = sp.csr_matrix(np.array([[0, 1, 1.], [1, 0, 0], [1, 0, 0]]))
    >>> res = digc_update(A, np.eye(2), np.eye(2), np.array([[0.0, 1.0]]), omega=0.0)
    >>> res.x.round(2).tolist()  # features alone: the new node joins supernode 1
    [[0.0, 1.0]]
    >>> digc_update(A, np.eye(2), np.eye(2), np.array([[0.0, 1.0]])).x.round(2).tolist()
    [[0.25, 0.75]]
    """
    owner = "digc_update"
    C_S = sp.csr_matrix(C_S)
    Xc, X_new = _check_common(A, C_S, Xc, X_new, owner)
    check_real("omega", omega, owner=owner, low=0.0)
    check_real("zeta", zeta, owner=owner, low=0.0)
    check_choice("solver", solver, ("pgd", "sgd"), owner=owner)
    max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
    if A.shape[0] == C_S.shape[0]:
        return Result(np.zeros((0, C_S.shape[1])), 0.0, Status.CONVERGED, "no new nodes")
    blocks = _Blocks(A, None, C_S, Xc, X_new, None, omega, zeta, 0.0, 0.0)
    Y, res = _solve(blocks, solver=solver, max_iter=max_iter, tol=tol, seed=seed, owner=owner)
    res.x = Y
    return res


def acnr_update(A, A_prev_S, C_S, Xc, X_new, *, omega: float = 1.0, zeta: float = 1.0,
                alpha: float = 1.0, beta: float = 1.0, refine=None, solver: str = "pgd",
                max_iter: int = 200, tol: float = 1e-4, seed: int = 1) -> Result:
    """ACNR update: learn the new rows ΔC_N and refine the survivor rows in ``refine``.

    Parameters
    ----------
    A : aligned adjacency at time t (survivors first, new nodes last).
    A_prev_S : the survivors' block of the previous adjacency, A_{t-1}[S, S].
    C_S, Xc, X_new, omega, zeta : as in :func:`digc_update`.
    alpha, beta : weights of the survivor-structure and neighbour-consistency terms.
    refine : survivor indices (into ``0..|S|-1``) whose rows are free; default: survivors
        with an edge edit, an edge to a new node or a deleted neighbour (``A`` and
        ``A_prev_S`` differ in their row or they touch a new node).

    Returns a :class:`Result` with ``x`` = the stacked rows [C_R; ΔC_N] (dense, simplex rows)
    and ``extra["refine"]`` the refined survivor indices.
    """
    owner = "acnr_update"
    C_S = sp.csr_matrix(C_S)
    Xc, X_new = _check_common(A, C_S, Xc, X_new, owner)
    for name, v in (("omega", omega), ("zeta", zeta), ("alpha", alpha), ("beta", beta)):
        check_real(name, v, owner=owner, low=0.0)
    check_choice("solver", solver, ("pgd", "sgd"), owner=owner)
    max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
    s = C_S.shape[0]
    A = sp.csr_matrix(A)
    A_prev_S = sp.csr_matrix(A_prev_S)
    if A_prev_S.shape != (s, s):
        fail("A_prev_S", owner, f"a ({s}, {s}) matrix", A_prev_S.shape)
    if refine is None:
        refine = default_refine(A, A_prev_S)
    refine = np.unique(np.asarray(refine, dtype=np.int64))
    if refine.size and (refine.min() < 0 or refine.max() >= s):
        fail("refine", owner, f"survivor indices in [0, {s - 1}]", refine.tolist())
    if refine.size == 0 and A.shape[0] == s:
        return Result(np.zeros((0, C_S.shape[1])), 0.0, Status.CONVERGED, "nothing changed",
                      extra={"refine": refine})
    blocks = _Blocks(A, A_prev_S, C_S, Xc, X_new, refine, omega, zeta, alpha, beta)
    Y, res = _solve(blocks, solver=solver, max_iter=max_iter, tol=tol, seed=seed, owner=owner)
    res.x = Y
    res.extra["refine"] = refine
    return res


def default_refine(A, A_prev_S) -> np.ndarray:
    """Survivors whose adjacency row changed between t-1 and t or that touch a new node."""
    s = A_prev_S.shape[0]
    diff = (sp.csr_matrix(A)[:s, :s] - A_prev_S).tocsr()
    diff.eliminate_zeros()
    changed = np.diff(diff.indptr) > 0
    touches_new = np.diff(sp.csr_matrix(A)[:s, s:].tocsr().indptr) > 0
    return np.flatnonzero(changed | touches_new)
