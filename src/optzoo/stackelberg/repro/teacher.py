"""E1 + E2: the teacher-student instance, every arm trained from the SAME init on one grid.

Teacher (INFERRED instance, spec E1): ``y = a' relu(B x) + 0.01 eps``, ``x ~ N(0, I_d)``, B rows
~ N(0, I/d), a ~ N(0, 1/k). Student ``f(x) = w' relu(theta x)`` (no biases, width m, scalar
head); loss ``(1/2N) sum (f - y)^2 + (lam/2)||w||^2``; full-batch gradient descent.

Initialisation is a part of every claim (``INITS``): ``"standard"`` is torch's default
``nn.Linear`` init (U(+-1/sqrt(fan_in)) for both layers: no plateau built in), ``"small"`` the
earlier instance's N(0, 1e-6) for both layers (the saddle at 0 makes a plateau).

Arms (each a learning-rate family, tuned on its own grid of the same size, on the same tuning
inits (the seed's teacher and data, ``tune_inits`` inits drawn apart from the evaluation init;
a configuration scores its worst over them) and with the same budget of *cost units*; one cost unit = one full-batch gradient of L):

* ``uniform``: one LR for both layers (:func:`uniform_grid`: as many LRs as a ratio family has
  configurations, log-spaced over the same range ``cfg.lrs``);
* ``head_fast``: every (body LR, head LR) pair of ``cfg.lrs`` with head LR >= body LR
  (:func:`triangle`; the diagonal, one LR, included), simultaneous updates = ``torch.optim.SGD``
  on two parameter groups: 1 unit a step;
* ``body_fast``: the mirror image, body LR >= head LR, the same grid (the control: the same
  extra knob, the faster time-scale on the body instead of the head);
* ``alternating``: ``StackelbergGD(mode="alternating")`` on head_fast's grid: two gradients a
  step, so 2 units a step (half the steps of the others);
* ``exact``: GD on Phi(theta) = L(theta, W*(theta)) with the closed-form ridge head, LRs from
  :func:`uniform_grid`; charged ``exact_cost(N, d, m)`` units a step (the m x m ridge system is
  formed, solved and differentiated through: see :func:`exact_cost`).

The configurations of one arm are trained together as a batch of independent students (the
update is ``p -= lr_p * grad_p`` of each student's own loss, exactly plain GD; a test checks one
configuration against ``torch.optim.SGD`` / ``StackelbergGD`` / GD on Phi run alone). The
metric is the mean over ``checkpoints`` cost points (every ``budget / checkpoints`` units) of
the natural log of the training loss at the last iterate paid for by then: a run that descends
earlier scores lower (acceleration), and nothing is censored. A run whose loss turns non-finite
or exceeds 1e6 x its initial loss is diverged: ``inf`` when tuning (never chosen); in an
evaluation run its loss counts as the initial loss from the divergence on (no progress: a finite
penalty, so one diverged seed does not leave a part undecided), with a warning and a
``diverged`` record.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch

from optzoo._core.rng import torch_generator
from optzoo.stackelberg import exact_head_best_response, stackelberg_objective

__all__ = ["ARMS", "INITS", "Student", "exact_cost", "grid", "init_params", "instance",
           "run_teacher", "score", "train_batch", "triangle", "uniform_grid"]

DT = torch.float64
INITS = ("standard", "small")
SMALL_SIGMA = 1e-3
ARMS = ("uniform", "head_fast", "body_fast", "alternating", "exact")
DIVERGE = 1e6


class Student(torch.nn.Module):
    """``w' relu(theta x)``, no biases; the module form for :func:`optzoo.stackelberg.curvature`."""

    def __init__(self, d_in: int, width: int):
        super().__init__()
        self.body = torch.nn.Linear(d_in, width, bias=False, dtype=DT)
        self.head = torch.nn.Linear(width, 1, bias=False, dtype=DT)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


def instance(seed, key, *, n, d_in, teacher_width, noise):
    g = torch_generator(seed, "teacher", key)
    X = torch.randn(n, d_in, generator=g, dtype=DT)
    B = torch.randn(teacher_width, d_in, generator=g, dtype=DT) / math.sqrt(d_in)
    a = torch.randn(teacher_width, generator=g, dtype=DT) / math.sqrt(teacher_width)
    y = torch.relu(X @ B.T) @ a + noise * torch.randn(n, generator=g, dtype=DT)
    return X, y


