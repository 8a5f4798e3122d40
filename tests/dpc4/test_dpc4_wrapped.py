"""DPC4 / DPSGD as torch optimizers in Opacus' shape: checkpoints carry the DP state, any wrapped
optimizer steps on the private gradient, the SGD case equals the former behaviour, empty Poisson
batches are steps, and the arguments that used to be ignored or unchecked are refused."""

import io
import warnings

import pytest
import torch

from optzoo.dpc4 import (
    DPC4,
    DPSGD,
    PoissonLoader,
    PrivacyBudgetExceeded,
    PrivacyLedger,
    ShiftedDecay,
    calibrate,
    clip_rows,
    dpc4_init,
    dpc4_update,
    dpsgd_update,
    per_sample_grads,
)

torch.set_num_threads(1)
N = 64
X = torch.randn(N, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
Y = torch.randint(0, 3, (N,), generator=torch.Generator().manual_seed(1))
Q, B = 0.25, 16


def model_fn(seed=0):
    torch.manual_seed(seed)  # test-only: the library never seeds globally
    return torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()


def loss_fn(out, y):
    return torch.nn.functional.cross_entropy(out, y)


def make(kind, model, wrap=None, ledger=None, generator=0):
    kw = dict(sample_rate=Q, expected_batch_size=B, noise_multiplier=1.0, generator=generator, ledger=ledger)
    params = model.parameters()
    if wrap == "adam":
        params, lr = torch.optim.Adam(model.parameters(), lr=0.05), None
    elif wrap == "momentum":
        params, lr = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9), None
    else:
        lr = 0.5
    if kind == "dpsgd":
        return DPSGD(params, lr, max_grad_norm=0.5, **kw)
    kw["clip_schedule"] = ShiftedDecay()  # the references below use its decaying thresholds
    if kind == "anchor":
        return DPC4(params, lr, num_records=N, **kw)
    return DPC4(params, lr, memory="ef", feedback_noise_multiplier=20.0, **kw)


def batches(steps, seed=3):
    return list(PoissonLoader(N, sample_rate=Q, steps=steps, seed=seed))


def run(opt, model, idxs):
    for idx in idxs:
        per_sample_grads(model, loss_fn, X[idx], Y[idx])
        opt.step(indices=idx)


def roundtrip(sd):
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    return torch.load(buf)  # weights_only: the checkpoint holds tensors and plain Python only


@pytest.mark.parametrize("wrap", [None, "adam"])
@pytest.mark.parametrize("kind", ["dpsgd", "anchor", "ef"])
def test_resumed_run_equals_uninterrupted_and_stops_at_budget(kind, wrap):
    """10 steps straight vs 5 steps, checkpoint, fresh model + optimizer, 5 steps: identical
    parameters, ledger and epsilon; the budget (exactly 10 steps' worth) stops both at step 11."""
    idxs = batches(11)
    mp = model_fn()
    probe = make(kind, mp)
    run(probe, mp, idxs[:10])
    budget = probe.ledger.epsilon()

    m1 = model_fn()
    o1 = make(kind, m1, wrap, ledger=PrivacyLedger(delta=1e-5, epsilon_budget=budget, cross_check=None))
    run(o1, m1, idxs[:10])

    m2 = model_fn()
    o2 = make(kind, m2, wrap, ledger=PrivacyLedger(delta=1e-5, epsilon_budget=budget, cross_check=None))
    run(o2, m2, idxs[:5])
    ckpt = roundtrip({"model": m2.state_dict(), "opt": o2.state_dict()})
    assert ckpt["opt"]["privacy"]["step"] == 5 and ckpt["opt"]["privacy"]["ledger"]["epsilon_budget"] == budget
    m3 = model_fn(seed=99)  # fresh weights and a fresh, differently seeded optimizer
    o3 = make(kind, m3, wrap, ledger=PrivacyLedger(delta=1e-5, cross_check=None), generator=12345)
    m3.load_state_dict(ckpt["model"])
    o3.load_state_dict(ckpt["opt"])
    assert o3.t == 5 and o3.ledger.steps == 5 and o3.ledger.epsilon() == o2.ledger.epsilon() > 0
    run(o3, m3, idxs[5:10])

    for p1, p3 in zip(m1.parameters(), m3.parameters(), strict=True):
        assert torch.equal(p1, p3)
    assert o3.ledger.history == o1.ledger.history and o3.ledger.epsilon() == o1.ledger.epsilon()
    assert o3.ledger.epsilon_budget == budget  # the budget came with the checkpoint
    for o, m in ((o1, m1), (o3, m3)):
        per_sample_grads(m, loss_fn, X[idxs[10]], Y[idxs[10]])
        before = [p.detach().clone() for p in m.parameters()]
        with pytest.raises(PrivacyBudgetExceeded):
            o.step(indices=idxs[10])
        assert all(torch.equal(b, p) for b, p in zip(before, m.parameters(), strict=True))


