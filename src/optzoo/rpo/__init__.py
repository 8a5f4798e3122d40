"""RPO: Reparameterization Proximal Policy Optimization (arXiv 2508.06214, ICML 2026).

Fidelity: paper (partly). The surrogate identity (the first epoch is exactly SHAC's BPTT
gradient) and the SHAC baseline are exact; the clip form, regulariser directions, critic and
hyperparameters are INFERRED (see ``docs/papers/rpo.md``).

>>> from optzoo.rpo import RPO, RPOConfig
>>> from optzoo.rpo.envs import PendulumSwingUp
>>> algo = RPO(PendulumSwingUp(num_envs=8), RPOConfig(horizon=8, hidden=(16,), critic_hidden=(16,)))
>>> res = algo.train(total_env_steps=128, seed=0)
>>> res.status.value, res.nit, res.nfev
('budget_used', 2, 128)
"""

from optzoo.rpo.envs import (
    LQR,
    AcrobotSwingUp,
    CartPoleSwingUp,
    DiffEnv,
    PendulumSwingUp,
    Reacher2D,
    as_gymnasium,
)
from optzoo.rpo.networks import Critic, GaussianActor, RunningMeanStd
from optzoo.rpo.rpo import (
    RPO,
    SHAC,
    RPOConfig,
    TrainHistory,
    diag_gaussian_kl,
    evaluate,
    rpo_actor_loss,
    shac_config,
    window_objective,
)

__all__ = [
    "LQR",
    "RPO",
    "SHAC",
    "AcrobotSwingUp",
    "CartPoleSwingUp",
    "Critic",
    "DiffEnv",
    "GaussianActor",
    "PendulumSwingUp",
    "RPOConfig",
    "Reacher2D",
    "RunningMeanStd",
    "TrainHistory",
    "as_gymnasium",
    "diag_gaussian_kl",
    "evaluate",
    "rpo_actor_loss",
    "shac_config",
    "window_objective",
]
