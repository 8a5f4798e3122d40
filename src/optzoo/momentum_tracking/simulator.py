"""Tracking simulator: SGD, heavy-ball and Nesterov on a drifting strongly convex quadratic.

Paper: Sahu, Hogan, Wells, arXiv 2601.12238 (ICML 2026); fidelity **reconstructed** (the
environment and the parametrisations are the spec's, not the paper's, which were not public).

Environment (:class:`DriftingQuadratic`), per seed and coordinate i (diagonal curvature
``mu_i``; with isotropic noise and drift the eigenbasis is no loss of generality)::

    g_t = mu * (theta_t - theta*_t) + xi_t,        xi_t ~ N(0, noise_var I)
    theta*_{t+1} = theta*_t + delta_t
    delta_t ~ N(0, q I)                    drift="random_walk"  (drift_scale = q)
    delta_t = v 1                          drift="constant"     (drift_scale = v)
    delta_t = Delta sign(h_{T-1-t})        drift="adversarial"  (drift_scale = Delta; h is the
                                           method's own drift-to-error impulse response)
    delta_t = Delta_J s, s in {-1,1}^d     drift="switch", only when (t+1) % period == 0

Two ways to run it:

* :func:`simulate`: the vectorised simulator, one ``[S, G, d]`` tensor for S seeds times G
  (lr, momentum, form) settings, with common random numbers (every setting sees the same
  noise and drift). Forms: "torch" ``v <- b v + g; theta <- theta - lr v``; "ema"
  ``v <- b v + (1-b) g``; "nesterov" ``theta <- theta - lr (g + b v)``; the first step sets
  ``v = g_0`` as torch.optim.SGD does.
* :func:`run_tracking`: the same environment driven by a real ``torch.optim`` optimizer over
  one ``[S, d]`` parameter (the anchor; the tests check both agree to rounding).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from optzoo._core.result import diverged_mask, warn_not_converged
from optzoo._core.rng import torch_generator
from optzoo._core.validation import (
    check_choice,
    check_device,
    check_int,
    check_real,
    check_type,
    fail,
)

from . import theory

__all__ = ["DriftingQuadratic", "TrackingHistory", "simulate", "run_tracking", "ENV_DRIFTS"]

ENV_DRIFTS = ("random_walk", "constant", "adversarial", "switch")
_CHUNK = 256


class DriftingQuadratic:
    """A drifting quadratic tracking problem (see the module docstring for the model).

    Parameters: ``d`` dimension (default 20, or ``len(curvatures)``; a single curvature with
    ``d`` is isotropic); ``kappa``, ``L``, ``spectrum`` ("geometric", "linear",
    "two") set the curvatures in [L/kappa, L] unless ``curvatures`` is given; ``drift`` and
    ``drift_scale`` the drift model: **for "random_walk" ``drift_scale`` is the variance** q of
    each step's Gaussian drift (not its standard deviation); for "constant", "adversarial" and
    "switch" it is the step's size (v, Delta, Delta_J); ``noise_var`` the gradient-noise
    variance per coordinate; ``period`` the switch period; ``init_error`` the initial error e_0 per coordinate; ``seed``
    the base seed of the noise and drift generators.

    >>> env = DriftingQuadratic(4, kappa=10.0, drift="random_walk", drift_scale=1e-2, seed=0)
    >>> env.curvatures.tolist()[0], env.d
    (0.1, 4)
    """

    def __init__(self, d: int | None = None, *, kappa: float = 1.0, L: float = 1.0, spectrum: str = "geometric",
                 curvatures: Any = None, drift: str = "random_walk", drift_scale: float = 1e-2,
                 noise_var: float = 1.0, period: int = 1000, init_error: float = 1.0, seed: int = 0):
        owner = "DriftingQuadratic"
        self.drift = check_choice("drift", drift, ENV_DRIFTS, owner=owner)
        self.drift_scale = check_real("drift_scale", drift_scale, owner=owner,
                                      low=None if drift == "constant" else 0.0)
        self.noise_var = check_real("noise_var", noise_var, owner=owner, low=0.0)
        self.period = check_int("period", period, owner=owner, low=1)
        self.init_error = check_real("init_error", init_error, owner=owner)
        self.seed = check_int("seed", seed, owner=owner)
        if d is not None:
            d = check_int("d", d, owner=owner, low=1)
        if curvatures is not None:
            mu = theory._curvatures(curvatures, owner)
            if d is not None and np.ndim(curvatures) == 0:
                mu = np.full(d, float(mu[0]))  # one curvature, d coordinates: isotropic
            elif d is not None and mu.size != d:
                fail("curvatures", owner, f"of length d = {d} (or a single number), or pass "
                     "d=None", f"{mu.size} values")
        else:
            mu = theory.curvature_spectrum(kappa, 20 if d is None else d, kind=spectrum, L=L)
        self.curvatures = torch.as_tensor(mu, dtype=torch.float64)
        self.d = int(self.curvatures.numel())

    def replace(self, **changes: Any) -> DriftingQuadratic:
        """A copy with some fields changed (same seed unless given: common random numbers)."""
        kw = dict(curvatures=self.curvatures.numpy(), drift=self.drift, drift_scale=self.drift_scale,
                  noise_var=self.noise_var, period=self.period, init_error=self.init_error, seed=self.seed)
        kw.update(changes)
        return DriftingQuadratic(**kw)

    def __repr__(self) -> str:
        mu = self.curvatures
        return (f"DriftingQuadratic(d={self.d}, curvatures in [{mu.min():.3g}, {mu.max():.3g}], "
                f"drift={self.drift!r}, drift_scale={self.drift_scale:g}, noise_var={self.noise_var:g}, "
                f"seed={self.seed})")


class _Streams:
    """Noise and drift drawn in chunks from two independent generators, so zeroing one input
    leaves the other's realisation unchanged (common random numbers across runs)."""

    def __init__(self, env: DriftingQuadratic, seeds: int, device):
        self.env, self.S, self.device = env, seeds, device
        self.gn = torch_generator(env.seed, "momentum_tracking", "noise", device=device)
        self.gd = torch_generator(env.seed, "momentum_tracking", "drift", device=device)
        self.t0 = -_CHUNK
        self.sn = math.sqrt(env.noise_var)

    def _refill(self, t: int) -> None:
        shape = (_CHUNK, self.S, 1, self.env.d)
        z = torch.randn(shape, generator=self.gn, dtype=torch.float64, device=self.device)
        self.noise = z * self.sn
        env = self.env
        if env.drift == "random_walk":
            z = torch.randn(shape, generator=self.gd, dtype=torch.float64, device=self.device)
            self.drift = z * math.sqrt(env.drift_scale)
        elif env.drift == "switch":
            sign = torch.randint(0, 2, shape, generator=self.gd, device=self.device).to(torch.float64) * 2 - 1
            jump = ((torch.arange(t, t + _CHUNK, device=self.device) + 1) % env.period == 0).to(torch.float64)
            self.drift = sign * jump.view(-1, 1, 1, 1) * env.drift_scale
        else:
            self.drift = None
        self.t0 = t

    def at(self, t: int):
        if t - self.t0 >= _CHUNK:
            self._refill(t)
        i = t - self.t0
        return self.noise[i], (None if self.drift is None else self.drift[i])


