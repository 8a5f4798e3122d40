"""Training and evaluation hooks of the ``icl`` checkpoint (used by ``optzoo.tinylm.train``).

Loss: next-token cross-entropy on every demonstration label and the query label (MetaICL
style), i.e. the label after 0, 1, ..., k demonstrations, restricted to the two label logits
(the only tokens the family ever asks for; the features are uniform noise, so predicting them
teaches nothing).
"""

from __future__ import annotations

import numpy as np

from optzoo._core.rng import derive_seed
from optzoo._core.validation import check_int
from optzoo.tinylm.icl import LABEL0, icl_batch, icl_eval_set, icl_vocabulary

__all__ = ["build", "loss", "quick_eval", "evaluate_icl", "full_eval_from_disk"]


def build(recipe):
    from optzoo.tinylm.models import tiny_gpt2, tiny_llama, word_tokenizer

    vocab = icl_vocabulary(recipe.data["n_features"])
    builder = tiny_gpt2 if recipe.arch == "gpt2" else tiny_llama
    model = builder(len(vocab), seed=recipe.seed, **recipe.model)
    return model, word_tokenizer(vocab)


def _label_logits(model, input_ids, positions):
    """Logits of (L0, L1) at ``positions`` (the tokens after which a label comes)."""
    logits = model(input_ids=input_ids).logits[:, positions, :]
    return logits[..., LABEL0:LABEL0 + 2]


def loss(model, recipe, step: int):
    import torch

    d = recipe.data
    seed = derive_seed(recipe.seed, "train", step)
    # A fresh number of demonstrations every step: a curriculum over k for free.
    k = int(np.random.default_rng(seed).integers(d["k_min"], d["k_max"] + 1))
    b = icl_batch(recipe.batch_size, k=k, n_features=d["n_features"], layout=d["layout"],
                  seed=seed)
    ids = torch.from_numpy(b.input_ids)
    logits = _label_logits(model, ids, b.label_positions)
    if d["layout"] == "plain":  # MetaICL style: every demonstration label is a target too
        target = torch.from_numpy(np.concatenate([b.demo_labels, b.labels[:, None]], axis=1))
    else:
        target = torch.from_numpy(b.labels[:, None])
    return torch.nn.functional.cross_entropy(logits.reshape(-1, 2).float(), target.reshape(-1))


def evaluate_icl(model, *, family: str = "pretrain", k: int = 16, n_tasks: int = 64,
                 n_queries: int = 32, n_features: int = 6, layout: str = "fused",
                 seed: int = 12345, chunk: int = 512) -> dict:
    """Accuracy of ICL with ``k`` demos, of zero-shot, and of the most-frequent-label baseline.

    The prediction is the label with the lowest NLL among the task's two labels. Returns
    plain floats: ``icl``, ``zero_shot``, ``frequency`` (ties count 0.5) and ``ideal`` (the
    Bayes learner over the pre-training rules), plus per-task ICL accuracies.
    """
    import torch

    from optzoo.tinylm.icl import ideal_learner_accuracy

    owner = "evaluate_icl"
    k = check_int("k", k, owner=owner, low=0, high=256)
    n_tasks = check_int("n_tasks", n_tasks, owner=owner, low=1)
    n_queries = check_int("n_queries", n_queries, owner=owner, low=1)
    ev = icl_eval_set(n_tasks, k=k, n_queries=n_queries, family=family,
                      n_features=n_features, layout=layout, seed=seed)
    zs = icl_eval_set(n_tasks, k=0, n_queries=n_queries, family=family,
                      n_features=n_features, layout=layout, seed=seed)

    def predict(batch):
        out = []
        with torch.no_grad():
            for s in range(0, len(batch.input_ids), chunk):
                ids = torch.from_numpy(batch.input_ids[s:s + chunk])
                lg = _label_logits(model, ids, batch.label_positions[-1:])[:, 0]
                out.append(lg.argmax(-1).numpy())
        return np.concatenate(out)

    icl_correct = predict(ev) == ev.labels
    # Zero-shot: the same tasks with no demonstrations (the k = 0 draw reuses the stream).
    zs_correct = predict(zs) == zs.labels
    m = ev.demo_labels.mean(1) if k else np.full(len(ev.labels), 0.5)
    freq = np.where(m == 0.5, 0.5, ((m > 0.5).astype(int) == ev.labels).astype(float))
    per_task = icl_correct.reshape(n_tasks, n_queries).mean(1)
    return {
        "family": family, "k": k, "n_tasks": n_tasks, "n_queries": n_queries, "seed": seed,
        "icl": float(icl_correct.mean()),
        "zero_shot": float(zs_correct.mean()),
        "frequency": float(freq.mean()),
        "ideal_pretrain_rules": float(ideal_learner_accuracy(ev, family="pretrain").mean()),
        "icl_per_task_std": float(per_task.std()),
    }


def quick_eval(model, recipe) -> dict:
    kw = dict(k=16, n_tasks=32, n_queries=16, n_features=recipe.data["n_features"],
              layout=recipe.data["layout"], seed=777)
    a = evaluate_icl(model, **kw)
    b = evaluate_icl(model, family="shifted", **kw)
    return {"pre_k16": round(a["icl"], 3), "freq": round(a["frequency"], 3),
            "shift_k16": round(b["icl"], 3)}


def full_eval_from_disk(folder, recipe) -> dict:
    """The recorded evaluation: the saved (fp16) weights reloaded, as users will see them."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    out = {}
    for fam in ("pretrain", "shifted"):
        for k in (4, 8, 16):
            r = evaluate_icl(model, family=fam, k=k, n_features=recipe.data["n_features"],
                             layout=recipe.data["layout"])
            out[f"{fam}_k{k}"] = r
        # A small fixed set that the test suite re-evaluates in a second.
        out[f"check_{fam}_k16"] = evaluate_icl(
            model, family=fam, k=16, n_tasks=8, n_queries=16, n_features=recipe.data[
                "n_features"], layout=recipe.data["layout"], seed=2024)
    return out
