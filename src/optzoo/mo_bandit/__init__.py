"""Divide & Learn (D&L): multi-objective combinatorial optimisation by position-wise bandits.

Singh, Wu, Yang, Rosing, Yu, Ma, ICML 2026, arXiv 2602.11346. Fidelity: official-code
(esha-singh/Divide-and-Learn read, not copied). See docs/papers/mo_bandit.md.
"""

from .asktell import DivideAndLearn
from .dnl import VARIANTS, DLConfig, bandit_regret, divide_and_learn, weight_vectors
from .metrics import hv_ratio, hypervolume, nondominated_mask
from .problems import (
    bi_cvrp,
    bi_knapsack,
    bi_tsp,
    mo_tsp,
    separable_categorical,
    toy_accelerator,
    tri_tsp,
)
from .spaces import Binary, BudgetExhausted, Categorical, MOProblem, Oracle, Permutation

__all__ = [
    "divide_and_learn", "DivideAndLearn", "bandit_regret", "DLConfig", "VARIANTS", "weight_vectors",
    "MOProblem", "Permutation", "Binary", "Categorical", "Oracle", "BudgetExhausted",
    "bi_tsp", "tri_tsp", "mo_tsp", "bi_knapsack", "bi_cvrp", "separable_categorical", "toy_accelerator",
    "hypervolume", "hv_ratio", "nondominated_mask",
]
