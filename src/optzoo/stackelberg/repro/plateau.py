"""E1 (plateau escape) and E2 (curvature): the spec's teacher-student instance (INFERRED).

Teacher: ``y = a' relu(B x) + noise`` (``x ~ N(0, I_d)``, B rows ~ N(0, I/d), a ~ N(0, 1/k)).
Student: ``f(x) = w' relu(theta x)`` (no biases, width m, scalar head), both layers initialised
at N(0, sigma^2) with sigma small, so (theta, w) = 0 is a saddle and uniform GD plateaus.
Loss: ``(1/2N) sum (f - y)^2 + (lam/2)||w||^2``; full-batch GD, one gradient per iteration for
every method. Iterations to ``target * L(theta_0, w_0)`` are counted (censored at the budget).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from optzoo._core.rng import torch_generator
from optzoo.stackelberg import (
    StackelbergGD,
    curvature,
    split_head,
    stackelberg_objective,
    stackelberg_param_groups,
)

__all__ = ["Student", "grads_or_censored", "instance", "run_plateau", "student", "train"]

DT = torch.float64


class Student(nn.Module):
    def __init__(self, d_in: int, width: int):
        super().__init__()
        self.body = nn.Linear(d_in, width, bias=False, dtype=DT)
        self.head = nn.Linear(width, 1, bias=False, dtype=DT)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


def instance(seed, *, n, d_in, teacher_width, noise):
    g = torch_generator(seed, "teacher")
    X = torch.randn(n, d_in, generator=g, dtype=DT)
    B = torch.randn(teacher_width, d_in, generator=g, dtype=DT) / math.sqrt(d_in)
    a = torch.randn(teacher_width, generator=g, dtype=DT) / math.sqrt(teacher_width)
    y = torch.relu(X @ B.T) @ a + noise * torch.randn(n, generator=g, dtype=DT)
    return X, y.unsqueeze(1)


def student(seed, *, d_in, width, sigma):
    m = Student(d_in, width)
    g = torch_generator(seed, "student_init")
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(sigma * torch.randn(p.shape, generator=g, dtype=DT))
    return m


def _loss(model, X, y, lam):
    r = model(X) - y
    return (r * r).sum() / (2 * X.shape[0]) + 0.5 * lam * (model.head.weight ** 2).sum()


def train(method, lr, *, X, y, init_seed, cfg, ratio=1.0, curv_steps=()):
    """Run one method; returns iterations to target (None if not reached), the loss curve at
    ``cfg.record`` iterations, whether it diverged, and lambda_max at ``curv_steps``."""
    model = student(init_seed, d_in=X.shape[1], width=cfg.width, sigma=cfg.sigma)
    with torch.no_grad():
        L0 = float(_loss(model, X, y, cfg.lam))
    target = cfg.target * L0
    if method == "exact":
        opt = torch.optim.SGD([model.body.weight], lr=lr)

        def objective():
            H = torch.relu(model.body(X))
            return stackelberg_objective(H, y, lam=cfg.lam)[0]
    else:
        if method == "alternating":
            body, head = split_head(model)
            opt = StackelbergGD(body, head, lr=lr, head_ratio=ratio, mode="alternating")
        elif method == "uniform":
            opt = torch.optim.SGD(model.parameters(), lr=lr)
        else:  # "ratio": torch SGD on Stackelberg param groups (simultaneous updates)
            opt = torch.optim.SGD(stackelberg_param_groups(model, lr, ratio))

        def objective():
            return _loss(model, X, y, cfg.lam)

    def closure():
        opt.zero_grad()
        f = objective()
        f.backward()
        return f

    curve, hit, diverged, curv = [], None, False, {}
    rec = set(cfg.record)
    for t in range(cfg.iters + 1):
        if t in curv_steps:
            curv[str(t)] = curvature(model, "mse", X, y, lam=cfg.lam, iters=cfg.hvps, seed=t)
        try:
            if t < cfg.iters:
                f = float(opt.step(closure).detach())  # the loss at iterate t, before the step
            else:
                with torch.no_grad():
                    f = float(objective())
        except FloatingPointError:
            f = float("nan")
        if not math.isfinite(f) or f > 1e6 * L0:
            diverged = True
            break
        if t in rec:
            curve.append(f)
        if hit is None and f <= target:
            hit = t
            if not curv_steps or t >= max(curv_steps):
                break
    return {"iters": hit, "curve": curve, "diverged": diverged, "L0": L0, "curv": curv}


GRADS_PER_ITER = {"uniform": 1, "ratio": 1, "exact": 1, "alternating": 2}


def grads_or_censored(r, budget):
    """Gradient evaluations to target; a run that never hit it (or diverged) counts as
    2 x (the largest budget any method had), so censored runs rank last."""
    if r["iters"] is None or r["diverged"]:
        return 4.0 * budget
    return float(r["grads_per_iter"] * (r["iters"] + 1))


def _run(method, lr, cfg, X, y, init, ratio=1.0, curv_steps=()):
    r = train(method, lr, X=X, y=y, init_seed=init, cfg=cfg, ratio=ratio, curv_steps=curv_steps)
    r["grads_per_iter"] = GRADS_PER_ITER[method]
    return r


def _tune(values, make):
    """The value whose run reaches the target with the fewest gradients (ties: lowest last loss)."""
    best, key = None, None
    for v in values:
        r = make(v)
        k = (grads_or_censored(r, 1e12) if not r["diverged"] else float("inf"),
             r["curve"][-1] if r["curve"] and not r["diverged"] else float("inf"))
        if key is None or k < key:
            best, key = v, k
    return float(best)


def run_plateau(cfg, seed, progress):
    """One seed of E1 + E2: tuning on its own teacher, data and init; then evaluation runs."""
    inst = dict(n=cfg.n, d_in=cfg.d_in, teacher_width=cfg.teacher_width, noise=cfg.noise)
    Xt, yt = instance(seed * 2 + 1, **inst)  # tuning instance
    X, y = instance(seed * 2, **inst)
    ti, ei = seed * 2 + 1, seed * 2
    lr_u = _tune(cfg.grid, lambda v: _run("uniform", v, cfg, Xt, yt, ti))
    progress.advance()
    lr_e = _tune(cfg.grid, lambda v: _run("exact", v, cfg, Xt, yt, ti))
    c_alt = _tune(cfg.ratios, lambda c: _run("alternating", lr_u, cfg, Xt, yt, ti, ratio=c))
    c_sim = _tune(cfg.ratios, lambda c: _run("ratio", lr_u, cfg, Xt, yt, ti, ratio=c))
    progress.advance()
    runs = {"uniform": _run("uniform", lr_u, cfg, X, y, ei,
                            curv_steps=tuple(s for s in cfg.curv_steps if s <= cfg.iters)),
            "exact": _run("exact", lr_e, cfg, X, y, ei)}
    for c in (1.0, *cfg.ratios):
        runs[f"alternating_{c:g}"] = _run("alternating", lr_u, cfg, X, y, ei, ratio=c)
    for c in cfg.ratios:
        runs[f"simultaneous_{c:g}"] = _run("ratio", lr_u, cfg, X, y, ei, ratio=c)
    progress.advance()
    curv = runs["uniform"].pop("curv")
    for r in runs.values():
        r.pop("curv", None)
        r["grads"] = grads_or_censored(r, cfg.iters)
    return {"lr_uniform": lr_u, "lr_exact": lr_e, "c_alternating": c_alt, "c_simultaneous": c_sim,
            "ratios": [float(c) for c in cfg.ratios], "budget": cfg.iters, "runs": runs,
            "curvature": curv, "record": list(cfg.record)}
