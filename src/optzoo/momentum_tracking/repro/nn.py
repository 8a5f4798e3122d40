"""Neural-network illustration (labelled as such): a small MLP tracking a rotating teacher.

Not part of the exact theory. A student MLP 10-32-1 (tanh) learns online from fresh batches
of a teacher ``y = a^T tanh(W_0 R_t x) + noise`` whose input weights rotate slowly
(R_t: rotation by angle omega*t in a random plane). Each beta in {0, 0.9, 0.99} runs
``torch.optim.SGD`` (torch form, lr = lr_eff (1 - beta)) with lr_eff tuned on a separate
tuning stream from the same grid for every beta; the evaluation stream then gives the
prequential loss (the loss on each new batch before the update), second half of the run.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch

from optzoo._core.rng import derive_seed, torch_generator

__all__ = ["run_nn"]

_BETAS = (0.0, 0.9, 0.99)
_IN, _HID, _BATCH, _NOISE = 10, 32, 8, 0.1


def _teacher(seed: int):
    g = torch_generator(seed, "nn", "teacher")
    W0 = torch.randn(_HID, _IN, generator=g) / math.sqrt(_IN)
    a = torch.randn(_HID, generator=g) / math.sqrt(_HID)
    u, _ = torch.linalg.qr(torch.randn(_IN, 2, generator=g))
    return W0, a, u[:, 0], u[:, 1]


def _stream(seed: int, key: str, steps: int, teacher, turns: float):
    """All batches at once (steps x batch): x and the rotating teacher's labels."""
    W0, a, u1, u2 = teacher
    g = torch_generator(seed, "nn", key)
    x = torch.randn(steps, _BATCH, _IN, generator=g)
    phi = 2 * math.pi * turns * torch.arange(steps, dtype=torch.float32) / steps
    c1, c2 = x @ u1, x @ u2  # coordinates in the rotation plane
    cos, sin = torch.cos(phi)[:, None], torch.sin(phi)[:, None]
    xr = x + ((cos - 1) * c1 - sin * c2)[..., None] * u1 + (sin * c1 + (cos - 1) * c2)[..., None] * u2
    y = torch.tanh(xr @ W0.T) @ a + _NOISE * torch.randn(steps, _BATCH, generator=g)
    return x, y


def _train(settings, x, y, init_seed: int) -> np.ndarray:
    """Prequential losses (steps, G) of G students trained by torch.optim.SGD.

    Students sharing a momentum value share one param group (batched weights); their own
    step sizes enter by scaling each student's gradient, which for SGD with momentum (no
    weight decay, v_0 = g_0) is exactly a per-student lr.
    """
    g = torch_generator(init_seed, "nn", "student")
    W1 = torch.randn(_HID, _IN, generator=g) / math.sqrt(_IN)
    W2 = torch.randn(_HID, generator=g) / math.sqrt(_HID)
    betas = sorted({b for _, b in settings})
    order, groups, scales = [], [], []
    for b in betas:
        idx = [i for i, (_, bb) in enumerate(settings) if bb == b]
        n = len(idx)
        order += idx
        groups.append({"params": [W1.expand(n, -1, -1).clone().requires_grad_(),
                                  torch.zeros(n, _HID, requires_grad=True),
                                  W2.expand(n, -1).clone().requires_grad_()],
                       "lr": 1.0, "momentum": b})
        scales.append(torch.tensor([settings[i][0] for i in idx]))
    opt = torch.optim.SGD(groups)
    inv = np.argsort(order)
    steps = x.shape[0]
    losses = np.empty((steps, len(settings)))
    for t in range(steps):
        w1 = torch.cat([gr["params"][0] for gr in groups])
        b1 = torch.cat([gr["params"][1] for gr in groups])
        w2 = torch.cat([gr["params"][2] for gr in groups])
        h = torch.tanh(torch.einsum("bi,ghi->gbh", x[t], w1) + b1[:, None, :])
        loss = ((torch.einsum("gbh,gh->gb", h, w2) - y[t]) ** 2).mean(-1)
        losses[t] = loss.detach().numpy()[inv]
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        with torch.no_grad():
            for gr, sc in zip(groups, scales, strict=True):
                for p_ in gr["params"]:
                    p_.grad.mul_(sc.view(-1, *([1] * (p_.dim() - 1))))
        opt.step()
    return losses


def run_nn(cfg, seed: int) -> dict:
    from optzoo.repro.tuning import select

    steps, lrs = cfg.nn_steps, cfg.nn_lrs
    teacher = _teacher(derive_seed(seed, "nn"))
    turns = 2.0  # the teacher turns twice over the run: slow drift relative to the step size
    half = slice(steps // 2, steps)
    xt, yt = _stream(seed, "tune", steps, teacher, turns)
    grid = [(lr * (1 - b), b) for b in _BETAS for lr in lrs]
    with np.errstate(invalid="ignore", over="ignore"):
        tune = _train(grid, xt, yt, derive_seed(seed, "nn", "init-tune"))[half].mean(0)
    tune = np.where(np.isfinite(tune), tune, np.inf).reshape(len(_BETAS), len(lrs))
    # per beta, the lr_eff with the lowest tuning-stream loss (diverged loses; ties and every
    # one diverged: the first)
    choices = [select(tuple(float(v) for v in lrs), row, stream="tune", arm="sgd" if b == 0 else "momentum",
                      knob="lr_eff", context=f"beta={b:g}", if_all_nonfinite="first", eval_budget=steps,
                      budget_unit="steps") for b, row in zip(_BETAS, tune, strict=True)]
    chosen = [lrs[ch.index] for ch in choices]
    xe, ye = _stream(seed, "eval", steps, teacher, turns)
    ev = _train([(lr * (1 - b), b) for lr, b in zip(chosen, _BETAS, strict=True)], xe, ye, derive_seed(seed, "nn", "init"))
    with np.errstate(invalid="ignore", over="ignore"):
        loss = ev[half].mean(0)
    # a diverged network (non-finite loss, or one that blew up past 1e6 x the initial loss) is
    # recorded as diverged: its loss becomes NaN, its status says why, and a warning names it
    start = float(np.nanmean(ev[: max(1, steps // 100)]))
    status = []
    for i, b in enumerate(_BETAS):
        bad = not np.isfinite(ev[:, i]).all() or not np.isfinite(loss[i]) or loss[i] > 1e6 * max(start, 1e-12)
        status.append("diverged" if bad else "ok")
        if bad:
            loss[i] = float("nan")
            warnings.warn(f"momentum_tracking nn_illustration: arm beta={b:g} (lr_eff={chosen[i]:g}) diverged "
                          f"on seed {seed}; its prequential loss is recorded as NaN", RuntimeWarning, stacklevel=2)
    k = max(1, steps // 100)
    trace = ev[: steps - steps % k].reshape(-1, k, len(_BETAS)).mean(1)
    return {"betas": list(_BETAS), "lr_eff_grid": list(lrs), "chosen_lr_eff": chosen, "loss": loss.tolist(),
            "status": status,
            "tune_loss": tune.tolist(),
            "log_ratio_vs_sgd": {f"{b:g}": float(np.log(loss[i]) - np.log(loss[0])) for i, b in enumerate(_BETAS) if b > 0},
            "trace": trace.tolist(), "trace_every": k, "choices": choices}
