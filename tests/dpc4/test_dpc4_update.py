"""Properties of the pure updates: clipping, bias toy, limits, noise scale, sensitivity, audit."""

import math

import numpy as np
import pytest
import torch

from optzoo.dpc4 import ShiftedDecay, clip_rows, dpc4_init, dpc4_update, dpsgd_update
from optzoo.dpc4.repro.experiments import toy as _toy

torch.set_num_threads(1)


def test_clip_operator():
    g = torch.Generator().manual_seed(0)
    v = torch.randn(200, 7, generator=g, dtype=torch.float64) * torch.logspace(-2, 2, 200, dtype=torch.float64)[:, None]
    c = clip_rows(v, 1.5)
    assert (torch.linalg.vector_norm(c, dim=-1) <= 1.5 + 1e-12).all()
    small = torch.linalg.vector_norm(v, dim=-1) <= 1.5
    assert torch.equal(c[small], v[small])
    assert torch.equal(clip_rows(torch.zeros(3, 4), 1.0), torch.zeros(3, 4))
    s = ShiftedDecay(c0=2.0, gamma=0.5, shift=0.3)
    for t in (0, 1, 10, 1000):
        c1, c2 = s(t)
        assert c2 - c1 == pytest.approx(0.3) and c1 == pytest.approx(2.0 / math.sqrt(1 + t))


def test_bias_toy():
    out = _toy(np.array([0.0, 0.0, 0.0, 10.0]), 3000)
    assert out["dpsgd"] == pytest.approx(1 / 3, abs=1e-6)
    assert out["dpc4"] == pytest.approx(2.5, abs=1e-6)
    assert out["dpc4_ef"] == pytest.approx(2.5, abs=1e-6)
    half = _toy(np.array([0.0, 0.0, 0.0, 10.0]), 3000, clip=0.5)
    assert half["dpsgd"] == pytest.approx(1 / 6, abs=1e-6) and half["dpc4"] == pytest.approx(2.5, abs=1e-6)


def _quad_grads(x, a, idx):
    return (x[None, :] - a[idx])  # f_i = 1/2 ||x - a_i||^2


@pytest.mark.parametrize("memory", ["anchor", "ef"])
def test_non_private_limit_is_sgd(memory):
    g = torch.Generator().manual_seed(1)
    a = torch.randn(50, 3, generator=g, dtype=torch.float64)
    x_sgd = x = torch.zeros(3, dtype=torch.float64)
    st = dpc4_init(3, memory=memory, num_records=50)
    for _t in range(30):
        idx = torch.nonzero(torch.rand(50, generator=g) < 0.2).reshape(-1)
        u, st, _ = dpc4_update(_quad_grads(x, a, idx), st, indices=idx, expected_batch_size=10,
                               sample_rate=0.2, clip1=1e9, clip2=1e9, noise_multiplier=0.0,
                               feedback_noise_multiplier=0.0)
        u_sgd = _quad_grads(x_sgd, a, idx).sum(0) / 10
        if memory == "ef":
            torch.testing.assert_close(u, u_sgd, rtol=1e-12, atol=1e-12)
        x, x_sgd = x - 0.1 * u, x_sgd - 0.1 * u_sgd
    if memory == "anchor":  # SAGA-type estimator: same fixed point, exact on full batches
        st = dpc4_init(3, memory="anchor", num_records=50)
        all_idx = torch.arange(50)
        u, st, _ = dpc4_update(_quad_grads(x, a, all_idx), st, indices=all_idx, expected_batch_size=50,
                               sample_rate=1.0, clip1=1e9, clip2=1e9, noise_multiplier=0.0)
        torch.testing.assert_close(u, _quad_grads(x, a, all_idx).mean(0))


@pytest.mark.parametrize("kind", ["dpsgd", "anchor", "ef"])
def test_noise_actually_added(kind):
    """All per-sample terms zero: per-coordinate std of u equals s_t / B within 3% (1e4 draws)."""
    R, d, B, z, c = 10_000, 4, 8.0, 1.3, 0.7
    g = torch.Generator().manual_seed(2)
    gs = torch.zeros(R, 5, d, dtype=torch.float64)
    if kind == "dpsgd":
        u, info = dpsgd_update(gs, expected_batch_size=B, sample_rate=0.1, clip=c, noise_multiplier=z, generator=g)
        expected = z * c / B
    else:
        st = dpc4_init(d, memory=kind, num_records=20, batch_shape=(R,))
        u, _, info = dpc4_update(gs, st, indices=torch.arange(5), expected_batch_size=B, sample_rate=0.1,
                                 clip1=c, clip2=c + 0.5, noise_multiplier=z, feedback_noise_multiplier=z,
                                 generator=g)
        expected = z * c / B if kind == "anchor" else math.sqrt((z * c) ** 2 + (z * 2 * (c + 0.5) * B) ** 2) / B
    assert float(u.std()) == pytest.approx(expected, rel=0.03)
    assert float(u.mean()) == pytest.approx(0.0, abs=4 * expected / math.sqrt(u.numel()))


