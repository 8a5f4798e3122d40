"""Deployment at any parameter budget from one training state (the spec's "UIA"/"HPA").

Given each block's low-rank part ``L_i`` (``m_i x n_i``) and sparse part ``S_i``:

1. ``r_i`` = the smallest rank whose cumulative singular values (sigma, not sigma^2, as in the
   official code) reach ``energy`` of the total; ``z_i = nnz(S_i)`` (INFERRED: the exact
   non-zeros; the official code counts ``|S| > max|S|/rate`` with a code parameter ``rate``).
2. ``P_L = sum r_i (m_i + n_i)``, ``P_S = sum z_i``, ``P_tot = P_rest + P_L + P_S``, where
   ``P_rest`` counts every parameter that is not a targeted block.
3. For a budget ``B < P_tot``: ``D = P_tot - B``, ``D_L = floor(gamma D)``, ``D_S = D - D_L``;
   a part without capacity spills the rest onto the other.
4. Every rank is scaled by ``1 - D_L/P_L`` and every nnz by ``1 - D_S/P_S`` (floors), then the
   unspent budget is given back to the sparse parts (proportionally to their spare entries)
   and then to ranks, so the count is ``B`` whenever that is reachable and never above it.
5. ``L_i`` keeps its top singular triplets, ``S_i`` its largest-magnitude entries.

One counting rule for every method here: ``params = P_rest + sum r_i (m_i + n_i) + sum nnz_i``.
Bytes are the storage of the actual tensors (factors, CSR values, int32 column indices and
row pointers, the rest of the model), with the CSR index bytes also reported apart.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from optzoo._core.validation import check_real, fail
from optzoo.salaad.prox import energy_rank

__all__ = ["Allocation", "Compressed", "CompressedBlock", "allocate", "block_ranks", "compress_blocks", "to_csr32"]


@dataclass(frozen=True)
class Allocation:
    """Per-block ranks and nnz chosen for one budget, and the exact parameter count."""

    ranks: dict[str, int]
    nnz: dict[str, int]
    params: int
    budget: int
    full_params: int  # P_tot: the count at the blocks' own ranks and nnz


def allocate(shapes: Mapping[str, tuple[int, int]], ranks: Mapping[str, int], nnz: Mapping[str, int],
             *, rest: int, budget: int, gamma: float = 0.5, owner: str = "allocate") -> Allocation:
    """Steps 2-4 above (pure integer arithmetic). ``budget >= rest`` is required."""
    names = list(shapes)
    budget = int(budget)
    if budget < rest:
        fail("budget", owner, f"at least the smallest exportable count {rest} (every parameter "
             "outside the targeted blocks; all targeted blocks at rank 0 and no non-zeros)", budget)
    cost = {k: shapes[k][0] + shapes[k][1] for k in names}
    P_L = sum(ranks[k] * cost[k] for k in names)
    P_S = sum(nnz[k] for k in names)
    P_tot = rest + P_L + P_S
    if budget >= P_tot:
        return Allocation(dict(ranks), dict(nnz), P_tot, budget, P_tot)
    D = P_tot - budget
    D_L = math.floor(gamma * D)
    D_S = D - D_L
    if D_L > P_L:
        D_S, D_L = D_S + D_L - P_L, P_L
    if D_S > P_S:
        D_L, D_S = D_L + D_S - P_S, P_S
    fL = 1.0 - D_L / P_L if P_L else 0.0
    fS = 1.0 - D_S / P_S if P_S else 0.0
    r = {k: min(ranks[k], math.floor(ranks[k] * fL + 1e-9)) for k in names}
    z = {k: min(nnz[k], math.floor(nnz[k] * fS + 1e-9)) for k in names}
    left = budget - rest - sum(r[k] * cost[k] for k in names) - sum(z.values())
    if left < 0:  # only through the 1e-9 guard; take it back from the sparse parts
        for k in names:
            take = min(z[k], -left)
            z[k] -= take
            left += take
    spare = {k: nnz[k] - z[k] for k in names}
    tot_spare = sum(spare.values())
    if left > 0 and tot_spare > 0:  # densities nudged up, proportionally to what each can take
        give = min(left, tot_spare)
        add = {k: (give * spare[k]) // tot_spare for k in names}
        rem = give - sum(add.values())
        for k in sorted(names, key=lambda k: -(spare[k] - add[k])):
            if rem <= 0:
                break
            extra = min(rem, spare[k] - add[k])
            add[k] += extra
            rem -= extra
        for k in names:
            z[k] += add[k]
        left -= give
    if left > 0:  # sparse parts full: spend what is left on ranks, cheapest blocks first
        for k in sorted(names, key=lambda k: cost[k]):
            extra = min(ranks[k] - r[k], left // cost[k])
            r[k] += extra
            left -= extra * cost[k]
    params = rest + sum(r[k] * cost[k] for k in names) + sum(z.values())
    return Allocation(r, z, params, budget, P_tot)


@dataclass
class CompressedBlock:
    """``W = us @ vh + sparse``: ``us`` is ``m x r`` (left vectors times singular values),
    ``vh`` is ``r x n``, ``sparse`` a ``torch.sparse_csr`` tensor with int32 indices."""

    us: torch.Tensor
    vh: torch.Tensor
    sparse: torch.Tensor

    @property
    def rank(self) -> int:
        return int(self.us.shape[1])

    @property
    def nnz(self) -> int:
        return int(self.sparse.values().numel())

    @property
    def params(self) -> int:
        return self.us.numel() + self.vh.numel() + self.nnz

    @property
    def index_bytes(self) -> int:
        s = self.sparse
        return (s.crow_indices().numel() * s.crow_indices().element_size()
                + s.col_indices().numel() * s.col_indices().element_size())

    @property
    def nbytes(self) -> int:
        return (self.us.numel() * self.us.element_size() + self.vh.numel() * self.vh.element_size()
                + self.nnz * self.sparse.values().element_size() + self.index_bytes)

    def dense(self) -> torch.Tensor:
        """The block as a dense matrix (what the exported model holds)."""
        return self.us @ self.vh + self.sparse.to_dense()


@dataclass
class Compressed:
    """An exported model: ``model`` has the original architecture with every targeted weight
    set to ``us @ vh + sparse``; ``blocks`` holds those factors and CSR parts. ``params`` and
    ``nbytes`` are exact counts of the compressed storage (factors + CSR + the rest of the
    model); ``index_bytes`` is the CSR position overhead included in ``nbytes``."""

    model: torch.nn.Module
    blocks: dict[str, CompressedBlock]
    params: int
    nbytes: int
    index_bytes: int
    rest_params: int
    dense_params: int
    dense_bytes: int
    budget: int | None
    allocation: Allocation | None = None
    extra: dict = field(default_factory=dict)


def _truncate(L: torch.Tensor, S: torch.Tensor, rank: int, nnz: int, dtype) -> CompressedBlock:
    U, s, Vh = torch.linalg.svd(L.double(), full_matrices=False)
    us = (U[:, :rank] * s[:rank]).to(dtype).contiguous()
    vh = Vh[:rank].to(dtype).contiguous()
    flat = S.reshape(-1)
    keep = torch.zeros_like(flat)
    if nnz > 0:
        idx = torch.topk(flat.abs(), nnz, sorted=False).indices
        keep[idx] = flat[idx]
    return CompressedBlock(us, vh, to_csr32(keep.reshape(S.shape).to(dtype)))


def to_csr32(dense: torch.Tensor) -> torch.Tensor:
    """``dense`` as a ``torch.sparse_csr`` tensor with int32 row pointers and column indices."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse (CSR tensor support|invariant checks)")
        csr = dense.to_sparse_csr()
        return torch.sparse_csr_tensor(csr.crow_indices().to(torch.int32), csr.col_indices().to(torch.int32),
                                       csr.values(), size=dense.shape, check_invariants=False)


