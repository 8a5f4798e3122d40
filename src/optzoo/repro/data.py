"""Finding the project's shared data (``../shared/data`` beside the project, or
``$OPTZOO_DATA_DIR``): one place for every room's reproduction. Nothing is downloaded."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["data_dir", "find_data_file"]


def data_dir() -> Path | None:
    """``$OPTZOO_DATA_DIR`` if set, else the first ``shared/data`` folder beside an ancestor of
    this package or of the working directory; ``None`` if there is none."""
    env = os.environ.get("OPTZOO_DATA_DIR")
    if env:
        p = Path(env)
        return p if p.is_dir() else None
    for start in (Path(__file__).resolve(), Path.cwd().resolve()):
        for anc in [start, *start.parents]:
            p = anc / "shared" / "data"
            if p.is_dir():
                return p
    return None


def find_data_file(name: str) -> Path | None:
    """The path of ``name`` inside :func:`data_dir`, or ``None`` when it is absent (the caller
    then uses its documented stand-in and records that it did)."""
    d = data_dir()
    if d is None:
        return None
    p = d / name
    return p if p.exists() else None
