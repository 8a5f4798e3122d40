"""E3's pieces: the function-space tracking measure, the lr grids, the data streams."""

import math

import numpy as np
import pytest

from optzoo.zo_sgd.repro.training import (
    TrainConfig,
    batch_rows,
    cosine,
    lr_grid,
    make_stream,
    tracking_cosine,
)


def test_tracking_cosine_known_answers():
    rng = np.random.default_rng(0)
    z0 = rng.standard_normal((6, 2))
    dz = rng.standard_normal((6, 2))
    assert tracking_cosine(z0, z0 + dz, z0 + dz) == pytest.approx(1.0)  # identical updates
    assert tracking_cosine(z0, z0 + dz, z0 + 3.0 * dz) == pytest.approx(1.0)  # scale-free
    assert tracking_cosine(z0, z0 + dz, z0 - dz) == pytest.approx(-1.0)  # opposite updates
    e1, e2 = np.zeros((6, 2)), np.zeros((6, 2))
    e1[0, 0], e2[3, 1] = 1.0, 2.0
    assert tracking_cosine(z0, z0 + e1, z0 + e2) == pytest.approx(0.0)  # orthogonal updates
    a, b = np.array([1.0, 2.0, 2.0]), np.array([2.0, 0.0, 1.0])
    assert tracking_cosine(np.zeros(3), a, b) == pytest.approx(4.0 / (3.0 * math.sqrt(5.0)))
    assert tracking_cosine(z0, z0, z0 + dz) == 0.0  # no movement: no alignment
    assert math.isnan(cosine([np.nan, 1.0], [1.0, 1.0]))


def test_lr_grids_have_the_same_size_and_ratio():
    cfg = TrainConfig()
    grids = {m: lr_grid(cfg.low(m), cfg.grid_size, cfg.grid_ratio) for m in cfg.methods}
    for g in grids.values():
        assert len(g) == cfg.grid_size
        assert np.allclose(np.diff(np.log(g)), math.log(cfg.grid_ratio))


def test_streams_are_separate_and_eval_inputs_held_out():
    cfg = TrainConfig(pool_queries=256, heldout_inputs=8)
    tune, ev = make_stream(cfg, 90000, "tune"), make_stream(cfg, 90000, "eval")
    assert not np.array_equal(tune["ids"].numpy(), ev["ids"].numpy())
    for d in (tune, ev):
        ids = d["ids"].numpy()
        held = {tuple(r) for r in ids[d["eval_rows"]]}
        trained = {tuple(r) for r in ids[d["train_rows"]]}
        assert held and not held & trained  # no held-out prompt is ever a training prompt
        assert len(held) == len(d["eval_rows"]) == cfg.heldout_inputs
        # label-balanced held-out inputs, and the labels follow the stream's one rule
        assert d["y"][d["eval_rows"]].sum().item() == cfg.heldout_inputs // 2
        j, _, flip = d["rule"]
        x_j = (ids[:, 1 + j] - 5 - 2 * j) == 1  # <bos>, then the query's feature tokens
        assert np.array_equal(d["y"].numpy(), (x_j ^ bool(flip)).astype(int))
    b0, b1 = batch_rows(ev, 0, 4), batch_rows(ev, 0, 4)
    assert np.array_equal(b0, b1) and not np.array_equal(b0, batch_rows(ev, 1, 4))
    assert set(b0) <= set(ev["train_rows"].tolist())


def test_a_heldout_split_that_leaves_no_training_input_of_a_label_is_refused():
    with pytest.raises(ValueError, match="heldout_inputs"):
        make_stream(TrainConfig(heldout_inputs=64), 90000, "eval")
