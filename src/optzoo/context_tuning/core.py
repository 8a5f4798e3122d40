"""Context Tuning (Lu, Teehan, Yang, Ren; arXiv 2507.04221): CT-KV and CT-Prompt.

A frozen causal LM p_θ and k demonstrations D = {(x_i, y_i)}. The context is
S = x_1 ␣ y_1 ␣ x_2 ␣ y_2 … ␣ x_k ␣ y_k (␣ = the delimiter tokens); pair i owns the span
[s_i, s_{i+1}) of S, including its leading delimiter for i > 1.

CT-KV trains Φ = {(K^ℓ, V^ℓ)}_ℓ, initialised to the frozen model's KV cache on S; CT-Prompt
trains a soft prompt P ∈ R^{|S|×d}, initialised to the token embeddings E[S]. Both minimise

    L(Φ) = (1/k) Σ_i ℓ_i,   ℓ_i = −(1/|y_i|) Σ_t log p_θ(y_{i,t} | Φ ⊙ m_i, ␣x_i␣, y_{i,<t})

with the leave-one-out mask m_i[j] = 0 for j in pair i's span (1 elsewhere) times token dropout
b_j ~ Bernoulli(1 − p), drawn afresh per pair and step. Pair tokens take positions |S|, |S|+1, …
One AdamW step per epoch over the full batch of k pairs, gradient-norm clip, cosine schedule
without warm-up. At inference the whole tuned context is used with the full mask.

Fidelity: CT-KV follows the official code (layout, masks, positions, loss, optimiser, schedule).
INFERRED (ours): CT-Prompt uses the same LOO and dropout masks on its prompt positions; fp32
instead of bf16 autocast; token dropout is drawn independently for each pair row.
"""

from __future__ import annotations

import inspect
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from optzoo._core.rng import torch_generator
from optzoo._core.validation import check_bool, check_choice, check_int, check_real, fail

__all__ = ["ContextTuning", "ContextTuningConfig", "TunedContext", "CTKV", "CTPrompt",
           "build_context", "make_cache", "cache_to_list"]

_OWNER = "ContextTuning"


@dataclass(frozen=True)
class ContextTuningConfig:
    """Optimisation settings; the defaults are the official code's (T = 200, lr 1e-3, p = 0.05).

    ``steps=0`` is allowed on purpose: ``fit()`` then returns the untuned context, i.e. plain
    in-context learning over the demonstrations (the paper's ICL baseline).
    """

    steps: int = 200
    lr: float = 1e-3
    token_dropout: float = 0.05
    leave_one_out: bool = True
    grad_clip: float = 1.0
    weight_decay: float = 0.0

    def __post_init__(self):
        check_int("steps", self.steps, low=0, owner="ContextTuningConfig")
        check_real("lr", self.lr, low=0.0, closed="neither", owner="ContextTuningConfig")
        check_real("token_dropout", self.token_dropout, low=0.0, high=1.0, closed="left",
                   owner="ContextTuningConfig")
        check_bool("leave_one_out", self.leave_one_out, owner="ContextTuningConfig")
        check_real("grad_clip", self.grad_clip, low=0.0, closed="neither", owner="ContextTuningConfig")
        check_real("weight_decay", self.weight_decay, low=0.0, owner="ContextTuningConfig")


