"""Regimes of momentum under drift: the helps/hurts boundary, a tuning helper, the paper stub.

Built on the exact theory in :mod:`.theory` (paper: arXiv 2601.12238, fidelity reconstructed).
Every comparison gives each method its own best step size (:func:`~.theory.tuned_mse`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optzoo._core.validation import check_choice, check_real, fail

from .theory import (
    DRIFTS,
    FORMS,
    _curvatures,
    _momentum,
    curvature_spectrum,
    kalman_floor,
    tuned_mse,
)

__all__ = ["PhaseDiagram", "Recommendation", "momentum_advantage", "regime_boundary", "recommend"]


def momentum_advantage(curvatures: Any, momentum: Any = 0.9, *, noise_var: float, drift_var: float,
                       drift: str = "random_walk", form: str = "torch") -> np.ndarray:
    """Best-tuned momentum MSE divided by best-tuned SGD MSE (> 1: momentum hurts).

    >>> float(momentum_advantage(1.0, 0.8, noise_var=0.0, drift_var=0.01)) > 1
    True
    """
    _, sgd = tuned_mse(curvatures, 0.0, noise_var=noise_var, drift_var=drift_var, drift=drift, form="torch")
    _, mom = tuned_mse(curvatures, momentum, noise_var=noise_var, drift_var=drift_var, drift=drift, form=form)
    return mom / sgd


@dataclass(frozen=True)
class PhaseDiagram:
    """Where momentum helps: ``ratio[i, j]`` = best momentum MSE / best SGD MSE at
    ``kappas[i]`` and ``drift_ratios[j]`` (q/s^2), minimised over ``momenta``; ``boundary``
    lists the interpolated (kappa, q/s^2) points where the ratio crosses 1."""

    kappas: np.ndarray
    drift_ratios: np.ndarray
    ratio: np.ndarray
    best_momentum: np.ndarray
    boundary: list[tuple[float, float]] = field(default_factory=list)


def regime_boundary(kappas: Any, drift_ratios: Any, *, momenta: Any = (0.5, 0.8, 0.9, 0.95, 0.99),
                    form: str = "torch", spectrum: str = "two", d: int = 2, noise_var: float = 1.0,
                    drift: str = "random_walk", L: float = 1.0) -> PhaseDiagram:
    """Map the "momentum helps / hurts" boundary over conditioning and drift-to-noise ratio.

    For each kappa the curvatures are :func:`curvature_spectrum` (kappa, d, kind=spectrum);
    drift_var = ratio * noise_var (with noise_var = 0, ``drift_ratios`` are the drift_var
    values themselves). Every method gets its own best step size.

    >>> pd = regime_boundary([1.0, 100.0], [0.01], momenta=[0.8], noise_var=0.0)
    >>> bool(pd.ratio[0, 0] > 1), bool(pd.ratio[1, 0] < 1)
    (True, True)
    """
    owner = "regime_boundary"
    ks = np.atleast_1d(np.asarray(kappas, dtype=float))
    rs = np.atleast_1d(np.asarray(drift_ratios, dtype=float))
    if (~np.isfinite(rs)).any() or (rs <= 0).any():
        fail("drift_ratios", owner, "positive and finite", drift_ratios)
    s2 = check_real("noise_var", noise_var, owner=owner, low=0.0)
    betas = np.atleast_1d(_momentum(momenta, owner))
    if betas.size == 0:
        fail("momenta", owner, "a non-empty list of momenta in [0, 1)", momenta)
    ratio = np.empty((ks.size, rs.size))
    best_b = np.empty_like(ratio)
    for i, k in enumerate(ks):
        mu = curvature_spectrum(float(k), d, kind=spectrum, L=L)
        for j, r in enumerate(rs):
            q = r * s2 if s2 > 0 else r
            _, sgd = tuned_mse(mu, 0.0, noise_var=s2, drift_var=q, drift=drift)
            _, mom = tuned_mse(mu, betas, noise_var=s2, drift_var=q, drift=drift, form=form)
            ratio[i, j] = mom.min() / sgd
            best_b[i, j] = betas[mom.argmin()]
    boundary = []
    lr_ = np.log(rs)
    for i, k in enumerate(ks):
        z = np.log(ratio[i])
        for j in np.nonzero(np.sign(z[:-1]) * np.sign(z[1:]) < 0)[0]:
            w = z[j] / (z[j] - z[j + 1])
            boundary.append((float(k), float(np.exp(lr_[j] + w * (lr_[j + 1] - lr_[j])))))
    return PhaseDiagram(ks, rs, ratio, best_b, boundary)


@dataclass(frozen=True)
class Recommendation:
    """What :func:`recommend` found. ``regime``: "drift-dominated" when the mean steady Kalman
    gain ``kalman_gain`` is >= 1/2 (an INFERRED rule), else "noise-dominated"; ``momentum_helps``: whether some
    (form, beta > 0) beats tuned SGD; ``best``: the overall best setting; ``per_form``: the
    tuned lr and MSE for every (form, beta); ``kalman_floor``: the floor (random walk only)."""

    regime: str
    momentum_helps: bool
    kalman_gain: float
    best: dict[str, Any]
    sgd: dict[str, float]
    per_form: dict[str, dict[str, list[float]]]
    kalman_floor: float | None

    def __str__(self) -> str:
        b = self.best
        return (f"{self.regime}; momentum {'helps' if self.momentum_helps else 'hurts'}: best is "
                f"form={b['form']!r} momentum={b['momentum']:g} lr={b['lr']:.4g} (MSE {b['mse']:.4g}; "
                f"tuned SGD {self.sgd['mse']:.4g})")


def recommend(curvatures: Any, *, noise_var: float, drift_var: float, drift: str = "random_walk",
              forms: tuple[str, ...] = FORMS, momenta: Any = (0.5, 0.8, 0.9, 0.95, 0.99)) -> Recommendation:
    """Given estimated curvatures, noise variance and drift size, name the regime and the best
    (form, beta, lr). ``drift_var`` means q (random walk), v (constant) or Delta (adversarial).

    >>> r = recommend([1.0], noise_var=1.0, drift_var=1.0)
    >>> r.regime, r.momentum_helps, r.best["form"]
    ('drift-dominated', False, 'sgd')
    """
    owner = "recommend"
    check_choice("drift", drift, DRIFTS, owner=owner)
    for f in forms:
        check_choice("forms", f, FORMS, owner=owner)
    mu = _curvatures(curvatures, owner)
    s2 = check_real("noise_var", noise_var, owner=owner, low=0.0)
    q = check_real("drift_var", drift_var, owner=owner, low=0.0)
    betas = np.atleast_1d(_momentum(momenta, owner))
    if betas.size == 0:
        fail("momenta", owner, "a non-empty list of momenta in [0, 1)", momenta)
    lr0, m0 = tuned_mse(mu, 0.0, noise_var=s2, drift_var=q, drift=drift)
    # Regime (INFERRED rule): the mean steady Kalman gain K_i = P_i/(P_i + r_i) of the local
    # level model with per-step drift variance q (v^2 or Delta^2 for the other drift models)
    # and observation noise r_i = s^2/mu_i^2. K >= 1/2: the best tracker weights the newest
    # gradient more than all of its memory, i.e. drift dominates.
    qv = q if drift == "random_walk" else q * q
    r = s2 / mu**2
    P = (qv + np.sqrt(qv * qv + 4 * qv * r)) / 2
    gain = float(np.mean(np.where(P + r > 0, P / np.where(P + r > 0, P + r, 1.0), 0.0)))
    best = {"form": "sgd", "momentum": 0.0, "lr": float(lr0), "mse": float(m0)}
    per_form = {}
    for f in forms:
        lrs, ms = tuned_mse(mu, betas, noise_var=s2, drift_var=q, drift=drift, form=f)
        per_form[f] = {"momentum": betas.tolist(), "lr": np.atleast_1d(lrs).tolist(),
                       "mse": np.atleast_1d(ms).tolist()}
        k = int(np.argmin(ms))
        if ms[k] < best["mse"] * (1 - 1e-9):
            best = {"form": f, "momentum": float(betas[k]), "lr": float(lrs[k]), "mse": float(ms[k])}
    floor = kalman_floor(mu, noise_var=s2, drift_var=q) if drift == "random_walk" else None
    return Recommendation("drift-dominated" if gain >= 0.5 else "noise-dominated", best["form"] != "sgd",
                          gain, best, {"lr": float(lr0), "mse": float(m0)}, per_form, floor)
