r"""Torch paths for DkS: the FW loop on a torch sparse CSR matrix (CPU or CUDA) and the
AdamW constraint parameterisation of the AAAI predecessor (Lu, Sidiropoulos, Konar).

AdamW parameterisation (from the predecessor's code, described in the spec):
:math:`\sigma=\mathrm{sigmoid}(\theta)`, :math:`x(\theta)=\sigma/(1+\mathrm{relu}(1^\top\sigma/k-1))`
so :math:`x\in[0,1]^n` and :math:`1^\top x\le k`; minimise :math:`-x^\top(A+\lambda I)x` with
AdamW (lr 3, 200 steps, :math:`\theta_0=0`), then round with top-k (ties: lower node id).
torch is imported here only, so ``import optzoo.dks`` stays light.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import torch

from optzoo._core.deprecation import renamed_kwargs
from optzoo._core.result import Status, divergence, warn_not_converged
from optzoo._core.validation import check_device, check_int, check_real
from optzoo.dks._common import make_result, prepare
from optzoo.dks.relaxation import topk_indices

__all__ = ["TorchOps", "adamw_dks", "to_torch_csr"]


def to_torch_csr(adj, device=None, dtype=torch.float64):
    """scipy CSR -> torch sparse CSR on ``device`` (int64 indices, as torch expects)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return _to_csr(adj, device, dtype)


def _to_csr(adj, device, dtype):
    return torch.sparse_csr_tensor(
        torch.from_numpy(np.asarray(adj.indptr, dtype=np.int64)),
        torch.from_numpy(np.asarray(adj.indices, dtype=np.int64)),
        torch.from_numpy(np.asarray(adj.data, dtype=np.float64)).to(dtype),
        size=adj.shape,
        check_invariants=False,  # built from a canonical scipy CSR: valid by construction
    ).to(device)


class TorchOps:
    """The FW loop's vector operations on torch (float64, any device)."""

    def __init__(self, graph, lam: float, device=None):
        self.device = torch.device(device or "cpu")
        self.adj_cpu = graph.adj
        self.A = to_torch_csr(graph.adj, self.device)
        self.crow = self.A.crow_indices()
        self.col = self.A.col_indices()
        self.val = self.A.values()
        self.crow_cpu = np.asarray(graph.adj.indptr, dtype=np.int64)
        self.lam, self.n = lam, graph.n

    def asarray(self, x):
        if isinstance(x, torch.Tensor):
            return x.detach().to(device=self.device, dtype=torch.float64).clone()
        return torch.as_tensor(np.asarray(x, dtype=np.float64), device=self.device).clone()

    def grad(self, x):
        return (self.A @ x.unsqueeze(1)).squeeze(1) + self.lam * x

    def indicator(self, nodes):
        x = torch.zeros(self.n, dtype=torch.float64, device=self.device)
        x[nodes] = 1.0
        return x

    def indicator_grad(self, nodes):
        return self.grad(self.indicator(nodes))

    def topk(self, v, k):
        """Top-k with ties to the lower index, like the numpy path (torch.topk is not)."""
        if k >= self.n:
            return torch.arange(self.n, device=self.device)
        thr = torch.topk(v, k, sorted=False).values.min()
        above = torch.nonzero(v > thr).squeeze(1)
        tied = torch.nonzero(v == thr).squeeze(1)[: k - above.numel()]
        return torch.sort(torch.cat([above, tied])).values

    def sum_at(self, v, idx) -> float:
        return float(v[idx].sum())

    def dot(self, a, b) -> float:
        return float(a @ b)

    def frac_index(self, x):
        return torch.nonzero((x > 1e-9) & (x < 1.0 - 1e-9)).squeeze(1).cpu().numpy()

    def n_frac(self, x) -> int:
        return int(((x > 1e-9) & (x < 1.0 - 1e-9)).sum())

    def is_binary(self, x) -> bool:
        return bool(((x == 0.0) | (x == 1.0)).all())

    def scale_add(self, v, gamma, w):
        v.mul_(1.0 - gamma)
        if torch.is_floating_point(w):
            v.add_(w, alpha=gamma)
        else:
            v[w] += gamma
        return v

    def get(self, v, i) -> float:
        return float(v[i])

    def set(self, v, i, val) -> None:
        v[i] = val

    def add_row(self, g, node, coef) -> None:
        a, b = int(self.crow_cpu[node]), int(self.crow_cpu[node + 1])
        g.index_add_(0, self.col[a:b], coef * self.val[a:b])
        g[node] += coef * self.lam

    def sub_adj(self, idx):
        return self.adj_cpu[idx][:, idx].toarray()

    def sub_adj_rect(self, rows, cols):
        return self.adj_cpu[rows][:, cols].toarray()

    def to_numpy(self, v):
        return v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else np.asarray(v)