def init_params(seed, key, init, *, d_in, width):
    """(theta (m, d), w (m,)): ``standard``: torch's nn.Linear default, U(+-1/sqrt(fan_in));
    ``small``: N(0, SMALL_SIGMA^2) for both layers."""
    g = torch_generator(seed, "student_init", key)
    if init == "standard":
        th = (2 * torch.rand(width, d_in, generator=g, dtype=DT) - 1) / math.sqrt(d_in)
        w = (2 * torch.rand(width, generator=g, dtype=DT) - 1) / math.sqrt(width)
    elif init == "small":
        th = SMALL_SIGMA * torch.randn(width, d_in, generator=g, dtype=DT)
        w = SMALL_SIGMA * torch.randn(width, generator=g, dtype=DT)
    else:
        raise ValueError(f"The 'init' argument of init_params must be one of {INITS}. Got {init!r}.")
    return th, w


def exact_cost(n: int, d_in: int, width: int) -> float:
    """Cost units (gradients of L) charged for one step of GD on Phi, from multiply-adds.

    A gradient of L: forward ``X theta'`` (N d m) and backward to theta (N d m), the head's
    O(N m) terms neglected: 2 N d m. A step on Phi adds forming ``H'H`` (N m^2), its backward
    (N m^2) and the m x m solve with its backward (about m^3): ratio
    ``1 + m/d + m^2 / (2 N d)`` (2.65 at N = 512, d = 20, m = 32)."""
    return 1.0 + width / d_in + width ** 2 / (2.0 * n * d_in)


COST = {"uniform": 1.0, "head_fast": 1.0, "body_fast": 1.0, "alternating": 2.0}


def triangle(lrs, upper: bool) -> list[tuple[float, float]]:
    """(body LR, head LR) pairs from one per-layer grid: ``upper``: head LR >= body LR (the head
    at least as fast), else the mirror image, body LR >= head LR. The diagonal (uniform) is in
    both, so a ratio family can always fall back to one learning rate."""
    lrs = [float(v) for v in lrs]
    out = [(b, h) for b in lrs for h in lrs if h >= b]
    return out if upper else [(h, b) for b, h in out]


def uniform_grid(lrs) -> list[float]:
    """As many single LRs as a triangle has configurations, log-spaced over the same range."""
    k = len(lrs) * (len(lrs) + 1) // 2
    return [float(v) for v in np.geomspace(min(lrs), max(lrs), k)]


def grid(arm: str, cfg) -> list[tuple[float, float]]:
    """The arm's configurations as (body LR, head LR), all from ``cfg.lrs``."""
    if arm in ("uniform", "exact"):
        return [(v, v) for v in uniform_grid(cfg.lrs)]
    if arm in ("head_fast", "alternating"):
        return triangle(cfg.lrs, upper=True)
    if arm == "body_fast":
        return triangle(cfg.lrs, upper=False)
    raise ValueError(f"unknown arm {arm!r}")


def _loss(th, w, X, y, lam):
    """Per-configuration loss; th (C, m, d), w (C, m)."""
    H = torch.relu(torch.einsum("nd,cmd->cnm", X, th))
    r = torch.einsum("cnm,cm->cn", H, w) - y
    return 0.5 * (r * r).mean(1) + 0.5 * lam * (w * w).sum(1)


def _phi(th, X, y, lam):
    H = torch.relu(torch.einsum("nd,cmd->cnm", X, th))
    return stackelberg_objective(H, y.expand(th.shape[0], -1), lam=lam)[0]


