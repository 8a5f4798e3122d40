r"""Reparameterization Proximal Policy Optimization (RPO) and SHAC on differentiable simulators.

Paper: H. Zhong, X. Wang, Z. Li, L. Huang, *Reparameterization Proximal Policy Optimization*,
ICML 2026, arXiv 2508.06214. No official code. Fidelity: **paper (partly)**: the surrogate
identity and the SHAC baseline are exact; the clipping form, the regulariser directions, the
critic and every RPO hyperparameter are INFERRED (listed in ``docs/papers/rpo.md``).

One iteration over ``N`` batched environments and a window of ``h`` steps:

1. Roll out :math:`a_t = f_\theta(\epsilon_t; s_t) = \mu_\theta(s_t) + \sigma_\theta \odot
   \epsilon_t` keeping the graph, and form (SHAC)

   .. math:: J = \frac{1}{N h}\sum_i \Big[\sum_{t<h} \gamma^t r^i_t + \gamma^h V_{\phi'}(s^i_h)\Big]

   (discount and sums restart at episode ends; a truncated episode bootstraps
   :math:`V_{\phi'}` of its last observation, a terminated one adds 0).
2. Cache :math:`g_t = \partial J / \partial a_t` by **one** backward pass (total derivative
   through future states and future actions), then detach everything.
3. For ``epochs`` = M passes, regenerate the actions with the noise held fixed,
   :math:`\tilde a_t(\theta) = \mu_\theta(s_t) + \sigma_\theta \odot \mathrm{sg}((a_t -
   \mu_\theta(s_t))/\sigma_\theta)` (numerically :math:`\tilde a_t = a_t`), weight each sample by
   :math:`w_t = \mathrm{sg}(\rho_t)\,\mathbb 1[1-c_{low} \le \rho_t \le 1+c_{high}]`,
   :math:`\rho_t = \pi_\theta(a_t|s_t)/\pi_{old}(a_t|s_t)`, and maximise

   .. math:: \lambda_{surr}\sum_t w_t \langle g_t, \tilde a_t(\theta)\rangle
             - \lambda_{KL}\,\overline{KL}(\pi_{old}\|\pi_\theta) + \lambda_{ent}\,\bar H(\pi_\theta)

   with AdamW and grad-norm clipping. At :math:`\theta = \theta_{old}`, :math:`\rho = 1` and the
   surrogate's gradient *equals* SHAC's BPTT gradient :math:`\nabla_\theta J` (chain rule), so
   SHAC is RPO with M = 1 and no regularisers (:class:`SHAC`).
4. Fit the critic to TD(:math:`\lambda`) targets from the target critic, then
   :math:`\phi' \leftarrow \alpha\phi' + (1-\alpha)\phi` (SHAC's direction).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields

import numpy as np
import torch
from torch import nn
from torch.distributions import Normal, kl_divergence

from optzoo._core.result import Result, Status, divergence, objective_divergence, warn_not_converged
from optzoo._core.rng import derive_seed
from optzoo._core.validation import check_bool, check_choice, check_int, check_real, fail
from optzoo.rpo.envs import check_differentiable, check_obs
from optzoo.rpo.networks import Critic, GaussianActor, RunningMeanStd

__all__ = ["RPO", "RPOConfig", "SHAC", "TrainHistory", "diag_gaussian_kl", "evaluate",
           "rpo_actor_loss", "shac_config", "window_objective"]


@dataclass(frozen=True)
class RPOConfig:
    """Hyperparameters of :class:`RPO` (defaults: the spec's reading of the paper's Table 2/4,
    UNVERIFIED, except the SHAC-exact critic recipe).

    horizon: h, BPTT window length. epochs: M, actor passes over the cached action gradients.
    c_low, c_high: clip band [1 - c_low, 1 + c_high] on the ratio (0.8, 1.0 -> [0.2, 2.0]).
    clip: apply the band (False: every sample kept). ratio_weight: weight samples by sg(rho)
    (False with clip=False, kl_coef=0 is "naive reuse"). surr_coef, kl_coef, ent_coef:
    lambda_surr, lambda_KL, lambda_ent. gamma, td_lambda: discount and TD(lambda).
    target_alpha: alpha in phi' <- alpha phi' + (1 - alpha) phi. actor_lr, critic_lr, betas,
    weight_decay: AdamW (actor) and Adam (critic). lr_schedule: 'exponential' | 'linear' |
    'constant' decay of actor_lr to lr_min over one ``train`` call. max_grad_norm: actor and
    critic grad-norm clip. critic_iterations, critic_batches: critic passes and minibatches per
    pass (SHAC: 16, 4). obs_norm: running observation normalisation. hidden, critic_hidden:
    MLP widths (ELU). init_logstd: initial log sigma. grad_sample_clip: optional per-sample
    norm clip of the cached g (None: off).
    """

    horizon: int = 32
    epochs: int = 5
    c_low: float = 0.8
    c_high: float = 1.0
    clip: bool = True
    ratio_weight: bool = True
    surr_coef: float = 1.0
    kl_coef: float = 0.2
    ent_coef: float = 0.1
    gamma: float = 0.99
    td_lambda: float = 0.95
    target_alpha: float = 0.2
    actor_lr: float = 5e-4
    critic_lr: float = 1e-3
    betas: tuple = (0.7, 0.95)
    weight_decay: float = 0.0
    lr_schedule: str = "exponential"
    lr_min: float = 1e-5
    max_grad_norm: float = 1.0
    critic_iterations: int = 16
    critic_batches: int = 4
    obs_norm: bool = True
    hidden: tuple = (64, 64)
    critic_hidden: tuple = (64, 64)
    init_logstd: float = -1.0
    grad_sample_clip: float | None = None

    def __post_init__(self) -> None:
        o = "RPOConfig"
        check_int("horizon", self.horizon, owner=o, low=1)
        check_int("epochs", self.epochs, owner=o, low=1)
        check_real("c_low", self.c_low, owner=o, low=0.0, high=1.0, closed="right")
        check_real("c_high", self.c_high, owner=o, low=0.0, closed="neither")
        check_bool("clip", self.clip, owner=o)
        check_bool("ratio_weight", self.ratio_weight, owner=o)
        for name in ("surr_coef", "kl_coef", "ent_coef", "weight_decay"):
            check_real(name, getattr(self, name), owner=o, low=0.0)
        check_real("gamma", self.gamma, owner=o, low=0.0, high=1.0, closed="right")
        check_real("td_lambda", self.td_lambda, owner=o, low=0.0, high=1.0)
        check_real("target_alpha", self.target_alpha, owner=o, low=0.0, high=1.0, closed="left")
        for name in ("actor_lr", "critic_lr", "lr_min", "max_grad_norm"):
            check_real(name, getattr(self, name), owner=o, low=0.0, closed="neither")
        if (not isinstance(self.betas, tuple) or len(self.betas) != 2
                or not all(isinstance(b, (int, float)) and 0.0 <= b < 1.0 for b in self.betas)):
            fail("betas", o, "a pair of reals in [0, 1)", self.betas)
        check_choice("lr_schedule", self.lr_schedule, ("exponential", "linear", "constant"), owner=o)
        check_int("critic_iterations", self.critic_iterations, owner=o, low=0)
        check_int("critic_batches", self.critic_batches, owner=o, low=1)
        check_bool("obs_norm", self.obs_norm, owner=o)
        for name in ("hidden", "critic_hidden"):
            v = getattr(self, name)
            if not isinstance(v, tuple) or not all(isinstance(k, int) and k >= 1 for k in v):
                fail(name, o, "a tuple of positive ints", v, exc=TypeError)
        check_real("init_logstd", self.init_logstd, owner=o)
        if self.grad_sample_clip is not None:
            check_real("grad_sample_clip", self.grad_sample_clip, owner=o, low=0.0, closed="neither")

    def replace(self, **changes) -> RPOConfig:
        return type(self)(**{**asdict(self), **changes})


def shac_config(**changes) -> RPOConfig:
    """SHAC (Xu et al. 2022, NVlabs/DiffRL cartpole config): M = 1, no clip/KL/entropy, Adam
    lr 1e-2 with betas (0.7, 0.95) decayed linearly to 1e-5."""
    base = RPOConfig(epochs=1, clip=False, kl_coef=0.0, ent_coef=0.0, actor_lr=1e-2,
                     lr_schedule="linear")
    return base.replace(**changes)


# ---------------------------------------------------------------------------------------------
# the pure core


def diag_gaussian_kl(mu_p, std_p, mu_q, std_q) -> torch.Tensor:
    """KL(N(mu_p, std_p^2) || N(mu_q, std_q^2)) for diagonal Gaussians, summed over the last axis
    (``torch.distributions``' closed form)."""
    return kl_divergence(Normal(mu_p, std_p, validate_args=False),
                         Normal(mu_q, std_q, validate_args=False)).sum(-1)


def _gauss_logp(x, mu, std) -> torch.Tensor:
    return Normal(mu, std, validate_args=False).log_prob(x).sum(-1)


_BATCH_KEYS = ("obs", "act", "grad_a", "mu_old", "std_old", "logp_old")


def rpo_actor_loss(actor: Callable, batch: dict, cfg: RPOConfig) -> tuple[torch.Tensor, dict]:
    """RPO's actor loss on one batch of cached samples (pure: no state, no side effects).

    ``batch``: ``obs`` (n, obs_dim) as the actor sees it, ``act`` (n, act_dim) the raw actions
    taken, ``grad_a`` (n, act_dim) the cached dJ/da (J already divided by N h, so the
    surrogate is a plain sum), ``mu_old``, ``std_old`` (n, act_dim), ``logp_old`` (n,).
    Returns ``(loss, info)``, loss = -(surr_coef * surr - kl_coef * KL + ent_coef * H) to
    minimise; info (floats): surrogate, kl, entropy, ratio_mean, in_band (fraction of
    samples inside the clip band).
    """
    missing = [k for k in _BATCH_KEYS if k not in batch]
    if missing:
        fail("batch", "rpo_actor_loss", f"a dict with keys {_BATCH_KEYS}", f"missing {missing}")
    obs, act, g = batch["obs"], batch["act"], batch["grad_a"]
    mu, std = actor(obs)
    eps = ((act - mu) / std).detach()
    a_regen = mu + std * eps                              # = act, with d/dtheta at fixed eps
    logp = _gauss_logp(act, mu, std)
    ratio = torch.exp(logp - batch["logp_old"])
    inside = (ratio >= 1.0 - cfg.c_low) & (ratio <= 1.0 + cfg.c_high)
    w = ratio.detach() if cfg.ratio_weight else torch.ones_like(ratio)
    if cfg.clip:
        w = w * inside.to(w.dtype)
    surr = (w * (g * a_regen).sum(-1)).sum()
    kl = diag_gaussian_kl(batch["mu_old"], batch["std_old"], mu, std).mean()
    ent = Normal(mu, std, validate_args=False).entropy().sum(-1).mean()
    loss = -(cfg.surr_coef * surr - cfg.kl_coef * kl + cfg.ent_coef * ent)
    info = {"surrogate": float(surr.detach()), "kl": float(kl.detach()),
            "entropy": float(ent.detach()), "ratio_mean": float(ratio.detach().mean()),
            "in_band": float(inside.to(torch.float64).mean())}
    return loss, info


def window_objective(actor: Callable, critic: Callable, env, obs: torch.Tensor, noise: torch.Tensor,
                     *, gamma: float, normalize: Callable | None = None,
                     perturb: torch.Tensor | None = None):
    """SHAC's window objective J (divided by N h) over ``h = noise.shape[0]`` steps of ``env``
    from its current state (``obs``: its observation), acting ``a_t = mu + std * noise[t] +
    delta_t`` with ``delta_t = perturb[t]`` (zeros by default) as leaves that require grad, so
    ``autograd.grad(J, deltas)`` is the total derivative dJ/da_t (through future states *and*
    future policy actions). Returns ``(J, buffers, deltas)``; buffers (each (h, N, ...)): raw
    obs ``raw``, actor input ``obs``, ``act``, ``mu``, ``std``, ``rew``, ``done``, ``term``,
    ``next`` (observation after the step, before any reset) and ``last_obs`` (N, obs_dim).

    Discount and reward sums restart at episode ends; a truncated episode adds
    gamma^k V(terminal obs), a terminated one 0, and the window end adds gamma^k V(s_h).
    """
    h, n, ad = noise.shape
    norm = normalize or (lambda x: x)
    env.detach()
    acc = torch.zeros(n, device=noise.device, dtype=noise.dtype)
    disc = torch.ones_like(acc)
    J = torch.zeros((), device=noise.device, dtype=noise.dtype)
    deltas = []
    buf = {k: [] for k in ("raw", "obs", "act", "mu", "std", "rew", "done", "term", "next")}
    done = torch.zeros(n, dtype=torch.bool, device=noise.device)
    for t in range(h):
        nobs = norm(obs)
        mu, std = actor(nobs)
        base = torch.zeros_like(noise[t]) if perturb is None else perturb[t].detach().clone()
        delta = base.requires_grad_(True)
        a = mu + std * noise[t] + delta
        obs2, r, done, info = env.step(a)
        trunc = info["truncated"]
        deltas.append(delta)
        acc = acc + disc * r
        disc = disc * gamma
        if bool(done.any()):
            v_end = critic(norm(info["terminal_obs"]))
            J = J + (acc * done).sum() + (disc * v_end * trunc).sum()
            acc = torch.where(done, torch.zeros_like(acc), acc)
            disc = torch.where(done, torch.ones_like(disc), disc)
        for k, v in (("raw", obs), ("obs", nobs), ("act", a), ("mu", mu), ("std", std),
                     ("rew", r), ("done", done), ("term", info["terminated"]),
                     ("next", info["terminal_obs"])):
            buf[k].append(v)
        obs = obs2
    v_last = critic(norm(obs))
    J = (J + ((acc + disc * v_last) * ~done).sum()) / (n * h)
    batch = {k: torch.stack(v) for k, v in buf.items()}
    batch["last_obs"] = obs.detach()
    return J, batch, deltas


# ---------------------------------------------------------------------------------------------
# the trainer


@dataclass
class TrainHistory:
    """Per-iteration metrics of :meth:`RPO.train` (one entry per iteration; numpy arrays via
    :meth:`as_arrays`). ``episode_return``: mean undiscounted return of the training episodes
    that finished in that iteration (nan if none)."""

    env_steps: list = field(default_factory=list)
    episode_return: list = field(default_factory=list)
    step_reward: list = field(default_factory=list)
    actor_loss: list = field(default_factory=list)
    grad_norm: list = field(default_factory=list)
    kl: list = field(default_factory=list)
    in_band: list = field(default_factory=list)
    critic_loss: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    wall_time: list = field(default_factory=list)

    def as_arrays(self) -> dict[str, np.ndarray]:
        return {f.name: np.asarray(getattr(self, f.name), dtype=float) for f in fields(self)}

    def __len__(self) -> int:
        return len(self.env_steps)


class RPO:
    """RPO trainer (see the module docstring for the update).

    ``RPO(env, config, *, actor=None, critic=None)``; ``train(total_env_steps, seed=0)``
    returns an :class:`optzoo.Result`: ``x`` the flattened actor parameters, ``fun`` the
    latest mean training-episode return, ``status`` ``budget_used`` (or ``diverged``),
    ``nit`` iterations, ``nfev`` environment steps, ``extra["history"]`` a
    :class:`TrainHistory`, ``extra["skipped"]`` batches skipped for non-finite gradients.
    ``train`` runs until the environment-step counter reaches ``total_env_steps``; a second
    call (or one after ``load_state_dict``) continues. ``actor``: any module with
    ``forward(obs) -> (mu, std)`` (an unbounded diagonal Gaussian: a bounded policy must put
    its squashing in the environment); default :class:`GaussianActor` with ``config.hidden``.
    """

    name = "RPO"

    def __init__(self, env, config: RPOConfig | None = None, *, actor: nn.Module | None = None,
                 critic: nn.Module | None = None) -> None:
        owner = type(self).__name__
        check_differentiable(env, owner=owner)
        self.env = env
        self.config = self._default_config() if config is None else config
        if not isinstance(self.config, RPOConfig):
            fail("config", owner, "an RPOConfig", type(self.config).__name__, exc=TypeError)
        self.device = getattr(env, "device", torch.device("cpu"))
        self.dtype = getattr(env, "dtype", torch.float32)
        for name, mod in (("actor", actor), ("critic", critic)):
            if mod is not None and not isinstance(mod, nn.Module):
                fail(name, owner, "a torch.nn.Module", type(mod).__name__, exc=TypeError)
        self._user_actor, self._user_critic = actor, critic
        self.actor: nn.Module | None = None
        self.critic: nn.Module | None = None
        self.seed: int | None = None
        self.history = TrainHistory()
        self.iteration = 0
        self.env_steps = 0
        self.skipped = 0

    @staticmethod
    def _default_config() -> RPOConfig:
        return RPOConfig()

    # ---- set-up -------------------------------------------------------------------------------
    def _build(self, seed: int) -> None:
        cfg, env = self.config, self.env
        with torch.random.fork_rng(devices=[]):  # nn.Linear's init, without touching global RNG
            torch.manual_seed(derive_seed(seed, "init"))
            actor = self._user_actor or GaussianActor(env.obs_dim, env.act_dim, cfg.hidden,
                                                      init_logstd=cfg.init_logstd)
            critic = self._user_critic or Critic(env.obs_dim, cfg.critic_hidden)
        self.actor = actor.to(self.device, self.dtype)
        self.critic = critic.to(self.device, self.dtype)
        self._check_actor()
        self.target_critic = copy.deepcopy(self.critic)
        for p in self.target_critic.parameters():
            p.requires_grad_(False)
        self.obs_rms = RunningMeanStd(env.obs_dim).to(self.device) if cfg.obs_norm else None
        self.actor_opt = torch.optim.AdamW(self.actor.parameters(), lr=cfg.actor_lr,
                                           betas=cfg.betas, weight_decay=cfg.weight_decay)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr,
                                           betas=cfg.betas)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(derive_seed(seed, "noise"))
        self._obs = env.reset(seed=derive_seed(seed, "env") % (2 ** 62)).detach()
        check_obs(self._obs, env, owner=type(self).__name__, where="reset()")
        self._ep_ret = torch.zeros(env.num_envs, dtype=torch.float64, device=self.device)
        self._last_return = float("nan")
        self._start_norm = float(torch.nn.utils.parameters_to_vector(self.actor.parameters())
                                 .detach().double().norm())
        self.seed = seed

    def _check_actor(self) -> None:
        owner = type(self).__name__
        with torch.no_grad():
            out = self.actor(torch.zeros(2, self.env.obs_dim, device=self.device, dtype=self.dtype))
        ok = isinstance(out, tuple) and len(out) == 2 and all(isinstance(t, torch.Tensor) for t in out)
        if not ok or out[0].shape != (2, self.env.act_dim) or out[1].shape != (2, self.env.act_dim):
            fail("actor", owner, f"a module whose forward(obs) returns (mu, std), each of shape "
                 f"(batch, {self.env.act_dim}) (an unbounded diagonal Gaussian)", type(self.actor).__name__)
        if not bool((out[1] > 0).all()):
            fail("actor", owner, "a Gaussian policy with std > 0", "std <= 0")

    def _norm(self, obs: torch.Tensor) -> torch.Tensor:
        return obs if self.obs_rms is None else self.obs_rms(obs)

    # ---- one iteration --------------------------------------------------------------------------
    def _rollout(self):
        env, n = self.env, self.env.num_envs
        noise = torch.randn(self.config.horizon, n, env.act_dim, generator=self.generator,
                            device=self.device, dtype=self.dtype)
        J, batch, deltas = window_objective(self.actor, self.target_critic, env, self._obs, noise,
                                            gamma=self.config.gamma, normalize=self._norm)
        grads = torch.autograd.grad(J, deltas, allow_unused=True) if J.requires_grad else [None]
        if all(g is None for g in grads):
            fail("env", type(self).__name__, "a differentiable environment (the window's rewards "
                 "must depend differentiably on its actions)", "a window objective with no "
                 "gradient with respect to the actions")
        batch = {k: v.detach() for k, v in batch.items()}
        batch["grad_a"] = torch.stack([torch.zeros_like(d) if x is None else x
                                       for x, d in zip(grads, deltas, strict=True)])
        self._obs = batch["last_obs"]
        with torch.no_grad():  # training-episode returns (undiscounted)
            rets = []
            for r, d in zip(batch["rew"], batch["done"], strict=True):
                self._ep_ret += r.double()
                if bool(d.any()):
                    rets.append(self._ep_ret[d].clone())
                    self._ep_ret[d] = 0.0
        return batch, float(J.detach()), (torch.cat(rets) if rets else None)

    def _actor_update(self, batch, frac: float):
        cfg = self.config
        for gr in self.actor_opt.param_groups:
            gr["lr"] = self._lr(frac)
        flat = {"obs": batch["obs"].reshape(-1, self.env.obs_dim),
                "act": batch["act"].reshape(-1, self.env.act_dim),
                "grad_a": batch["grad_a"].reshape(-1, self.env.act_dim),
                "mu_old": batch["mu"].reshape(-1, self.env.act_dim),
                "std_old": batch["std"].reshape(-1, self.env.act_dim)}
        flat["logp_old"] = _gauss_logp(flat["act"], flat["mu_old"], flat["std_old"])
        if cfg.grad_sample_clip is not None:
            nrm = flat["grad_a"].norm(dim=-1, keepdim=True) * flat["grad_a"].shape[0]
            flat["grad_a"] = flat["grad_a"] * torch.clamp(cfg.grad_sample_clip / (nrm + 1e-12), max=1.0)
        info, gn = {}, 0.0
        for _ in range(cfg.epochs):
            loss, info = rpo_actor_loss(self.actor, flat, cfg)
            self.actor_opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = float(torch.nn.utils.clip_grad_norm_(self.actor.parameters(), cfg.max_grad_norm))
            self.actor_opt.step()
        with torch.no_grad():
            mu, std = self.actor(flat["obs"])
            kl = float(diag_gaussian_kl(flat["mu_old"], flat["std_old"], mu, std).mean())
        return float(loss.detach()), gn, kl, info.get("in_band", 1.0)

    def _lr(self, frac: float) -> float:
        cfg = self.config
        if cfg.lr_schedule == "constant":
            return cfg.actor_lr
        if cfg.lr_schedule == "linear":
            return cfg.actor_lr + (cfg.lr_min - cfg.actor_lr) * frac
        return cfg.actor_lr * (cfg.lr_min / cfg.actor_lr) ** frac

    def _critic_update(self, batch) -> float:
        cfg = self.config
        if cfg.critic_iterations == 0:
            return float("nan")
        h, n = batch["rew"].shape
        with torch.no_grad():
            nv = self.target_critic(self._norm(batch["next"]))       # (h, n)
            rew, done = batch["rew"], batch["done"]
            notterm = (~batch["term"]).to(rew.dtype)
            tgt = torch.empty_like(rew)
            G = rew[-1] + cfg.gamma * notterm[-1] * nv[-1]
            tgt[-1] = G
            lam = cfg.td_lambda
            for t in range(h - 2, -1, -1):
                boot = rew[t] + cfg.gamma * notterm[t] * nv[t]
                cont = rew[t] + cfg.gamma * ((1 - lam) * nv[t] + lam * G)
                G = torch.where(done[t], boot, cont)
                tgt[t] = G
            obs = batch["obs"].reshape(h * n, -1)
            tgt = tgt.reshape(-1)
        m = obs.shape[0]
        bs = max(1, m // cfg.critic_batches)
        total = 0.0
        for _ in range(cfg.critic_iterations):
            perm = torch.randperm(m, generator=self.generator, device=self.device)
            total = 0.0
            for b in range(cfg.critic_batches):
                idx = perm[b * bs:(b + 1) * bs]
                loss = ((self.critic(obs[idx]) - tgt[idx]) ** 2).mean()
                self.critic_opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.critic.parameters(), cfg.max_grad_norm)
                self.critic_opt.step()
                total += float(loss.detach()) / cfg.critic_batches
        with torch.no_grad():
            a = cfg.target_alpha
            for pt, p in zip(self.target_critic.parameters(), self.critic.parameters(), strict=True):
                pt.mul_(a).add_(p, alpha=1.0 - a)
        return total

    # ---- public ---------------------------------------------------------------------------------
    def train(self, total_env_steps: int, *, seed: int | None = None,
              callback: Callable | None = None) -> Result:
        """Train until ``total_env_steps`` environment steps (N h per iteration) have been
        taken; ``seed`` (first call only; default 0) seeds the networks' initialisation, the
        policy noise and the environment resets. ``callback(algo, record)`` runs after every
        iteration; returning ``False`` stops training."""
        owner = f"{type(self).__name__}.train"
        total = check_int("total_env_steps", total_env_steps, owner=owner, low=1)
        if self.actor is None:
            self._build(0 if seed is None else check_int("seed", seed, owner=owner, low=0))
        elif seed is not None and seed != self.seed:
            fail("seed", owner, f"None or the seed this run started with ({self.seed}) when "
                 "training continues", seed)
        cfg, env = self.config, self.env
        per_iter = env.num_envs * cfg.horizon
        plan = max(1, math.ceil(total / per_iter))
        t0 = time.perf_counter()
        status, message = Status.BUDGET, ""
        it0, sk0 = self.iteration, self.skipped
        while self.env_steps < total:
            frac = min(1.0, self.iteration / max(1, plan - 1))
            batch, J, rets = self._rollout()
            self.env_steps += per_iter
            self.iteration += 1
            finite = bool(torch.isfinite(batch["grad_a"]).all())
            if finite:
                aloss, gn, kl, band = self._actor_update(batch, frac)
            else:
                self.skipped += 1
                warn_not_converged(type(self).__name__, f"iteration {self.iteration}: non-finite "
                                   "action gradients (NaN/inf); batch skipped "
                                   f"({self.skipped} so far)", stacklevel=2)
                aloss, gn, kl, band = float("nan"), float("nan"), float("nan"), float("nan")
            closs = self._critic_update(batch) if bool(torch.isfinite(batch["rew"]).all()) else float("nan")
            if self.obs_rms is not None and bool(torch.isfinite(batch["raw"]).all()):
                self.obs_rms.update(batch["raw"])
            if rets is not None:
                self._last_return = float(rets.mean())
            hist = self.history
            hist.env_steps.append(self.env_steps)
            hist.episode_return.append(float(rets.mean()) if rets is not None else float("nan"))
            hist.step_reward.append(float(batch["rew"].double().mean()))
            hist.actor_loss.append(aloss)
            hist.grad_norm.append(gn)
            hist.kl.append(kl)
            hist.in_band.append(band)
            hist.critic_loss.append(closs)
            hist.skipped.append(self.skipped)
            hist.wall_time.append(time.perf_counter() - t0)
            vec = torch.nn.utils.parameters_to_vector(self.actor.parameters()).detach()
            why = divergence(vec, start=self._start_norm, name="actor parameters")
            if why is not None:
                status, message = Status.DIVERGED, f"diverged at iteration {self.iteration}: {why}"
                break
            if callback is not None and callback(self, {"iteration": self.iteration,
                                                        "env_steps": self.env_steps, "J": J}) is False:
                break
        x = torch.nn.utils.parameters_to_vector(self.actor.parameters()).detach().clone()
        fun = self._last_return
        if not math.isfinite(fun):
            fun = self.history.step_reward[-1] * env.episode_length if self.history.step_reward \
                else float("nan")
        ran, skipped = self.iteration - it0, self.skipped - sk0
        if status is Status.BUDGET and ran and skipped == ran:
            status, message = Status.NUMERICAL_ERROR, (
                f"every one of the {ran} batches of this call was skipped for non-finite action "
                "gradients (NaN/inf): the actor never moved")
        elif status is Status.BUDGET:
            # the project's objective rule, on the negated return (a return far below the
            # first one recorded, or a non-finite one, has diverged)
            first = next((r for r in self.history.episode_return if math.isfinite(r)), None)
            why = objective_divergence(-fun, start=-first if first is not None else -fun,
                                       name="negated mean return")
            if why is not None:
                status, message = Status.DIVERGED, f"diverged by the end of the run: {why}"
        if status is Status.BUDGET:
            message = (f"used the budget: {self.env_steps} environment steps in {self.iteration} "
                       f"iterations ({self.skipped} batches skipped for non-finite gradients)")
        else:
            warn_not_converged(type(self).__name__, message, stacklevel=2)
        return Result(x=x, fun=fun, status=status, message=message, nit=self.iteration,
                      nfev=self.env_steps, wall_time=time.perf_counter() - t0,
                      extra={"history": self.history, "skipped": self.skipped, "seed": self.seed})

    def policy(self, deterministic: bool = True, *, generator: torch.Generator | None = None):
        """A callable ``obs -> action`` (raw, unsquashed) under the current actor, for
        :func:`evaluate` or a user's own loop; ``deterministic``: the mean action."""
        if self.actor is None:
            fail("self", f"{type(self).__name__}.policy", "a trained algorithm (call train first)", None)

        @torch.no_grad()
        def act(obs: torch.Tensor) -> torch.Tensor:
            mu, std = self.actor(self._norm(obs.to(self.dtype)))
            if deterministic:
                return mu
            return mu + std * torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)

        return act

    def state_dict(self) -> dict:
        """Everything needed to continue the identical trajectory (networks, optimisers,
        observation statistics, generator, environment state, counters, history)."""
        if self.actor is None:
            fail("self", f"{type(self).__name__}.state_dict", "a started algorithm (call train first)", None)
        return copy.deepcopy({
            "config": asdict(self.config), "seed": self.seed, "iteration": self.iteration,
            "env_steps": self.env_steps, "skipped": self.skipped,
            "actor": self.actor.state_dict(), "critic": self.critic.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "actor_opt": self.actor_opt.state_dict(), "critic_opt": self.critic_opt.state_dict(),
            "obs_rms": None if self.obs_rms is None else self.obs_rms.state_dict(),
            "generator": self.generator.get_state(), "obs": self._obs, "ep_ret": self._ep_ret,
            "last_return": self._last_return, "start_norm": self._start_norm,
            "env": self.env.state_dict() if hasattr(self.env, "state_dict") else None,
            "history": asdict(self.history)})

    def load_state_dict(self, sd: dict) -> None:
        owner = f"{type(self).__name__}.load_state_dict"
        if not isinstance(sd, dict) or "actor" not in sd or "config" not in sd:
            fail("state_dict", owner, "a dict made by RPO.state_dict()", type(sd).__name__, exc=TypeError)
        if sd["config"] != asdict(self.config):
            fail("state_dict", owner, "a state of an algorithm with the same config", "another config")
        sd = copy.deepcopy(sd)
        self._build(sd["seed"])
        self.actor.load_state_dict(sd["actor"])
        self.critic.load_state_dict(sd["critic"])
        self.target_critic.load_state_dict(sd["target_critic"])
        self.actor_opt.load_state_dict(sd["actor_opt"])
        self.critic_opt.load_state_dict(sd["critic_opt"])
        if self.obs_rms is not None:
            self.obs_rms.load_state_dict(sd["obs_rms"])
        self.generator.set_state(sd["generator"])
        if sd["env"] is not None:
            self.env.load_state_dict(sd["env"])
        self._obs, self._ep_ret = sd["obs"], sd["ep_ret"]
        self._last_return, self._start_norm = sd["last_return"], sd["start_norm"]
        self.iteration, self.env_steps, self.skipped = sd["iteration"], sd["env_steps"], sd["skipped"]
        self.history = TrainHistory(**sd["history"])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env={self.env!r}, config={self.config!r})"


