"""``DynamicCoarsener``: FGC once, then DIGC / ACNR updates driven by graph events.

Usage::

    dc = DynamicCoarsener(ratio=0.25, update="acnr", seed=0)
    state = dc.fit(graph0, X0)                       # scipy.sparse, networkx or edge list
    state = dc.update(GraphEvents(add_nodes=[...], features=..., remove_nodes=[...],
                                  add_edges=[[u, v], ...], remove_edges=[[u, v], ...]))
    state.C, state.coarse_adjacency, state.coarse_features, state.epsilon_bound

Events of one update apply in a fixed order (node deletions, node additions, edge
removals, edge additions), so the order in which they are listed never matters. Nodes are
aligned survivors first (in their previous order), new nodes last, as in the official code.
Graphs are read by :func:`optzoo._core.graph.read_graph` (one reader for the project).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from optzoo._core.graph import read_graph
from optzoo._core.result import Result
from optzoo._core.validation import (
    check_array,
    check_choice,
    check_int,
    check_real,
    check_type,
    fail,
)

from .fgc import coarse_features, epsilon_certificate, fgc, hard_assignment, sparsify_rows
from .updates import acnr_update, digc_update

__all__ = ["DynamicCoarsener", "GraphEvents", "CoarseState"]

_OWNER = "DynamicCoarsener"


@dataclass
class GraphEvents:
    """What changed between two snapshots, in global node ids.

    ``add_nodes``: new ids; ``features``: their feature rows (len(add_nodes) x d);
    ``remove_nodes``: ids to delete (with all their edges); ``add_edges``: (m, 2) id pairs or
    (m, 3) with a weight (an existing edge takes the new weight); ``remove_edges``: (m, 2).
    """

    add_nodes: Any = ()
    features: Any = None
    remove_nodes: Any = ()
    add_edges: Any = ()
    remove_edges: Any = ()


@dataclass
class CoarseState:
    """The coarse graph after ``fit`` or an ``update``.

    ``C``: loading matrix (scipy CSR, p x k, rows on the simplex); ``node_ids``: global id of
    each row; ``coarse_adjacency``: C^T A C (CSR k x k); ``coarse_features``: X~ = C^+ X;
    ``assignment``: row-argmax of C (the hard C-bar); ``epsilon`` / ``epsilon_tight`` /
    ``epsilon_bound``: see :func:`epsilon_certificate`; ``n_reassigned``: survivors whose
    supernode (argmax) changed; ``timings``: seconds for the update and the certificate.
    """

    C: Any
    node_ids: np.ndarray
    coarse_adjacency: Any
    coarse_features: np.ndarray
    assignment: np.ndarray
    epsilon: float
    epsilon_tight: float
    epsilon_bound: float
    n_reassigned: int
    step: int
    result: Result | None = None
    timings: dict = field(default_factory=dict)

    @property
    def k(self) -> int:
        return int(self.C.shape[1])

    def to_edge_list(self):
        """(edges (m, 2) int array, weights (m,)) of the coarse graph, i < j plus self-loops."""
        coo = sp.triu(self.coarse_adjacency).tocoo()
        return np.stack([coo.row, coo.col], axis=1), coo.data


def _as_ids(v, name) -> np.ndarray:
    arr = np.asarray(list(v) if not isinstance(v, np.ndarray) else v)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        fail(name, "DynamicCoarsener.update", "a 1-D sequence of node ids", f"shape {arr.shape}")
    return arr


def _warn_if_degenerate(assignment: np.ndarray, k: int, *, owner: str) -> None:
    """Warn when one supernode holds more than half of the nodes (k >= 3): FGC can fall
    into such a start-driven local minimum (a hub graph with the heavy-edge start puts 139
    of 184 star nodes in one supernode), and every later update inherits it."""
    p = assignment.size
    sizes = np.bincount(assignment, minlength=k)
    big = int(sizes.max(initial=0))
    if k >= 3 and big > 0.5 * p:
        warnings.warn(
            f"{owner}: supernode {int(sizes.argmax())} holds {big} of {p} nodes (k = {k}, "
            f"{int((sizes == 0).sum())} supernodes empty); the coarsening is degenerate. Try "
            "fgc_options={'C0': 'random'}, other weights or another ratio.",
            UserWarning, stacklevel=3,
        )


class DynamicCoarsener:
    """Dynamic graph coarsening (Gupta et al., ICML 2026): FGC at t = 0, then DIGC or ACNR.

    Parameters
    ----------
    ratio : coarsening ratio k / p0 in (0, 1] (code default 0.25); ignored when ``k`` given.
    k : number of supernodes (fixed afterwards, shrinking only when a supernode empties).
    update : "acnr" (default; refines survivors touched by the change) or "digc" (growth:
        survivors frozen).
    refine_threshold, max_refine : ACNR's refine rule (see :func:`acnr_update`): a survivor is
        refined when at least this fraction of its neighbourhood weight changed (default
        0.1, INFERRED; 0 refines every touched survivor), at most ``max_refine`` of them
        (highest fraction first; None: no cap).
    solver : "pgd" (projected gradient + Armijo, INFERRED) or "sgd" (the official code's).
    weights : dict of omega, zeta, alpha, beta (defaults 1.0; the code tunes them by TPE).
    fgc_options : keyword arguments for :func:`fgc` at ``fit``.
    max_support : keep at most this many supernodes per row of C (sparse storage, INFERRED).
    certificate : compute the epsilon certificate after every update (costs one Lanczos).
    lmax : how to get lambda_max(Theta) for the spec bound ("auto", "lanczos", "gershgorin").
    seed : seed for FGC's start and the sgd solver.

    >>> import numpy as np, networkx as nx
    >>> g = nx.karate_club_graph()
    >>> X = np.eye(34)[:, :4] + np.arange(34)[:, None] / 34
    >>> dc = DynamicCoarsener(k=8, seed=0)
    >>> st = dc.fit(g, X)
    >>> st = dc.update(GraphEvents(add_nodes=[100], features=X[:1], add_edges=[[100, 0]]))
    >>> st.C.shape, bool(st.epsilon <= st.epsilon_tight + 1e-12)
    ((35, 8), True)
    """

    def __init__(self, ratio: float = 0.25, *, k: int | None = None, update: str = "acnr",
                 solver: str = "pgd", weights: Mapping | None = None,
                 fgc_options: Mapping | None = None, max_support: int | None = 10,
                 certificate: bool = True, lmax: str = "auto", max_iter: int = 200,
                 tol: float = 1e-4, refine_threshold: float = 0.1,
                 max_refine: int | None = None, seed: int = 0):
        self.ratio = check_real("ratio", ratio, owner=_OWNER, low=0.0, high=1.0, closed="right")
        self.k = None if k is None else check_int("k", k, owner=_OWNER, low=1)
        self.update_rule = check_choice("update", update, ("acnr", "digc"), owner=_OWNER)
        self.solver = check_choice("solver", solver, ("pgd", "sgd"), owner=_OWNER)
        w = {"omega": 1.0, "zeta": 1.0, "alpha": 1.0, "beta": 1.0}
        for key, v in dict(weights or {}).items():
            check_choice("weights", key, tuple(w), owner=_OWNER)
            w[key] = check_real(f"weights[{key!r}]", v, owner=_OWNER, low=0.0)
        self.weights = w
        self.refine_threshold = check_real("refine_threshold", refine_threshold, owner=_OWNER,
                                           low=0.0, high=2.0)
        if max_refine is not None:
            max_refine = check_int("max_refine", max_refine, owner=_OWNER, low=0)
        self.max_refine = max_refine
        self.fgc_options = dict(fgc_options or {})
        if max_support is not None:
            max_support = check_int("max_support", max_support, owner=_OWNER, low=1)
        self.max_support = max_support
        self.certificate = certificate
        self.lmax = lmax
        self.max_iter = max_iter
        self.tol = tol
        self.seed = seed
        self.state: CoarseState | None = None

    # ------------------------------------------------------------------ fit
    def fit(self, graph, features, *, node_ids=None) -> CoarseState:
        """Coarsen the first snapshot with FGC.

        ``features`` row i belongs to ``node_ids[i]`` when given, else to the i-th node of
        the graph as read (``read_graph(graph).labels``; 0..n-1 for a scipy matrix).
        """
        t0 = time.perf_counter()
        g = read_graph(graph, owner=f"{_OWNER}.fit")
        X = self._check_features(features, None, "features")
        adj = sp.csr_matrix(g.adj)
        if node_ids is None:
            ids = np.asarray(g.labels)
        else:
            ids = _as_ids(node_ids, "node_ids")
            if len(np.unique(ids)) != ids.size:
                fail("node_ids", f"{_OWNER}.fit", "unique ids", "duplicates")
            if sp.issparse(graph) and ids.size == adj.shape[0]:
                pass  # rows of a matrix are positions: node_ids names them
            else:
                pos = {v: i for i, v in enumerate(ids.tolist())}
                try:
                    perm = np.array([pos[v] for v in g.labels.tolist()], dtype=np.int64)
                except KeyError as e:
                    fail("node_ids", f"{_OWNER}.fit", "a list containing every node of the graph",
                         f"missing {e.args[0]!r}")
                coo = adj.tocoo()
                adj = sp.csr_matrix((coo.data, (perm[coo.row], perm[coo.col])),
                                    shape=(ids.size, ids.size))
        p = adj.shape[0]
        if X.shape[0] != p:
            fail("features", f"{_OWNER}.fit", f"an array with one row per node ({p})",
                 f"shape {X.shape}")
        k = self.k if self.k is not None else max(1, int(round(self.ratio * p)))
        if k > p:
            fail("k", _OWNER, f"an int in [1, {p}] (at most the number of nodes)", k)
        opts = {"seed": self.seed, **self.fgc_options}
        res = fgc(adj, X, k, **opts)
        C = sparsify_rows(res.x, self.max_support)
        self._adj, self._X, self._C, self._ids = adj, X, C, ids
        self._pos = {v: i for i, v in enumerate(ids.tolist())}
        self._Xc = coarse_features(C, X)
        t_upd = time.perf_counter() - t0
        self.state = self._emit(res, 0, 0, {"update": t_upd})
        _warn_if_degenerate(self.state.assignment, k, owner=f"{_OWNER}.fit")
        return self.state

    # ------------------------------------------------------------------ update
    def update(self, events: GraphEvents | Mapping) -> CoarseState:
        """Apply one time step of events and update the coarsening incrementally."""
        if self.state is None:
            raise RuntimeError("DynamicCoarsener.update called before fit.")
        if isinstance(events, Mapping):
            unknown = set(events) - set(GraphEvents.__dataclass_fields__)
            if unknown:
                fail("events", f"{_OWNER}.update", "a GraphEvents or a dict with keys "
                     "add_nodes, features, remove_nodes, add_edges, remove_edges", sorted(unknown))
            events = GraphEvents(**events)
        check_type("events", events, GraphEvents, owner=f"{_OWNER}.update",
                   what="a GraphEvents or a dict")
        t0 = time.perf_counter()
        A_S, A_new, X_new_rows, surv, new_ids, deleted_weight = self._apply(events)
        s = surv.size
        C_S = self._C[surv]
        mass = np.asarray(C_S.sum(axis=0)).ravel()
        cols = np.flatnonzero(mass > 1e-12)  # prune supernodes left without members
        C_S = C_S[:, cols].tocsr()
        Xc = self._Xc[cols]
        if cols.size < self._C.shape[1]:
            rs = np.asarray(C_S.sum(axis=1)).ravel()
            C_S = sp.diags(1.0 / rs) @ C_S
        old_assign = hard_assignment(C_S)
        w = self.weights
        kw = dict(solver=self.solver, max_iter=self.max_iter, tol=self.tol, seed=self.seed)
        if self.update_rule == "digc":
            res = digc_update(A_new, C_S, Xc, X_new_rows, omega=w["omega"], zeta=w["zeta"], **kw)
            C = sp.vstack([C_S, sparsify_rows(res.x, self.max_support)]).tocsr() \
                if res.x.shape[0] else C_S.tocsr()
        else:
            res = acnr_update(A_new, A_S, C_S, Xc, X_new_rows, deleted_weight=deleted_weight,
                              refine_threshold=self.refine_threshold, max_refine=self.max_refine,
                              **w, **kw)
            r = res.extra["refine"].size
            rows = sparsify_rows(res.x, self.max_support) if res.x.shape[0] else None
            if r:
                mask = np.ones(s)
                mask[res.extra["refine"]] = 0.0
                place = sp.csr_matrix((np.ones(r), (res.extra["refine"], np.arange(r))),
                                      shape=(s, r))
                C_S = (sp.diags(mask) @ C_S + place @ rows[:r]).tocsr()
            C = sp.vstack([C_S, rows[r:]]).tocsr() if rows is not None and rows.shape[0] > r \
                else C_S.tocsr()
        n_reassigned = int(np.sum(hard_assignment(C[:s]) != old_assign))
        self._C = C
        self._Xc = coarse_features(C, self._X)
        t_upd = time.perf_counter() - t0
        self.state = self._emit(res, self.state.step + 1, n_reassigned, {"update": t_upd})
        return self.state

    # ------------------------------------------------------------------ helpers
    def _check_features(self, X, d, name):
        if X is None:
            fail(name, _OWNER, "an array of node features", None, exc=TypeError)
        X = check_array(name, X, owner=_OWNER, ndim=2, nonempty=False)  # nodes x features
        if d is not None and X.shape[1] != d:
            fail(name, _OWNER, f"an array with {d} feature columns (as at fit)",
                 f"{X.shape[1]} columns")
        return X

    def _index(self, ids, name, table):
        out = np.empty(ids.size, dtype=np.int64)
        for i, v in enumerate(ids.tolist()):
            j = table.get(v)
            if j is None:
                fail(name, f"{_OWNER}.update", "ids of nodes present in the graph", v)
            out[i] = j
        return out

    def _edge_ids(self, edges, name):
        arr = np.asarray(edges if len(edges) else np.zeros((0, 2)))
        if arr.ndim != 2 or arr.shape[1] not in (2, 3):
            fail(name, f"{_OWNER}.update", "an (m, 2) or (m, 3) array of node-id pairs",
                 f"shape {arr.shape}")
        return arr

    def _apply(self, ev: GraphEvents):
        owner = f"{_OWNER}.update"
        rem = _as_ids(ev.remove_nodes, "remove_nodes")
        if np.unique(rem).size != rem.size:
            fail("remove_nodes", owner, "distinct ids (a node is deleted once)", rem.tolist())
        rem_idx = self._index(rem, "remove_nodes", self._pos)
        add = _as_ids(ev.add_nodes, "add_nodes")
        if np.unique(add).size != add.size:
            fail("add_nodes", owner, "distinct ids", add.tolist())
        d = self._X.shape[1]
        Xn = self._check_features(np.zeros((0, d)) if ev.features is None and add.size == 0
                                  else ev.features, d, "features")
        if Xn.shape[0] != add.size:
            fail("features", owner, f"one row per added node ({add.size})", f"{Xn.shape[0]} rows")
        for v in add.tolist():
            if v in self._pos and not np.isin(self._pos[v], rem_idx):
                fail("add_nodes", owner, "ids not already in the graph", v)
        p_old = self._adj.shape[0]
        keep = np.ones(p_old, dtype=bool)
        keep[rem_idx] = False
        surv = np.flatnonzero(keep)
        s = surv.size
        if s == 0:
            fail("remove_nodes", owner, "a set that leaves at least one node", f"all {p_old} nodes")
        new_ids = np.concatenate([self._ids[surv], add]) if add.size else self._ids[surv]
        new_pos = {v: i for i, v in enumerate(new_ids.tolist())}
        p = new_ids.size
        A_S = self._adj[surv][:, surv].tocsr()
        deleted_w = np.zeros(p_old)  # edge weight each node loses to the deleted nodes
        if rem_idx.size:
            deleted_w = np.asarray(self._adj[rem_idx].sum(axis=0)).ravel()
        A = sp.block_diag([A_S, sp.csr_matrix((p - s, p - s))]).tocsr() if p > s else A_S.copy()
        re = self._edge_ids(ev.remove_edges, "remove_edges")
        if re.shape[0]:
            u = self._index(re[:, 0], "remove_edges", new_pos)
            v = self._index(re[:, 1], "remove_edges", new_pos)
            present = np.asarray(A[u, v]).ravel() != 0
            if not present.all():
                i = int(np.flatnonzero(~present)[0])
                fail("remove_edges", owner, "existing edges", re[i].tolist())
            mask = sp.csr_matrix((np.ones(2 * u.size), (np.r_[u, v], np.r_[v, u])), shape=(p, p))
            A = (A - A.multiply(mask.astype(bool))).tocsr()
            A.eliminate_zeros()
        ae = self._edge_ids(ev.add_edges, "add_edges")
        if ae.shape[0]:
            u = self._index(ae[:, 0], "add_edges", new_pos)
            v = self._index(ae[:, 1], "add_edges", new_pos)
            wts = np.ones(u.size) if ae.shape[1] == 2 else np.asarray(ae[:, 2], dtype=np.float64)
            if not (np.isfinite(wts).all() and (wts > 0).all()):
                fail("add_edges", owner, "finite positive weights", wts.tolist()[:5])
            if (u == v).any():
                fail("add_edges", owner, "pairs of distinct nodes (no self-loops)",
                     ae[np.flatnonzero(u == v)[0]].tolist())
            lo, hi = np.minimum(u, v), np.maximum(u, v)
            _, last = np.unique((lo * p + hi)[::-1], return_index=True)
            last = u.size - 1 - last  # a repeated pair keeps its last listed weight
            lo, hi, wts = lo[last], hi[last], wts[last]
            W = sp.csr_matrix((np.r_[wts, wts], (np.r_[lo, hi], np.r_[hi, lo])), shape=(p, p))
            A = (A - A.multiply(W.astype(bool)) + W).tocsr()
        if add.size + rem.size > 0.5 * p_old:
            warnings.warn(f"{owner}: this step changes {add.size + rem.size} of {p_old} nodes "
                          "(> 50%); consider re-initialising with fit.", UserWarning, stacklevel=3)
        X = np.vstack([self._X[surv], Xn])
        self._adj, self._X, self._ids, self._pos = A, X, new_ids, new_pos
        return A_S, A, Xn, surv, add, deleted_w[surv]

    def _emit(self, res, step, n_reassigned, timings) -> CoarseState:
        C = self._C
        Ac = (C.T @ self._adj @ C).tocsr()
        eps = {"epsilon": float("nan"), "epsilon_tight": float("nan"),
               "epsilon_bound": float("nan")}
        if self.certificate:
            t0 = time.perf_counter()
            eps = epsilon_certificate(self._adj, self._X, C, self._Xc, lmax=self.lmax)
            timings["certificate"] = time.perf_counter() - t0
        return CoarseState(C, self._ids, Ac, self._Xc, hard_assignment(C), eps["epsilon"],
                           eps["epsilon_tight"], eps["epsilon_bound"], n_reassigned, step,
                           res, timings)

    @property
    def adjacency(self):
        """The current (aligned) adjacency, CSR."""
        return self._adj

    @property
    def features(self) -> np.ndarray:
        return self._X
