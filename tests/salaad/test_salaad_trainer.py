"""SALAADTrainer (a transformers.Trainer subclass): it trains a tiny tinylm Llama, SALAAD's
surrogate state advances, export works after training, and the SALAAD state survives a
Trainer checkpoint (resuming from it continues the identical trajectory)."""

import os
import warnings

import pytest
import torch

pytest.importorskip("transformers")

from optzoo.salaad import SALAAD, SALAADConfig  # noqa: E402
from optzoo.tinylm import HiddenMarkovTask, tiny_llama  # noqa: E402

TARGETS = r"(q|k|v|o|gate|up|down)_proj|embed_tokens"
CFG = SALAADConfig(targets=TARGETS, rho=1e-2, rank_ratio=0.25, density=0.05, admm_every=2)


def _data(n=16):
    x = HiddenMarkovTask(n_states=4, vocab=16, support=4, seed=0).sample(n, 8, seed=1)
    return [{"input_ids": r, "labels": r} for r in x]


def _trainer(out, steps, save_steps=2, cfg=CFG, **kw):
    from transformers import TrainingArguments

    from optzoo.salaad import SALAADTrainer

    model = tiny_llama(16, n_layer=1, n_embd=16, n_head=2, n_positions=8, intermediate_size=24, seed=3)
    args = TrainingArguments(output_dir=str(out), max_steps=steps, per_device_train_batch_size=4,
                             learning_rate=3e-3, lr_scheduler_type="cosine", warmup_steps=1,
                             save_strategy="steps", save_steps=save_steps, logging_steps=1, report_to=[],
                             use_cpu=True, disable_tqdm=True, seed=0, data_seed=0, max_grad_norm=1.0, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SALAADTrainer(model=model, args=args, train_dataset=_data(), salaad=cfg)


def _same_state(a, b):
    assert a["calls"] == b["calls"] and a["sweeps"] == b["sweeps"]
    for k in a["blocks"]:
        for f in ("L", "S", "Y"):
            assert torch.allclose(a["blocks"][k][f], b["blocks"][k][f], atol=1e-6, rtol=1e-5), (k, f)
        assert a["blocks"][k]["alpha"] == pytest.approx(b["blocks"][k]["alpha"], rel=1e-5, abs=1e-12)


def test_trainer_trains_advances_state_and_exports(tmp_path):
    tr = _trainer(tmp_path, steps=4)
    before = {k: float(w.detach().abs().sum()) for k, w in tr.salaad.weights.items()}
    out = tr.train()
    sal = tr.salaad
    assert isinstance(sal, SALAAD) and sal.calls == 4 and sal.sweeps == 2
    assert all(len(h["tau_L"]) == 2 for h in sal.history.values())
    assert any(float(st.L.abs().sum()) > 0 for st in sal.blocks.values())  # L moved from its zero init
    assert any(float(w.detach().abs().sum()) != before[k] for k, w in sal.weights.items())
    assert torch.isfinite(torch.tensor(out.training_loss))
    assert os.path.isfile(tmp_path / "checkpoint-2" / "salaad.pt")
    c = sal.export(sal.rest_params + sal.target_params // 2)
    assert c.params <= sal.rest_params + sal.target_params // 2
    x = _data(2)[0]["input_ids"][None]
    assert torch.isfinite(c.model(input_ids=x).logits).all()


def test_penalty_reaches_the_gradient(tmp_path):
    # the trainer's gradient is the task gradient plus the penalty gradient rho (X - L - S + Y/rho)
    tr = _trainer(tmp_path, steps=1)
    sal = tr.salaad
    k = next(iter(sal.weights))
    st = sal.blocks[k]
    st.Y.copy_(torch.ones_like(st.Y))                     # a large penalty gradient: Y/rho = 100
    batch = tr.data_collator(_data(4))
    tr.create_optimizer_and_scheduler(num_training_steps=1)
    tr.current_gradient_accumulation_steps = 1            # set by Trainer.train's loop otherwise
    tr.model.zero_grad()
    tr.training_step(tr.model, batch)
    g_total = sal.weights[k].grad.clone()
    tr.model.zero_grad()
    tr.model(**batch).loss.backward()
    g_task = sal.weights[k].grad.clone()
    rho = sal.rho_at()
    want = rho * (sal.weights[k].detach() - st.L - st.S + st.Y / rho)
    assert torch.allclose(g_total - g_task, want, atol=1e-5)


def test_checkpoint_round_trip_keeps_the_salaad_state(tmp_path):
    a = _trainer(tmp_path / "a", steps=6)
    a.train()
    saved = torch.load(tmp_path / "a" / "checkpoint-4" / "salaad.pt", weights_only=True)
    assert saved["calls"] == 4 and saved["sweeps"] == 2
    b = _trainer(tmp_path / "a", steps=6)                 # a fresh model and trainer
    b.train(resume_from_checkpoint=str(tmp_path / "a" / "checkpoint-4"))
    _same_state(a.salaad.state_dict(), b.salaad.state_dict())
    for k, h in a.salaad.history.items():
        for key, v in h.items():
            assert b.salaad.history[k][key] == pytest.approx(v, rel=1e-5, abs=1e-9), (k, key)
    for (n, p), (_, q) in zip(a.model.named_parameters(), b.model.named_parameters(), strict=True):
        assert torch.allclose(p, q, atol=1e-6), n


def test_resume_without_salaad_state_raises(tmp_path):
    tr = _trainer(tmp_path, steps=1)
    os.makedirs(tmp_path / "checkpoint-9")
    with pytest.raises(ValueError, match=r"'resume_from_checkpoint' argument of SALAADTrainer.train must be a "
                                         r"checkpoint folder written by SALAADTrainer \(with salaad.pt\)"):
        tr.train(resume_from_checkpoint=str(tmp_path / "checkpoint-9"))


def test_bad_salaad_argument():
    from transformers import TrainingArguments

    from optzoo.salaad import SALAADTrainer

    model = tiny_llama(16, n_layer=1, n_embd=16, n_head=2, n_positions=8, seed=0)
    with pytest.raises(TypeError, match=r"'salaad' argument of SALAADTrainer must be a SALAADConfig or a "
                                        r"SALAAD wrapper\. Got dict"):
        SALAADTrainer(model=model, args=TrainingArguments(output_dir="/tmp/x", report_to=[], use_cpu=True),
                      salaad={"rho": 1e-3})


def test_transformers_hooks_exist():
    # fails loudly if a transformers release drops a hook SALAADTrainer relies on
    from transformers import Trainer, TrainerCallback

    from optzoo.salaad import check_transformers_hooks

    check_transformers_hooks()
    for name in ("training_step", "train"):
        assert callable(getattr(Trainer, name))
    for name in ("on_pre_optimizer_step", "on_step_end", "on_save"):
        assert callable(getattr(TrainerCallback, name))

    class NoSave:
        pass

    with pytest.raises(RuntimeError, match="needs the callback event on_pre_optimizer_step"):
        check_transformers_hooks(callback_cls=NoSave)
