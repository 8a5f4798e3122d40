"""The tiny models work unchanged with PEFT prompt tuning and with ``generate``."""

import numpy as np
import torch

from optzoo._core.rng import torch_generator
from optzoo.tinylm import ToyLanguage, icl_batch, load_tiny_lm


def test_peft_prompt_tuning_trains_only_the_prompt():
    from peft import PromptTuningConfig, TaskType, get_peft_model

    model, _ = load_tiny_lm("toy")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    peft_model = get_peft_model(model, PromptTuningConfig(task_type=TaskType.CAUSAL_LM,
                                                          num_virtual_tokens=4))
    trainable = [p for p in peft_model.parameters() if p.requires_grad]
    assert sum(p.numel() for p in trainable) == 4 * model.config.n_embd
    world = ToyLanguage(seed=0)
    pairs = world.preference_pairs(32, k=10, seed=3)
    ids = torch.from_numpy(world.encode(pairs.prompts, pairs.rejected))  # a shifted target
    opt = torch.optim.Adam(trainable, lr=0.1)
    losses = []
    for _ in range(15):
        loss = peft_model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0] - 0.05
    after = peft_model.base_model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_generate_on_the_toy_checkpoint_follows_the_format():
    model, tok = load_tiny_lm("toy")
    world = ToyLanguage(seed=0)
    prompt = torch.from_numpy(world.encode(world.sample_prompts(4, seed=0)))
    out = model.generate(prompt, max_new_tokens=11, do_sample=False,
                         pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    new = out[:, prompt.shape[1]:]
    text = tok.batch_decode(new)
    assert all(t.split()[0].startswith("w") for t in text)
    # Greedy decoding mostly stays inside the teacher's good words.
    words = new[new >= 4] - 4
    assert world.bad_mask[words.numpy()].mean() < 0.2


def test_generate_answers_icl_queries():
    model, tok = load_tiny_lm("icl")
    b = icl_batch(64, k=16, seed=11)
    ids = torch.from_numpy(b.input_ids)
    # The checkpoint was trained on the two label logits only, so generation is constrained
    # to the labels (unconstrained greedy decoding may emit a feature token).
    others = [i for i in range(len(tok)) if i not in (3, 4)]
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=1,
                         do_sample=False, pad_token_id=tok.pad_token_id, suppress_tokens=others)
    answers = tok.batch_decode(out[:, -1:])
    assert set(answers) <= {"L0", "L1"}
    # generate's greedy answer is the model's own prediction among the two labels.
    with torch.no_grad():
        logits = model(input_ids=ids).logits[:, -1, 3:5]
    np.testing.assert_array_equal(out[:, -1].numpy(), 3 + logits.argmax(-1).numpy())


def test_generator_helper_is_independent_of_global_state():
    g = torch_generator(0)
    assert torch.rand(1, generator=g).item() == torch.rand(1, generator=torch_generator(0)).item()