@pytest.mark.parametrize("memory", ["anchor", "ef"])
def test_brute_force_sensitivity(memory):
    """D vs D' = D minus a huge-gradient canary, same sampling of the others and the same public
    history: every released (pre-noise) sum differs by at most the ledger's sensitivity."""
    gen = torch.Generator().manual_seed(3)
    n, d, q, B = 12, 3, 0.5, 6.0
    sched = ShiftedDecay(c0=1.0, gamma=0.5, shift=0.5)
    for _trial in range(5):
        a = torch.randn(n, d, generator=gen, dtype=torch.float64)
        a[0] = 1e4 * torch.randn(d, generator=gen, dtype=torch.float64)  # canary = record 0
        x = torch.zeros(d, dtype=torch.float64)
        sD, sDp = dpc4_init(d, memory=memory, num_records=n), dpc4_init(d, memory=memory, num_records=n)
        for t in range(40):
            mask = torch.rand(n, generator=gen) < q
            idx = torch.nonzero(mask).reshape(-1)
            idx_p = idx[idx != 0]  # D' lacks the canary; everything else identical
            c1, c2 = sched(t)
            kw = dict(expected_batch_size=B, sample_rate=q, clip1=c1, clip2=c2, noise_multiplier=1.0,
                      feedback_noise_multiplier=1.0, generator=torch.Generator().manual_seed(t))
            u, sD_next, info = dpc4_update(_quad_grads(x, a, idx), sD, indices=idx, **kw)
            _, sDp_next, info_p = dpc4_update(_quad_grads(x, a, idx_p), sDp, indices=idx_p, **kw)
            for s, sp, bound in zip(info.sums, info_p.sums, info.sensitivities, strict=True):
                assert float(torch.linalg.vector_norm(s - sp)) <= bound * (1 + 1e-12)
            if memory == "anchor":  # public memory m is built from releases only: keep it shared
                sDp_next = sDp_next._replace(memory=sD_next.memory)
            sD, sDp = sD_next, sDp_next
            x = x - 0.1 * u  # the public history follows the release on D


def test_empirical_audit_lower_bound():
    """One white-box DP-SGD step, canary along e1; Clopper-Pearson lower bound <= claimed eps."""
    from scipy.stats import beta

    from optzoo.dpc4 import rdp_epsilon

    N, z, C, delta = 20_000, 1.0, 1.0, 1e-5
    g = torch.Generator().manual_seed(4)
    zero = torch.zeros(N, 1, 2, dtype=torch.float64)
    canary = zero.clone()
    canary[:, 0, 0] = 100.0
    u0, _ = dpsgd_update(zero, expected_batch_size=1, sample_rate=1.0, clip=C, noise_multiplier=z, generator=g)
    u1, _ = dpsgd_update(canary, expected_batch_size=1, sample_rate=1.0, clip=C, noise_multiplier=z, generator=g)
    claimed = rdp_epsilon([z], 1.0, delta=delta)
    best = 0.0
    for thr in np.linspace(0.0, 4.0, 21):
        fp = int((u0[:, 0] > thr).sum())
        fn = int((u1[:, 0] <= thr).sum())
        fpr_ub = beta.ppf(0.975, fp + 1, N - fp) if fp < N else 1.0
        fnr_ub = beta.ppf(0.975, fn + 1, N - fn) if fn < N else 1.0
        if 1 - delta - fnr_ub > 0:
            best = max(best, math.log((1 - delta - fnr_ub) / fpr_ub))
    assert 0.3 < best <= claimed


