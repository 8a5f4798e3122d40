"""Pinned loss trajectories: a short retraining from the same seed reproduces the recorded one."""

import numpy as np
import pytest

from optzoo.tinylm import checkpoint_manifest
from optzoo.tinylm.train import RECIPES, train


@pytest.mark.parametrize("name,steps", [("toy", 30), ("icl", 6)])
def test_retraining_reproduces_the_recorded_loss_trajectory(name, steps):
    man = checkpoint_manifest(name)
    assert man["recipe"]["seed"] == RECIPES[name].seed
    got = train(name, steps=man["schedule_steps"], stop_at=steps, progress=False)
    want = man["loss_trajectory_first"][:steps]
    # Bit-identical on one machine; the tolerance allows other BLAS builds.
    np.testing.assert_allclose(got["loss_trajectory_first"], want, rtol=1e-4, atol=1e-5)


def test_train_bad_input():
    with pytest.raises(ValueError, match="'name' argument of train must be one of 'icl', 'toy'"):
        train("nope", stop_at=1)
    with pytest.raises(ValueError, match=r"'stop_at' argument of train must be an int in \[1, 5\]"):
        train("toy", steps=5, stop_at=6, progress=False)
