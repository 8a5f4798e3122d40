"""Trainer behaviour: seeds, state_dict round trip, SHAC = RPO(M=1), Gymnasium adapter."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from optzoo.rpo import (
    LQR,
    RPO,
    SHAC,
    PendulumSwingUp,
    RPOConfig,
    as_gymnasium,
    evaluate,
    shac_config,
)

TINY = {"horizon": 4, "hidden": (8,), "critic_hidden": (8,), "critic_iterations": 2}


def _algo(cls=RPO, **kw):
    return cls(PendulumSwingUp(4, episode_length=10), (RPOConfig if cls is RPO else shac_config)(**{**TINY, **kw}))


def test_same_seed_same_run_and_different_seed_differs():
    a = _algo().train(64, seed=1)
    b = _algo().train(64, seed=1)
    c = _algo().train(64, seed=2)
    assert torch.equal(a.x, b.x) and a.fun == b.fun
    assert not torch.equal(a.x, c.x)
    assert a.status.value == "budget_used" and a.nfev == 64 and a.nit == 4


def test_state_dict_round_trip_continues_identically():
    snap = {}

    def cb(algo, rec):
        if rec["iteration"] == 3:
            snap["sd"] = algo.state_dict()

    full = _algo().train(4 * 4 * 7, seed=5, callback=cb)
    fresh = _algo()
    fresh.load_state_dict(snap["sd"])
    cont = fresh.train(4 * 4 * 7)
    assert torch.equal(full.x, cont.x)
    np.testing.assert_array_equal(full.history.as_arrays()["actor_loss"],
                                  cont.history.as_arrays()["actor_loss"])


def test_shac_is_rpo_with_one_epoch_and_no_regularisers():
    s = _algo(SHAC).train(48, seed=0)
    r = RPO(PendulumSwingUp(4, episode_length=10), shac_config(**TINY)).train(48, seed=0)
    assert torch.equal(s.x, r.x)
    assert SHAC(PendulumSwingUp(2)).config.epochs == 1


def test_history_and_metrics():
    res = _algo(epochs=3).train(4 * 4 * 5, seed=0)
    h = res.history.as_arrays()
    assert len(res.history) == 5 and h["env_steps"][-1] == 80
    assert np.all((h["in_band"] >= 0) & (h["in_band"] <= 1)) and np.all(h["kl"] >= 0)
    assert np.isfinite(h["episode_return"][-1])  # episodes of 10 steps finish every ~3 iterations


def test_evaluate_uses_the_mean_action_and_fixed_start_states():
    algo = _algo()
    algo.train(16, seed=0)
    env = PendulumSwingUp(3)
    a, b = evaluate(algo.policy(), env, seed=9), evaluate(algo.policy(), env, seed=9)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (3,) and np.all(a <= 0)


def test_gymnasium_adapter_passes_the_checker_and_matches_the_batched_env():
    pytest.importorskip("gymnasium")
    from gymnasium.utils.env_checker import check_env

    genv = as_gymnasium(PendulumSwingUp(1))
    check_env(genv, skip_render_check=True)
    obs, _ = genv.reset(seed=4)
    ref = PendulumSwingUp(1)
    o2 = ref.reset(seed=4)
    np.testing.assert_allclose(obs, o2[0].numpy(), rtol=1e-6)
    o, r, term, trunc, _ = genv.step(np.array([0.5], dtype=np.float32))
    _, r2, _, _ = ref.step(torch.tensor([[0.5]]))
    assert r == pytest.approx(float(r2[0]), rel=1e-6) and not term and not trunc


def test_lqr_optimal_gain_is_the_riccati_solution():
    env = LQR(2)
    K, P = env.optimal_gain(0.9)
    A, B = env.A.double().numpy(), env.B.double().numpy()
    Q, R = env.Q.double().numpy(), env.R.double().numpy()
    # Bellman: P = Q + K'RK + gamma (A - BK)' P (A - BK)
    Acl = A - B @ K
    np.testing.assert_allclose(P, Q + K.T @ R @ K + 0.9 * Acl.T @ P @ Acl, rtol=1e-8)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
def test_cuda_path_runs():
    algo = RPO(PendulumSwingUp(4, device="cuda"), RPOConfig(**TINY))
    res = algo.train(32, seed=0)
    assert res.success and res.x.device.type == "cuda"
