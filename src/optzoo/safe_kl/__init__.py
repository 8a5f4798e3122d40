"""Safe-KL: improved stochastic optimization of LogSumExp (Gladin, Kroshnin, Zhu,
Dvurechensky; arXiv 2509.24894, ICML 2026). Fidelity: official-code objective
(egorgladin/logsumexp-approx, read, not copied); the OT solver is an INFERRED application.
"""

from optzoo.safe_kl.logsumexp import (
    exact_logsumexp,
    f_rho,
    kappa_rho,
    kl_dro_loss,
    minibatch_logsumexp,
    safe_alpha,
    safe_kl_divergence,
    safe_kl_logsumexp,
    safe_logsumexp,
    sumexp_loss,
)
from optzoo.safe_kl.modules import KLDROLoss, SafeLogSumExp
from optzoo.safe_kl.ot import semi_dual_objective, semi_dual_plan, semidiscrete_eot

__all__ = [
    "safe_kl_logsumexp",
    "safe_logsumexp",
    "safe_alpha",
    "exact_logsumexp",
    "minibatch_logsumexp",
    "sumexp_loss",
    "kl_dro_loss",
    "f_rho",
    "kappa_rho",
    "safe_kl_divergence",
    "SafeLogSumExp",
    "KLDROLoss",
    "semidiscrete_eot",
    "semi_dual_objective",
    "semi_dual_plan",
]