def train_batch(arm, confs, X, y, th0, w0, *, lam, budget, snap_steps=()):
    """Train the configurations ``confs`` ((body LR, head LR) each) of ``arm`` from (th0, w0)
    (one init for all, or stacked: one init per configuration).

    Returns ``losses`` (C, steps + 1) (the loss at every iterate; NaN after divergence),
    ``cost`` (units per step), ``steps`` and ``snaps``: {step: (th (C, m, d), w (C, m))} at
    ``snap_steps`` (for ``exact``, w is the best-response head)."""
    cost = exact_cost(X.shape[0], X.shape[1], th0.shape[0]) if arm == "exact" else COST[arm]
    steps = int(math.floor(budget / cost + 1e-9))
    C = len(confs)
    lr_b = torch.tensor([c[0] for c in confs], dtype=DT)
    lr_h = torch.tensor([c[1] for c in confs], dtype=DT)
    # one init for every configuration, or one init per configuration (th0 (C, m, d), w0 (C, m))
    th = (th0 if th0.ndim == 3 else th0.expand(C, *th0.shape)).clone().requires_grad_(True)
    w = (w0 if w0.ndim == 2 else w0.expand(C, *w0.shape)).clone().requires_grad_(True)
    losses = torch.full((C, steps + 1), float("nan"), dtype=DT)
    alive = torch.ones(C, dtype=torch.bool)
    snaps, L0 = {}, None
    for t in range(steps + 1):
        if arm == "exact":
            f = _phi(th, X, y, lam)
        else:
            f = _loss(th, w, X, y, lam)
        with torch.no_grad():
            if L0 is None:
                L0 = f.detach().clone()
            alive &= torch.isfinite(f) & (f <= DIVERGE * L0)
            losses[:, t] = torch.where(alive, f.detach(), float("nan"))
        if t in snap_steps:
            with torch.no_grad():
                if arm == "exact":
                    H = torch.relu(torch.einsum("nd,cmd->cnm", X, th))
                    wb = exact_head_best_response(H, y.expand(C, -1), lam=lam)[0][:, 0, :]
                    snaps[t] = (th.detach().clone(), wb)
                else:
                    snaps[t] = (th.detach().clone(), w.detach().clone())
        if t == steps or not bool(alive.any()):
            break
        m = alive.to(DT)
        if arm == "exact":
            (g,) = torch.autograd.grad(torch.where(alive, f, 0.0).sum(), (th,))
            with torch.no_grad():
                th -= (m * lr_b)[:, None, None] * torch.nan_to_num(g)
        elif arm == "alternating":  # head first, then the body at the updated head
            (gw,) = torch.autograd.grad(torch.where(alive, f, 0.0).sum(), (w,))
            with torch.no_grad():
                w -= (m * lr_h)[:, None] * torch.nan_to_num(gw)
            f2 = _loss(th, w, X, y, lam)
            (gt,) = torch.autograd.grad(torch.where(alive, f2, 0.0).sum(), (th,))
            with torch.no_grad():
                th -= (m * lr_b)[:, None, None] * torch.nan_to_num(gt)
        else:  # simultaneous: one gradient, two learning rates
            gt, gw = torch.autograd.grad(torch.where(alive, f, 0.0).sum(), (th, w))
            with torch.no_grad():
                th -= (m * lr_b)[:, None, None] * torch.nan_to_num(gt)
                w -= (m * lr_h)[:, None] * torch.nan_to_num(gw)
    return {"losses": losses, "cost": cost, "steps": steps, "snaps": snaps}


def score(losses: torch.Tensor, cost: float, budget: float, checkpoints: int) -> np.ndarray:
    """Per configuration: mean over the cost points k * budget / checkpoints (k = 1..checkpoints)
    of log(loss at the last iterate paid for by then); NaN if diverged before the budget."""
    pts = [int(math.floor(k * budget / checkpoints / cost + 1e-9)) for k in range(1, checkpoints + 1)]
    sel = losses[:, pts]
    return torch.log(sel).mean(1).numpy()


def _tune(arm, cfg, X, y, inits, context=""):
    """The configuration with the lowest score, a configuration's score being its WORST over the
    tuning inits (diverged: inf), so a choice at the edge of stability on one init is not taken
    (:func:`optzoo.repro.tuning.select`: ties to the first in grid order; every point diverged:
    the first). Returns the :class:`~optzoo.repro.tuning.Choice`."""
    from optzoo.repro.tuning import select

    confs = grid(arm, cfg)
    K = len(inits)
    th = torch.stack([th0 for th0, _ in inits for _ in confs])
    w = torch.stack([w0 for _, w0 in inits for _ in confs])
    res = train_batch(arm, confs * K, X, y, th, w, lam=cfg.lam, budget=cfg.budget)
    s = score(res["losses"], res["cost"], cfg.budget, cfg.checkpoints).reshape(K, len(confs))
    table = np.where(np.isfinite(s), s, np.inf).T  # (grid point, tuning init)
    return select(confs, table, stream="tune", seeds=tuple(f"tune{k}" for k in range(K)), arm=arm,
                  knob="(lr_body, lr_head)", context=context, aggregate="max", if_all_nonfinite="first",
                  eval_budget=cfg.budget, budget_unit="cost units")


def _gap(th, w, X, y, lam):
    """Relative best-response gap |w - W*(theta)| / |W*(theta)| per configuration."""
    H = torch.relu(torch.einsum("nd,cmd->cnm", X, th))
    ws = exact_head_best_response(H, y.expand(th.shape[0], -1), lam=lam)[0][:, 0, :]
    return (torch.linalg.vector_norm(w - ws, dim=1) / torch.linalg.vector_norm(ws, dim=1)).numpy(), ws


def _curv(th, w, X, y, cfg, seed):
    from optzoo.stackelberg import curvature

    m = Student(X.shape[1], th.shape[0])
    with torch.no_grad():
        m.body.weight.copy_(th)
        m.head.weight.copy_(w[None, :])
    return curvature(m, "mse", X, y[:, None], lam=cfg.lam, max_iter=cfg.hvps, seed=seed)


