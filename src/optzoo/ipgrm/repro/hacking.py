"""E3: GRPO reward-hacking dynamics in the constrained-writing world (simulated; INFERRED).

Policy: a factored categorical over response features (the spec's smoke/quick policy): for
each of the 3 keyword slots include-or-not, the number of filler words (0..15), the number of
``BRAG`` tokens (0..2) and ``META`` present-or-not. GRPO with G responses per prompt, group
advantages, clip 0.2 / 0.27 (Clip-Higher), no KL term, ``inner`` Adam updates per batch.

Reward arms (same prompts, init and seeds): ``proxy`` (a linear scalar RM on length and
keyword counts, fitted on labels biased toward long answers, frozen), ``coupled`` (coupled
GRM), ``ip_nocache`` (an independent rubric per response), ``ip_cache`` (one rubric per
question per step). Drift in the coupled judge is injected (``SimulatedJudge``).
"""

from __future__ import annotations

import numpy as np

from optzoo._core.rng import derive_seed, np_rng, torch_generator
from optzoo.ipgrm import (
    CoupledGRMReward,
    IPGRMReward,
    PrincipleCache,
    SimulatedJudge,
    gold_quality,
    grpo_advantages,
    make_question,
)

__all__ = ["ARMS", "consistency_probe", "make_world", "run_grpo", "within_group_noise"]

ARMS = ("proxy", "coupled", "ip_nocache", "ip_cache")
N_FILL = 16


def make_world(n_questions: int, seed: int) -> list[str]:
    rng = np_rng(seed, "world")
    vocab = [f"k{i:02d}" for i in range(60)]
    out = []
    for i in range(n_questions):
        kws = list(rng.choice(vocab, 3, replace=False))
        lo = int(rng.integers(6, 11))
        out.append(make_question(i, kws, lo, lo + 6))
    return out


def _keywords(q: str) -> list[str]:
    return q.split("keywords: ")[1].split(".")[0].split()


class _Policy:
    def __init__(self, seed: int):
        import torch

        self.t = torch
        self.logits = {"kw": torch.zeros(3), "fill": torch.zeros(N_FILL),
                       "brag": torch.tensor([1.5, 0.0, 0.0]), "meta": torch.tensor([-1.5])}
        for v in self.logits.values():
            v.requires_grad_(True)
        self.init = {k: v.detach().clone() for k, v in self.logits.items()}
        self.gen = torch_generator(seed, "policy")

    def sample(self, n: int) -> dict:
        t, L = self.t, self.logits
        with t.no_grad():
            return {"kw": t.bernoulli(t.sigmoid(L["kw"]).expand(n, 3), generator=self.gen),
                    "fill": t.multinomial(t.softmax(L["fill"], 0), n, True, generator=self.gen),
                    "brag": t.multinomial(t.softmax(L["brag"], 0), n, True, generator=self.gen),
                    "meta": t.bernoulli(t.sigmoid(L["meta"]).expand(n), generator=self.gen)}

    def logp(self, a: dict, L=None):
        t = self.t
        L = self.logits if L is None else L
        lk = -t.nn.functional.binary_cross_entropy_with_logits(L["kw"].expand_as(a["kw"]), a["kw"],
                                                                 reduction="none").sum(1)
        lf = t.log_softmax(L["fill"], 0)[a["fill"]]
        lb = t.log_softmax(L["brag"], 0)[a["brag"]]
        lm = -t.nn.functional.binary_cross_entropy_with_logits(L["meta"].expand_as(a["meta"]), a["meta"],
                                                                 reduction="none")
        return lk + lf + lb + lm

    def kl_to_init(self) -> float:
        t = self.t
        with t.no_grad():
            kl = 0.0
            for k in ("fill", "brag"):
                p, q = t.log_softmax(self.logits[k], 0), t.log_softmax(self.init[k], 0)
                kl += float((p.exp() * (p - q)).sum())
            for k in ("kw", "meta"):
                p, q = t.sigmoid(self.logits[k]), t.sigmoid(self.init[k])
                kl += float((p * (p / q).log() + (1 - p) * ((1 - p) / (1 - q)).log()).sum())
        return kl


def _texts(qs: list[str], a: dict) -> list[str]:
    kw, fill, brag, meta = (a["kw"].numpy(), a["fill"].numpy(), a["brag"].numpy(), a["meta"].numpy())
    out = []
    for i, q in enumerate(qs):
        ks = _keywords(q)
        words = [ks[j] for j in range(3) if kw[i, j] > 0] + [f"f{j:02d}" for j in range(int(fill[i]))]
        words += ["BRAG"] * int(brag[i]) + ["META"] * int(meta[i])
        out.append(" ".join(words) if words else "f00")
    return out


