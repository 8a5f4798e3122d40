"""Dynamic graph coarsening (Gupta et al., ICML 2026): FGC, DIGC and ACNR.

Static featured coarsening (:func:`fgc`) initialises; :class:`DynamicCoarsener` then keeps
the coarse graph current under node additions, deletions and edge edits with the DIGC
(growth) or ACNR (adaptive reassignment) update, both sparse. See ``docs/papers/coarsening.md``.
"""

from .baselines import heavy_edge_coarsen, louvain_coarsen, naive_incremental
from .dynamic import CoarseState, DynamicCoarsener, GraphEvents
from .fgc import (
                  coarse_features,
                  epsilon_certificate,
                  fgc,
                  hard_assignment,
                  laplacian,
                  project_rows_simplex,
                  sparsify_rows,
)
from .updates import acnr_update, digc_update

__all__ = [
    "DynamicCoarsener",
    "GraphEvents",
    "CoarseState",
    "fgc",
    "digc_update",
    "acnr_update",
    "epsilon_certificate",
    "coarse_features",
    "hard_assignment",
    "laplacian",
    "project_rows_simplex",
    "sparsify_rows",
    "naive_incremental",
    "heavy_edge_coarsen",
    "louvain_coarsen",
]
