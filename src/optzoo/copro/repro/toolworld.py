"""Task B: a tool-use stand-in on :mod:`optzoo.tinylm` (spec section 3), every arm on the same data.

Fidelity: **reconstructed**. The spec fixes only the outline (a tiny autoregressive transformer,
2 layers, d = 64, emits a plan over 8 synthetic tools then ANSWER; objectives success
probability, -cost, -latency; constraints valid format and cost <= budget; G = 8; length <= 10).
Every detail of the world below is INFERRED (ours) and fixed from this definition, before any
arm was run; the world does not depend on the experiment seed.

**Vocabulary** (:data:`VOCAB`, 31 words): ``<pad> <bos> <unk>``; 16 query feature words
``q{a}{v}`` (attribute a in 0..3, value v in 0..3); 3 budget words ``b3 b5 b7``; 8 tools
``search lookup retrieve browse`` (read tools) and ``calc code plan verify`` (act tools); and
``ANSWER``. The 8 tools and ANSWER are the *action vocabulary* (9 words, contiguous at the end).

**Query** (:func:`sample_queries`): 4 attribute values drawn uniformly and a budget
:math:`B\\in\\{3,5,7\\}` drawn uniformly (768 distinct queries); the prompt is the 6 tokens
``<bos> q0v q1v q2v q3v bB``.

**Plan**: up to :data:`MAX_LEN` = 10 generated action tokens; generation stops at ANSWER. Tokens
after ANSWER are padding and masked out of the loss.

**Objectives** ``F = (success, cost, latency)``, senses ``("max", "min", "min")``:

* cost :math:`=\\sum` of the per-call costs :data:`COST` over every tool call before ANSWER
  (repeated calls pay again);
* latency: calls run in order, except that a maximal run of consecutive *read* tools runs in
  parallel (the run costs the maximum of its latencies); act tools are sequential; ANSWER is
  free. Per-tool latencies :data:`LATENCY` are anti-correlated with the costs (cheap tools are
  slow), so cost and latency disagree and the front is three-dimensional;
* success probability :math:`=\\sigma(b_0+\\sum_{t\\in\\text{set}(plan)}w_q[t]+s\\cdot n_{syn})`,
  with the hidden per-query weights :math:`w_q[t]=\\sum_a M[a,v_a,t]`, :math:`M` drawn once
  from ``np_rng(0, "copro", "toolworld", "weights")`` with entries N(0, 0.8²) (so different
  queries need different tools), :math:`b_0=-2` (answering at once is rarely good), each distinct
  tool counted once (repeats add cost, not success), and :math:`n_{syn}` the number of the 4
  ordered synergy pairs :data:`SYNERGY` (a read tool anywhere before its act tool) present, bonus
  :math:`s=0.75`. A sequence that never emits ANSWER has success 0.

**Constraints** ``g`` (feasible iff every entry <= 0), ``k = 3``: ``format`` (1 if the plan hits
the length limit without ANSWER, calls no tool, or starts with an act tool: "gather before
acting"), ``forbidden`` (the number of forbidden immediate successions: a tool repeated back to
back, or one of the 4 pairs of :data:`FORBIDDEN_PAIRS`), and ``cost - B`` (raw cost units).
Under the uniform policy over the action vocabulary 10.0 % of the plans are feasible
(:func:`uniform_feasibility`: 0.070, 0.102, 0.126 at B = 3, 5, 7); the budgets and the
first-call rule were set for this (5-20 % wanted) before any arm was run. Every plan a budget
allows has at most 7 calls, so :func:`oracle_hv_b` enumerates all 44,585 of them (exact best HV).

**Metric** (:func:`feasible_hv`): feasible hypervolume of the samples of one query in the
minimisation form ``(-success, cost, latency)``, with the a-priori reference point
``(0, B + 1, LAT_REF)`` (one cost unit past the budget; :data:`LAT_REF` = 12 is above the slowest
useful plan) and the ideal point ``(-1, 0, 0)``, divided by the box between them; exact HV by
``moocore.hypervolume``; averaged over the held-out queries.

**Policy and training** (:func:`train_arm_b`, mirroring Task A's ``train_arm``): a ``tiny_gpt2``
(or ``tiny_llama``) with 2 layers, d = 64, 4 heads, 16 positions, seeded init, over
:data:`VOCAB` (:func:`tokenizer` is its ``word_tokenizer``). Decoding is restricted to the action
vocabulary (the policy is the softmax of the model's logits over those 9 words; the other words
are never emitted). :func:`sample_plans` is a batched ancestral sampler with a KV cache; its
log-probabilities equal the teacher-forced ones (:func:`teacher_forced_logprobs`, tested). Per
iteration ``n_queries`` queries, ``G`` plans each; weights as in Task A (``q*`` for CoPro,
``A / G`` for the baselines of :mod:`optzoo.copro.baselines`; the scalarised baselines use the
equal weights on the group-standardised (success, cost, latency) and violation penalty 1); then ``epochs`` Adam
steps on :math:`-\\frac1B\\sum_x\\sum_i w_i\\,\\overline{\\log\\pi}(y_i|x)+c\\,\\mathrm{KL}` with the
token-averaged log-likelihood and the exact KL(pi_old || pi) over the 9 actions at every sampled
prefix (token-averaged per plan, then averaged), c = 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from optzoo._core.rng import derive_seed, np_rng, torch_generator
from optzoo.copro.repro.opamp_task import ARMS, BASELINES, arm_weights

__all__ = [
    "ACTIONS",
    "ANSWER",
    "ARMS",
    "BASELINES",
    "BUDGETS",
    "COST",
    "FORBIDDEN",
    "FORBIDDEN_PAIRS",
    "LATENCY",
    "LAT_REF",
    "MAX_LEN",
    "Queries",
    "SENSES",
    "SYNERGY",
    "TOOLS",
    "TaskBConfig",
    "VOCAB",
    "build_policy",
    "evaluate_plans",
    "feasible_hv",
    "heldout_queries",
    "oracle_hv_b",
    "prompt_ids",
    "query_weights",
    "random_search_b",
    "sample_plans",
    "sample_queries",
    "teacher_forced_logprobs",
    "tokenizer",
    "train_arm_b",
    "uniform_feasibility",
    "uniform_plans",
]

TOOLS = ("search", "lookup", "retrieve", "browse", "calc", "code", "plan", "verify")
N_TOOLS = 8
N_READ = 4                       # tools 0..3 are read tools (parallelisable), 4..7 act tools
ANSWER = N_TOOLS                 # action index of ANSWER
ACTIONS = TOOLS + ("ANSWER",)
N_ACT = len(ACTIONS)
N_ATTR, N_VAL = 4, 4
BUDGETS = (3, 5, 7)
MAX_LEN = 10
PROMPT_LEN = 2 + N_ATTR          # <bos>, 4 features, budget
VOCAB = (("<pad>", "<bos>", "<unk>") + tuple(f"q{a}{v}" for a in range(N_ATTR) for v in range(N_VAL))
         + tuple(f"b{b}" for b in BUDGETS) + ACTIONS)
PAD_ID, BOS_ID = 0, 1
FEAT_ID0 = 3
BUDGET_ID0 = FEAT_ID0 + N_ATTR * N_VAL
ACT_ID0 = BUDGET_ID0 + len(BUDGETS)

COST = np.array([1.0, 2.0, 3.0, 1.0, 1.0, 2.0, 1.0, 3.0])
LATENCY = np.array([3.0, 2.0, 1.0, 4.0, 2.0, 2.0, 3.0, 1.0])
#: forbidden immediate successions (a then b), besides any tool repeated back to back
FORBIDDEN_PAIRS = (("code", "search"), ("verify", "browse"), ("browse", "code"), ("plan", "retrieve"))
FORBIDDEN = np.eye(N_TOOLS, dtype=bool)
for _a, _b in FORBIDDEN_PAIRS:
    FORBIDDEN[TOOLS.index(_a), TOOLS.index(_b)] = True
#: ordered synergy pairs: the read tool anywhere before the act tool
SYNERGY = (("search", "calc"), ("lookup", "code"), ("retrieve", "verify"), ("browse", "plan"))
_SYN = np.array([(TOOLS.index(a), TOOLS.index(b)) for a, b in SYNERGY])
SYN_BONUS = 0.75
BIAS = -2.0
WEIGHT_SD = 0.8
#: hidden weights M[a, v, t], fixed by the world's definition (not by the experiment seed)
M = np_rng(0, "copro", "toolworld", "weights").normal(0.0, WEIGHT_SD, (N_ATTR, N_VAL, N_TOOLS))
LAT_REF = 12.0
SENSES = ("max", "min", "min")


class Queries(NamedTuple):
    """A batch of queries: ``features`` [n, 4] ints in 0..3, ``budget`` [n] floats in BUDGETS."""

    features: np.ndarray
    budget: np.ndarray


def sample_queries(n: int, rng) -> Queries:
    """``n`` queries from the numpy generator ``rng`` (uniform features and budget)."""
    feats = rng.integers(0, N_VAL, (n, N_ATTR))
    budget = np.asarray(BUDGETS, dtype=float)[rng.integers(0, len(BUDGETS), n)]
    return Queries(feats, budget)


def query_weights(features) -> np.ndarray:
    """The hidden per-query tool weights :math:`w_q` [n, 8]."""
    f = np.asarray(features)
    return sum(M[a, f[:, a]] for a in range(N_ATTR))


def prompt_ids(queries: Queries) -> np.ndarray:
    """Token ids of the prompts [n, PROMPT_LEN]."""
    f, b = np.asarray(queries.features), np.asarray(queries.budget)
    bidx = np.searchsorted(np.asarray(BUDGETS, dtype=float), b)
    ids = [np.full(len(b), BOS_ID)] + [FEAT_ID0 + N_VAL * a + f[:, a] for a in range(N_ATTR)]
    return np.stack(ids + [BUDGET_ID0 + bidx], 1).astype(np.int64)


def evaluate_plans(actions, queries: Queries):
    """Objectives [n, 3] = (success, cost, latency) and constraints [n, 3] =
    (no_answer, forbidden successions, cost - budget) of plans ``actions`` [n, T] (action indices
    0..8, anything negative = padding; only the tokens before the first ANSWER count)."""
    a = np.asarray(actions, dtype=np.int64)
    n, T = a.shape
    is_ans = a == ANSWER
    has_ans = is_ans.any(1)
    end = np.where(has_ans, is_ans.argmax(1), T)                 # index of ANSWER (or T)
    pos = np.arange(T)
    tool = (pos[None] < end[:, None]) & (a >= 0) & (a < N_TOOLS)
    at = np.where(tool, a, 0)
    cost = (COST[at] * tool).sum(1)
    # latency: runs of consecutive read tools take their max, act tools add up
    lat = np.zeros(n)
    run = np.zeros(n)
    for t in range(T):
        r = tool[:, t] & (at[:, t] < N_READ)
        act = tool[:, t] & ~r
        lt = LATENCY[at[:, t]]
        lat += np.where(~r, run, 0.0) + np.where(act, lt, 0.0)
        run = np.where(r, np.maximum(run, lt), 0.0)
    lat += run
    # forbidden immediate successions
    pair = tool[:, 1:] & tool[:, :-1]
    forb = (FORBIDDEN[at[:, :-1], at[:, 1:]] & pair).sum(1).astype(float)
    # success
    onehot = np.zeros((n, N_TOOLS), dtype=bool)
    rows = np.repeat(np.arange(n), T)
    onehot[rows[tool.ravel()], at.ravel()[tool.ravel()]] = True
    first = np.full((n, N_TOOLS), T)
    last = np.full((n, N_TOOLS), -1)
    for t in range(T):
        hit = tool[:, t]
        idx = np.nonzero(hit)[0]
        first[idx, at[idx, t]] = np.minimum(first[idx, at[idx, t]], t)
        last[idx, at[idx, t]] = t
    n_syn = (first[:, _SYN[:, 0]] < last[:, _SYN[:, 1]]).sum(1)
    w = query_weights(queries.features)
    logit = BIAS + (w * onehot).sum(1) + SYN_BONUS * n_syn
    success = np.where(has_ans, 1.0 / (1.0 + np.exp(-logit)), 0.0)
    F = np.stack([success, cost, lat], 1)
    # format: ends in ANSWER within MAX_LEN, at least one tool call, the first call a read tool
    bad_format = ~has_ans | (end == 0) | ~(tool[:, 0] & (at[:, 0] < N_READ))
    g = np.stack([bad_format.astype(float), forb, cost - np.asarray(queries.budget, dtype=float)], 1)
    return F, g


def feasible_hv(F, g, budget: float) -> float:
    """HV ratio of the feasible points of (objectives [n, 3], constraints [n, 3]) of one query."""
    import moocore

    feas = (np.asarray(g) <= 0).all(1)
    F = np.asarray(F)[feas]
    ref = np.array([0.0, float(budget) + 1.0, LAT_REF])
    ideal = np.array([-1.0, 0.0, 0.0])
    P = np.stack([-F[:, 0], F[:, 1], F[:, 2]], 1)
    P = P[(P < ref).all(1)]
    if P.shape[0] == 0:
        return 0.0
    return float(moocore.hypervolume(P, ref=ref)) / float(np.prod(ref - ideal))


def uniform_plans(n: int, rng) -> np.ndarray:
    """``n`` plans of the uniform policy over the action vocabulary (stop at ANSWER), [n, MAX_LEN]
    action indices, -1 after ANSWER."""
    a = rng.integers(0, N_ACT, (n, MAX_LEN))
    after = np.cumsum(a == ANSWER, 1) - (a == ANSWER) > 0
    return np.where(after, -1, a)


def uniform_feasibility(n: int = 200_000, seed: int = 0) -> dict:
    """Feasible fraction of uniform-policy plans, overall and per budget (a world property)."""
    rng = np_rng(seed, "copro", "toolworld", "uniform")
    q = sample_queries(n, rng)
    _, g = evaluate_plans(uniform_plans(n, rng), q)
    feas = (g <= 0).all(1)
    out = {"all": float(feas.mean())}
    for b in BUDGETS:
        out[f"B={b}"] = float(feas[q.budget == b].mean())
    return out


@lru_cache(maxsize=1)
def _all_plans() -> np.ndarray:
    """Every tool sequence with cost <= max(BUDGETS), then ANSWER (complete: each call costs >= 1,
    so no plan over MAX_LEN - 1 tools fits a budget), [n, MAX_LEN] action indices."""
    bmax = float(max(BUDGETS))
    level = [np.zeros((1, 0), dtype=np.int64)]
    costs = [np.zeros(1)]
    while True:
        seq, c = level[-1], costs[-1]
        nxt = np.concatenate([np.repeat(seq, N_TOOLS, 0),
                              np.tile(np.arange(N_TOOLS), len(seq))[:, None]], 1)
        nc = np.repeat(c, N_TOOLS) + np.tile(COST, len(seq))
        keep = nc <= bmax
        if not keep.any() or nxt.shape[1] >= MAX_LEN:
            break
        level.append(nxt[keep])
        costs.append(nc[keep])
    rows = []
    for seq in level:
        pad = np.full((len(seq), MAX_LEN - seq.shape[1]), -1)
        pad[:, 0] = ANSWER
        rows.append(np.concatenate([seq, pad], 1))
    return np.concatenate(rows)


def oracle_hv_b(queries: Queries) -> float:
    """The largest attainable feasible HV ratio (every feasible plan, by enumeration), averaged."""
    plans = _all_plans()
    hv = []
    for f, b in zip(queries.features, queries.budget, strict=True):
        q = Queries(np.repeat(f[None], len(plans), 0), np.full(len(plans), b))
        hv.append(feasible_hv(*evaluate_plans(plans, q), b))
    return float(np.mean(hv))


# ---------------------------------------------------------------------------------------------
# policy: a tiny transformer over VOCAB, decoding restricted to the action vocabulary

@dataclass(frozen=True)
class TaskBConfig:
    """Task B settings; the field names follow the reproduction's ``Config`` (``n_queries`` and
    ``eval_queries`` are Task B's ``n_specs`` / ``eval_specs``). ``kl_coef`` c and ``lag_lr``
    as in Task A; ``arch`` ``"gpt2"`` or ``"llama"`` (optzoo.tinylm builders)."""

    iters: int = 150
    n_queries: int = 16
    G: int = 8
    epochs: int = 2
    eval_queries: int = 16
    eval_k: int = 64
    eval_every: int = 10
    kl_coef: float = 1.0
    lag_lr: float = 1.0
    arch: str = "gpt2"
    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 4


def tokenizer():
    """The ``word_tokenizer`` of :data:`VOCAB` (ids in VOCAB order)."""
    from optzoo.tinylm.models import word_tokenizer

    return word_tokenizer(list(VOCAB))


def build_policy(cfg, seed: int):
    """The seeded tiny transformer policy (``tiny_gpt2`` or ``tiny_llama``)."""
    from optzoo.tinylm.models import tiny_gpt2, tiny_llama

    build = {"gpt2": tiny_gpt2, "llama": tiny_llama}[getattr(cfg, "arch", "gpt2")]
    return build(len(VOCAB), n_layer=getattr(cfg, "n_layer", 2), n_embd=getattr(cfg, "n_embd", 64),
                 n_head=getattr(cfg, "n_head", 4), n_positions=PROMPT_LEN + MAX_LEN,
                 seed=int(seed) % (2 ** 31), bos_token_id=BOS_ID, pad_token_id=PAD_ID)


def _action_logp(logits):
    """Log-probabilities over the 9 action words from full-vocabulary logits [..., V]."""
    import torch

    return torch.log_softmax(logits[..., ACT_ID0:ACT_ID0 + N_ACT].float(), -1)


def _cache_kw(model) -> str:
    import inspect

    # transformers >= 5.2x renames past_key_values -> cache (the old name warns)
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def sample_plans(model, prompts, gen, max_len: int = MAX_LEN):
    """Batched ancestral sampling with a KV cache: ``prompts`` [N, P] token ids (long tensor).

    Returns ``(actions [N, max_len] long, action index or -1 after ANSWER; mask [N, max_len] bool,
    the generated tokens up to and including ANSWER; logp [N, max_len], the log-probability of
    each sampled token, 0 where masked)``. Rows that have answered keep being fed ``<pad>`` (their
    draws are discarded) so the batch stays rectangular; the loop ends when all rows answered."""
    import torch

    N = prompts.shape[0]
    actions = torch.full((N, max_len), -1, dtype=torch.long)
    mask = torch.zeros((N, max_len), dtype=torch.bool)
    logp = torch.zeros((N, max_len))
    done = torch.zeros(N, dtype=torch.bool)
    kw = _cache_kw(model)
    P = prompts.shape[1]
    with torch.no_grad():
        out = model(input_ids=prompts, attention_mask=torch.ones_like(prompts), use_cache=True)
        for t in range(max_len):
            lp = _action_logp(out.logits[:, -1])
            a = torch.multinomial(lp.exp(), 1, generator=gen)[:, 0]
            live = ~done
            actions[:, t] = torch.where(live, a, -1)
            mask[:, t] = live
            logp[:, t] = torch.where(live, lp.gather(1, a[:, None])[:, 0], 0.0)
            done = done | (a == ANSWER)
            if bool(done.all()) or t + 1 == max_len:
                break
            tok = torch.where(done, PAD_ID, ACT_ID0 + a)
            cache = getattr(out, kw)
            att = torch.ones((N, P + t + 1), dtype=torch.long)   # causal; pads only follow ANSWER
            out = model(input_ids=tok[:, None], attention_mask=att, use_cache=True, **{kw: cache})
    return actions, mask, logp


def teacher_forced_logprobs(model, prompts, actions):
    """Action log-distributions at every plan position [N, T, 9] in one forward pass."""
    import torch

    toks = torch.where(actions >= 0, ACT_ID0 + actions, PAD_ID)
    ids = torch.cat([prompts, toks[:, :-1]], 1)
    logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[:, prompts.shape[1] - 1:]
    return _action_logp(logits)


def _seq_mean(x, mask):
    m = mask.to(x.dtype)
    return (x * m).sum(-1) / m.sum(-1).clamp(min=1.0)


# ---------------------------------------------------------------------------------------------
# weights of the arms (as Task A's ``_weights``, with Task B's scalarisation)

#: scalarised baselines' weights on the group-standardised (success, cost, latency) (signed by
#: SENSES): equal, as Task A's and GDPO's (issue 40; before it, raw objectives weighted
#: (1, 0.1, 0.1)); and the fixed violation penalty rho
_W = (1.0, 1.0, 1.0)
_PENALTY = 1.0


def _weights(arm, F, g, lag):
    """Task A's rule (:func:`~optzoo.copro.repro.opamp_task.arm_weights`) with Task B's senses
    and scalarisation weights."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; expected one of {ARMS}")
    return arm_weights(arm, F, g, SENSES, lag, weights=_W, penalty=_PENALTY)


