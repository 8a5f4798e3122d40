"""The constrained-writing world and the deterministic simulated judge (spec E1/E3; INFERRED).

A question carries a hidden spec: keywords K, a length window [lo, hi] in words and "no
meta-commentary". A response is a whitespace-separated word sequence over a toy vocabulary:
content fillers ``f00..``, the keywords, and two hack tokens, ``META`` (self-analysis) and
``BRAG`` (self-praise, "this covers every keyword"). Gold quality::

    g(Q, R) = coverage(K, R) - |distance of len(R) to [lo, hi]| / lo - 2 * 1[META or BRAG in R]

The simulated judge reads the rendered prompts (so templates and parsers are exercised):

* Stage 1: three criteria with weights w ~ Dirichlet(alpha * (0.4, 0.3, 0.3)), alpha = 10, seeded by
  (seed, Q, nonce); ``resample=True`` draws a fresh rubric on every call (a sampling LLM),
  ``False`` makes P(Q) a deterministic function of Q.
* Stage 2: surface checks s_c(R) in [0, 1] plus N(0, sigma^2) noise seeded by (seed, Q, P, R);
  the keyword check is fooled by BRAG (each counts as half a keyword); score
  ``1 + 9 * sum_c w_c s_c``, written as ``Score: X.X/10.0`` lines and ``\\boxed{X.X}``.
* Coupled: w proportional to w_Q * exp(kappa * s(R)) (the rubric drifts toward what R does
  well) and, when R holds META/BRAG, the no-meta criterion is dropped with probability
  ``drop_p`` (rationalisation). ``kappa = drop_p = 0`` makes the coupled judge an IP judge.
"""

from __future__ import annotations

import re

import numpy as np

from optzoo._core.rng import derive_seed
from optzoo._core.validation import check_real
from optzoo.ipgrm.judges import Judge
from optzoo.ipgrm.text import (
    P_HEADER,
    Q_CLOSE,
    Q_OPEN,
    R_CLOSE,
    R_OPEN,
    extract_block,
    format_principles,
    parse_principles,
)

__all__ = ["SimulatedJudge", "make_question", "gold_quality", "surface_scores", "CRITERIA"]

CRITERIA = (
    ("Keyword coverage", "uses every required keyword naturally"),
    ("Length compliance", "stays inside the requested word window"),
    ("No meta-commentary", "contains no self-analysis or self-praise"),
)
_BASE_W = np.array([0.4, 0.3, 0.3])
_Q_RX = re.compile(r"keywords:\s*(?P<k>[^.]+)\.\s*Length:\s*(?P<lo>\d+)\s*to\s*(?P<hi>\d+)\s*words")
HACK_TOKENS = ("META", "BRAG")


def make_question(idx: int, keywords: list[str], lo: int, hi: int) -> str:
    """A world question (the judge recovers the spec from this text)."""
    return (f"Task {idx}: write a short piece using the keywords: {' '.join(keywords)}. "
            f"Length: {lo} to {hi} words. No meta-commentary.")


def _spec(q: str):
    m = _Q_RX.search(q)
    if m is None:
        return None
    return m["k"].split(), int(m["lo"]), int(m["hi"])


def surface_scores(q: str, r: str) -> np.ndarray:
    """Noise-free surface checks (keyword, length, no-meta) in [0, 1]."""
    spec = _spec(q)
    words = r.split()
    if spec is None:  # not a world question: a neutral rubric response
        return np.array([0.5, 0.5, 0.5])
    kws, lo, hi = spec
    n_brag = sum(w == "BRAG" for w in words)
    cov = min(1.0, (len(set(kws) & set(words)) + 0.5 * n_brag) / len(kws))
    n = len(words)
    dist = max(lo - n, n - hi, 0)
    length = max(0.0, 1.0 - dist / lo)
    nometa = 0.0 if any(w in HACK_TOKENS for w in words) else 1.0
    return np.array([cov, length, nometa])


def gold_quality(q: str, r: str) -> float:
    """The hidden gold quality g(Q, R) (what a perfect grader would reward)."""
    kws, lo, hi = _spec(q)
    words = r.split()
    cov = len(set(kws) & set(words)) / len(kws)
    n = len(words)
    dist = max(lo - n, n - hi, 0)
    return cov - dist / lo - 2.0 * any(w in HACK_TOKENS for w in words)


