r"""Baselines for densest k-subgraph, each as carefully engineered as the FW solver.

* :func:`greedy_peeling`: repeatedly delete a minimum-degree node until k remain (Asahiro et
  al.), with a FIFO bucket queue, O(n + m): compiled by numba when it is installed (the
  optional accelerator ``optzoo.dks._peel_numba``), else the same queue in pure Python; both
  give the identical order. Ties: among minimum-degree nodes, the one that reached that degree
  first (FIFO), then the lower node id at the start.
* :func:`mip_dks`: exact MIP with ``scipy.optimize.milp`` (HiGHS):
  :math:`\max \sum_e w_e y_e` s.t. :math:`y_e\le x_i,\ y_e\le x_j,\ 1^\top x = k,\
  \sum_{e\ni i} y_e \le (k-1)x_i,\ x\in\{0,1\}^n,\ y\in[0,1]^m` (y is integral at any
  optimum of a binary x, so it needs no integrality). A time limit gives INACCURATE with the
  reported MIP gap.
* :func:`eigenvector_topk`: top-k entries of the Perron (leading) eigenvector.
* :func:`truncated_power`: truncated power method (Yuan & Zhang, JMLR 2013) on A:
  :math:`x \leftarrow \mathrm{normalise}(\mathrm{truncate}_k(Ax))` from the top-k-degree
  indicator (their DkS start; INFERRED details: stop when the support repeats).
* :func:`random_restart_fw`: SE-FW from random starts near the uniform point, under a wall
  clock budget (used with the peeling time as budget, the spec's fairness rule).
* :func:`upper_bounds`: k(k-1)/2, half the top-k sum of min(deg, k-1), lambda_max k / 2.
* :func:`swap_polish`: 1-swap local search from any k-set (used by ``densest_k_subgraph``'s
  default on every candidate).
"""

from __future__ import annotations

import time
from collections import deque

import numpy as np

from optzoo._core.result import Result, Status
from optzoo._core.validation import check_choice, check_int, check_real
from optzoo.dks._common import degree_bounds, make_result, prepare
from optzoo.dks.relaxation import topk_indices

__all__ = ["greedy_peeling", "mip_dks", "eigenvector_topk", "truncated_power",
           "random_restart_fw", "upper_bounds", "peeling_order", "swap_polish"]


def _numba_kernel():
    """The compiled kernel, or None when numba is not installed (then Python is used)."""
    try:
        from optzoo.dks._peel_numba import peel_kernel
    except ImportError:
        return None
    return peel_kernel


# Below this many stored entries the Python loop is faster than importing numba.
_NUMBA_MIN_NNZ = 20_000


def peeling_order(adj, stop_at: int = 0, *, backend: str = "auto") -> np.ndarray:
    """Nodes in min-degree deletion order until ``stop_at`` remain (weighted: edge count).

    Lazy buckets: a node is appended to its new degree's bucket on every decrement; stale
    entries (deleted, or degree changed since) are skipped when popped. The current minimum
    only falls by at most one per deletion's neighbour, so the scan pointer moves O(n + m).

    ``backend``: ``"numba"`` (the compiled kernel of ``optzoo.dks._peel_numba``, needs the
    optional ``numba`` package), ``"python"`` (the same queue in pure Python), or ``"auto"``
    (numba when installed and the graph has at least 20 000 stored entries). Both give the
    identical order. The order is inherently sequential (each deletion changes which node is
    next), so it cannot be vectorised across deletions in numpy without changing it.
    """
    backend = check_choice("backend", backend, ("auto", "numba", "python"), owner="peeling_order")
    n = adj.shape[0]
    indptr, indices = adj.indptr, adj.indices
    deg = np.diff(indptr).astype(np.int64)
    count = max(n - stop_at, 0)
    order0 = np.argsort(deg, kind="stable")  # bucket fill order: lower id first within a degree
    kernel = None
    if backend == "numba" or (backend == "auto" and indices.size >= _NUMBA_MIN_NNZ):
        kernel = _numba_kernel()
        if kernel is None and backend == "numba":
            raise ImportError("peeling_order(backend='numba') needs the optional package numba "
                              "(pip install numba); backend='python' gives the same order.")
    if kernel is not None:
        if n == 0 or count == 0:
            return np.empty(0, dtype=np.int64)
        return kernel(indptr, indices, deg, order0.astype(np.int64), count)  # no index copies
    return _peeling_order_python(indptr, indices, deg, order0, count)


