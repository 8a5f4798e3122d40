"""Tiny GPT-2 and Llama builders and offline word-level tokenizers.

Everything returned here is an ordinary Hugging Face object (``PreTrainedModel``,
``PreTrainedTokenizerFast``), so PEFT, TRL, ``generate`` and ``save_pretrained`` work on it
unchanged. ``transformers`` and ``tokenizers`` are imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence

from optzoo._core.validation import check_int, check_type, fail

__all__ = ["tiny_gpt2", "tiny_llama", "word_tokenizer"]

_SPECIALS = {"pad_token": "<pad>", "bos_token": "<bos>", "unk_token": "<unk>"}


def word_tokenizer(tokens: Sequence[str], *, eos_token: str | None = None):
    """A whitespace word-level ``PreTrainedTokenizerFast`` over ``tokens`` (ids in list order).

    ``tokens`` must start with ``<pad>``, ``<bos>``, ``<unk>``; every other string is one word.
    No BOS is added automatically: callers build sequences explicitly, so token positions are
    exactly what the task generators say.

    >>> tok = word_tokenizer(["<pad>", "<bos>", "<unk>", "L0", "L1"])
    >>> tok("<bos> L1 L0 zz")["input_ids"]
    [1, 4, 3, 2]
    """
    owner = "word_tokenizer"
    tokens = list(check_type("tokens", tokens, (list, tuple), owner=owner, what="a list of str"))
    if tokens[:3] != ["<pad>", "<bos>", "<unk>"]:
        fail("tokens", owner, "a list starting with '<pad>', '<bos>', '<unk>'", tokens[:3])
    if len(set(tokens)) != len(tokens) or not all(isinstance(t, str) and t and " " not in t
                                                    for t in tokens):
        fail("tokens", owner, "a list of distinct non-empty strings without spaces", tokens)
    if eos_token is not None and eos_token not in tokens:
        fail("eos_token", owner, "one of the tokens", eos_token)
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(WordLevel({t: i for i, t in enumerate(tokens)}, unk_token="<unk>"))
    core.pre_tokenizer = WhitespaceSplit()
    extra = {"eos_token": eos_token} if eos_token else {}
    return PreTrainedTokenizerFast(tokenizer_object=core, **_SPECIALS, **extra)


def _common(owner, vocab_size, n_layer, n_embd, n_head, n_positions):
    check_int("vocab_size", vocab_size, owner=owner, low=4)
    check_int("n_layer", n_layer, owner=owner, low=1, high=64)
    check_int("n_embd", n_embd, owner=owner, low=4, high=8192)
    check_int("n_head", n_head, owner=owner, low=1, high=n_embd)
    check_int("n_positions", n_positions, owner=owner, low=2)
    if n_embd % n_head:
        fail("n_head", owner, f"a divisor of n_embd={n_embd}", n_head)


def tiny_gpt2(
    vocab_size: int,
    *,
    n_layer: int = 4,
    n_embd: int = 128,
    n_head: int = 4,
    n_positions: int = 256,
    seed: int = 0,
    bos_token_id: int = 1,
    eos_token_id: int | None = None,
    pad_token_id: int = 0,
):
    """A randomly initialised ``GPT2LMHeadModel`` (dropout 0, tied embeddings), seeded.

    >>> m = tiny_gpt2(16, n_layer=1, n_embd=8, n_head=2, n_positions=8)
    >>> type(m).__name__, m.num_parameters() < 2000
    ('GPT2LMHeadModel', True)
    """
    _common("tiny_gpt2", vocab_size, n_layer, n_embd, n_head, n_positions)
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(
        vocab_size=vocab_size, n_positions=n_positions, n_embd=n_embd, n_layer=n_layer,
        n_head=n_head, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        bos_token_id=bos_token_id, eos_token_id=eos_token_id if eos_token_id is not None
        else bos_token_id, pad_token_id=pad_token_id,
    )
    return _seeded(GPT2LMHeadModel, cfg, seed)


def tiny_llama(
    vocab_size: int,
    *,
    n_layer: int = 4,
    n_embd: int = 128,
    n_head: int = 4,
    n_positions: int = 256,
    intermediate_size: int | None = None,
    seed: int = 0,
    bos_token_id: int = 1,
    eos_token_id: int | None = None,
    pad_token_id: int = 0,
):
    """A randomly initialised ``LlamaForCausalLM`` (RoPE, SwiGLU, RMSNorm), seeded.

    >>> m = tiny_llama(16, n_layer=1, n_embd=8, n_head=2, n_positions=8)
    >>> type(m).__name__
    'LlamaForCausalLM'
    """
    _common("tiny_llama", vocab_size, n_layer, n_embd, n_head, n_positions)
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab_size, hidden_size=n_embd, num_hidden_layers=n_layer,
        num_attention_heads=n_head, num_key_value_heads=n_head,
        intermediate_size=intermediate_size or 4 * n_embd, max_position_embeddings=n_positions,
        tie_word_embeddings=True, bos_token_id=bos_token_id,
        eos_token_id=eos_token_id if eos_token_id is not None else bos_token_id,
        pad_token_id=pad_token_id, attention_dropout=0.0,
    )
    return _seeded(LlamaForCausalLM, cfg, seed)


def _seeded(cls, cfg, seed: int):
    """Build ``cls(cfg)`` with initial weights drawn from ``seed`` without touching global RNG."""
    import torch

    check_int("seed", seed, owner=cls.__name__, low=0)
    # HF initialisers draw from the global generator; fork_rng restores it afterwards.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(cfg)
    return model.eval()
