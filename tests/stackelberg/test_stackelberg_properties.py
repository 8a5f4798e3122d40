"""The spec's property tests (section 4): envelope theorem, closed forms, limits, two-time-scale
convergence, projections, the param-group split, Lanczos against eigvalsh, the Schur identity."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from optzoo.stackelberg import (
    StackelbergGD,
    ball_projection,
    box_projection,
    curvature,
    exact_head_best_response,
    hessian_top_eig,
    split_head,
    stackelberg_objective,
    stackelberg_param_groups,
)

DT = torch.float64
LAM = 1e-2


def _data(n=40, d=3, m=5, k=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=DT)
    Y = torch.randn(n, k, generator=g, dtype=DT)
    theta = 0.7 * torch.randn(m, d, generator=g, dtype=DT)
    return X, Y, theta


def _features(theta, X):
    return torch.tanh(X @ theta.T)


def _L(theta, W, X, Y, lam=LAM):
    R = _features(theta, X) @ W.T - Y
    return (R * R).sum() / (2 * X.shape[0]) + 0.5 * lam * (W * W).sum()


def _phi(theta, X, Y, lam=LAM):
    return stackelberg_objective(_features(theta, X), Y, lam=lam)[0]


def test_envelope_theorem():
    X, Y, theta = _data()
    th = theta.clone().requires_grad_(True)
    g_phi, = torch.autograd.grad(_phi(th, X, Y), th)
    W, _ = exact_head_best_response(_features(theta, X), Y, lam=LAM)
    th2 = theta.clone().requires_grad_(True)
    g_env, = torch.autograd.grad(_L(th2, W.detach(), X, Y), th2)
    assert torch.allclose(g_phi, g_env, atol=1e-10, rtol=0)
    # central finite difference of Phi along a random direction
    v = torch.randn(theta.shape, generator=torch.Generator().manual_seed(1), dtype=DT)
    h = 1e-5
    fd = (_phi(theta + h * v, X, Y) - _phi(theta - h * v, X, Y)) / (2 * h)
    assert abs(float(fd) - float((g_phi * v).sum())) < 1e-6


@pytest.mark.parametrize("n,m", [(40, 5), (6, 9)])  # primal (m <= N) and kernel (m > N) paths
def test_best_response_is_stationary_and_phi_forms_agree(n, m):
    X, Y, theta = _data(n=n, m=m)
    H = _features(theta, X)
    W, _ = exact_head_best_response(H, Y, lam=LAM)
    Wp = W.clone().requires_grad_(True)
    gW, = torch.autograd.grad(_L(theta, Wp, X, Y), Wp)
    assert float(gW.abs().max()) < 1e-10
    p1, _, _ = stackelberg_objective(H, Y, lam=LAM, form="primal")
    p2, _, _ = stackelberg_objective(H, Y, lam=LAM, form="kernel")
    assert abs(float(p1 - p2)) < 1e-10
    assert abs(float(p1) - float(_L(theta, W, X, Y))) < 1e-12


def test_best_response_with_bias_matches_lstsq():
    X, Y, theta = _data()
    H = _features(theta, X)
    W, b = exact_head_best_response(H, Y, lam=1e-12, bias=True)
    A = torch.cat([H, torch.ones(len(H), 1, dtype=DT)], 1)
    sol = torch.linalg.lstsq(A, Y).solution.T
    assert torch.allclose(W, sol[:, :-1], atol=1e-7) and torch.allclose(b, sol[:, -1], atol=1e-7)


def _net(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3)).double()


@pytest.mark.parametrize("momentum,wd", [(0.0, 0.0), (0.9, 1e-3)])
def test_ratio_one_simultaneous_is_bit_identical_to_sgd(momentum, wd):
    X = torch.randn(32, 4, generator=torch.Generator().manual_seed(2), dtype=DT)
    y = torch.randn(32, 3, generator=torch.Generator().manual_seed(3), dtype=DT)
    a, b = _net(), _net()
    ba, ha = split_head(a)
    opt_a = StackelbergGD(ba, ha, lr=0.05, head_ratio=1.0, mode="simultaneous", momentum=momentum,
                          weight_decay=wd)
    opt_b = torch.optim.SGD(b.parameters(), lr=0.05, momentum=momentum, weight_decay=wd)
    for _ in range(25):
        for net, opt in ((a, opt_a), (b, opt_b)):
            def closure(net=net, opt=opt):
                opt.zero_grad()
                f = ((net(X) - y) ** 2).mean()
                f.backward()
                return f
            opt.step(closure)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)


def test_param_groups_with_torch_sgd_match_manual_two_rates():
    X = torch.randn(16, 4, generator=torch.Generator().manual_seed(4), dtype=DT)
    net = _net()
    ref = copy.deepcopy(net)
    opt = torch.optim.SGD(stackelberg_param_groups(net, 0.01, 8.0))
    loss = (net(X) ** 2).mean()
    loss.backward()
    opt.step()
    (ref(X) ** 2).mean().backward()
    with torch.no_grad():
        for i, (p, q) in enumerate(zip(net.parameters(), ref.parameters(), strict=True)):
            lr = 0.08 if i >= 2 else 0.01
            assert torch.allclose(p, q - lr * q.grad, atol=1e-15)


def test_exact_head_alternation_equals_gd_on_phi():
    X, Y, theta = _data()
    a = theta.clone().requires_grad_(True)    # GD on Phi (autograd through W*)
    b = theta.clone().requires_grad_(True)    # body step at the solved head (envelope)
    for _ in range(30):
        ga, = torch.autograd.grad(_phi(a, X, Y), a)
        W, _ = exact_head_best_response(_features(b.detach(), X), Y, lam=LAM)
        gb, = torch.autograd.grad(_L(b, W, X, Y), b)
        with torch.no_grad():
            a -= 0.3 * ga
            b -= 0.3 * gb
    assert torch.allclose(a, b, atol=1e-8, rtol=0)


def test_two_time_scale_converges_linearly_on_strongly_convex_quadratic():
    g = torch.Generator().manual_seed(5)
    A = torch.randn(5, 5, generator=g, dtype=DT)
    M = A @ A.T / 5 + torch.eye(5, dtype=DT)
    bvec = torch.randn(5, generator=g, dtype=DT)
    zstar = torch.linalg.solve(M, bvec)
    theta = nn.Parameter(torch.zeros(3, dtype=DT))
    W = nn.Parameter(torch.zeros(2, dtype=DT))
    lmax = float(torch.linalg.eigvalsh(M)[-1])
    opt = StackelbergGD([theta], [W], lr=0.1 / lmax, head_ratio=8.0)  # small alpha, large c

    def closure():
        opt.zero_grad()
        z = torch.cat([theta, W])
        f = 0.5 * z @ M @ z - bvec @ z
        f.backward()
        return f

    errs = []
    for _ in range(1000):
        opt.step(closure)
        errs.append(float(torch.linalg.vector_norm(torch.cat([theta, W]).detach() - zstar)))
    assert errs[-1] < 1e-10
    # linear: the error contracts by the same factor over successive windows
    r = [errs[k + 100] / errs[k] for k in (299, 399, 499)]
    assert max(r) < 0.1 and (max(r) - min(r)) / max(r) < 0.1, r


def test_projections_keep_iterates_feasible_and_are_idempotent():
    box, ball = box_projection(-0.1, 0.1), ball_projection(0.5)
    x = torch.randn(20, generator=torch.Generator().manual_seed(6), dtype=DT) * 3
    for pr in (box, ball):
        assert torch.equal(pr(pr(x)), pr(x))
    net = _net()
    body, head = split_head(net)
    opt = StackelbergGD(body, head, lr=0.5, body_project=box, head_project=ball)
    X = torch.randn(8, 4, generator=torch.Generator().manual_seed(7), dtype=DT)

    def closure():
        opt.zero_grad()
        f = ((net(X) - 3.0) ** 2).mean()
        f.backward()
        return f

    for _ in range(10):
        opt.step(closure)
        assert all(float(p.detach().abs().max()) <= 0.1 + 1e-15 for p in body)
        assert all(float(torch.linalg.vector_norm(p.detach())) <= 0.5 + 1e-12 for p in head)


def test_split_every_parameter_once_default_is_last_linear():
    net = nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.ReLU(), nn.Linear(6, 6), nn.Linear(6, 2))
    body, head = split_head(net)
    assert [p is q for p, q in zip(head, net[4].parameters(), strict=True)] == [True, True]
    ids = [id(p) for p in body + head]
    assert len(ids) == len(set(ids)) == len(list(net.parameters()))
    for spec in ("4", net[4], lambda n, p: n.startswith("4."), list(net[4].parameters())):
        assert [id(p) for p in split_head(net, spec)[1]] == [id(p) for p in head]
    groups = stackelberg_param_groups(net, 0.1, 4.0, weight_decay=0.01)
    seen = [id(p) for g in groups for p in g["params"]]
    assert sorted(seen) == sorted(ids)
    for g in groups:  # no decay on biases and norms
        if g["weight_decay"] > 0:
            assert all(p.ndim >= 2 for p in g["params"])
    assert {(g["role"], g["lr"]) for g in groups} == {("body", 0.1), ("head", 0.4)}


def _small_model():
    torch.manual_seed(3)
    # body: 4 -> 8 (40 parameters) then tanh, head 8 -> 1 (9): 49 parameters in all
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).double()


def _explicit_hessians(model, X, y, lam):
    body_params = [p.detach() for p in model[0].parameters()]
    shapes = [p.shape for p in body_params]
    sizes = [p.numel() for p in body_params]
    W, b = model[2].weight.detach(), model[2].bias.detach()

    def unpack(v):
        parts = torch.split(v, sizes)
        return [q.reshape(s) for q, s in zip(parts, shapes, strict=True)]

    def feats(v):
        w1, b1 = unpack(v)
        return torch.tanh(X @ w1.T + b1)

    def L(v):
        r = feats(v) @ W.T + b - y
        return (r * r).sum() / (2 * len(X)) + 0.5 * lam * ((W * W).sum() + (b * b).sum())

    def phi(v):
        return stackelberg_objective(feats(v), y, lam=lam, bias=True)[0]

    v0 = torch.cat([p.reshape(-1) for p in body_params])
    return (torch.autograd.functional.hessian(phi, v0), torch.autograd.functional.hessian(L, v0))


def test_top_eigenvalue_matches_dense_eigendecomposition():
    model = _small_model()
    g = torch.Generator().manual_seed(8)
    X, y = torch.randn(30, 4, generator=g, dtype=DT), torch.randn(30, 1, generator=g, dtype=DT)
    Hphi, HL = _explicit_hessians(model, X, y, LAM)
    got = curvature(model, "mse", X, y, lam=LAM, max_iter=40)
    for key, H in (("phi", Hphi), ("L", HL)):
        want = float(torch.linalg.eigvalsh(H)[-1])
        assert abs(got[key] - want) <= 1e-4 * abs(want), (key, got[key], want)
    # 20 Lanczos steps already give the top eigenvalue of this 40-dimensional Hessian
    assert abs(curvature(model, "mse", X, y, lam=LAM, max_iter=20)["phi"]
               - float(torch.linalg.eigvalsh(Hphi)[-1])) <= 1e-4 * abs(float(torch.linalg.eigvalsh(Hphi)[-1]))


def test_hessian_top_eig_on_explicit_quadratic():
    g = torch.Generator().manual_seed(9)
    A = torch.randn(50, 50, generator=g, dtype=DT)
    A = A + A.T
    x = torch.zeros(50, dtype=DT)
    want = float(torch.linalg.eigvalsh(A)[-1])
    got = hessian_top_eig(lambda z: 0.5 * z @ A @ z, [x], max_iter=50)
    with pytest.warns(FutureWarning, match="'iters' argument of hessian_top_eig was renamed to 'max_iter'"):
        assert hessian_top_eig(lambda z: 0.5 * z @ A @ z, [x], iters=50) == got  # the name until Dec 2026
    assert abs(got - want) <= 1e-8 * abs(want)
    # power iteration: the eigenvalue of largest magnitude, here with a clear gap (5 vs 2)
    Q, _ = torch.linalg.qr(torch.randn(50, 50, generator=g, dtype=DT))
    B = Q @ torch.diag(torch.cat([torch.tensor([5.0], dtype=DT), torch.linspace(-2, 2, 49, dtype=DT)])) @ Q.T
    got = hessian_top_eig(lambda z: 0.5 * z @ B @ z, [x], max_iter=200, method="power")
    assert abs(got - 5.0) <= 1e-4 * 5.0


def test_schur_identity_and_ordering():
    X, Y, theta = _data(n=30, d=2, m=3, k=1)
    W, _ = exact_head_best_response(_features(theta, X), Y, lam=LAM)
    nt, nw = theta.numel(), W.numel()

    def joint(z):
        return _L(z[:nt].reshape(theta.shape), z[nt:].reshape(W.shape), X, Y)

    z = torch.cat([theta.reshape(-1), W.reshape(-1)])
    Hj = torch.autograd.functional.hessian(joint, z)
    Ltt, LtW, LWW = Hj[:nt, :nt], Hj[:nt, nt:], Hj[nt:, nt:]
    schur = Ltt - LtW @ torch.linalg.solve(LWW, LtW.T)
    Hphi = torch.autograd.functional.hessian(lambda v: _phi(v.reshape(theta.shape), X, Y),
                                             theta.reshape(-1))
    assert torch.allclose(Hphi, schur, atol=1e-8, rtol=0)
    assert float(torch.linalg.eigvalsh(Ltt - Hphi)[0]) >= -1e-10
    assert nw == 3


def test_baseline_groups_follow_their_rules():
    from optzoo.stackelberg import layer_decay_param_groups, mup_sgd_param_groups

    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    lrs = [g["lr"] for g in layer_decay_param_groups(net, 1.0, decay=0.5)]
    assert lrs == [0.25, 0.5, 1.0]  # head full LR, one layer down x 0.5, two down x 0.25
    groups = mup_sgd_param_groups(net, 0.1, width_mult=4.0)
    by = {id(p): g["lr"] for g in groups for p in g["params"]}
    want = [0.4, 0.4, 0.1, 0.4, 0.4, 0.1]  # in W, in b, hidden W, hidden b, readout W, readout b
    assert [by[id(p)] for p in net.parameters()] == pytest.approx(want)
