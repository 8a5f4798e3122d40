"""CoProTrainer on a tiny GPT-2 from optzoo.tinylm: a few steps run, log and move the weights."""

import pytest
import torch

from optzoo.copro import CoProConfig, CoProTrainer

pytest.importorskip("transformers")


def _reward(prompts, completions, **kw):
    out = []
    for c in completions:
        words = c.split()
        out.append({"objectives": [words.count("A"), -len(words)], "constraints": [len(words) - 3.0]})
    return out


def test_trainer_runs_a_few_steps():
    from optzoo.tinylm import tiny_gpt2, word_tokenizer

    vocab = ["<pad>", "<bos>", "<unk>", "<eos>", "A", "B", "C", "q1", "q2"]
    tok = word_tokenizer(vocab, eos_token="<eos>")
    model = tiny_gpt2(len(vocab), n_layer=1, n_embd=16, n_head=2, n_positions=32, seed=0, eos_token_id=3)
    before = [p.detach().clone() for p in model.parameters()]
    args = CoProConfig(num_generations=4, per_device_train_batch_size=2, max_completion_length=5,
                       learning_rate=1e-2, max_steps=3, senses=("max", "max"), seed=0)
    tr = CoProTrainer(model, reward_funcs=_reward, args=args, train_dataset=["<bos> q1", "<bos> q2"],
                      processing_class=tok)
    out = tr.train()
    assert out["global_step"] == 3 and len(out["log_history"]) == 3
    log = out["log_history"][-1]
    assert {"loss", "nll", "kl", "q_feasible", "status", "beta"} <= set(log)
    assert all(torch.isfinite(torch.tensor(h["loss"])) for h in out["log_history"])
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_trainer_rejects_bad_inputs():
    with pytest.raises(TypeError, match="'reward_funcs' argument of CoProTrainer"):
        CoProTrainer(torch.nn.Linear(1, 1), reward_funcs=[1], train_dataset=["x"], processing_class=object())
    with pytest.raises(ValueError, match="'train_dataset' argument of CoProTrainer"):
        CoProTrainer(torch.nn.Linear(1, 1), reward_funcs=_reward, train_dataset=[], processing_class=object())


def test_reward_columns_accept_trl_floats_and_refuse_ragged_dicts():
    """December trial D7: TRL-style float rewards crashed raw ('float' object is not
    subscriptable); objectives of varying length gave a raw torch error."""
    from optzoo.copro.trainer import _reward_columns

    o, c = _reward_columns([1.0, None, 2], 3, _reward)
    assert o.shape == (3, 1) and c.shape == (3, 0) and torch.isnan(o[1, 0]) and o[2, 0] == 2.0
    o, c = _reward_columns(_reward([], ["A B", "A", "B B B B"]), 3, _reward)
    assert o.tolist() == [[1, -2], [1, -1], [0, -4]] and c.tolist() == [[-1.0], [-2.0], [1.0]]
    with pytest.raises(ValueError, match=r"'reward_funcs' argument of CoProTrainer must be functions "
                                         r"returning 2 entries .*Got \"'objectives' of lengths \[1, 2\] from <lambda>\""):
        _reward_columns([{"objectives": [1.0]}, {"objectives": [1.0, 2.0]}], 2, lambda: 0)
    with pytest.raises(TypeError, match=r"'reward_funcs' argument of CoProTrainer.*Got \"str 'x'"):
        _reward_columns(["x", "y"], 2, _reward)


def test_trainer_with_trl_style_float_rewards():
    from optzoo.tinylm import tiny_gpt2, word_tokenizer

    vocab = ["<pad>", "<bos>", "<unk>", "<eos>", "A", "B", "q1"]
    tok = word_tokenizer(vocab, eos_token="<eos>")
    model = tiny_gpt2(len(vocab), n_layer=1, n_embd=16, n_head=2, n_positions=32, seed=0, eos_token_id=3)

    def count_a(prompts, completions, **kw):
        return [float(c.split().count("A")) for c in completions]

    def shortness(prompts, completions, **kw):
        return [-float(len(c.split())) for c in completions]

    args = CoProConfig(num_generations=4, per_device_train_batch_size=2, max_completion_length=4,
                       max_steps=2, senses=("max", "max"), seed=0)
    out = CoProTrainer(model, [count_a, shortness], args, ["<bos> q1"], tok).train()
    assert out["global_step"] == 2
