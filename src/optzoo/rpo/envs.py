"""Batched differentiable torch environments for RPO / SHAC, and a Gymnasium adapter.

A :class:`DiffEnv` simulates ``num_envs`` copies at once with differentiable torch operations,
so the return of a rollout can be differentiated with respect to every action (BPTT). The
policy's raw action ``a`` is unbounded (an invertible Gaussian); environments with bounded
controls squash it inside :meth:`step` (``u = max_action * tanh(a)``, as SHAC does).

Protocol (what a user implements for their own simulator)::

    num_envs, obs_dim, act_dim, episode_length      # ints
    reset(seed=None) -> obs                          # (num_envs, obs_dim), starts every copy
    step(action) -> (obs, reward, done, info)        # reward (num_envs,), differentiable
    detach()                                         # cut the graph, keep the state
    info["truncated"]: bool (num_envs,)              # done by the time limit (bootstrap V)
    info["terminal_obs"]: (num_envs, obs_dim)        # the observation before an auto-reset

Copies that finish an episode are reset inside ``step`` (the returned ``obs`` is the new
episode's); the reset state carries no graph, so no gradient crosses an episode boundary.
Environments here also have ``state_dict()`` / ``load_state_dict()`` (state, step counters,
generator) so a checkpointed trainer continues the identical trajectory.

Environments: :class:`PendulumSwingUp`, :class:`CartPoleSwingUp`, :class:`AcrobotSwingUp`,
:class:`Reacher2D`, :class:`LQR` (linear dynamics, quadratic cost; closed form via
``scipy.linalg.solve_discrete_are``). :func:`as_gymnasium` runs any of them (one copy) under
Gymnasium agents such as stable-baselines3.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, runtime_checkable

import torch

from optzoo._core.validation import check_device, check_int, check_real, fail

__all__ = [
    "AcrobotSwingUp",
    "BatchedEnv",
    "CartPoleSwingUp",
    "DiffEnv",
    "LQR",
    "PendulumSwingUp",
    "Reacher2D",
    "as_gymnasium",
    "check_differentiable",
]


@runtime_checkable
class DiffEnv(Protocol):
    """A batched differentiable environment (see the module docstring)."""

    num_envs: int
    obs_dim: int
    act_dim: int
    episode_length: int

    def reset(self, seed: int | None = None) -> torch.Tensor: ...

    def step(self, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict]: ...

    def detach(self) -> None: ...


def check_differentiable(env: Any, *, owner: str) -> None:
    """Raise unless ``env`` follows :class:`DiffEnv` and its rewards depend differentiably on
    the action: probed with two steps from a copy of the state (then restored), the first
    action requiring grad, so a reward of the state alone, which the action reaches through
    the dynamics one step later, passes. Observations must have shape (num_envs, obs_dim)."""
    if not isinstance(env, DiffEnv):
        raise TypeError(f"The 'env' argument of {owner} must be a DiffEnv (num_envs, obs_dim, "
                        f"act_dim, episode_length, reset, step, detach). Got {type(env).__name__}.")
    saved = env.state_dict() if hasattr(env, "state_dict") else None
    if saved is None:
        return  # cannot probe without disturbing the user's env; the trainer checks on its 1st step
    try:
        obs = env.reset(seed=0)
        check_obs(obs, env, owner=owner, where="reset()")
        kw = {"dtype": getattr(env, "dtype", torch.float32), "device": getattr(env, "device", "cpu")}
        a = torch.zeros(env.num_envs, env.act_dim, requires_grad=True, **kw)
        obs, r1, _, _ = env.step(a)
        check_obs(obs, env, owner=owner, where="step()")
        _, r2, _, _ = env.step(torch.zeros(env.num_envs, env.act_dim, **kw))
    finally:
        env.load_state_dict(saved)
    if not any(isinstance(r, torch.Tensor) and r.requires_grad for r in (r1, r2)):
        fail("env", owner, "a differentiable environment (a reward within two steps of an "
             "action must require grad when the action does)",
             f"{type(env).__name__} whose rewards have requires_grad=False")


def check_obs(obs: Any, env: Any, *, owner: str, where: str) -> None:
    """Raise unless ``obs`` is a tensor of shape (num_envs, obs_dim) (a narrower one would be
    broadcast by the observation normaliser without a word)."""
    want = (env.num_envs, env.obs_dim)
    if not isinstance(obs, torch.Tensor) or tuple(obs.shape) != want:
        got = tuple(obs.shape) if isinstance(obs, torch.Tensor) else type(obs).__name__
        fail("env", owner, f"an environment whose {where} returns observations of shape "
             f"(num_envs, obs_dim) = {want}", f"{type(env).__name__} returning {got}")


class BatchedEnv:
    """Base class: batched state, per-copy step counters, auto-reset, seeded generator.

    Subclasses define ``state_dim``, ``_initial(n)`` (fresh states), ``_dynamics(s, a)`` ->
    (next state, reward) and ``_obs(s)``. ``max_action`` (None: no squashing) sets
    ``u = max_action * tanh(a)``.
    """

    obs_dim: int
    act_dim: int
    state_dim: int
    max_action: float | None = None

    def __init__(self, num_envs: int = 64, *, episode_length: int, device=None,
                 dtype=torch.float32) -> None:
        owner = type(self).__name__
        self.num_envs = check_int("num_envs", num_envs, owner=owner, low=1)
        self.episode_length = check_int("episode_length", episode_length, owner=owner, low=1)
        self.device = check_device("device", device, owner=owner)
        if dtype not in (torch.float32, torch.float64):
            fail("dtype", owner, "torch.float32 or torch.float64", dtype)
        self.dtype = dtype
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(0)
        self.state = self._initial(self.num_envs)
        self.t = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)

    # ---- to define in subclasses -----------------------------------------------------------
    def _initial(self, n: int) -> torch.Tensor:
        raise NotImplementedError

    def _dynamics(self, s: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def _obs(self, s: torch.Tensor) -> torch.Tensor:
        return s

    def _terminated(self, s: torch.Tensor) -> torch.Tensor:
        return torch.zeros(s.shape[0], dtype=torch.bool, device=s.device)

    # ---- protocol ---------------------------------------------------------------------------
    def _rand(self, *shape) -> torch.Tensor:
        return torch.rand(*shape, generator=self.generator, device=self.device, dtype=self.dtype)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        if seed is not None:
            self.generator.manual_seed(check_int("seed", seed, owner=f"{type(self).__name__}.reset", low=0))
        self.state = self._initial(self.num_envs)
        self.t = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        return self._obs(self.state)

    def squash(self, action: torch.Tensor) -> torch.Tensor:
        return action if self.max_action is None else self.max_action * torch.tanh(action)

    def step(self, action: torch.Tensor):
        if action.shape != (self.num_envs, self.act_dim):
            fail("action", f"{type(self).__name__}.step", f"a tensor of shape ({self.num_envs}, "
                 f"{self.act_dim})", tuple(action.shape))
        nxt, reward = self._dynamics(self.state, self.squash(action.to(self.dtype)))
        self.t = self.t + 1
        terminated = self._terminated(nxt)
        truncated = (self.t >= self.episode_length) & ~terminated
        done = terminated | truncated
        terminal_obs = self._obs(nxt)
        if bool(done.any()):
            fresh = self._initial(self.num_envs)
            nxt = torch.where(done[:, None], fresh, nxt)  # no graph from the reset copies
            self.t = torch.where(done, torch.zeros_like(self.t), self.t)
        self.state = nxt
        info = {"truncated": truncated, "terminated": terminated, "terminal_obs": terminal_obs}
        return self._obs(nxt), reward, done, info

    def detach(self) -> None:
        self.state = self.state.detach()

    def state_dict(self) -> dict:
        return {"state": self.state.detach().clone(), "t": self.t.clone(),
                "generator": self.generator.get_state()}

    def load_state_dict(self, sd: dict) -> None:
        self.state = sd["state"].detach().clone().to(self.device, self.dtype)
        self.t = sd["t"].clone().to(self.device)
        self.generator.set_state(sd["generator"])

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(num_envs={self.num_envs}, episode_length="
                f"{self.episode_length}, device={str(self.device)!r})")


def _wrap(x: torch.Tensor) -> torch.Tensor:
    """Angle in (-pi, pi]; smooth except at the wrap (where only the reward's branch changes)."""
    return torch.atan2(torch.sin(x), torch.cos(x))


class PendulumSwingUp(BatchedEnv):
    """Torque-limited pendulum swing-up (Gymnasium ``Pendulum-v1`` dynamics, with its speed
    clip |omega| <= ``max_speed`` = 8 by default; ``max_speed=None`` removes it).

    State (theta, omega) with theta = 0 upright; ``u = 2 tanh(a)``; semi-implicit Euler with
    dt = 0.05: omega' = omega + dt (3g/(2l) sin(theta) + 3u / (m l^2)), theta' = theta + dt
    omega' (g = 10, m = l = 1, Gymnasium's uniform-rod form).
    The new omega is clamped to [-max_speed, max_speed] before theta' is computed, as
    Gymnasium does (the clamp passes no gradient while it binds; without it a policy that
    learns to spin scores far below a random one).
    Reward -(wrap(theta)^2 + 0.1 omega^2 + 0.001 u^2). Start: theta uniform on [-pi, pi],
    omega uniform on [-1, 1]; episode 200 steps; observation (cos theta, sin theta, omega).

    The spec wrote theta'' = -(g/l) sin(theta) + u/(m l^2), which makes theta = 0 the stable
    *bottom*, where the reward -theta^2 would be trivial; with theta = 0 upright the sign is +,
    and we use Gymnasium's rod constants (3/2, 3) so that published PPO settings apply.
    """

    obs_dim, act_dim, state_dim = 3, 1, 2
    max_action = 2.0
    g, m, length, dt = 10.0, 1.0, 1.0, 0.05

    def __init__(self, num_envs: int = 64, *, episode_length: int = 200, device=None,
                 dtype=torch.float32, max_speed: float | None = 8.0) -> None:
        super().__init__(num_envs, episode_length=episode_length, device=device, dtype=dtype)
        self.max_speed = max_speed

    def _initial(self, n):
        r = self._rand(n, 2)
        return torch.stack([(2 * r[:, 0] - 1) * math.pi, 2 * r[:, 1] - 1], 1)

    def _dynamics(self, s, u):
        th, om = s[:, 0], s[:, 1]
        u = u[:, 0]
        reward = -(_wrap(th) ** 2 + 0.1 * om ** 2 + 0.001 * u ** 2)
        om2 = om + self.dt * (1.5 * self.g / self.length * torch.sin(th)
                              + 3.0 * u / (self.m * self.length ** 2))
        if self.max_speed is not None:
            om2 = om2.clamp(-self.max_speed, self.max_speed)
        th2 = th + self.dt * om2
        return torch.stack([th2, om2], 1), reward

    def _obs(self, s):
        return torch.stack([torch.cos(s[:, 0]), torch.sin(s[:, 0]), s[:, 1]], 1)


class CartPoleSwingUp(BatchedEnv):
    """Cart-pole swing-up (Barto/Florian equations, frictionless), SHAC-like reward.

    State (x, x_dot, theta, theta_dot), theta = 0 upright; force ``u = 10 tanh(a)``;
    dt = 1/60 with 4 semi-implicit Euler substeps; episode 240 steps. Reward
    -(wrap(theta)^2 + 0.1 theta_dot^2 + 0.05 x^2 + 0.1 x_dot^2 + 0.01 (u/10)^2) (INFERRED
    weights, shaped as SHAC's cartpole). Start near the bottom: theta = pi + U(-0.2, 0.2).
    Observation (x, x_dot, sin theta, cos theta, theta_dot).
    """

    obs_dim, act_dim, state_dim = 5, 1, 4
    max_action = 10.0
    g, mc, mp, lp, dt, substeps = 9.8, 1.0, 0.1, 0.5, 1.0 / 60.0, 4

    def __init__(self, num_envs: int = 64, *, episode_length: int = 240, device=None,
                 dtype=torch.float32) -> None:
        super().__init__(num_envs, episode_length=episode_length, device=device, dtype=dtype)

    def _initial(self, n):
        r = self._rand(n, 4)
        z = 0.2 * (2 * r - 1)
        return torch.stack([z[:, 0], z[:, 1], math.pi + z[:, 2], z[:, 3]], 1)

    def _dynamics(self, s, u):
        f = u[:, 0]
        x, xd, th, thd = s.unbind(1)
        reward = -(_wrap(th) ** 2 + 0.1 * thd ** 2 + 0.05 * x ** 2 + 0.1 * xd ** 2
                   + 0.01 * (f / self.max_action) ** 2)
        h = self.dt / self.substeps
        mt, pml = self.mc + self.mp, self.mp * self.lp
        for _ in range(self.substeps):
            sin, cos = torch.sin(th), torch.cos(th)
            tmp = (f + pml * thd ** 2 * sin) / mt
            thacc = (self.g * sin - cos * tmp) / (self.lp * (4.0 / 3.0 - self.mp * cos ** 2 / mt))
            xacc = tmp - pml * thacc * cos / mt
            xd = xd + h * xacc
            thd = thd + h * thacc
            x = x + h * xd
            th = th + h * thd
        return torch.stack([x, xd, th, thd], 1), reward

    def _obs(self, s):
        return torch.stack([s[:, 0], s[:, 1], torch.sin(s[:, 2]), torch.cos(s[:, 2]), s[:, 3]], 1)


class AcrobotSwingUp(BatchedEnv):
    """Acrobot swing-up (Spong's equations, Gymnasium ``Acrobot-v1`` constants, continuous
    torque ``u = 1 tanh(a)`` on the second joint, no velocity clipping).

    State (q1, q2, dq1, dq2), q1 = 0 hanging down; dt = 0.05 with 4 semi-implicit Euler
    substeps; episode 200 steps. Reward: tip height -cos(q1) - cos(q1 + q2) (in [-2, 2]) minus
    0.01 (dq1^2 + dq2^2) / 10 (INFERRED). Start: all four uniform on [-0.1, 0.1].
    Observation (cos q1, sin q1, cos q2, sin q2, dq1 / 4, dq2 / 9). Chaotic: BPTT gradients can
    explode, which is what grad-norm clipping and divergence counting are for.
    """

    obs_dim, act_dim, state_dim = 6, 1, 4
    max_action = 1.0
    m1 = m2 = 1.0
    l1 = 1.0
    lc1 = lc2 = 0.5
    i1 = i2 = 1.0
    g, dt, substeps = 9.8, 0.05, 4

    def __init__(self, num_envs: int = 64, *, episode_length: int = 200, device=None,
                 dtype=torch.float32) -> None:
        super().__init__(num_envs, episode_length=episode_length, device=device, dtype=dtype)

    def _initial(self, n):
        return 0.1 * (2 * self._rand(n, 4) - 1)

    def _dynamics(self, s, u):
        tau = u[:, 0]
        q1, q2, d1, d2 = s.unbind(1)
        reward = -torch.cos(q1) - torch.cos(q1 + q2) - 0.001 * (d1 ** 2 + d2 ** 2)
        h = self.dt / self.substeps
        m1, m2, l1, lc1, lc2, i1, i2, g = (self.m1, self.m2, self.l1, self.lc1, self.lc2,
                                           self.i1, self.i2, self.g)
        for _ in range(self.substeps):
            c2 = torch.cos(q2)
            dd1 = m1 * lc1 ** 2 + m2 * (l1 ** 2 + lc2 ** 2 + 2 * l1 * lc2 * c2) + i1 + i2
            dd2 = m2 * (lc2 ** 2 + l1 * lc2 * c2) + i2
            phi2 = m2 * lc2 * g * torch.cos(q1 + q2 - math.pi / 2)
            phi1 = (-m2 * l1 * lc2 * d2 ** 2 * torch.sin(q2) - 2 * m2 * l1 * lc2 * d2 * d1
                    * torch.sin(q2) + (m1 * lc1 + m2 * l1) * g * torch.cos(q1 - math.pi / 2) + phi2)
            acc2 = ((tau + dd2 / dd1 * phi1 - m2 * l1 * lc2 * d1 ** 2 * torch.sin(q2) - phi2)
                    / (m2 * lc2 ** 2 + i2 - dd2 ** 2 / dd1))
            acc1 = -(dd2 * acc2 + phi1) / dd1
            d1 = d1 + h * acc1
            d2 = d2 + h * acc2
            q1 = q1 + h * d1
            q2 = q2 + h * d2
        return torch.stack([q1, q2, d1, d2], 1), reward

    def _obs(self, s):
        q1, q2, d1, d2 = s.unbind(1)
        return torch.stack([torch.cos(q1), torch.sin(q1), torch.cos(q2), torch.sin(q2),
                            d1 / 4.0, d2 / 9.0], 1)


class Reacher2D(BatchedEnv):
    """Planar 2-link reacher: unit-inertia links of length 0.1, joint torques
    ``u = tanh(a)`` (2-dim), damping 0.1, dt = 0.02 (semi-implicit Euler, decoupled joint
    dynamics: INFERRED simplification); episode 100 steps. Reward -|tip - target| -
    0.01 |u|^2 (INFERRED). Target uniform in the reachable disc, joint angles uniform.
    Observation (cos q, sin q, dq / 5, target, tip - target).
    """

    obs_dim, act_dim, state_dim = 10, 2, 6
    max_action = 1.0
    link, dt, damping, gain = 0.1, 0.02, 0.1, 5.0

    def __init__(self, num_envs: int = 64, *, episode_length: int = 100, device=None,
                 dtype=torch.float32) -> None:
        super().__init__(num_envs, episode_length=episode_length, device=device, dtype=dtype)

    def _initial(self, n):
        r = self._rand(n, 4)
        q = (2 * r[:, :2] - 1) * math.pi
        rad = 2 * self.link * torch.sqrt(r[:, 2]) * 0.95
        ang = 2 * math.pi * r[:, 3]
        tgt = torch.stack([rad * torch.cos(ang), rad * torch.sin(ang)], 1)
        return torch.cat([q, torch.zeros_like(q), tgt], 1)

    def _tip(self, q):
        a1, a12 = q[:, 0], q[:, 0] + q[:, 1]
        return self.link * torch.stack([torch.cos(a1) + torch.cos(a12),
                                        torch.sin(a1) + torch.sin(a12)], 1)

    def _dynamics(self, s, u):
        q, dq, tgt = s[:, :2], s[:, 2:4], s[:, 4:]
        dist = torch.sqrt(((self._tip(q) - tgt) ** 2).sum(1) + 1e-8)
        reward = -dist - 0.01 * (u ** 2).sum(1)
        dq = dq + self.dt * (self.gain * u - self.damping * dq)
        q = q + self.dt * dq
        return torch.cat([q, dq, tgt], 1), reward

    def _obs(self, s):
        q, dq, tgt = s[:, :2], s[:, 2:4], s[:, 4:]
        return torch.cat([torch.cos(q), torch.sin(q), dq / 5.0, tgt, self._tip(q) - tgt], 1)


class LQR(BatchedEnv):
    """Linear dynamics, quadratic cost (no squashing): s' = A s + B a, reward
    -(s'Qs + a'Ra). Start s ~ U[-1, 1]^n. The discounted optimum is the linear policy
    a = -K* s from :meth:`optimal_gain` (``scipy.linalg.solve_discrete_are`` on sqrt(gamma) A,
    sqrt(gamma) B); additive Gaussian action noise leaves K* unchanged.

    Defaults: a double integrator, A = [[1, dt], [0, 1]], B = [[0], [dt]], dt = 0.1,
    Q = I, R = 0.1 I, episode 100 steps.
    """

    def __init__(self, num_envs: int = 64, *, A=None, B=None, Q=None, R=None,
                 episode_length: int = 100, device=None, dtype=torch.float32) -> None:
        dt = 0.1
        dev = check_device("device", device, owner="LQR")
        A = torch.tensor([[1.0, dt], [0.0, 1.0]]) if A is None else torch.as_tensor(A)
        B = torch.tensor([[0.0], [dt]]) if B is None else torch.as_tensor(B)
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            fail("A", "LQR", "a square matrix", tuple(A.shape))
        if B.ndim != 2 or B.shape[0] != A.shape[0]:
            fail("B", "LQR", f"a matrix with {A.shape[0]} rows", tuple(B.shape))
        n, m = B.shape
        Q = torch.eye(n) if Q is None else torch.as_tensor(Q)
        R = 0.1 * torch.eye(m) if R is None else torch.as_tensor(R)
        self.A, self.B, self.Q, self.R = (x.to(dev, dtype) for x in (A, B, Q, R))
        self.obs_dim = self.state_dim = n
        self.act_dim = m
        super().__init__(num_envs, episode_length=episode_length, device=device, dtype=dtype)

    def _initial(self, n):
        return 2 * self._rand(n, self.state_dim) - 1

    def _dynamics(self, s, u):
        reward = -((s @ self.Q) * s).sum(1) - ((u @ self.R) * u).sum(1)
        return s @ self.A.T + u @ self.B.T, reward

    def optimal_gain(self, gamma: float = 1.0):
        """(K*, P*) as float64 numpy arrays: a* = -K* s maximises the discounted return and
        the optimal cost-to-go is s'P*s."""
        import numpy as np
        from scipy.linalg import solve_discrete_are

        check_real("gamma", gamma, owner="LQR.optimal_gain", low=0.0, high=1.0, closed="right")
        A, B, Q, R = (x.detach().cpu().double().numpy() for x in (self.A, self.B, self.Q, self.R))
        sg = math.sqrt(gamma)
        P = solve_discrete_are(sg * A, sg * B, Q, R)
        K = gamma * np.linalg.solve(R + gamma * B.T @ P @ B, B.T @ P @ A)
        return K, P


def as_gymnasium(env: BatchedEnv):
    """A ``gymnasium.Env`` over one copy of ``env`` (``num_envs`` must be 1), so the same
    dynamics run under any Gymnasium agent (e.g. ``stable_baselines3.PPO``).

    Actions are the raw (unsquashed) policy outputs, in a Box of [-3, 3]^act_dim when the env
    squashes (tanh(3) = 0.995 of the bound) and [-10, 10]^act_dim otherwise (INFERRED box:
    Gymnasium needs a bounded action space for SB3's clipping). Simulation runs under
    ``torch.no_grad`` in float64 numpy-in / numpy-out; ``terminated`` / ``truncated`` follow
    Gymnasium's convention (the env's own auto-reset is undone: Gymnasium agents call
    ``reset`` themselves).
    """
    import gymnasium as gym
    import numpy as np

    if not isinstance(env, BatchedEnv):
        fail("env", "as_gymnasium", "an optzoo.rpo.envs environment (a BatchedEnv subclass)",
             type(env).__name__, exc=TypeError)
    if env.num_envs != 1:
        fail("env", "as_gymnasium", "an environment with num_envs == 1 (Gymnasium envs are "
             "single; vectorise with stable_baselines3.common.env_util.make_vec_env)",
             f"num_envs={env.num_envs}")

    bound = 3.0 if env.max_action is not None else 10.0

    class _GymEnv(gym.Env):
        metadata = {"render_modes": []}

        def __init__(self) -> None:
            self.inner = env
            self.observation_space = gym.spaces.Box(-np.inf, np.inf, (env.obs_dim,), np.float32)
            self.action_space = gym.spaces.Box(-bound, bound, (env.act_dim,), np.float32)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            if seed is None:
                seed = int(self.np_random.integers(0, 2 ** 31 - 1))
            with torch.no_grad():
                obs = self.inner.reset(seed=int(seed))
            return obs[0].cpu().numpy().astype(np.float32), {}

        def step(self, action):
            a = torch.as_tensor(np.asarray(action, dtype=np.float64).reshape(1, -1),
                                dtype=self.inner.dtype, device=self.inner.device)
            with torch.no_grad():
                obs, r, done, info = self.inner.step(a)
            term = bool(info["terminated"][0])
            trunc = bool(info["truncated"][0])
            o = info["terminal_obs"] if (term or trunc) else obs
            return (o[0].cpu().numpy().astype(np.float32), float(r[0]), term, trunc, {})

    return _GymEnv()
