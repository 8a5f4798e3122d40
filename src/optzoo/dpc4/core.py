r"""DP-C4 (reconstructed) and DP-SGD: pure updates on per-sample gradients.

Paper: "Eliminating Solution Bias in Differentially Private Optimization" (ICML 2026; earlier
"DP-C4 ... via Coupled Clipping with Adaptive Thresholds", OpenReview nw0pePP5qd). No arXiv id,
no code. **Fidelity: reconstructed.** Only the abstracts are public; the update below is
optzoo's reconstruction from their stated properties and the closest published mechanisms
(Clip21's shifted clipping, DiceSGD's error feedback). The privacy accounting is exact.

Notation: Poisson batch :math:`B_t` (rate q), expected batch size B, per-sample gradients
:math:`g_i`, public threshold schedule :math:`C_{1,t}` and shifted :math:`C_{2,t}=C_{1,t}+\kappa`,
noise multiplier :math:`z_t`, :math:`\mathrm{clip}(v,C)=v\min(1,C/\|v\|)`.

``memory="anchor"`` (default; per-record memory :math:`h_i`, Clip21-style shifted clipping)::

    d_i   = clip(g_i - h_i, C1_t),  h_i <- h_i + d_i            (i in B_t)
    R_t   = sum_i d_i + N(0, (z_t C1_t)^2 I)                    Delta_t = C1_t, sampled with q
    u_t   = m_t + R_t / B ;   m_{t+1} = m_t + R_t / n           (m is public: built from R only)

``memory="ef"`` (the spec's template, O(d) state: the memory-efficient variant)::

    S1 = sum_i clip(g_i, C1_t),  S2 = B clip(e_t, C2_t)
    R1 = S1 + N(0, (z_t C1_t)^2 I)          Delta = C1_t, sampled with q
    R2 = S2 + N(0, (z'_t 2 C2_t B)^2 I)     Delta = 2 C2_t B, q = 1 (e_t depends on every record)
    u_t = (R1 + R2) / B ;  e_{t+1} = e_t + (1/B) sum_i g_i - (S1 + S2) / B

DP-SGD (Opacus semantics): ``u_t = (sum_i clip(g_i, C_t) + N(0, (z_t C_t)^2 I)) / B``.
The caller applies ``x <- x - lr_t u_t``. All functions broadcast over leading "config"
dimensions (several runs at once), which the reproduction uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

from optzoo._core.validation import check_real, fail

__all__ = [
    "ConstantClip",
    "DPC4State",
    "ShiftedDecay",
    "StepInfo",
    "clip_rows",
    "dpc4_init",
    "dpc4_update",
    "dpsgd_update",
]


@dataclass(frozen=True)
class ShiftedDecay:
    """Public threshold schedule (INFERRED): C1_t = c0 / (1 + t)^gamma, C2_t = C1_t + shift.

    >>> s = ShiftedDecay(c0=1.0, gamma=0.5, shift=0.5)
    >>> s(3)
    (0.5, 1.0)
    """

    c0: float = 1.0
    gamma: float = 0.5
    shift: float = 0.5

    def __post_init__(self) -> None:
        check_real("c0", self.c0, owner="ShiftedDecay", low=0.0, closed="neither")
        check_real("gamma", self.gamma, owner="ShiftedDecay", low=0.0)
        check_real("shift", self.shift, owner="ShiftedDecay", low=0.0)

    def __call__(self, t: int) -> tuple[float, float]:
        c1 = self.c0 / (1.0 + t) ** self.gamma
        return c1, c1 + self.shift


@dataclass(frozen=True)
class ConstantClip:
    """Constant threshold C (DP-SGD's ``max_grad_norm``): C1_t = C2_t = C."""

    c: float = 1.0

    def __post_init__(self) -> None:
        check_real("c", self.c, owner="ConstantClip", low=0.0, closed="neither")

    def __call__(self, t: int) -> tuple[float, float]:
        return self.c, self.c


def as_schedule(value, *, owner: str) -> Callable[[int], tuple[float, float]]:
    """A float becomes ConstantClip; a callable of t returning C or (C1, C2) is checked at t=0."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ConstantClip(check_real("clip_schedule", value, owner=owner, low=0.0, closed="neither"))
    if not callable(value):
        fail("clip_schedule", owner, "a positive float or a public schedule (a callable of the step t only)",
             value, exc=TypeError)

    def sched(t: int) -> tuple[float, float]:
        out = value(t)
        c1, c2 = (out, out) if isinstance(out, (int, float)) else out
        for c in (c1, c2):
            if not (isinstance(c, (int, float)) and math.isfinite(c) and c > 0):
                fail("clip_schedule", owner, f"positive finite thresholds at every step (step {t})", out)
        return float(c1), float(c2)

    sched(0)
    return sched


def clip_rows(v: Tensor, c) -> Tensor:
    """clip(v, C) = v min(1, C / ||v||) over the last dim; ``c`` broadcasts over leading dims."""
    c = torch.as_tensor(c, dtype=v.dtype, device=v.device)
    norms = torch.linalg.vector_norm(v, dim=-1, keepdim=True)
    c = c.reshape(c.shape + (1,) * (norms.ndim - c.ndim))  # c's shape is a prefix of v's
    # a zero row keeps factor <= 1 thanks to the clamp; clipping never scales up
    factor = c / norms.clamp_min(1e-30)
    return v * factor.clamp(max=1.0)


def _clipped_sum(v: Tensor, c) -> Tensor:
    """sum_i clip(v_i, C) over dim -2 without materialising the clipped rows (as Opacus does)."""
    c = torch.as_tensor(c, dtype=v.dtype, device=v.device)
    norms = torch.linalg.vector_norm(v, dim=-1)
    c = c.reshape(c.shape + (1,) * (norms.ndim - c.ndim))
    factor = (c / norms.clamp_min(1e-30)).clamp(max=1.0)
    return torch.einsum("...b,...bd->...d", factor, v)


class DPC4State(NamedTuple):
    """``step`` t; ``memory`` m_t (anchor) or e_t (ef), shape (..., d); ``anchors`` h, (..., n, d)."""

    step: int
    memory: Tensor
    anchors: Tensor | None


class StepInfo(NamedTuple):
    """What one step released: pre-noise sums (sum units), their sensitivities and noise stds,
    and the accountant entries (z_t, q_t). ``noise`` is the noise added in update units."""

    sums: tuple[Tensor, ...]
    sensitivities: tuple[float, ...]
    noise_stds: tuple[float, ...]
    entries: tuple[tuple[float, float], ...]
    noise: Tensor


def dpc4_init(dim: int, *, memory: str = "anchor", num_records: int | None = None,
              batch_shape=(), dtype=torch.float64, device=None) -> DPC4State:
    """Zero state for ``dim`` parameters (per-record anchors need ``num_records``)."""
    m = torch.zeros(*batch_shape, dim, dtype=dtype, device=device)
    if memory == "anchor":
        if num_records is None:
            fail("num_records", "dpc4_init", "an int >= 1 when memory='anchor'", num_records)
        h = torch.zeros(*batch_shape, num_records, dim, dtype=dtype, device=device)
        return DPC4State(0, m, h)
    return DPC4State(0, m, None)


def _gauss(shape, std, like: Tensor, generator) -> Tensor:
    std = torch.as_tensor(std, dtype=like.dtype, device=like.device)
    eps = torch.randn(shape, generator=generator, dtype=like.dtype, device=like.device)
    return eps * (std[..., None] if std.ndim else std)


def dpc4_update(
    grad_samples: Tensor,
    state: DPC4State,
    *,
    indices: Tensor | None,
    expected_batch_size: float,
    sample_rate: float,
    clip1,
    clip2,
    noise_multiplier,
    feedback_noise_multiplier=None,
    generator: torch.Generator | None = None,
    inplace: bool = False,
) -> tuple[Tensor, DPC4State, StepInfo]:
    """One DP-C4 step (see the module docstring). Pure: returns (u_t, new state, info).

    ``grad_samples``: (..., b, d) per-sample gradients of the Poisson batch; ``indices``: (b,)
    record ids (needed by per-record anchors). ``clip1, clip2, noise_multiplier`` are floats or
    tensors broadcasting over the leading dims. ``noise_multiplier = 0`` gives the noise-free
    update (for analysis only; the optimizers never allow it). ``inplace=True`` writes the
    anchors of ``state`` in place (saves an n x d copy per step; the optimizer uses it).
    """
    B = float(expected_batch_size)
    d = grad_samples.shape[-1]
    lead = grad_samples.shape[:-2]
    c1 = torch.as_tensor(clip1, dtype=grad_samples.dtype)
    z = torch.as_tensor(noise_multiplier, dtype=grad_samples.dtype)
    if state.anchors is not None:
        if indices is None:
            fail("indices", "dpc4_update", "the record ids of the batch when memory='anchor'", None)
        n = state.anchors.shape[-2]
        h_b = state.anchors.index_select(-2, indices)
        delta = clip_rows(grad_samples - h_b, c1)
        anchors = state.anchors if inplace else state.anchors.clone()
        anchors.index_copy_(anchors.ndim - 2, indices, h_b + delta)
        s = delta.sum(-2)
        xi = _gauss((*lead, d), z * c1, s, generator)
        r = s + xi
        u = state.memory + r / B
        new = DPC4State(state.step + 1, state.memory + r / n, anchors)
        std = (z * c1).max().item()
        info = StepInfo((s,), (c1.max().item(),), (std,), ((float(z.max()), sample_rate),), xi / B)
        return u, new, info
    c2 = torch.as_tensor(clip2, dtype=grad_samples.dtype)
    zf = torch.as_tensor(0.0 if feedback_noise_multiplier is None else feedback_noise_multiplier,
                         dtype=grad_samples.dtype)
    s1 = _clipped_sum(grad_samples, c1)
    s2 = B * clip_rows(state.memory, c2)
    sens2 = 2.0 * c2 * B
    xi1 = _gauss((*lead, d), z * c1, s1, generator)
    xi2 = _gauss((*lead, d), zf * sens2, s1, generator)
    u = (s1 + xi1 + s2 + xi2) / B
    e = state.memory + grad_samples.sum(-2) / B - (s1 + s2) / B
    info = StepInfo((s1, s2), (c1.max().item(), sens2.max().item()),
                    ((z * c1).max().item(), (zf * sens2).max().item()),
                    ((float(z.max()), sample_rate), (float(zf.max()), 1.0)), (xi1 + xi2) / B)
    return u, DPC4State(state.step + 1, e, None), info


def dpsgd_update(
    grad_samples: Tensor,
    *,
    expected_batch_size: float,
    sample_rate: float,
    clip,
    noise_multiplier,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, StepInfo]:
    """DP-SGD with flat clipping (Opacus semantics): noise std z C on the clipped *sum*, then
    division by the *expected* batch size. Returns (u_t, info)."""
    c = torch.as_tensor(clip, dtype=grad_samples.dtype)
    z = torch.as_tensor(noise_multiplier, dtype=grad_samples.dtype)
    s = _clipped_sum(grad_samples, c)
    xi = _gauss(s.shape, z * c, s, generator)
    B = float(expected_batch_size)
    info = StepInfo((s,), (c.max().item(),), ((z * c).max().item(),),
                    ((float(z.max()), sample_rate),), xi / B)
    return (s + xi) / B, info
