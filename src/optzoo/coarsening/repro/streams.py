"""The reproduction's graph streams: a contextual SBM (dense generator, for the accuracy
streams), a sparse SBM of any size (for the scaling streams), ego-facebook grown in BFS order
(SNAP, from the shared data folder; a generated graph of the same size class if absent, which
the result records), and the events of one step (growth; deletions and rewiring)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from optzoo._core.rng import np_rng
from optzoo.coarsening import GraphEvents
from optzoo.repro.data import find_data_file

__all__ = ["csbm", "facebook", "growth_events", "rewire_events", "sparse_sbm"]


def csbm(P: int, *, n_classes: int, d: int, p_in: float, p_out: float, mu_scale: float, seed: int):
    """Contextual SBM with ``P`` nodes: (A, X, y, split) with split 0/1/2 = train/val/test."""
    rng = np_rng(seed, "csbm")
    y = rng.integers(0, n_classes, P)
    mu = mu_scale * rng.standard_normal((n_classes, d))
    X = mu[y] + rng.standard_normal((P, d))
    prob = np.where(y[:, None] == y[None, :], p_in, p_out)
    upper = np.triu(rng.random((P, P)) < prob, 1)
    A = sp.csr_matrix((upper | upper.T).astype(np.float64))
    split = rng.choice(3, size=P, p=[0.6, 0.2, 0.2])
    return A, X, y, split


def sparse_sbm(P: int, *, degree: float, n_classes: int, d: int, same: float, seed: int):
    """SBM with ``P`` nodes and mean degree ``degree`` drawn in O(edges) (a fraction ``same``
    of the edges inside a class), features = class mean + noise, row-normalised. (A, X)."""
    rng = np_rng(seed, "sparse-sbm")
    y = rng.integers(0, n_classes, P)
    m = int(round(P * degree / 2))
    u = rng.integers(0, P, m)
    members = [np.flatnonzero(y == c) for c in range(n_classes)]
    inside = rng.random(m) < same
    v = rng.integers(0, P, m)
    for c in range(n_classes):
        pick = inside & (y[u] == c)
        v[pick] = members[c][rng.integers(0, members[c].size, int(pick.sum()))]
    ok = u != v
    u, v = u[ok], v[ok]
    A = sp.csr_matrix((np.ones(2 * u.size), (np.r_[u, v], np.r_[v, u])), shape=(P, P))
    A.data[:] = 1.0
    mu = rng.standard_normal((n_classes, d))
    X = mu[y] + rng.standard_normal((P, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    return A, X


def facebook(n_total: int, seed: int):
    """ego-facebook (4,039 nodes, 88,234 edges) in BFS order from node 0, first ``n_total``
    nodes; features = row-normalised A R with R Gaussian (32 columns). (A, X, source)."""
    path = find_data_file("ego-facebook.txt")
    if path is not None:
        from optzoo._core.graph import read_graph

        A = sp.csr_matrix(read_graph(path).adj)
        source = str(path.name)
    else:  # recorded fallback: an SBM of the same size class
        A, _ = sparse_sbm(max(4039, n_total), degree=43.7, n_classes=20, d=2, same=0.9, seed=seed)
        source = "generated fallback (ego-facebook.txt not found)"
    from scipy.sparse.csgraph import breadth_first_order

    order = breadth_first_order(A, 0, directed=False, return_predecessors=False)[:n_total]
    A = A[order][:, order].tocsr()
    R = np_rng(seed, "fb-features").standard_normal((A.shape[0], 32))
    X = np.asarray(A @ R)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    return A, X, source


def growth_events(A_all, X_all, present: np.ndarray, lo: int, hi: int) -> GraphEvents:
    """Nodes ``lo..hi-1`` arrive with their edges to the ``present`` nodes and each other."""
    cur = np.r_[present, np.arange(lo, hi)]
    sub = sp.triu(A_all[cur][:, cur], 1).tocoo()
    new = (cur[sub.row] >= lo) | (cur[sub.col] >= lo)
    return GraphEvents(add_nodes=np.arange(lo, hi), features=X_all[lo:hi],
                       add_edges=np.stack([cur[sub.row[new]], cur[sub.col[new]]], 1))


def rewire_events(ev: GraphEvents, A_cur, ids: np.ndarray, rng, *, del_frac: float, rewire_frac: float,
                  same=None) -> GraphEvents:
    """``ev`` plus deletions (``del_frac`` of the current nodes) and rewiring (``rewire_frac`` of
    the edges among survivors removed, as many new edges added among survivors: of the same
    class with the SBM's odds when ``same = (labels, probability)`` is given, else uniform)."""
    p = ids.size
    dele = rng.choice(p, size=max(1, int(round(del_frac * p))), replace=False)
    keep = np.setdiff1d(np.arange(p), dele)
    sub = sp.triu(A_cur[keep][:, keep], 1).tocoo()
    n_rw = max(1, int(round(rewire_frac * sub.nnz)))
    pick = rng.choice(sub.nnz, size=min(n_rw, sub.nnz), replace=False)
    rem = np.stack([ids[keep[sub.row[pick]]], ids[keep[sub.col[pick]]]], 1)
    u = keep[rng.integers(0, keep.size, 4 * n_rw)]
    cand = keep[rng.integers(0, keep.size, 4 * n_rw)]
    ok = u != cand
    if same is not None:
        y, q = same
        want = rng.random(4 * n_rw) < q
        ok &= (y[ids[u]] == y[ids[cand]]) == want
    ok &= np.asarray(A_cur[u, cand]).ravel() == 0
    u, cand = u[ok][:n_rw], cand[ok][:n_rw]
    gone = ids[dele]
    add_old = np.asarray(ev.add_edges).reshape(-1, 2)
    drop = np.isin(add_old, gone).any(axis=1)
    return GraphEvents(add_nodes=ev.add_nodes, features=ev.features, remove_nodes=gone,
                       remove_edges=rem[~np.isin(rem, gone).any(axis=1)],
                       add_edges=np.vstack([add_old[~drop], np.stack([ids[u], ids[cand]], 1)]))
