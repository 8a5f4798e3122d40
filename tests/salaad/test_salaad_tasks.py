"""The hidden Markov task: valid stochastic matrices and an exact forward algorithm."""

import itertools
import math

import numpy as np
import torch

from optzoo.salaad import HiddenMarkovTask


def test_matrices_are_stochastic_and_stationary():
    t = HiddenMarkovTask(n_states=6, vocab=10, support=4, seed=3)
    assert np.allclose(t.transition.sum(1), 1) and np.allclose(t.emission.sum(1), 1)
    assert ((t.emission > 0).sum(1) <= 4).all()
    assert np.allclose(t.stationary @ t.transition, t.stationary)


def test_forward_algorithm_matches_enumeration():
    t = HiddenMarkovTask(n_states=3, vocab=4, support=3, rank=2, seed=1)
    x = t.sample(5, 4, seed=2)
    brute = []
    for row in x.numpy():
        p = 0.0
        for hs in itertools.product(range(3), repeat=4):
            q = t.stationary[hs[0]] * t.emission[hs[0], row[0]]
            for i in range(1, 4):
                q *= t.transition[hs[i - 1], hs[i]] * t.emission[hs[i], row[i]]
            p += q
        p1 = sum(t.stationary[h] * t.emission[h, row[0]] for h in range(3))
        brute.append(-(math.log(p) - math.log(p1)) / 3)
    assert abs(t.bayes_nll(x) - float(np.mean(brute))) < 1e-10


def test_sampling_is_seeded_and_empirical_frequencies_match():
    t = HiddenMarkovTask(n_states=4, vocab=6, support=3, seed=0)
    a, b = t.sample(2000, 3, seed=5), t.sample(2000, 3, seed=5)
    assert torch.equal(a, b) and not torch.equal(a, t.sample(2000, 3, seed=6))
    freq = np.bincount(a[:, 0].numpy(), minlength=6) / 2000
    assert np.abs(freq - t.stationary @ t.emission).max() < 0.04
