"""Candidates A and B (INFERRED): spec section 4 properties. Fisher consistency on a toy whose
decisions can be enumerated, scale invariance, finite-difference gradients, the max/min
handling, the tau -> 0 limit against PyEPO's contrastiveMAP."""

import numpy as np
import pyepo
import torch

from optzoo.dfl import FeasibleSetModel, enumerate_grid_paths, enumerate_knapsack, precompute
from optzoo.dfl.experimental import (
    DirectionalLoss,
    PoolSoftminLoss,
    directional_loss,
    pool_softmin_loss,
)

PATHS = torch.tensor(enumerate_grid_paths((2, 3)))  # 3 monotone paths, 7 arcs


def _minimise(loss_of, shape, steps=400, lr=0.05, seed=0):
    """Minimise an empirical expected loss over free cost vectors (Adam, float64). Adam acts
    coordinate-wise, so stacking independent problems as rows solves each one exactly as it
    would be solved alone."""
    g = torch.Generator().manual_seed(seed)
    chat = torch.randn(shape, dtype=torch.float64, generator=g).requires_grad_(True)
    opt = torch.optim.Adam([chat], lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_of(chat)
        loss.backward()
        opt.step()
    return chat.detach()


def _mixture(rng, k=3):
    """c | x from a finite mixture: k cost vectors (positive) and their probabilities."""
    C = torch.tensor(rng.uniform(0.2, 2.0, size=(k, PATHS.shape[1])))
    p = torch.tensor(rng.dirichlet(np.ones(k)))
    return C, p


def _decision(c):
    return int(torch.argmin(PATHS @ c))


def _bayes(C, p):
    return _decision(p @ C)


def _gap_ok(C, p):
    """Skip near-ties of the Bayes decision (a 1e-3 relative margin)."""
    v = torch.sort(PATHS @ (p @ C)).values
    return (v[1] - v[0]) > 1e-3 * v[0]


def _sols(C):
    return PATHS[(C @ PATHS.T).argmin(1)]


def _mixtures(rng, n, k=3, same_decision=False):
    out = []
    while len(out) < n:
        C, p = _mixture(rng, k)
        if not _gap_ok(C, p):
            continue
        if same_decision and len({_decision(ci) for ci in C}) != 1:
            continue
        out.append((C, p))
    Cs = torch.stack([C for C, _ in out])          # (n, k, d)
    ps = torch.stack([p for _, p in out])          # (n, k)
    return Cs, ps


def _expected(loss_rows, Cs, ps):
    """sum over problems of E_p[loss(chat_j, c)], rows of chat = problems."""
    n, k, d = Cs.shape

    def f(chat):
        h = chat.repeat_interleave(k, dim=0)
        return (ps.reshape(-1) * loss_rows(h, Cs.reshape(n * k, d))).sum()

    return f


def test_candidate_A_is_fisher_consistent_on_50_mixtures():
    Cs, ps = _mixtures(np.random.default_rng(0), 50)
    chat = _minimise(_expected(lambda h, c: directional_loss(h, c, reduction="none"), Cs, ps),
                     (50, PATHS.shape[1]))
    for j in range(50):
        assert _decision(chat[j]) == _bayes(Cs[j], ps[j])


def test_mse_passes_spo_plus_sanity_and_the_mode_decision_fails():
    rng = np.random.default_rng(1)
    Cs, ps = _mixtures(rng, 50)
    mse = _minimise(_expected(lambda h, c: ((h - c) ** 2).sum(1), Cs, ps), (50, PATHS.shape[1]))
    bayes = [_bayes(Cs[j], ps[j]) for j in range(50)]
    assert [_decision(mse[j]) for j in range(50)] == bayes
    mode = [_decision(Cs[j, int(ps[j].argmax())]) for j in range(50)]  # deliberately inconsistent
    assert mode != bayes  # the criterion can tell a consistent rule from an inconsistent one
    # SPO+ (PyEPO's module on our oracle), sanity only: on mixtures whose atoms share the
    # Bayes decision its minimiser has expected SPO loss 0, so it must pick that decision
    m = FeasibleSetModel(PATHS.numpy())
    spo = pyepo.func.SPOPlus(m, reduction="none")
    Cs, ps = _mixtures(rng, 10, k=2, same_decision=True)
    flat = Cs.reshape(-1, PATHS.shape[1])
    W = _sols(flat)
    z = (W * flat).sum(1, keepdim=True)
    s = _minimise(_expected(lambda h, c: spo(h, c, W, z), Cs, ps), (10, PATHS.shape[1]),
                  steps=300)
    for j in range(10):
        assert _decision(s[j]) == _bayes(Cs[j], ps[j])


def test_candidate_B_is_not_fisher_consistent_in_general():
    """Our finding: B's population minimiser matches the distribution of w*(c), whose mode
    can differ from the Bayes decision. A two-point mixture shows it."""
    # path 0 is optimal with prob 0.6 but barely; path 1 wins on average
    base = torch.tensor([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], dtype=torch.float64)
    lens = PATHS @ base
    assert torch.allclose(lens, lens[0])
    only = [PATHS[k] * (1 - PATHS[(k + 1) % 3]) * (1 - PATHS[(k + 2) % 3]) for k in range(3)]
    c1 = base + 0.05 * (only[1] + only[2])        # path 0 best by a little
    c2 = base + 2.0 * only[0] + 1.0 * only[2]     # path 1 best by a lot
    C, p = torch.stack([c1, c2]), torch.tensor([0.6, 0.4], dtype=torch.float64)
    assert _bayes(C, p) == 1 and _decision(c1) == 0
    W = _sols(C)
    chat = _minimise(lambda h: (p * pool_softmin_loss(h.expand(2, -1), W, PATHS, tau=1.0,
                                                      reduction="none")).sum(),
                     PATHS.shape[1], steps=1500)
    assert _decision(chat) == 0 != _bayes(C, p)
    a = _minimise(lambda h: (p * directional_loss(h.expand(2, -1), C, reduction="none")).sum(),
                  PATHS.shape[1])
    assert _decision(a) == 1


def test_A_scale_invariant_minimal_at_true_cost_and_gradcheck():
    g = torch.Generator().manual_seed(0)
    c = torch.rand(4, 7, dtype=torch.float64, generator=g) + 0.1
    h = torch.randn(4, 7, dtype=torch.float64, generator=g)
    assert torch.allclose(directional_loss(2.5 * h, c, reduction="none"),
                          directional_loss(h, c, reduction="none"))
    at_c = directional_loss(c, c, reduction="none")
    assert torch.allclose(at_c, -c.norm(dim=1))  # its minimum: excess loss zero at c
    assert (directional_loss(h, c, reduction="none") >= at_c - 1e-12).all()
    assert torch.autograd.gradcheck(lambda t: directional_loss(t, c), (h.clone().requires_grad_(),))
    hh = h.clone().requires_grad_()
    directional_loss(hh, c).backward()
    assert (hh.grad.norm(dim=1) > 1e-6).all()  # non-zero a.e., unlike the SPO loss


def test_B_gradcheck_nonnegative_and_zero_limit_at_true_cost():
    g = torch.Generator().manual_seed(1)
    C = torch.rand(5, 7, dtype=torch.float64, generator=g) + 0.1
    W = _sols(C)
    h = torch.randn(5, 7, dtype=torch.float64, generator=g)
    for sense in ("min", "max"):
        assert torch.autograd.gradcheck(lambda t, s=sense: pool_softmin_loss(t, W, PATHS, sense=s),
                                        (h.clone().requires_grad_(),))
    assert (pool_softmin_loss(h, W, PATHS, reduction="none") >= 0).all()
    # at the true cost the observed optimum wins the softmin: the loss vanishes as tau -> 0
    small = pool_softmin_loss(C, W, PATHS, tau=1e-4, reduction="none")
    assert small.abs().max() < 1e-3


def test_B_tends_to_pyepo_contrastive_map_as_tau_to_zero():
    x, c = pyepo.data.shortestpath.genData(30, 5, (5, 5), deg=2, noise_width=0.5, seed=4)
    m = FeasibleSetModel(enumerate_grid_paths((5, 5)))
    ds, _, _ = precompute(m, x, c)
    cmap = pyepo.func.contrastiveMAP(m, solve_ratio=0.0, dataset=ds, reduction="none")
    pred = torch.randn(30, 40, generator=torch.Generator().manual_seed(2))
    b = PoolSoftminLoss(m, dataset=ds, tau=1e-5, reduction="none")
    assert torch.allclose(b(pred, ds.costs, ds.sols, ds.objs), cmap(pred, ds.sols), atol=1e-3)


def test_knapsack_max_sense_losses_decrease_towards_true_cost():
    W, x, c = pyepo.data.knapsack.genData(16, 5, 10, dim=2, deg=2, noise_width=0.5, seed=6)
    m = FeasibleSetModel(enumerate_knapsack(W, 12.0), sense="max")
    ds, _, _ = precompute(m, x, c)
    start = torch.randn(16, 10, generator=torch.Generator().manual_seed(3))
    A, B = DirectionalLoss(m), PoolSoftminLoss(m, dataset=ds, tau=0.1)
    path = [start + t * (ds.costs - start) for t in (0.0, 0.5, 1.0)]
    la = [float(A(p, ds.costs)) for p in path]
    lb = [float(B(p, ds.costs, ds.sols, ds.objs)) for p in path]
    assert la[0] > la[1] > la[2]
    assert lb[0] > lb[2]
