"""Load the committed tiny checkpoints: ``load_tiny_lm(NAME) -> (model, tokenizer)``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from optzoo._core.validation import check_type

__all__ = ["available_checkpoints", "checkpoint_manifest", "load_tiny_lm", "CHECKPOINT_DIR"]

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"


def available_checkpoints() -> list[str]:
    """Names of the checkpoints shipped with the package (folders holding a manifest)."""
    if not CHECKPOINT_DIR.is_dir():
        return []
    return sorted(p.name for p in CHECKPOINT_DIR.iterdir() if (p / "manifest.json").is_file())


def _folder(name: str, owner: str) -> Path:
    check_type("name", name, str, owner=owner, what="a checkpoint name (str)")
    known = available_checkpoints()
    if name not in known:
        raise ValueError(f"The 'name' argument of {owner} must be one of "
                         f"{', '.join(repr(k) for k in known)}. Got {name!r}.")
    return CHECKPOINT_DIR / name


def checkpoint_manifest(name: str) -> dict:
    """The manifest written by the training script (recipe, command, losses, eval, sha256)."""
    return json.loads((_folder(name, "checkpoint_manifest") / "manifest.json").read_text())


def load_tiny_lm(name: str, *, dtype=None, verify: bool = True):
    """``(model, tokenizer)`` of the committed checkpoint ``name``, in eval mode, fp32 by default.

    Weights are stored in fp16 and up-cast on load. With ``verify`` the weights' sha256 is
    checked against the manifest first (a corrupted or edited file raises ``RuntimeError``).

    >>> model, tok = load_tiny_lm("toy")
    >>> type(model).__name__, tok.eos_token
    ('GPT2LMHeadModel', '<eos>')
    """
    import torch
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    folder = _folder(name, "load_tiny_lm")
    if verify:
        want = checkpoint_manifest(name)["sha256"]["model.safetensors"]
        got = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
        if got != want:
            raise RuntimeError(f"checkpoint {name!r}: model.safetensors has sha256 {got}, "
                               f"the manifest records {want}; the file is corrupted or was "
                               f"replaced. Retrain with: python -m optzoo.tinylm.train {name}")
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype or torch.float32)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(folder)
    return model.eval(), tokenizer
