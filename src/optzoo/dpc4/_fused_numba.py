"""Compiled pass for DP-C4's error-feedback step (optional: used when numba is installed).

EF needs three reductions of the per-sample gradients g (b x d): the row norms (for the clip
factors), the clipped sum f @ g, and the unclipped sum 1 @ g (for the error memory). torch
computes each in its own pass over g, which is memory-bound; this kernel computes the squared
row norms and the unclipped column sum in one read, so EF reads g twice, as DP-SGD does
(norms, then the clipped sum). Rows are split into one chunk per thread; each chunk sums its
rows into its own row of ``part``, and a second, cheap loop adds those up. Only this module
imports numba; :mod:`optzoo.dpc4.core` imports it on first use.

:func:`sqnorms_colsum_serial` is the same kernel compiled without ``parallel``, for one thread:
the parallel one starts numba's OpenMP pool (NUMBA_NUM_THREADS threads, all the cores), whose
idle workers spin between calls, so two single-threaded processes on two cores each lost a
core to the other's spinning worker (DP-C4's quick units ran 14x slower at ``--jobs 2``).
"""

from __future__ import annotations

import numba

# reassoc lets the compiler vectorise both reductions; no 'nnan'/'ninf': NaN and inf must reach
# the norms, where the step's finiteness check looks for them
_FLAGS = {"reassoc", "contract", "nsz"}


@numba.njit(fastmath=_FLAGS, cache=True, nogil=True, parallel=True)
def sqnorms_colsum(g, sq, cs, part):  # pragma: no cover - compiled
    """sq[i] = sum_j g[i, j]^2 and cs[j] = sum_i g[i, j], accumulated in g's dtype, with one
    read of g; ``part`` (chunks x d) is scratch, one row per chunk of rows."""
    b, d = g.shape
    n_chunks = part.shape[0]
    for c in numba.prange(n_chunks):
        for j in range(d):
            part[c, j] = 0
        for i in range(c * b // n_chunks, (c + 1) * b // n_chunks):
            s = g.dtype.type(0)
            for j in range(d):
                v = g[i, j]
                s += v * v
                part[c, j] += v
            sq[i] = s
    for j in numba.prange(d):
        s = part.dtype.type(0)
        for c in range(n_chunks):
            s += part[c, j]
        cs[j] = s


# one thread: the same source without parallel (not cached: numba's cache index is the Python
# function's, shared with the parallel dispatcher above)
sqnorms_colsum_serial = numba.njit(fastmath=_FLAGS, nogil=True)(sqnorms_colsum.py_func)
