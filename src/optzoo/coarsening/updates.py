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

Scalability (ours, INFERRED): only the survivors in ``refine`` are free in ACNR (the official
code refines every survivor densely). By default a survivor is refined when at least
``refine_threshold`` (0.1) of its neighbourhood weight changed (edge edits, edges to new or
deleted nodes; :func:`refine_scores`), at most ``max_refine`` of them: on a dense graph a few
percent of rewiring touches nearly every survivor, and a survivor that lost one of 44 edges
barely moves. ``refine_threshold=0`` is the earlier rule (every touched survivor). Frozen rows
keep their coupling terms exactly (edits between two frozen survivors, the beta term of a
frozen survivor with a new neighbour), and every k x k residual is a sum of products
``U_i^T V_i`` of thin blocks; the free block enters as a sparse factor when it is sparse
enough (simplex rows are sparse after projection; ``_SPARSE_BELOW``). The residual is then
never formed when k exceeds the number of thin rows: ``||U^T V||_F^2 = <U U^T, V V^T>``
and ``W (U^T V) = (W U^T) V``, so an iteration costs O(nnz(A[Y, :]) k + m^2 k + m d k)
for m = |N| + |refine|, independent of p.

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

__all__ = ["digc_update", "acnr_update", "default_refine", "refine_scores"]

#: The free block enters the k x k products as a sparse factor only below this density
#: (nonzeros / entries). Measured on one ACNR step (2,140-node facebook, 910 free rows, and
#: the 10^5-node benchmark, 36,887 free rows; k = 200, one core): above about 5 % a dense
#: BLAS product is as fast as scipy's sparse one, and 1.6x faster at the warm start (36 %).
_SPARSE_BELOW = 0.05


def _tmul(u, v) -> np.ndarray:
    """u^T v as a dense array; either factor may be scipy.sparse (a sparse factor costs
    O(nnz * k) instead of O(rows * k^2))."""
    if sp.issparse(u):
        out = u.T @ v
    elif sp.issparse(v):
        out = (v.T @ u).T
    else:
        return u.T @ v
    return out.toarray() if sp.issparse(out) else np.asarray(out)


def _dense(a) -> np.ndarray:
    return a.toarray() if sp.issparse(a) else np.asarray(a)


