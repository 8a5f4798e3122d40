"""``densest_k_subgraph``: one entry point for every DkS method in optzoo.

Methods: ``"se-fw"`` (default; saddle-escaping Frank-Wolfe), ``"fw"`` (plain FW, the AAAI
predecessor's algorithm), ``"adamw"`` (constraint parameterisation, torch), ``"peel"`` (greedy
peeling), ``"tpm"`` (truncated power method), ``"eigen"`` (top-k of the leading
eigenvector), ``"mip"`` (exact, HiGHS, small graphs).
"""

from __future__ import annotations

from typing import Any

from optzoo._core.result import Result
from optzoo._core.validation import check_choice, check_device, check_int, check_real
from optzoo.dks._common import prepare, warned_once

__all__ = ["densest_k_subgraph", "METHODS"]

METHODS = ("se-fw", "fw", "adamw", "peel", "tpm", "eigen", "mip")
OWNER = "densest_k_subgraph"


def densest_k_subgraph(graph: Any, k: int, *, method: str = "se-fw", lam: float = 1.0,
                       max_iter: int = 200, step: str = "short", gap_tol: float | None = None,
                       seed: int = 0, device: Any = None, symmetrize: bool = True,
                       time_limit: float = 60.0) -> Result:
    """Find k nodes spanning as many edges as possible.

    Parameters
    ----------
    graph : anything :func:`optzoo.dks.read_graph` accepts (path, networkx graph,
        scipy.sparse matrix, edge array, torch edge tensor, Graph).
    k : subgraph size, an int in [1, n - 1] (k = n is allowed with a warning).
    method : one of ``METHODS``. lam : diagonal loading (>= 1 makes the relaxation tight).
    max_iter, step, gap_tol : FW controls (``step`` "short" or "exact").
    seed : drives eigsh's start vector (FW's L, "eigen"). device : torch device for "fw",
        "se-fw" and "adamw" (None = numpy / CPU). time_limit : seconds, for "mip".

    Returns
    -------
    Result with ``x`` = chosen node labels, ``fun`` = |E(S)| (total weight on weighted
    graphs) recomputed from the graph, ``status``, ``message`` and ``extra`` (density,
    upper_bound, node_indices, and per-method statistics such as n_escapes, gap_trace).

    Examples
    --------
    >>> import networkx as nx
    >>> res = densest_k_subgraph(nx.complete_graph(5), 3)
    >>> res.fun, res.density, str(res.status)
    (3.0, 1.0, 'converged')
    """
    method = check_choice("method", method, METHODS, owner=OWNER)
    seed = check_int("seed", seed, owner=OWNER, low=0)
    if device is not None and str(device) != "numpy":
        check_device("device", device, owner=OWNER)
    g, k = prepare(graph, k, owner=OWNER, symmetrize=symmetrize,
                   lam=lam if method in ("se-fw", "fw", "adamw") else None)
    with warned_once():  # the checks above warned once; the solver must not repeat them
        return _dispatch(g, k, method=method, lam=lam, max_iter=max_iter, step=step,
                         gap_tol=gap_tol, seed=seed, device=device, time_limit=time_limit)


def _dispatch(g, k, *, method, lam, max_iter, step, gap_tol, seed, device, time_limit) -> Result:
    if method in ("se-fw", "fw"):
        from optzoo.dks.frank_wolfe import frank_wolfe, se_frank_wolfe

        fn = se_frank_wolfe if method == "se-fw" else frank_wolfe
        return fn(g, k, lam=lam, max_iter=max_iter, step=step, gap_tol=gap_tol, seed=seed,
                  device=device)
    if method == "adamw":
        from optzoo.dks.torch_backend import adamw_dks

        return adamw_dks(g, k, lam=lam, steps=max_iter, device=device, seed=seed)
    from optzoo.dks import baselines

    if method == "peel":
        return baselines.greedy_peeling(g, k)
    if method == "tpm":
        return baselines.truncated_power(g, k, max_iter=max_iter)
    if method == "eigen":
        return baselines.eigenvector_topk(g, k, seed=seed)
    time_limit = check_real("time_limit", time_limit, owner=OWNER, low=0.0, closed="neither")
    return baselines.mip_dks(g, k, time_limit=time_limit)
