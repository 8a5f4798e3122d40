"""The seeded task families: shapes, rule semantics, determinism, baselines, bad input."""

import numpy as np
import pytest

from optzoo.tinylm import (
    ToyLanguage,
    icl_batch,
    icl_eval_set,
    icl_vocabulary,
    ideal_learner_accuracy,
    toy_vocabulary,
)
from optzoo.tinylm.icl import FEATURE0, LABEL0


def _decode(batch, nf):
    """Recover features and labels from the token ids (independent of the generator's code)."""
    body = batch.input_ids[:, 1:]
    k = batch.demo_labels.shape[1]
    demos = np.concatenate([body, np.zeros((len(body), 1), int)], 1).reshape(len(body), k + 1,
                                                                              nf + 1)
    feats = demos[:, :, :nf] - FEATURE0 - 2 * np.arange(nf)
    labels = demos[:, :k, nf] - LABEL0
    return feats, labels


@pytest.mark.parametrize("family", ["pretrain", "shifted"])
def test_icl_tokens_follow_the_rule(family):
    nf, k = 5, 12
    b = icl_batch(200, k=k, family=family, n_features=nf, layout="plain", seed=3)
    assert b.input_ids.shape == (200, 1 + (k + 1) * (nf + 1) - 1)
    assert b.input_ids.max() < len(icl_vocabulary(nf))
    feats, labels = _decode(b, nf)
    assert set(np.unique(feats)) <= {0, 1}
    np.testing.assert_array_equal(labels, b.demo_labels)
    i, j, flip = b.rules.T
    xi = np.stack([feats[r, :, i[r]] for r in range(200)])
    xj = np.stack([feats[r, :, j[r]] for r in range(200)])
    expect = (xi if family == "pretrain" else xi ^ xj) ^ flip[:, None]
    np.testing.assert_array_equal(expect[:, :k], b.demo_labels)
    np.testing.assert_array_equal(expect[:, k], b.labels)
    assert (i == j).all() if family == "pretrain" else (i < j).all()
    # The label after position p is at p + 1.
    np.testing.assert_array_equal(b.input_ids[:, b.label_positions[:-1] + 1] - LABEL0,
                                  b.demo_labels)


def test_fused_layout_carries_the_same_tasks():
    nf, k = 4, 6
    plain = icl_batch(50, k=k, n_features=nf, layout="plain", seed=4)
    fused = icl_batch(50, k=k, n_features=nf, layout="fused", seed=4)
    np.testing.assert_array_equal(plain.features, fused.features)
    vocab = icl_vocabulary(nf)
    assert fused.input_ids.shape == (50, 1 + k * nf + nf)
    assert fused.label_positions.tolist() == [k * nf + nf]
    words = [[vocab[t] for t in row] for row in fused.input_ids]
    for r in range(50):
        demo = np.array(words[r][1:1 + k * nf]).reshape(k, nf)
        for i in range(k):
            for j in range(nf):
                assert demo[i, j] == f"{'abcd'[j]}{fused.features[r, i, j]}/L{fused.demo_labels[r, i]}"
        assert words[r][-nf:] == [f"{'abcd'[j]}{fused.features[r, k, j]}" for j in range(nf)]


def test_icl_determinism_and_seed_sensitivity():
    a = icl_batch(8, seed=1)
    np.testing.assert_array_equal(a.input_ids, icl_batch(8, seed=1).input_ids)
    assert not np.array_equal(a.input_ids, icl_batch(8, seed=2).input_ids)


def test_eval_set_shares_demos_within_a_task():
    e = icl_eval_set(3, k=4, n_queries=5, n_features=4, seed=0)
    d = e.input_ids[:, :-4].reshape(3, 5, -1)  # all but the query's 4 feature tokens
    assert (d == d[:, :1]).all()
    assert (e.rules.reshape(3, 5, 3) == e.rules.reshape(3, 5, 3)[:, :1]).all()


