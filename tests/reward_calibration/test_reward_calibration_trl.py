"""The TRL adapter against the installed TRL, the TRL parity, and the smoke reproduction."""

import warnings

import pytest
import torch

pytest.importorskip("trl")

from optzoo.repro.claim import NullProgress  # noqa: E402
from optzoo.reward_calibration import repro  # noqa: E402
from optzoo.reward_calibration.repro import toy  # noqa: E402
from optzoo.reward_calibration.trl_adapter import (  # noqa: E402
    RCDPOConfig,
    RCDPOTrainer,
    make_trl_trainer,
)

torch.set_num_threads(1)
warnings.filterwarnings("ignore", category=FutureWarning)


@pytest.fixture(scope="module")
def setup():
    ref, _ = toy.reference_model(0, sft_steps=50)
    train, _ = toy.make_data(0, k=1, n_train=6, n_eval=4)
    return ref, train


def _perturbed(ref, seed=1):
    import copy

    pol = copy.deepcopy(ref)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in pol.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    return pol


def test_trl_parity_dpo(setup):
    ref, train = setup
    res = toy.trl_parity(ref, train.pairs, seed=0)
    assert res["loss_abs_diff"] < 1e-5 and res["grad_rel_diff"] < 1e-5


def test_rc_trainer_same_loss_rescaled_gradient(setup):
    ref, train = setup
    pol = _perturbed(ref)
    base = make_trl_trainer(pol, train.pairs, rc=False, steps=1, batch=6, lr=1e-3, seed=0,
                            ref_model=ref)
    rc = make_trl_trainer(pol, train.pairs, rc=True, steps=1, batch=6, lr=1e-3, seed=0,
                          ref_model=ref, ema_beta=0.0)
    batch = next(iter(base.get_train_dataloader()))
    params = [p for p in rc.model.parameters() if p.requires_grad]
    l_rc = rc.compute_loss(rc.model.train(), batch)
    g_rc = torch.autograd.grad(l_rc, params)
    alpha = rc._rc_last["alpha"]
    assert rc._rc_last["applied"] and alpha != pytest.approx(1.0)
    l_base = base.compute_loss(base.model.train(), batch)
    assert float(l_rc) == pytest.approx(float(l_base), abs=1e-6)  # forward unchanged
    # Split TRL's DPO gradient into its chosen part A and rejected part B with our own forward.
    m = rc.model
    ids, n = batch["input_ids"], batch["input_ids"].shape[0] // 2
    z = toy.sequence_logps(m, ids)
    with torch.no_grad():
        zr = toy.sequence_logps(ref, ids)
    from optzoo.reward_calibration import incentives

    d_w, d_l = incentives(z[:n], z[n:], zr[:n], zr[n:], loss_type="dpo", beta=0.1)
    A = torch.autograd.grad((d_w * z[:n]).mean(), params, retain_graph=True)
    B = torch.autograd.grad((d_l * z[n:]).mean(), params)
    for g, a, b in zip(g_rc, A, B, strict=False):
        torch.testing.assert_close(g, -alpha * a + b / alpha, atol=1e-6, rtol=1e-4)


def test_rc_trainer_trains_and_is_noop_in_eval(setup):
    ref, train = setup
    tr = make_trl_trainer(ref, train.pairs, rc=True, steps=2, batch=3, lr=1e-3, seed=0)
    tr.train()
    assert tr.calibrator is not None and tr.calibrator.state["steps"] == 2
    steps = tr.calibrator.state["steps"]
    batch = next(iter(tr.get_train_dataloader()))
    tr.model.eval()
    with torch.no_grad():
        tr.compute_loss(tr.model, batch)
    assert tr.calibrator.state["steps"] == steps


