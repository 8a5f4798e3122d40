"""SALAAD (arXiv 2602.00942): sparse + low-rank surrogates learned during training by an
augmented Lagrangian, exported at any parameter budget from one training state.

* :class:`SALAAD` / :class:`SALAADConfig`: the wrapper used beside any torch optimizer
  (``loss + sal.penalty()``, ``sal.step()``, ``sal.export(budget)``);
* :func:`svt`, :func:`soft_threshold`, :func:`admm_sweep`, :func:`energy_rank`: the pure core;
* :func:`allocate`, :func:`compress_blocks`, :class:`Compressed`: budget allocation and export;
* baselines: :func:`truncated_svd_compress`, :func:`magnitude_prune_compress`
  (``torch.nn.utils.prune``), :func:`rpca_ialm` / :func:`rpca_compress` (robust PCA);
* :class:`HiddenMarkovTask`: the synthetic language with an exact entropy floor.
"""

from optzoo.salaad.baselines import (
    magnitude_prune_compress,
    rpca_compress,
    rpca_decompose,
    rpca_ialm,
    truncated_svd_compress,
)
from optzoo.salaad.export import Allocation, Compressed, CompressedBlock, allocate, compress_blocks
from optzoo.salaad.prox import BlockState, admm_sweep, energy_rank, soft_threshold, svt
from optzoo.salaad.salaad import DEFAULT_TARGETS, SALAAD, SALAADConfig
from optzoo.salaad.tasks import HiddenMarkovTask

__all__ = [
    "Allocation",
    "BlockState",
    "Compressed",
    "CompressedBlock",
    "DEFAULT_TARGETS",
    "HiddenMarkovTask",
    "SALAAD",
    "SALAADConfig",
    "admm_sweep",
    "allocate",
    "compress_blocks",
    "energy_rank",
    "magnitude_prune_compress",
    "rpca_compress",
    "rpca_decompose",
    "rpca_ialm",
    "soft_threshold",
    "svt",
    "truncated_svd_compress",
]
