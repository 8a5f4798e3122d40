"""The optimizers against the spec's properties (section 4) and slow reference loops."""

import copy

import pytest
import torch

from optzoo.dynamic_gs import (
    MaskedAdam,
    RegSpec,
    RestateConfig,
    RowState,
    StochasticAttributeAveraging,
    UpdateMixtureAdam,
    make_optimizers,
    mixture_adam_update,
    sparse_row_grad,
)

D = torch.float64


def _masks(steps, n, p=0.4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(n, generator=g) < p for _ in range(steps)]


def _grads(steps, n, d=2, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, d, generator=g, dtype=D) for _ in range(steps)]


def test_ssu_strictly_leaves_invisible_rows_and_dense_adam_moves_them():
    w = torch.nn.Parameter(torch.randn(4, 2, dtype=D))
    ref = torch.nn.Parameter(w.detach().clone())
    opt, adam = UpdateMixtureAdam([w], lr=0.1), torch.optim.Adam([ref], lr=0.1, eps=1e-15)
    for p, o in ((w, opt), (ref, adam)):
        p.grad = torch.ones(4, 2, dtype=D)
        o.step(visibility=torch.ones(4, dtype=torch.bool)) if o is opt else o.step()
    before = {k: v.clone() for k, v in opt.state[w].items() if k != "step"}
    w0, r0 = w.detach().clone(), ref.detach().clone()
    mask = torch.tensor([True, False, True, False])
    for p, o in ((w, opt), (ref, adam)):
        p.grad = torch.where(mask[:, None], torch.full((4, 2), 0.5, dtype=D), torch.zeros(4, 2, dtype=D))
        o.step(visibility=mask) if o is opt else o.step()
    st = opt.state[w]
    for k in ("exp_avg", "exp_avg_sq", "count"):
        assert torch.equal(st[k][~mask], before[k][~mask]), k
    assert torch.equal(w.detach()[~mask], w0[~mask])
    assert (ref.detach()[~mask] - r0[~mask]).abs().min() > 1e-3   # the implicit update
    assert st["count"].tolist() == [2.0, 1.0, 2.0, 1.0]


def test_ssu_equals_adam_on_each_rows_compressed_subsequence():
    n, steps, lr = 5, 30, 0.05
    masks, grads = _masks(steps, n), _grads(steps, n)
    w = torch.nn.Parameter(torch.zeros(n, 2, dtype=D))
    opt = UpdateMixtureAdam([w], lr=lr, eps=1e-8)
    for m, g in zip(masks, grads, strict=True):
        w.grad = g
        opt.step(visibility=m)
    for i in range(n):
        r = torch.nn.Parameter(torch.zeros(2, dtype=D))
        a = torch.optim.Adam([r], lr=lr, eps=1e-8)
        for m, g in zip(masks, grads, strict=True):
            if m[i]:
                r.grad = g[i].clone()
                a.step()
        torch.testing.assert_close(w.detach()[i], r.detach(), rtol=1e-12, atol=1e-14)


def test_pure_update_equals_the_class():
    n, steps = 6, 12
    masks, grads = _masks(steps, n, seed=4), _grads(steps, n, seed=5)
    w = torch.nn.Parameter(torch.zeros(n, 2, dtype=D))
    opt = UpdateMixtureAdam([w], lr=0.1, cc=1e-2)
    p, s = torch.zeros(n, 2, dtype=D), RowState(torch.zeros(n, 2, dtype=D), torch.zeros(n, 2, dtype=D),
                                                torch.zeros(n, dtype=D))
    for t, (m, g) in enumerate(zip(masks, grads, strict=True), start=1):
        w.grad = g
        opt.step(visibility=m)
        p, s = mixture_adam_update(p, g, s, m, lr=0.1, cc=1e-2, step=t)
    torch.testing.assert_close(w.detach(), p, rtol=0, atol=0)
    torch.testing.assert_close(opt.state[w]["count"], s.count)