def test_state_dict_carries_the_dp_state():
    """Was {'state': {}, 'param_groups': [{'lr': 0.1}]} after five steps."""
    m = model_fn()
    opt = make("anchor", m)
    run(opt, m, batches(5))
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups", "optimizer", "privacy"}
    assert sd["privacy"]["step"] == 5 and sd["privacy"]["ledger"]["history"]
    assert isinstance(sd["privacy"]["generator"], torch.Tensor)
    p0 = next(m.parameters())
    assert opt.state[p0]["anchors"].shape == (N, *p0.shape) and opt.state[p0]["memory"].shape == p0.shape
    assert sd["state"][0]["anchors"].shape == (N, *p0.shape)
    assert sd["param_groups"][0]["lr"] == 0.5
    # a snapshot: later steps do not change it
    saved = sd["state"][0]["anchors"].clone()
    run(opt, m, batches(2, seed=7))
    assert torch.equal(sd["state"][0]["anchors"], saved)


def test_load_state_dict_refuses_other_settings():
    m = model_fn()
    opt = make("anchor", m)
    run(opt, m, batches(2))
    sd = opt.state_dict()
    other = DPC4(model_fn().parameters(), lr=0.5, sample_rate=0.125, expected_batch_size=8,
                 noise_multiplier=1.0, num_records=N)
    with pytest.raises(ValueError, match=r"'state_dict' argument of DPC4.load_state_dict .*sample_rate=0.125"):
        other.load_state_dict(sd)
    with pytest.raises(ValueError, match="'state_dict' argument of DPC4.load_state_dict"):
        other.load_state_dict({"state": {}, "param_groups": []})


def _old_step(kind, params, state, idx, t, gen, lr):
    """The former optimizers' step: concatenate the per-sample gradients, one flat pure update,
    x <- x - lr u written straight into the parameters."""
    g = torch.cat([p.grad_sample.reshape(len(idx), -1) for p in params], dim=1)
    if kind == "dpsgd":
        u, _ = dpsgd_update(g, expected_batch_size=B, sample_rate=Q, clip=0.5, noise_multiplier=1.0,
                            generator=gen)
    else:
        c1, c2 = 1.0 / (1 + t) ** 0.5, 1.0 / (1 + t) ** 0.5 + 0.5
        u, state, _ = dpc4_update(g, state, indices=idx, expected_batch_size=B, sample_rate=Q, clip1=c1,
                                  clip2=c2, noise_multiplier=1.0,
                                  feedback_noise_multiplier=20.0 if kind == "ef" else None,
                                  generator=gen, inplace=True)
    off = 0
    with torch.no_grad():
        for p in params:
            p.add_(u[off:off + p.numel()].view_as(p), alpha=-lr)
            off += p.numel()
    return state