@dataclass
class TrackingHistory:
    """What a tracking run returns (S seeds, G settings, d coordinates).

    ``errors``: ``(S, G, n)`` tensor of ||theta_t - theta*_t||^2 at ``times`` (t = 0 is the
    start); ``mse_steady``: ``(S, G)`` mean of ||e_t||^2 over t in [burn_in, steps];
    ``mse_steady_dir``: ``(S, G, d)`` the same per coordinate; ``final_error``: ``(S, G, d)``
    e at t = steps; ``diverged``: ``(S, G)`` bool, optzoo's divergence rule fired (the error became
    non-finite, or its norm exceeded ``DIVERGENCE_GROWTH * (1 + |e_0|)``; with a warning).
    """

    errors: torch.Tensor
    times: torch.Tensor
    mse_steady: torch.Tensor
    mse_steady_dir: torch.Tensor
    final_error: torch.Tensor
    diverged: torch.Tensor
    lr: list[float]
    momentum: list[float]
    forms: list[str]
    steps: int
    burn_in: int


def _settings(lr, momentum, form, owner):
    lrs = np.atleast_1d(np.asarray(lr, dtype=float))
    bs = np.atleast_1d(np.asarray(momentum, dtype=float))
    forms = [form] if isinstance(form, str) else list(form)
    G = max(lrs.size, bs.size, len(forms))
    for name, n in (("lr", lrs.size), ("momentum", bs.size), ("form", len(forms))):
        if n not in (1, G):
            fail(name, owner, f"a scalar or a sequence of length {G} (one per setting)", n)
    lrs, bs = np.broadcast_to(lrs, (G,)).copy(), np.broadcast_to(bs, (G,)).copy()
    forms = forms * G if len(forms) == 1 else forms
    for f in forms:
        check_choice("form", f, theory.FORMS, owner=owner)
    return lrs, bs, forms