def test_old_name_of_the_pure_update_warns_and_delegates():
    """``update_mixture_adam_update`` (before December 2026) is a deprecated alias for one release."""
    import optzoo.dynamic_gs as dgs

    assert "update_mixture_adam_update" not in dgs.__all__
    p, g = torch.zeros(3, 1, dtype=D), torch.ones(3, 1, dtype=D)
    s = RowState(torch.zeros(3, 1, dtype=D), torch.zeros(3, 1, dtype=D), torch.zeros(3, dtype=D))
    m = torch.tensor([True, False, True])
    new = mixture_adam_update(p, g, s, m, lr=0.1)
    with pytest.warns(FutureWarning, match="^update_mixture_adam_update was renamed to mixture_adam_update"):
        old = dgs.update_mixture_adam_update(p, g, s, m, lr=0.1)
    assert torch.equal(new[0], old[0]) and torch.equal(new[1].count, old[1].count)


def test_dense_cc_zero_is_torch_adam():
    grads = _grads(15, 3)
    w = torch.nn.Parameter(torch.ones(3, 2, dtype=D))
    r = torch.nn.Parameter(torch.ones(3, 2, dtype=D))
    o1 = UpdateMixtureAdam([w], lr=0.01, sparse=False, eps=1e-15)
    o2 = torch.optim.Adam([r], lr=0.01, eps=1e-15)
    for g in grads:
        w.grad, r.grad = g.clone(), g.clone()
        o1.step()
        o2.step()
    torch.testing.assert_close(w, r, rtol=1e-12, atol=1e-14)


def test_cc_large_constant_is_ema_momentum_sgd():
    grads, b1, lr_p, c = _grads(20, 3), 0.9, 0.01, 1e9
    w = torch.nn.Parameter(torch.ones(3, 2, dtype=D))
    r = torch.nn.Parameter(torch.ones(3, 2, dtype=D))
    o1 = UpdateMixtureAdam([w], lr=lr_p * c, cc=c, sparse=False, bias_correction="none", betas=(b1, 0.999))
    o2 = torch.optim.SGD([r], lr=lr_p * (1 - b1), momentum=b1, dampening=0.0)
    for g in grads:
        w.grad, r.grad = g.clone(), g.clone()
        o1.step()
        o2.step()
    torch.testing.assert_close(w, r, rtol=1e-7, atol=1e-9)


def test_cc_step_bound_linear_and_scale_invariant_regimes():
    def first_step(scale, cc):
        w = torch.nn.Parameter(torch.zeros(4, 1, dtype=D))
        opt = UpdateMixtureAdam([w], lr=1.0, cc=cc, eps=0.0)
        w.grad = scale * torch.tensor([[1.0], [-2.0], [0.5], [3.0]], dtype=D)
        opt.step(visibility=torch.ones(4, dtype=torch.bool))
        return -w.detach().squeeze(1), opt.state[w]["exp_avg"].squeeze(1) / 0.1  # m_hat at k = 1

    step, mhat = first_step(1.0, 0.7)
    assert bool((step.abs() <= mhat.abs() / 0.7 + 1e-15).all())
    small1, _ = first_step(1e-6, 1.0)
    small2, _ = first_step(2e-6, 1.0)
    torch.testing.assert_close(small2, 2 * small1, rtol=1e-5, atol=0)      # linear when sqrt(v) << c
    big1, _ = first_step(1e6, 1.0)
    big2, _ = first_step(2e6, 1.0)
    torch.testing.assert_close(big2, big1, rtol=1e-5, atol=0)             # scale-free when sqrt(v) >> c


def test_over_scaling_of_tiny_gradients():
    def run(cc):
        w = torch.nn.Parameter(torch.zeros(2, 1, dtype=D))
        opt = UpdateMixtureAdam([w], lr=1e-2, cc=cc)
        for _ in range(10):
            w.grad = torch.full((2, 1), 1e-9, dtype=D)
            opt.step(visibility=torch.ones(2, dtype=torch.bool))
        return float(-w.detach()[0, 0]) / 10

    assert run(0.0) == pytest.approx(1e-2, rel=1e-5)             # Adam: +-lr whatever |g| is
    assert run(1e-3) == pytest.approx(1e-2 * 1e-9 / 1e-3, rel=1e-3)