def test_ideal_learner_matches_the_families():
    pre = icl_eval_set(100, k=16, n_queries=8, family="pretrain", seed=9)
    sh = icl_eval_set(100, k=16, n_queries=8, family="shifted", seed=9)
    assert ideal_learner_accuracy(pre).mean() > 0.99
    assert ideal_learner_accuracy(sh, family="shifted").mean() > 0.99
    # A learner that knows only the pre-training rules is at chance on XOR tasks.
    assert abs(ideal_learner_accuracy(sh, family="pretrain").mean() - 0.5) < 0.05
    assert ideal_learner_accuracy(icl_eval_set(100, k=2, n_queries=8, seed=9)).mean() < 0.9


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(batch_size=0, seed=0), ValueError, "'batch_size' argument of icl_batch must be an int"),
    (dict(batch_size=2, seed=-1), ValueError, r"'seed' argument of icl_batch .* \[0, inf\]"),
    (dict(batch_size=2, seed=1.5), TypeError, "'seed' argument of icl_batch"),
    (dict(batch_size=2, k=-1, seed=0), ValueError, "'k' argument of icl_batch"),
    (dict(batch_size=2, family="xor", seed=0), ValueError, "'family' argument .* 'pretrain'"),
    (dict(batch_size=2, n_features=1, seed=0), ValueError, r"'n_features' .* \[2, 8\]"),
    (dict(batch_size=2, layout="json", seed=0), ValueError, "'layout' argument of icl_batch"),
])
def test_icl_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        icl_batch(**kwargs)


def test_icl_eval_set_bad_input():
    with pytest.raises(ValueError, match="'n_queries' argument of icl_eval_set"):
        icl_eval_set(2, n_queries=0, seed=0)
    with pytest.raises(TypeError, match="'seed' argument of icl_eval_set"):
        icl_eval_set(2, seed="0")


def test_toy_pairs_overlap_and_gold_reward():
    world = ToyLanguage(seed=0)
    for k in (1, 3, 10):
        p = world.preference_pairs(300, k=k, seed=5)
        diff = (p.chosen != p.rejected).sum(1)
        assert (diff == k).all()
        assert world.bad_mask[p.rejected].sum(1).min() >= k
        np.testing.assert_allclose(
            p.gold_chosen, world.log_likelihood(p.prompts, p.chosen)
            - world.bad_cost * world.bad_mask[p.chosen].sum(1))
        assert (p.gold_chosen > p.gold_rejected).mean() > 0.95
    rows = world.preference_pairs(2, k=1, seed=5).as_text()
    assert set(rows[0]) == {"prompt", "chosen", "rejected"}
    assert rows[0]["prompt"].startswith("<bos> w") and rows[0]["chosen"].endswith("<eos>")


def test_toy_teacher_is_a_distribution_and_sampling_matches_it():
    world = ToyLanguage(seed=1)
    prompts = world.sample_prompts(4000, seed=0)
    resp = world.sample_responses(prompts, seed=0)
    # Monte Carlo: mean teacher NLL of its own samples equals its entropy rate; compare the
    # first-token frequencies with the exact first-token distribution for one fixed prompt.
    same = np.repeat(prompts[:1], 20000, axis=0)
    first = world.sample_responses(same, seed=1)[:, 0]
    lg = world._logits(same[:1], same[:1, -1])[0]
    p = np.exp(lg - lg.max())
    p /= p.sum()
    freq = np.bincount(first, minlength=32) / len(first)
    assert np.abs(freq - p).max() < 0.02
    assert world.bad_mask[resp].mean() < 0.1  # the teacher avoids bad tokens
    np.testing.assert_array_equal(resp, world.sample_responses(prompts, seed=0))


def test_toy_bad_input():
    world = ToyLanguage(seed=0)
    with pytest.raises(ValueError, match=r"'k' argument of ToyLanguage.preference_pairs .*\[1, 10\]"):
        world.preference_pairs(3, k=11, seed=0)
    with pytest.raises(ValueError, match="'prompts' argument of ToyLanguage.log_likelihood"):
        world.log_likelihood(np.zeros((2, 5), int), np.zeros((2, 10), int))
    with pytest.raises(ValueError, match="'seed' argument of ToyLanguage"):
        ToyLanguage(seed=-2)
    with pytest.raises(ValueError, match="'bad_penalty' argument of ToyLanguage"):
        ToyLanguage(bad_penalty=float("nan"))
    assert toy_vocabulary()[:4] == ["<pad>", "<bos>", "<unk>", "<eos>"]
