import json
import math

import numpy as np
import pytest
import torch

from optzoo._core.io import atomic_write_json, environment_manifest, read_json, to_jsonable
from optzoo._core.result import Result, Status
from optzoo._core.rng import derive_seed, np_rng, torch_generator


def test_atomic_write_round_trip_and_no_temp_left(tmp_path):
    obj = {"a": np.float32(1.5), "b": np.arange(3), "c": torch.tensor([1.0, 2.0]), "d": Status.CONVERGED,
           "e": float("nan")}
    path = atomic_write_json(tmp_path / "x" / "r.json", obj)
    back = read_json(path)
    assert back["a"] == 1.5 and back["b"] == [0, 1, 2] and back["c"] == [1.0, 2.0]
    assert back["d"] == "converged" and math.isnan(back["e"])
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]


def test_atomic_write_gives_the_umask_mode_not_mkstemps_0600(tmp_path):
    """December trial D17: result JSON files were written with mode 0600."""
    import os

    old = os.umask(0o022)
    try:
        path = atomic_write_json(tmp_path / "r.json", {"a": 1})
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_atomic_write_failure_keeps_old_file(tmp_path):
    path = atomic_write_json(tmp_path / "r.json", {"v": 1})
    with pytest.raises(TypeError):
        atomic_write_json(path, {"v": object()})
    assert read_json(path) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_to_jsonable_rejects_unknown():
    with pytest.raises(TypeError):
        to_jsonable(object())


def test_manifest_has_versions_and_is_json():
    m = environment_manifest()
    assert m["packages"]["numpy"] == np.__version__
    json.dumps(m)


def test_seeds_are_stable_and_independent():
    assert derive_seed(0, "a") == derive_seed(0, "a")
    assert derive_seed(0, "a") != derive_seed(0, "b") != derive_seed(1, "a")
    assert np.array_equal(np_rng(3).random(4), np_rng(3).random(4))
    state = torch.random.get_rng_state()
    t1 = torch.rand(3, generator=torch_generator(5, "x"))
    t2 = torch.rand(3, generator=torch_generator(5, "x"))
    assert torch.equal(t1, t2)
    assert torch.equal(state, torch.random.get_rng_state())  # global state untouched


def test_result_vocabulary():
    r = Result(x=[1, 2], fun=3.0, status=Status.CONVERGED, message="ok", nit=4, extra={"density": 0.5})
    assert r.success and r.density == 0.5 and str(r.status) == "converged"
    assert not Result(x=None, fun=0.0, status=Status.USER_LIMIT).success
    with pytest.raises(AttributeError):
        _ = r.nonexistent
    assert r.to_dict()["status"] == "converged"
