"""Actor, critic and observation normaliser shared by RPO and SHAC (SHAC's defaults:
ELU MLP [64, 64], state-independent log-std initialised at -1)."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["Critic", "GaussianActor", "RunningMeanStd", "mlp"]


def mlp(sizes, activation=nn.ELU, out_gain: float | None = None) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(activation())
    if out_gain is not None:
        with torch.no_grad():
            layers[-1].weight.mul_(out_gain)
            layers[-1].bias.zero_()
    return nn.Sequential(*layers)


class GaussianActor(nn.Module):
    """Unbounded diagonal Gaussian policy a = mu_theta(s) + sigma_theta * eps (invertible, as the
    reparameterisation needs). ``forward(obs) -> (mu, std)``. ``hidden=()`` gives a linear
    policy mean (used for LQR)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden=(64, 64), *, init_logstd: float = -1.0,
                 activation=nn.ELU, bias: bool = True) -> None:
        super().__init__()
        if hidden:
            self.mu = mlp([obs_dim, *hidden, act_dim], activation, out_gain=0.1)
        else:
            self.mu = nn.Linear(obs_dim, act_dim, bias=bias)
            with torch.no_grad():
                self.mu.weight.zero_()
                if bias:
                    self.mu.bias.zero_()
        self.logstd = nn.Parameter(torch.full((act_dim,), float(init_logstd)))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu = self.mu(obs)
        return mu, self.logstd.exp().expand_as(mu)


class Critic(nn.Module):
    """State value V_phi(s): an MLP with a scalar head."""

    def __init__(self, obs_dim: int, hidden=(64, 64), *, activation=nn.ELU) -> None:
        super().__init__()
        self.v = mlp([obs_dim, *hidden, 1], activation)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.v(obs).squeeze(-1)


class RunningMeanStd(nn.Module):
    """Running observation mean and variance (Chan et al. parallel update), kept in buffers so
    they travel with ``state_dict``. ``forward`` normalises and is differentiable in ``x``."""

    def __init__(self, dim: int, *, eps: float = 1e-5, clip: float = 10.0) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim, dtype=torch.float64))
        self.register_buffer("var", torch.ones(dim, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64))
        self.eps, self.clip = eps, clip

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        x = x.reshape(-1, x.shape[-1]).double()
        bm, bv, bn = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        delta, tot = bm - self.mean, self.count + bn
        self.mean += delta * bn / tot
        self.var.copy_((self.var * self.count + bv * bn + delta ** 2 * self.count * bn / tot) / tot)
        self.count.copy_(tot)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m, s = self.mean.to(x.dtype), (self.var + self.eps).sqrt().to(x.dtype)
        return ((x - m) / s).clamp(-self.clip, self.clip)
