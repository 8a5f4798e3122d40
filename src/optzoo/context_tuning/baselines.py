"""Baselines through real PEFT: prompt tuning and prefix tuning with non-demonstration
(random) initialisation, and LoRA test-time training (TTT) on leave-one-out ICL tasks.

Every baseline uses the same optimiser as Context Tuning (AdamW, cosine without warm-up,
gradient-norm clip 1.0, one full-batch step per epoch) and the same per-pair loss on y_i.
INFERRED (ours, the paper gives no code): TTT's LoRA placement (PEFT's default target modules
for the architecture), r = 8, alpha = 16, no LoRA dropout; TTT row i = the other k − 1 demos
laid out as S, then ␣x_i␣y_i, loss on y_i; prompt/prefix tuning train on the k pairs alone
(no demonstrations in the context at train or test time), with |S| virtual tokens.
"""

from __future__ import annotations

import copy
import math

from optzoo.context_tuning.core import (
    ContextTuning,
    ContextTuningConfig,
    _mean_nll,
    _pad_rows,
    build_context,
)

__all__ = ["PeftScorer", "peft_soft_prompt", "lora_ttt"]


def _train(model, leaves, rows, *, steps, lr, grad_clip=1.0, callback=None):
    import torch

    ids, att, tgt = _pad_rows(rows)
    losses = []
    if steps == 0:
        return losses
    opt = torch.optim.AdamW(leaves, lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        logits = model(input_ids=ids, attention_mask=att).logits[:, -ids.shape[1]:]
        loss = _mean_nll(logits, ids, tgt).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(leaves, grad_clip)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if callback is not None:
            callback(step, losses[-1])
    return losses


class PeftScorer:
    """Scores rows [(prompt ids, continuation ids)] with a PEFT model (no demonstrations in context)."""

    def __init__(self, model, delimiter, history):
        self.model, self.delimiter, self.history = model, delimiter, history

    def query_ids(self, x):
        import torch

        return torch.cat([self.delimiter, x, self.delimiter])

    def nll(self, rows):
        import torch

        ids, att, tgt = _pad_rows([(torch.cat([p, c]), len(c)) for p, c in rows])
        with torch.no_grad():
            logits = self.model(input_ids=ids, attention_mask=att).logits[:, -ids.shape[1]:]
        return _mean_nll(logits, ids, tgt)


def peft_soft_prompt(model, demos, *, kind="prompt", num_virtual_tokens=None, delimiter_ids=None,
                     steps=200, lr=1e-3, seed=0, callback=None) -> PeftScorer:
    """PEFT prompt tuning (``kind="prompt"``, RANDOM init) or prefix tuning (``kind="prefix"``,
    no reparametrisation) trained on the k pairs ␣x_i␣y_i. ``num_virtual_tokens`` defaults to |S|.

    The base model is not modified (PEFT keeps it frozen; the adapter is a separate module).
    """
    import torch
    from peft import PrefixTuningConfig, PromptTuningConfig, PromptTuningInit, get_peft_model

    from optzoo._core.validation import check_choice

    check_choice("kind", kind, ("prompt", "prefix"), owner="peft_soft_prompt")
    delim = torch.tensor([], dtype=torch.long) if delimiter_ids is None else delimiter_ids
    S, _, pairs = build_context(list(demos), delim)
    n = len(S) if num_virtual_tokens is None else num_virtual_tokens
    if kind == "prompt":
        cfg = PromptTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=n,
                                 prompt_tuning_init=PromptTuningInit.RANDOM)
    else:
        cfg = PrefixTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=n, prefix_projection=False)
    base = copy.deepcopy(model)  # get_peft_model wraps in place; keep the caller's model untouched
    pm = get_peft_model(base, cfg)
    g = torch.Generator().manual_seed(seed)
    leaves = [p for p in pm.parameters() if p.requires_grad]
    with torch.no_grad():
        # PEFT draws its init from the global RNG; redraw from our seeded generator (same law:
        # N(0, 1) for the embedding table both kinds use).
        for p in leaves:
            p.copy_(torch.randn(p.shape, generator=g))
    pm.train(False)
    losses = _train(pm, leaves, pairs, steps=steps, lr=lr, callback=callback)
    return PeftScorer(pm, delim, {"loss": losses, "kind": kind})


def lora_ttt(model, demos, *, delimiter_ids=None, steps=200, lr=1e-3, r=8, seed=0, callback=None):
    """LoRA TTT on leave-one-out ICL tasks; returns the ICL context (T = 0 CT-KV) of the
    adapted model, so it scores queries after all k demonstrations like ICL does."""
    import torch
    from peft import LoraConfig, get_peft_model

    delim = torch.tensor([], dtype=torch.long) if delimiter_ids is None else delimiter_ids
    demos = list(demos)
    rows = []
    for i in range(len(demos)):
        rest = demos[:i] + demos[i + 1:]
        S, _, pairs = build_context(rest, delim)
        p, n_y = build_context([demos[i]], delim)[2][0]
        rows.append((torch.cat([S, p]), n_y))
    base = copy.deepcopy(model)
    pm = get_peft_model(base, LoraConfig(task_type="CAUSAL_LM", r=r, lora_alpha=2 * r, lora_dropout=0.0))
    g = torch.Generator().manual_seed(seed)
    leaves = [p for p in pm.parameters() if p.requires_grad]
    with torch.no_grad():
        for name, p in pm.named_parameters():
            if p.requires_grad and "lora_A" in name:  # Kaiming-uniform law of PEFT's default, seeded
                bound = 1.0 / math.sqrt(p.shape[1])
                p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * bound)
    pm.train(False)
    losses = _train(pm, leaves, rows, steps=steps, lr=lr, callback=callback)
    for p in pm.parameters():
        p.requires_grad_(False)
    ctx = ContextTuning(pm, demos, delimiter_ids=delim, config=ContextTuningConfig(steps=0), seed=seed).fit()
    ctx.history = {"loss": losses, "tokens_per_epoch": sum(len(r) for r, _ in rows)}
    return ctx
