"""Property tests for CT-KV / CT-Prompt on random tiny HF models (API mechanics, not quality)."""

import hashlib

import pytest
import torch

from optzoo.context_tuning import CTKV, ContextTuning, ContextTuningConfig, CTPrompt, TunedContext
from optzoo.context_tuning.core import _mean_nll, _pad_rows
from optzoo.tinylm import tiny_gpt2, tiny_llama

torch.set_num_threads(1)
D = torch.tensor([3])


@pytest.fixture(params=["llama", "gpt2"])
def model(request):
    mk = tiny_llama if request.param == "llama" else tiny_gpt2
    return mk(40, n_layer=2, n_embd=32, n_head=2, n_positions=128, seed=0).eval()


def demos(k=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(4, 40, (3,), generator=g), torch.randint(4, 40, (2,), generator=g)) for _ in range(k)]


def ref_nll(model, ids_before, opt):
    full = torch.cat([ids_before, opt])[None]
    with torch.no_grad():
        lg = model(full).logits
    lp = torch.log_softmax(lg[0, :-1], -1).gather(-1, full[0, 1:, None]).squeeze(-1)
    return -lp[-len(opt):].mean()


@pytest.mark.parametrize("variant", ["kv", "prompt"])
def test_zero_steps_equals_icl(model, variant):
    ct = ContextTuning(model, demos(), variant=variant, delimiter_ids=D, config=ContextTuningConfig(steps=0))
    ctx = ct.fit()
    q, opt = torch.tensor([5, 6, 7]), torch.tensor([8, 9])
    ref = ref_nll(model, torch.cat([ct.context_ids, ctx.query_ids(q)]), opt)
    assert torch.allclose(ctx.score(q, [opt])[0], ref, atol=1e-5)


def test_leave_one_out_gradient_is_zero_on_own_span(model):
    ct = ContextTuning(model, demos(), delimiter_ids=D, config=ContextTuningConfig(steps=1, token_dropout=0.0))
    ctx = ct.initial_context()
    for kv in ctx.params:
        for t in kv:
            t.requires_grad_(True)
    ids, att, tgt = _pad_rows(ct.pairs)
    per = _mean_nll(ctx._forward(ids, att, prefix_mask=ct._masks(None)), ids, tgt)
    for i, (a, b) in enumerate(ct.spans):
        grads = torch.autograd.grad(per[i], [t for kv in ctx.params for t in kv], retain_graph=True)
        assert all(float(g[:, :, a:b].abs().max()) == 0.0 for g in grads)
        assert max(float(g.abs().max()) for g in grads) > 0  # the other spans do get gradient


def test_shapes_and_frozen_weights(model):
    before = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    ct = CTKV(model, demos(), delimiter_ids=D, config=ContextTuningConfig(steps=3, lr=1e-2))
    ctx = ct.fit()
    after = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    assert before == after and all(p.requires_grad for p in model.parameters())
    assert len(ctx.params) == model.config.num_hidden_layers
    assert all(k.shape[2] == len(ct.context_ids) and k.shape == v.shape for k, v in ctx.params)
    assert len(ctx.history["loss"]) == 3


def test_dropout_off_is_deterministic_and_seeded(model):
    cfg = ContextTuningConfig(steps=3, lr=1e-2, token_dropout=0.0)
    a = CTKV(model, demos(), delimiter_ids=D, config=cfg, seed=0).fit().history["loss"]
    b = CTKV(model, demos(), delimiter_ids=D, config=cfg, seed=1).fit().history["loss"]
    assert a == b
    cfg = ContextTuningConfig(steps=3, lr=1e-2)
    c = CTKV(model, demos(), delimiter_ids=D, config=cfg, seed=5).fit().history["loss"]
    d = CTKV(model, demos(), delimiter_ids=D, config=cfg, seed=5).fit().history["loss"]
    assert c == d