# ----------------------------------------------------------------------------- cache helpers
def cache_to_list(cache) -> list[tuple]:
    """Per-layer (K, V) tensors of a transformers cache (5.x ``layers``, 4.4x ``key_cache``, tuples)."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache, strict=True))
    return [(k, v) for k, v in cache]


def make_cache(kv: list[tuple], batch: int = 1):
    """A NEW ``DynamicCache`` holding ``kv`` expanded to ``batch`` rows.

    HF caches grow in place during a forward pass, so every forward needs a fresh one; the
    expand keeps the graph to the trainable tensors.
    """
    from transformers import DynamicCache

    cache = DynamicCache()
    for i, (k, v) in enumerate(kv):
        cache.update(k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1), i)
    return cache


def _cache_kw(model) -> str:
    params = inspect.signature(model.forward).parameters
    # transformers >= 5.2x renames past_key_values -> cache (the old name warns); 4.4x has only the old
    return "cache" if "cache" in params else "past_key_values"


def _as_ids(t, name, device, owner=_OWNER):
    import torch

    if not isinstance(t, torch.Tensor):
        fail(name, owner, "a 1-D int64 torch.Tensor of token ids", type(t).__name__, exc=TypeError)
    if t.dim() != 1 or t.dtype != torch.long:
        fail(name, owner, "a 1-D int64 torch.Tensor of token ids",
             f"tensor of shape {tuple(t.shape)} and dtype {t.dtype}")
    if t.numel() == 0:
        fail(name, owner, "a non-empty tensor of token ids", "an empty tensor")
    return t.to(device)


def build_context(demos, delimiter):
    """S, pair spans and the training pairs ␣x_i␣y_i (token tensors), as in the official layout.

    Returns ``(S, spans, pairs, target_lens)``; ``pairs[i]`` is (input ids, number of y tokens).
    """
    import torch

    parts, spans, pairs, start = [], [], [], 0
    for i, (x, y) in enumerate(demos):
        seg = torch.cat([x, delimiter, y]) if i == 0 else torch.cat([delimiter, x, delimiter, y])
        parts.append(seg)
        spans.append((start, start + len(seg)))
        start += len(seg)
        pairs.append((torch.cat([delimiter, x, delimiter, y]), len(y)))
    return torch.cat(parts), spans, pairs


def _pad_rows(rows, pad_id=0):
    """Right-padded ids, attention mask and a mask of the scored (target) positions."""
    import torch

    n = max(len(r) for r, _ in rows)
    ids = torch.full((len(rows), n), pad_id, dtype=torch.long)
    att = torch.zeros(len(rows), n, dtype=torch.long)
    tgt = torch.zeros(len(rows), n, dtype=torch.bool)
    for b, (r, n_tgt) in enumerate(rows):
        ids[b, : len(r)] = r
        att[b, : len(r)] = 1
        tgt[b, len(r) - n_tgt: len(r)] = True
    return ids, att, tgt


def _mean_nll(logits, ids, tgt):
    """Per-row mean NLL of the target tokens (logits at t predict token t+1)."""
    import torch

    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    tok = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)
    m = tgt[:, 1:].to(tok.dtype)
    return -(tok * m).sum(1) / m.sum(1)


# ----------------------------------------------------------------------------- tuned context
class TunedContext:
    """A (tuned) context for a frozen model: score, generate, save, load.

    ``variant="kv"``: ``params`` is a list of per-layer (K, V) of shape [1, H_kv, |S|, d_h];
    ``variant="prompt"``: a [|S|, d_model] soft prompt. ``context_ids`` is S (kept so that
    ``generate`` can hand HF ``input_ids = S ⊕ query`` with the cache).
    """

    def __init__(self, model, variant, params, context_ids, delimiter, history=None):
        self.model, self.variant, self.params = model, variant, params
        self.context_ids, self.delimiter = context_ids, delimiter
        self.history = history or {}

    @property
    def length(self) -> int:
        return int(self.context_ids.numel())

    def as_cache(self, batch: int = 1):
        """A fresh transformers ``DynamicCache`` of the tuned prefix (CT-KV only)."""
        if self.variant != "kv":
            fail("variant", "TunedContext.as_cache", "'kv' (a soft prompt has no cache)", self.variant)
        return make_cache([(k.detach(), v.detach()) for k, v in self.params], batch)

    def _forward(self, ids, att, prefix_mask=None, kv=None, prompt=None):
        """Logits of ``ids`` (batch, L) after the prefix, pair positions starting at |S|."""
        import torch

        model, n, B = self.model, self.length, ids.shape[0]
        pm = torch.ones(B, n, dtype=att.dtype) if prefix_mask is None else prefix_mask
        full = torch.cat([pm.to(att.dtype), att], 1).to(ids.device)
        if self.variant == "kv":
            kv = self.params if kv is None else kv
            pos = (n + torch.arange(ids.shape[1], device=ids.device)).expand(B, -1)
            out = model(input_ids=ids, attention_mask=full, position_ids=pos, use_cache=True,
                        **{_cache_kw(model): make_cache(kv, B)})
            return out.logits
        prompt = self.params if prompt is None else prompt
        emb = model.get_input_embeddings()(ids)
        x = torch.cat([prompt.unsqueeze(0).expand(B, -1, -1).to(emb.dtype), emb], 1)
        pos = torch.arange(x.shape[1], device=ids.device).expand(B, -1)
        out = model(inputs_embeds=x, attention_mask=full, position_ids=pos, use_cache=False)
        return out.logits[:, n:]

    def nll(self, rows):
        """Mean NLL of each row's continuation: ``rows`` = [(prompt ids, continuation ids), …].

        The prompt is taken as is (use ``query_ids`` to add the delimiters of the layout).
        """
        import torch

        packed = [(torch.cat([p, c]), len(c)) for p, c in rows]
        ids, att, tgt = _pad_rows(packed)
        with torch.no_grad():
            logits = self._forward(ids, att)
        # the first continuation token is predicted from the last prompt token, which is inside ids
        return _mean_nll(logits, ids, tgt)

    def query_ids(self, x):
        """␣x␣: the query laid out as a pair's input."""
        import torch

        return torch.cat([self.delimiter, x, self.delimiter])

    def _ids(self, t, name, owner):
        """Token ids checked against the model's vocabulary (an out-of-range id would raise a
        bare IndexError inside the embedding)."""
        t = _as_ids(t, name, "cpu", owner)
        vocab = self.model.get_input_embeddings().num_embeddings
        bad = (t < 0) | (t >= vocab)
        if bool(bad.any()):
            fail(name, owner, f"token ids in [0, {vocab}) (the model's vocabulary; "
                 "tokenizer/model mismatch?)", int(t[bad][0]))
        return t

    def score(self, query, options):
        """Mean NLL of each option after the query (lower is better), as a 1-D tensor."""
        import torch

        owner = "TunedContext.score"
        q = self._ids(query, "query", owner)
        if isinstance(options, (str, bytes, torch.Tensor)) or not hasattr(options, "__iter__"):
            fail("options", owner, "a non-empty list of 1-D token-id tensors",
                 type(options).__name__, exc=TypeError)
        options = list(options)
        if not options:
            fail("options", owner, "a non-empty list of 1-D token-id tensors", options)
        opts = [self._ids(o, f"options[{i}]", owner) for i, o in enumerate(options)]
        return self.nll([(self.query_ids(q), o) for o in opts])

    def predict(self, query, options) -> int:
        """Index of the option with the lowest length-normalised NLL."""
        return int(self.score(query, options).argmin())

    def generate(self, query, **kwargs):
        """``model.generate`` after the tuned context; returns only the new tokens."""
        import torch

        if "max_new_tokens" in kwargs:
            check_int("max_new_tokens", kwargs["max_new_tokens"], low=1, owner="TunedContext.generate")
        q = self.query_ids(self._ids(query, "query", "TunedContext.generate"))[None]
        if self.variant == "kv":
            ids = torch.cat([self.context_ids[None], q], 1)
            out = self.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                      past_key_values=self.as_cache(), **kwargs)
            return out[0, ids.shape[1]:]
        emb = torch.cat([self.params.detach()[None], self.model.get_input_embeddings()(q)], 1)
        out = self.model.generate(inputs_embeds=emb, attention_mask=torch.ones(emb.shape[:2], dtype=torch.long),
                                  **kwargs)
        return out[0]

    def save(self, path) -> Path:
        """Write the tuned tensors and S to a safetensors file (metadata: variant, delimiter)."""
        from safetensors.torch import save_file

        path = Path(path)
        if not path.parent.is_dir():
            fail("path", "TunedContext.save", "a file path in an existing directory", str(path))
        t = {"context_ids": self.context_ids, "delimiter": self.delimiter}
        if self.variant == "kv":
            for i, (k, v) in enumerate(self.params):
                t[f"k.{i}"], t[f"v.{i}"] = k.detach().contiguous(), v.detach().contiguous()
        else:
            t["prompt"] = self.params.detach().contiguous()
        save_file(t, str(path), metadata={"variant": self.variant, "history": json.dumps(self.history)})
        return path

    @classmethod
    def load(cls, path, model) -> TunedContext:
        """Read a context written by ``save`` for use with ``model`` (the same frozen model)."""
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata()
            t = {k: f.get_tensor(k) for k in f.keys()}
        variant = meta["variant"]
        if variant == "kv":
            n = sum(1 for k in t if k.startswith("k."))
            if n != model.config.num_hidden_layers:
                fail("model", "TunedContext.load", f"a model with {n} layers (as saved)",
                     model.config.num_hidden_layers)
            params = [(t[f"k.{i}"], t[f"v.{i}"]) for i in range(n)]
        else:
            params = t["prompt"]
        return cls(model, variant, params, t["context_ids"], t["delimiter"], json.loads(meta["history"]))


