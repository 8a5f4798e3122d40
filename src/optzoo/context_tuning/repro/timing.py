"""Cost versus the number of demonstrations k, on a random tiny Llama.

The cost model (tokens forwarded per epoch, and the work per step) does not depend on the
weights, so the timing curve runs on a random 4-layer Llama of width 128 instead of SmolLM2.
Times are CPU seconds of this process (``time.process_time``), so that other jobs on a shared
machine inflate them less than wall time; the token counts are the library's cost model.
"""

from __future__ import annotations

import time

import numpy as np

from optzoo._core.rng import np_rng

__all__ = ["COST_METHODS", "cost_curve"]

COST_METHODS = ("ctkv", "ctprompt", "ttt")


def cost_curve(ks, steps: int, seed: int, progress=None) -> dict:
    """CPU seconds per training step and tokens per epoch for CT-KV, CT-Prompt and LoRA TTT
    at each k in ``ks``, with log-log slopes of both against k."""
    import torch

    from optzoo.context_tuning import ContextTuning, ContextTuningConfig
    from optzoo.context_tuning.baselines import lora_ttt
    from optzoo.tinylm import tiny_llama

    model = tiny_llama(64, n_layer=4, n_embd=128, n_head=4, n_positions=1024, seed=0).eval()
    rng = np_rng(seed, "context_tuning", "timing")
    delim = torch.tensor([3])
    out: dict = {m: {"time": [], "tokens": []} for m in COST_METHODS}
    for k in ks:
        demos = [(torch.tensor(rng.integers(8, 64, 6)), torch.tensor(rng.integers(8, 64, 2))) for _ in range(k)]
        for name in COST_METHODS:
            t0 = time.process_time()
            if name == "ttt":
                ctx = lora_ttt(model, demos, delimiter_ids=delim, steps=steps, lr=1e-3, seed=seed)
                tok = ctx.history["tokens_per_epoch"]
                # lora_ttt also copies the model and builds the ICL cache: subtract a 0-step run
                t1 = time.process_time()
                lora_ttt(model, demos, delimiter_ids=delim, steps=0, lr=1e-3, seed=seed)
                dt = (t1 - t0) - (time.process_time() - t1)
            else:
                ct = ContextTuning(model, demos, variant="kv" if name == "ctkv" else "prompt",
                                   delimiter_ids=delim, config=ContextTuningConfig(steps=steps, lr=1e-3), seed=seed)
                ct.fit()
                dt, tok = time.process_time() - t0, ct.tokens_per_epoch()
            out[name]["time"].append(max(dt, 1e-6) / steps)
            out[name]["tokens"].append(int(tok))
            if progress is not None:
                progress.advance()
    logk = np.log(np.asarray(ks, dtype=float))
    for name in COST_METHODS:
        out[name]["slope"] = float(np.polyfit(logk, np.log(out[name]["time"]), 1)[0])
        out[name]["token_slope"] = float(np.polyfit(logk, np.log(out[name]["tokens"]), 1)[0])
    out["ks"] = [int(k) for k in ks]
    return out
