"""E1 with a real judge: principle drift of SmolLM2-135M-Instruct on generated writing pairs.

The simulated judge of E1/E3 drifts because it was built to; this experiment asks a real
instruction-tuned LM, which nobody built to drift, the paper's Fig. 2 question: does a rubric
written after reading a response raise that response's score, compared with the rubric written
from the question alone? Judge: SmolLM2-135M-Instruct (``optzoo.tinylm.load_smollm2``) through
:class:`~optzoo.ipgrm.HFJudge` with the chat template, greedy rubrics and the ``"expected"``
score readout (a 135M model rarely finishes a parseable judgment; the readout never fails).

Pairs (ours, INFERRED; RewardBench cannot be downloaded): a question asks for one sentence
about a topic that uses three given words; R+ is a sentence that uses all three, R- either a
short off-task sentence or one that uses only one of the words. Every seed draws its own pairs
(topic, words, sentence frame, kind of R-), so seeds are independent draws of the pair set.
"""

from __future__ import annotations

import numpy as np

from optzoo._core.rng import np_rng

__all__ = ["TOPICS", "make_pairs", "real_drift"]

TOPICS = {
    "the ocean": "whale storm lighthouse sailor reef tide harbor gull".split(),
    "a busy city": "subway bakery taxi skyline market bridge bicycle museum".split(),
    "a forest": "owl river mushroom cabin fox trail pine campfire".split(),
    "a kitchen": "kettle onion oven recipe knife bread pepper apron".split(),
    "the mountains": "glacier goat summit tent eagle snow rope valley".split(),
    "a school": "teacher chalk library lunch exam bell notebook playground".split(),
    "outer space": "rocket comet astronaut moon satellite orbit telescope star".split(),
    "a farm": "tractor barn chicken wheat fence pond horse scarecrow".split(),
}
_GOOD = (
    "Near {t}, the {a} and the {b} waited quietly while the {c} caught the last light of the day.",
    "Everyone remembers {t} for its {a}, its {b}, and the old {c} that stood there for years.",
    "I walked through {t}, saw a {a}, heard a story about a {b}, and finally found the {c}.",
    "In {t}, a {a} rested beside the {b} as a {c} appeared in the distance.",
)
_ONE_WORD = ("There was a {a} in {t}.", "I saw a {a} once, in {t}.")
_SHORT = ("{T} is nice.", "I like {t}.", "It was a good day.")


def make_pairs(n: int, seed: int) -> list[tuple[str, str, str]]:
    """``n`` (question, R+, R-) triples drawn for ``seed``."""
    rng = np_rng(seed, "ipgrm", "real-pairs")
    topics = list(TOPICS)
    out = []
    for _ in range(n):
        t = topics[int(rng.integers(len(topics)))]
        a, b, c = (str(w) for w in rng.choice(TOPICS[t], 3, replace=False))
        q = f"Write one vivid sentence about {t} that uses the words '{a}', '{b}' and '{c}'."
        good = _GOOD[int(rng.integers(len(_GOOD)))].format(t=t, a=a, b=b, c=c)
        if rng.random() < 0.5:
            bad = _ONE_WORD[int(rng.integers(len(_ONE_WORD)))].format(t=t, a=a)
        else:
            bad = _SHORT[int(rng.integers(len(_SHORT)))].format(t=t, T=t[0].upper() + t[1:])
        out.append((q, good, bad))
    return out


def real_drift(n_pairs: int, seed: int, *, max_tokens_principles: int = 48, model=None) -> dict:
    """The paper's Fig. 2 protocol (as :func:`~optzoo.ipgrm.reward.measure_drift`) with the
    SmolLM2 judge on ``make_pairs(n_pairs, seed)``, plus its control and the judge's
    discrimination s(R+ | P0) - s(R- | P0), and its CPU seconds.

    Scores (Stage 2, expected readout) of R+ and R- under P0(Q), under the rubric the coupled
    judge wrote after reading that response (``*_coupled``: P+ for R+, P- for R-) and under the
    rubric it wrote after reading the pair's *other* response (``*_other``: P- for R+, P+ for
    R-). The last is the control: a rubric written in the same coupled prompt, by the same
    judge, that did not read the response it scores, so any rise it shares with ``*_coupled``
    is not drift toward the response.
    """
    import time

    from optzoo.ipgrm import HFJudge

    if model is None:
        from optzoo.tinylm import load_smollm2

        model = load_smollm2()
    lm, tok = model
    t0 = time.process_time()
    judge = HFJudge(lm.eval(), tok, chat=True, readout="expected", batch_size=16,
                    max_tokens_principles=max_tokens_principles)
    pairs = make_pairs(n_pairs, seed)
    n = len(pairs)
    p0 = judge.principles([q for q, _, _ in pairs])  # HFJudge runs its forwards under no_grad
    coupled = judge.joint([(q, rp) for q, rp, _ in pairs] + [(q, rm) for q, _, rm in pairs])
    p_plus, p_minus = [c[0] for c in coupled[:n]], [c[0] for c in coupled[n:]]
    items = []
    for rubrics, k in ((p0, 1), (p_plus, 1), (p_minus, 1), (p0, 2), (p_minus, 2), (p_plus, 2)):
        items += [(pr[0], pr[k], p) for pr, p in zip(pairs, rubrics, strict=True)]
    s = [float(x[0]) for x in judge.judge(items)]
    names = ("plus_p0", "plus_coupled", "plus_other", "minus_p0", "minus_coupled", "minus_other")
    sc = {name: s[i * n:(i + 1) * n] for i, name in enumerate(names)}

    def rel(a, b):
        return [y / x - 1.0 for x, y in zip(sc[a], sc[b], strict=True)]

    return {"n_pairs": n, "plus_values": rel("plus_p0", "plus_coupled"),
            "minus_values": rel("minus_p0", "minus_coupled"),
            "plus_other_values": rel("plus_p0", "plus_other"),
            "minus_other_values": rel("minus_p0", "minus_other"),
            "plus": float(np.mean(rel("plus_p0", "plus_coupled"))),
            "minus": float(np.mean(rel("minus_p0", "minus_coupled"))),
            "discrimination": float(np.mean(np.array(sc["plus_p0"]) - np.array(sc["minus_p0"]))),
            "scores": sc, "cpu_s": time.process_time() - t0}