def test_restate_rescales_exactly_floor_rn_rows_reproducibly():
    def go(seed):
        w = torch.nn.Parameter(torch.zeros(10, 2, dtype=D))
        rs = RestateConfig(every=2, start=2, end=100, ratio=(0.35, 0.35), alpha_m=0.2, alpha_v=0.04)
        opt = UpdateMixtureAdam([w], lr=0.1, restate=rs, seed=seed)
        w.grad = torch.ones(10, 2, dtype=D)
        opt.step(visibility=torch.ones(10, dtype=torch.bool))
        m1 = opt.state[w]["exp_avg"].clone()
        v1 = opt.state[w]["exp_avg_sq"].clone()
        opt.step(visibility=torch.zeros(10, dtype=torch.bool))   # step 2: nothing visible, RSR fires
        return opt.state[w]["exp_avg"] / m1, opt.state[w]["exp_avg_sq"] / v1

    rm, rv = go(3)
    hit = (rm[:, 0] != 1)
    assert int(hit.sum()) == 3                                   # floor(0.35 * 10)
    torch.testing.assert_close(rm[hit], torch.full((3, 2), 0.2, dtype=D))
    torch.testing.assert_close(rv[hit], torch.full((3, 2), 0.04, dtype=D))
    assert bool((rm[~hit] == 1).all() and (rv[~hit] == 1).all())
    rm2, _ = go(3)
    assert torch.equal(rm, rm2)
    rm3, _ = go(4)
    assert not torch.equal(rm, rm3)


def test_dar_term_is_clipped_and_leaves_moments_alone():
    g = _grads(5, 6, d=1, seed=9)
    runs = []
    for reg in (None, RegSpec("opacity_l1", weight=50.0, clip=10.0)):
        w = torch.nn.Parameter(torch.zeros(6, 1, dtype=D))
        opt = UpdateMixtureAdam([w], lr=0.01, decoupled_reg=reg)
        deltas = []
        for gt in g:
            before = w.detach().clone()
            w.grad = gt
            opt.step(visibility=torch.ones(6, dtype=torch.bool))
            deltas.append(w.detach() - before)
        runs.append((deltas, opt.state[w]["exp_avg"].clone(), opt.state[w]["exp_avg_sq"].clone()))
    (d0, m0, v0), (d1, m1, v1) = runs
    assert torch.equal(m0, m1) and torch.equal(v0, v1)
    for a, b in zip(d0, d1, strict=True):
        extra = (a - b) / 0.01                                    # DAR pushes the logit down
        assert bool((extra >= 0).all()) and bool((extra <= 10.0 + 1e-9).all())
    assert any(bool((((a - b) / 0.01) > 9.99).any()) for a, b in zip(d0, d1, strict=True))


def test_saa_mean_of_visited_iterates_and_mixing_limits():
    n, steps = 5, 12
    masks = _masks(steps, n, p=0.5, seed=7)
    vals = _grads(steps, n, d=1, seed=8)
    w = torch.nn.Parameter(torch.zeros(n, 1, dtype=D))
    saa = StochasticAttributeAveraging([w], start=1, every=1000, prob=0.0)
    for m, v in zip(masks, vals, strict=True):
        with torch.no_grad():
            w.copy_(v)
        saa.step(visibility=m)
        assert torch.equal(w.detach(), v)                          # prob = 0: a no-op on theta
    st = saa.state[w]
    for i in range(n):
        seen = [v[i] for m, v in zip(masks, vals, strict=True) if m[i]]
        if seen:
            torch.testing.assert_close(st["avg"][i], torch.stack(seen).mean(0))
            assert st["n"][i] == len(seen)
    saa.param_groups[0].update(every=1, prob=1.0, mix=1.0)
    with torch.no_grad():
        w.copy_(vals[0])
    saa.step(visibility=torch.zeros(n, dtype=torch.bool))
    visited = st["n"] > 0
    torch.testing.assert_close(w.detach()[visited], st["avg"][visited])   # p = 1, w = 1: theta = mean


