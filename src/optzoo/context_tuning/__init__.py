"""Context Tuning (paper 08): CT-KV and CT-Prompt, few-shot adaptation of a frozen causal LM
by tuning its context, initialised from the demonstrations themselves.

See ``docs/papers/context_tuning.md``. Baselines (PEFT prompt/prefix tuning, LoRA TTT) are in
``optzoo.context_tuning.baselines``.
"""

from optzoo.context_tuning.core import (
    CTKV,
    ContextTuning,
    ContextTuningConfig,
    CTPrompt,
    TunedContext,
    build_context,
    cache_to_list,
    make_cache,
)

__all__ = ["CTKV", "CTPrompt", "ContextTuning", "ContextTuningConfig", "TunedContext",
           "build_context", "cache_to_list", "make_cache"]
