"""The model-free baseline: stable-baselines3's own ``PPO`` on ``as_gymnasium`` copies of the
same environment (no gradients through the simulator), evaluated with the same protocol as
RPO and SHAC (deterministic mean action, the same evaluation start states)."""

from __future__ import annotations

import numpy as np
import torch

from optzoo.rpo.envs import as_gymnasium
from optzoo.rpo.rpo import evaluate

__all__ = ["PPO_SETTINGS", "run_ppo"]

#: RL Baselines3 Zoo's tuned Pendulum-v1 settings (hyperparams/ppo.yml), minus gSDE
#: (use_sde) to keep the plain Gaussian policy, with the networks of the RP arms.
PPO_SETTINGS = {"n_envs": 4, "n_steps": 1024, "batch_size": 64, "gamma": 0.9,
                "gae_lambda": 0.95, "n_epochs": 10, "ent_coef": 0.0, "clip_range": 0.2,
                "learning_rate": 1e-3}


def run_ppo(make_env, total_steps: int, checkpoints, eval_env, eval_seed: int, *, seed: int,
            hidden=(64, 64), learning_rate: float | None = None, settings=None) -> dict:
    """Train SB3 PPO for ``total_steps`` environment steps; evaluate at each checkpoint (env
    steps). ``make_env(k)`` builds a one-copy optzoo env. Returns {"steps", "returns",
    "wall"}."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    s = dict(PPO_SETTINGS if settings is None else settings)
    if learning_rate is not None:
        s["learning_rate"] = learning_rate
    n_envs = s.pop("n_envs")
    # the largest divisor of the per-env budget <= the setting's n_steps, so PPO takes exactly
    # total_steps environment steps (SB3 stops after whole rollouts)
    per_env = int(total_steps) // n_envs
    k = max(1, -(-per_env // s["n_steps"]))
    while per_env % k:
        k += 1
    s["n_steps"] = per_env // k
    vec = DummyVecEnv([lambda k=k: as_gymnasium(make_env(k)) for k in range(n_envs)])
    vec.seed(seed)
    model = PPO("MlpPolicy", vec, seed=seed, device="cpu", verbose=0,
                policy_kwargs={"net_arch": list(hidden), "activation_fn": torch.nn.ELU}, **s)
    # a logger with no outputs: SB3's default (verbose=0, no tensorboard) still creates an
    # empty /tmp/SB3-<date> folder per run
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))

    def policy(obs):
        act, _ = model.predict(obs.detach().cpu().numpy(), deterministic=True)
        return torch.as_tensor(act, dtype=eval_env.dtype)

    marks = sorted(int(c) for c in checkpoints)
    out = {"steps": [], "returns": []}

    class _Eval(BaseCallback):
        def _on_step(self) -> bool:
            while marks and self.num_timesteps >= marks[0]:
                out["steps"].append(marks.pop(0))
                out["returns"].append(float(np.mean(evaluate(policy, eval_env, seed=eval_seed))))
            return True

    import time

    t0 = time.process_time()
    model.learn(total_timesteps=int(total_steps), callback=_Eval())
    while marks:  # the last checkpoint if learn stopped exactly at the budget
        out["steps"].append(marks.pop(0))
        out["returns"].append(float(np.mean(evaluate(policy, eval_env, seed=eval_seed))))
    out["cpu_s"] = time.process_time() - t0
    out["env_steps"] = int(model.num_timesteps)
    vec.close()
    return out
