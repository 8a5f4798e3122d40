"""IP-GRM rewards for GRPO: the principle cache, TRL-compatible reward functions, group
advantages and the principle-drift protocol.

IP-GRM factorises the judge as P(P, J | Q, R) = P(P | Q) * P(J | Q, P, R) (paper Eq. 3), so
I(P; R | Q) = 0. With the Principle Cache (paper §3.4) each GRPO step generates one rubric
P0(Q) per distinct question and judges the whole group {(Q, P0, R_i)} with it: Stage 1 costs
O(1) per prompt instead of O(G), and every response of a group meets the same rubric, so the
group-normalised advantage A_i = (r_i - mean_g r) / std_g r carries no rubric-to-rubric noise.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import warnings
from collections.abc import Callable

import numpy as np

from optzoo._core.advantages import group_advantages
from optzoo._core.stats import mean_ci
from optzoo._core.validation import check_choice, check_int, check_real, check_type, fail
from optzoo.ipgrm.judges import Judge

__all__ = ["PrincipleCache", "IPGRMReward", "CoupledGRMReward", "grpo_advantages", "measure_drift"]


class PrincipleCache:
    """Rubrics keyed by (hash(Q), judge identity, template, sampling params[, step]).

    ``scope="step"`` (the paper's cache: cleared at every new GRPO step), ``"persistent"``
    (INFERRED extension: kept across steps) or ``"offline"`` (precomputed rubrics from
    :meth:`preload`; Stage 1 is never called and a missing question is an error). One
    generation per key even under concurrent callers (a per-key lock).
    """

    def __init__(self, scope: str = "step"):
        self.scope = check_choice("scope", scope, ("step", "persistent", "offline"), owner="PrincipleCache")
        self._store: dict = {}
        self._offline: dict[str, str] = {}
        self._locks: dict = {}
        self._alocks: dict = {}
        self._guard = threading.Lock()
        self.step = None
        self.misses = 0
        self.hits = 0

    @staticmethod
    def qhash(q: str) -> str:
        return hashlib.sha256(q.encode()).hexdigest()

    def key(self, q: str, identity: tuple) -> tuple:
        return (self.qhash(q), identity) + ((self.step,) if self.scope == "step" else ())

    def new_step(self, step) -> None:
        """Enter GRPO step ``step``; a step-scoped cache forgets older rubrics."""
        if step != self.step:
            self.step = step
            if self.scope == "step":
                self._store.clear()
                self._locks.clear()
                self._alocks.clear()

    def preload(self, rubrics: dict[str, str]) -> None:
        """Offline mode: rubrics precomputed per question text."""
        if self.scope != "offline":
            fail("scope", "PrincipleCache.preload", "'offline' to preload rubrics", self.scope)
        self._offline.update(rubrics)

    def get_many(self, qs: list[str], identity: tuple, make: Callable[[list[str]], list[str]]) -> list[str]:
        """Rubrics for ``qs`` (distinct questions), calling ``make`` once on the missing ones."""
        if self.scope == "offline":
            missing = [q for q in qs if q not in self._offline]
            if missing:
                fail("prompts", "PrincipleCache", "questions with preloaded rubrics in offline mode", missing[0])
            self.hits += len(qs)
            return [self._offline[q] for q in qs]
        keys = [self.key(q, identity) for q in qs]
        with self._guard:
            # one lock per distinct key, taken in a fixed order so concurrent callers cannot deadlock
            order = sorted(set(keys), key=repr)
            locks = [self._locks.setdefault(k, threading.Lock()) for k in order]
        for lk in locks:
            lk.acquire()
        try:
            first = {}
            for i, k in enumerate(keys):
                first.setdefault(k, i)
            todo = [i for k, i in first.items() if k not in self._store]
            if todo:
                made = make([qs[i] for i in todo])
                for i, p in zip(todo, made, strict=True):
                    self._store[keys[i]] = p
            self.misses += len(todo)
            self.hits += len(qs) - len(todo)
            return [self._store[k] for k in keys]
        finally:
            for lk in locks:
                lk.release()

    async def aget(self, q: str, identity: tuple, make) -> str:
        """Async variant for one question: concurrent tasks with the same key await a single
        ``make(q)`` coroutine (a per-key asyncio lock)."""
        if self.scope == "offline":
            return self.get_many([q], identity, lambda _: [])[0]
        k = self.key(q, identity)
        lock = self._alocks.setdefault(k, asyncio.Lock())
        async with lock:
            if k not in self._store:
                self._store[k] = await make(q)
                self.misses += 1
            else:
                self.hits += 1
            return self._store[k]


def _as_text(x, name: str, owner: str, *, allow_empty: bool = False) -> str:
    """TRL passes plain strings or conversations (lists of {'role', 'content'})."""
    if isinstance(x, list):
        x = "\n".join(str(m.get("content", "")) for m in x if isinstance(m, dict))
    if not isinstance(x, str):
        fail(name, owner, "a str or a list of chat messages", x, exc=TypeError)
    if not x.strip() and not allow_empty:
        fail(name, owner, "non-empty text", x)
    return x


class _GRMReward:
    """Shared TRL plumbing: ``f(prompts, completions, **kwargs) -> list[float | None]``."""

    owner = "IPGRMReward"

    def __init__(self, judge: Judge, *, num_generations: int | None = None,
                 default_score: float | None = None, max_failure_rate: float = 0.5):
        check_type("judge", judge, Judge, owner=self.owner, what="a Judge backend")
        self.judge = judge
        self.num_generations = (None if num_generations is None else
                                check_int("num_generations", num_generations, owner=self.owner, low=1))
        self.default_score = (None if default_score is None else
                              check_real("default_score", default_score, owner=self.owner))
        self.max_failure_rate = check_real("max_failure_rate", max_failure_rate, owner=self.owner,
                                           low=0.0, high=1.0)
        self.failures = 0  # judgments without a parseable score (empty completions included)
        self.empty = 0  # empty completions (never sent to the judge)
        self.scored = 0
        self._calls = 0
        self.__name__ = type(self).__name__  # TRL logs reward functions by name

    def _groups(self, qs: list[str], kwargs) -> list[int]:
        uid = kwargs.get("uid")
        if uid is not None:
            if len(uid) != len(qs):
                fail("uid", self.owner, f"a column of length {len(qs)}", len(uid))
            return list(uid)
        G = self.num_generations
        if G is not None:
            if len(qs) % G:
                fail("prompts", self.owner, f"a multiple of num_generations={G} long", len(qs))
            for s in range(0, len(qs), G):
                if len(set(qs[s: s + G])) != 1:
                    fail("prompts", self.owner, f"repeated in blocks of num_generations={G}", qs[s: s + G])
        return qs

    def _step(self, kwargs):
        state = kwargs.get("trainer_state")
        self._calls += 1
        return getattr(state, "global_step", None) if state is not None else self._calls

    def _finish(self, scores: list[float | None], groups: list) -> list[float | None]:
        n_fail = sum(s is None for s in scores)
        self.failures += n_fail
        self.scored += len(scores)
        if scores and n_fail / len(scores) > self.max_failure_rate:
            warnings.warn(f"{self.owner}: {n_fail}/{len(scores)} judgments had no parseable score",
                          stacklevel=3)
        if self.default_score is None:
            by_group: dict = {}
            for g, s in zip(groups, scores, strict=True):
                by_group.setdefault(g, []).append(s)
            bad = [g for g, v in by_group.items() if all(s is None for s in v)]
            if bad:
                raise RuntimeError(f"{self.owner}: every judgment of group {str(bad[0])[:60]!r} failed to "
                                   "parse; set default_score to train through it")
            return scores  # TRL turns None into NaN and ignores it in the group statistics
        return [self.default_score if s is None else s for s in scores]


class IPGRMReward(_GRMReward):
    """IP-GRM as a TRL reward function, with the Principle Cache.

    Per call (= one GRPO step): one Stage-1 call per distinct question (through ``cache``),
    then one batched Stage-2 call over all (Q, P0(Q), R_i). ``cache=None`` is the naive
    two-stage pipeline: an independent rubric P ~ P(P | Q) per response (2G calls per group).
    A response with no parseable score, or an empty completion (never sent to the judge,
    counted in ``empty``), gets ``default_score`` (counted in ``failures``);
    with ``default_score=None`` it is returned as ``None`` (NaN in TRL) and a group whose
    judgments all failed raises.

    >>> from optzoo.ipgrm import SimulatedJudge, make_question
    >>> q = make_question(0, ["sun", "sea", "salt"], 4, 8)
    >>> f = IPGRMReward(SimulatedJudge(seed=0), cache=PrincipleCache("step"), num_generations=2)
    >>> r = f([q, q], ["sun sea salt f1 f2", "f1 f2 BRAG META"])
    >>> r[0] > r[1], f.judge.calls["principles"]
    (True, 1)
    """

    def __init__(self, judge: Judge, *, cache: PrincipleCache | None = None, **kw):
        super().__init__(judge, **kw)
        if cache is not None:
            check_type("cache", cache, PrincipleCache, owner="IPGRMReward", what="a PrincipleCache")
        self.cache = cache
        self.last_principles: list[str] = []

    def __call__(self, prompts, completions, **kwargs) -> list[float | None]:
        if len(prompts) != len(completions):
            fail("completions", self.owner, f"a list as long as prompts ({len(prompts)})", len(completions))
        qs = [_as_text(p, "prompts", self.owner) for p in prompts]
        rs = [_as_text(c, "completions", self.owner, allow_empty=True) for c in completions]
        groups = self._groups(qs, kwargs)
        if self.cache is None:
            ps = self.judge.principles(qs)
        else:
            self.cache.new_step(self._step(kwargs))
            uniq = list(dict.fromkeys(qs))
            got = dict(zip(uniq, self.cache.get_many(uniq, self.judge.identity, self.judge.principles), strict=True))
            ps = [got[q] for q in qs]
        self.last_principles = ps
        keep = [i for i, r in enumerate(rs) if r.strip()]  # an empty completion is a failed judgment
        out = self.judge.judge([(qs[i], rs[i], ps[i]) for i in keep])
        scores: list = [None] * len(rs)
        for i, (sc, _) in zip(keep, out, strict=True):
            scores[i] = sc
        self.empty += len(rs) - len(keep)
        return self._finish(scores, groups)


class CoupledGRMReward(_GRMReward):
    """The coupled GRM baseline: (P, J) generated together from (Q, R_i) for each response."""

    owner = "CoupledGRMReward"

    def __call__(self, prompts, completions, **kwargs) -> list[float | None]:
        if len(prompts) != len(completions):
            fail("completions", self.owner, f"a list as long as prompts ({len(prompts)})", len(completions))
        qs = [_as_text(p, "prompts", self.owner) for p in prompts]
        rs = [_as_text(c, "completions", self.owner, allow_empty=True) for c in completions]
        groups = self._groups(qs, kwargs)
        self._step(kwargs)
        keep = [i for i, r in enumerate(rs) if r.strip()]
        out = self.judge.joint([(qs[i], rs[i]) for i in keep])
        scores: list = [None] * len(rs)
        self.last_principles = [""] * len(rs)
        for i, (p, sc, _) in zip(keep, out, strict=True):
            scores[i], self.last_principles[i] = sc, p
        self.empty += len(rs) - len(keep)
        return self._finish(scores, groups)


def grpo_advantages(rewards, group_size: int, *, eps: float = 1e-6) -> np.ndarray:
    """A_i = (r_i - mean_g r) / (std_g r + eps) over consecutive groups of ``group_size``.

    The project's one GRPO advantage (:func:`optzoo._core.advantages.group_advantages`) with
    this room's convention since its first version: the population standard deviation (divide
    by G, NumPy's default) and ``eps=1e-6``. The official code (a verl fork; its recipe runs
    ``algorithm.adv_estimator=grpo``) uses verl's ``compute_grpo_outcome_advantage``:
    ``torch.std``, i.e. the unbiased (Bessel) standard deviation, with the same ``eps=1e-6``
    (TRL's ``GRPOTrainer`` is unbiased too, with ``eps=1e-4``). The two differ by the constant
    factor sqrt((G-1)/G) per group (0.935 at G = 8); kept as it is so that no reproduced
    number moves (issue 42).

    >>> grpo_advantages([1.0, 3.0, 5.0, 5.0], 2).round(3).tolist()
    [-1.0, 1.0, 0.0, 0.0]
    """
    r = np.asarray(rewards, dtype=float)
    G = check_int("group_size", group_size, owner="grpo_advantages", low=1)
    if r.size % G:
        fail("rewards", "grpo_advantages", f"a length divisible by group_size={G}", r.size)
    if not np.isfinite(r).all():
        fail("rewards", "grpo_advantages", "finite values", r.tolist())
    g = r.reshape(-1, G)
    return group_advantages(g, std="population", eps=eps, dim=1).ravel()


def measure_drift(judge: Judge, pairs, *, level: float = 0.95) -> dict:
    """Principle drift (paper Fig. 2): score R+ and R- under P0(Q), P+(Q, R+) and P-(Q, R-).

    ``pairs``: (Q, R+, R-) triples. P0 comes from Stage 1; P+ / P- are the rubrics the
    coupled judge writes when it sees R+ / R-. Returns the mean relative deviations
    ``plus = s(R+ | P+) / s(R+ | P0) - 1`` and ``minus = s(R- | P-) / s(R- | P0) - 1`` with
    Student-t intervals over pairs (``optzoo._core.stats.mean_ci``), the
    per-pair values, the raw scores (``scores``: lists ``plus_p0``, ``plus_coupled``,
    ``minus_p0``, ``minus_coupled``, ``None`` where unparseable) and the number of unparseable
    judgments (those pairs are skipped).
    """
    check_type("judge", judge, Judge, owner="measure_drift", what="a Judge backend")
    pairs = list(pairs)
    if not pairs:
        fail("pairs", "measure_drift", "a non-empty list of (question, chosen, rejected)", pairs)
    qs = [p[0] for p in pairs]
    p0 = judge.principles(qs)
    coupled = judge.joint([(q, rp) for q, rp, _ in pairs] + [(q, rm) for q, _, rm in pairs])
    n = len(pairs)
    p_plus, p_minus = [c[0] for c in coupled[:n]], [c[0] for c in coupled[n:]]
    items = ([(q, rp, p) for (q, rp, _), p in zip(pairs, p0, strict=True)] + [(q, rp, p) for (q, rp, _), p in zip(pairs, p_plus, strict=True)]
             + [(q, rm, p) for (q, _, rm), p in zip(pairs, p0, strict=True)] + [(q, rm, p) for (q, _, rm), p in zip(pairs, p_minus, strict=True)])
    s = [x[0] for x in judge.judge(items)]
    out = {"n_pairs": n, "parse_failures": 0,
           "scores": {"plus_p0": s[0:n], "plus_coupled": s[n:2 * n], "minus_p0": s[2 * n:3 * n],
                      "minus_coupled": s[3 * n:]}}
    for name, a, b in (("plus", s[0:n], s[n:2 * n]), ("minus", s[2 * n:3 * n], s[3 * n:])):
        dev = [y / x - 1.0 for x, y in zip(a, b, strict=True) if x is not None and y is not None]
        out["parse_failures"] += sum(x is None or y is None for x, y in zip(a, b, strict=True))
        out[name] = mean_ci(dev, level=level).to_dict() if dev else None
        out[name + "_values"] = dev
    return out