@renamed_kwargs(steps="max_iter")
def adamw_dks(graph, k, *, lam: float = 1.0, lr: float = 3.0, max_iter: int = 200,
              weight_decay: float = 0.01, device=None, seed: int = 0,
              symmetrize: bool = True):
    """DkS by the predecessor's constraint parameterisation, optimised with AdamW.

    Deterministic (theta_0 = 0); ``seed`` is recorded only. ``device="cuda"`` runs on GPU.
    Returns a Result with status ``budget_used`` after ``max_iter`` steps (no stationarity test:
    the method has none) and the final objective trace in ``extra["loss_trace"]``. ``max_iter``
    was ``steps=`` until December 2026 (still accepted for one release, with a ``FutureWarning``),
    the room's other solvers' name.

    >>> import networkx as nx
    >>> adamw_dks(nx.complete_graph(6), 3).fun
    3.0
    """
    owner = "adamw_dks"
    t0 = time.perf_counter()
    g, k = prepare(graph, k, owner=owner, symmetrize=symmetrize, lam=lam)
    lr = check_real("lr", lr, owner=owner, low=0.0, closed="neither")
    max_iter = check_int("max_iter", max_iter, owner=owner, low=1)
    weight_decay = check_real("weight_decay", weight_decay, owner=owner, low=0.0)
    seed = check_int("seed", seed, owner=owner, low=0)
    dev = check_device("device", device, owner=owner)
    A = to_torch_csr(g.adj, dev)
    theta = torch.zeros(g.n, dtype=torch.float64, device=dev, requires_grad=True)
    opt = torch.optim.AdamW([theta], lr=lr, weight_decay=weight_decay)
    losses = []
    for _ in range(max_iter):
        opt.zero_grad(set_to_none=True)
        sig = torch.sigmoid(theta)
        x = sig / (1.0 + torch.relu(sig.sum() / k - 1.0))
        loss = -(x @ (A @ x.unsqueeze(1)).squeeze(1) + lam * (x @ x))
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    with torch.no_grad():
        sig = torch.sigmoid(theta)
        x = (sig / (1.0 + torch.relu(sig.sum() / k - 1.0))).cpu().numpy()
    why = divergence(x, name="x")  # the project's one rule: non-finite is DIVERGED, with a warning
    if why is not None:
        msg = f"diverged after {max_iter} AdamW steps: {why}; top-k of the finite coordinates returned"
        warn_not_converged(owner, msg)
        return make_result(g, k, topk_indices(np.nan_to_num(x, nan=-1.0), k), method=owner,
                           status=Status.DIVERGED, message=msg, nit=max_iter,
                           wall_time=time.perf_counter() - t0, lam=lam, loss_trace=losses)
    nodes = topk_indices(x, k)
    frac = int(np.count_nonzero((x > 1e-6) & (x < 1 - 1e-6)))
    return make_result(
        g, k, nodes, method=owner, status=Status.BUDGET,
        message=f"{max_iter} AdamW steps; top-k rounding of x ({frac} coordinates not within "
                "1e-6 of 0 or 1)",
        nit=max_iter, nfev=max_iter, wall_time=time.perf_counter() - t0, lam=lam, lr=lr,
        loss_trace=losses, n_fractional=frac, device=str(dev), seed=seed,
    )
