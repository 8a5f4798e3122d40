"""What SALAAD is compared against: post-hoc compression of a dense trained model at an equal
parameter count (the one counting rule of :mod:`optzoo.salaad.export`).

* :func:`truncated_svd_compress`: per-layer truncated SVD at a uniform parameter ratio, the
  budget left by the floors given to the blocks whose next singular value carries the most
  energy per parameter;
* :func:`magnitude_prune_compress`: global magnitude pruning with the library object people
  use, ``torch.nn.utils.prune.global_unstructured(..., pruning_method=L1Unstructured)``;
* :func:`rpca_ialm`: robust PCA by the inexact augmented Lagrange multiplier method (Lin, Chen
  and Ma 2010; the official repository ships its own ``ialm.py``), returning ``optzoo.Result``;
  :func:`rpca_compress` decomposes every block and exports with SALAAD's own allocation;
* trained from scratch instead (spec baseline 4): :func:`sltrain_model`, an SLTrain-style
  fixed-budget reparameterisation ``W = B A + S`` of every targeted ``nn.Linear`` (low-rank
  factors plus a sparse part on a random support fixed at initialisation), which needs one
  training run per budget where SALAAD exports every budget from one run.
"""

from __future__ import annotations

import copy
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from optzoo._core.result import Result, Status, divergence, warn_not_converged
from optzoo._core.rng import torch_generator
from optzoo._core.validation import check_array, check_int, check_real, check_type, fail
from optzoo.salaad.export import Compressed, CompressedBlock, compress_blocks, to_csr32

__all__ = ["SLTrainModel", "SparseLowRankLinear", "magnitude_prune_compress", "rpca_compress",
           "rpca_decompose", "rpca_ialm", "sltrain_model", "truncated_svd_compress"]


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


class SparseLowRankLinear(torch.nn.Module):
    """``y = x W^T + b`` with ``W = B A + S``: ``B`` (``out x r``) and ``A`` (``r x in``) trainable
    factors, ``S`` trainable values on ``nnz`` positions drawn uniformly without replacement at
    construction and fixed afterwards (the SLTrain parameterisation; ``weight`` is the dense
    ``W``, recomputed on access). Parameters: ``r (in + out) + nnz`` (+ the bias)."""

    def __init__(self, in_features: int, out_features: int, rank: int, nnz: int, *, bias: bool = False,
                 init_std: float = 0.02, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        o = "SparseLowRankLinear"
        self.in_features = check_int("in_features", in_features, owner=o, low=1)
        self.out_features = check_int("out_features", out_features, owner=o, low=1)
        self.rank = check_int("rank", rank, owner=o, low=0, high=min(in_features, out_features))
        self.nnz = check_int("nnz", nnz, owner=o, low=0, high=in_features * out_features)
        std = check_real("init_std", init_std, owner=o, low=0.0, closed="neither")
        g = generator if generator is not None else torch.Generator().manual_seed(0)
        # INFERRED init: B A has entry variance std^2 (var B = std^2, var A = 1/r), S values N(0, std^2)
        self.B = torch.nn.Parameter(torch.randn(out_features, self.rank, generator=g, dtype=dtype) * std)
        self.A = torch.nn.Parameter(torch.randn(self.rank, in_features, generator=g, dtype=dtype)
                                    / math.sqrt(max(self.rank, 1)))
        idx = torch.randperm(in_features * out_features, generator=g)[:self.nnz].sort().values
        self.register_buffer("index", idx)
        self.values = torch.nn.Parameter(torch.randn(self.nnz, generator=g, dtype=dtype) * std)
        self.bias = torch.nn.Parameter(torch.zeros(out_features, dtype=dtype)) if bias else None

    @property
    def weight(self) -> torch.Tensor:
        W = (self.B @ self.A).reshape(-1).index_add(0, self.index, self.values)
        return W.reshape(self.out_features, self.in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in={self.in_features}, out={self.out_features}, rank={self.rank}, nnz={self.nnz}"


@dataclass
class SLTrainModel:
    """The reparameterised model (train it like any model) and its exact counts: ``params``
    (every parameter of ``model``, tied ones once) <= ``budget``; per block ``ranks``, ``nnz``."""

    model: torch.nn.Module
    params: int
    budget: int
    rest_params: int
    ranks: dict[str, int]
    nnz: dict[str, int]


def _unique_params(model) -> int:
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            n += p.numel()
    return n


def sltrain_model(model: torch.nn.Module, budget: int, *,
                  targets: str = r"(q|k|v|o|gate|up|down)_proj", sparse_share: float = 0.5,
                  seed: int = 0) -> SLTrainModel:
    """An SLTrain-style copy of ``model`` with at most ``budget`` parameters, to train from scratch.

    Every ``nn.Linear`` whose name matches ``targets`` becomes a :class:`SparseLowRankLinear`;
    everything else (embeddings, norms, an unmatched head) stays dense and counts in full
    (SLTrain keeps the embeddings dense). The budget left, ``budget - rest``, is spread at one
    common ratio ``f`` of every block's ``m n``; in each block a share ``sparse_share`` of its
    allotment goes to the support size, the rest to the rank ``r = floor(.../(m + n))``, and
    what the rank's floor leaves goes back to the support, so the count is exact.
    Initialisation (INFERRED): factors and values scaled to the original weight's std.

    Fidelity: the parameterisation is SLTrain's (Han et al. 2024, W = BA + S with a fixed random
    support); the allocation rule, the initialisation and the absence of SLTrain's scale factor
    are ours (the spec only names the baseline).
    """
    owner = "sltrain_model"
    check_type("model", model, torch.nn.Module, owner=owner, what="a torch.nn.Module")
    check_type("targets", targets, str, owner=owner, what="a regular expression (str)")
    share = check_real("sparse_share", sparse_share, owner=owner, low=0.0, high=1.0)
    seed = check_int("seed", seed, owner=owner, low=0)
    out = copy.deepcopy(model)
    lin = {n: m for n, m in out.named_modules() if isinstance(m, torch.nn.Linear) and re.search(targets, n)}
    if not lin:
        fail("targets", owner, "a pattern matching at least one nn.Linear of the model", targets)
    shared = {id(m.weight) for m in lin.values()}
    tied = [n for n, m in out.named_modules() if getattr(m, "weight", None) is not None
            and id(m.weight) in shared and n not in lin]
    if tied:
        fail("targets", owner, "a pattern whose Linear weights are not shared with other modules",
             f"tied to {tied[:3]}")
    total = sum(m.weight.numel() for m in lin.values())
    rest = _unique_params(out) - total
    budget = _check_budget(budget, rest, owner)
    f = min(1.0, (budget - rest) / total)
    g = torch_generator(seed, "sltrain")
    ranks, nnz = {}, {}
    mods = dict(out.named_modules())
    for name, m in lin.items():
        o_, i_ = m.weight.shape
        b = math.floor(f * o_ * i_)
        r = min(min(o_, i_), math.floor((b - round(share * b)) / (o_ + i_)))
        k = min(o_ * i_, b - r * (o_ + i_))
        std = float(m.weight.detach().float().std()) or 0.02
        new = SparseLowRankLinear(i_, o_, r, k, bias=m.bias is not None, init_std=std, generator=g,
                                  dtype=m.weight.dtype).to(m.weight.device)
        if m.bias is not None:
            with torch.no_grad():
                new.bias.copy_(m.bias)
        parent, _, child = name.rpartition(".")
        setattr(mods[parent] if parent else out, child, new)
        ranks[name], nnz[name] = r, k
    params = _unique_params(out)
    return SLTrainModel(out, params, budget, rest, ranks, nnz)
