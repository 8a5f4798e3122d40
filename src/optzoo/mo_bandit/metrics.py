"""Pareto filtering and hypervolume (via pymoo's ``HV`` indicator), all in minimisation form.

HV ratio, as in the official evaluation code and PMOCO (Lin et al., ICLR 2022):
``HV_r(F) / prod_i |r_i - z_i|`` with a fixed reference point ``r`` and ideal point ``z``.
Points that do not strictly dominate ``r`` contribute nothing.
"""

from __future__ import annotations

import numpy as np

from optzoo._core.validation import check_array, fail

__all__ = ["nondominated_mask", "hypervolume", "hv_ratio", "hv_trace"]


def _stream_front(F: np.ndarray, checkpoints=()):
    """Single pass in evaluation order keeping the current front (indices); yields the front
    at each checkpoint. A point weakly dominated by the front (incl. a duplicate) is dropped."""
    front: list[int] = []
    cps = sorted(set(int(c) for c in checkpoints))
    ci, snaps = 0, []
    for i in range(F.shape[0]):
        while ci < len(cps) and cps[ci] <= i:
            snaps.append(list(front))
            ci += 1
        f = F[i]
        if front:
            P = F[front]
            if (P <= f).all(1).any():
                continue
            front = [j for j, keep in zip(front, ~(f <= P).all(1), strict=True) if keep]
        front.append(i)
    while ci < len(cps):
        snaps.append(list(front))
        ci += 1
    return front, snaps


def nondominated_mask(F: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated rows of ``F`` (minimisation); duplicates keep the first."""
    F = check_array("F", F, owner="nondominated_mask", finite=False, nonempty=False)
    if F.size == 0:
        return np.zeros(F.shape[0] if F.ndim else 0, dtype=bool)
    if F.ndim != 2:
        fail("F", "nondominated_mask", "a 2-D array (one row of objectives per point)",
             f"shape {F.shape}")
    out = np.zeros(F.shape[0], dtype=bool)
    if F.shape[0]:
        out[_stream_front(F)[0]] = True
    return out


def hypervolume(F: np.ndarray, ref_point: np.ndarray) -> float:
    """Hypervolume dominated by ``F`` up to ``ref_point`` (both in minimisation form)."""
    from pymoo.indicators.hv import HV

    ref = check_array("ref_point", ref_point, owner="hypervolume", ndim=1)
    F = check_array("F", F, owner="hypervolume", finite=False, nonempty=False)
    if F.size == 0:
        return 0.0
    if F.ndim != 2 or F.shape[1] != ref.size:
        fail("F", "hypervolume", f"a 2-D array of shape (n, {ref.size}) (one row per point)",
             f"shape {F.shape}")
    if np.isnan(F).any():
        fail("F", "hypervolume", "free of NaN (a NaN objective has no place in the front)",
             F[np.isnan(F).any(1)][0].tolist())
    F = F[(F < ref).all(1)]
    if F.shape[0] == 0:
        return 0.0
    return float(HV(ref_point=ref)(F[nondominated_mask(F)]))


def hv_ratio(F: np.ndarray, ref_point: np.ndarray, ideal_point: np.ndarray) -> float:
    """``HV(F; r) / prod|r - z|``: 1 for the ideal point, 0 when ``r`` dominates everything."""
    ref = np.asarray(ref_point, dtype=float)
    ideal = np.asarray(ideal_point, dtype=float)
    box = float(np.prod(np.abs(ref - ideal)))
    if not box > 0:
        fail("ideal_point", "hv_ratio", "a point that differs from ref_point in every objective "
             "(a box of positive volume)", ideal.tolist())
    return hypervolume(F, ref) / box


def hv_trace(F: np.ndarray, ref_point, ideal_point, checkpoints) -> list[float]:
    """HV ratio of the first ``c`` evaluated points for every ``c`` in ``checkpoints``."""
    F = np.asarray(F, dtype=float)
    cps = [min(int(c), F.shape[0]) for c in checkpoints]
    _, snaps = _stream_front(F, cps)  # one snapshot per distinct checkpoint, ascending
    by_c = dict(zip(sorted(set(cps)), snaps, strict=True))
    return [hv_ratio(F[by_c[c]], ref_point, ideal_point) if by_c[c] else 0.0 for c in cps]
