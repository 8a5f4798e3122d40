"""CoProTrainer (a transformers.Trainer subclass) on a tiny GPT-2 from optzoo.tinylm: it trains,
logs CoPro's statistics, takes TRL-style rewards, and resumes from its checkpoints bit for bit
(also between the K optimizer steps that share one generated batch)."""

import pytest
import torch

pytest.importorskip("transformers")

from optzoo.copro import CoProConfig, CoProTrainer  # noqa: E402

VOCAB = ["<pad>", "<bos>", "<unk>", "<eos>", "A", "B", "C", "q1", "q2", "q3"]
PROMPTS = ["<bos> q1", "<bos> q2", "<bos> q3", "<bos> q1 q2"]


def _reward(prompts, completions, **kw):
    out = []
    for c in completions:
        words = c.split()
        out.append({"objectives": [words.count("A"), -len(words)], "constraints": [len(words) - 3.0]})
    return out


def _setup():
    from optzoo.tinylm import tiny_gpt2, word_tokenizer

    tok = word_tokenizer(VOCAB, eos_token="<eos>")
    model = tiny_gpt2(len(VOCAB), n_layer=1, n_embd=16, n_head=2, n_positions=32, seed=0, eos_token_id=3)
    return model, tok


def _args(out, **kw):
    base = dict(output_dir=str(out), num_generations=4, per_device_train_batch_size=2,
                max_completion_length=5, learning_rate=1e-2, max_steps=3, senses=("max", "max"),
                seed=0, use_cpu=True, report_to=[], save_strategy="no", disable_tqdm=True)
    return CoProConfig(**{**base, **kw})


def test_trainer_is_a_transformers_trainer_and_trains(tmp_path):
    from transformers import Trainer, TrainingArguments

    model, tok = _setup()
    before = [p.detach().clone() for p in model.parameters()]
    args = _args(tmp_path)
    assert isinstance(args, TrainingArguments)
    tr = CoProTrainer(model, reward_funcs=_reward, args=args, train_dataset=PROMPTS, processing_class=tok)
    assert isinstance(tr, Trainer)
    out = tr.train()
    assert out.global_step == 3
    logs = [h for h in tr.state.log_history if "loss" in h]
    assert len(logs) == 3
    assert {"loss", "nll", "kl", "q_feasible", "beta", "entropy", "feasible_rate", "objective_0",
            "objective_1", "grad_norm", "learning_rate"} <= set(logs[-1])
    assert sum(v for k, v in logs[-1].items() if k.startswith("status_")) == 2   # 2 groups a step
    assert all(torch.isfinite(torch.tensor(h["loss"])) for h in logs)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def _final_params(out, resume=None, **kw):
    model, tok = _setup()
    tr = CoProTrainer(model, _reward, _args(out, **kw), PROMPTS, tok)
    tr.train(resume_from_checkpoint=resume)
    return [p.detach().clone() for p in model.parameters()], tr


@pytest.mark.parametrize("num_iterations,resume_at", [(1, 2), (2, 3)])
def test_resume_is_bit_identical(tmp_path, num_iterations, resume_at):
    """A run checkpointed at step ``resume_at`` and resumed there ends with the same weights, KL
    coefficient and logs as the uninterrupted run; with K = 2, step 3 lies between the two
    optimizer steps that share a generated batch, so the kept batch must travel in copro.pt."""
    kw = dict(max_steps=5, num_iterations=num_iterations, trust_region="kl_constraint",
              save_strategy="steps", save_steps=1)
    ref, tr_ref = _final_params(tmp_path / "a", **kw)
    got, tr = _final_params(tmp_path / "b", resume=str(tmp_path / "a" / f"checkpoint-{resume_at}"), **kw)
    assert all(torch.equal(a, b) for a, b in zip(ref, got, strict=True))
    assert float(tr.loss_fn.coef) == float(tr_ref.loss_fn.coef)
    last = [h for h in tr_ref.state.log_history if "loss" in h][-1]
    assert [h for h in tr.state.log_history if "loss" in h][-1] == last


def test_num_iterations_reuses_one_generation(tmp_path):
    """K = 2: steps 1-2 share a batch, so the sampling generator advances once per two steps."""
    model, tok = _setup()
    tr = CoProTrainer(model, _reward, _args(tmp_path, num_iterations=2, max_steps=4), PROMPTS, tok)
    calls = []
    real = tr._make_batch
    tr._make_batch = lambda m, rows: calls.append([r["prompt"] for r in rows]) or real(m, rows)
    tr.train()
    assert len(calls) == 2


def test_resume_refuses_a_foreign_checkpoint(tmp_path):
    model, tok = _setup()
    tr = CoProTrainer(model, _reward, _args(tmp_path), PROMPTS, tok)
    (tmp_path / "other" / "checkpoint-9").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"'resume_from_checkpoint' argument of CoProTrainer.train must be a "
                                         r"checkpoint folder written by CoProTrainer \(with copro.pt\)"):
        tr.train(resume_from_checkpoint=str(tmp_path / "other" / "checkpoint-9"))
    with pytest.raises(ValueError, match=r"'resume_from_checkpoint' .* True only when output_dir holds a checkpoint"):
        tr.train(resume_from_checkpoint=True)


def test_trainer_rejects_bad_inputs(tmp_path):
    model, tok = _setup()
    with pytest.raises(TypeError, match="'reward_funcs' argument of CoProTrainer"):
        CoProTrainer(model, reward_funcs=[1], train_dataset=["x"], processing_class=tok)
    with pytest.raises(ValueError, match="'train_dataset' argument of CoProTrainer"):
        CoProTrainer(model, reward_funcs=_reward, train_dataset=[], processing_class=tok)
    with pytest.raises(ValueError, match=r"'train_dataset' argument of CoProTrainer must be at least "
                                         r"per_device_train_batch_size x gradient_accumulation_steps = 2"):
        CoProTrainer(model, _reward, _args(tmp_path), ["<bos> q1"], tok)
    with pytest.raises(TypeError, match="'args' argument of CoProTrainer must be a CoProConfig"):
        CoProTrainer(model, _reward, object(), PROMPTS, tok)
    with pytest.raises(TypeError, match="'train_dataset' argument of CoProTrainer must be prompts as str"):
        CoProTrainer(model, _reward, _args(tmp_path), [1, 2], tok)


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


def test_trl_style_float_rewards_and_dataset_columns(tmp_path):
    """TRL's convention: float rewards (one objective per function) and the dataset's other
    columns passed to every reward function, one entry per completion."""
    model, tok = _setup()
    seen = []

    def count_target(prompts, completions, target, **kw):
        seen.append(len(target))
        return [float(c.split().count(t)) for c, t in zip(completions, target, strict=True)]

    def shortness(prompts, completions, **kw):
        return [-float(len(c.split())) for c in completions]

    rows = [{"prompt": "<bos> q1", "target": "A"}, {"prompt": "<bos> q2", "target": "B"}]
    out = CoProTrainer(model, [count_target, shortness], _args(tmp_path, max_steps=2), rows, tok).train()
    assert out.global_step == 2 and seen == [8, 8]


def test_transformers_hooks_present():
    from optzoo.copro.trainer import check_transformers_hooks

    check_transformers_hooks()     # fails loudly if a transformers release drops a hook we use


def test_import_copro_does_not_import_transformers():
    import subprocess
    import sys

    code = "import sys, optzoo.copro; print('transformers' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
