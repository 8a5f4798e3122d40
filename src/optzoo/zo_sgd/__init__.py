"""Zeroth-order SGD and its empirical NTK (paper 05).

"Learning Dynamics of Zeroth-Order Optimization: A Kernel Perspective", ICML 2026,
arXiv 2605.03373. Fidelity: reconstructed (analysis paper; no official code; every derivation
beyond the abstract is ours, see ``docs/papers/zo_sgd.md``).

* :class:`ZOSGD`: ZO-SGD / MeZO as a ``torch.optim.Optimizer`` (seeded in-place perturbations,
  P directions per step, Gaussian or Rademacher, finite differences or forward-mode JVP),
  with its pure twin :func:`zo_sgd_update`;
* :func:`empirical_ntk`, :func:`zo_entk`, :func:`zo_projections`: the exact and the ZO kernel
  with ``torch.func`` in float64;
* closed forms (:mod:`optzoo.zo_sgd.theory`): variances, the JL fidelity bound in P and the
  number of outputs, the parameter-space laws, the one-step prediction.

Everything here imports torch; ``import optzoo`` does not import this package.
"""

from optzoo.zo_sgd.kernel import (
    ZOProjections,
    empirical_ntk,
    label_logits,
    last_token_logits,
    zo_entk,
    zo_projections,
)
from optzoo.zo_sgd.optim import DISTRIBUTIONS, ZOSGD, zo_directions, zo_sgd_update
from optzoo.zo_sgd.theory import (
    effective_rank,
    expected_gradient_cosine,
    expected_relative_error,
    gradient_error,
    jl_entry_bound,
    jl_perturbations_needed,
    one_step_prediction,
    zo_entk_variance,
)

__all__ = [
    "DISTRIBUTIONS",
    "ZOProjections",
    "ZOSGD",
    "effective_rank",
    "empirical_ntk",
    "expected_gradient_cosine",
    "expected_relative_error",
    "gradient_error",
    "jl_entry_bound",
    "jl_perturbations_needed",
    "label_logits",
    "last_token_logits",
    "one_step_prediction",
    "zo_directions",
    "zo_entk",
    "zo_entk_variance",
    "zo_projections",
    "zo_sgd_update",
]
