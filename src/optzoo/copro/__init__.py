"""CoPro: constrained projection policy optimization for Pareto-front improvement (ICML 2026).

Fidelity **reconstructed** (only the abstract is public): see ``docs/papers/copro.md`` for
every inferred choice.

* :func:`copro_e_step`: the batched closed-form E-step (q*, duals, per-group status), with an
  optional score for the KL-regularised variant;
* :class:`ParetoArchive`: per-context running feasible archives and the PF-progress flag;
* :func:`copro_loss` / :class:`CoProLoss`: the M-step (weighted MLE + KL trust region);
* :class:`CoProConfig` / :class:`CoProTrainer`: a ``transformers.Trainer`` in TRL's GRPO shape for
  Hugging Face causal LMs (checkpoints resume bit for bit; imports transformers on first use);
* :mod:`optzoo.copro.opamp`: the two-stage Miller op-amp benchmark (numpy; optional ngspice);
* :mod:`optzoo.copro.baselines`: the group-RL advantages CoPro is compared with.
"""

from optzoo.copro.archive import ParetoArchive
from optzoo.copro.estep import (
    STATUSES,
    CoProEStep,
    comparison_statistics,
    copro_e_step,
    dual_objective,
)
from optzoo.copro.loss import CoProLoss, copro_loss, k3_kl, tabular_m_step
from optzoo.copro.opamp import OpAmpSpec, opamp_evaluate

__all__ = [
    "STATUSES",
    "CoProConfig",
    "CoProEStep",
    "CoProLoss",
    "CoProTrainer",
    "OpAmpSpec",
    "ParetoArchive",
    "comparison_statistics",
    "copro_e_step",
    "copro_loss",
    "dual_objective",
    "k3_kl",
    "opamp_evaluate",
    "tabular_m_step",
]

_LAZY = {"CoProConfig", "CoProTrainer", "check_transformers_hooks"}


def __getattr__(name):
    # The Trainer imports transformers: resolved on first use to keep this import light.
    if name in _LAZY:
        from optzoo.copro import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module 'optzoo.copro' has no attribute {name!r}")