def _peeling_order_python(indptr, indices, deg, order0, count) -> np.ndarray:
    n = deg.size
    alive = np.ones(n, dtype=bool)
    maxd = int(deg.max()) if n else 0
    bounds = np.searchsorted(deg[order0], np.arange(maxd + 2))
    buckets = [deque(order0[bounds[d]:bounds[d + 1]].tolist()) for d in range(maxd + 1)]
    degl = deg.tolist()  # Python ints: the hot loop reads these one at a time
    out = np.empty(count, dtype=np.int64)
    cur = 0
    for r in range(out.size):
        while True:
            b = buckets[cur]
            while b:
                v = b.popleft()
                if alive[v] and degl[v] == cur:
                    break
            else:
                cur += 1
                continue
            break
        out[r] = v
        alive[v] = False
        nb = indices[indptr[v]:indptr[v + 1]]
        nb = nb[alive[nb]]
        if nb.size:
            for u in nb.tolist():
                du = degl[u] - 1
                degl[u] = du
                buckets[du].append(u)
            cur = max(cur - 1, 0)
    return out


def swap_polish(graph, nodes, *, max_swaps: int | None = None, candidates: int = 32,
                symmetrize: bool = True) -> tuple[np.ndarray, int]:
    """1-swap local search: move i out of S and j in while that adds edge weight.

    The gain of a swap is deg_S(j) - deg_S(i) - A_ij (deg_S: weight into S). Each round looks at
    the ``candidates`` members with the smallest deg_S and non-members with the largest, takes
    the best positive gain among those pairs, and updates deg_S with two sparse columns: O(n)
    per swap. Every swap adds weight, so it stops; at the end no swap between those candidates
    adds weight (with ``candidates`` >= k this is a 1-swap local optimum).

    ``nodes`` are node *indices* (``extra["node_indices"]`` of a DkS result). Returns
    (polished sorted indices, number of swaps made).

    >>> import networkx as nx
    >>> g = nx.disjoint_union(nx.complete_graph(4), nx.path_graph(3))
    >>> swap_polish(g, [0, 1, 4, 5])
    (array([0, 1, 2, 3]), 2)
    """
    from optzoo._core.graph import read_graph

    owner = "swap_polish"
    g = read_graph(graph, symmetrize=symmetrize, owner=owner)
    adj = g.adj.tocsr()
    idx = np.unique(np.asarray(nodes, dtype=np.int64).ravel())
    if idx.size == 0 or idx.min() < 0 or idx.max() >= g.n:
        raise ValueError(f"The 'nodes' argument of {owner} must be 1 to n = {g.n} distinct node "
                         f"indices in [0, {g.n - 1}]. Got {idx.size} indices"
                         + (f" in [{idx.min()}, {idx.max()}]." if idx.size else "."))
    k = idx.size
    cap = check_int("max_swaps", 10 * k if max_swaps is None else max_swaps, owner=owner, low=0)
    m = check_int("candidates", candidates, owner=owner, low=1)
    inS = np.zeros(g.n, dtype=bool)
    inS[idx] = True
    deg = np.asarray(adj @ inS.astype(np.float64)).ravel()
    swaps = 0
    while swaps < cap and k < g.n:
        members, others = np.flatnonzero(inS), np.flatnonzero(~inS)
        mi = members[np.argsort(deg[members], kind="stable")[:m]]
        top = min(m, others.size)
        oj = others[np.argpartition(-deg[others], top - 1)[:top]]
        gain = deg[oj][None, :] - deg[mi][:, None] - adj[mi][:, oj].toarray()
        a, b = np.unravel_index(int(np.argmax(gain)), gain.shape)
        if gain[a, b] <= 1e-12 * max(1.0, float(deg.max())):
            break
        i, j = int(mi[a]), int(oj[b])
        inS[i], inS[j] = False, True
        deg -= adj[:, [i]].toarray().ravel()
        deg += adj[:, [j]].toarray().ravel()
        swaps += 1
    return np.flatnonzero(inS), swaps


def greedy_peeling(graph, k, *, symmetrize: bool = True) -> Result:
    """Greedy peeling for DkS: delete min-degree nodes until k remain.

    >>> import networkx as nx
    >>> greedy_peeling(nx.complete_graph(6), 4).fun
    6.0
    """
    t0 = time.perf_counter()
    g, k = prepare(graph, k, owner="greedy_peeling", symmetrize=symmetrize)
    removed = peeling_order(g.adj, stop_at=k)
    keep = np.ones(g.n, dtype=bool)
    keep[removed] = False
    nodes = np.flatnonzero(keep)
    return make_result(g, k, nodes, method="greedy_peeling", status=Status.CONVERGED,
                       message=f"peeled {removed.size} nodes", nit=int(removed.size),
                       wall_time=time.perf_counter() - t0)


