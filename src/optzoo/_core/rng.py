"""Seeds and generators. Library code never touches global RNG state: every random choice
comes from a generator built here from an explicit seed."""

from __future__ import annotations

import hashlib

__all__ = ["derive_seed", "np_rng", "torch_generator"]


def derive_seed(seed: int, *keys: object) -> int:
    """A stable 63-bit seed for a sub-task, e.g. ``derive_seed(seed, "graph", n)``.

    Stable across processes and Python versions (unlike ``hash``), so a (paper, seed) unit
    gives the same numbers on a laptop, in a process pool and on a Ray worker.
    """
    text = repr((int(seed),) + tuple(str(k) for k in keys)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little") >> 1


def np_rng(seed: int, *keys: object):
    """``numpy.random.Generator`` for ``seed`` (optionally derived with ``keys``)."""
    import numpy as np

    return np.random.default_rng(derive_seed(seed, *keys) if keys else int(seed))


def torch_generator(seed: int, *keys: object, device: str | None = None):
    """``torch.Generator`` on ``device`` seeded from ``seed`` (optionally derived)."""
    import torch

    g = torch.Generator(device=device or "cpu")
    g.manual_seed(derive_seed(seed, *keys) if keys else int(seed))
    return g