def block_ranks(L: Mapping[str, torch.Tensor], S: Mapping[str, torch.Tensor], *,
                energy: float) -> tuple[dict[str, int], dict[str, int]]:
    """Step 1: each block's rank (cumulative-sigma ``energy``) and nnz."""
    ranks = {k: energy_rank(torch.linalg.svdvals(L[k].double()), energy, power=1) for k in L}
    nnz = {k: int(torch.count_nonzero(S[k])) for k in S}
    return ranks, nnz


def compress_blocks(model: torch.nn.Module, weights: Mapping[str, torch.nn.Parameter],
                    L: Mapping[str, torch.Tensor], S: Mapping[str, torch.Tensor], *,
                    budget: int | None, gamma: float = 0.5, energy: float = 0.999,
                    owner: str = "compress_blocks",
                    ranks: Mapping[str, int] | None = None,
                    nnz: Mapping[str, int] | None = None) -> Compressed:
    """Allocate ``budget`` over the blocks and return the exported :class:`Compressed` model.

    ``weights``: block name -> the model's parameter (the copy's parameter of the same name is
    overwritten). ``budget=None`` keeps every block's own rank and nnz (``P_tot``).
    """
    check_real("gamma", gamma, owner=owner, low=0.0, high=1.0)
    check_real("energy", energy, owner=owner, low=0.0, high=1.0, closed="right")
    shapes = {k: tuple(L[k].shape) for k in L}
    seen, rest, dense_bytes, rest_bytes = set(), 0, 0, 0
    target_ids = {id(p) for p in weights.values()}
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        dense_bytes += p.numel() * p.element_size()
        if id(p) not in target_ids:
            rest += p.numel()
            rest_bytes += p.numel() * p.element_size()
    dense = rest + sum(m * n for m, n in shapes.values())
    if ranks is None or nnz is None:
        ranks, nnz = block_ranks(L, S, energy=energy)
    full = rest + sum(ranks[k] * (shapes[k][0] + shapes[k][1]) + nnz[k] for k in shapes)
    alloc = allocate(shapes, ranks, nnz, rest=rest, budget=full if budget is None else budget,
                     gamma=gamma, owner=owner)
    out = copy.deepcopy(model)
    names = {id(p): n for n, p in model.named_parameters(remove_duplicate=False)}
    params_of = dict(out.named_parameters(remove_duplicate=False))
    blocks = {}
    with torch.no_grad():
        for k, w in weights.items():
            blk = _truncate(L[k], S[k], alloc.ranks[k], alloc.nnz[k], w.dtype)
            blocks[k] = blk
            params_of[names[id(w)]].copy_(blk.dense().to(w.dtype))
    params = rest + sum(b.params for b in blocks.values())
    nbytes = rest_bytes + sum(b.nbytes for b in blocks.values())
    index = sum(b.index_bytes for b in blocks.values())
    assert params == alloc.params, (params, alloc.params)
    return Compressed(out, blocks, params, nbytes, index, rest, dense, dense_bytes, budget, alloc)