def mip_dks(graph, k, *, time_limit: float = 60.0, mip_rel_gap: float = 1e-6,
            node_limit: int | None = None, symmetrize: bool = True) -> Result:
    """Exact DkS by MIP (HiGHS through ``scipy.optimize.milp``).

    Status OPTIMAL when HiGHS proves optimality, INACCURATE (with ``extra["mip_gap"]`` and
    ``extra["dual_bound"]``) when the time or node limit stops it with an incumbent,
    USER_LIMIT with ``fun = nan`` and an empty selection when no incumbent was found.
    ``node_limit`` (branch-and-bound nodes) makes the outcome independent of machine load,
    unlike ``time_limit``; set ``time_limit`` large when you rely on it.
    """
    import scipy.sparse as sp
    from scipy.optimize import Bounds, LinearConstraint, milp

    owner = "mip_dks"
    t0 = time.perf_counter()
    g, k = prepare(graph, k, owner=owner, symmetrize=symmetrize)
    time_limit = check_real("time_limit", time_limit, owner=owner, low=0.0, closed="neither")
    if node_limit is not None:
        node_limit = check_int("node_limit", node_limit, owner=owner, low=1)
    n = g.n
    up = sp.triu(g.adj, k=1).tocoo()
    m = up.nnz
    ei, ej, w = up.row.astype(np.int64), up.col.astype(np.int64), up.data
    c = np.concatenate([np.zeros(n), -w])  # milp minimises
    rows_e = np.arange(m)
    # y_e - x_i <= 0 and y_e - x_j <= 0
    link = sp.csr_matrix(
        (np.concatenate([np.ones(m), -np.ones(m), np.ones(m), -np.ones(m)]),
         (np.concatenate([rows_e, rows_e, m + rows_e, m + rows_e]),
          np.concatenate([n + rows_e, ei, n + rows_e, ej]))),
        shape=(2 * m, n + m),
    )
    card = sp.csr_matrix((np.ones(n), (np.zeros(n, dtype=np.int64), np.arange(n))),
                         shape=(1, n + m))
    # sum_{e ∋ i} y_e - (k - 1) x_i <= 0
    deg_rows = np.concatenate([ei, ej, np.arange(n)])
    deg_cols = np.concatenate([n + rows_e, n + rows_e, np.arange(n)])
    deg_vals = np.concatenate([np.ones(2 * m), -(k - 1) * np.ones(n)])
    degc = sp.csr_matrix((deg_vals, (deg_rows, deg_cols)), shape=(n, n + m))
    cons = [LinearConstraint(link, -np.inf, 0.0), LinearConstraint(card, k, k),
            LinearConstraint(degc, -np.inf, 0.0)]
    integ = np.concatenate([np.ones(n), np.zeros(m)])
    options = {"time_limit": time_limit, "mip_rel_gap": mip_rel_gap, "disp": False}
    if node_limit is not None:
        options["node_limit"] = node_limit
    res = milp(c, constraints=cons, integrality=integ, bounds=Bounds(0, 1), options=options)
    wall = time.perf_counter() - t0
    dual = getattr(res, "mip_dual_bound", None)
    dual = None if dual is None or not np.isfinite(dual) else -float(dual)
    gap = getattr(res, "mip_gap", None)
    if res.x is None:
        return Result(x=g.labels[:0], fun=float("nan"), status=Status.USER_LIMIT,
                      message=f"no incumbent within time_limit={time_limit:g}s ({res.message})",
                      wall_time=wall, extra={"method": owner, "k": k, "dual_bound": dual,
                                             "mip_gap": None, "num_edges": float("nan")})
    nodes = topk_indices(res.x[:n], k)
    proven = res.status == 0
    status = Status.OPTIMAL if proven else Status.INACCURATE
    msg = "optimal (HiGHS)" if proven else (
        f"time or node limit reached ({res.message}); MIP gap {gap if gap is not None else float('nan'):.3g}")
    return make_result(g, k, nodes, method=owner, status=status, message=msg,
                       wall_time=wall, dual_bound=dual,
                       mip_gap=float(gap) if gap is not None else None,
                       **({"upper_bound": dual} if dual is not None else {}))