def _proxy_rm(seed: int):
    """Linear RM on (words, keywords) fitted to labels that favour length (INFERRED)."""
    rng = np_rng(seed, "proxy")
    n_words = rng.integers(1, 25, 400)
    n_kw = rng.integers(0, 4, 400)
    label = n_kw / 3.0 + 0.08 * n_words + 0.3 * rng.standard_normal(400)
    X = np.stack([np.ones(400), n_words, n_kw], 1)
    coef = np.linalg.lstsq(X, label, rcond=None)[0]

    def score(qs, rs):
        return [float(coef @ [1.0, len(r.split()), len(set(_keywords(q)) & set(r.split()))]) for q, r in zip(qs, rs, strict=True)]

    return score


def within_group_noise(rewards, gold, group: int) -> float:
    """Residual variance of rewards after a pooled within-group regression on gold quality:
    the part of the group's reward spread (what GRPO's advantages see) that quality does not
    explain."""
    r = np.asarray(rewards, float).reshape(-1, group)
    g = np.asarray(gold, float).reshape(-1, group)
    r = r - r.mean(1, keepdims=True)
    g = g - g.mean(1, keepdims=True)
    beta = (r * g).sum() / max((g * g).sum(), 1e-12)
    return float(((r - beta * g) ** 2).mean())


def _reward_fn(arm: str, seed: int, kappa: float, drop_p: float, G: int):
    if arm == "proxy":
        return _proxy_rm(seed), None
    judge = SimulatedJudge(derive_seed(seed, "judge"), drift=kappa, drop_p=drop_p)
    if arm == "coupled":
        return CoupledGRMReward(judge, num_generations=G, default_score=1.0), judge
    cache = PrincipleCache("step") if arm == "ip_cache" else None
    return IPGRMReward(judge, cache=cache, num_generations=G, default_score=1.0), judge


def run_grpo(arm: str, *, seed: int, steps: int, n_prompts: int = 8, group: int = 8, kappa: float = 2.0,
             drop_p: float = 0.9, lr: float = 0.05, inner: int = 2, clip: tuple = (0.2, 0.27),
             progress=None) -> dict:
    """Train the factored policy with one reward arm; per-step curves of training reward,
    gold quality, hack rate, within-group unexplained reward noise and KL to the init."""
    import torch

    world = make_world(64, seed)
    pol = _Policy(seed)
    opt = torch.optim.Adam(list(pol.logits.values()), lr=lr)
    fn, judge = _reward_fn(arm, seed, kappa, drop_p, group)
    rng = np_rng(seed, "prompts")
    curves = {k: [] for k in ("reward", "gold", "hack", "noise", "kl")}
    for _ in range(steps):
        qs = [world[i] for i in rng.choice(len(world), n_prompts, replace=False) for _ in range(group)]
        a = pol.sample(len(qs))
        rs = _texts(qs, a)
        rew = np.asarray(fn(qs, rs), float)
        gold = np.array([gold_quality(q, r) for q, r in zip(qs, rs, strict=True)])
        adv = torch.as_tensor(grpo_advantages(rew, group), dtype=torch.float32)
        with torch.no_grad():
            old = pol.logp(a)
        for _ in range(inner):
            ratio = torch.exp(pol.logp(a) - old)
            loss = -torch.minimum(ratio * adv, ratio.clamp(1 - clip[0], 1 + clip[1]) * adv).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        curves["reward"].append(float(rew.mean()))
        curves["gold"].append(float(gold.mean()))
        curves["hack"].append(float(np.mean([("BRAG" in r) or ("META" in r) for r in rs])))
        curves["noise"].append(within_group_noise(rew, gold, group))
        curves["kl"].append(pol.kl_to_init())
        if progress is not None:
            progress.advance()
    out = {"curves": curves}
    if judge is not None:
        out["stage1_calls"] = judge.calls["principles"]
        out["parse_failures"] = judge.stats.failures
    return out


def consistency_probe(*, seed: int, n_groups: int = 64, group: int = 8) -> dict:
    """Score the same responses (from the initial policy) with IP-GRM with and without the
    cache; returns the within-group unexplained reward noise of each (no drift involved)."""
    world = make_world(64, seed)
    pol = _Policy(seed)
    rng = np_rng(seed, "probe")
    qs = [world[i] for i in rng.choice(len(world), n_groups, replace=True) for _ in range(group)]
    rs = _texts(qs, pol.sample(len(qs)))
    gold = [gold_quality(q, r) for q, r in zip(qs, rs, strict=True)]
    out = {}
    for arm in ("ip_nocache", "ip_cache"):
        fn, _ = _reward_fn(arm, seed, 0.0, 0.0, group)
        out[arm] = within_group_noise(fn(qs, rs), gold, group)
    return out
