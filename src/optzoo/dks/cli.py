"""The ``optzoo dks GRAPH -k K`` command body (wired into the CLI by ``optzoo.cli``)."""

from __future__ import annotations

import json
import sys
import time
import warnings

__all__ = ["dks_command"]


def dks_command(graph: str, k: int, method: str = "auto", lam: float = 1.0,
                as_json: bool = False, max_iter: int = 200, seed: int = 0) -> int:
    """Read ``graph``, solve DkS, print a summary (or one JSON object); return an exit code.

    Exit codes: 0 solved (any status with a subgraph), 1 bad input, 2 no subgraph found.
    """
    from optzoo.dks import densest_k_subgraph, read_graph

    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g = read_graph(graph, owner="optzoo dks")
            res = densest_k_subgraph(g, k, method=method, lam=lam, max_iter=max_iter, seed=seed)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        if as_json:
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        else:
            print(f"error: {exc}", file=sys.stderr)
        return 1
    wall = time.perf_counter() - t0
    nodes = [x.item() if hasattr(x, "item") else x for x in res.x]
    out = {
        "graph": str(graph), "n": g.n, "m": g.m, "k": res.extra["k"], "method": method,
        "lam": lam, "nodes": nodes, "num_edges": res.fun, "density": res.extra["density"],
        "status": str(res.status), "message": res.message, "nit": res.nit,
        "upper_bound": res.extra.get("upper_bound"), "solve_time": res.wall_time,
        "wall_time": wall, "warnings": [str(w.message) for w in caught],
    }
    if as_json:
        print(json.dumps(out, default=str))
    else:
        print(f"graph      {graph} ({g.n} nodes, {g.m} edges)")
        print(f"method     {method} (lam={lam:g}), k={out['k']}")
        print(f"status     {out['status']}: {res.message}")
        print(f"edges      {res.fun:g}  density {out['density']:.4f}  "
              f"(upper bound {out['upper_bound']:.6g})")
        print(f"time       {res.wall_time:.3f} s solve, {wall:.3f} s total")
        print(f"nodes      {' '.join(str(x) for x in nodes)}")
        for w in out["warnings"]:
            print(f"warning    {w}")
    return 0 if res.fun == res.fun else 2
