"""Committed checkpoints: load, match their manifest's sha256, reproduce their recorded numbers."""

import shutil

import pytest
import torch

from optzoo.tinylm import available_checkpoints, checkpoint_manifest, load_tiny_lm, loader


def test_the_expected_checkpoints_ship():
    assert {"icl", "toy"} <= set(available_checkpoints())


@pytest.mark.parametrize("name", ["icl", "toy"])
def test_checkpoint_loads_and_manifest_is_complete(name):
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

    model, tok = load_tiny_lm(name)  # verifies the sha256
    man = checkpoint_manifest(name)
    assert isinstance(model, PreTrainedModel) and isinstance(tok, PreTrainedTokenizerFast)
    assert model.dtype == torch.float32 and not model.training
    assert len(tok) == model.config.vocab_size
    for key in ("recipe", "command", "steps", "final_loss", "sha256", "versions", "eval"):
        assert key in man, key
    assert man["command"].startswith(f"python -m optzoo.tinylm.train {name}")
    assert (loader.CHECKPOINT_DIR / name / "model.safetensors").stat().st_size < 4_000_000


def test_icl_checkpoint_reproduces_its_recorded_accuracy():
    from optzoo.tinylm.icl_train import evaluate_icl

    model, _ = load_tiny_lm("icl")
    man = checkpoint_manifest("icl")
    data = man["recipe"]["data"]
    for key in ("check_pretrain_k16", "check_shifted_k16"):
        rec = man["eval"][key]
        got = evaluate_icl(model, family=rec["family"], k=rec["k"], n_tasks=rec["n_tasks"],
                           n_queries=rec["n_queries"], seed=rec["seed"],
                           n_features=data["n_features"], layout=data["layout"])
        # Same weights and data: only float summation order may differ.
        assert abs(got["icl"] - rec["icl"]) <= 1 / 64, key
        assert got["frequency"] == rec["frequency"]


def test_toy_checkpoint_reproduces_its_recorded_numbers():
    from optzoo.tinylm.toy_train import evaluate_toy

    model, _ = load_tiny_lm("toy")
    rec = checkpoint_manifest("toy")["eval"]["toy_k3"]
    got = evaluate_toy(model, n=rec["n"], seed=rec["seed"])
    for key in ("nll_per_token_clean", "nll_per_token_corrupted"):
        assert abs(got[key] - rec[key]) < 1e-3
    assert abs(got["prefers_clean"] - rec["prefers_clean"]) <= 0.005
    # The SFT model is close to the teacher and prefers clean responses.
    assert got["prefers_clean"] > 0.9
    assert got["nll_per_token_clean"] < rec["teacher_nll_per_token_clean"] + 0.3


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"'name' argument of load_tiny_lm must be one of "
                                         r".*'icl'.*'toy'.*Got 'gpt5'"):
        load_tiny_lm("gpt5")
    with pytest.raises(TypeError, match="'name' argument of load_tiny_lm"):
        load_tiny_lm(3)


def test_corrupted_weights_are_refused(tmp_path, monkeypatch):
    shutil.copytree(loader.CHECKPOINT_DIR / "toy", tmp_path / "toy")
    path = tmp_path / "toy" / "model.safetensors"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    monkeypatch.setattr(loader, "CHECKPOINT_DIR", tmp_path)
    with pytest.raises(RuntimeError, match="sha256 .* corrupted or was replaced"):
        load_tiny_lm("toy")
