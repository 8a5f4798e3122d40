"""Baselines of the reproduction: naive incremental rule, heavy-edge matching, Louvain.

All return a hard assignment (node -> supernode, 0..k-1), i.e. the one-hot C-bar.

* :func:`naive_incremental`: a new node joins the supernode holding the plurality of its
  (already assigned) neighbours' weight; isolated nodes take the nearest coarse feature row.
* :func:`heavy_edge_coarsen`: multilevel heavy-edge matching after Loukas (JMLR 2019, the
  ``graph-coarsening`` package's "heavy_edge"), our reimplementation: edge score
  w_ij / max(d_i, d_j), greedy matching in decreasing score, levels until k supernodes.
* :func:`louvain_coarsen`: ``networkx`` Louvain communities (its own number of parts).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from optzoo._core.validation import check_int

__all__ = ["naive_incremental", "heavy_edge_coarsen", "louvain_coarsen"]


def naive_incremental(A, assign_S: np.ndarray, Xc: np.ndarray, X_new: np.ndarray) -> np.ndarray:
    """Assignments of the new nodes (aligned ``A``: the ``len(assign_S)`` survivors first).

    Neighbour votes use only survivors, so the rule is order-free within a step.
    """
    A = sp.csr_matrix(A)
    s = assign_S.size
    k = Xc.shape[0]
    if A.shape[0] == s:
        return np.zeros(0, dtype=np.int64)
    onehot = sp.csr_matrix((np.ones(s), (np.arange(s), assign_S)), shape=(s, k))
    votes = np.asarray((A[s:, :s] @ onehot).todense())
    out = votes.argmax(axis=1)
    iso = votes.max(axis=1) <= 0
    if iso.any():
        d2 = ((X_new[iso, None, :] - Xc[None, :, :]) ** 2).sum(-1)
        out[iso] = d2.argmin(axis=1)
    return out.astype(np.int64)


def heavy_edge_coarsen(A, k: int) -> np.ndarray:
    """Multilevel heavy-edge matching down to ``k`` supernodes (or as close as matchings
    allow: a graph whose remaining supernodes share no edge stops early)."""
    A = sp.csr_matrix(A)
    p = A.shape[0]
    k = check_int("k", k, owner="heavy_edge_coarsen", low=1, high=p)
    assign = np.arange(p)
    cur = A
    while cur.shape[0] > k:
        n = cur.shape[0]
        deg = np.asarray(cur.sum(axis=1)).ravel()
        coo = sp.triu(cur, k=1).tocoo()
        if coo.nnz == 0:
            break
        score = coo.data / np.maximum(np.maximum(deg[coo.row], deg[coo.col]), 1e-300)
        order = np.argsort(-score, kind="stable")
        matched = np.zeros(n, dtype=bool)
        parent = np.arange(n)
        budget = n - k
        rows, cols = coo.row[order].tolist(), coo.col[order].tolist()
        for i, j in zip(rows, cols, strict=True):  # greedy matching is inherently sequential
            if budget == 0:
                break
            if not matched[i] and not matched[j]:
                matched[i] = matched[j] = True
                parent[j] = i
                budget -= 1
        if budget == n - k:
            break
        _, new = np.unique(parent, return_inverse=True)
        P = sp.csr_matrix((np.ones(n), (np.arange(n), new)), shape=(n, new.max() + 1))
        cur = (P.T @ cur @ P).tocsr()
        cur.setdiag(0)
        cur.eliminate_zeros()
        assign = new[assign]
    return assign.astype(np.int64)


def louvain_coarsen(A, *, seed: int = 0, resolution: float = 1.0) -> np.ndarray:
    """Louvain communities of ``A`` (networkx) as a hard assignment."""
    import networkx as nx

    g = nx.from_scipy_sparse_array(sp.csr_matrix(A))
    parts = nx.community.louvain_communities(g, seed=seed, resolution=resolution)
    out = np.empty(A.shape[0], dtype=np.int64)
    for c, nodes in enumerate(parts):
        out[list(nodes)] = c
    return out
