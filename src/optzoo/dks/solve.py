"""``densest_k_subgraph``: one entry point for every DkS method in optzoo.

Methods: ``"auto"`` (default: SE-FW and greedy peeling, each polished by 1-swap local search,
the denser subgraph returned, so the default is never worse than peeling), ``"se-fw"`` (the paper's saddle-escaping Frank-Wolfe), ``"fw"`` (plain FW, the AAAI
predecessor's algorithm), ``"adamw"`` (constraint parameterisation, torch), ``"peel"`` (greedy
peeling), ``"tpm"`` (truncated power method), ``"eigen"`` (top-k of the leading
eigenvector), ``"mip"`` (exact, HiGHS, small graphs).
"""

from __future__ import annotations

import time
import warnings
from typing import Any

from optzoo._core.result import Result
from optzoo._core.validation import check_choice, check_device, check_int, check_real
from optzoo.dks._common import prepare, warned_once

__all__ = ["densest_k_subgraph", "METHODS"]

METHODS = ("auto", "se-fw", "fw", "adamw", "peel", "tpm", "eigen", "mip")
OWNER = "densest_k_subgraph"


def densest_k_subgraph(graph: Any, k: int, *, method: str = "auto", lam: float = 1.0,
                       max_iter: int = 200, step: str = "short", gap_tol: float | None = None,
                       init: Any = "uniform", trigger: str = "gain", seed: int = 0,
                       device: Any = None, symmetrize: bool = True,
                       time_limit: float = 60.0) -> Result:
    """Find k nodes spanning as many edges as possible.

    Parameters
    ----------
    graph : anything :func:`optzoo.dks.read_graph` accepts (path, networkx graph,
        scipy.sparse matrix, edge array, torch edge tensor, Graph).
    k : subgraph size, an int in [1, n] (k = n, the whole graph, warns).
    method : one of ``METHODS``. ``"auto"`` runs ``"se-fw"`` (with the options below) and
        ``"peel"``, polishes each by 1-swap local search (:func:`optzoo.dks.swap_polish`) and
        returns the denser (on a tie, a converged run first, then SE-FW); ``extra["auto"]`` records each candidate's edge
        count before and after polishing, its status and swaps, and which was chosen. Pick ``"se-fw"`` for the paper's method
        alone. lam : diagonal loading (>= 1 makes the relaxation tight).
    max_iter, step, gap_tol : FW controls (``step`` "short" or "exact").
    init, trigger : SE-FW's start (``"uniform"``, ``"peel"``, a vector or k node indices) and
        escape trigger (``"gain"`` or ``"gap"``), see :func:`optzoo.dks.se_frank_wolfe`;
        ``init`` applies to "se-fw", "fw" and the SE-FW run of "auto", ``trigger`` to "se-fw"
        and "auto".
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
    >>> res.fun, res.density, str(res.status), res.extra["auto"]["chosen"]
    (3.0, 1.0, 'converged', 'se-fw')
    """
    method = check_choice("method", method, METHODS, owner=OWNER)
    seed = check_int("seed", seed, owner=OWNER, low=0)
    time_limit = check_real("time_limit", time_limit, owner=OWNER, low=0.0, closed="neither")
    if device is not None and str(device) != "numpy":
        check_device("device", device, owner=OWNER)
    g, k = prepare(graph, k, owner=OWNER, symmetrize=symmetrize,
                   lam=lam if method in ("auto", "se-fw", "fw", "adamw") else None)
    with warned_once():  # the checks above warned once; the solver must not repeat them
        return _dispatch(g, k, method=method, lam=lam, max_iter=max_iter, step=step,
                         gap_tol=gap_tol, init=init, trigger=trigger, seed=seed, device=device,
                         time_limit=time_limit)


def _dispatch(g, k, *, method, lam, max_iter, step, gap_tol, init, trigger, seed, device,
              time_limit) -> Result:
    if method == "auto":
        return _auto(g, k, lam=lam, max_iter=max_iter, step=step, gap_tol=gap_tol, init=init,
                     trigger=trigger, seed=seed, device=device)
    if method == "se-fw":
        from optzoo.dks.frank_wolfe import se_frank_wolfe

        return se_frank_wolfe(g, k, lam=lam, max_iter=max_iter, step=step, gap_tol=gap_tol,
                              init=init, trigger=trigger, seed=seed, device=device)
    if method == "fw":
        from optzoo.dks.frank_wolfe import frank_wolfe

        return frank_wolfe(g, k, lam=lam, max_iter=max_iter, step=step, gap_tol=gap_tol,
                           init=init, seed=seed, device=device)
    if method == "adamw":
        from optzoo.dks.torch_backend import adamw_dks

        return adamw_dks(g, k, lam=lam, max_iter=max_iter, device=device, seed=seed)
    from optzoo.dks import baselines

    if method == "peel":
        return baselines.greedy_peeling(g, k)
    if method == "tpm":
        return baselines.truncated_power(g, k, max_iter=max_iter)
    if method == "eigen":
        return baselines.eigenvector_topk(g, k, seed=seed)
    return baselines.mip_dks(g, k, time_limit=time_limit)


def _auto(g, k, **fw_options) -> Result:
    """SE-FW (from ``init``, default uniform) and greedy peeling (O(n + m)), each polished by 1-swap
    local search; the denser wins (on a tie: a run that stopped as planned, then SE-FW). SE-FW's not-converged warning is re-emitted
    only when its subgraph is the one returned."""
    from optzoo.dks._common import make_result
    from optzoo.dks.baselines import greedy_peeling, swap_polish
    from optzoo.dks.frank_wolfe import se_frank_wolfe

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fw = se_frank_wolfe(g, k, **fw_options)
    peel = greedy_peeling(g, k)
    record, best = {}, None
    for name, res in (("se-fw", fw), ("peel", peel)):
        nodes, swaps = swap_polish(g, res.extra["node_indices"])
        polished = make_result(g, k, nodes, method=name, status=res.status, message=res.message)
        record[name] = {"fun": res.fun, "status": str(res.status), "nit": res.nit,
                        "swaps": swaps, "polished_fun": polished.fun}
        rank = (polished.fun, res.success)  # a tie goes to a stopped-as-planned run, then SE-FW
        if best is None or rank > best[0]:
            best = (rank, name, polished, res)
    _, name, polished, res = best
    if name == "se-fw":
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    extra = {key: v for key, v in res.extra.items() if key not in polished.extra}
    polished.extra.update(extra)
    polished.extra["method"] = "auto"
    polished.extra["auto"] = {"chosen": name, **record}
    others = ", ".join(f"{n} {r['polished_fun']:g}" for n, r in record.items() if n != name)
    polished.message = (f"auto: {name} then {record[name]['swaps']} swaps gave "
                        f"{polished.fun:g} (over {others}); {name}: {res.message}")
    polished.nit, polished.nfev = res.nit, res.nfev
    polished.wall_time = time.perf_counter() - t0
    return polished
