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


class _StateRewardEnv(PendulumSwingUp):
    """Reward of the current state only: the action reaches it through the dynamics."""

    def _dynamics(self, s, u):
        nxt, _ = super()._dynamics(s, u)
        return nxt, -(s ** 2).sum(1)


def test_state_only_reward_is_differentiable_through_the_dynamics():
    """December trial D1: a valid environment with reward r(s_t) was refused by a one-step probe."""
    algo = RPO(_StateRewardEnv(4), RPOConfig(horizon=4, hidden=(4,), critic_hidden=(4,)))
    res = algo.train(4 * 4 * 2, seed=0)
    assert res.status == "budget_used"


class _NarrowObsEnv(PendulumSwingUp):
    def _obs(self, s):
        return super()._obs(s)[:, :1]


def test_observations_narrower_than_obs_dim_are_refused():
    """December trial D6: a (n, 1) observation with obs_dim = 3 was broadcast by the normaliser."""
    with pytest.raises(ValueError, match=r"'env' argument of RPO must be an environment whose "
                                         r"reset\(\) returns observations of shape \(num_envs, "
                                         r"obs_dim\) = \(4, 3\)\. Got '_NarrowObsEnv returning \(4, 1\)'"):
        RPO(_NarrowObsEnv(4))


class _AllNaNEnv(PendulumSwingUp):
    def _dynamics(self, s, u):
        nxt, r = super()._dynamics(s, u)
        return nxt, r * float("nan")


class _ExplodingEnv(PendulumSwingUp):
    def __init__(self, *args, **kw):  # without the speed clip, which would stop the blow-up
        super().__init__(*args, max_speed=None, **kw)

    def _dynamics(self, s, u):
        nxt, r = super()._dynamics(s, u)
        return nxt * 3.0, r


@pytest.mark.parametrize("env_cls,status,match", [
    (_AllNaNEnv, "numerical_error", r"every one of the \d+ batches of this call was skipped"),
    (_ExplodingEnv, "diverged", r"diverged by the end of the run: negated mean return"),
])
def test_a_run_that_learnt_nothing_or_blew_up_is_not_a_success(env_cls, status, match):
    """December trial D8: all batches skipped (NaN rewards) or a return of -inf ended
    `budget_used` with success=True."""
    import warnings

    algo = RPO(env_cls(2, episode_length=64), RPOConfig(horizon=16, hidden=(4,), critic_hidden=(4,)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotConvergedWarning)  # the per-batch skip warnings
        res = algo.train(2 * 16 * 8, seed=0)
    assert res.status == status and not res.success
    import re

    assert re.search(match, res.message), res.message