def test_saa_mixing_expectation_monte_carlo():
    reps, n, p, w_mix = 4000, 1, 0.3, 0.5
    w = torch.nn.Parameter(torch.zeros(reps, n, dtype=D))
    saa = StochasticAttributeAveraging([w], start=1, every=2, prob=p, mix=w_mix, seed=1)
    for val in (0.0, 2.0):
        with torch.no_grad():
            w.fill_(val)
        saa.step()
    mean_bar = 1.0                                                  # mean of {0, 2}
    expected = (1 - p * w_mix) * 2.0 + p * w_mix * mean_bar
    assert float(w.mean()) == pytest.approx(expected, abs=4 * (2 - mean_bar) * w_mix * (p * (1 - p) / reps) ** 0.5)


def test_masked_adam_is_selective_adam_semantics_and_matches_no_bias_correction():
    n, steps = 6, 20
    masks, grads = _masks(steps, n, seed=2), _grads(steps, n, seed=3)
    a = torch.nn.Parameter(torch.zeros(n, 2, dtype=D))
    b = torch.nn.Parameter(torch.zeros(n, 2, dtype=D))
    o1 = MaskedAdam([a], lr=0.05)
    o2 = UpdateMixtureAdam([b], lr=0.05, bias_correction="none")
    for m, g in zip(masks, grads, strict=True):
        a.grad, b.grad = g.clone(), g.clone()
        o1.step(visibility=m)
        o2.step(visibility=m)
    torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-15)
    # the first visible step without bias correction is lr * 0.1 / sqrt(0.001) * sign(g)
    c = torch.nn.Parameter(torch.zeros(1, 1, dtype=D))
    o = MaskedAdam([c], lr=1.0)
    c.grad = torch.ones(1, 1, dtype=D)
    o.step(visibility=torch.ones(1, dtype=torch.bool))
    assert float(-c) == pytest.approx(0.1 / 0.001 ** 0.5, rel=1e-9)


def test_global_bias_correction_matches_torch_sparse_adam():
    n, steps = 6, 15
    masks, grads = _masks(steps, n, seed=5), _grads(steps, n, seed=6)
    a = torch.nn.Parameter(torch.zeros(n, 2, dtype=D))
    b = torch.nn.Parameter(torch.zeros(n, 2, dtype=D))
    o1 = torch.optim.SparseAdam([a], lr=0.05, eps=1e-15)
    o2 = UpdateMixtureAdam([b], lr=0.05, bias_correction="global")
    for m, g in zip(masks, grads, strict=True):
        a.grad, b.grad = g.clone(), g.clone()
        sparse_row_grad(a, m)
        o1.step()
        o2.step(visibility=m)
    torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="gsplat SelectiveAdam is a CUDA kernel")
def test_masked_adam_equals_gsplat_selective_adam_on_cuda():  # pragma: no cover - GPU only
    gsplat_opt = pytest.importorskip("gsplat.optimizers")
    n = 64
    masks, grads = _masks(10, n), _grads(10, n)
    a = torch.nn.Parameter(torch.zeros(n, 2, device="cuda"))
    b = torch.nn.Parameter(torch.zeros(n, 2, device="cuda"))
    o1 = gsplat_opt.SelectiveAdam([a], eps=1e-15, betas=(0.9, 0.999))
    o2 = MaskedAdam([b], lr=1e-3)
    for m, g in zip(masks, grads, strict=True):
        a.grad, b.grad = g.float().cuda(), g.float().cuda()
        o1.step(m.cuda(), n)
        o2.step(visibility=m.cuda())
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def _surgery(opt, p, keep, n_new):
    """gsplat-style: keep rows ``keep`` then append ``n_new`` zero rows, for every per-row
    state tensor (all but "step"), as gsplat's _update_param_with_optimizer does."""
    new = torch.nn.Parameter(torch.cat([p.detach()[keep], torch.zeros((n_new,) + p.shape[1:], dtype=p.dtype)]))
    st = opt.state.pop(p)
    for k, v in st.items():
        if k != "step":
            st[k] = torch.cat([v[keep], torch.zeros((n_new,) + v.shape[1:], dtype=v.dtype)])
    opt.param_groups[0]["params"] = [new]
    opt.state[new] = st
    return new


