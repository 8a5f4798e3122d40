"""What SALAAD is compared against: post-hoc compression of a dense trained model at an equal
parameter count (the one counting rule of :mod:`optzoo.salaad.export`).

* :func:`truncated_svd_compress`: per-layer truncated SVD at a uniform parameter ratio, the
  budget left by the floors given to the blocks whose next singular value carries the most
  energy per parameter;
* :func:`magnitude_prune_compress`: global magnitude pruning with the library object people
  use, ``torch.nn.utils.prune.global_unstructured(..., pruning_method=L1Unstructured)``;
* :func:`rpca_ialm`: robust PCA by the inexact augmented Lagrange multiplier method (Lin, Chen
  and Ma 2010; the official repository ships its own ``ialm.py``), returning ``optzoo.Result``;
  :func:`rpca_compress` decomposes every block and exports with SALAAD's own allocation.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping

import numpy as np
import torch

from optzoo._core.result import Result, Status, divergence, warn_not_converged
from optzoo._core.validation import check_array, check_int, check_real, fail
from optzoo.salaad.export import Compressed, CompressedBlock, compress_blocks, to_csr32

__all__ = ["magnitude_prune_compress", "rpca_compress", "rpca_decompose", "rpca_ialm",
           "truncated_svd_compress"]


def _rest(model, weights) -> int:
    ids, seen, n = {id(w) for w in weights.values()}, set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            n += 0 if id(p) in ids else p.numel()
    return n


def _dense_bytes(model) -> int:
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            n += p.numel() * p.element_size()
    return n


def _check_budget(budget, rest, owner):
    budget = check_int("budget", budget, owner=owner, low=0)
    if budget < rest:
        fail("budget", owner, f"at least the smallest exportable count {rest} (every parameter "
             "outside the targeted blocks)", budget)
    return budget


def truncated_svd_compress(model: torch.nn.Module, weights: Mapping[str, torch.nn.Parameter], budget: int,
                           ) -> Compressed:
    """Every block ``W_i`` (``m x n``) replaced by its best rank-``r_i`` approximation, with
    ``r_i = floor(f m n / (m + n))`` for the common ratio ``f`` of the budget; the remainder is
    spent greedily on the blocks with the largest next ``sigma^2 / (m + n)``."""
    owner = "truncated_svd_compress"
    rest = _rest(model, weights)
    budget = _check_budget(budget, rest, owner)
    total = sum(w.numel() for w in weights.values())
    f = min(1.0, (budget - rest) / total)
    svd = {k: torch.linalg.svd(w.detach().double(), full_matrices=False) for k, w in weights.items()}
    cost = {k: sum(w.shape) for k, w in weights.items()}
    cap = {k: min(w.shape) for k, w in weights.items()}
    r = {k: min(cap[k], math.floor(f * w.numel() / cost[k])) for k, w in weights.items()}
    left = budget - rest - sum(r[k] * cost[k] for k in r)
    while True:
        cand = [(float(svd[k][1][r[k]] ** 2) / cost[k], k) for k in r if r[k] < cap[k] and cost[k] <= left]
        if not cand:
            break
        _, k = max(cand)
        r[k] += 1
        left -= cost[k]
    blocks = {}
    for k, w in weights.items():
        U, s, Vh = svd[k]
        us = (U[:, :r[k]] * s[:r[k]]).to(w.dtype)
        vh = Vh[:r[k]].to(w.dtype)
        blocks[k] = CompressedBlock(us, vh, to_csr32(torch.zeros(w.shape, dtype=w.dtype)))
    return _assemble(model, weights, blocks, rest, budget, {"ranks": r})


def magnitude_prune_compress(model: torch.nn.Module, weights: Mapping[str, torch.nn.Parameter],
                             budget: int) -> Compressed:
    """Global magnitude pruning of the blocks to ``budget - rest`` surviving entries through
    ``torch.nn.utils.prune.global_unstructured`` with ``L1Unstructured`` (then
    ``prune.remove`` makes it permanent). Survivors are stored as CSR."""
    from torch.nn.utils import prune

    owner = "magnitude_prune_compress"
    rest = _rest(model, weights)
    budget = _check_budget(budget, rest, owner)
    total = sum(w.numel() for w in weights.values())
    amount = max(0, total - (budget - rest))
    out = copy.deepcopy(model)
    mods = dict(out.named_modules(remove_duplicate=False))
    pairs = [(mods[k], "weight") for k in weights]
    # tied weights (an embedding shared with the head): prune.remove installs a new Parameter
    # on the pruned module only, so the other users are pointed at it afterwards
    sharers = {k: [m for m in mods.values() if m is not mods[k] and getattr(m, "weight", None) is mods[k].weight]
               for k in weights}
    if amount > 0:
        prune.global_unstructured(pairs, pruning_method=prune.L1Unstructured, amount=int(amount))
        for mod, name in pairs:
            prune.remove(mod, name)
        for k, others in sharers.items():
            for m in others:
                m.weight = mods[k].weight
    blocks = {}
    for k in weights:
        w = mods[k].weight.detach()
        m, n = w.shape
        blocks[k] = CompressedBlock(torch.zeros(m, 0, dtype=w.dtype), torch.zeros(0, n, dtype=w.dtype),
                                    to_csr32(w))
    return _assemble(model, weights, blocks, rest, budget, {"pruned": int(amount)}, model_out=out)


def _assemble(model, weights, blocks, rest, budget, extra, model_out=None) -> Compressed:
    out = copy.deepcopy(model) if model_out is None else model_out
    if model_out is None:
        names = {id(p): n for n, p in model.named_parameters(remove_duplicate=False)}
        params_of = dict(out.named_parameters(remove_duplicate=False))
        with torch.no_grad():
            for k, w in weights.items():
                params_of[names[id(w)]].copy_(blocks[k].dense().to(w.dtype))
    rest_bytes = _dense_bytes(model) - sum(w.numel() * w.element_size() for w in weights.values())
    return Compressed(out, blocks, rest + sum(b.params for b in blocks.values()),
                      rest_bytes + sum(b.nbytes for b in blocks.values()),
                      sum(b.index_bytes for b in blocks.values()), rest,
                      rest + sum(w.numel() for w in weights.values()), _dense_bytes(model), budget,
                      None, extra)


def rpca_ialm(M, *, lam: float | None = None, tol: float = 1e-7, max_iter: int = 500,
              mu: float | None = None, mu_growth: float = 1.5) -> Result:
    """Robust PCA ``min ||L||_* + lam ||S||_1 s.t. L + S = M`` by inexact ALM.

    Iteration (Lin, Chen and Ma 2010, Algorithm 5): ``L = SVT_{1/mu}(M - S + Y/mu)``,
    ``S = soft_{lam/mu}(M - L + Y/mu)``, ``Y += mu (M - L - S)``, ``mu *= mu_growth``; stops
    when ``||M - L - S||_F <= tol ||M||_F`` (``Status.CONVERGED``; ``Status.USER_LIMIT`` with a
    warning after ``max_iter``). Defaults: ``lam = 1/sqrt(max(m, n))``, ``mu = 1.25/||M||_2``.
    ``res.x`` is a float64 array of shape ``(2, m, n)``: ``L, S = res.x``; ``res.fun = ||L||_* + lam ||S||_1``.
    """
    from optzoo.salaad.prox import soft_threshold, svt

    owner = "rpca_ialm"
    A = check_array("M", M, owner=owner, ndim=2)
    m, n = A.shape
    lam = 1.0 / math.sqrt(max(m, n)) if lam is None else check_real("lam", lam, owner=owner, low=0.0,
                                                                      closed="neither")
    check_real("tol", tol, owner=owner, low=0.0, closed="neither")
    max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
    check_real("mu_growth", mu_growth, owner=owner, low=1.0)
    t0 = time.perf_counter()
    X = torch.from_numpy(A)
    norm2 = float(torch.linalg.matrix_norm(X, 2))
    normF = float(torch.linalg.matrix_norm(X))
    if normF == 0.0:
        return Result(np.zeros((2, m, n)), 0.0, Status.CONVERGED, "M is zero: L = S = 0", nit=0,
                      wall_time=time.perf_counter() - t0, extra={"lam": lam, "residual": 0.0})
    mu = 1.25 / norm2 if mu is None else check_real("mu", mu, owner=owner, low=0.0, closed="neither")
    Y = X / max(norm2, float(X.abs().max()) / lam)
    S = torch.zeros_like(X)
    status, k, res = Status.USER_LIMIT, 0, float("inf")
    for it in range(1, max_iter + 1):
        k = it
        L, _ = svt(X - S + Y / mu, 1.0 / mu)
        S = soft_threshold(X - L + Y / mu, lam / mu)
        Z = X - L - S
        Y = Y + mu * Z
        mu *= mu_growth
        res = float(torch.linalg.matrix_norm(Z)) / normF
        why = divergence(L, start=normF)
        if why:
            status = Status.DIVERGED
            warn_not_converged(owner, why)
            break
        if res <= tol:
            status = Status.CONVERGED
            break
    fun = float(torch.linalg.svdvals(L).sum() + lam * S.abs().sum())
    if status == Status.USER_LIMIT:
        warn_not_converged(owner, f"relative residual {res:.3g} > tol {tol:g} after {k} iterations")
    msg = {Status.CONVERGED: f"relative residual {res:.3g} <= tol after {k} iterations",
           Status.USER_LIMIT: f"max_iter={max_iter} reached, relative residual {res:.3g}",
           Status.DIVERGED: "iterates diverged"}[status]
    return Result(np.stack((L.numpy(), S.numpy())), fun, status, msg, nit=k, wall_time=time.perf_counter() - t0,
                  extra={"lam": lam, "residual": res,
                         "rank": int(torch.linalg.matrix_rank(L)), "nnz": int(torch.count_nonzero(S))})


def rpca_compress(model: torch.nn.Module, weights: Mapping[str, torch.nn.Parameter], budget: int, *,
                  gamma: float = 0.5, energy: float = 0.999, lam_scale: float = 1.0,
                  decompositions: Mapping[str, tuple] | None = None) -> Compressed:
    """Post-hoc robust PCA of every block (:func:`rpca_ialm`, ``lam = lam_scale/sqrt(max(m, n))``)
    exported with SALAAD's own budget allocation. ``decompositions`` reuses earlier (L, S)."""
    if decompositions is None:
        decompositions = rpca_decompose(weights, lam_scale=lam_scale)
    L = {k: torch.as_tensor(v[0], dtype=torch.float32) for k, v in decompositions.items()}
    S = {k: torch.as_tensor(v[1], dtype=torch.float32) for k, v in decompositions.items()}
    return compress_blocks(model, weights, L, S, budget=budget, gamma=gamma, energy=energy,
                           owner="rpca_compress")


def rpca_decompose(weights: Mapping[str, torch.nn.Parameter], *, lam_scale: float = 1.0,
                   tol: float = 1e-6, max_iter: int = 300) -> dict[str, tuple]:
    """(L, S) of :func:`rpca_ialm` for every block."""
    out = {}
    for k, w in weights.items():
        A = w.detach().double().cpu().numpy()
        r = rpca_ialm(A, lam=lam_scale / math.sqrt(max(A.shape)), tol=tol, max_iter=max_iter)
        out[k] = r.x
    return out
