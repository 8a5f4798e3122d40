r"""Training helpers for predict-then-optimize: solver-call counting, pre-computation, regret,
and one training loop shared by every loss (ours and PyEPO's).

* :func:`count_solver_calls` wraps ``optmodel.solve`` for the duration of a ``with`` block and
  counts every call (``forbid=True`` raises :class:`SolverCallError` on the first one): this is
  how "zero solver calls in the training loop" is enforced, not assumed.
* :func:`precompute` builds PyEPO's ``optDataset`` (one solve per instance: the one-off
  pre-computation every method is charged for) and returns it with its call count and CPU time.
* :func:`decision_regret` is the SPO loss :math:`c^\top w^*(\hat c)-z^*(c)` (sign-corrected for
  MAX models) on tensors, normalised like ``pyepo.metric.regret`` by :math:`\sum_i|z^*(c_i)|`.
* :func:`train_predictor` runs Adam on any loss, feeding it the arguments its ``forward``
  names (PyEPO's ``pred_cost, true_cost, true_sol, true_obj``, or ``input, target`` for
  ``nn.MSELoss``), counts solver calls and CPU time of the loop, evaluates
  ``pyepo.metric.regret`` on a test set, and returns an :class:`optzoo.Result`.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from optzoo._core.deprecation import renamed_kwargs
from optzoo._core.result import Result, Status, divergence, warn_not_converged
from optzoo._core.validation import check_choice, check_int, check_real, fail

__all__ = ["SolverCallCounter", "SolverCallError", "count_solver_calls", "decision_regret",
           "precompute", "train_predictor"]


class SolverCallError(RuntimeError):
    """Raised by a forbidding :func:`count_solver_calls` when ``optmodel.solve`` is called."""


@dataclass
class SolverCallCounter:
    """Solver calls seen inside a :func:`count_solver_calls` block (``calls``), per model."""

    calls: int = 0
    per_model: dict = field(default_factory=dict)


@contextlib.contextmanager
def count_solver_calls(*optmodels, forbid: bool = False):
    """Count (or, with ``forbid=True``, refuse) calls to ``solve`` of each PyEPO model.

    The wrapper replaces ``optmodel.solve`` on the instance for the block and restores it
    after. It sees the calls made in this process: PyEPO losses built with ``processes > 1``
    solve in worker processes on rebuilt models, which it cannot see (use ``processes=1``).

    >>> from optzoo.dfl import FeasibleSetModel
    >>> m = FeasibleSetModel([[1.0, 0.0], [0.0, 1.0]])
    >>> with count_solver_calls(m) as n:
    ...     m.setObj([2.0, 1.0]); _ = m.solve()
    >>> n.calls
    1
    """
    if not optmodels:
        fail("optmodels", "count_solver_calls", "at least one PyEPO optModel", "none")
    for m in optmodels:
        if not callable(getattr(m, "solve", None)):
            fail("optmodels", "count_solver_calls", "PyEPO optModels (objects with .solve())",
                 type(m).__name__, exc=TypeError)
    counter = SolverCallCounter()
    patched = []
    for m in optmodels:
        had = "solve" in m.__dict__
        original = m.__dict__.get("solve")
        bound = m.solve
        key = repr(m)
        counter.per_model.setdefault(key, 0)

        def wrapped(*args, _bound=bound, _key=key, **kwargs):
            if forbid:
                raise SolverCallError(
                    f"optmodel.solve was called inside a solver-free block ({_key}); "
                    "the loss in use is not solver-free")
            counter.calls += 1
            counter.per_model[_key] += 1
            return _bound(*args, **kwargs)

        m.solve = wrapped
        patched.append((m, had, original))
    try:
        yield counter
    finally:
        for m, had, original in patched:
            if had:
                m.solve = original
            else:
                del m.solve


def precompute(optmodel, feats, costs):
    """PyEPO's ``optDataset(optmodel, feats, costs)`` (one solve per instance), returned as
    ``(dataset, calls, cpu_seconds)``: the one-off pre-computation. Refuses an empty set."""
    from pyepo.data.dataset import optDataset

    owner = "precompute"
    n = len(costs) if hasattr(costs, "__len__") else 0
    if n == 0:
        fail("costs", owner, "a non-empty set of cost vectors", "an empty dataset")
    c = np.asarray(costs.detach().cpu() if hasattr(costs, "detach") else costs, dtype=float)
    if c.ndim != 2 or c.shape[1] != optmodel.num_cost:
        fail("costs", owner, f"of shape (n, {optmodel.num_cost}) (num_cost of the model)",
             f"shape {c.shape}")
    if not np.isfinite(c).all():
        raise ValueError(f"The 'costs' argument of {owner} must contain only finite values. "
                         "Got NaN or inf.")
    if len(feats) != n:
        fail("feats", owner, f"of length {n} (one row per cost vector)", f"length {len(feats)}")
    t0 = time.process_time()
    with count_solver_calls(optmodel) as counter, _quiet_tqdm():
        ds = optDataset(optmodel, feats, costs)
    return ds, counter.calls, time.process_time() - t0


@contextlib.contextmanager
def _quiet_tqdm():
    """optDataset draws a tqdm bar per dataset; keep the reproduction's output readable.

    Not ``TQDM_DISABLE``: tqdm (4.70) reads its ``TQDM_*`` environment when it is imported, so
    setting it here, after PyEPO has imported tqdm, changes nothing (checked)."""
    import pyepo.data.dataset as mod

    orig = mod.tqdm
    mod.tqdm = lambda it, *a, **k: it
    try:
        yield
    finally:
        mod.tqdm = orig


def _solve_rows(optmodel, costs: np.ndarray) -> np.ndarray:
    sols = []
    for row in costs:
        optmodel.setObj(row)
        sols.append(np.asarray(optmodel.solve()[0], dtype=float))
    return np.stack(sols)


def decision_regret(pred_cost, true_cost, true_obj, optmodel, *, reduction: str = "normalized"):
    r"""Regret of the decisions :math:`w^*(\hat c_i)`: :math:`s(c_i^\top w^*(\hat c_i)-z_i^*)`
    (:math:`s=+1` MIN, :math:`-1` MAX), reduced ``"normalized"`` (sum over
    :math:`\sum_i|z_i^*|`, PyEPO's default), ``"sum"``, ``"mean"`` or ``"none"``."""
    owner = "decision_regret"
    check_choice("reduction", reduction, ("normalized", "sum", "mean", "none"), owner=owner)
    P = np.asarray(pred_cost.detach().cpu() if hasattr(pred_cost, "detach") else pred_cost, float)
    C = np.asarray(true_cost.detach().cpu() if hasattr(true_cost, "detach") else true_cost, float)
    z = np.asarray(true_obj.detach().cpu() if hasattr(true_obj, "detach") else true_obj, float)
    z = z.reshape(-1)
    if P.ndim != 2 or P.shape != C.shape or P.shape[0] == 0:
        fail("pred_cost", owner, f"a non-empty (n, d) array of the shape of true_cost {C.shape}",
             f"shape {P.shape}")
    if P.shape[1] != optmodel.num_cost:
        fail("pred_cost", owner, f"of width {optmodel.num_cost} (num_cost of the model)",
             f"shape {P.shape}")
    if z.shape[0] != P.shape[0]:
        fail("true_obj", owner, f"of length {P.shape[0]}", f"length {z.shape[0]}")
    for name, a in (("pred_cost", P), ("true_cost", C), ("true_obj", z)):
        if not np.isfinite(a).all():
            raise ValueError(f"The {name!r} argument of {owner} must contain only finite values. "
                             "Got NaN or inf.")
    s = 1.0 if int(optmodel.modelSense) == 1 else -1.0
    W = _solve_rows(optmodel, P)
    loss = s * ((W * C).sum(1) - z)
    if reduction == "normalized":
        if not np.abs(z).sum() > 0:
            fail("true_obj", owner, "not all zero when reduction='normalized' (the normalised regret "
                 "divides by sum |z*|; use reduction='sum' or 'mean')", "all zeros")
        return float(loss.sum() / (np.abs(z).sum() + 1e-7))  # PyEPO's 1e-7, kept for parity
    if reduction == "sum":
        return float(loss.sum())
    if reduction == "mean":
        return float(loss.mean())
    return loss


_ROLE = {"pred_cost": "pred", "input": "pred", "true_cost": "cost", "target": "cost",
         "true_sol": "sol", "true_obj": "obj"}


def _roles(loss_fn) -> list[str]:
    """Which batch fields the loss's forward takes, read from its parameter names."""
    fn = loss_fn.forward if isinstance(loss_fn, nn.Module) else loss_fn
    names = [p.name for p in inspect.signature(fn).parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]
    roles = []
    for n in names:
        if n not in _ROLE:
            break
        roles.append(_ROLE[n])
    if not roles or roles[0] != "pred":
        fail("loss_fn", "train_predictor", "a loss whose forward takes (pred_cost, ...) or "
             "(input, target)", f"parameters {names}", exc=TypeError)
    return roles


@renamed_kwargs(max_steps="max_iter")
def train_predictor(model: nn.Module, loss_fn, train_data, *, optmodel, epochs: int = 20,
                    lr: float = 1e-2, batch_size: int = 32, seed: int = 0, test_data=None,
                    solver_free: bool = False, max_iter: int | None = None) -> Result:
    """Train ``model`` (in place) with Adam on ``loss_fn`` over a PyEPO ``optDataset``.

    Each step feeds the loss the fields its ``forward`` names (``pred_cost``/``input`` the
    prediction, ``true_cost``/``target`` the costs, ``true_sol``, ``true_obj``). Solver calls
    in the loop are counted (``solver_free=True`` makes any call an error); the loop's CPU time
    (``time.process_time``, robust to a loaded machine) and wall time are recorded. Regret on
    ``test_data`` (``pyepo.metric.regret``, normalised) is ``fun`` (NaN without test data).
    ``max_iter`` caps the optimizer steps across epochs (``max_steps=`` until December 2026,
    still accepted for one release with a ``FutureWarning``).

    Returns ``Result(x=model, fun=test regret, status=BUDGET, nit=steps, nfev=solver calls)``
    with ``extra``: ``loop_cpu_s``, ``loop_wall_s``, ``eval_cpu_s``, ``losses`` (per-epoch
    mean), ``solver_calls``. A non-finite loss or a diverging prediction stops training with
    ``Status.DIVERGED`` and a ``NotConvergedWarning``.
    """
    owner = "train_predictor"
    if not isinstance(model, nn.Module):
        fail("model", owner, "a torch.nn.Module", type(model).__name__, exc=TypeError)
    if not callable(loss_fn):
        fail("loss_fn", owner, "a callable loss (nn.Module or function)", type(loss_fn).__name__,
             exc=TypeError)
    epochs = check_int("epochs", epochs, owner=owner, low=1)
    lr = check_real("lr", lr, owner=owner, low=0.0, closed="neither")
    batch_size = check_int("batch_size", batch_size, owner=owner, low=1)
    seed = check_int("seed", seed, owner=owner, low=0)
    if max_iter is not None:
        max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
    for name, ds in (("train_data", train_data), ("test_data", test_data)):
        if ds is None and name == "test_data":
            continue
        if not all(hasattr(ds, a) for a in ("feats", "costs", "sols", "objs")):
            fail(name, owner, "a pyepo optDataset (feats, costs, sols, objs)", type(ds).__name__,
                 exc=TypeError)
        if len(ds) == 0:
            fail(name, owner, "a non-empty dataset", "an empty dataset")
        for attr in ("feats", "costs", "sols", "objs"):
            if not bool(torch.isfinite(torch.as_tensor(getattr(ds, attr))).all()):
                raise ValueError(f"The {name!r} argument of {owner} must contain only finite "
                                 f"values. Got NaN or inf in its {attr}.")
        if ds.costs.shape[1] != optmodel.num_cost:
            fail(name, owner, f"a dataset with costs of width {optmodel.num_cost} (num_cost of optmodel)",
                 f"shape {tuple(ds.costs.shape)}")
    model_sense = "min" if int(optmodel.modelSense) == 1 else "max"
    loss_sense = getattr(loss_fn, "sense", None)
    if loss_sense in ("min", "max") and loss_sense != model_sense:
        fail("loss_fn", owner, f"a loss built for the optmodel's sense ({model_sense!r})",
             f"sense {loss_sense!r}")
    inner = getattr(loss_fn, "optmodel", None)
    if inner is not None and hasattr(inner, "modelSense") and int(inner.modelSense) != int(optmodel.modelSense):
        fail("loss_fn", owner, "a loss built on a model of the optmodel's sense",
             f"modelSense {int(inner.modelSense)}")
    roles = _roles(loss_fn)
    gen = torch.Generator().manual_seed(seed)
    X, C, W, Z = train_data.feats, train_data.costs, train_data.sols, train_data.objs
    n = len(X)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    watched = [m for m in {id(optmodel): optmodel, id(inner): inner}.values() if m is not None
               and callable(getattr(m, "solve", None))]
    history, steps, status, message = [], 0, Status.BUDGET, ""
    start_norm = float(sum(p.detach().norm() ** 2 for p in model.parameters()) ** 0.5)
    model.train()
    t_cpu, t_wall = time.process_time(), time.perf_counter()
    with count_solver_calls(*watched, forbid=solver_free) as counter:
        for _epoch in range(epochs):
            perm = torch.randperm(n, generator=gen)
            tot, cnt = 0.0, 0
            for i in range(0, n, batch_size):
                idx = perm[i:i + batch_size]
                pred = model(X[idx])
                if not torch.is_tensor(pred) or pred.shape != C[idx].shape:
                    fail("model", owner, f"a predictor of costs, output shape (batch, {C.shape[1]})",
                         tuple(pred.shape) if torch.is_tensor(pred) else type(pred).__name__)
                fields = {"pred": pred, "cost": C[idx], "sol": W[idx], "obj": Z[idx]}
                loss = loss_fn(*[fields[r] for r in roles])
                if not torch.is_tensor(loss):
                    fail("loss_fn", owner, "a callable returning a torch tensor (the loss)",
                         type(loss).__name__, exc=TypeError)
                if loss.ndim:
                    loss = loss.mean()
                value = float(loss.detach())       # one read of the loss a step
                if not math.isfinite(value):
                    status, message = Status.DIVERGED, "the loss diverged (non-finite value)"
                    break
                opt.zero_grad()
                loss.backward()
                opt.step()
                steps += 1
                tot, cnt = tot + value * len(idx), cnt + len(idx)
                if max_iter is not None and steps >= max_iter:
                    break
            if status is Status.DIVERGED:
                break
            norm = float(sum(p.detach().norm() ** 2 for p in model.parameters()) ** 0.5)
            why = divergence(norm, start=start_norm, name="parameter")
            if why:
                status, message = Status.DIVERGED, f"training diverged: {why}"
                break
            history.append(tot / max(cnt, 1))
            if max_iter is not None and steps >= max_iter:
                break
    loop_cpu, loop_wall = time.process_time() - t_cpu, time.perf_counter() - t_wall
    if status is Status.DIVERGED:
        if "diverge" not in message:
            message = "training diverged: " + message
        warn_not_converged(owner, message)
        return Result(x=model, fun=float("nan"), status=status, message=message, nit=steps,
                      nfev=counter.calls, wall_time=loop_wall,
                      extra={"loop_cpu_s": loop_cpu, "loop_wall_s": loop_wall, "losses": history,
                             "solver_calls": counter.calls, "eval_cpu_s": 0.0})
    fun, eval_cpu = float("nan"), 0.0
    if test_data is not None:
        from pyepo.metric import regret
        from torch.utils.data import DataLoader

        t0 = time.process_time()
        fun = float(regret(model, optmodel, DataLoader(test_data, batch_size=256)))
        eval_cpu = time.process_time() - t0
    message = (f"planned budget used: {steps} Adam steps over {len(history)} epochs, "
               f"{counter.calls} solver calls in the loop")
    return Result(x=model, fun=fun, status=status, message=message, nit=steps, nfev=counter.calls,
                  wall_time=loop_wall,
                  extra={"loop_cpu_s": loop_cpu, "loop_wall_s": loop_wall, "losses": history,
                         "solver_calls": counter.calls, "eval_cpu_s": eval_cpu})
