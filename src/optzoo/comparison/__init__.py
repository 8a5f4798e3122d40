"""Finding stationary points by comparisons (paper 04).

Wang, Zhang, Tao, Zhang, Li, "Finding Stationary Points by Comparisons", ICML 2026,
arXiv 2606.27082. Fidelity: **reconstructed** (abstract only): the oracle and the complexity
claims are the paper's; every algorithmic detail (CMP-TR, the normalized-Hessian routine, the
constants) is ours. The quantum part is a SIMULATION (a query ledger and a small statevector
check). See ``docs/papers/comparison.md``.

>>> import numpy as np
>>> from optzoo.comparison import ComparisonOracle, comparison_minimize
>>> orc = ComparisonOracle(lambda x: float(np.sum(x ** 2)))
>>> res = comparison_minimize(orc, np.ones(3), eps=0.1, L=1.0, method="ngd", max_iter=5)
>>> res.ncomparisons == orc.ncomparisons
True
"""

from optzoo.comparison.baselines import cma_minimize, nelder_mead_minimize
from optzoo.comparison.estimators import (
    GradientEstimate,
    HessianEstimate,
    gradient_cost,
    hessian_cost,
    normalized_gradient,
    normalized_hessian,
    sign_probe,
)
from optzoo.comparison.oracle import ComparisonOracle
from optzoo.comparison.quantum import (
    QuantumQueryLedger,
    fourier_sampling,
    fundamental_probability,
    phase_oracle,
)
from optzoo.comparison.solvers import comparison_minimize, iteration_budget, trust_region_step

__all__ = [
    "ComparisonOracle",
    "GradientEstimate",
    "HessianEstimate",
    "QuantumQueryLedger",
    "cma_minimize",
    "comparison_minimize",
    "fourier_sampling",
    "fundamental_probability",
    "gradient_cost",
    "hessian_cost",
    "iteration_budget",
    "nelder_mead_minimize",
    "normalized_gradient",
    "normalized_hessian",
    "phase_oracle",
    "sign_probe",
    "trust_region_step",
]