def test_rc_config_errors():
    with pytest.raises(ValueError, match="'loss_type' argument of RCDPOConfig must be a single "
                                         "loss among 'sigmoid'"):
        RCDPOConfig(output_dir="/tmp/x", loss_type=["sigmoid", "sft"], report_to="none")
    with pytest.raises(ValueError, match="'rc_ema_beta' argument of RCDPOConfig"):
        RCDPOConfig(output_dir="/tmp/x", rc_ema_beta=1.5, report_to="none")
    with pytest.raises(ValueError, match="'rc_params' argument of RCDPOConfig"):
        RCDPOConfig(output_dir="/tmp/x", rc_params="embeddings", report_to="none")
    cfg = RCDPOConfig(output_dir="/tmp/x", loss_type=["sigmoid", "sft"], rc_enable=False,
                      report_to="none", use_cpu=True, bf16=False)
    assert cfg.loss_type == ["sigmoid", "sft"]
    assert issubclass(RCDPOTrainer, __import__("trl").DPOTrainer)


def test_smoke_reproduction(tmp_path):
    import dataclasses
    import json

    from optzoo.repro.evidence import Record, as_records
    from optzoo.repro.judging import judge_claims

    cfg = repro.SCALES["smoke"]
    assert 2 <= cfg.seeds <= 3 and repro.SCALES["quick"].seeds >= 5
    assert repro.SCALES["full"].seeds > repro.SCALES["quick"].seeds
    per_seed = [repro.run(cfg, s, NullProgress()) for s in range(cfg.seeds)]
    assert all(isinstance(r, Record) for seed in per_seed for r in seed)
    # JSON-clean (the runner stores it so)
    per_seed = [as_records(json.loads(json.dumps([dataclasses.asdict(r) for r in seed])))
                for seed in per_seed]
    verdicts = judge_claims(repro.CLAIMS, per_seed, scale="smoke", notes=repro.notes(per_seed))
    assert [v.claim for v in verdicts] == [c.id for c in repro.CLAIMS]
    assert [v.kind for v in verdicts] == [c.kind for c in repro.CLAIMS]
    by = {v.claim: v for v in verdicts}
    assert by["trl_parity"].verdict == "passed"
    assert by["band_exact"].verdict == "passed"
    for v in verdicts:  # every claim's evidence and its control's evidence are readable
        assert "could not be read" not in v.summary, v.summary
        if v.kind == "claim":
            assert v.control is not None and "could not be read" not in v.control.summary
    # the control arm differs only in calibration: its paired difference to itself is 0 and
    # it really differs from the RC arm
    seed0 = per_seed[0]
    rc = {(r.part, r.metric): r.value for r in seed0 if r.arm == "rc" and r.instance == "heldout"}
    base = {(r.part, r.metric): r.value for r in seed0 if r.arm == "base" and r.instance == "heldout"}
    assert set(rc) >= {(lt, m) for lt in repro.LOSSES for m in ("dz_w", "dz_l", "gold", "dz_w_late")}
    assert all(rc[k] != base[k] for k in rc if k[1] == "dz_w")
    assert any(r.metric == "trace_alpha" and r.arm == "rc" for r in seed0)
    assert not any(r.metric == "trace_alpha" and r.arm == "base" for r in seed0)
    paths = repro.figures(per_seed, tmp_path)
    assert paths and all(p.exists() for p in paths)
    assert set(repro.SCALES) >= {"smoke", "quick", "full"}


def test_toy_training_is_deterministic(setup):
    ref, _ = setup
    data = {1: toy.make_data(3, k=1, n_train=16, n_eval=8)}
    arms = [dict(loss_type="dpo", rc=True, k=1), dict(loss_type="ipo", rc=False, k=1)]
    a = toy.train_arms(ref, arms, data, steps=3, batch=4, lr=1e-3, seed=3)
    b = toy.train_arms(ref, arms, data, steps=3, batch=4, lr=1e-3, seed=3)
    assert [x["dz_w"] for x in a] == [x["dz_w"] for x in b]
    assert a[0]["trace"]["alpha"] == b[0]["trace"]["alpha"]