def _leading_eigvec(adj, seed: int):
    from scipy.sparse.linalg import eigsh

    n = adj.shape[0]
    v0 = np.random.default_rng(seed).random(n) + 0.5
    if n < 3:
        w, v = np.linalg.eigh(adj.toarray())
        return float(w[-1]), v[:, -1]
    w, v = eigsh(adj, k=1, which="LA", v0=v0, tol=1e-8, maxiter=max(1000, 10 * n))
    return float(w[0]), v[:, 0]


def eigenvector_topk(graph, k, *, seed: int = 0, symmetrize: bool = True) -> Result:
    """The k largest entries of the leading eigenvector of A (sign fixed to be non-negative)."""
    t0 = time.perf_counter()
    g, k = prepare(graph, k, owner="eigenvector_topk", symmetrize=symmetrize)
    seed = check_int("seed", seed, owner="eigenvector_topk", low=0)
    lam_max, v = _leading_eigvec(g.adj, seed)
    v = v if v.sum() >= 0 else -v
    nodes = topk_indices(v, k)
    return make_result(g, k, nodes, method="eigenvector_topk", status=Status.CONVERGED,
                       message="top-k of the leading eigenvector", lam_max=lam_max,
                       wall_time=time.perf_counter() - t0)


def truncated_power(graph, k, *, max_iter: int = 100, symmetrize: bool = True) -> Result:
    """Truncated power method (Yuan & Zhang 2013) for DkS, started from the top-k degrees."""
    owner = "truncated_power"
    t0 = time.perf_counter()
    g, k = prepare(graph, k, owner=owner, symmetrize=symmetrize)
    max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
    deg = np.asarray(g.adj.sum(axis=1)).ravel()
    nodes = topk_indices(deg, k)
    x = np.zeros(g.n)
    x[nodes] = 1.0 / np.sqrt(k)
    it, status = 0, Status.USER_LIMIT
    for _ in range(max_iter):
        it += 1
        y = g.adj @ x + x  # shift by I (INFERRED): stops 2-cycles on bipartite-like pieces
        new = topk_indices(y, k)
        x = np.zeros(g.n)
        x[new] = y[new] / max(np.linalg.norm(y[new]), 1e-300)
        if np.array_equal(new, nodes):
            status = Status.CONVERGED
            break
        nodes = new
    return make_result(g, k, new, method=owner, status=status,
                       message=f"support {'fixed' if status == Status.CONVERGED else 'moving'} "
                               f"after {it} iterations", nit=it,
                       wall_time=time.perf_counter() - t0)


def random_restart_fw(graph, k, *, time_budget: float, lam: float = 1.0, max_iter: int = 200,
                      seed: int = 0, symmetrize: bool = True, min_restarts: int = 1) -> Result:
    """SE-FW from the uniform start, then from random starts until ``time_budget`` seconds
    are used; returns the best subgraph found."""
    from optzoo._core.graph import edges_within
    from optzoo.dks.frank_wolfe import NumpyOps, fw_core, random_start
    from optzoo.dks.relaxation import lipschitz

    owner = "random_restart_fw"
    t0 = time.perf_counter()
    g, k = prepare(graph, k, owner=owner, symmetrize=symmetrize, lam=lam)
    time_budget = check_real("time_budget", time_budget, owner=owner, low=0.0)
    seed = check_int("seed", seed, owner=owner, low=0)
    L, _ = lipschitz(g.adj, lam, seed=seed)
    ops = NumpyOps(g.adj, lam)
    best, best_e, runs = None, -1.0, 0
    while runs < min_restarts or time.perf_counter() - t0 < time_budget:
        x0 = None if runs == 0 else random_start(g.n, k, seed * 7919 + runs)
        out = fw_core(ops, k, lam, L, x0=x0, max_iter=max_iter, record=False)
        e = edges_within(g.adj, out["nodes"])
        if e > best_e:
            best, best_e = out["nodes"], e
        runs += 1
    return make_result(g, k, best, method=owner, status=Status.BUDGET,
                       message=f"best of {runs} SE-FW runs in the time budget", nit=runs,
                       wall_time=time.perf_counter() - t0, restarts=runs, lam=lam)


def upper_bounds(graph, k, *, seed: int = 0) -> dict[str, float]:
    """Certified upper bounds on the best |E(S)| with |S| = k (see the module docstring)."""
    g, k = prepare(graph, k, owner="upper_bounds")
    seed = check_int("seed", seed, owner="upper_bounds", low=0)
    out = degree_bounds(g, k)
    lam_max, _ = _leading_eigvec(g.adj, seed)
    out["spectral"] = lam_max * (1 + 1e-7) * k / 2.0
    out["best"] = min(out.values())
    return out