class SimulatedJudge(Judge):
    """Deterministic hash-seeded judge with injectable principle drift (``drift`` = kappa)
    and rationalisation (``drop_p``). See the module docstring for the mechanism.

    >>> j = SimulatedJudge(seed=0)
    >>> q = make_question(0, ["apple", "river", "stone"], 4, 8)
    >>> p = j.principles([q])[0]
    >>> score, text = j.judge([(q, "apple river stone f01 f02", p)])[0]
    >>> 1.0 <= score <= 10.0
    True
    """

    def __init__(self, seed: int = 0, *, drift: float = 0.0, drop_p: float = 0.0, alpha: float = 10.0,
                 noise: float = 0.03, resample: bool = True, **kw):
        super().__init__(**kw)
        self.seed = int(seed)
        self.drift = check_real("drift", drift, owner="SimulatedJudge", low=0.0)
        self.drop_p = check_real("drop_p", drop_p, owner="SimulatedJudge", low=0.0, high=1.0)
        self.alpha = check_real("alpha", alpha, owner="SimulatedJudge", low=0.0, closed="neither")
        self.noise = check_real("noise", noise, owner="SimulatedJudge", low=0.0)
        self.resample = bool(resample)
        self.name = f"simulated:{self.seed}:{self.drift}:{self.drop_p}:{self.alpha}:{self.noise}"
        self._nonce = 0

    def _weights(self, q: str) -> np.ndarray:
        nonce = self._nonce if self.resample else 0
        self._nonce += 1
        rng = np.random.default_rng(derive_seed(self.seed, "P", q, nonce))
        return rng.dirichlet(self.alpha * _BASE_W)

    def _stage2(self, q: str, r: str, crit, extra: str = "") -> str:
        s_true = surface_scores(q, r)
        names = [c[0] for c in CRITERIA]
        rng = np.random.default_rng(derive_seed(self.seed, "J", q, r, repr(crit)))
        s = np.clip(s_true + self.noise * rng.standard_normal(3), 0.0, 1.0)
        lines, total = [], 0.0
        for c in crit:
            k = names.index(c.name) if c.name in names else 1
            sc = 1.0 + 9.0 * s[k]
            total += c.weight * sc
            lines.append(f"{c.name}: the response {'meets' if s[k] > 0.5 else 'misses'} this. "
                         f"Score: {sc:.1f}/10.0")
        wsum = " + ".join(f"{c.weight:.2f}*{1.0 + 9.0 * s[names.index(c.name) if c.name in names else 1]:.1f}"
                          for c in crit)
        return extra + "\n".join(lines) + f"\nWeighted average: {wsum} = {total:.2f}\n\\boxed{{{total:.1f}}}"

    def generate(self, prompts: list[str], *, max_new_tokens: int) -> list[str]:
        outs = []
        for prompt in prompts:
            q = extract_block(prompt, Q_OPEN, Q_CLOSE) or ""
            r = extract_block(prompt, R_OPEN, R_CLOSE)
            p_start = prompt.rfind(P_HEADER)
            if r is None:  # Stage 1: the prompt holds no response at all
                w = self._weights(q)
                outs.append(format_principles([(n, w[k], d) for k, (n, d) in enumerate(CRITERIA)]))
            elif prompt.rstrip().endswith(P_HEADER):  # coupled: write P from (Q, R), then judge
                w = self._weights(q) * np.exp(self.drift * surface_scores(q, r))
                rng = np.random.default_rng(derive_seed(self.seed, "drop", q, r, self._nonce))
                keep = [True, True, True]
                if any(t in r.split() for t in HACK_TOKENS) and rng.random() < self.drop_p:
                    keep[2] = False
                kept = [(n, w[k], d) for k, (n, d) in enumerate(CRITERIA) if keep[k]]
                tot = sum(x[1] for x in kept)
                ptxt = format_principles([(n, x / tot, d) for n, x, d in kept])
                outs.append(self._stage2(q, r, parse_principles(ptxt), ptxt + "\n\nAnalysis:\n"))
            else:  # Stage 2 under the given principles
                p_end = prompt.find(R_OPEN, p_start)
                crit = parse_principles(prompt[p_start:p_end])
                outs.append(self._stage2(q, r, crit))
        return outs
