"""Densest k-subgraph by diagonal loading and saddle-escaping Frank-Wolfe.

Paper: Q. Lu, N. D. Sidiropoulos, A. Konar, "On Densest k-Subgraph Mining and Diagonal
Loading: Optimization Landscape and Finite-Step Exact Convergence Analysis", ICML 2026
(arXiv 2410.07388). Relaxation :math:`\\max_{x\\in[0,1]^n, 1^\\top x=k} \\tfrac12 x^\\top(A+\\lambda I)x`,
tight for :math:`\\lambda\\ge 1`; SE-FW reaches an integral local maximiser in finitely many
steps. Fidelity: FW, L, start and rounding follow the AAAI predecessor's code; the escape
rule, its trigger, the exact line search and weighted-graph lambda are INFERRED (see
``docs/papers/dks.md``).

>>> from optzoo.dks import densest_k_subgraph
>>> import networkx as nx
>>> densest_k_subgraph(nx.complete_graph(5), 3).fun
3.0

torch and networkx are imported only by the functions that need them.
"""

from optzoo._core.graph import Graph, read_graph
from optzoo.dks._common import NotConvergedWarning
from optzoo.dks.baselines import (
    eigenvector_topk,
    greedy_peeling,
    mip_dks,
    random_restart_fw,
    swap_polish,
    truncated_power,
    upper_bounds,
)
from optzoo.dks.frank_wolfe import frank_wolfe, se_frank_wolfe
from optzoo.dks.relaxation import local_max_test, pairwise_round
from optzoo.dks.solve import METHODS, densest_k_subgraph

__all__ = [
    "densest_k_subgraph",
    "frank_wolfe",
    "se_frank_wolfe",
    "adamw_dks",
    "greedy_peeling",
    "mip_dks",
    "eigenvector_topk",
    "truncated_power",
    "random_restart_fw",
    "upper_bounds",
    "swap_polish",
    "pairwise_round",
    "local_max_test",
    "read_graph",
    "Graph",
    "METHODS",
    "NotConvergedWarning",
]


def __getattr__(name):
    # adamw_dks lives with torch; importing it on first use keeps `import optzoo.dks` light.
    if name == "adamw_dks":
        from optzoo.dks.torch_backend import adamw_dks

        return adamw_dks
    raise AttributeError(f"module 'optzoo.dks' has no attribute {name!r}")
