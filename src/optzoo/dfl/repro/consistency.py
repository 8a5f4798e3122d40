"""Fisher consistency at the population level, measured on random conditional distributions.

The abstract's criterion (decision sense): for each x, every minimiser of E[loss(c_hat, c) | x]
must give the Bayes decision w*(E[c | x]). Here c | x is a two-atom mixture of positive cost
vectors on the 2x3 grid (3 monotone paths, 7 arcs: decisions can be enumerated), drawn at
random per seed (near-ties of the Bayes decision skipped); for each loss the expected loss is
minimised over a free prediction c_hat (Adam, float64; rows are independent problems) and its
decision compared with the Bayes decision. Candidate A, two-stage MSE and candidate B (with
the pool of the atoms' optima) are run on the same mixtures and starting points.

This is a property of the losses as derived (A and MSE are consistent by a short proof; B is
not in general: its minimiser matches the distribution of w*(c), whose mode can differ from
the Bayes decision), so the reproduction reports it as a check (A) and a finding (B), not as
a claim about the paper's loss.
"""

from __future__ import annotations

import numpy as np
import torch

from optzoo.dfl.experimental import directional_loss, pool_softmin_loss
from optzoo.dfl.models import enumerate_grid_paths

__all__ = ["bayes_agreement", "random_mixtures"]

_PATHS = np.asarray(enumerate_grid_paths((2, 3)), dtype=float)  # 3 paths, 7 arcs


def random_mixtures(rng: np.random.Generator, n: int, k: int = 2, gap: float = 1e-3):
    """``n`` mixtures of ``k`` positive cost vectors (uniform on [0.2, 2]) with Dirichlet
    weights; a mixture whose Bayes decision is a near-tie (relative gap < ``gap``) is redrawn.
    Returns (atoms (n, k, 7), weights (n, k)) as float64 tensors."""
    paths = torch.tensor(_PATHS)
    Cs, ps = [], []
    while len(Cs) < n:
        C = torch.tensor(rng.uniform(0.2, 2.0, size=(k, paths.shape[1])))
        p = torch.tensor(rng.dirichlet(np.ones(k)))
        v = torch.sort(paths @ (p @ C)).values
        if (v[1] - v[0]) <= gap * v[0]:
            continue
        Cs.append(C)
        ps.append(p)
    return torch.stack(Cs), torch.stack(ps)


def _minimise(loss_of, shape, steps: int, seed: int, lr: float = 0.05) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    chat = torch.randn(shape, dtype=torch.float64, generator=g).requires_grad_(True)
    opt = torch.optim.Adam([chat], lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_of(chat)
        loss.backward()
        opt.step()
    return chat.detach()


def bayes_agreement(Cs: torch.Tensor, ps: torch.Tensor, *, seed: int = 0, steps: int = 400,
                    steps_b: int = 1500, tau: float = 1.0) -> dict[str, list[bool]]:
    """Per loss ("A", "mse", "B"), per mixture: does the minimiser of the expected loss give
    the Bayes decision? All three start from the same random c_hat (``seed``)."""
    paths = torch.tensor(_PATHS)
    n, k, d = Cs.shape
    flat = Cs.reshape(n * k, d)
    w = ps.reshape(-1)

    def expected(rows):
        def f(chat):
            return (w * rows(chat.repeat_interleave(k, dim=0))).sum()
        return f

    sols = paths[(flat @ paths.T).argmin(1)]
    chats = {
        "A": _minimise(expected(lambda h: directional_loss(h, flat, reduction="none")), (n, d), steps, seed),
        "mse": _minimise(expected(lambda h: ((h - flat) ** 2).sum(1)), (n, d), steps, seed),
        "B": _minimise(expected(lambda h: pool_softmin_loss(h, sols, paths, tau=tau, reduction="none")),
                       (n, d), steps_b, seed),
    }
    bayes = (torch.einsum("nk,nkd->nd", ps, Cs) @ paths.T).argmin(1)
    return {m: [bool(b) for b in ((c @ paths.T).argmin(1) == bayes)] for m, c in chats.items()}
