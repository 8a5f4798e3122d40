"""A toy language with a hidden teacher, for preference pairs (reward_calibration spec, section 3).

Vocabulary: 32 word tokens ``w00`` ... ``w31`` plus ``<pad>``, ``<bos>``, ``<unk>``, ``<eos>``.
A prompt is 6 tokens drawn uniformly; a response is 10 tokens drawn from the hidden teacher,
a prompt-conditioned bigram model::

    p(y_t | y_{t-1}, prompt) = softmax(B[y_{t-1}] + mean_{p in prompt} C[p] - bad_penalty * 1_bad)

with ``y_0`` the last prompt token, ``B`` and ``C`` Gaussian tables (scales ``bigram_scale``
and ``prompt_scale``) and a fixed "bad" subset of 8 tokens that the teacher avoids. A rejected
response is the chosen one with ``k`` positions substituted by bad tokens, so ``k`` sets the
overlap of the pair (k = 1: nearly identical, k = 10: all different). Gold reward =
teacher log-likelihood - ``bad_cost`` * (number of bad tokens).

INFERRED (ours): every constant here (scales, 8 bad tokens, penalty, cost); the spec fixes only
the sizes and the structure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optzoo._core.rng import np_rng
from optzoo._core.validation import check_int, check_real

__all__ = ["ToyLanguage", "toy_vocabulary", "PreferencePairs"]

N_WORDS = 32
PROMPT_LEN = 6
RESPONSE_LEN = 10
_SPECIAL = ["<pad>", "<bos>", "<unk>", "<eos>"]
WORD0 = len(_SPECIAL)
EOS = 3


def toy_vocabulary() -> list[str]:
    """Token strings in id order: ``<pad> <bos> <unk> <eos> w00 ... w31``."""
    return _SPECIAL + [f"w{i:02d}" for i in range(N_WORDS)]


@dataclass(frozen=True)
class PreferencePairs:
    """Arrays of word indices in [0, 32) (not token ids) plus gold rewards; ``as_text`` for TRL."""

    prompts: np.ndarray  # (n, 6)
    chosen: np.ndarray  # (n, 10)
    rejected: np.ndarray  # (n, 10)
    gold_chosen: np.ndarray  # (n,)
    gold_rejected: np.ndarray  # (n,)

    def as_text(self) -> list[dict]:
        """Rows ``{"prompt", "chosen", "rejected"}`` of space-separated tokens (TRL format)."""
        def words(a):
            return " ".join(f"w{i:02d}" for i in a)

        return [{"prompt": "<bos> " + words(p), "chosen": " " + words(c) + " <eos>",
                 "rejected": " " + words(r) + " <eos>"}
                for p, c, r in zip(self.prompts, self.chosen, self.rejected, strict=True)]


class ToyLanguage:
    """The hidden teacher world, fully determined by ``seed``.

    >>> world = ToyLanguage(seed=0)
    >>> pairs = world.preference_pairs(4, k=1, seed=1)
    >>> pairs.chosen.shape, int((pairs.chosen != pairs.rejected).sum(1).max())
    ((4, 10), 1)
    >>> bool((pairs.gold_chosen > pairs.gold_rejected).all())
    True
    """

    def __init__(self, *, seed: int = 0, bigram_scale: float = 2.0, prompt_scale: float = 2.0,
                 n_bad: int = 8, bad_penalty: float = 3.0, bad_cost: float = 2.0) -> None:
        owner = "ToyLanguage"
        self.seed = check_int("seed", seed, owner=owner, low=0)
        check_real("bigram_scale", bigram_scale, owner=owner, low=0.0)
        check_real("prompt_scale", prompt_scale, owner=owner, low=0.0)
        self.n_bad = check_int("n_bad", n_bad, owner=owner, low=1, high=N_WORDS - 1)
        check_real("bad_penalty", bad_penalty, owner=owner, low=0.0)
        self.bad_cost = check_real("bad_cost", bad_cost, owner=owner, low=0.0)
        rng = np_rng(self.seed, "toy_teacher")
        self.bigram = rng.normal(0.0, bigram_scale, size=(N_WORDS, N_WORDS))
        self.prompt_table = rng.normal(0.0, prompt_scale, size=(N_WORDS, N_WORDS))
        self.bad = np.sort(rng.choice(N_WORDS, size=self.n_bad, replace=False))
        self.bad_mask = np.zeros(N_WORDS, dtype=bool)
        self.bad_mask[self.bad] = True
        self._penalty = float(bad_penalty)

    def _logits(self, prompts: np.ndarray, prev: np.ndarray) -> np.ndarray:
        ctx = self.prompt_table[prompts].mean(axis=1)  # (n, V)
        return self.bigram[prev] + ctx - self._penalty * self.bad_mask

    def _check(self, name, arr, length, owner):
        arr = np.asarray(arr)
        if arr.ndim != 2 or arr.shape[1] != length or arr.dtype.kind not in "iu" or (
                arr.size and (arr.min() < 0 or arr.max() >= N_WORDS)):
            raise ValueError(f"The {name!r} argument of {owner} must be an integer array of "
                             f"shape (n, {length}) with values in [0, {N_WORDS}). Got shape "
                             f"{arr.shape}, dtype {arr.dtype}.")
        return arr

    def sample_prompts(self, n: int, *, seed: int) -> np.ndarray:
        n = check_int("n", n, owner="ToyLanguage.sample_prompts", low=1)
        seed = check_int("seed", seed, owner="ToyLanguage.sample_prompts", low=0)
        return np_rng(seed, "toy_prompts").integers(0, N_WORDS, size=(n, PROMPT_LEN))

    def sample_responses(self, prompts, *, seed: int, temperature: float = 1.0) -> np.ndarray:
        """Teacher samples (ancestral, vectorised over prompts)."""
        owner = "ToyLanguage.sample_responses"
        prompts = self._check("prompts", prompts, PROMPT_LEN, owner)
        seed = check_int("seed", seed, owner=owner, low=0)
        temperature = check_real("temperature", temperature, owner=owner, low=0.0,
                                 closed="neither")
        rng = np_rng(seed, "toy_responses")
        out = np.empty((len(prompts), RESPONSE_LEN), dtype=np.int64)
        prev = prompts[:, -1]
        for t in range(RESPONSE_LEN):  # 10 steps, each vectorised over all prompts
            lg = self._logits(prompts, prev) / temperature
            p = np.exp(lg - lg.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            u = rng.random((len(prompts), 1))
            prev = np.minimum((p.cumsum(1) < u).sum(1), N_WORDS - 1)
            out[:, t] = prev
        return out

    def log_likelihood(self, prompts, responses) -> np.ndarray:
        """Teacher log-probability of each response given its prompt."""
        owner = "ToyLanguage.log_likelihood"
        prompts = self._check("prompts", prompts, PROMPT_LEN, owner)
        responses = self._check("responses", responses, RESPONSE_LEN, owner)
        prev = np.concatenate([prompts[:, -1:], responses[:, :-1]], axis=1)
        total = np.zeros(len(prompts))
        for t in range(RESPONSE_LEN):
            lg = self._logits(prompts, prev[:, t])
            lse = np.log(np.exp(lg - lg.max(1, keepdims=True)).sum(1)) + lg.max(1)
            total += lg[np.arange(len(lg)), responses[:, t]] - lse
        return total

    def gold_reward(self, prompts, responses) -> np.ndarray:
        responses = np.asarray(responses)
        return (self.log_likelihood(prompts, responses)
                - self.bad_cost * self.bad_mask[responses].sum(1))

    def corrupt(self, responses, *, k: int, seed: int) -> np.ndarray:
        """Replace ``k`` distinct positions of each response by (different) bad tokens."""
        owner = "ToyLanguage.corrupt"
        responses = self._check("responses", responses, RESPONSE_LEN, owner)
        k = check_int("k", k, owner=owner, low=0, high=RESPONSE_LEN)
        seed = check_int("seed", seed, owner=owner, low=0)
        rng = np_rng(seed, "toy_corrupt", k)
        n = len(responses)
        pos = np.argsort(rng.random((n, RESPONSE_LEN)), axis=1)[:, :k]
        out = responses.copy()
        rows = np.arange(n)[:, None]
        # Draw a bad token different from the current one (shift within the bad list).
        cur = out[rows, pos]
        draw = self.bad[rng.integers(0, self.n_bad, size=(n, k))]
        same = draw == cur
        idx = np.searchsorted(self.bad, draw)
        draw = np.where(same, self.bad[(idx + 1) % self.n_bad], draw)
        out[rows, pos] = draw
        return out

    def preference_pairs(self, n: int, *, k: int, seed: int) -> PreferencePairs:
        """``n`` pairs: chosen = a teacher sample, rejected = it with ``k`` bad substitutions."""
        owner = "ToyLanguage.preference_pairs"
        n = check_int("n", n, owner=owner, low=1)
        k = check_int("k", k, owner=owner, low=1, high=RESPONSE_LEN)
        seed = check_int("seed", seed, owner=owner, low=0)
        prompts = self.sample_prompts(n, seed=seed)
        chosen = self.sample_responses(prompts, seed=seed)
        rejected = self.corrupt(chosen, k=k, seed=seed)
        return PreferencePairs(prompts, chosen, rejected, self.gold_reward(prompts, chosen),
                               self.gold_reward(prompts, rejected))

    def encode(self, prompts, responses=None) -> np.ndarray:
        """Token ids ``<bos> prompt [response <eos>]`` for the tokenizer of ``toy_vocabulary``."""
        prompts = np.asarray(prompts)
        parts = [np.full((len(prompts), 1), 1), WORD0 + prompts]
        if responses is not None:
            parts += [WORD0 + np.asarray(responses), np.full((len(prompts), 1), EOS)]
        return np.concatenate(parts, axis=1).astype(np.int64)
