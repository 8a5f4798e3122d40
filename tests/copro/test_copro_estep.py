"""The E-step's mathematics: closed form vs a generic solver, KKT, dual gradient, anchors,
inactive constraints, equivariance and invariances, dual monotonicity, statuses."""

import warnings

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from optzoo.copro import STATUSES, comparison_statistics, copro_e_step, dual_objective


def _groups(B=24, G=8, m=2, seed=0, shift=0.6):
    g = torch.Generator().manual_seed(seed)
    F = torch.randn(B, G, m, generator=g, dtype=torch.float64)
    c = torch.randn(B, G, 1, generator=g, dtype=torch.float64) + shift
    return F, c


def _quiet(*a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return copro_e_step(*a, **k)


def _moment_constraints(est, b):
    """SLSQP constraints of group b (simplex plus the active moment targets), its size G and
    the uniform base p."""
    phi, u, a = (t[b].numpy() for t in (est.feasible, est.win_rate, est.ambiguity))
    act, tg = est.diagnostics["active"][b].numpy(), est.targets[b].numpy()
    G = phi.size
    p = np.full(G, 1.0 / G)
    cons = [{"type": "eq", "fun": lambda q: q.sum() - 1.0, "jac": lambda q: np.ones(G)}]
    if act[0]:
        cons.append({"type": "ineq", "fun": lambda q: q @ phi - tg[0], "jac": lambda q: phi})
    if act[1]:
        cons.append({"type": "ineq", "fun": lambda q: q @ u - tg[1], "jac": lambda q: u})
    if act[2]:
        cons.append({"type": "ineq", "fun": lambda q: tg[2] - q @ a, "jac": lambda q: -a})
    return cons, G, p


def _slsqp(est, b):
    """Primal KL projection of group b by SLSQP over the simplex with the same targets."""
    cons, G, p = _moment_constraints(est, b)
    r = minimize(lambda q: float(np.sum(q * np.log(q / p))), p, jac=lambda q: np.log(q / p) + 1.0,
                 constraints=cons, bounds=[(1e-12, 1.0)] * G, method="SLSQP",
                 options={"ftol": 1e-15, "maxiter": 1000})
    return r.x


def test_closed_form_matches_slsqp_and_kkt():
    F, c = _groups()
    est = _quiet(F, c, senses=("max", "min"))
    checked = 0
    for b in range(F.shape[0]):
        if est.status[b] != "optimal":
            continue
        q = _slsqp(est, b)
        assert np.abs(q - est.q[b].numpy()).max() < 1e-6
        checked += 1
    assert checked >= 10
    lam, res = est.lambdas, est.residual
    assert (lam >= 0).all()
    assert (res >= -1e-8).all()                          # primal feasibility
    assert (lam * res).abs().max() < 1e-7                # complementary slackness
    # the exponential-family form
    psi = torch.stack([est.feasible, est.win_rate, -est.ambiguity], -1)
    q = torch.softmax((psi * lam[:, None]).sum(-1), -1)
    assert torch.allclose(q, est.q, atol=1e-12)


def test_dual_gradient_matches_finite_differences():
    F, c = _groups(B=6)
    est = _quiet(F, c)
    psi = torch.stack([est.feasible, est.win_rate, -est.ambiguity], -1)
    b = torch.nan_to_num(torch.stack([est.targets[:, 0], est.targets[:, 1], -est.targets[:, 2]], -1), nan=0.3)
    lam = torch.tensor([[0.7, 1.3, 0.4]], dtype=torch.float64).expand(6, 3).clone().requires_grad_(True)
    D = dual_objective(lam, psi, b)
    grad, = torch.autograd.grad(D.sum(), lam)
    q = torch.softmax((psi * lam[:, None]).sum(-1), -1)
    assert torch.allclose(grad, b - (q[..., None] * psi).sum(1), atol=1e-12)  # b - E_q psi
    h = 1e-6
    for k in range(3):
        e = torch.zeros(3, dtype=torch.float64)
        e[k] = h
        fd = (dual_objective(lam.detach() + e, psi, b) - dual_objective(lam.detach() - e, psi, b)) / (2 * h)
        assert torch.allclose(fd, grad[:, k], atol=1e-7)


def test_simplex_full_support_and_anchor_mass():
    F, c = _groups(B=64, G=12, shift=1.2)  # few feasible samples per group
    est = _quiet(F, c, tau_feas=0.6)
    assert (est.q > 0).all()
    assert torch.allclose(est.q.sum(-1), torch.ones(64, dtype=torch.float64))
    has = (est.feasible.sum(-1) > 0) & (est.feasible.mean(-1) < 1)
    assert has.any()
    assert (est.q[est.feasible.bool()] > 0).all()
    pF = est.feasible.mean(-1)
    tau_eff = torch.clamp(torch.clamp(pF, min=0.6), max=0.95)
    ok = has & ~est.diagnostics["lambda_at_bound"]
    assert (est.diagnostics["q_feasible"][ok] >= tau_eff[ok] - 1e-8).all()


def test_inactive_constraints_give_q_equal_p_exactly():
    F, c = _groups(B=10)
    # tau below p(F) in every group (tau_feas tiny, groups with p(F) >= tau), eps 0, eta 1
    est = _quiet(F, c - 5.0, eps_progress=0.0, eta_tie=1.0, tau_feas=0.01)
    assert torch.equal(est.q, torch.full_like(est.q, 1.0 / F.shape[1]))
    assert torch.equal(est.lambdas, torch.zeros_like(est.lambdas))


def test_progress_constraint_binds_with_positive_eps():
    """With eps_u > 0 and no other active constraint, lambda_u > 0 and E_q u rises. (The spec
    says "always active"; with the feasibility constraint active the anchor mass can already
    lift E_q u above its target, so lambda_u = 0 there: the statement holds only alone.)"""
    F, c = _groups(B=30)
    est = _quiet(F, c - 5.0, eps_progress=0.05, eta_tie=1.0)  # all feasible: phi dropped
    assert not est.diagnostics["active"][:, 0].any()
    varied = est.win_rate.amax(-1) > est.win_rate.amin(-1)
    assert (est.lambdas[varied, 1] > 0).all()
    Eq = (est.q * est.win_rate).sum(-1)
    assert (Eq[varied] > est.win_rate.mean(-1)[varied]).all()


def test_permutation_equivariance():
    F, c = _groups(B=8)
    perm = torch.randperm(F.shape[1], generator=torch.Generator().manual_seed(3))
    a = _quiet(F, c)
    b = _quiet(F[:, perm], c[:, perm])
    assert torch.allclose(a.q[:, perm], b.q, atol=1e-10)
    assert torch.allclose(a.lambdas, b.lambdas, atol=1e-8)


def test_monotone_invariance_with_zero_tolerance_and_affine_with_tolerance():
    F, c = _groups(B=12)
    a = _quiet(F, c, tie_tol=0.0)
    Fm = torch.stack([torch.exp(3 * F[..., 0]), F[..., 1] ** 3 + F[..., 1]], -1)  # strictly increasing
    b = _quiet(Fm, c * 7.0, tie_tol=0.0)  # a positive rescale of constraints keeps feasibility
    assert torch.allclose(a.q, b.q, atol=1e-10)
    a2 = _quiet(F, c, tie_tol=0.3)
    Fa = F * torch.tensor([5.0, 0.01], dtype=torch.float64) + torch.tensor([3.0, -2.0], dtype=torch.float64)
    b2 = _quiet(Fa, c, tie_tol=0.3)
    assert torch.allclose(a2.q, b2.q, atol=1e-10)


def test_dual_monotone_in_tau():
    F, c = _groups(B=40, shift=1.0)
    prev = None
    for tau in (0.3, 0.5, 0.7, 0.9):
        e = _quiet(F, c, tau_feas=tau, eps_progress=0.0, eta_tie=1.0)
        if prev is not None:
            assert (e.lambdas[:, 0] >= prev.lambdas[:, 0] - 1e-9).all()
            assert (e.diagnostics["q_feasible"] >= prev.diagnostics["q_feasible"] - 1e-9).all()
        prev = e


def test_win_rate_follows_debs_rules():
    F = torch.tensor([[[1.0, 1.0], [0.0, 0.0], [5.0, 5.0], [4.0, 6.0]]], dtype=torch.float64)
    g = torch.tensor([[[-1.0], [-1.0], [2.0], [1.0]]], dtype=torch.float64)
    phi, u, a, v = comparison_statistics(F, g, tie_tol=0.0)
    assert phi.tolist() == [[1.0, 1.0, 0.0, 0.0]]
    # 0 dominates 1 and both infeasible; 1 beats both infeasible; 3 (less violation) beats 2
    assert torch.allclose(u, torch.tensor([[3 / 3, 2 / 3, 0.0, 1 / 3]], dtype=torch.float64))
    assert (a == 0).all()


def test_statuses_and_warnings():
    G = 6
    tied = torch.ones(1, G, 2, dtype=torch.float64)
    with pytest.warns(UserWarning, match="all tied"):
        e = copro_e_step(tied, -torch.ones(1, G, 1))
    assert e.status == ["all_tied"] and torch.allclose(e.q, torch.full((1, G), 1 / G, dtype=torch.float64))
    F, _ = _groups(B=1, G=G)
    with pytest.warns(UserWarning, match="no feasible"):
        e = copro_e_step(F, torch.ones(1, G, 1) + torch.arange(G, dtype=torch.float64).view(1, G, 1))
    assert e.status == ["no_feasible"]
    assert e.q.std() > 0  # ranked by violation, not uniform
    assert e.q[0, 0] == e.q.max()  # least violation gets the most mass
    e = _quiet(F, -torch.ones(1, G, 1), eps_progress=10.0)
    assert e.status == ["clipped"]
    assert set(STATUSES) == {"optimal", "clipped", "all_tied", "no_feasible", "max_iter"}


def test_newton_stopped_early_is_not_optimal():
    """December trial D11: max_iter=1 returned 'optimal' with a violated win-rate constraint."""
    from optzoo import NotConvergedWarning

    F, c = _groups(B=3)
    with pytest.warns(NotConvergedWarning, match=r"copro_e_step: Newton stopped at max_iter=1 .* "
                                                 r"largest moment-constraint violation is"):
        e = copro_e_step(F, c, max_iter=1)
    full = _quiet(F, c)
    for got, ref, r in zip(e.status, full.status, e.residual, strict=True):
        if ref == "optimal" and bool((r < -1e-9).any()):
            assert got == "max_iter"
    assert "max_iter" in e.status


def test_on_nan_infeasible():
    F, c = _groups(B=2)
    F[0, 0, 0] = float("nan")
    c[0, 0, 0] = -5.0
    e = _quiet(F, c, on_nan="infeasible")
    assert e.feasible[0, 0] == 0 and torch.isfinite(e.q).all() and (e.q > 0).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    F, c = _groups(B=4096)
    a = _quiet(F, c)
    b = _quiet(F.cuda(), c.cuda())
    assert torch.allclose(a.q, b.q.cpu(), atol=1e-6)


def _tabular_run(eta_tie, iters=40):
    from optzoo.copro import tabular_m_step

    F = np.array([[1.0, 0.2], [0.2, 1.0], [0.1, 0.1], [2.0, 2.0], [0.0, 0.0]])
    g = np.array([-1.0, -1.0, -1.0, 1.0, 1.0])
    rng = np.random.default_rng(0)
    pi = np.full(5, 0.2)
    front = []
    for _ in range(iters):
        y = rng.choice(5, size=(16, 8), p=pi)
        est = _quiet(torch.as_tensor(F[y]), torch.as_tensor(g[y][..., None]), eta_tie=eta_tie)
        qa = np.zeros(5)
        np.add.at(qa, y.ravel(), est.q.numpy().ravel() / 16)
        pi = tabular_m_step(qa, pi, coef=1.0)
        front.append(pi[:2].sum())
    return pi, front


def test_tabular_copro_reaches_the_feasible_front():
    """2 objectives, 5 actions, 1 constraint: actions 0 and 1 form the feasible front, 2 is
    dominated, 3 is infeasible (and would dominate), 4 is dominated and infeasible. Without the
    near-tie cap the tabular CoPro policy converges onto the front and keeps both points."""
    pi, front = _tabular_run(eta_tie=1.0)
    assert front[-1] > 0.99 and pi[0] > 0.1 and pi[1] > 0.1
    assert np.mean(front[-10:]) > np.mean(front[:10])


def test_near_tie_cap_keeps_duplicates_apart():
    """Our finding: with a discrete policy, repeated samples of one action are exact ties, so the
    default cap eta_a = 0.1 pushes mass toward rare actions and a dominated feasible action keeps
    a share (the front mass plateaus instead of reaching 1)."""
    pi, front = _tabular_run(eta_tie=0.1)
    assert pi[2] > 0.05 and pi[3] + pi[4] < 0.01


# ---------------------------------------------------------------------------------------------
# the KL-regularised variant: max_q E_q s - beta KL(q || p) s.t. the same moments


def _slsqp_kl(est, b, s, beta):
    """Solve the stated problem of group b directly: max E_q s - beta KL(q || p), same moments."""
    cons, G, p = _moment_constraints(est, b)

    def f(q):
        return float(-(q @ s) + beta * np.sum(q * np.log(q / p)))

    r = minimize(f, p, jac=lambda q: -s + beta * (np.log(q / p) + 1.0), constraints=cons,
                 bounds=[(1e-14, 1.0)] * G, method="SLSQP", options={"ftol": 1e-15, "maxiter": 2000})
    return r.x, f


@pytest.mark.parametrize("beta", [0.3, 1.0, 3.0])
def test_kl_variant_matches_slsqp_on_the_stated_problem(beta):
    F, c = _groups(B=24, seed=5)
    s = torch.randn(24, 8, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    est = _quiet(F, c, senses=("max", "min"), score=s, beta=beta)
    checked = 0
    for b in range(F.shape[0]):
        if est.status[b] != "optimal":
            continue
        q, f = _slsqp_kl(est, b, s[b].numpy(), beta)
        assert np.abs(q - est.q[b].numpy()).max() < 1e-6
        assert f(est.q[b].numpy()) <= f(q) + 1e-10          # ours is at least as good
        checked += 1
    assert checked >= 10
    lam, res = est.lambdas, est.residual
    assert (lam >= 0).all() and (res >= -1e-8).all()
    assert (lam * res).abs().max() < 1e-7                    # complementary slackness
    # the dropped constraints are those whose statistic is constant over the group
    psi = torch.stack([est.feasible, est.win_rate, -est.ambiguity], -1)
    const = psi.amax(1) == psi.amin(1)
    assert (const | est.diagnostics["active"]).all()
    # q* = p exp((s + lambda^T psi) / beta) / Z with the returned lambda (the stated problem's)
    q = torch.softmax((s + (psi * lam[:, None]).sum(-1)) / beta, -1)
    assert torch.allclose(q, est.q, atol=1e-12)


def test_kl_variant_is_the_plain_projection_with_the_tilted_base():
    """mu = lambda / beta maximises the plain dual with base p' = softmax(s / beta) and the
    same targets b (KKT of max_{mu >= 0} D(mu; p'))."""
    F, c = _groups(B=16, seed=11)
    beta = 0.7
    s = 2 * torch.randn(16, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    est = _quiet(F, c, score=s, beta=beta)
    pt = torch.softmax(s / beta, -1)
    assert torch.allclose(est.diagnostics["base"], pt, atol=1e-14)
    psi = torch.stack([est.feasible, est.win_rate, -est.ambiguity], -1)
    b = torch.nan_to_num(torch.stack([est.targets[:, 0], est.targets[:, 1], -est.targets[:, 2]], -1))
    mu = (est.lambdas / beta).clone().requires_grad_(True)
    grad, = torch.autograd.grad(dual_objective(mu, psi, b, p=pt).sum(), mu)
    act = est.diagnostics["active"]
    free = act & (est.lambdas > 0) & ~est.diagnostics["lambda_at_bound"][:, None]
    assert free.any()
    assert grad[free].abs().max() < 1e-8                                  # stationary
    assert (grad[act & (est.lambdas == 0)] <= 1e-8).all()                 # pinned at 0
    q = torch.softmax(torch.log(pt) + (psi * (est.lambdas / beta)[:, None]).sum(-1), -1)
    assert torch.allclose(q, est.q, atol=1e-12)


def test_kl_variant_q_equals_tilted_base_when_constraints_are_inactive():
    F, c = _groups(B=10, seed=4)
    phi, u, a, v = comparison_statistics(F, c - 5.0)          # all feasible: phi dropped
    s = 3.0 * u                                               # tilting toward u keeps E u up
    for beta in (0.5, 2.0):
        est = _quiet(F, c - 5.0, eps_progress=0.0, eta_tie=1.0, score=s, beta=beta)
        assert torch.equal(est.lambdas, torch.zeros_like(est.lambdas))
        assert torch.allclose(est.q, torch.softmax(s / beta, -1), rtol=1e-15, atol=0)


def test_kl_variant_with_constant_score_is_the_plain_projection():
    F, c = _groups(B=20, seed=8)
    plain = _quiet(F, c)
    for beta in (0.5, 1.0, 4.0):
        est = _quiet(F, c, score=torch.full((20, 8), 0.3, dtype=torch.float64), beta=beta)
        assert torch.allclose(est.q, plain.q, atol=1e-9)
        ok = ~plain.diagnostics["lambda_at_bound"] & ~est.diagnostics["lambda_at_bound"]
        assert torch.allclose(est.lambdas[ok], beta * plain.lambdas[ok], atol=1e-6)


def test_kl_variant_keeps_full_support_and_anchor_mass():
    F, c = _groups(B=64, G=12, shift=1.2, seed=3)
    s = 3.0 * torch.randn(64, 12, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    # push the score against feasibility: the anchor constraint must still hold
    s = s - 4.0 * (c[..., 0] <= 0).to(s.dtype)
    est = _quiet(F, c, tau_feas=0.6, score=s, beta=0.5)
    assert (est.q > 0).all()
    assert torch.allclose(est.q.sum(-1), torch.ones(64, dtype=torch.float64))
    has = (est.feasible.sum(-1) > 0) & (est.feasible.mean(-1) < 1)
    assert has.any() and (est.q[est.feasible.bool()] > 0).all()
    tau_eff = torch.clamp(torch.clamp(est.feasible.mean(-1), min=0.6), max=0.95)
    ok = has & ~est.diagnostics["lambda_at_bound"]
    assert ok.sum() > 10
    assert (est.diagnostics["q_feasible"][ok] >= tau_eff[ok] - 1e-8).all()


def test_score_none_path_is_unchanged_by_the_new_arguments():
    F, c = _groups(B=12, seed=1)
    a = _quiet(F, c)
    b = _quiet(F, c, score=None, beta=1.0, archive=None, keys=None)
    assert torch.equal(a.q, b.q) and torch.equal(a.lambdas, b.lambdas)
    assert "score" not in a.diagnostics
