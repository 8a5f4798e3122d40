"""rpo benchmark: environment steps per second and one training iteration's time, RPO (M = 5)
against SHAC (M = 1, its anchor) and stable-baselines3 PPO on the same pendulum dynamics, in
one process. ``python -m benchmarks rpo [--num-envs 64] [--horizon 32] [--iters 5]
[--device cpu]``. Timings on a shared 2-core machine are inflated by contention.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def _time_rp(cls_cfg, n, h, iters, device):
    from optzoo.rpo import RPO, PendulumSwingUp

    algo = RPO(PendulumSwingUp(n, device=device), cls_cfg)
    algo.train(n * h, seed=0)  # warm-up iteration
    t = time.perf_counter()
    algo.train(n * h * (iters + 1))
    wall = time.perf_counter() - t
    return {"iter_s": wall / iters, "env_steps_per_s": n * h * iters / wall}


def main(argv=None) -> int:
    from optzoo._core.io import atomic_write_json, environment_manifest
    from optzoo.rpo import RPOConfig, shac_config

    ap = argparse.ArgumentParser(prog="python -m benchmarks rpo")
    ap.add_argument("--num-envs", type=int, default=64)
    ap.add_argument("--horizon", type=int, default=32)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--ppo-steps", type=int, default=8192)
    a = ap.parse_args(argv)
    n, h = a.num_envs, a.horizon
    rows = {"rpo": _time_rp(RPOConfig(horizon=h), n, h, a.iters, a.device),
            "shac": _time_rp(shac_config(horizon=h), n, h, a.iters, a.device)}
    try:
        from stable_baselines3 import PPO
        from stable_baselines3.common.vec_env import DummyVecEnv

        from optzoo.rpo import PendulumSwingUp, as_gymnasium

        vec = DummyVecEnv([lambda: as_gymnasium(PendulumSwingUp(1)) for _ in range(4)])
        model = PPO("MlpPolicy", vec, n_steps=1024, batch_size=64, seed=0, device="cpu", verbose=0)
        t = time.perf_counter()
        model.learn(a.ppo_steps)
        wall = time.perf_counter() - t
        rows["sb3_ppo"] = {"env_steps_per_s": a.ppo_steps / wall,
                           "iter_s": wall / max(1, a.ppo_steps // 4096)}
    except ImportError:
        rows["sb3_ppo"] = "stable-baselines3 not installed"
    for k, v in rows.items():
        print(f"{k:8s} {v}")
    ratio = rows["rpo"]["iter_s"] / rows["shac"]["iter_s"]
    print(f"iteration time ratio RPO / SHAC: {ratio:.2f} (same N={n}, h={h}; M=5 vs 1 actor epochs)")
    if isinstance(rows["sb3_ppo"], dict):
        print(f"env steps/s ratio RPO / SB3 PPO: "
              f"{rows['rpo']['env_steps_per_s'] / rows['sb3_ppo']['env_steps_per_s']:.2f}")
    out = Path(__file__).parent / "results" / "rpo.json"
    atomic_write_json(out, {"args": vars(a), "rows": rows, "ratio_rpo_over_shac": ratio,
                            "environment": environment_manifest()})
    return 0