def test_strongly_convex_converges_as_noise_vanishes():
    """Quadratic, error-feedback memory, thresholds (hence noise std) -> 0: error decreases in T.
    (The anchor memory accumulates early noise in its public mean m: it has a floor instead.)"""
    g = torch.Generator().manual_seed(5)
    a = torch.randn(40, 2, generator=g, dtype=torch.float64) * 3
    xstar = a.mean(0)
    errs = []
    for T in (50, 300, 2000):
        x = torch.zeros(2, dtype=torch.float64)
        st = dpc4_init(2, memory="ef")
        gn = torch.Generator().manual_seed(6)
        idx = torch.arange(40)
        sched = ShiftedDecay(c0=2.0, gamma=0.75, shift=0.0)
        for t in range(T):
            c1, c2 = sched(t)
            u, st, _ = dpc4_update(_quad_grads(x, a, idx), st, indices=idx, expected_batch_size=40,
                                   sample_rate=1.0, clip1=c1, clip2=c2, noise_multiplier=0.5,
                                   feedback_noise_multiplier=0.01, generator=gn)
            x = x - 0.5 * u
        errs.append(float(torch.linalg.vector_norm(x - xstar)))
    assert errs[0] > errs[1] > errs[2]


def test_determinism():
    out = []
    for _ in range(2):
        g = torch.Generator().manual_seed(7)
        st = dpc4_init(3, memory="anchor", num_records=5)
        u, st, _ = dpc4_update(torch.ones(2, 3), st._replace(memory=st.memory.float(), anchors=st.anchors.float()),
                               indices=torch.tensor([0, 3]), expected_batch_size=2, sample_rate=0.4,
                               clip1=0.5, clip2=1.0, noise_multiplier=1.0, generator=g)
        out.append(u)
    assert torch.equal(out[0], out[1])


def test_duplicate_indices_refused():
    st = dpc4_init(3, memory="anchor", num_records=5)
    st = st._replace(memory=st.memory.float(), anchors=st.anchors.float())
    with pytest.raises(ValueError, match="'indices' argument of dpc4_update must be distinct record ids"):
        dpc4_update(torch.ones(2, 3), st, indices=torch.tensor([3, 3]), expected_batch_size=2,
                    sample_rate=0.4, clip1=0.5, clip2=1.0, noise_multiplier=1.0)


def _ef_step(parts, mem, seed=3):
    state = dpc4_init(0, memory="ef")._replace(memory=mem)
    return dpc4_update(parts, state, indices=None, expected_batch_size=8.0, sample_rate=0.1, clip1=1.0,
                       clip2=0.5, noise_multiplier=1.0, feedback_noise_multiplier=1.0,
                       generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("dtype,rtol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("b", [0, 1, 13])
@pytest.mark.parametrize("threads", [1, 2])
def test_ef_compiled_pass_equals_torch_path(monkeypatch, dtype, rtol, b, threads):
    # EF's norms + raw sums from the compiled one-read pass give the same update, error memory
    # and released sums as torch's separate passes (used without numba, on GPU, or batched)
    pytest.importorskip("numba")
    from optzoo.dpc4 import core

    g = torch.Generator().manual_seed(b)
    parts = [torch.randn(b, 40, generator=g, dtype=dtype) * 3, torch.randn(b, 7, generator=g, dtype=dtype)]
    mem = [torch.randn(40, generator=g, dtype=dtype) * 0.1, torch.randn(7, generator=g, dtype=dtype) * 0.1]
    calls = []
    real = core._fused_kernel
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(threads)

        def counting(n):
            kernel = real(n)  # one thread: the serial build, else the parallel one
            calls.append(kernel.targetoptions.get("parallel", False))
            return kernel

        monkeypatch.setattr(core, "_fused_kernel", counting)
        fused = _ef_step(parts, mem)
        assert calls, "the compiled pass was not used"
        assert all(p == (threads > 1) for p in calls), calls
        monkeypatch.setattr(core, "_fused_kernel", lambda n: None)
        plain = _ef_step(parts, mem)
    finally:
        torch.set_num_threads(before)
    for a, c in zip(fused[0] + fused[1].memory + fused[2].sums[0], plain[0] + plain[1].memory + plain[2].sums[0],
                    strict=True):
        torch.testing.assert_close(a, c, rtol=rtol, atol=rtol)


def test_ef_compiled_pass_still_refuses_nan():
    pytest.importorskip("numba")
    g = torch.randn(6, 30, dtype=torch.float32)
    for bad in (float("nan"), float("inf")):
        g2 = g.clone()
        g2[2, 5] = bad
        with pytest.raises(ValueError, match="'grad_samples'.*finite"):
            _ef_step(g2, torch.zeros(30))


def test_ef_parts_with_different_batch_sizes_are_refused():
    # refused before any pass runs (the compiled one would write past its buffers)
    with pytest.raises(ValueError, match=r"'grad_samples' argument of dpc4_update must be tensors with the same"):
        _ef_step([torch.randn(6, 30), torch.randn(5, 4)], [torch.zeros(30), torch.zeros(4)])
