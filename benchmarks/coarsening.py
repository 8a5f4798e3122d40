"""Benchmark: one DIGC / ACNR update vs FGC from scratch on a large growing graph.

A contextual SBM with ``--nodes`` nodes and about ``--edges`` edges (numpy only, sampled
edge by edge, so 10^5 nodes / 10^6 edges fit in memory) is coarsened with FGC once (k
supernodes); then ``--add`` new nodes arrive and are absorbed by DIGC and by ACNR, and FGC is
rerun from scratch on the grown graph with the same k. With ``--delete`` (a fraction of the
nodes) and ``--rewire`` (a fraction of the edges among survivors, removed and as many added
uniformly) the event is ACNR's regime: deletions and rewiring come with the arrivals (DIGC,
which assumes pure growth, then sees the same event). ``--changes`` runs several such events
(``delete:rewire`` pairs) from the same fitted start, each against its own FGC from scratch:
ACNR's cost follows the size of the change (the survivors it refines), FGC's the size of the
graph. ACNR refines by its default rule (``--refine-threshold``, ``--max-refine``). All in
one process; prints process CPU times, tracemalloc peaks and the ratios to FGC from scratch,
writes ``benchmarks/results/coarsening.json``. Peaks come from a second run capped at two
solver iterations (FGC: one), since every iteration allocates the same arrays.

    python -m benchmarks coarsening --nodes 100000 --edges 1000000 --k 200
    python -m benchmarks coarsening --nodes 100000 --edges 500000 --k 200 --rules acnr \
        --fgc-outer 10 --fgc-inner 5 --changes 0.003:0.002,0.01:0.0067,0.03:0.02
"""

# ruff: noqa: B023  (closures here are called at once, inside the loop that defines them)

from __future__ import annotations

import argparse
import copy
import json
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp


