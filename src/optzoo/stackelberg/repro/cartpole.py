"""E4 (full scale only): REINFORCE with a running-mean baseline on Gymnasium's CartPole-v1.

Policy MLP 4 -> 64 -> 64 -> 2 (tanh), torch's default init drawn from an explicit generator;
the baseline is an exponential moving average (weight 0.9) of earlier episodes' mean discounted
return (0 in the first episode); Adam on :func:`stackelberg_param_groups` with body LR
``BODY_LR`` and head LR ``c * BODY_LR``. c > 1 is chosen from ``RATIOS`` on a tuning
environment seed and compared with c = 1 on the evaluation seed, same episodes for both. The
metric is the mean undiscounted episode return over training. All settings INFERRED.
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


def reinforce(ratio, *, seed, key, episodes):
    import gymnasium as gym

    policy = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))
    gi = torch_generator(seed, "cartpole_init", key)
    with torch.no_grad():  # torch's default nn.Linear init, from an explicit generator
        for mod in policy[::2]:
            b = 1.0 / math.sqrt(mod.in_features)
            mod.weight.uniform_(-b, b, generator=gi)
            mod.bias.uniform_(-b, b, generator=gi)
    opt = torch.optim.Adam(stackelberg_param_groups(policy, BODY_LR, ratio))
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


def run_cartpole(cfg, seed):
    eps = cfg.cartpole_episodes
    tune = {c: float(np.mean(reinforce(c, seed=seed, key="tune", episodes=eps))) for c in RATIOS}
    c_star = max(tune, key=tune.get)
    best = reinforce(c_star, seed=seed, key="eval", episodes=eps)
    base = reinforce(1.0, seed=seed, key="eval", episodes=eps)
    return {"c": c_star, "tune": {f"{k:g}": v for k, v in tune.items()},
            "best": float(np.mean(best)), "base": float(np.mean(base)),
            "curve_best": best[::10], "curve_base": base[::10]}
