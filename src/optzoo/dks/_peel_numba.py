"""Compiled greedy-peeling kernel (optional: used when numba is installed).

Gives the identical deletion order as the lazy FIFO bucket queue of
:func:`optzoo.dks.baselines.peeling_order`'s Python path, with eager buckets instead: each
degree's bucket is a doubly linked list over the nodes (arrays ``prv``/``nxt`` of size n, plus
``head``/``tail`` per degree). A decrement unlinks the node and appends it at the tail of the
bucket below, which is where the lazy queue's fresh entry sits among that bucket's live
entries; so both pop the same node. O(n + m) time and O(n + max degree) memory, all of it
cache-friendly. Only this module imports numba; ``peeling_order`` imports it on first use.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def peel_kernel(indptr, indices, deg, order0, count):  # pragma: no cover - compiled
    n = deg.size
    maxd = 0
    for v in range(n):
        if deg[v] > maxd:
            maxd = deg[v]
    prv = np.empty(n, np.int64)
    nxt = np.empty(n, np.int64)
    head = np.full(maxd + 1, -1, np.int64)
    tail = np.full(maxd + 1, -1, np.int64)
    for p in range(n):  # initial fill: by degree, lower id first (order0 is a stable argsort)
        v = order0[p]
        d = deg[v]
        prv[v] = tail[d]
        nxt[v] = -1
        if tail[d] == -1:
            head[d] = v
        else:
            nxt[tail[d]] = v
        tail[d] = v
    alive = np.ones(n, np.bool_)
    out = np.empty(count, np.int64)
    cur = 0
    for r in range(count):
        while head[cur] == -1:
            cur += 1
        v = head[cur]  # pop the front of the lowest non-empty bucket
        head[cur] = nxt[v]
        if nxt[v] == -1:
            tail[cur] = -1
        else:
            prv[nxt[v]] = -1
        out[r] = v
        alive[v] = False
        touched = False
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if alive[u]:
                d = deg[u]
                a, b = prv[u], nxt[u]  # unlink u from bucket d
                if a == -1:
                    head[d] = b
                else:
                    nxt[a] = b
                if b == -1:
                    tail[d] = a
                else:
                    prv[b] = a
                d -= 1  # and append it at the tail of bucket d - 1
                deg[u] = d
                prv[u] = tail[d]
                nxt[u] = -1
                if tail[d] == -1:
                    head[d] = u
                else:
                    nxt[tail[d]] = u
                tail[d] = u
                touched = True
        if touched and cur > 0:
            cur -= 1
    return out
