"""One seed of the Context Tuning reproduction: every method of the scale on the same tasks.

Every method sees the same demonstrations, the same queries, the same scoring (lowest mean-NLL
label) and the same number of optimisation steps; each has its own learning rate, frozen in
SCALES after a tuning run on the ``tune`` task split (never on the judged tasks).
"""

from __future__ import annotations

import time

import numpy as np

from optzoo.context_tuning.repro.tasks import evaluate, load_model, make_task

__all__ = ["ALL_METHODS", "TRAINED", "fit_method", "run_tasks"]

#: Every method the reproduction knows, in report order. ``icl`` is CT-KV with T = 0 (exactly
#: ICL, a tested property); ``zeroshot`` scores the query with no demonstrations.
ALL_METHODS = ("zeroshot", "icl", "ctkv", "ctkv_randinit", "ctprompt", "peft_prompt", "peft_prefix", "ttt",
               "ttt_ctkv", "ctkv_noloo", "ctkv_nodrop")
#: Methods that train (and so have a training loss and a learning rate).
TRAINED = ("ctkv", "ctkv_randinit", "ctprompt", "peft_prompt", "peft_prefix", "ttt", "ttt_ctkv", "ctkv_noloo",
           "ctkv_nodrop")


def _random_init_ctkv(model, demos, delim, cfg, seed):
    """CT-KV with its credited mechanism removed: the trainable KV prefix is initialised from
    |S| irrelevant tokens (drawn uniformly from the model's vocabulary, seeded) instead of the
    demonstrations S. Everything else is CT-KV's: the same |S| slots and pair spans (so the
    same leave-one-out masks), token dropout, positions, loss, optimiser, steps and lr grid."""
    import torch

    from optzoo._core.rng import torch_generator
    from optzoo.context_tuning import ContextTuning
    from optzoo.context_tuning.core import TunedContext, cache_to_list

    class _RandomInit(ContextTuning):
        def initial_context(self):
            vocab = self.model.get_input_embeddings().num_embeddings
            g = torch_generator(seed, "context_tuning", "random_init")
            ids = torch.randint(0, vocab, (1, len(self.context_ids)), generator=g)
            with torch.no_grad():
                out = self.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True)
            kv = [(k.detach().clone(), v.detach().clone()) for k, v in cache_to_list(out.past_key_values)]
            return TunedContext(self.model, "kv", kv, self.context_ids, self.delimiter)

    return _RandomInit(model, demos, variant="kv", delimiter_ids=delim, config=cfg, seed=seed)


def fit_method(m: str, model, demos, delim, *, steps: int, lr: float, seed: int, lr_ctkv: float | None = None):
    """The fitted scorer of method ``m`` (anything with ``query_ids``, ``nll`` and ``history``)."""
    from optzoo.context_tuning import ContextTuning, ContextTuningConfig
    from optzoo.context_tuning.baselines import PeftScorer, lora_ttt, peft_soft_prompt

    if m == "zeroshot":
        return PeftScorer(model, delim, {})
    if m in ("icl", "ctkv", "ctkv_randinit", "ctprompt", "ctkv_noloo", "ctkv_nodrop"):
        cfg = ContextTuningConfig(steps=0 if m == "icl" else steps, lr=lr, leave_one_out=m != "ctkv_noloo",
                                  token_dropout=0.0 if m == "ctkv_nodrop" else 0.05)
        if m == "ctkv_randinit":
            return _random_init_ctkv(model, demos, delim, ContextTuningConfig(steps=steps, lr=lr), seed).fit()
        return ContextTuning(model, demos, variant="prompt" if m == "ctprompt" else "kv",
                             delimiter_ids=delim, config=cfg, seed=seed).fit()
    if m == "ttt":
        return lora_ttt(model, demos, delimiter_ids=delim, steps=steps, lr=lr, seed=seed)
    if m == "ttt_ctkv":  # CT-KV on the TTT-adapted model (TTT at its lr, then CT-KV at CT-KV's)
        adapted = lora_ttt(model, demos, delimiter_ids=delim, steps=steps, lr=lr, seed=seed)
        cfg = ContextTuningConfig(steps=steps, lr=lr if lr_ctkv is None else lr_ctkv)
        sc = ContextTuning(adapted.model, demos, variant="kv", delimiter_ids=delim, config=cfg, seed=seed).fit()
        sc.history = dict(sc.history, ttt_loss=adapted.history["loss"])
        return sc
    if m in ("peft_prompt", "peft_prefix"):
        return peft_soft_prompt(model, demos, kind=m.split("_")[1], delimiter_ids=delim, steps=steps, lr=lr,
                                seed=seed)
    raise ValueError(f"Unknown method {m!r}; expected one of {ALL_METHODS}.")


def run_tasks(config, seed: int, progress, *, split: str = "test", methods=None, lrs=None) -> dict:
    """Per-task accuracy, label margin, first and last training loss and CPU seconds of every
    method in ``methods`` (default ``config.methods``) on ``config.tasks`` tasks of ``split``."""
    methods = tuple(config.methods if methods is None else methods)
    lr = dict(config.lrs if lrs is None else lrs)
    model, enc, delim = load_model(config.model)
    res = {m: {"acc": [], "margin": [], "loss0": [], "loss": [], "cpu": []} for m in methods}
    for t in range(config.tasks):
        demos, queries, labels = make_task(seed, t, config.k, config.queries, enc, split=split,
                                           family=getattr(config, "family", "cat2"))
        demos = [(x, labels[c]) for x, c in demos]
        for m in methods:
            t0 = time.process_time()
            step_lr = lr[m] if m in TRAINED else 1e-3  # untrained methods ignore it (T = 0)
            sc = fit_method(m, model, demos, delim, steps=config.steps, lr=step_lr, seed=seed, lr_ctkv=lr.get("ctkv"))
            acc, margin = evaluate(sc, queries, labels)
            loss = list(sc.history.get("loss") or [])
            res[m]["acc"].append(acc)
            res[m]["margin"].append(margin)
            res[m]["loss0"].append(float(loss[0]) if loss else None)  # None: not trained
            res[m]["loss"].append(float(loss[-1]) if loss else None)
            res[m]["cpu"].append(time.process_time() - t0)
            progress.advance()
    mean = {m: {key: None if None in v else float(np.mean(v)) for key, v in d.items()} for m, d in res.items()}
    return {"per_task": res, "mean": mean}
