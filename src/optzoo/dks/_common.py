"""Shared plumbing of the DkS solvers: argument checks and the Result they all return."""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from typing import Any

import numpy as np

from optzoo._core.graph import Graph, edges_within, read_graph
from optzoo._core.result import NotConvergedWarning, Result, Status
from optzoo._core.validation import check_int, check_real

__all__ = ["NotConvergedWarning", "prepare", "make_result", "degree_bounds"]


# Set by densest_k_subgraph around the solver it dispatches to: the dispatcher's own
# prepare() has already warned about k = n or a small lam, so the solver's prepare() stays
# quiet and each warning reaches the user once per call (a ContextVar, so threads and asyncio
# tasks do not silence each other).
_ALREADY_WARNED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "optzoo_dks_already_warned", default=False)


@contextlib.contextmanager
def warned_once():
    """Run a solver whose argument warnings the caller has already emitted."""
    token = _ALREADY_WARNED.set(True)
    try:
        yield
    finally:
        _ALREADY_WARNED.reset(token)


def prepare(graph: Any, k: Any, *, owner: str, symmetrize: bool = True,
            lam: float | None = None) -> tuple[Graph, int]:
    """Read the graph, check ``k`` (and ``lam`` when given) with the project's messages."""
    g = read_graph(graph, symmetrize=symmetrize, owner=owner)
    quiet = _ALREADY_WARNED.get()
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool) and int(k) == g.n:
        if not quiet:
            warnings.warn(f"{owner}: k = n = {g.n}; the only k-subgraph is the whole graph.",
                          UserWarning, stacklevel=3)
        return g, g.n
    k = check_int("k", k, owner=owner, low=1, high=g.n)  # k = n returned above, with its warning
    if lam is not None:
        lam = check_real("lam", lam, owner=owner, low=0.0)
        if lam < g.max_weight and not quiet:
            warnings.warn(
                f"{owner}: lam = {lam:g} < max edge weight {g.max_weight:g}; the relaxation "
                "may not be tight (a fractional point can beat every k-subgraph).",
                UserWarning, stacklevel=3,
            )
    return g, k


def degree_bounds(graph: Graph, k: int) -> dict[str, float]:
    """Closed-form upper bounds on the best |E(S)| (weighted: total weight) over |S| = k.

    ``complete``: w_max k(k-1)/2. ``degree``: half the sum of the k largest
    min(weighted degree, (k-1) w_max), since a node of S has at most k-1 neighbours in S.
    """
    wmax = graph.max_weight
    wdeg = np.asarray(graph.adj.sum(axis=1)).ravel()
    capped = np.minimum(wdeg, (k - 1) * wmax)
    top = np.partition(capped, graph.n - k)[graph.n - k:] if k < graph.n else capped
    return {"complete": wmax * k * (k - 1) / 2.0, "degree": 0.5 * float(top.sum())}


def make_result(graph: Graph, k: int, nodes: np.ndarray, *, method: str, status: Status,
                message: str, nit: int = 0, nfev: int = 0, wall_time: float = 0.0,
                lam_max: float | None = None, **extra: Any) -> Result:
    """The Result every DkS solver returns: labels, |E(S)| recomputed, density, bounds."""
    nodes = np.sort(np.asarray(nodes, dtype=np.int64))
    edges = edges_within(graph.adj, nodes)
    bounds = degree_bounds(graph, k)
    if lam_max is not None:
        bounds["spectral"] = lam_max * k / 2.0
    extra.setdefault("upper_bound", min(bounds.values()))
    info = {
        "method": method,
        "k": k,
        "num_edges": edges,
        "density": 2.0 * edges / (k * (k - 1)) if k > 1 else 0.0,
        "node_indices": nodes,
        "bounds": bounds,
    }
    info.update(extra)
    return Result(x=graph.labels[nodes], fun=edges, status=status, message=message, nit=nit,
                  nfev=nfev, wall_time=wall_time, extra=info)
