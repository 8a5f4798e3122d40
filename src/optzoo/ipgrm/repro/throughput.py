"""E2: reward latency per GRPO step with real decoding compute, and a cost model.

Three pipelines score B prompts x G responses with a causal transformer, greedy decoding with
the KV cache, fixed lengths (EOS ignored): |Q|, |R| in the prompt, L_P principle tokens and
L_J judgment tokens (spec defaults 64 / 192 / 96 / 128):

* coupled:  one batch of B*G rows: prefill(Q+R), decode(L_P + L_J);
* naive:    B*G x [prefill(Q), decode(L_P)], then B*G x [prefill(Q+P+R), decode(L_J)];
* cached:   B x [prefill(Q), decode(L_P)], then B*G x [prefill(Q+P0+R), decode(L_J)].

Cost model (INFERRED): each forward pass of b rows, t new tokens each, over a cache of c
tokens costs ``b*t*(2*N + 2*d*V) + 4*b*t*(c + t/2)*d*n_layer`` FLOPs (N: non-embedding
weights; the lm head runs on every position, as in HF); time = a*FLOPs + b*passes +
c*decoded row-tokens (per-step overheads of small-batch decoding), (a, b, c) >= 0 fitted by
least squares on the two smallest group sizes and checked on the larger ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from optzoo._core.rng import torch_generator
from optzoo._core.validation import check_choice, check_int

__all__ = ["PIPELINES", "Lengths", "build_timing_model", "expected_counts", "fit_cost_model", "pipeline_cost",
           "run_pipeline"]

PIPELINES = ("coupled", "naive", "cached")


@dataclass(frozen=True)
class Lengths:
    q: int = 64
    r: int = 192
    p: int = 96
    j: int = 128


def build_timing_model(*, n_layer: int = 4, n_embd: int = 256, n_head: int = 4, vocab: int = 512,
                       n_positions: int = 512, seed: int = 0):
    """A random-init ``optzoo.tinylm`` GPT-2 in eval mode (the spec's E2 judge)."""
    from optzoo.tinylm import tiny_gpt2

    return tiny_gpt2(vocab, n_layer=n_layer, n_embd=n_embd, n_head=n_head, n_positions=n_positions,
                     seed=seed).eval()


def _prefill(model, ids, cache, log):
    """One forward pass over a chunk (rows x t) on top of ``cache``; returns (next token, cache)."""
    import torch

    past = 0 if cache is None else cache.get_seq_length()
    with torch.no_grad():
        out = model(input_ids=ids, cache=cache, use_cache=True)
    log.append((ids.shape[0], ids.shape[1], past, 1))
    return out.logits[:, -1].argmax(-1, keepdim=True), out.cache


def _greedy(model, nxt, cache, n_new: int, log):
    """Greedy decoding of ``n_new`` tokens (the first is ``nxt``) with the KV cache; EOS ignored."""
    import torch

    toks = [nxt]
    log.append((nxt.shape[0], 0, 0, 2))  # bookkeeping: the first token came from the prefill pass
    with torch.no_grad():
        for _ in range(n_new - 1):
            past = cache.get_seq_length()
            out = model(input_ids=nxt, cache=cache, use_cache=True)
            log.append((nxt.shape[0], 1, past, 0))
            cache, nxt = out.cache, out.logits[:, -1].argmax(-1, keepdim=True)
            toks.append(nxt)
    return torch.cat(toks, 1), cache


def _expand(nxt, cache, G):
    cache.batch_repeat_interleave(G)
    return nxt.repeat_interleave(G, 0), cache


def run_pipeline(kind: str, model, *, n_prompts: int, group: int, lengths: Lengths = Lengths(),
                 seed: int = 0, prefix_sharing: bool = False) -> dict:
    """Run one reward pipeline for one GRPO step; returns wall seconds, CPU seconds of this
    process (``time.process_time``: what the judged latency claims use, since it does not count
    time spent waiting for a core on a loaded machine) and the forward-pass log (rows, new
    tokens, cache length) from which token counts and the cost model follow.

    ``prefix_sharing=True`` (as vLLM's prefix cache would) prefills the shared question once
    per prompt and reuses its KV cache for the G rows; for ``cached`` the Stage-1 cache
    (Q + P0) becomes the Stage-2 prefix of the whole group.
    """
    import torch

    check_choice("kind", kind, PIPELINES, owner="run_pipeline")
    B = check_int("n_prompts", n_prompts, owner="run_pipeline", low=1)
    G = check_int("group", group, owner="run_pipeline", low=1)
    V = model.config.vocab_size
    g = torch_generator(seed, "e2", B, G)
    q = torch.randint(2, V, (B, lengths.q), generator=g)
    r = torch.randint(2, V, (B * G, lengths.r), generator=g)
    q_rows = q.repeat_interleave(G, 0)
    log: list = []
    c0, t0 = time.process_time(), time.perf_counter()
    if not prefix_sharing:
        if kind == "coupled":
            _greedy(model, *_prefill(model, torch.cat([q_rows, r], 1), None, log), lengths.p + lengths.j, log)
        elif kind == "naive":
            p, _ = _greedy(model, *_prefill(model, q_rows, None, log), lengths.p, log)
            _greedy(model, *_prefill(model, torch.cat([q_rows, p, r], 1), None, log), lengths.j, log)
        else:
            p0, _ = _greedy(model, *_prefill(model, q, None, log), lengths.p, log)
            p0 = p0.repeat_interleave(G, 0)
            _greedy(model, *_prefill(model, torch.cat([q_rows, p0, r], 1), None, log), lengths.j, log)
    else:
        if kind == "coupled":
            _, cache = _prefill(model, q, None, log)
            cache.batch_repeat_interleave(G)
            _greedy(model, *_prefill(model, r, cache, log), lengths.p + lengths.j, log)
        elif kind == "naive":
            p, _ = _greedy(model, *_expand(*_prefill(model, q, None, log), G), lengths.p, log)
            _, cache = _prefill(model, q, None, log)
            cache.batch_repeat_interleave(G)
            _greedy(model, *_prefill(model, torch.cat([p, r], 1), cache, log), lengths.j, log)
        else:
            p0, cache = _greedy(model, *_prefill(model, q, None, log), lengths.p, log)
            cache.batch_repeat_interleave(G)
            last = p0[:, -1:].repeat_interleave(G, 0)  # its KV is not in the cache yet
            _greedy(model, *_prefill(model, torch.cat([last, r], 1), cache, log), lengths.j, log)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    passes = [x[:3] for x in log if x[3] != 2]
    return {"seconds": wall, "cpu_seconds": cpu, "log": passes, "passes": len(passes),
            "prefill_tokens": sum(b * t for b, t, c, f in log if f == 1),
            "decoded_tokens": sum(b for b, t, c, f in log if f != 1)}


def pipeline_cost(log, *, n_layer: int, d: int, vocab: int, n_params: int) -> float:
    """FLOPs of a forward-pass log under the cost model of the module docstring."""
    a = np.asarray(log, dtype=float)
    b, t, c = a[:, 0], a[:, 1], a[:, 2]
    return float(np.sum(b * t * (2 * n_params + 2 * d * vocab) + 4 * b * t * (c + t / 2) * d * n_layer))


def fit_cost_model(features, seconds) -> list[float]:
    """Non-negative least squares of time on cost features, e.g. (FLOPs, forward passes,
    decoded row-tokens): compute, per-pass overhead and per-row decode overhead."""
    from scipy.optimize import nnls

    X = np.asarray(features, float)
    scale = X.max(0)
    scale[scale == 0] = 1.0
    coef, _ = nnls(X / scale, np.asarray(seconds, float))
    return [float(c) for c in coef / scale]


def expected_counts(kind: str, B: int, G: int, L: Lengths, *, prefix_sharing: bool = False) -> dict:
    """Closed-form call counts and token counts of a pipeline (checked against the log)."""
    rows = B * G
    if prefix_sharing:
        pre = {"coupled": B * L.q + rows * L.r, "naive": 2 * B * L.q + rows * (L.p + L.r),
               "cached": B * L.q + rows * (1 + L.r)}[kind]
        dec = B * L.p + rows * L.j if kind == "cached" else rows * (L.p + L.j)
        return {"prefill_tokens": pre, "decoded_tokens": dec}
    if kind == "coupled":
        return {"stage1_rows": 0, "long_rows": rows, "prefill_tokens": rows * (L.q + L.r),
                "decoded_tokens": rows * (L.p + L.j)}
    if kind == "naive":
        return {"stage1_rows": rows, "long_rows": rows,
                "prefill_tokens": rows * L.q + rows * (L.q + L.p + L.r), "decoded_tokens": rows * (L.p + L.j)}
    return {"stage1_rows": B, "long_rows": rows, "prefill_tokens": B * L.q + rows * (L.q + L.p + L.r),
            "decoded_tokens": B * L.p + rows * L.j}
