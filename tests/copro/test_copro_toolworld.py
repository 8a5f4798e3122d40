"""Task B (tool-use stand-in): world properties with known answers, sampler, training runs."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from optzoo.copro.repro import toolworld as W

A = {name: i for i, name in enumerate(W.ACTIONS)}
TINY = replace(W.TaskBConfig(), iters=3, n_queries=4, eval_queries=2, eval_k=16, eval_every=1)


def _plans(*plans):
    rows = []
    for p in plans:
        ids = [A[t] for t in p]
        rows.append(ids + [-1] * (W.MAX_LEN - len(ids)))
    return np.array(rows)


def _query(n, feats=(0, 1, 2, 3), budget=5.0):
    return W.Queries(np.repeat(np.array([feats]), n, 0), np.full(n, float(budget)))


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_hand_written_plans_have_the_defined_objectives():
    plans = _plans(["search", "calc", "ANSWER"],
                   ["search", "lookup", "retrieve", "calc", "ANSWER"],
                   ["lookup", "calc", "browse", "ANSWER"])
    F, g = W.evaluate_plans(plans, _query(3, budget=5.0))
    w = W.query_weights(np.array([[0, 1, 2, 3]]))[0]
    s, lk, r, b, c = (A[t] for t in ("search", "lookup", "retrieve", "browse", "calc"))
    # 1: search then calc, one synergy pair; sequential latency; within budget
    assert F[0, 1] == 2.0 and F[0, 2] == 3.0 + 2.0
    assert np.isclose(F[0, 0], _sig(W.BIAS + w[s] + w[c] + W.SYN_BONUS))
    assert np.array_equal(g[0], [0.0, 0.0, 2.0 - 5.0])
    # 2: three reads in a row run in parallel (max latency 3), then calc; cost 7 > budget 5
    assert F[1, 1] == 7.0 and F[1, 2] == 3.0 + 2.0
    assert np.isclose(F[1, 0], _sig(W.BIAS + w[s] + w[lk] + w[r] + w[c] + W.SYN_BONUS))
    assert np.array_equal(g[1], [0.0, 0.0, 2.0])
    # 3: the act tool splits the read runs: 2 + 2 + 4; browse after calc gives no synergy
    assert F[2, 1] == 2.0 + 1.0 + 1.0 and F[2, 2] == 8.0
    assert np.isclose(F[2, 0], _sig(W.BIAS + w[lk] + w[c] + w[b]))
    assert (g[2] <= 0).all()


def test_invalid_formats_and_orders_are_infeasible():
    plans = _plans(["search", "lookup"] * 5,            # no ANSWER within MAX_LEN
                   ["ANSWER"],                           # no tool call
                   ["calc", "ANSWER"],                   # starts with an act tool
                   ["search", "search", "ANSWER"],       # repeated back to back
                   ["browse", "code", "ANSWER"],         # a forbidden pair
                   ["search", "ANSWER", "calc", "calc"])  # tokens after ANSWER do not count
    F, g = W.evaluate_plans(plans, _query(6, budget=7.0))
    feas = (g <= 0).all(1)
    assert feas.tolist() == [False, False, False, False, False, True]
    assert g[0, 0] == 1.0 and F[0, 0] == 0.0           # no answer: success 0
    assert g[1, 0] == 1.0 and g[2, 0] == 1.0
    assert g[3, 1] == 1.0 and g[4, 1] == 1.0 and g[3, 0] == 0.0
    assert F[5, 1] == W.COST[A["search"]] and F[5, 2] == W.LATENCY[A["search"]]


def test_cost_budget_is_respected_and_hv_counts_feasible_points_only():
    rng = np.random.default_rng(0)
    q = W.sample_queries(4000, rng)
    F, g = W.evaluate_plans(W.uniform_plans(4000, rng), q)
    assert np.array_equal(g[:, 2] <= 0, F[:, 1] <= q.budget)
    feas = (g <= 0).all(1)
    assert (F[feas, 1] <= q.budget[feas]).all()
    assert 0.05 <= feas.mean() <= 0.20                  # the uniform policy: scarce feasibility
    one = W.Queries(q.features[:1].repeat(200, 0), np.full(200, 5.0))
    F1, g1 = W.evaluate_plans(W.uniform_plans(200, rng), one)
    hv = W.feasible_hv(F1, g1, 5.0)
    f1 = (g1 <= 0).all(1)
    assert 0.0 < hv <= 1.0
    assert W.feasible_hv(F1[f1], g1[f1], 5.0) == hv     # infeasible points add nothing
    assert W.feasible_hv(F1[~f1], g1[~f1], 5.0) == 0.0


def test_oracle_bounds_random_search():
    cfg = replace(TINY, eval_queries=2)
    held = W.heldout_queries(cfg, 0)
    rand = W.random_search_b(cfg, 0, 64, eval_queries=held)
    assert 0.0 < rand <= W.oracle_hv_b(held) <= 1.0


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_sampler_logprobs_equal_teacher_forced(arch):
    cfg = replace(W.TaskBConfig(), arch=arch)
    model = W.build_policy(cfg, 3)
    q = W.sample_queries(6, np.random.default_rng(1))
    prompts = torch.as_tensor(np.repeat(W.prompt_ids(q), 8, 0))
    gen = torch.Generator().manual_seed(0)
    actions, mask, logp = W.sample_plans(model, prompts, gen)
    assert mask.shape == (48, W.MAX_LEN) and (mask.sum(1) >= 1).all()
    ended = (actions == W.ANSWER).any(1)
    # stop at ANSWER, pad after it
    last = mask.sum(1) - 1
    assert (actions[ended, last[ended]] == W.ANSWER).all()
    assert ((actions >= 0) == mask).all()
    with torch.no_grad():
        tf = W.teacher_forced_logprobs(model, prompts, actions)
    lp = tf.gather(-1, actions.clamp(min=0)[..., None])[..., 0] * mask
    assert torch.allclose(lp, logp, atol=1e-5)
    assert torch.allclose(tf.exp().sum(-1), torch.ones(48, W.MAX_LEN), atol=1e-5)


def test_train_arm_b_is_deterministic():
    a = W.train_arm_b("copro", TINY, 5, lr=3e-3, record="trace")
    b = W.train_arm_b("copro", TINY, 5, lr=3e-3, record="trace")
    assert a == b
    c = W.train_arm_b("copro", TINY, 6, lr=3e-3)
    assert c["hv"] != a["hv"]


@pytest.mark.parametrize("arm", W.ARMS)
def test_tiny_run_of_every_arm(arm):
    r = W.train_arm_b(arm, TINY, 0, lr=1e-3, record="front")
    assert 0.0 <= r["hv"] <= 1.0 and 0.0 <= r["feasible_rate"] <= 1.0
    assert len(r["hv_trace"]) == TINY.iters and len(r["train_feasible"]) == TINY.iters
    assert len(r["front"]["F"]) == TINY.eval_k
    if arm == "copro":
        assert all(0.0 <= x <= 1.0 for x in r["q_feasible"])


def test_unknown_arm_raises():
    with pytest.raises(ValueError, match="unknown arm"):
        W.train_arm_b("ppo", TINY, 0, lr=1e-3)
