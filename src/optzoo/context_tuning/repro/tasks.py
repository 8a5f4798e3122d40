"""Generated few-shot word tasks and the models the reproduction runs on.

Task family (ours, INFERRED): a task picks two of six word categories (animals, fruits,
colours, ...) and an arbitrary pair of label words (``foo``/``bar``, ``sun``/``moon``, ... in
random order); a demonstration is ``word\\nlabel``. Demonstrations alternate the two classes;
queries are held-out words. The smoke scale uses a random tiny Llama on random token tasks
(API mechanics only: its numbers mean nothing).

Task streams are keyed by (seed, split, index): ``split="test"`` tasks are the judged ones,
``split="tune"`` tasks are kept apart for choosing learning rates.
"""

from __future__ import annotations

import numpy as np

from optzoo._core.rng import np_rng

__all__ = ["CATEGORIES", "LABELS", "evaluate", "load_model", "make_task"]

CATEGORIES = {
    "animal": "cat dog horse cow sheep lion tiger mouse rabbit wolf bear goat".split(),
    "fruit": "apple banana orange grape lemon mango peach cherry pear plum melon kiwi".split(),
    "color": "red blue green yellow purple pink brown black white gray violet gold".split(),
    "country": "France Spain Italy Japan China Brazil Canada Mexico Egypt India Kenya Peru".split(),
    "body": "hand foot head arm leg knee elbow nose ear eye mouth finger".split(),
    "vehicle": "car bus truck train plane boat bike ship taxi tram van jet".split(),
}
LABELS = [("foo", "bar"), ("A", "B"), ("left", "right"), ("up", "down"), ("sun", "moon")]


def load_model(kind: str):
    """``(model, encode, delimiter ids)``: ``"smollm2"`` (SmolLM2-135M-Instruct) or ``"tiny"``
    (a random tiny Llama, mechanics only; ``encode`` is ``None``)."""
    import torch

    if kind == "smollm2":
        from optzoo.tinylm import load_smollm2

        model, tok = load_smollm2()

        def enc(s: str):
            return torch.tensor(tok(s).input_ids, dtype=torch.long)

        return model.eval(), enc, enc("\n")
    from optzoo.tinylm import tiny_llama

    model = tiny_llama(64, n_layer=2, n_embd=32, n_head=2, n_positions=512, seed=0).eval()
    return model, None, torch.tensor([3])


def make_task(seed: int, t: int, k: int, queries: int, enc, split: str = "test"):
    """``(demos, queries, label ids)``: demos/queries are lists of (x ids, class)."""
    import torch

    rng = np_rng(seed, "context_tuning", split, t)
    if enc is None:  # random token task for the tiny model
        toks = rng.permutation(np.arange(8, 64))
        words = [(torch.tensor(rng.choice(toks[:20], 2)), 0) for _ in range(k + queries)]
        words = [(w, c) if i % 2 == 0 else (torch.tensor(rng.choice(toks[20:40], 2)), 1)
                 for i, (w, c) in enumerate(words)]
        order = rng.permutation(len(words))
        words = [words[i] for i in order]
        return words[:k], words[k:], [torch.tensor([int(toks[50])]), torch.tensor([int(toks[51])])]
    names = list(CATEGORIES)
    a, b = rng.choice(len(names), 2, replace=False)
    lab = LABELS[rng.integers(len(LABELS))]
    if rng.random() < 0.5:
        lab = lab[::-1]
    words = [(enc(w), 0) for w in CATEGORIES[names[a]]] + [(enc(w), 1) for w in CATEGORIES[names[b]]]
    order = rng.permutation(len(words))
    words = [words[i] for i in order]
    c0 = [w for w in words if w[1] == 0]
    c1 = [w for w in words if w[1] == 1]
    demos = [x for pair in zip(c0[: k // 2], c1[: k // 2], strict=True) for x in pair]
    rest = c0[k // 2:] + c1[k // 2:]
    q = [rest[i] for i in rng.permutation(len(rest))[:queries]]
    return demos, q, [enc(lab[0]), enc(lab[1])]


def evaluate(scorer, queries, labels) -> tuple[float, float]:
    """(accuracy, mean label margin log p(correct) - log p(wrong)), lowest mean-NLL label wins."""
    import torch

    rows = [(scorer.query_ids(x), labels[o]) for x, _ in queries for o in (0, 1)]
    nll = scorer.nll(rows).view(-1, 2)
    y = torch.tensor([c for _, c in queries])
    acc = float((nll.argmin(1) == y).float().mean())
    margin = float((nll.gather(1, (1 - y)[:, None]) - nll.gather(1, y[:, None])).mean())
    return acc, margin