def _evaluate_policy(model, queries: Queries, k: int, gen):
    import torch

    n = len(queries.budget)
    prompts = torch.as_tensor(np.repeat(prompt_ids(queries), k, 0))
    actions, _, _ = sample_plans(model, prompts, gen)
    rep = Queries(np.repeat(queries.features, k, 0), np.repeat(queries.budget, k))
    F, g = evaluate_plans(actions.numpy(), rep)
    F, g = F.reshape(n, k, 3), g.reshape(n, k, 3)
    hv = [feasible_hv(F[i], g[i], queries.budget[i]) for i in range(n)]
    return float(np.mean(hv)), float((g <= 0).all(-1).mean()), F, g


def heldout_queries(cfg, seed: int, stream: str = "eval") -> Queries:
    """The held-out queries of a (seed, stream): the same for every arm."""
    return sample_queries(cfg.eval_queries, np_rng(seed, "copro", stream, "toolworld", "heldout"))


def train_arm_b(arm, cfg, seed, *, lr, stream="eval", eval_queries=None, record=None):
    """Train one arm on Task B; returns the final feasible HV ratio, feasibility and traces.

    Every arm gets the same initial policy, query stream and sampling stream (derived from
    ``(seed, "copro", stream, "toolworld", ...)``). ``record``: None, ``"trace"`` (HV and
    feasibility every ``eval_every`` iterations, training feasibility, CoPro's q(F) and entropy)
    or ``"front"`` (also the final samples of held-out query 0)."""
    import torch

    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; expected one of {ARMS}")
    rng = np_rng(seed, "copro", stream, "toolworld", "data")
    gen = torch_generator(seed, "copro", stream, "toolworld", "sample")
    model = build_policy(cfg, derive_seed(seed, "copro", stream, "toolworld", "init"))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    from optzoo.copro.baselines import LagrangianGRPO

    lag = LagrangianGRPO(3, weights=_W, lr_mu=getattr(cfg, "lag_lr", 1.0))
    c = getattr(cfg, "kl_coef", 1.0)
    if eval_queries is None:
        eval_queries = heldout_queries(cfg, seed, stream)
    eg = torch_generator(seed, "copro", stream, "toolworld", "evalsample")
    trace, feas_trace, train_feas, qf, qent = [], [], [], [], []
    B, G = cfg.n_queries, cfg.G
    for t in range(cfg.iters):
        q = sample_queries(B, rng)
        prompts = torch.as_tensor(np.repeat(prompt_ids(q), G, 0))
        actions, mask, _ = sample_plans(model, prompts, gen)
        rep = Queries(np.repeat(q.features, G, 0), np.repeat(q.budget, G))
        F, g = evaluate_plans(actions.numpy(), rep)
        F, g = F.reshape(B, G, 3), g.reshape(B, G, 3)
        w = _weights(arm, torch.as_tensor(F), torch.as_tensor(g), lag)
        if record is not None:
            phi = torch.as_tensor((g <= 0).all(-1), dtype=torch.float32)
            train_feas.append(float(phi.mean()))
            if arm == "copro":
                qf.append(float((w * phi).sum(-1).mean()))
                qent.append(float(-(w * torch.log(w)).sum(-1).mean()))
        # drop the all-padding tail so the teacher-forced pass is as short as the longest plan
        T = int(mask.sum(1).max())
        actions, mask = actions[:, :T], mask[:, :T]
        idx = actions.clamp(min=0)[..., None]
        with torch.no_grad():
            old = teacher_forced_logprobs(model, prompts, actions)
        for _ in range(cfg.epochs):
            new = teacher_forced_logprobs(model, prompts, actions)     # [N, T, 9]
            lp = _seq_mean(new.gather(-1, idx)[..., 0], mask).view(B, G)
            kl = _seq_mean((old.exp() * (old - new)).sum(-1), mask).mean()
            loss = -(w * lp).sum(-1).mean() + c * kl
            opt.zero_grad()
            loss.backward()
            opt.step()
        if record is not None and (t + 1) % cfg.eval_every == 0:
            hv, fr, _, _ = _evaluate_policy(model, eval_queries, cfg.eval_k, eg)
            trace.append(hv)
            feas_trace.append(fr)
    hv, fr, Fe, ge = _evaluate_policy(model, eval_queries, cfg.eval_k, eg)
    out = {"hv": hv, "feasible_rate": fr}
    if record is not None:
        out.update(hv_trace=trace, feas_trace=feas_trace, train_feasible=train_feas)
        if arm == "copro":
            out.update(q_feasible=qf, q_entropy=qent)
        if record == "front":
            out["front"] = {"F": Fe[0].tolist(), "feasible": (ge[0] <= 0).all(-1).tolist()}
    return out


def random_search_b(cfg, seed, budget_per_query, eval_queries=None, stream="eval"):
    """Uniform random plans (the uniform policy over the action vocabulary, stop at ANSWER) per
    held-out query at ``budget_per_query`` evaluations; mean feasible HV ratio (reference only:
    not amortised over queries)."""
    if eval_queries is None:
        eval_queries = heldout_queries(cfg, seed, stream)
    rng = np_rng(seed, "copro", "random", "toolworld")
    hv = []
    for f, b in zip(eval_queries.features, eval_queries.budget, strict=True):
        plans = uniform_plans(int(budget_per_query), rng)
        q = Queries(np.repeat(f[None], len(plans), 0), np.full(len(plans), b))
        hv.append(feasible_hv(*evaluate_plans(plans, q), b))
    return float(np.mean(hv))