def run_teacher(cfg, seed, progress, Record):
    """One seed: one teacher and data set; for each init scheme in ``cfg.inits``, tune every arm
    on ``cfg.tune_inits`` tuning inits (worst score over them), then run the chosen
    configurations from ``cfg.eval_inits`` evaluation inits shared by every arm (never used for
    tuning; a seed's value is the mean over them); records of the metric, the choices, the best-response gap and the body's
    curvature at the matched steps ``cfg.curv_steps``."""
    inst = dict(n=cfg.n, d_in=cfg.d_in, teacher_width=cfg.teacher_width, noise=cfg.noise)
    recs = []
    X, y = instance(seed, "eval", **inst)
    for init in cfg.inits:
        tws = [init_params(seed, f"tune{k}", init, d_in=cfg.d_in, width=cfg.width)
               for k in range(cfg.tune_inits)]
        ews = [init_params(seed, f"eval{k}", init, d_in=cfg.d_in, width=cfg.width)
               for k in range(cfg.eval_inits)]
        chosen = {}
        for arm in ARMS:
            ch = _tune(arm, cfg, X, y, tws, context=init)
            conf, i, size = ch.value, ch.index, len(ch.grid)
            chosen[arm] = conf
            recs += ch.to_records()
            recs += [Record(init, arm, "tuning", "grid_size", size),
                     Record(init, arm, "tuning", "budget", cfg.budget),
                     Record(init, arm, "tuning", "lr_body", conf[0]),
                     Record(init, arm, "tuning", "lr_head", conf[1]),
                     Record(init, arm, "tuning", "grid_index", i)]
            progress.advance()
        snap = tuple(s for s in cfg.curv_steps if s <= cfg.budget)
        E = cfg.eval_inits
        th_e = torch.stack([p[0] for p in ews])
        w_e = torch.stack([p[1] for p in ews])
        for arm in ARMS:
            tracked = snap if arm in ("uniform", "head_fast", "body_fast") else ()
            res = train_batch(arm, [chosen[arm]] * E, X, y, th_e, w_e, lam=cfg.lam, budget=cfg.budget,
                              snap_steps=tracked)
            lo = res["losses"]
            div = torch.isnan(lo).any(1)
            if bool(div.any()):  # no progress from the divergence on: the initial loss (finite)
                warnings.warn(f"stackelberg: arm {arm!r} diverged from {int(div.sum())} of {E} evaluation "
                              f"inits (seed {seed}, init {init}): its loss counts as the initial loss "
                              "from then on", RuntimeWarning, stacklevel=2)
                lo = torch.where(torch.isnan(lo), lo[:, :1], lo)
            sc = score(lo, res["cost"], cfg.budget, cfg.checkpoints)
            for k in range(E):
                recs += [Record(init, arm, f"e{k}", "mean_log_loss", float(sc[k])),
                         Record(init, arm, f"e{k}", "diverged", float(div[k])),
                         Record(init, arm, f"e{k}", "final_loss_ratio", float(lo[k, -1] / lo[k, 0]))]
            for t in tracked:
                th, w = res["snaps"].get(t, (None, None))
                gaps = _gap(th, w, X, y, cfg.lam)[0] if th is not None else None
                for k in range(E):
                    raw = res["losses"]
                    ok = th is not None and bool(torch.isfinite(th[k]).all()) and not math.isnan(
                        float(raw[k, t]) if t < raw.shape[1] else float("nan"))
                    nan = float("nan")
                    recs.append(Record(init, arm, f"t={t}/e{k}", "br_gap", float(gaps[k]) if ok else nan))
                    if t > 0:
                        cv = _curv(th[k], w[k], X, y, cfg, seed) if ok else {"L": nan, "phi": nan}
                        recs += [Record(init, arm, f"t={t}/e{k}", "curv_body", cv["L"]),
                                 Record(init, arm, f"t={t}/e{k}", "curv_phi", cv["phi"])]
        # step 0 (the shared first evaluation init): log(lambda Phi / lambda L) against
        # 2 log(|W*| / |w0|)
        th0, w0 = ews[0]
        gap, ws = _gap(th0[None], w0[None], X, y, cfg.lam)
        cv = _curv(th0, w0, X, y, cfg, seed)
        lhs = math.log(cv["phi"] / cv["L"])
        rhs = 2 * math.log(float(torch.linalg.vector_norm(ws[0]) / torch.linalg.vector_norm(w0)))
        recs += [Record(init, "init", "t=0", "step0_log_curv_ratio", lhs),
                 Record(init, "init", "t=0", "step0_two_log_head_norm_ratio", rhs),
                 Record(init, "init", "t=0", "step0_identity_err", abs(lhs - rhs))]
        progress.advance()
    return recs
