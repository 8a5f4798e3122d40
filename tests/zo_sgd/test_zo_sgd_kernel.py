"""The eNTK, the ZO eNTK and the closed forms: the spec's property tests 1-5 and 9."""

import math

import pytest
import torch

from optzoo.zo_sgd import (
    effective_rank,
    empirical_ntk,
    expected_relative_error,
    jl_entry_bound,
    jl_perturbations_needed,
    one_step_prediction,
    zo_entk,
    zo_entk_variance,
    zo_projections,
)

F64 = torch.float64


class _Rows(torch.nn.Module):
    """z(x) = X_x . w for a fixed set of tangent vectors X (one output per example)."""

    def __init__(self, X):
        super().__init__()
        self.register_buffer("X", X)
        self.w = torch.nn.Parameter(torch.randn(X.shape[1], dtype=F64))

    def forward(self, idx):
        return (self.X[idx] @ self.w)[:, None]


def _mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)).double()


def test_empirical_ntk_matches_autograd_jacobian_and_block_route():
    net = _mlp()
    X = torch.randn(5, 4, dtype=F64, generator=torch.Generator().manual_seed(1))
    params = dict(net.named_parameters())
    J = torch.autograd.functional.jacobian(
        lambda *ps: torch.func.functional_call(net, dict(zip(params, ps, strict=True)), (X,)),
        tuple(params.values()))
    J = torch.cat([j.reshape(15, -1) for j in J], 1)
    K = empirical_ntk(net, X)
    assert K.dtype == F64 and K.shape == (15, 15)
    torch.testing.assert_close(K, J @ J.T, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(empirical_ntk(net, X, max_jacobian_bytes=1), K, rtol=1e-10, atol=1e-12)
    Xo = X[:2]
    torch.testing.assert_close(empirical_ntk(net, Xo, X, max_jacobian_bytes=1), K[:6], rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(empirical_ntk(net, Xo, X), K[:6], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dist", ["gaussian", "rademacher"])
def test_projection_identity_and_unbiasedness(dist):
    # spec 1 and 2: E[U U^T / P] = I and E[K_ZO] = K, within 4.5 sigma of the exact variance
    X = torch.randn(6, 12, dtype=F64, generator=torch.Generator().manual_seed(2))
    net = _Rows(X)
    idx = torch.arange(6)
    K = empirical_ntk(net, idx)
    torch.testing.assert_close(K, X @ X.T)
    P = 2000
    Kzo = zo_entk(net, idx, num_perturbations=P, distribution=dist, seed=3)
    fourth = (X[:, None, :] ** 2 * X[None, :, :] ** 2).sum(-1)
    var = zo_entk_variance(K, K.diagonal(), K.diagonal(), P, distribution=dist, fourth=fourth)
    z = (Kzo - K) / var.clamp_min(1e-300).sqrt()
    assert z.abs().max() < 4.5, z
    eye = zo_entk(_Rows(torch.eye(12, dtype=F64)), torch.arange(12), num_perturbations=P,
                  distribution=dist, seed=4)
    var_eye = zo_entk_variance(torch.eye(12, dtype=F64), torch.ones(12), torch.ones(12), P,
                               distribution=dist, fourth=torch.eye(12, dtype=F64))
    off = ~torch.eye(12, dtype=torch.bool)
    zz = (eye - torch.eye(12, dtype=F64))[off] / var_eye[off].sqrt()
    assert zz.abs().max() < 4.5
    if dist == "rademacher":  # u_k^2 = 1 exactly: the diagonal of U U^T / P is exactly 1
        torch.testing.assert_close(eye.diagonal(), torch.ones(12, dtype=F64))


def _draws(d, n, dist, seed):
    g = torch.Generator().manual_seed(seed)
    if dist == "gaussian":
        return torch.randn(d, n, generator=g, dtype=F64)
    return torch.randint(0, 2, (d, n), generator=g).to(F64) * 2 - 1


@pytest.mark.parametrize("dist", ["gaussian", "rademacher"])
def test_variance_matches_closed_form(dist):
    # spec 3: per-direction products (a.u)(b.u) have the closed-form variance (within 5%)
    g = torch.Generator().manual_seed(5)
    X = torch.randn(3, 10, dtype=F64, generator=g)
    X[2] = X[0] * torch.tensor([3.0] * 5 + [0.1] * 5, dtype=F64)  # uneven: Rademacher differs
    A = X @ _draws(10, 200_000, dist, 6)
    K = X @ X.T
    fourth = (X[:, None, :] ** 2 * X[None, :, :] ** 2).sum(-1)
    var = zo_entk_variance(K, K.diagonal(), K.diagonal(), 1, distribution=dist, fourth=fourth)
    for a, b in ((0, 1), (0, 2), (1, 1)):
        prod = A[a] * A[b]
        assert abs(float(prod.var()) / float(var[a, b]) - 1.0) < 0.05, (a, b)
    if dist == "rademacher":  # the correction term matters for uneven vectors
        gauss = zo_entk_variance(K, K.diagonal(), K.diagonal(), 1)
        assert float(var[0, 2]) < 0.9 * float(gauss[0, 2])


def test_dimension_free_in_distribution():
    # spec 4: zero-padding d=10 -> 10^4, or rotating, leaves the law of K_ZO entries unchanged
    g = torch.Generator().manual_seed(7)
    X = torch.randn(2, 10, dtype=F64, generator=g)
    Q, _ = torch.linalg.qr(torch.randn(10, 10, dtype=F64, generator=g))
    padded = torch.cat([X, torch.zeros(2, 9990, dtype=F64)], 1)
    n = 4000
    stats = []
    for Y, s in ((X, 8), (padded, 9), (X @ Q, 10)):
        A = Y @ _draws(Y.shape[1], n, "gaussian", s)
        prod = A[0] * A[1]
        stats.append((float(prod.mean()), float(prod.var())))
    K01 = float(X[0] @ X[1])
    sd = math.sqrt((K01 ** 2 + float(X[0] @ X[0]) * float(X[1] @ X[1])) / n)
    for m, v in stats:
        assert abs(m - K01) < 4.5 * sd
        assert abs(v / stats[0][1] - 1.0) < 0.25  # two independent estimates, ~3 sigma


def test_finite_difference_matches_jvp_to_second_order():
    # spec 5: |FD(eps) - Ju| = O(eps^2) in float64: halving eps quarters the error
    net = _mlp(1)
    X = torch.randn(4, 4, dtype=F64, generator=torch.Generator().manual_seed(9))
    jvp = zo_projections(net, X, num_perturbations=3, seed=1).A
    errs = [float((zo_projections(net, X, num_perturbations=3, seed=1, method="finite_difference",
                                  eps=e).A - jvp).abs().max()) for e in (1e-2, 5e-3)]
    assert errs[1] < errs[0] and 3.0 < errs[0] / errs[1] < 5.0, errs


def test_relative_error_law_and_jl_bound():
    g = torch.Generator().manual_seed(10)
    X = torch.randn(8, 300, dtype=F64, generator=g)
    net, idx = _Rows(X), torch.arange(8)
    K = X @ X.T
    r = effective_rank(K)
    assert 1.0 <= r <= 8.0
    pr = zo_projections(net, idx, num_perturbations=256, seed=11)
    err2 = []
    for s in range(40):
        Kz = zo_projections(net, idx, num_perturbations=16, seed=100 + s).kernel()
        err2.append(float(((Kz - K).norm() / K.norm()) ** 2))
    mean = sum(err2) / len(err2)
    assert abs(mean / expected_relative_error(K, 16) ** 2 - 1.0) < 0.35
    nrm = K.diagonal().sqrt()
    entry = ((pr.kernel() - K).abs() / (nrm[:, None] * nrm[None, :])).max()
    assert entry < jl_entry_bound(256, 8)
    assert math.isinf(jl_entry_bound(1, 8))
    assert jl_entry_bound(1024, 8) < jl_entry_bound(256, 8) < jl_entry_bound(256, 64)
    P = jl_perturbations_needed(0.3, 8)
    assert jl_entry_bound(P, 8) <= 0.3 + 1e-9 < jl_entry_bound(P - 50, 8)


def test_one_step_prediction_is_second_order():
    # spec 9: the realised change of log pi after an FO step matches -eta A_o K G to O(eta^2)
    net = _mlp(2)
    g = torch.Generator().manual_seed(12)
    Xo, Xu = torch.randn(3, 4, dtype=F64, generator=g), torch.randn(2, 4, dtype=F64, generator=g)
    y = torch.tensor([0, 2])
    K = empirical_ntk(net, Xo, Xu)
    zu = net(Xu)
    G = torch.softmax(zu, 1) - torch.nn.functional.one_hot(y, 3).to(F64)
    probs = torch.softmax(net(Xo), 1)
    errs = []
    for lr in (1e-2, 5e-3):
        m = _mlp(2)
        loss = torch.nn.functional.cross_entropy(m(Xu), y, reduction="sum")
        loss.backward()
        with torch.no_grad():
            for p in m.parameters():
                p.sub_(lr * p.grad)
            real = torch.log_softmax(m(Xo), 1) - torch.log(probs)
        pred = one_step_prediction(K, probs.detach(), G.detach(), lr)
        errs.append(float((real - pred).abs().max()))
    assert 3.0 < errs[0] / errs[1] < 5.0, errs


@pytest.mark.parametrize("call,exc,match", [
    (lambda n, x: zo_entk(n, x, num_perturbations=0), ValueError,
     r"'num_perturbations' argument of zo_projections must be an int in \[1, inf\]\. Got 0"),
    (lambda n, x: zo_entk(n, x, eps=0.0, method="finite_difference"), ValueError,
     r"'eps' argument of zo_projections must be a finite real number in \(0, inf\)\. Got 0\.0"),
    (lambda n, x: zo_entk(n, x, distribution="sphere"), ValueError,
     r"'distribution' argument of zo_projections must be one of 'gaussian', 'rademacher'\. Got 'sphere'"),
    (lambda n, x: zo_entk(n, x, method="backprop"), ValueError,
     r"'method' argument of zo_projections must be one of 'jvp', 'finite_difference'"),
    (lambda n, x: empirical_ntk(n, [1, 2]), TypeError, r"'inputs_o' argument of empirical_ntk must be a tensor"),
    (lambda n, x: empirical_ntk("net", x), TypeError, r"'model' argument of empirical_ntk must be a torch\.nn\.Module"),
    (lambda n, x: empirical_ntk(n, x, output_fn=lambda o: o.sum()), ValueError,
     r"'output_fn' argument of empirical_ntk must be a function returning an \(N, V\) tensor\. Got \(\)"),
    (lambda n, x: jl_entry_bound(16, 4, delta=1.5), ValueError, r"'delta' argument of jl_entry_bound"),
    (lambda n, x: one_step_prediction(torch.ones(3, 3), torch.ones(1, 3), torch.ones(2, 3), 0.1),
     ValueError, r"'K' argument of one_step_prediction must be a kernel of shape \(3, 6\)"),
])
def test_bad_inputs(call, exc, match):
    with pytest.raises(exc, match=match):
        call(_mlp(), torch.randn(2, 4, dtype=F64))