def _validate(env, lrs, bs, forms, owner):
    mu = env.curvatures.numpy()
    for lr, b, f in zip(lrs, bs, forms, strict=False):
        theory._lr(theory._grid("lr", lr, owner, 0.0, None, "neither"), mu,
                   theory._momentum(b, owner), f, owner)


def _default_burn_in(env, lrs, bs, forms, steps):
    mu = env.curvatures.numpy()
    rho = 0.0
    for lr, b, f in zip(lrs, bs, forms, strict=False):
        A = theory.system_matrices(mu, lr, b, f)[0]
        rho = max(rho, float(theory._spectral_radius(A).max()))
    return int(min(steps // 2, math.ceil(10.0 / max(1.0 - rho, 1e-12))))


def simulate(env: DriftingQuadratic, *, lr: Any, momentum: Any = 0.9, form: Any = "torch",
             steps: int = 20_000, seeds: int = 16, burn_in: int | None = None,
             record_every: int | None = None, device: str | None = None) -> TrackingHistory:
    """Run S seeds x G settings of SGD / heavy-ball / Nesterov on ``env``, vectorised.

    ``lr``, ``momentum``, ``form``: scalars or equal-length sequences (one entry per setting;
    momentum 0 is SGD in every form). Step sizes outside the stable range raise
    ``ValueError`` naming the range. ``burn_in`` defaults to min(steps/2, 10/(1 - rho_max)).

    >>> env = DriftingQuadratic(2, noise_var=1.0, drift_scale=0.01, seed=0)
    >>> h = simulate(env, lr=[0.1, 0.1], momentum=[0.0, 0.9], steps=200, seeds=2)
    >>> tuple(h.mse_steady.shape)
    (2, 2)
    """
    owner = "simulate"
    check_type("env", env, DriftingQuadratic, owner=owner, what="a DriftingQuadratic")
    steps = check_int("steps", steps, owner=owner, low=1)
    S = check_int("seeds", seeds, owner=owner, low=1)
    lrs, bs, forms = _settings(lr, momentum, form, owner)
    _validate(env, lrs, bs, forms, owner)
    G, d = lrs.size, env.d
    burn = _default_burn_in(env, lrs, bs, forms, steps) if burn_in is None else \
        check_int("burn_in", burn_in, owner=owner, low=0, high=steps)
    rec = max(1, steps // 1000) if record_every is None else check_int("record_every", record_every, owner=owner, low=1)
    dev = check_device("device", device, owner=owner)
    f64 = dict(dtype=torch.float64, device=dev)
    col = lambda x: torch.as_tensor(np.asarray(x, dtype=float), **f64).view(1, G, 1)  # noqa: E731
    b = col(bs)
    k = col([1 - x if f == "ema" else 1.0 for x, f in zip(bs, forms, strict=False)])
    p = col([1.0 if f == "nesterov" else 0.0 for f in forms])
    r = col([x if f == "nesterov" else 1.0 for x, f in zip(bs, forms, strict=False)])
    eta = col(lrs)
    mu = env.curvatures.to(dev).view(1, 1, d)
    adv = None
    if env.drift == "adversarial":
        hs = []
        for lr_, b_, f_ in zip(lrs, bs, forms, strict=False):
            A, _, bd, _, _ = theory.system_matrices(env.curvatures.numpy(), lr_, b_, f_)
            hs.append(theory._impulse(A, bd, steps))
        h = np.stack(hs)  # (G, d, T)
        adv = torch.as_tensor(env.drift_scale * np.sign(h[..., ::-1]).copy(), **f64)  # delta_t at [..., t]
    e = torch.full((S, G, d), env.init_error, **f64)
    v = torch.zeros_like(e)
    n_rec = steps // rec + 1
    errors = torch.empty((S, G, n_rec), **f64)
    errors[..., 0] = (e * e).sum(-1)
    acc = torch.zeros((S, G, d), **f64)
    if burn == 0:
        acc += e * e
    streams = _Streams(env, S, dev)
    const = env.drift_scale if env.drift == "constant" else None
    with torch.no_grad():
        for t in range(steps):
            xi, delta = streams.at(t)
            g = mu * e + xi
            if t == 0:  # torch.optim.SGD's first step sets the buffer to g_0 in every form
                v = g
                step = (p + r) * g
            else:
                v = torch.addcmul(b * v, k, g)
                step = torch.addcmul(r * v, p, g)
            e = e - eta * step
            if delta is not None:
                e = e - delta
            elif const is not None:
                e = e - const
            elif adv is not None:
                e = e - adv[..., t]
            if t + 1 >= burn:
                acc += e * e
            if (t + 1) % rec == 0:
                errors[..., (t + 1) // rec] = (e * e).sum(-1)
    n_acc = steps - burn + 1
    dir_mse = acc / n_acc
    diverged = _diverged(errors, e)
    if diverged.any():
        warn_not_converged("simulate", f"{int(diverged.sum())} of {S * G} runs diverged "
                           "(non-finite, or beyond the growth bound of optzoo's divergence rule)",
                           stacklevel=3)
    return TrackingHistory(errors, torch.arange(n_rec) * rec, dir_mse.sum(-1), dir_mse, e, diverged,
                           lrs.tolist(), bs.tolist(), forms, steps, burn)


def _diverged(errors: torch.Tensor, e_final: torch.Tensor) -> torch.Tensor:
    """optzoo's one divergence rule per run, from the recorded squared errors (S, G, n_rec)
    and the final error (S, G, d): non-finite anywhere, or |e_t| > growth * (1 + |e_0|)."""
    norms = errors.clamp(min=0).sqrt()
    start = norms[..., :1]
    bad = diverged_mask(norms, start=start).any(-1)
    return bad | ~torch.isfinite(e_final).all(-1)


def _form_of(group: dict, owner: str) -> tuple[float, float, str]:
    b = float(group.get("momentum", 0.0) or 0.0)
    damp = float(group.get("dampening", 0.0) or 0.0)
    if group.get("nesterov", False):
        return float(group["lr"]), b, "nesterov"
    if b == 0.0 or damp == 0.0:
        return float(group["lr"]), b, "torch"
    if abs(damp - b) < 1e-15:
        return float(group["lr"]), b, "ema"
    fail("optimizer_factory", owner, "an optimizer whose dampening is 0 or equal to momentum "
         "(needed only for adversarial drift)", damp)


def run_tracking(optimizer_factory: Callable[[list[torch.Tensor]], torch.optim.Optimizer],
                 env: DriftingQuadratic, *, steps: int = 20_000, seeds: int = 16,
                 burn_in: int | None = None, record_every: int | None = None) -> TrackingHistory:
    """Drive ``env`` with a real ``torch.optim`` optimizer over one ``[seeds, d]`` parameter.

    ``optimizer_factory(params)`` must return a ``torch.optim.Optimizer`` with exactly one
    param group over ``params``. Results have G = 1. Same noise and drift as :func:`simulate`.

    >>> env = DriftingQuadratic(2, seed=0)
    >>> h = run_tracking(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), env, steps=100, seeds=2)
    >>> tuple(h.errors.shape)
    (2, 1, 101)
    """
    owner = "run_tracking"
    check_type("env", env, DriftingQuadratic, owner=owner, what="a DriftingQuadratic")
    if not callable(optimizer_factory):
        fail("optimizer_factory", owner, "a callable params -> torch.optim.Optimizer",
             optimizer_factory, exc=TypeError)
    steps = check_int("steps", steps, owner=owner, low=1)
    S = check_int("seeds", seeds, owner=owner, low=1)
    d = env.d
    theta_star = torch.zeros((S, d), dtype=torch.float64)
    param = torch.full((S, d), env.init_error, dtype=torch.float64, requires_grad=True)
    opt = optimizer_factory([param])
    if not isinstance(opt, torch.optim.Optimizer):
        fail("optimizer_factory", owner, "a callable returning a torch.optim.Optimizer",
             type(opt).__name__, exc=TypeError)
    if len(opt.param_groups) != 1 or len(opt.param_groups[0]["params"]) != 1 \
            or opt.param_groups[0]["params"][0] is not param:
        fail("optimizer_factory", owner, "a callable returning an optimizer with exactly one "
             "param group over the given params", f"{len(opt.param_groups)} group(s)")
    lr, b, form = (None, None, None)
    adv = None
    if env.drift == "adversarial":
        lr, b, form = _form_of(opt.param_groups[0], owner)
        A, _, bd, _, _ = theory.system_matrices(env.curvatures.numpy(), lr, b, form)
        h = theory._impulse(A, bd, steps)
        adv = torch.as_tensor(env.drift_scale * np.sign(h[..., ::-1]).copy())  # (d, T)
    burn = steps // 2 if burn_in is None else check_int("burn_in", burn_in, owner=owner, low=0, high=steps)
    rec = max(1, steps // 1000) if record_every is None else check_int("record_every", record_every, owner=owner, low=1)
    mu = env.curvatures.view(1, d)
    n_rec = steps // rec + 1
    errors = torch.empty((S, 1, n_rec), dtype=torch.float64)
    with torch.no_grad():
        e = param - theta_star
    errors[:, 0, 0] = (e * e).sum(-1)
    acc = torch.zeros((S, d), dtype=torch.float64)
    if burn == 0:
        acc += e * e
    streams = _Streams(env, S, torch.device("cpu"))
    for t in range(steps):
        xi, delta = streams.at(t)
        with torch.no_grad():
            param.grad = mu * (param - theta_star) + xi[:, 0]
        opt.step()
        with torch.no_grad():
            if delta is not None:
                theta_star += delta[:, 0]
            elif env.drift == "constant":
                theta_star += env.drift_scale
            elif adv is not None:
                theta_star += adv[:, t]
            e = param - theta_star
            if t + 1 >= burn:
                acc += e * e
            if (t + 1) % rec == 0:
                errors[:, 0, (t + 1) // rec] = (e * e).sum(-1)
    dir_mse = (acc / (steps - burn + 1)).unsqueeze(1)
    diverged = _diverged(errors, e.detach().view(S, 1, d))
    if diverged.any():
        warn_not_converged("run_tracking", f"{int(diverged.sum())} of {S} seeds diverged "
                           "(non-finite, or beyond the growth bound of optzoo's divergence rule)",
                           stacklevel=3)
    if form is None:
        try:
            lr, b, form = _form_of(opt.param_groups[0], owner)
        except (ValueError, KeyError, TypeError):  # not an SGD-family optimizer: label only
            lr, b, form = float(opt.param_groups[0].get("lr", float("nan"))), float("nan"), "other"
    return TrackingHistory(errors, torch.arange(n_rec) * rec, dir_mse.sum(-1), dir_mse, e.detach().unsqueeze(1),
                           diverged, [lr], [b], [form], steps, burn)