def csbm(n, m, *, classes=10, d=32, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    u = rng.integers(0, n, int(1.1 * m))
    same = rng.random(u.size) < 0.8
    # intra-class partner: a random node of u's class (sorted-by-class lookup)
    order = np.argsort(y, kind="stable")
    starts = np.searchsorted(y[order], np.arange(classes))
    counts = np.bincount(y, minlength=classes)
    v_same = order[starts[y[u]] + (rng.random(u.size) * counts[y[u]]).astype(np.int64)]
    v = np.where(same, v_same, rng.integers(0, n, u.size))
    ok = u != v
    u, v = u[ok][:m], v[ok][:m]
    A = sp.csr_matrix((np.ones(2 * u.size), (np.r_[u, v], np.r_[v, u])), shape=(n, n))
    A.data[:] = 1.0
    X = rng.normal(size=(classes, d))[y] + rng.normal(size=(n, d))
    return A, X


def _timed(fn):
    """(output, process CPU seconds): CPU time does not flip with machine load as wall time does."""
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def _peak(fn):
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def _event(A, X, p0, delete, rewire, seed):
    """Arrivals p0.. with their edges; with ``delete`` / ``rewire`` also node deletions and
    rewired survivor edges (removed, as many added uniformly among survivors)."""
    from optzoo.coarsening import GraphEvents

    n = A.shape[0]
    sub = sp.triu(A, 1).tocoo()
    new = (sub.row >= p0) | (sub.col >= p0)
    add = np.stack([sub.row[new], sub.col[new]], 1)
    if delete <= 0 and rewire <= 0:
        return GraphEvents(add_nodes=np.arange(p0, n), features=X[p0:], add_edges=add)
    rng = np.random.default_rng(seed + 1)
    dele = rng.choice(p0, size=int(round(delete * p0)), replace=False)
    keep = np.setdiff1d(np.arange(p0), dele)
    s_keep = sp.triu(A[keep][:, keep], 1).tocoo()
    n_rw = int(round(rewire * s_keep.nnz))
    pick = rng.choice(s_keep.nnz, size=n_rw, replace=False)
    rem = np.stack([keep[s_keep.row[pick]], keep[s_keep.col[pick]]], 1)
    u, v = keep[rng.integers(0, keep.size, 2 * n_rw)], keep[rng.integers(0, keep.size, 2 * n_rw)]
    ok = (u != v) & (np.asarray(A[u, v]).ravel() == 0)
    u, v = u[ok][:n_rw], v[ok][:n_rw]
    add = add[~np.isin(add, dele).any(axis=1)]
    return GraphEvents(add_nodes=np.arange(p0, n), features=X[p0:], remove_nodes=dele,
                       remove_edges=rem, add_edges=np.vstack([add, np.stack([u, v], 1)]))


def _changes(args) -> list[tuple[float, float]]:
    if not args.changes:
        return [(args.delete, args.rewire)]
    out = []
    for item in args.changes.split(","):
        d, _, r = item.partition(":")
        out.append((float(d), float(r or 0.0)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks coarsening", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=200)
    ap.add_argument("--add", type=int, default=1000)
    ap.add_argument("--fgc-outer", type=int, default=2)
    ap.add_argument("--fgc-inner", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rules", default="digc,acnr", help="comma list of updates to time")
    ap.add_argument("--delete", type=float, default=0.0, help="fraction of nodes deleted")
    ap.add_argument("--rewire", type=float, default=0.0,
                    help="fraction of the survivors' edges removed (as many added)")
    ap.add_argument("--changes", default="",
                    help="comma list of delete:rewire fractions, one event each (overrides "
                         "--delete/--rewire)")
    ap.add_argument("--refine-threshold", type=float, default=0.1)
    ap.add_argument("--max-refine", type=int, default=None)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "coarsening.json"))
    args = ap.parse_args(argv)

    from optzoo.coarsening import DynamicCoarsener, fgc

    A, X = csbm(args.nodes, args.edges, seed=args.seed)
    p0 = args.nodes - args.add
    opts = dict(n_outer=args.fgc_outer, n_inner=args.fgc_inner)
    dc = DynamicCoarsener(k=args.k, update="digc", certificate=False, fgc_options=opts,
                          weights=dict(omega=0.01, zeta=1.0, alpha=0.01, beta=0.1),
                          refine_threshold=args.refine_threshold, max_refine=args.max_refine,
                          seed=args.seed)
    _, t_fit = _timed(lambda: dc.fit(A[:p0, :p0], X[:p0]))
    res = {"nodes": args.nodes, "edges": int(A.nnz // 2), "k": args.k, "add": args.add,
           "refine_threshold": args.refine_threshold, "max_refine": args.max_refine,
           "time": "process CPU seconds", "fgc_iterations": [args.fgc_outer, args.fgc_inner],
           "fit_seconds": t_fit, "events": []}
    rules = [r for r in args.rules.split(",") if r]
    print(f"graph: {res['nodes']} nodes, {res['edges']} edges, k={args.k}, +{args.add} nodes; "
          f"FGC {args.fgc_outer}x{args.fgc_inner} its (times: process CPU seconds)")
    for delete, rewire in _changes(args):
        ev = _event(A, X, p0, delete, rewire, args.seed)
        row = {"delete": delete, "rewire": rewire}
        for rule in rules:
            twin, twin2 = copy.deepcopy(dc), copy.deepcopy(dc)
            twin.update_rule = twin2.update_rule = rule
            twin2.max_iter = 2  # same arrays every iteration: two give the peak
            _, t = _timed(lambda: twin.update(ev))
            row[f"{rule}_seconds"] = t
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # twin2 stops at max_iter
                row[f"{rule}_peak_mb"] = _peak(lambda: twin2.update(ev))
            row[f"{rule}_iterations"] = twin.state.result.nit
            if rule == "acnr":
                row["acnr_refined"] = int(twin.state.result.extra["refine"].size)
        A_t, X_t = twin.adjacency, twin.features
        _, t = _timed(lambda: fgc(A_t, X_t, twin.state.k, seed=args.seed, **opts))
        row["fgc_scratch_seconds"] = t
        row["fgc_scratch_peak_mb"] = _peak(lambda: fgc(A_t, X_t, twin.state.k, seed=args.seed,
                                                       n_outer=1, n_inner=1))
        row["survivors"] = int(A_t.shape[0] - args.add)
        for rule in rules:
            row[f"{rule}_time_ratio"] = row[f"{rule}_seconds"] / row["fgc_scratch_seconds"]
            row[f"{rule}_memory_ratio"] = row[f"{rule}_peak_mb"] / row["fgc_scratch_peak_mb"]
        res["events"].append(row)
        print(f"event: delete {delete:g}, rewire {rewire:g}; FGC from scratch "
              f"{row['fgc_scratch_seconds']:.2f} s, peak {row['fgc_scratch_peak_mb']:.1f} MiB")
        if "acnr_refined" in row:
            print(f"  ACNR refined {row['acnr_refined']} of {row['survivors']} survivors "
                  f"(threshold {args.refine_threshold:g}, cap {args.max_refine})")
        for rule in rules:
            print(f"  {rule.upper()} update: {row[f'{rule}_seconds']:.3f} s, "
                  f"{row[f'{rule}_iterations']} its (ratio to FGC {row[f'{rule}_time_ratio']:.4f}), "
                  f"peak {row[f'{rule}_peak_mb']:.1f} MiB (ratio {row[f'{rule}_memory_ratio']:.3f})")
        out = Path(args.out)  # written after every event: a long sweep loses no finished row
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, indent=2))
    return 0