def test_dropout_mask_rate():
    m = tiny_llama(40, n_layer=1, n_embd=16, n_head=2, n_positions=2048, seed=0)
    big = [(torch.randint(4, 40, (40,)), torch.tensor([5])) for _ in range(20)]
    ct = ContextTuning(m, big, delimiter_ids=D, config=ContextTuningConfig(token_dropout=0.3, leave_one_out=False))
    mask = torch.cat([ct._masks(torch.Generator().manual_seed(i)).flatten().float() for i in range(12)])
    assert mask.numel() > 10_000 and abs(float(mask.mean()) - 0.7) < 0.02


def test_no_loo_lets_each_pair_read_its_own_span(model):
    # the ablation switch: without LOO, pair i's loss reaches its own (K_i, V_i) (the "retrieval"
    # shortcut the paper warns about); with LOO it cannot (test above)
    ct = ContextTuning(model, demos(), delimiter_ids=D,
                       config=ContextTuningConfig(leave_one_out=False, token_dropout=0.0))
    ctx = ct.initial_context()
    leaves = [t.requires_grad_(True) for kv in ctx.params for t in kv]
    ids, att, tgt = _pad_rows(ct.pairs)
    per = _mean_nll(ctx._forward(ids, att, prefix_mask=ct._masks(None)), ids, tgt)
    a, b = ct.spans[2]
    grads = torch.autograd.grad(per[2], leaves)
    assert max(float(g[:, :, a:b].abs().max()) for g in grads) > 0


def test_token_counts(model):
    ds = demos(5)
    kv, pr = CTKV(model, ds, delimiter_ids=D), CTPrompt(model, ds, delimiter_ids=D)
    pair = sum(len(p) for p, _ in kv.pairs)
    assert kv.tokens_per_epoch() == pair
    assert pr.tokens_per_epoch() == pair + 5 * len(pr.context_ids)


def test_cache_generate_and_save_load(model, tmp_path):
    ctx = CTKV(model, demos(), delimiter_ids=D, config=ContextTuningConfig(steps=2, lr=1e-2)).fit()
    q, opt = torch.tensor([5, 6]), torch.tensor([8])
    # the tuned cache plugs into ordinary HF calls: greedy generate == argmax of our scoring forward
    new = ctx.generate(q, max_new_tokens=1, do_sample=False)
    scores = torch.stack([ctx.score(q, [torch.tensor([t])])[0] for t in range(40)])
    assert int(new[0]) == int(scores.argmin())
    path = ctx.save(tmp_path / "ctx.safetensors")
    back = TunedContext.load(path, model)
    assert torch.allclose(back.score(q, [opt]), ctx.score(q, [opt]))
    assert back.history["loss"] == ctx.history["loss"]
    pr = CTPrompt(model, demos(), delimiter_ids=D, config=ContextTuningConfig(steps=1)).fit()
    assert len(pr.generate(q, max_new_tokens=2, do_sample=False)) == 2
    with pytest.raises(ValueError, match="'variant' argument of TunedContext.as_cache"):
        pr.as_cache()


def test_errors(model):
    with pytest.raises(ValueError, match="'demos' argument of ContextTuning must be a non-empty list"):
        ContextTuning(model, [])
    with pytest.raises(ValueError, match="at least 2 demonstrations when leave_one_out"):
        ContextTuning(model, demos(1))
    long = [(torch.randint(4, 40, (100,)), torch.tensor([5])) for _ in range(2)]
    with pytest.raises(ValueError, match=r"\|S\| \+ longest pair <= 128 positions"):
        ContextTuning(model, long)
    with pytest.raises(ValueError, match="tokenizer/model mismatch"):
        ContextTuning(model, [(torch.tensor([1, 500]), torch.tensor([2]))] * 2)
    with pytest.raises(TypeError, match="1-D int64 torch.Tensor"):
        ContextTuning(model, [([1, 2], torch.tensor([2]))] * 2)
    with pytest.raises(ValueError, match="must be one of"):
        ContextTuning(model, demos(), variant="lora")
    with pytest.raises(ValueError, match="'token_dropout' argument of ContextTuningConfig"):
        ContextTuningConfig(token_dropout=1.0)
    with pytest.raises(ValueError, match="'lr' argument of ContextTuningConfig"):
        ContextTuningConfig(lr=float("nan"))
    with pytest.raises(TypeError, match="Hugging Face causal LM"):
        ContextTuning(torch.nn.Linear(2, 2), demos())