class _LowRank:
    """E = S + S^T + sum_i U_i^T V_i + K0 with S = U_0^T V_0 (k x k), held by thin factors.

    Dense (k x k) when k <= the number of thin rows, else the Gram form. ``K0`` is the
    constant part, given both dense (``K0``, for the dense path) and factored (``K0U``,
    ``K0V``, for the Gram path). Factors may be scipy.sparse (the simplex rows of the free
    block are sparse after projection): the dense path then multiplies in O(nnz * k).
    """

    def __init__(self, sym: tuple, U: list, V: list, K0=None, K0U=(), K0V=()):
        U0, V0 = sym
        self.k = k = U0.shape[1]
        self._U = [U0, V0, *U, *K0U]
        self._V = [V0, U0, *V, *K0V]
        self._K0 = K0
        self.E = self.U = self.V = None
        self._build(k <= sum(u.shape[0] for u in self._U), (U0, V0), U, V, K0)

    def _build(self, dense, sym, U, V, base):
        if dense:
            S = _tmul(*sym)
            E = S + S.T
            for u, v in zip(U, V, strict=True):
                E += _tmul(u, v)
            self.E = E if base is None else E + base
        else:
            self.U = np.vstack([_dense(u) for u in self._U if u.shape[0]])
            self.V = np.vstack([_dense(v) for v in self._V if v.shape[0]])

    def extend(self, sym: tuple, U: list, V: list) -> _LowRank:
        """A new residual ``self + S + S^T + sum_i U_i^T V_i`` (S = sym[0]^T sym[1])."""
        U0, V0 = sym
        out = object.__new__(_LowRank)
        out.k, out._K0 = self.k, self._K0
        out._U = [*self._U, U0, V0, *U]
        out._V = [*self._V, V0, U0, *V]
        out.E = out.U = out.V = None
        dense = self.k <= sum(u.shape[0] for u in out._U)
        if dense and self.E is not None:
            out._build(True, sym, U, V, self.E)
        elif dense:  # self was in Gram form: sum every factor pair (K0U/K0V stand for K0)
            E = np.zeros((self.k, self.k))
            for u, v in zip(out._U, out._V, strict=True):
                E += _tmul(u, v)
            out.E = E
        else:
            out._build(False, sym, U, V, None)
        return out

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
        # The objective is evaluated up to a constant: every term that depends on frozen rows
        # only is dropped. Two terms couple frozen rows to the free ones and are kept exactly,
        # whatever the refine set: edge edits between two frozen survivors (a correction of
        # the constant residual K0) and the beta term of frozen survivors with new neighbours.
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
        self.K0U, self.K0V, self.K0 = [], [], None
        if r:
            CRo = np.asarray(C_S[refine].todense())
            Aold_R = sp.csr_matrix(A_prev_S)[refine]
            Po = np.asarray((Aold_R @ C_F).todense())
            BoC = np.asarray(Aold_R[:, refine] @ CRo)
            self.CRo = CRo
            # K0 = C_F^T A_FF C_F - A_surv = -(Po^T CRo + CRo^T Po + CRo^T B_o CRo) when the
            # frozen block A_FF did not change (corrected below when it did)
            self.K0U = [-Po, -CRo, -CRo]
            self.K0V = [CRo, Po, BoC]
            T = Po.T @ CRo
            self.K0 = -(T + T.T + CRo.T @ BoC)
            self.ARN = self.AYY[:r, r:].tocsr()
            self.ARR = self.AYY[:r, :r].tocsr()
        else:
            self.CRo = np.zeros((0, self.k))
        frozen = keep > 0
        if A_prev_S is not None:
            # edits between two frozen survivors: K0 += C_F^T (A_t - A_{t-1})[F, F] C_F
            dFF = sp.diags(keep) @ (A[:s, :s] - sp.csr_matrix(A_prev_S)) @ sp.diags(keep)
            dFF = sp.csr_matrix(dFF)
            dFF.eliminate_zeros()
            if dFF.nnz:
                rows = np.flatnonzero(np.diff(dFF.indptr))
                V = np.asarray((dFF[rows] @ C_F).todense())
                U = np.asarray(C_F[rows].todense())
                self.K0U.append(U)
                self.K0V.append(V)
                corr = U.T @ V
                self.K0 = corr if self.K0 is None else self.K0 + corr
        self.BtF = None
        if A_prev_S is not None and self.beta > 0 and n:
            # beta term of frozen rows with new neighbours, expanded (constant dropped):
            # ||C_i - A[i, N] D||^2 -> -2 <M^T C_F, D> + ||M D||^2 with M = A[F, N]
            M = sp.csr_matrix(sp.diags(frozen.astype(np.float64)) @ A[:s, s:])
            M.eliminate_zeros()
            if M.nnz:
                self.BtF = np.asarray((M.T @ C_F).todense())
                self.MtMF = (M.T @ M).tocsr()

    def value_grad(self, Y: np.ndarray, need_grad: bool = True):
        r = self.r
        CR, D = Y[:r], Y[r:]
        # The free rows are simplex points, sparse after projection: below _SPARSE_BELOW the
        # k x k residuals are built from sparse factors (O(nnz * k) rather than O(m * k^2)).
        Ys = sp.csr_matrix(Y) if np.count_nonzero(Y) < _SPARSE_BELOW * Y.size else Y
        CRs, Ds = Ys[:r], Ys[r:]
        AY = self.AYY @ Y  # sparse x dense (a sparse x sparse product fills in slowly)
        E5 = None
        if r:
            PR = self.P[:r]
            ACR = self.ARR @ CR
            # survivor residual C+^T M1 C+ - A_surv, then the full one extends it with the
            # new rows: E1 = E5 + PD^T D + D^T PD + C_R^T (A_RN D) + D^T (A_N,Y Y)
            E5 = _LowRank((PR, CRs), [CRs], [ACR], self.K0, self.K0U, self.K0V)
            E1 = E5.extend((self.P[r:], Ds), [CRs, Ds], [self.ARN @ D, AY[r:]])
        else:
            E1 = _LowRank((self.P, Ys), [Ys], [AY], self.K0, self.K0U, self.K0V)
        rs = D.sum(axis=1) - 1.0
        Rf = D @ self.Xc - self.XN
        f = self.omega * E1.sqnorm() + float(rs @ rs) + self.zeta * float(np.sum(Rf * Rf))
        G = None
        if need_grad:
            G = 4.0 * self.omega * E1.left(self.P + AY)
            G[r:] += 2.0 * rs[:, None] + 2.0 * self.zeta * (Rf @ self.Xc.T)
        if self.BtF is not None:
            MD = self.MtMF @ D
            f += 0.5 * self.beta * float(np.sum(D * MD) - 2.0 * np.sum(self.BtF * D))
            if need_grad:
                G[r:] += self.beta * (MD - self.BtF)
        if r:
            Dm = CR - self.ARN @ D
            f += 0.5 * self.beta * float(np.sum(Dm * Dm))
            if self.alpha > 0:
                f += 0.5 * self.alpha * E5.sqnorm()
            if need_grad:
                G[:r] += self.beta * Dm
                G[r:] -= self.beta * (self.ARN.T @ Dm)
                if self.alpha > 0:
                    G[:r] += 2.0 * self.alpha * E5.left(PR + ACR)
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
            if t_mom == 1.0:  # plain step from Y: its gradient is needed (computed lazily)
                if G is None:
                    f, G = blocks.value_grad(Y)
                    nfev += 1
                fz, Gz = f, G
            else:
                fz, Gz = blocks.value_grad(Z)
                nfev += 1
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
            f, G = fn, None  # the gradient at Y is needed only after a restart
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
    if G is None:
        f, G = blocks.value_grad(Y)
        nfev += 1
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
                alpha: float = 1.0, beta: float = 1.0, refine=None,
                refine_threshold: float = 0.1, max_refine: int | None = None,
                deleted_weight=None, solver: str = "pgd", max_iter: int = 200,
                tol: float = 1e-4, seed: int = 1) -> Result:
    """ACNR update: learn the new rows ΔC_N and refine the survivor rows in ``refine``.

    Parameters
    ----------
    A : aligned adjacency at time t (survivors first, new nodes last).
    A_prev_S : the survivors' block of the previous adjacency, A_{t-1}[S, S].
    C_S, Xc, X_new, omega, zeta : as in :func:`digc_update`.
    alpha, beta : weights of the survivor-structure and neighbour-consistency terms.
    refine : survivor indices (into ``0..|S|-1``) whose rows are free. Default (None): the
        rule of :func:`default_refine` with ``refine_threshold`` and ``max_refine``.
    refine_threshold : refine a survivor when the fraction of its neighbourhood weight that
        changed (edge edits, edges to new nodes, edges to deleted nodes; see
        :func:`refine_scores`) is at least this, in [0, 2]; 0 refines every touched
        survivor (the rule before 0.1 became the default). INFERRED, see the docs.
    max_refine : at most this many survivors are refined (highest score first), None: no cap.
    deleted_weight : per survivor, the edge weight it lost to deleted nodes (length |S|);
        counts in the score. :class:`DynamicCoarsener` passes it.

    Every survivor not refined keeps its row; the terms that couple it to the free rows
    (edits between two frozen survivors, the beta term of a frozen survivor with a new
    neighbour) are kept exactly, so only the set of free rows changes with the rule.

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
    refine_threshold = check_real("refine_threshold", refine_threshold, owner=owner,
                                  low=0.0, high=2.0)
    if max_refine is not None:
        max_refine = check_int("max_refine", max_refine, owner=owner, low=0)
    s = C_S.shape[0]
    A = sp.csr_matrix(A)
    A_prev_S = sp.csr_matrix(A_prev_S)
    if A_prev_S.shape != (s, s):
        fail("A_prev_S", owner, f"a ({s}, {s}) matrix", A_prev_S.shape)
    if deleted_weight is not None:
        deleted_weight = check_array("deleted_weight", deleted_weight, owner=owner, ndim=1,
                                     shape=(s,), nonempty=False)
        if (deleted_weight < 0).any():
            fail("deleted_weight", owner, "non-negative weights",
                 float(deleted_weight[deleted_weight < 0][0]))
    if refine is None:
        refine = default_refine(A, A_prev_S, deleted_weight=deleted_weight,
                                threshold=refine_threshold, max_refine=max_refine)
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


def refine_scores(A, A_prev_S, deleted_weight=None) -> np.ndarray:
    """Per survivor, the fraction of its neighbourhood weight that changed between t-1 and t.

    ``changed_i = sum_j |A_t[i, j] - A_{t-1}[i, j]|`` over survivors ``j`` + the weight of its
    edges to new nodes + ``deleted_weight[i]`` (edges to deleted nodes), divided by
    ``max(deg_{t-1}(i), deg_t(i))`` (both counting every neighbour, deleted or new). In
    [0, 2]: 0 for an untouched survivor, 1 when its whole neighbourhood was replaced by an
    equal weight (2 only when it lost all its old edges and got a heavier new set), 1/45 for
    one new edge on a node of degree 44.
    """
    A = sp.csr_matrix(A)
    A_prev_S = sp.csr_matrix(A_prev_S)
    s = A_prev_S.shape[0]
    dw = np.zeros(s) if deleted_weight is None else np.asarray(deleted_weight, dtype=np.float64)
    diff = abs(A[:s, :s] - A_prev_S)
    changed = np.asarray(diff.sum(axis=1)).ravel() + np.asarray(A[:s, s:].sum(axis=1)).ravel() + dw
    deg_prev = np.asarray(A_prev_S.sum(axis=1)).ravel() + dw
    deg_now = np.asarray(A[:s].sum(axis=1)).ravel()
    den = np.maximum(deg_prev, deg_now)
    out = np.zeros(s)
    pos = den > 0
    out[pos] = changed[pos] / den[pos]
    return out


def default_refine(A, A_prev_S, *, deleted_weight=None, threshold: float = 0.0,
                   max_refine: int | None = None) -> np.ndarray:
    """The survivors ACNR refines by default (sorted indices).

    A survivor is refined when its :func:`refine_scores` value is > 0 and >= ``threshold``
    (``threshold=0``: every survivor whose adjacency row changed, that touches a new node or,
    with ``deleted_weight``, that lost a neighbour to a deletion). With ``max_refine`` only the
    ``max_refine`` highest scores are kept; ties go to the larger changed weight, then to the
    lower index (a deterministic order).
    """
    owner = "default_refine"
    threshold = check_real("threshold", threshold, owner=owner, low=0.0, high=2.0)
    if max_refine is not None:
        max_refine = check_int("max_refine", max_refine, owner=owner, low=0)
    score = refine_scores(A, A_prev_S, deleted_weight)
    idx = np.flatnonzero((score > 0) & (score >= threshold))
    if max_refine is not None and idx.size > max_refine:
        A = sp.csr_matrix(A)
        s = score.size
        dw = np.zeros(s) if deleted_weight is None else np.asarray(deleted_weight, np.float64)
        weight = (np.asarray(abs(A[:s, :s] - sp.csr_matrix(A_prev_S)).sum(axis=1)).ravel()
                  + np.asarray(A[:s, s:].sum(axis=1)).ravel() + dw)
        order = np.lexsort((idx, -weight[idx], -score[idx]))  # last key is primary
        idx = np.sort(idx[order[:max_refine]])
    return idx