# ----------------------------------------------------------------------------- trainer
class ContextTuning:
    """Tune the context of a frozen HF causal LM from its own demonstrations.

    ``demos``: [(x_ids, y_ids), …] of 1-D int64 tensors; ``delimiter_ids``: the separator
    tokens (the official code uses ``tokenizer(" ")``). ``fit()`` returns a ``TunedContext``.

    >>> import torch
    >>> from optzoo.tinylm import tiny_llama
    >>> m = tiny_llama(32, n_layer=1, n_embd=16, n_head=2, n_positions=64)
    >>> d = [(torch.tensor([5, 6]), torch.tensor([7])), (torch.tensor([8, 9]), torch.tensor([10]))]
    >>> ctx = ContextTuning(m, d, delimiter_ids=torch.tensor([3]),
    ...                     config=ContextTuningConfig(steps=2), seed=0).fit()
    >>> ctx.score(torch.tensor([5, 9]), [torch.tensor([7]), torch.tensor([10])]).shape
    torch.Size([2])
    """

    def __init__(self, model, demos, *, variant="kv", delimiter_ids=None, config=None, seed=0):
        import torch

        check_choice("variant", variant, ("kv", "prompt"), owner=_OWNER)
        cfg = ContextTuningConfig() if config is None else config
        if not isinstance(cfg, ContextTuningConfig):
            fail("config", _OWNER, "a ContextTuningConfig", type(cfg).__name__, exc=TypeError)
        check_int("seed", seed, owner=_OWNER, low=0)
        if not hasattr(model, "forward") or not hasattr(model, "config"):
            fail("model", _OWNER, "a Hugging Face causal LM", type(model).__name__, exc=TypeError)
        if getattr(model.config, "is_encoder_decoder", False):
            fail("model", _OWNER, "a decoder-only causal LM (encoder-decoder is unsupported)",
                 type(model).__name__)
        params = inspect.signature(model.forward).parameters
        has_var_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())
        for need in ("attention_mask", "position_ids"):
            if need not in params and not has_var_kw:
                fail("model", _OWNER, f"a causal LM whose forward accepts {need!r}", type(model).__name__)
        if not isinstance(demos, (list, tuple)) or len(demos) == 0:
            fail("demos", _OWNER, "a non-empty list of (x_ids, y_ids) pairs",
                 demos if not isinstance(demos, (list, tuple)) else "[]")
        if cfg.leave_one_out and len(demos) < 2:
            fail("demos", _OWNER, "at least 2 demonstrations when leave_one_out is on", len(demos))
        dev = next(model.parameters()).device
        if next(model.parameters()).dtype == torch.float16:
            fail("model", _OWNER, "a model in float32, bfloat16 or float64 (tuning in float16 "
                 "overflows; call model.float() first)", "a float16 model")
        vocab = model.get_input_embeddings().num_embeddings
        clean = []
        for i, d in enumerate(demos):
            if not isinstance(d, (tuple, list)) or len(d) != 2:
                fail(f"demos[{i}]", _OWNER, "an (x_ids, y_ids) pair", d, exc=TypeError)
            x, y = _as_ids(d[0], f"demos[{i}][0]", dev), _as_ids(d[1], f"demos[{i}][1]", dev)
            clean.append((x, y))
        delim = torch.tensor([], dtype=torch.long) if delimiter_ids is None else delimiter_ids
        if delim.numel():
            delim = _as_ids(delim, "delimiter_ids", dev)
        self.model, self.variant, self.config, self.seed = model, variant, cfg, seed
        self.delimiter = delim
        self.context_ids, self.spans, self.pairs = build_context(clean, delim)
        everything = torch.cat([self.context_ids] + [p for p, _ in self.pairs])
        bad = (everything < 0) | (everything >= vocab)
        if bool(bad.any()):
            fail("demos", _OWNER, f"token ids in [0, {vocab}) (the model's vocabulary; "
                 "tokenizer/model mismatch?)", int(everything[bad][0]))
        max_pos = getattr(model.config, "max_position_embeddings", None) or getattr(
            model.config, "n_positions", None)
        need = len(self.context_ids) + max(len(p) for p, _ in self.pairs)
        if max_pos is not None and need > max_pos:
            fail("demos", _OWNER, f"short enough that |S| + longest pair <= {max_pos} positions", need)

    # tokens forwarded per epoch (the cost model of the paper's claim (c))
    def tokens_per_epoch(self) -> int:
        pair = sum(len(p) for p, _ in self.pairs)
        return pair if self.variant == "kv" else pair + len(self.pairs) * len(self.context_ids)

    def initial_context(self) -> TunedContext:
        """The untrained context: the KV cache of S (CT-KV) or its embeddings E[S] (CT-Prompt)."""
        import torch

        with torch.no_grad():
            if self.variant == "kv":
                ids = self.context_ids[None]
                out = self.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True)
                params = [(k.detach().clone(), v.detach().clone()) for k, v in cache_to_list(out.past_key_values)]
            else:
                params = self.model.get_input_embeddings()(self.context_ids).detach().clone()
        return TunedContext(self.model, self.variant, params, self.context_ids, self.delimiter)

    def _masks(self, gen):
        import torch

        k, n, cfg = len(self.pairs), len(self.context_ids), self.config
        m = torch.ones(k, n)
        if cfg.leave_one_out:
            for i, (a, b) in enumerate(self.spans):
                m[i, a:b] = 0
        if cfg.token_dropout > 0:
            m = m * (torch.rand(k, n, generator=gen) >= cfg.token_dropout)
        return m.long()

    def loss(self, ctx: TunedContext, gen=None):
        """L = mean over pairs of the per-pair mean NLL of y_i (with LOO and dropout masks)."""
        ids, att, tgt = _pad_rows([(p, n) for p, n in self.pairs])
        logits = ctx._forward(ids, att, prefix_mask=self._masks(gen))
        return _mean_nll(logits, ids, tgt).mean()

    def fit(self, *, callback=None) -> TunedContext:
        """Run T AdamW steps on the context (model weights frozen) and return it.

        ``callback(step, loss)`` is called after every step. History: ``ctx.history["loss"]``.
        """
        import torch

        cfg, ctx = self.config, self.initial_context()
        leaves = ([t for kv in ctx.params for t in kv] if self.variant == "kv" else [ctx.params])
        for t in leaves:
            t.requires_grad_(True)
        flags = [p.requires_grad for p in self.model.parameters()]
        for p in self.model.parameters():
            p.requires_grad_(False)
        gen = torch_generator(self.seed, "context_tuning", "dropout")
        losses = []
        try:
            if cfg.steps > 0:
                opt = torch.optim.AdamW(leaves, lr=cfg.lr, weight_decay=cfg.weight_decay)
                sched = torch.optim.lr_scheduler.LambdaLR(
                    opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, cfg.steps) / cfg.steps)))
            for step in range(cfg.steps):
                opt.zero_grad(set_to_none=True)
                loss = self.loss(ctx, gen)
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"ContextTuning loss became {loss.item()} at step {step}.")
                loss.backward()
                torch.nn.utils.clip_grad_norm_(leaves, cfg.grad_clip)
                opt.step()
                sched.step()
                losses.append(float(loss.detach()))
                if callback is not None:
                    callback(step, losses[-1])
        finally:
            for p, f in zip(self.model.parameters(), flags, strict=True):
                p.requires_grad_(f)
            for t in leaves:
                t.requires_grad_(False)
        ctx.history = {"loss": losses, "config": asdict(cfg), "tokens_per_epoch": self.tokens_per_epoch()}
        return ctx


def CTKV(model, demos, **kwargs) -> ContextTuning:
    """``ContextTuning(model, demos, variant="kv", ...)``."""
    return ContextTuning(model, demos, variant="kv", **kwargs)


def CTPrompt(model, demos, **kwargs) -> ContextTuning:
    """``ContextTuning(model, demos, variant="prompt", ...)``."""
    return ContextTuning(model, demos, variant="prompt", **kwargs)