def test_encoder_decoder_rejected():
    from transformers import T5Config, T5ForConditionalGeneration

    m = T5ForConditionalGeneration(T5Config(vocab_size=40, d_model=8, d_kv=4, d_ff=8, num_layers=1, num_heads=2))
    with pytest.raises(ValueError, match="decoder-only causal LM"):
        ContextTuning(m, demos())


def test_score_bad_queries_and_options_are_clear_errors():  # issue 17, item 5
    m = tiny_llama(40, n_layer=1, n_embd=16, n_head=2, n_positions=64, seed=0).eval()
    ctx = ContextTuning(m, demos(2), delimiter_ids=torch.tensor([3]),
                        config=ContextTuningConfig(steps=1), seed=0).fit()
    ok = [torch.tensor([7]), torch.tensor([8, 9])]
    assert ctx.score(torch.tensor([5, 6]), ok).shape == (2,)
    oov = r"must be token ids in \[0, 40\) \(the model's vocabulary.*Got {}\."
    with pytest.raises(ValueError, match=r"The 'query' argument of TunedContext\.score "
                                         + oov.format(40)):
        ctx.score(torch.tensor([5, 40]), ok)
    with pytest.raises(ValueError, match=r"The 'options\[1\]' argument of TunedContext\.score "
                                         + oov.format(99)):
        ctx.score(torch.tensor([5]), [torch.tensor([7]), torch.tensor([99])])
    with pytest.raises(ValueError, match=r"The 'options' argument of TunedContext\.score must be "
                                         r"a non-empty list .*Got \[\]\."):
        ctx.score(torch.tensor([5]), [])
    with pytest.raises(TypeError, match=r"'options' argument of TunedContext\.score"):
        ctx.score(torch.tensor([5]), torch.tensor([7]))
    with pytest.raises(ValueError, match=r"The 'query' argument of TunedContext\.generate"):
        ctx.generate(torch.tensor([-1]), max_new_tokens=1)
    with pytest.raises(ValueError, match=r"The 'max_new_tokens' argument of TunedContext\.generate "
                                         r"must be an int in \[1, inf\]\. Got 0\."):
        ctx.generate(torch.tensor([5]), max_new_tokens=0)
    with pytest.raises(ValueError, match=r"The 'path' argument of TunedContext\.save must be a file "
                                         r"path in an existing directory"):
        ctx.save("/nonexistent-optzoo-dir/ctx.safetensors")


def test_trial2_bad_inputs():  # trial 2, items 6-8
    m = tiny_llama(40, n_layer=1, n_embd=16, n_head=2, n_positions=64, seed=0).eval()
    d2 = demos(2)
    # a negative id is reported by its own value, not the largest id of the demos
    with pytest.raises(ValueError, match=r"'demos' argument of ContextTuning must be token ids in "
                                         r"\[0, 40\).*Got -1\."):
        ContextTuning(m, [(torch.tensor([-1]), torch.tensor([6])), d2[1]], delimiter_ids=D)
    with pytest.raises(ValueError, match=r"The 'seed' argument of ContextTuning must be an int in "
                                         r"\[0, inf\]\. Got -1\."):
        ContextTuning(m, d2, delimiter_ids=D, seed=-1)
    with pytest.raises(ValueError, match=r"The 'model' argument of ContextTuning must be a model in "
                                         r"float32"):
        ContextTuning(tiny_llama(40, n_layer=1, n_embd=16, n_head=2, seed=0).half(), d2, delimiter_ids=D)