class SHAC(RPO):
    """SHAC (Xu et al., ICLR 2022): short-horizon BPTT actor-critic, the RP baseline. The same
    trainer as :class:`RPO` with :func:`shac_config` (M = 1, no clip, KL or entropy), where the
    surrogate's gradient is exactly the BPTT gradient of SHAC's actor loss (tested)."""

    name = "SHAC"

    @staticmethod
    def _default_config() -> RPOConfig:
        return shac_config()


@torch.no_grad()
def evaluate(policy: Callable, env, *, seed: int = 0) -> np.ndarray:
    """Undiscounted return of one full episode in each of ``env.num_envs`` copies started by
    ``env.reset(seed)``, acting with ``policy(obs) -> raw action``. Returns (num_envs,)."""
    check_int("seed", seed, owner="evaluate", low=0)
    obs = env.reset(seed=seed)
    total = torch.zeros(env.num_envs, dtype=torch.float64, device=getattr(env, "device", "cpu"))
    alive = torch.ones(env.num_envs, dtype=torch.bool, device=total.device)
    for _ in range(env.episode_length):
        obs, r, done, _ = env.step(policy(obs))
        total += torch.where(alive, r.double(), torch.zeros_like(total))
        alive &= ~done
        if not bool(alive.any()):
            break
    return total.cpu().numpy()
