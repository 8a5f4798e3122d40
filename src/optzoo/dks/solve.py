"""``densest_k_subgraph``: one entry point for every DkS method in optzoo.

Methods: ``"auto"`` (default: SE-FW and greedy peeling, the denser subgraph returned, so the
default is never worse than peeling), ``"se-fw"`` (the paper's saddle-escaping Frank-Wolfe), ``"fw"`` (plain FW, the AAAI
predecessor's algorithm), ``"adamw"`` (constraint parameterisation, torch), ``"peel"`` (greedy
peeling), ``"tpm"`` (truncated power method), ``"eigen"`` (top-k of the leading
eigenvector), ``"mip"`` (exact, HiGHS, small graphs).
"""

from __future__ import annotations

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
                       seed: int = 0, device: Any = None, symmetrize: bool = True,
                       time_limit: float = 60.0) -> Result:
    """Find k nodes spanning as many edges as possible.

    Parameters
    ----------
    graph : anything :func:`optzoo.dks.read_graph` accepts (path, networkx graph,
        scipy.sparse matrix, edge array, torch edge tensor, Graph).
    k : subgraph size, an int in [1, n - 1] (k = n is allowed with a warning).
    method : one of ``METHODS``. ``"auto"`` runs ``"se-fw"`` (with the options below) and
        ``"peel"`` and returns the denser (SE-FW on a tie); ``extra["auto"]`` records both
        edge counts, statuses and which was chosen. Pick ``"se-fw"`` for the paper's method
        alone. lam : diagonal loading (>= 1 makes the relaxation tight).
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
    >>> res.fun, res.density, str(res.status), res.extra["auto"]["chosen"]
    (3.0, 1.0, 'converged', 'se-fw')
    """
    method = check_choice("method", method, METHODS, owner=OWNER)
    seed = check_int("seed", seed, owner=OWNER, low=0)
    if device is not None and str(device) != "numpy":
        check_device("device", device, owner=OWNER)
    g, k = prepare(graph, k, owner=OWNER, symmetrize=symmetrize,
                   lam=lam if method in ("auto", "se-fw", "fw", "adamw") else None)
    with warned_once():  # the checks above warned once; the solver must not repeat them
        return _dispatch(g, k, method=method, lam=lam, max_iter=max_iter, step=step,
                         gap_tol=gap_tol, seed=seed, device=device, time_limit=time_limit)


def _dispatch(g, k, *, method, lam, max_iter, step, gap_tol, seed, device, time_limit) -> Result:
    if method == "auto":
        return _auto(g, k, lam=lam, max_iter=max_iter, step=step, gap_tol=gap_tol, seed=seed,
                     device=device)
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


def _auto(g, k, **fw_options) -> Result:
    """SE-FW, then greedy peeling (O(n + m)); the denser wins, SE-FW on a tie. SE-FW's
    not-converged warning is re-emitted only when its subgraph is the one returned."""
    from optzoo.dks.baselines import greedy_peeling
    from optzoo.dks.frank_wolfe import se_frank_wolfe

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fw = se_frank_wolfe(g, k, **fw_options)
    peel = greedy_peeling(g, k)
    chosen, other = (fw, peel) if fw.fun >= peel.fun else (peel, fw)
    name = "se-fw" if chosen is fw else "peel"
    if chosen is fw:
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    chosen.extra["auto"] = {"chosen": name,
                            "se-fw": {"fun": fw.fun, "status": str(fw.status), "nit": fw.nit},
                            "peel": {"fun": peel.fun, "status": str(peel.status)}}
    chosen.message = (f"auto: {name} ({chosen.fun:g}) over "
                      f"{'peel' if name == 'se-fw' else 'se-fw'} ({other.fun:g}); "
                      f"{chosen.message}")
    chosen.wall_time = fw.wall_time + peel.wall_time
    return chosen
