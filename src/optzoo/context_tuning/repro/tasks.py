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
LABELS3 = [("foo", "bar", "baz"), ("A", "B", "C"), ("left", "right", "up"), ("sun", "moon", "star"),
           ("X", "Y", "Z")]
FAMILIES = ("cat2", "cat3", "union")


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


def make_task(seed: int, t: int, k: int, queries: int, enc, split: str = "test", family: str = "cat2"):
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
    if family == "cat2":  # two categories, two label words (the family before issue 40)
        cats = [[int(c)] for c in rng.choice(len(names), 2, replace=False)]
        lab = list(LABELS[rng.integers(len(LABELS))])
        if rng.random() < 0.5:
            lab = lab[::-1]
    elif family == "cat3":  # three categories, three label words
        cats = [[int(c)] for c in rng.choice(len(names), 3, replace=False)]
        lab = list(LABELS3[rng.integers(len(LABELS3))])
        lab = [lab[i] for i in rng.permutation(3)]
    elif family == "union":  # two classes, each the union of two categories
        c = rng.choice(len(names), 4, replace=False)
        cats = [[int(c[0]), int(c[1])], [int(c[2]), int(c[3])]]
        lab = list(LABELS[rng.integers(len(LABELS))])
        if rng.random() < 0.5:
            lab = lab[::-1]
    else:
        raise ValueError(f"Unknown task family {family!r}; expected one of {FAMILIES}.")
    n_cls = len(cats)
    pools = []  # per class: its words, categories interleaved, each category shuffled
    for cl in cats:
        per = [[CATEGORIES[names[c]][i] for i in rng.permutation(len(CATEGORIES[names[c]]))] for c in cl]
        pools.append([w for grp in zip(*per, strict=True) for w in grp])
    per_cls = k // n_cls
    demos = [(enc(pools[c][j]), c) for j in range(per_cls) for c in range(n_cls)]
    rest = [(enc(w), c) for c in range(n_cls) for w in pools[c][per_cls:]]
    q = [rest[i] for i in rng.permutation(len(rest))[:queries]]
    return demos, q, [enc(x) for x in lab]


def evaluate(scorer, queries, labels) -> tuple[float, float]:
    """(accuracy, mean label margin: log p(correct) - max log p(wrong)), lowest mean-NLL label wins."""
    import torch

    n = len(labels)
    rows = [(scorer.query_ids(x), labels[o]) for x, _ in queries for o in range(n)]
    nll = scorer.nll(rows).view(-1, n)
    y = torch.tensor([c for _, c in queries])
    acc = float((nll.argmin(1) == y).float().mean())
    right = nll.gather(1, y[:, None]).squeeze(1)
    wrong = nll.masked_fill(torch.nn.functional.one_hot(y, n).bool(), float("inf")).min(1).values
    margin = float((wrong - right).mean())
    return acc, margin
