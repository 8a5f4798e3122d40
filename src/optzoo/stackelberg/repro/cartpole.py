"""E4 (full scale only): REINFORCE with a running-mean baseline on Gymnasium's CartPole-v1.

Policy MLP 4 -> 64 -> 64 -> 2 (tanh); Adam on :func:`stackelberg_param_groups` with body LR
``BODY_LR`` and head LR ``c * BODY_LR``. c > 1 is chosen from ``RATIOS`` on a tuning
environment seed and compared with c = 1 on the evaluation seed, same episodes for both. The
metric is the mean undiscounted episode return over training. All settings INFERRED.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from optzoo._core.rng import derive_seed, torch_generator
from optzoo.stackelberg import stackelberg_param_groups

__all__ = ["reinforce", "run_cartpole"]

BODY_LR = 1e-3
RATIOS = (4.0, 16.0)
GAMMA = 0.99


def reinforce(ratio, *, seed, key, episodes):
    import gymnasium as gym

    torch.manual_seed(derive_seed(seed, "cartpole_init", key))  # nn.Linear init only
    policy = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))
    opt = torch.optim.Adam(stackelberg_param_groups(policy, BODY_LR, ratio))
    env = gym.make("CartPole-v1")
    g = torch_generator(seed, "cartpole_actions", key)
    returns, baseline = [], 0.0
    for ep in range(episodes):
        obs, _ = env.reset(seed=int(derive_seed(seed, "cartpole_env", key, ep) % 2**31))
        logps, rewards, done = [], [], False
        while not done:
            logits = policy(torch.as_tensor(obs, dtype=torch.float32))
            probs = torch.softmax(logits, -1)
            a = int(torch.multinomial(probs, 1, generator=g))
            logps.append(torch.log(probs[a]))
            obs, r, term, trunc, _ = env.step(a)
            rewards.append(float(r))
            done = term or trunc
        G, ret = 0.0, []
        for r in reversed(rewards):
            G = r + GAMMA * G
            ret.append(G)
        ret = torch.tensor(ret[::-1])
        baseline = 0.9 * baseline + 0.1 * float(ret.mean()) if ep else float(ret.mean())
        loss = -(torch.stack(logps) * (ret - baseline)).sum() / len(rewards)
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
