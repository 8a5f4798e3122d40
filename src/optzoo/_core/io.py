"""Atomic JSON files and the environment manifest recorded with every result."""

from __future__ import annotations

import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_json", "environment_manifest", "read_json", "to_jsonable"]

_PACKAGES = (
    "optzoo", "numpy", "scipy", "torch", "networkx", "scikit-learn", "transformers", "trl",
    "peft", "opacus", "pot", "pymoo", "pyepo", "ray",
)


def to_jsonable(obj: Any) -> Any:
    """Plain JSON types from numpy/torch scalars and arrays, dataclasses, paths and enums.

    Non-finite floats are kept as floats: Python's ``json`` writes and reads them as ``NaN``
    and ``Infinity``, so a diverged run stays visible (and countable) in the results.
    """
    import dataclasses
    import enum

    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if isinstance(obj, enum.Enum):
        return to_jsonable(obj.value)
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(dataclasses.asdict(obj))
    if hasattr(obj, "detach") and hasattr(obj, "cpu"):  # torch tensor
        return to_jsonable(obj.detach().cpu().tolist())
    if hasattr(obj, "tolist"):  # numpy array or scalar
        return to_jsonable(obj.tolist())
    raise TypeError(f"cannot convert {type(obj).__name__} to JSON")


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as JSON so that readers see the old file or the new one, never half.

    A path ending in ``.gz`` is written compact and gzip-compressed, with no timestamp in the
    gzip header, so the same object always gives the same bytes (files committed to git)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            if path.suffix == ".gz":
                text = json.dumps(to_jsonable(obj), separators=(",", ":"))
                with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as z:
                    z.write(text.encode())
            else:
                f.write(json.dumps(to_jsonable(obj), indent=1, sort_keys=False).encode())
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide results from other users
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_json(path: str | os.PathLike) -> Any:
    """The JSON in ``path`` (gzip-compressed when the name ends in ``.gz``)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment_manifest() -> dict[str, Any]:
    """Versions, CPU, threads and git commit: enough to tell two result files apart."""
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    threads = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    cuda = None
    torch = sys.modules.get("torch")  # report torch only if the run used it; never import it here
    if torch is not None:
        threads["torch"] = torch.get_num_threads()
        cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": threads,
        "cuda_device": cuda,
        "git_commit": _git_commit(),
        "packages": versions,
    }