@pytest.mark.parametrize("kind", ["dpsgd", "anchor", "ef"])
def test_sgd_case_equals_the_former_optimizer(kind):
    m_new, m_old = model_fn(), model_fn()
    opt = make(kind, m_new)
    params = list(m_old.parameters())
    d = sum(p.numel() for p in params)
    state = dpc4_init(d, memory="ef" if kind == "ef" else "anchor", num_records=N, dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    for t, idx in enumerate(batches(8)):
        per_sample_grads(m_new, loss_fn, X[idx], Y[idx])
        opt.step(indices=idx)
        per_sample_grads(m_old, loss_fn, X[idx], Y[idx])
        state = _old_step(kind, params, state, idx, t, gen, 0.5)
    for p1, p2 in zip(m_new.parameters(), m_old.parameters(), strict=True):
        # per-parameter norms combined vs one flat norm: equal up to float64 rounding
        torch.testing.assert_close(p1, p2, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("wrap", ["adam", "momentum"])
@pytest.mark.parametrize("kind", ["dpsgd", "ef"])
def test_wrapped_optimizer_steps_on_the_private_gradient(kind, wrap):
    """The private gradient lands in p.grad and the wrapped optimizer steps: compare with the
    same torch optimizer fed, by hand, the pure update's output."""
    m1, m2 = model_fn(), model_fn()
    opt = make(kind, m1, wrap)
    ref = (torch.optim.Adam(m2.parameters(), lr=0.05) if wrap == "adam"
           else torch.optim.SGD(m2.parameters(), lr=0.2, momentum=0.9))
    params = list(m2.parameters())
    state = dpc4_init(sum(p.numel() for p in params), memory="ef", dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    for t, idx in enumerate(batches(6)):
        per_sample_grads(m1, loss_fn, X[idx], Y[idx])
        opt.step(indices=idx)
        per_sample_grads(m2, loss_fn, X[idx], Y[idx])
        g = [p.grad_sample.reshape(len(idx), -1) for p in params]
        if kind == "dpsgd":
            u, _ = dpsgd_update(g, expected_batch_size=B, sample_rate=Q, clip=0.5, noise_multiplier=1.0,
                                generator=gen)
        else:
            c1 = 1.0 / (1 + t) ** 0.5
            u, state, _ = dpc4_update(g, state, indices=idx, expected_batch_size=B, sample_rate=Q, clip1=c1,
                                      clip2=c1 + 0.5, noise_multiplier=1.0, feedback_noise_multiplier=20.0,
                                      generator=gen)
        for p, uk in zip(params, u, strict=True):
            p.grad = uk.view_as(p).clone()
        ref.step()
    for p1, p2 in zip(m1.parameters(), m2.parameters(), strict=True):
        torch.testing.assert_close(p1, p2, rtol=1e-12, atol=1e-12)
    assert isinstance(opt.original_optimizer, type(ref))
    assert opt.param_groups is opt.original_optimizer.param_groups


def test_dpsgd_wrapping_adam_matches_opacus():
    from opacus.optimizers import DPOptimizer

    m1, m2 = model_fn(), model_fn()
    z, C = 1e-12, 0.3
    o1 = DPSGD(torch.optim.Adam(m1.parameters(), lr=0.05), sample_rate=Q, expected_batch_size=B,
               noise_multiplier=z, max_grad_norm=C, generator=0)
    o2 = DPOptimizer(torch.optim.Adam(m2.parameters(), lr=0.05), noise_multiplier=z, max_grad_norm=C,
                     expected_batch_size=B)
    for idx in batches(4):
        for m in (m1, m2):
            per_sample_grads(m, loss_fn, X[idx], Y[idx])
        for p in m2.parameters():
            p.grad = p.grad_sample.sum(0)
        o1.step()
        o2.step()
        o2.zero_grad()
    for p1, p2 in zip(m1.parameters(), m2.parameters(), strict=True):
        torch.testing.assert_close(p1, p2, rtol=1e-5, atol=1e-6)


def test_lr_scheduler_reaches_the_wrapped_optimizer():
    m = model_fn()
    opt = make("dpsgd", m, "momentum")
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    run(opt, m, batches(1))
    sched.step()
    assert opt.original_optimizer.param_groups[0]["lr"] == pytest.approx(0.1)


@pytest.mark.parametrize("kind", ["dpsgd", "anchor", "ef"])
def test_docs_loop_with_empty_poisson_batches(kind):
    """q = 0.02, n = 100: about one batch in eight is empty; the loop used to die at step 20
    ("cannot reshape tensor of 0 elements"). An empty batch is a step: noise released, charged."""
    n, q, T = 100, 0.02, 100
    Xs = torch.randn(n, 3, generator=torch.Generator().manual_seed(0))
    ys = torch.zeros(n)
    model = torch.nn.Linear(3, 1)
    kw = dict(sample_rate=q, expected_batch_size=2, noise_multiplier=1.0, generator=0)
    opt = (DPSGD(model.parameters(), lr=0.1, **kw) if kind == "dpsgd" else
           DPC4(model.parameters(), lr=0.1, num_records=n, **kw) if kind == "anchor" else
           DPC4(model.parameters(), lr=0.1, memory="ef", feedback_noise_multiplier=5.0, **kw))
    loss = lambda out, yb: ((out.squeeze(-1) - yb) ** 2).mean()  # noqa: E731
    empty = 0
    for idx in PoissonLoader(n, sample_rate=q, steps=T, seed=0):
        per_sample_grads(model, loss, Xs[idx], ys[idx])
        before = [p.detach().clone() for p in model.parameters()]
        opt.step(indices=idx)
        if len(idx) == 0:
            empty += 1
            assert not all(torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
    assert empty > 0 and opt.t == T and opt.ledger.steps == T
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_empty_batch_in_the_pure_updates():
    g = torch.zeros(0, 4)
    idx = torch.zeros(0, dtype=torch.long)
    u, info = dpsgd_update(g, expected_batch_size=2, sample_rate=0.1, clip=1.0, noise_multiplier=1.0,
                           generator=torch.Generator().manual_seed(0))
    assert u.shape == (4,) and torch.equal(info.sums[0], torch.zeros(4)) and (u != 0).all()
    for mem in ("anchor", "ef"):
        st = dpc4_init(4, memory=mem, num_records=10, dtype=torch.float32)
        u, st, _ = dpc4_update(g, st, indices=idx, expected_batch_size=2, sample_rate=0.1, clip1=1.0, clip2=1.5,
                               noise_multiplier=1.0, feedback_noise_multiplier=1.0,
                               generator=torch.Generator().manual_seed(0))
        assert u.shape == (4,) and (u != 0).all() and st.step == 1


def test_delta_with_a_noise_schedule_is_not_ignored():
    sched = calibrate(2.0, delta=1e-3, steps=6, sample_rate=Q)
    kw = dict(lr=0.1, sample_rate=Q, expected_batch_size=B, noise_multiplier=sched, num_records=N)
    with pytest.raises(ValueError, match=r"The 'delta' argument of DPC4 must be omitted or equal to the "
                                         r"delta the NoiseSchedule was calibrated for \(0.001\). Got 1e-05."):
        DPC4(model_fn().parameters(), delta=1e-5, **kw)
    assert DPC4(model_fn().parameters(), delta=1e-3, **kw).ledger.delta == 1e-3
    assert DPC4(model_fn().parameters(), **kw).ledger.delta == 1e-3
    with pytest.raises(ValueError, match=r"'sample_rate' argument of DPSGD must be equal to the sample_rate"):
        DPSGD(model_fn().parameters(), sample_rate=0.5, expected_batch_size=32, noise_multiplier=sched)
    with pytest.raises(ValueError, match=r"'delta' argument of DPSGD must be omitted or equal to the given "
                                         r"ledger's delta"):
        DPSGD(model_fn().parameters(), sample_rate=Q, expected_batch_size=B, noise_multiplier=1.0,
              ledger=PrivacyLedger(delta=1e-6), delta=1e-5)
    assert DPSGD(model_fn().parameters(), sample_rate=Q, expected_batch_size=B, noise_multiplier=1.0,
                 delta=1e-6).ledger.delta == 1e-6
    assert DPSGD(model_fn().parameters(), sample_rate=Q, expected_batch_size=B,
                 noise_multiplier=1.0).ledger.delta == 1e-5


def test_negative_clip_is_rejected():
    with pytest.raises(ValueError, match=r"The 'max_grad_norm' argument of DPSGD must be a finite real number "
                                         r"in \(0, inf\). Got -1.0."):
        DPSGD(model_fn().parameters(), sample_rate=Q, expected_batch_size=B, noise_multiplier=1.0,
              max_grad_norm=-1.0)
    with pytest.raises(ValueError, match="'max_grad_norm' argument of DPSGD must be positive finite thresholds"):
        DPSGD(model_fn().parameters(), sample_rate=Q, expected_batch_size=B, noise_multiplier=1.0,
              max_grad_norm=lambda t: -1.0)
    g = torch.randn(5, 3)
    with pytest.raises(ValueError, match=r"The 'clip' argument of dpsgd_update must be positive finite "
                                         r"clipping thresholds. Got -1.0."):
        dpsgd_update(g, expected_batch_size=5, sample_rate=1.0, clip=-1.0, noise_multiplier=1.0)
    with pytest.raises(ValueError, match=r"'clip1' argument of dpc4_update .* Got \[1.0, -0.5\]"):
        dpc4_update(g.expand(2, 5, 3), dpc4_init(3, memory="ef", batch_shape=(2,), dtype=torch.float32),
                    indices=None, expected_batch_size=5, sample_rate=1.0, clip1=torch.tensor([1.0, -0.5]),
                    clip2=1.0, noise_multiplier=1.0, feedback_noise_multiplier=1.0)
    with pytest.raises(ValueError, match="'clip2' argument of dpc4_update"):
        dpc4_update(g, dpc4_init(3, memory="ef", dtype=torch.float32), indices=None, expected_batch_size=5,
                    sample_rate=1.0, clip1=1.0, clip2=float("nan"), noise_multiplier=1.0,
                    feedback_noise_multiplier=1.0)
    with pytest.raises(ValueError, match="'c' argument of clip_rows"):
        clip_rows(g, -2.0)


def test_wrapping_arguments():
    m = model_fn()
    with pytest.raises(ValueError, match=r"The 'lr' argument of DPSGD must be None when wrapping an optimizer"):
        DPSGD(torch.optim.SGD(m.parameters(), lr=0.1), 0.1, sample_rate=Q, expected_batch_size=B,
              noise_multiplier=1.0)
    inner = DPSGD(m.parameters(), sample_rate=Q, expected_batch_size=B, noise_multiplier=1.0)
    assert inner.param_groups[0]["lr"] == 0.1  # the SGD default
    with pytest.raises(TypeError, match="'params' argument of DPC4 must be parameters or a non-private"):
        DPC4(inner, sample_rate=Q, expected_batch_size=B, noise_multiplier=1.0, num_records=N)
    from opacus.optimizers import DPOptimizer

    op = DPOptimizer(torch.optim.SGD(model_fn().parameters(), lr=0.1), noise_multiplier=1.0,
                     max_grad_norm=1.0, expected_batch_size=B)
    with pytest.raises(TypeError, match="Got .DPOptimizer."):
        DPSGD(op, sample_rate=Q, expected_batch_size=B, noise_multiplier=1.0)


def test_non_finite_gradients_charge_nothing():
    m = model_fn()
    opt = make("anchor", m)
    run(opt, m, batches(2))
    per_sample_grads(m, loss_fn, X[:3], Y[:3])
    next(m.parameters()).grad_sample[1, 0, 0] = float("inf")
    anchors = [opt.state[p]["anchors"].clone() for p in m.parameters()]
    gen = opt.generator.get_state()
    with pytest.raises(ValueError, match="finite values. Got NaN or inf"):
        opt.step(indices=torch.arange(3))
    assert opt.ledger.steps == 2 and opt.t == 2 and torch.equal(opt.generator.get_state(), gen)
    assert all(torch.equal(a, opt.state[p]["anchors"]) for a, p in zip(anchors, m.parameters(), strict=True))


def test_ledger_state_dict_round_trip():
    led = PrivacyLedger(delta=1e-5, epsilon_budget=3.0, cross_check=None)
    for _ in range(4):
        led.charge([(1.1, 0.05), (8.0, 1.0)], sensitivity=[1.0, 2.0], noise_std=[1.1, 16.0])
    fresh = PrivacyLedger(delta=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh.load_state_dict(roundtrip(led.state_dict()))
    assert fresh.history == led.history and fresh.report() == led.report()
    assert fresh.epsilon() == led.epsilon() and fresh.epsilon_budget == 3.0 and fresh.delta == 1e-5
    assert (fresh._rdp == led._rdp).all()
    with pytest.raises(ValueError, match="'state' argument of PrivacyLedger.load_state_dict"):
        fresh.load_state_dict({"delta": 1e-5})


def test_empty_batch_through_opacus_grad_sample_module():
    from opacus import GradSampleModule

    gsm = GradSampleModule(torch.nn.Linear(3, 2))
    opt = DPSGD(torch.optim.Adam(gsm.parameters(), lr=0.1), sample_rate=0.02, expected_batch_size=2,
                noise_multiplier=1.0, generator=0)
    before = [p.detach().clone() for p in gsm.parameters()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gsm(torch.zeros(0, 3)).sum().backward()  # grad_sample of shape (0, *p.shape)
    opt.step()
    assert opt.ledger.steps == 1
    assert not any(torch.equal(b, p) for b, p in zip(before, gsm.parameters(), strict=True))
