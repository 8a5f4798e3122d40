"""Training and evaluation hooks of the ``toy`` checkpoint (used by ``optzoo.tinylm.train``).

SFT on the toy language: ``<bos> prompt response <eos>`` with the loss on the response and
``<eos>``; a ``good_fraction`` of responses are teacher samples, the rest teacher samples with
``n_bad_substitutions`` bad tokens, so that the model (the reference policy of the
preference-optimisation papers) gives real mass to both kinds of response.
"""

from __future__ import annotations

import numpy as np

from optzoo._core.rng import derive_seed
from optzoo.tinylm.toylang import PROMPT_LEN, ToyLanguage, toy_vocabulary

__all__ = ["build", "loss", "quick_eval", "full_eval_from_disk", "response_logprob"]

WORLD_SEED = 0


def build(recipe):
    from optzoo.tinylm.models import tiny_gpt2, word_tokenizer

    vocab = toy_vocabulary()
    model = tiny_gpt2(len(vocab), seed=recipe.seed, eos_token_id=3, **recipe.model)
    return model, word_tokenizer(vocab, eos_token="<eos>")


def _sft_batch(recipe, n: int, seed: int):
    world = ToyLanguage(seed=WORLD_SEED)
    prompts = world.sample_prompts(n, seed=seed)
    resp = world.sample_responses(prompts, seed=seed)
    bad = world.corrupt(resp, k=recipe.data["n_bad_substitutions"], seed=seed)
    use_bad = np.random.default_rng(derive_seed(seed, "mix")).random(n) >= recipe.data[
        "good_fraction"]
    resp = np.where(use_bad[:, None], bad, resp)
    return world.encode(prompts, resp)


def response_logprob(model, ids) -> np.ndarray:
    """Sum of log-probabilities of the response and ``<eos>`` tokens (after ``<bos>`` + prompt)."""
    import torch

    ids = torch.as_tensor(ids)
    with torch.no_grad():
        lp = torch.log_softmax(model(input_ids=ids).logits[:, :-1].float(), -1)
    tok = lp.gather(-1, ids[:, 1:, None])[..., 0]
    return tok[:, PROMPT_LEN:].sum(1).numpy()


def loss(model, recipe, step: int):
    import torch

    ids = torch.from_numpy(_sft_batch(recipe, recipe.batch_size,
                                      derive_seed(recipe.seed, "train", step)))
    logits = model(input_ids=ids).logits[:, PROMPT_LEN:-1].float()
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             ids[:, PROMPT_LEN + 1:].reshape(-1))


def evaluate_toy(model, *, n: int = 512, seed: int = 4242) -> dict:
    """Per-token NLL on held-out teacher samples and on their 3-bad-token corruptions, the
    teacher's own NLL on the same samples, and how often the model prefers the clean response."""
    world = ToyLanguage(seed=WORLD_SEED)
    pairs = world.preference_pairs(n, k=3, seed=seed)
    lp_c = response_logprob(model, world.encode(pairs.prompts, pairs.chosen))
    lp_r = response_logprob(model, world.encode(pairs.prompts, pairs.rejected))
    teacher = world.log_likelihood(pairs.prompts, pairs.chosen)
    per = 11.0  # 10 response tokens + <eos>
    return {
        "n": n, "seed": seed,
        "nll_per_token_clean": float(-lp_c.mean() / per),
        "nll_per_token_corrupted": float(-lp_r.mean() / per),
        "teacher_nll_per_token_clean": float(-teacher.mean() / 10.0),
        "prefers_clean": float((lp_c > lp_r).mean()),
    }


def quick_eval(model, recipe) -> dict:
    r = evaluate_toy(model, n=128)
    return {k: round(v, 3) for k, v in r.items() if isinstance(v, float)}


def full_eval_from_disk(folder, recipe=None) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    return {"toy_k3": evaluate_toy(model)}
