"""Builders and tokenizers: ordinary HF objects, seeded, saved and loaded together."""

import pytest
import torch

from optzoo.tinylm import tiny_gpt2, tiny_llama, word_tokenizer


def test_builders_return_pretrained_models_and_are_seeded():
    from transformers import PreTrainedModel

    for build in (tiny_gpt2, tiny_llama):
        a = build(20, n_layer=1, n_embd=16, n_head=2, n_positions=16, seed=3)
        b = build(20, n_layer=1, n_embd=16, n_head=2, n_positions=16, seed=3)
        c = build(20, n_layer=1, n_embd=16, n_head=2, n_positions=16, seed=4)
        assert isinstance(a, PreTrainedModel) and not a.training
        sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
        assert all(torch.equal(sa[k], sb[k]) for k in sa)
        assert not all(torch.equal(sa[k], sc[k]) for k in sa)
        out = a(input_ids=torch.tensor([[1, 5, 6]]), labels=torch.tensor([[1, 5, 6]]))
        assert out.logits.shape == (1, 3, 20) and torch.isfinite(out.loss)


def test_building_does_not_touch_the_global_rng():
    torch.manual_seed(123)
    expect = torch.rand(3)
    torch.manual_seed(123)
    tiny_gpt2(10, n_layer=1, n_embd=8, n_head=2, n_positions=8, seed=0)
    assert torch.equal(torch.rand(3), expect)


def test_tokenizer_round_trip_with_the_model(tmp_path):
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    tok = word_tokenizer(["<pad>", "<bos>", "<unk>", "<eos>", "x", "y"], eos_token="<eos>")
    assert tok("<bos> x y <eos>")["input_ids"] == [1, 4, 5, 3]
    assert tok.decode([4, 5]) == "x y" and tok.pad_token_id == 0
    model = tiny_gpt2(len(tok), n_layer=1, n_embd=8, n_head=2, n_positions=8)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    tok2 = PreTrainedTokenizerFast.from_pretrained(tmp_path)
    model2 = AutoModelForCausalLM.from_pretrained(tmp_path)
    assert tok2("x <eos> q")["input_ids"] == [4, 3, 2]
    ids = torch.tensor([[1, 4, 5]])
    torch.testing.assert_close(model(input_ids=ids).logits, model2(input_ids=ids).logits)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: tiny_gpt2(10, n_embd=30, n_head=4), ValueError,
     "'n_head' argument of tiny_gpt2 must be a divisor of n_embd=30"),
    (lambda: tiny_llama(2), ValueError, "'vocab_size' argument of tiny_llama"),
    (lambda: tiny_gpt2(10, n_layer=0), ValueError, "'n_layer' argument of tiny_gpt2"),
    (lambda: tiny_gpt2(10, seed=-1), ValueError, "'seed' argument of GPT2LMHeadModel"),
    (lambda: word_tokenizer(["a", "b"]), ValueError, "'tokens' argument of word_tokenizer"),
    (lambda: word_tokenizer(["<pad>", "<bos>", "<unk>", "x", "x"]), ValueError, "distinct"),
    (lambda: word_tokenizer("<pad> <bos>"), TypeError, "'tokens' argument of word_tokenizer"),
    (lambda: word_tokenizer(["<pad>", "<bos>", "<unk>"], eos_token="<eos>"), ValueError,
     "'eos_token' argument"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
