"""HFJudge's expected-score readout and the real-judge drift experiment (E1 with SmolLM2)."""

import math
from types import SimpleNamespace

import pytest
import torch

from optzoo.ipgrm import HFJudge, measure_drift
from optzoo.ipgrm.repro.realjudge import TOPICS, make_pairs, real_drift
from optzoo.tinylm import tiny_gpt2, word_tokenizer

VOCAB = ["<pad>", "<bos>", "<unk>", *[str(d) for d in range(1, 10)], "a", "b"]


class _FixedLogits(torch.nn.Module):
    """Next-token logits that put weight w_d on digit d (and -inf elsewhere but on 'a')."""

    def __init__(self, weights: dict[int, float], other: float):
        super().__init__()
        self.config = SimpleNamespace(n_positions=4096)
        self.weights, self.other = weights, other

    def forward(self, input_ids, attention_mask=None):
        logits = torch.full((*input_ids.shape, len(VOCAB)), -math.inf)
        for d, w in self.weights.items():
            logits[:, -1, VOCAB.index(str(d))] = math.log(w)
        logits[:, -1, VOCAB.index("a")] = math.log(self.other)
        return SimpleNamespace(logits=logits)


def test_expected_score_closed_form():
    # p(3) = 0.2, p(7) = 0.2, p('a') = 0.6: score = (3 + 7) / 2 = 5, digit mass 0.4
    j = HFJudge(_FixedLogits({3: 0.2, 7: 0.2}, 0.6), word_tokenizer(VOCAB), readout="expected")
    (s, mass), = j.expected_scores(["a b"])
    assert s == pytest.approx(5.0, abs=1e-6) and mass == pytest.approx(0.4, abs=1e-6)
    out = j.judge([("a", "b", "a")])
    assert out[0][0] == pytest.approx(5.0, abs=1e-6) and "0.400" in out[0][1]
    assert j.calls["judge"] == 1 and j.stats.failures == 0


def test_expected_readout_rejects_tokenizers_without_digit_tokens():
    model = tiny_gpt2(4, n_layer=1, n_embd=8, n_head=2)
    tok = word_tokenizer(["<pad>", "<bos>", "<unk>", "x"])  # every digit is <unk>
    with pytest.raises(ValueError, match="readout.*nine distinct single tokens"):
        HFJudge(model, tok, readout="expected")
    with pytest.raises(ValueError, match="readout.*'generate', 'expected'.*'mean'"):
        HFJudge(model, tok, readout="mean")
    with pytest.raises(ValueError, match="readout.*'expected'"):
        HFJudge(model, tok).expected_scores(["x"])


def test_pairs_follow_their_instructions_and_are_seeded():
    pairs = make_pairs(20, 3)
    assert pairs == make_pairs(20, 3) and pairs != make_pairs(20, 4)
    for q, good, bad in pairs:
        words = q.split("'")[1::2]
        topic = q.split("about ")[1].split(" that")[0]
        assert len(words) == 3 and set(words) <= set(TOPICS[topic])
        assert all(w in good for w in words) and sum(w in bad for w in words) <= 1


def test_real_drift_runs_on_a_tiny_model():
    words = sorted({w for ws in TOPICS.values() for w in ws})
    tok = word_tokenizer(VOCAB + words)
    model = tiny_gpt2(len(VOCAB) + len(words), n_layer=1, n_embd=16, n_head=2, n_positions=1024)
    o = real_drift(3, 0, max_tokens_principles=4, model=(model, tok))
    assert o["n_pairs"] == 3 and all(math.isfinite(o[k]) for k in ("plus", "minus", "discrimination"))
    sc = o["scores"]
    assert all(1.0 <= x <= 9.0 for v in sc.values() for x in v)
    plus = [b / a - 1 for a, b in zip(sc["plus_p0"], sc["plus_coupled"], strict=True)]
    assert o["plus"] == pytest.approx(sum(plus) / 3)
    assert o["discrimination"] == pytest.approx(sum(a - b for a, b in zip(sc["plus_p0"], sc["minus_p0"],
                                                                          strict=True)) / 3)


def test_measure_drift_returns_raw_scores():
    j = HFJudge(_FixedLogits({2: 0.5, 4: 0.5}, 1.0), word_tokenizer(VOCAB), readout="expected",
                max_tokens_principles=1)
    j.generate = lambda prompts, *, max_new_tokens: ["a"] * len(prompts)  # rubric "a" everywhere
    d = measure_drift(j, [("a q", "b", "a b")])
    assert d["scores"]["plus_p0"] == [pytest.approx(3.0)] and d["plus_values"] == [pytest.approx(0.0)]


def test_real_drift_control_differs_only_in_whose_response_the_rubric_read():
    """The control scores R+ under P-(Q, R-) and R- under P+(Q, R+): the same judge, prompt,
    P0, template and readout as the own-rubric scores; only the rubric's source response."""
    words = sorted({w for ws in TOPICS.values() for w in ws})
    tok = word_tokenizer(VOCAB + words)
    model = tiny_gpt2(len(VOCAB) + len(words), n_layer=1, n_embd=16, n_head=2, n_positions=1024, seed=1)
    o = real_drift(2, 5, max_tokens_principles=4, model=(model, tok))
    j = HFJudge(model.eval(), tok, chat=True, readout="expected", batch_size=16, max_tokens_principles=4)
    pairs = make_pairs(2, 5)
    coupled = j.joint([(q, rp) for q, rp, _ in pairs] + [(q, rm) for q, _, rm in pairs])
    pp, pm = [c[0] for c in coupled[:2]], [c[0] for c in coupled[2:]]
    sc = o["scores"]
    again = [s for s, _ in j.judge([(q, rp, p) for (q, rp, _), p in zip(pairs, pm, strict=True)]
                                   + [(q, rm, p) for (q, _, rm), p in zip(pairs, pp, strict=True)]
                                   + [(q, rp, p) for (q, rp, _), p in zip(pairs, pp, strict=True)])]
    assert again[:2] == pytest.approx(sc["plus_other"]) and again[2:4] == pytest.approx(sc["minus_other"])
    assert again[4:] == pytest.approx(sc["plus_coupled"])
    assert o["plus_other_values"] == pytest.approx([b / a - 1 for a, b in zip(sc["plus_p0"], sc["plus_other"],
                                                                              strict=True)])
