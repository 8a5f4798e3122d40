"""SALAAD (arXiv 2602.00942): sparse + low-rank surrogates learned during training by an
augmented Lagrangian, exported at any parameter budget from one training state.

* :class:`SALAAD` / :class:`SALAADConfig`: the wrapper used beside any torch optimizer
  (``loss + sal.penalty()``, ``sal.step()``, ``sal.export(budget)``);
* :func:`svt`, :func:`soft_threshold`, :func:`admm_sweep`, :func:`energy_rank`: the pure core;
* :func:`allocate`, :func:`compress_blocks`, :class:`Compressed`: budget allocation and export;
* baselines: :func:`truncated_svd_compress`, :func:`magnitude_prune_compress`
  (``torch.nn.utils.prune``), :func:`rpca_ialm` / :func:`rpca_compress` (robust PCA);
* :class:`SALAADTrainer`: a ``transformers.Trainer`` subclass (``salaad=SALAADConfig(...)``);
* baseline trained from scratch: :func:`sltrain_model` (SLTrain-style fixed-budget low rank
  + random-support sparse reparameterisation, one run per budget);
* :class:`HiddenMarkovTask` (re-exported from :mod:`optzoo.tinylm.hmm`): the synthetic language
  with an exact entropy floor.
"""

from optzoo.salaad.baselines import (
    SLTrainModel,
    SparseLowRankLinear,
    magnitude_prune_compress,
    rpca_compress,
    rpca_decompose,
    rpca_ialm,
    sltrain_model,
    truncated_svd_compress,
)
from optzoo.salaad.export import Allocation, Compressed, CompressedBlock, allocate, compress_blocks
from optzoo.salaad.prox import BlockState, admm_sweep, energy_rank, soft_threshold, svt
from optzoo.salaad.salaad import DEFAULT_TARGETS, SALAAD, SALAADConfig
from optzoo.tinylm.hmm import HiddenMarkovTask  # the task family lives in optzoo.tinylm

__all__ = [
    "Allocation",
    "BlockState",
    "Compressed",
    "CompressedBlock",
    "DEFAULT_TARGETS",
    "HiddenMarkovTask",
    "SALAAD",
    "SALAADConfig",
    "SALAADTrainer",
    "SLTrainModel",
    "SparseLowRankLinear",
    "admm_sweep",
    "allocate",
    "compress_blocks",
    "energy_rank",
    "magnitude_prune_compress",
    "rpca_compress",
    "rpca_decompose",
    "rpca_ialm",
    "sltrain_model",
    "soft_threshold",
    "svt",
    "truncated_svd_compress",
]

_LAZY = {"SALAADTrainer", "check_transformers_hooks"}


def __getattr__(name):
    # The Trainer adapter imports transformers: resolved on first use to keep this import light.
    if name in _LAZY:
        from optzoo.salaad import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module 'optzoo.salaad' has no attribute {name!r}")
