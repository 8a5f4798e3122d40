"""E4 (full scale only): REINFORCE with a running-mean baseline on Gymnasium's CartPole-v1.

Policy MLP 4 -> 64 -> 64 -> 2 (tanh), torch's default init drawn from an explicit generator;
the baseline is an exponential moving average (weight 0.9) of earlier episodes' mean discounted
return (0 in the first episode); Adam on :func:`stackelberg_param_groups` with body LR
``BODY_LR`` and head LR ``c * BODY_LR`` (``head_fast``), or the mirror, body ``c * BODY_LR`` and
head ``BODY_LR`` (``body_fast``, the control). For each, c > 1 is chosen from ``RATIOS`` on a
tuning environment seed and compared with c = 1 on the evaluation seed, same episodes for all.
The metric is the mean undiscounted episode return over training. All settings INFERRED.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from optzoo._core.rng import derive_seed, torch_generator
from optzoo.stackelberg import stackelberg_param_groups

__all__ = ["reinforce", "run_cartpole"]

BODY_LR = 1e-3
RATIOS = (4.0, 16.0)
GAMMA = 0.99
MAX_STEPS = 500  # CartPole-v1's time limit


def reinforce(ratio, *, seed, key, episodes, body_lr=BODY_LR):
    import gymnasium as gym

    policy = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))
    gi = torch_generator(seed, "cartpole_init", key)
    with torch.no_grad():  # torch's default nn.Linear init, from an explicit generator
        for mod in policy[::2]:
            b = 1.0 / math.sqrt(mod.in_features)
            mod.weight.uniform_(-b, b, generator=gi)
            mod.bias.uniform_(-b, b, generator=gi)
    opt = torch.optim.Adam(stackelberg_param_groups(policy, body_lr, ratio))
    env = gym.make("CartPole-v1")
    g = torch_generator(seed, "cartpole_actions", key)
    returns, baseline = [], 0.0
    for ep in range(episodes):
        obs, _ = env.reset(seed=int(derive_seed(seed, "cartpole_env", key, ep) % 2**31))
        u = torch.rand(MAX_STEPS, generator=g)  # one uniform per step: a = 1 iff u >= pi(0|s)
        states, actions, rewards, done = [], [], [], False
        with torch.no_grad():  # the rollout; the log-probabilities are recomputed in one batch
            while not done:
                x = torch.as_tensor(obs, dtype=torch.float32)
                p0 = float(torch.softmax(policy(x), -1)[0])
                a = int(float(u[len(actions)]) >= p0)
                states.append(x)
                actions.append(a)
                obs, r, term, trunc, _ = env.step(a)
                rewards.append(float(r))
                done = term or trunc
        G, ret = 0.0, []
        for r in reversed(rewards):
            G = r + GAMMA * G
            ret.append(G)
        ret = torch.tensor(ret[::-1])
        logp = torch.log_softmax(policy(torch.stack(states)), -1)
        logp = logp.gather(1, torch.tensor(actions)[:, None])[:, 0]
        # the baseline comes from earlier episodes only, so the gradient estimate stays unbiased
        loss = -(logp * (ret - baseline)).sum() / len(rewards)
        baseline = 0.9 * baseline + 0.1 * float(ret.mean()) if ep else float(ret.mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
        returns.append(sum(rewards))
    env.close()
    return returns


def _run_arm(arm, c, *, seed, key, episodes):
    """``head_fast``: body LR BODY_LR, head c x BODY_LR; ``body_fast``: the mirror (body
    c x BODY_LR, head BODY_LR); ``uniform``: c = 1."""
    import warnings

    if arm == "body_fast":
        with warnings.catch_warnings():  # a head slower than the body warns by design
            warnings.simplefilter("ignore", UserWarning)
            return reinforce(1.0 / c, seed=seed, key=key, episodes=episodes, body_lr=c * BODY_LR)
    return reinforce(c if arm == "head_fast" else 1.0, seed=seed, key=key, episodes=episodes)


def run_cartpole(cfg, seed, Record):
    """Per seed: c > 1 chosen from ``RATIOS`` for the head-faster and for the body-faster arm on
    a tuning environment seed (same ratios, same episodes), then both and c = 1 on the
    evaluation seed; the metric is the mean return over the training episodes."""
    from optzoo.repro.tuning import select

    eps = cfg.cartpole_episodes
    recs, curves = [], {}
    for arm in ("head_fast", "body_fast"):
        ch = select(RATIOS, lambda c, _s, arm=arm: float(np.mean(_run_arm(arm, c, seed=seed, key="tune", episodes=eps))),
                    stream="tune env", arm=arm, knob="ratio", context="cartpole", direction="max",
                    eval_budget=eps, budget_unit="episodes")  # ties: the first ratio
        c_star = ch.value
        recs += ch.to_records()
        curves[arm] = _run_arm(arm, c_star, seed=seed, key="eval", episodes=eps)
        recs += [Record("cartpole", arm, "tuning", "ratio", c_star),
                 Record("cartpole", arm, "tuning", "grid_size", len(RATIOS))]
    curves["uniform"] = _run_arm("uniform", 1.0, seed=seed, key="eval", episodes=eps)
    for arm, cur in curves.items():
        recs.append(Record("cartpole", arm, "eval", "mean_return", float(np.mean(cur))))
        recs += [Record("cartpole", arm, f"ep{10 * i}", "return_curve", float(v), x=10 * i)
                 for i, v in enumerate(cur[::10])]
    return recs
