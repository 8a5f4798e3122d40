"""Bad inputs raise at once, naming the argument, the rule and the value; NaN gradients skip
the batch with a warning and are counted."""

from __future__ import annotations

import pytest
import torch

from optzoo import NotConvergedWarning
from optzoo.rpo import LQR, RPO, PendulumSwingUp, RPOConfig, as_gymnasium, rpo_actor_loss


class _NoGradEnv(PendulumSwingUp):
    def _dynamics(self, s, u):
        nxt, r = super()._dynamics(s, u)
        return nxt.detach(), r.detach()


@pytest.mark.parametrize("kw,match", [
    ({"c_low": 0.0}, r"'c_low' argument of RPOConfig must be a finite real number in \(0, 1\]\. Got 0\.0"),
    ({"c_low": 1.5}, r"'c_low' argument of RPOConfig must be .* in \(0, 1\]\. Got 1\.5"),
    ({"c_high": 0.0}, r"'c_high' argument of RPOConfig must be .* in \(0, inf\)"),
    ({"gamma": 0.0}, r"'gamma' argument of RPOConfig must be .* in \(0, 1\]\. Got 0\.0"),
    ({"gamma": 1.01}, r"'gamma' argument of RPOConfig must be .* in \(0, 1\]"),
    ({"horizon": 0}, r"'horizon' argument of RPOConfig must be an int in \[1, inf\]\. Got 0"),
    ({"epochs": 0}, r"'epochs' argument of RPOConfig must be an int in \[1, inf\]"),
    ({"td_lambda": 1.5}, r"'td_lambda' argument of RPOConfig must be .* in \[0, 1\]"),
    ({"target_alpha": 1.0}, r"'target_alpha' argument of RPOConfig must be .* in \[0, 1\)"),
    ({"lr_schedule": "cosine"}, r"'lr_schedule' argument of RPOConfig must be one of"),
    ({"betas": (0.9,)}, r"'betas' argument of RPOConfig must be a pair"),
])
def test_config_rejects(kw, match):
    with pytest.raises(ValueError, match=match):
        RPOConfig(**kw)


def test_horizon_type():
    with pytest.raises(TypeError, match=r"'horizon' argument of RPOConfig must be an int"):
        RPOConfig(horizon=2.5)


def test_non_differentiable_env_is_rejected():
    with pytest.raises(ValueError, match=r"'env' argument of RPO must be a differentiable "
                                         r"environment .*require grad.*Got"):
        RPO(_NoGradEnv(4))


def test_not_an_env():
    with pytest.raises(TypeError, match=r"'env' argument of SHAC must be a DiffEnv"):
        from optzoo.rpo import SHAC

        SHAC(object())


def test_bounded_or_malformed_actor_is_rejected():
    class TanhActor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 1)

        def forward(self, obs):
            return torch.tanh(self.lin(obs))

    algo = RPO(PendulumSwingUp(2), RPOConfig(horizon=2), actor=TanhActor())
    with pytest.raises(ValueError, match=r"'actor' argument of RPO must be a module whose "
                                         r"forward\(obs\) returns \(mu, std\)"):
        algo.train(4, seed=0)
    with pytest.raises(TypeError, match=r"'actor' argument of RPO must be a torch.nn.Module"):
        RPO(PendulumSwingUp(2), actor=lambda o: o)


def test_train_arguments():
    algo = RPO(PendulumSwingUp(2), RPOConfig(horizon=2, hidden=(4,), critic_hidden=(4,)))
    with pytest.raises(ValueError, match=r"'total_env_steps' argument of RPO.train must be an int in \[1, inf\]"):
        algo.train(0)
    algo.train(4, seed=3)
    with pytest.raises(ValueError, match=r"'seed' argument of RPO.train must be None or the seed"):
        algo.train(8, seed=4)
    with pytest.raises(ValueError, match=r"'state_dict' argument of RPO.load_state_dict must be "
                                         r"a state of an algorithm with the same config"):
        RPO(PendulumSwingUp(2), RPOConfig(horizon=3)).load_state_dict(algo.state_dict())


def test_env_arguments():
    with pytest.raises(ValueError, match=r"'num_envs' argument of PendulumSwingUp must be an int in \[1, inf\]\. Got 0"):
        PendulumSwingUp(0)
    with pytest.raises(ValueError, match=r"'action' argument of LQR.step must be a tensor of shape \(2, 1\)"):
        LQR(2).step(torch.zeros(2, 2))
    with pytest.raises(ValueError, match=r"'env' argument of as_gymnasium must be an environment "
                                         r"with num_envs == 1"):
        as_gymnasium(PendulumSwingUp(4))


def test_actor_loss_batch_keys():
    with pytest.raises(ValueError, match=r"'batch' argument of rpo_actor_loss must be a dict with keys"):
        rpo_actor_loss(lambda o: o, {"obs": torch.zeros(1)}, RPOConfig())


class _NaNEnv(LQR):
    """Rewards turn NaN on the 2nd iteration's window: the action gradients are non-finite."""

    calls = 0

    def _dynamics(self, s, u):
        nxt, r = super()._dynamics(s, u)
        type(self).calls += 1
        if 5 <= type(self).calls <= 8:
            r = r * float("nan")
        return nxt, r


def test_nan_gradients_skip_the_batch_warn_and_count():
    _NaNEnv.calls = -4  # the differentiability probe takes one step... plus margin
    env = _NaNEnv(2)
    algo = RPO(env, RPOConfig(horizon=4, hidden=(4,), critic_hidden=(4,)))
    _NaNEnv.calls = 0
    with pytest.warns(NotConvergedWarning, match=r"non-finite action gradients .*batch skipped"):
        res = algo.train(2 * 4 * 3, seed=0)
    assert res.skipped == 1 and res.history.skipped[-1] == 1
    assert bool(torch.isfinite(res.x).all())
