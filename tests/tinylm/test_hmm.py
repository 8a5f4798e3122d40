"""The hidden Markov task family (optzoo.tinylm.hmm): valid stochastic matrices, the forward
algorithm against brute-force enumeration over hidden paths, the exact entropy, sampling
shapes, seed determinism and bad inputs."""

import itertools
import math

import numpy as np
import pytest
import torch

from optzoo.tinylm import HiddenMarkovTask


def _brute_logp(t, row):
    """log p(x_1..x_T) by summing over every hidden path (independent of the forward pass)."""
    H, T = t.n_states, len(row)
    p = 0.0
    for hs in itertools.product(range(H), repeat=T):
        q = t.stationary[hs[0]] * t.emission[hs[0], row[0]]
        for i in range(1, T):
            q *= t.transition[hs[i - 1], hs[i]] * t.emission[hs[i], row[i]]
        p += q
    return math.log(p) if p > 0 else -math.inf


def test_matrices_are_stochastic_and_stationary():
    t = HiddenMarkovTask(n_states=6, vocab=10, support=4, seed=3)
    assert np.allclose(t.transition.sum(1), 1) and np.allclose(t.emission.sum(1), 1)
    assert (t.transition >= 0).all() and (t.emission >= 0).all()
    assert ((t.emission > 0).sum(1) <= 4).all()
    assert np.allclose(t.stationary @ t.transition, t.stationary) and np.isclose(t.stationary.sum(), 1)


def test_forward_algorithm_matches_enumeration():
    t = HiddenMarkovTask(n_states=3, vocab=4, support=3, rank=2, seed=1)
    x = t.sample(5, 4, seed=2)
    brute = []
    for row in x.numpy():
        p1 = math.log(sum(t.stationary[h] * t.emission[h, row[0]] for h in range(3)))
        brute.append(-(_brute_logp(t, row) - p1) / 3)
    assert abs(t.bayes_nll(x) - float(np.mean(brute))) < 1e-10
    full = float(np.mean([-_brute_logp(t, row) / 4 for row in x.numpy()]))
    assert abs(t.bayes_nll(x, skip_first=False) - full) < 1e-10


def test_exact_entropy_matches_brute_force_enumeration():
    # every token sequence and every hidden path enumerated: H(X_2..X_T | X_1) / (T - 1)
    t = HiddenMarkovTask(n_states=3, vocab=3, support=2, rank=2, seed=4)
    T = 4
    h_joint, h_first = 0.0, 0.0
    for row in itertools.product(range(3), repeat=T):
        lp = _brute_logp(t, row)
        if lp > -math.inf:
            h_joint -= math.exp(lp) * lp
    for x1 in range(3):
        p = float(t.stationary @ t.emission[:, x1])
        if p > 0:
            h_first -= p * math.log(p)
    assert abs(t.entropy(T) - (h_joint - h_first) / (T - 1)) < 1e-10
    assert abs(t.entropy(T, skip_first=False) - h_joint / T) < 1e-10
    # the per-token conditional entropy decreases towards the entropy rate
    assert t.entropy(2) >= t.entropy(3) - 1e-12 >= t.entropy(6) - 2e-12
    # and the Bayes NLL of many samples estimates it (law of large numbers)
    x = t.sample(20000, T, seed=7)
    assert abs(t.bayes_nll(x) - t.entropy(T)) < 0.02


def test_sampling_shapes_and_seed_determinism():
    t = HiddenMarkovTask(n_states=4, vocab=6, support=3, seed=0)
    a, b = t.sample(2000, 3, seed=5), t.sample(2000, 3, seed=5)
    assert a.shape == (2000, 3) and a.dtype == torch.int64
    assert int(a.min()) >= 0 and int(a.max()) < 6
    assert torch.equal(a, b) and not torch.equal(a, t.sample(2000, 3, seed=6))
    freq = np.bincount(a[:, 0].numpy(), minlength=6) / 2000
    assert np.abs(freq - t.stationary @ t.emission).max() < 0.04
    # the task itself is a function of its seed
    u, v, w = HiddenMarkovTask(seed=2), HiddenMarkovTask(seed=2), HiddenMarkovTask(seed=3)
    assert np.array_equal(u.transition, v.transition) and np.array_equal(u.emission, v.emission)
    assert not np.array_equal(u.transition, w.transition)
    assert t.sample(1, 1, seed=0).shape == (1, 1)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"'support' argument of HiddenMarkovTask must be an int in \[1, 8\]\. Got 9"):
        HiddenMarkovTask(n_states=4, vocab=8, support=9)
    with pytest.raises(ValueError, match=r"'n_states' argument of HiddenMarkovTask must be an int in \[2, inf\]"):
        HiddenMarkovTask(n_states=1)
    with pytest.raises(ValueError, match=r"'rank' argument of HiddenMarkovTask must be an int in \[1, 4\]"):
        HiddenMarkovTask(n_states=4, vocab=8, support=3, rank=5)
    with pytest.raises(ValueError, match=r"'concentration' argument of HiddenMarkovTask"):
        HiddenMarkovTask(concentration=0.0)
    t = HiddenMarkovTask(n_states=3, vocab=4, support=2, rank=2, seed=0)
    with pytest.raises(ValueError, match=r"'batch' argument of HiddenMarkovTask.sample must be an int in \[1, inf\]\. Got 0"):
        t.sample(0, 4, seed=0)
    with pytest.raises(ValueError, match=r"'length' argument of HiddenMarkovTask.sample"):
        t.sample(2, 0, seed=0)
    with pytest.raises(ValueError, match=r"'tokens' argument of HiddenMarkovTask.bayes_nll must be integer token ids in \[0, 3\]"):
        t.bayes_nll(np.array([[0, 4]]))
    with pytest.raises(ValueError, match=r"'tokens' argument of HiddenMarkovTask.bayes_nll must be a \(batch, length\) array"):
        t.bayes_nll(np.array([0, 1]))
    bad = None
    for a_, b_ in itertools.product(range(4), repeat=2):
        if _brute_logp(t, (a_, b_)) == -math.inf:
            bad = np.array([[a_, b_]])
            break
    assert bad is not None
    with pytest.raises(ValueError, match=r"'tokens' argument of HiddenMarkovTask.bayes_nll must be sequences of positive probability"):
        t.bayes_nll(bad)
    with pytest.raises(ValueError, match=r"'length' argument of HiddenMarkovTask.entropy must be a length with vocab\*\*length <= 2000000"):
        HiddenMarkovTask().entropy(8)