def test_state_surgery_keeps_rows_aligned_and_new_rows_fresh():
    w = torch.nn.Parameter(torch.zeros(5, 2, dtype=D))
    opt = UpdateMixtureAdam([w], lr=0.1)
    for m, g in zip(_masks(6, 5, p=0.7), _grads(6, 5), strict=True):
        w.grad = g
        opt.step(visibility=m)
    keep = torch.tensor([4, 0, 2])
    old = {k: v[keep].clone() for k, v in opt.state[w].items() if k != "step"}
    w2 = _surgery(opt, w, keep, 2)
    st = opt.state[w2]
    for k, v in old.items():
        assert torch.equal(st[k][:3], v)
    assert st["count"][3:].tolist() == [0.0, 0.0]
    w2.grad = torch.ones(5, 2, dtype=D)
    before = w2.detach().clone()
    opt.step(visibility=torch.tensor([False, False, False, True, True]))
    torch.testing.assert_close(w2.detach()[3:] - before[3:], torch.full((2, 2), -0.1, dtype=D))  # Adam's first step
    assert torch.equal(w2.detach()[:3], before[:3])


@pytest.mark.parametrize("kw", [dict(), dict(bias_correction="global"), dict(bias_correction="none"),
                                dict(cc=0.05), dict(cc=0.05, denom="max"), dict(cc_rel=1.0),
                                dict(restate=RestateConfig(every=20, start=20, end=300, switch=150))])
def test_masked_quadratic_converges_under_every_variant(kw):
    n = 12
    target = torch.linspace(-1, 1, n, dtype=D)[:, None]
    w = torch.nn.Parameter(torch.zeros(n, 1, dtype=D))
    opt = UpdateMixtureAdam([w], lr=0.1, **kw)
    g = torch.Generator().manual_seed(0)
    for t in range(600):
        for gr in opt.param_groups:
            gr["lr"] = 0.1 * 0.01 ** (t / 600)
        m = torch.rand(n, generator=g) < 0.3
        w.grad = (w.detach() - target)
        opt.step(visibility=m)
    assert (w.detach() - target).abs().max() < 2e-2


def test_make_optimizers_one_group_per_attribute():
    sp = {"means": torch.nn.Parameter(torch.zeros(3, 3)), "colors": torch.nn.Parameter(torch.zeros(3, 3))}
    opts = make_optimizers(sp, {"means": 1e-3, "colors": 1e-2}, per_name={"colors": {"cc": 1e-3}})
    assert set(opts) == {"means", "colors"}
    assert opts["colors"].param_groups[0]["cc"] == 1e-3 and opts["means"].param_groups[0]["cc"] == 0.0
    assert len(opts["means"].param_groups) == 1 and len(opts["means"].param_groups[0]["params"]) == 1
    with pytest.raises(ValueError, match=r"'lrs' argument of make_optimizers must be keys among"):
        make_optimizers(sp, {"sh0": 1e-3})


def test_state_dict_round_trip_continues_rsr_draws():
    def fresh(seed):
        w = torch.nn.Parameter(torch.ones(8, 1, dtype=D))
        return w, UpdateMixtureAdam([w], lr=0.1, seed=seed,
                                    restate=RestateConfig(every=1, start=1, end=99, ratio=(0.5, 0.5)))

    w, opt = fresh(1)
    masks, grads = _masks(10, 8), _grads(10, 8, d=1)
    for m, g in zip(masks[:5], grads[:5], strict=True):
        w.grad = g
        opt.step(visibility=m)
    sd = copy.deepcopy(opt.state_dict())
    w2, opt2 = fresh(2)
    with torch.no_grad():
        w2.copy_(w)
    opt2.load_state_dict(sd)
    for m, g in zip(masks[5:], grads[5:], strict=True):
        w.grad, w2.grad = g.clone(), g.clone()
        opt.step(visibility=m)
        opt2.step(visibility=m)
    assert torch.equal(w, w2)
