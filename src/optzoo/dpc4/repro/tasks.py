"""Problems and batched runners for the DP-C4 reproduction (closed-form per-sample gradients).

Every runner executes R configurations at once (leading dimension R of the iterate), sharing
one Poisson batch per step within a run; noise is independent per configuration. The same
pure updates as the optimizers are used (``dpc4_update``/``dpsgd_update``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from optzoo._core.rng import derive_seed
from optzoo.dpc4.core import dpc4_init, dpc4_update, dpsgd_update

LAMBDA = 1e-3


@dataclass
class Problem:
    name: str
    kind: str  # "logistic" | "ridge"
    X: torch.Tensor  # (n, d) train, bias column included
    y: torch.Tensor
    Xte: torch.Tensor
    yte: torch.Tensor
    x_star: torch.Tensor
    f_star: float

    @property
    def n(self) -> int:
        return self.X.shape[0]


def closed_form_grads(prob: Problem, w: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """(R, b, d) gradients of f_i(w) = loss_i(w) + lambda/2 ||w||^2 for the rows idx."""
    Xb, yb = prob.X[idx], prob.y[idx]
    z = w @ Xb.T  # (R, b)
    r = torch.sigmoid(z) - yb if prob.kind == "logistic" else z - yb
    return r[..., None] * Xb + LAMBDA * w[:, None, :]


def objective(prob: Problem, w: torch.Tensor, X=None, y=None) -> torch.Tensor:
    X = prob.X if X is None else X
    y = prob.y if y is None else y
    z = w @ X.T
    if prob.kind == "logistic":
        loss = torch.nn.functional.softplus(z) - y * z
    else:
        loss = 0.5 * (z - y) ** 2
    return loss.mean(-1) + 0.5 * LAMBDA * (w * w).sum(-1)


def test_metric(prob: Problem, w: torch.Tensor) -> torch.Tensor:
    """Test accuracy (logistic) or test mean squared error (ridge), per row."""
    z = w @ prob.Xte.T
    if prob.kind == "logistic":
        return ((z > 0).double() == prob.yte).double().mean(-1)
    return ((z - prob.yte) ** 2).mean(-1)


def make_problem(name: str, seed: int) -> Problem:
    from scipy.optimize import minimize
    from sklearn.datasets import load_breast_cancer, make_classification, make_regression
    from sklearn.model_selection import train_test_split

    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        kind = "logistic"
    elif name == "synthetic_logistic":
        X, y = make_classification(n_samples=20000, n_features=20, random_state=seed % 2**31)
        kind = "logistic"
    elif name == "ridge":
        X, y = make_regression(n_samples=5000, n_features=20, n_informative=10, noise=10.0,
                               random_state=seed % 2**31)
        kind = "ridge"
    else:
        raise ValueError(f"unknown problem {name!r}")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=seed % 2**31)
    mu, sd = Xtr.mean(0), Xtr.std(0) + 1e-12
    Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    if kind == "ridge":  # unit-scale targets so one clipping grid serves both problems
        ym, ys = ytr.mean(), ytr.std()
        ytr, yte = (ytr - ym) / ys, (yte - ym) / ys
    add1 = lambda A: np.hstack([A, np.ones((A.shape[0], 1))])  # noqa: E731
    Xtr, Xte = add1(Xtr), add1(Xte)
    t = lambda A: torch.as_tensor(A, dtype=torch.float64)  # noqa: E731
    prob = Problem(name, kind, t(Xtr), t(ytr), t(Xte), t(yte), torch.zeros(Xtr.shape[1]), 0.0)
    if kind == "ridge":  # closed-form optimum of the regularised least squares
        n = Xtr.shape[0]
        w = np.linalg.solve(Xtr.T @ Xtr / n + LAMBDA * np.eye(Xtr.shape[1]), Xtr.T @ ytr / n)
    else:
        def fg(w):
            wt = torch.as_tensor(w, dtype=torch.float64).requires_grad_(True)
            f = objective(prob, wt[None])[0]
            (g,) = torch.autograd.grad(f, wt)
            return float(f.detach()), g.numpy()

        w = minimize(fg, np.zeros(Xtr.shape[1]), jac=True, method="L-BFGS-B",
                     options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 10000}).x
    prob.x_star = t(w)
    prob.f_star = float(objective(prob, prob.x_star[None])[0])
    return prob


def lr_at(lr0: torch.Tensor, t: int) -> torch.Tensor:
    """Shared step-size schedule eta_t = eta_0 / sqrt(1 + t / 100) (all methods)."""
    return lr0 / (1.0 + t / 100.0) ** 0.5


def run_linear(prob: Problem, method: str, *, lr0, c0, z, z_fb=None, gamma: float = 0.5,
               shift: float = 0.5, steps: int, sample_rate: float, seed: int, record_every: int = 0):
    """Run R configs (rows of lr0, c0, z: tensors of shape (R,)) for ``steps`` steps.

    method: "dpsgd" (constant C = c0), "decay" (DP-SGD with C_t = c0/(1+t)^gamma, no coupling),
    "dpc4" (anchor memory), "dpc4_ef" (error-feedback memory), "sgd" (no clipping, no noise).
    Returns final iterates (R, d), total injected noise variance per coordinate in update
    units (R,), and (optionally) the suboptimality trace.
    """
    lr0, c0, z = (torch.as_tensor(v, dtype=torch.float64) for v in (lr0, c0, z))
    R, d, n = lr0.shape[0], prob.X.shape[1], prob.n
    B = sample_rate * n
    w = torch.zeros(R, d, dtype=torch.float64)
    gs = torch.Generator().manual_seed(derive_seed(seed, "sampling"))
    gn = torch.Generator().manual_seed(derive_seed(seed, "noise"))
    mem = "anchor" if method == "dpc4" else "ef"
    state = dpc4_init(d, memory=mem, num_records=n, batch_shape=(R,)) if method.startswith("dpc4") else None
    noise_var = torch.zeros(R, dtype=torch.float64)
    trace = []
    for t in range(steps):
        idx = torch.nonzero(torch.rand(n, generator=gs) < sample_rate).reshape(-1)
        g = closed_form_grads(prob, w, idx)
        decay = 1.0 / (1.0 + t) ** gamma
        if method == "sgd":
            u = g.sum(-2) / B
        elif method in ("dpsgd", "decay"):
            c = c0 * (decay if method == "decay" else 1.0)
            u, info = dpsgd_update(g, expected_batch_size=B, sample_rate=sample_rate, clip=c,
                                   noise_multiplier=z, generator=gn)
            noise_var += info.noise.pow(2).mean(-1)
        else:
            c1 = c0 * decay
            u, state, info = dpc4_update(g, state, indices=idx, expected_batch_size=B,
                                         sample_rate=sample_rate, clip1=c1, clip2=c1 + shift,
                                         noise_multiplier=z, feedback_noise_multiplier=z_fb,
                                         generator=gn, inplace=True)
            noise_var += info.noise.pow(2).mean(-1)
        w = w - lr_at(lr0, t)[:, None] * u
        if record_every and (t + 1) % record_every == 0:
            trace.append((objective(prob, w) - prob.f_star).tolist())
    return w, noise_var, trace
