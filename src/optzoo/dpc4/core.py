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

    Only R1 + R2 is released, so the two noises are drawn as one Gaussian of variance
    (z_t C1_t)^2 + (z'_t 2 C2_t B)^2 (the same law); the ledger charges both mechanisms.

DP-SGD (Opacus semantics): ``u_t = (sum_i clip(g_i, C_t) + N(0, (z_t C_t)^2 I)) / B``.
The caller applies ``x <- x - lr_t u_t`` (the optimizers hand ``u_t`` to a wrapped torch
optimizer as ``p.grad``). All functions broadcast over leading "config" dimensions (several
runs at once), which the reproduction uses. The updates also take a *list* of per-parameter
gradients (..., b, d_k), clipped jointly with one norm per sample (Opacus' idiom: no
concatenated copy of the per-sample gradients) and return lists of views; the Gaussian noise
is one draw over all parameters either way, so both forms give the same iterates. Clipping
thresholds must be positive and finite; an empty batch (b = 0) still releases its noise.
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


def as_schedule(value, *, owner: str, name: str = "clip_schedule") -> Callable[[int], tuple[float, float]]:
    """A float becomes ConstantClip; a callable of t returning C or (C1, C2) is checked at t=0.
    ``name`` is the argument the error messages name (DPSGD's is ``max_grad_norm``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ConstantClip(check_real(name, value, owner=owner, low=0.0, closed="neither"))
    if not callable(value):
        fail(name, owner, "a positive float or a public schedule (a callable of the step t only)",
             value, exc=TypeError)

    def sched(t: int) -> tuple[float, float]:
        out = value(t)
        c1, c2 = (out, out) if isinstance(out, (int, float)) else out
        for c in (c1, c2):
            if not (isinstance(c, (int, float)) and math.isfinite(c) and c > 0):
                fail(name, owner, f"positive finite thresholds at every step (step {t})", out)
        return float(c1), float(c2)

    sched(0)
    return sched


def _threshold(value, dtype, name: str, owner: str) -> float | Tensor:
    """A clipping threshold, rejected unless positive and finite (a negative one would silently
    flip the gradients). A Python number stays a float (the optimizers' case: no 0-d tensor
    arithmetic per step); anything else becomes a tensor broadcasting over leading dims."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not (math.isfinite(value) and value > 0):
            fail(name, owner, "positive finite clipping thresholds", value)
        return float(value)
    c = torch.as_tensor(value, dtype=dtype)
    if not bool(((c > 0) & (c < math.inf)).all()):  # one reduction, NaN fails too
        fail(name, owner, "positive finite clipping thresholds", c.tolist())
    return c


def _scalar(value, dtype) -> float | Tensor:
    """A noise multiplier: a float stays a float, anything else becomes a tensor."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return torch.as_tensor(value, dtype=dtype)


def _on(value: float | Tensor, device) -> float | Tensor:
    return value if isinstance(value, float) else value.to(device)


def _sqrt(value: float | Tensor) -> float | Tensor:
    return math.sqrt(value) if isinstance(value, float) else torch.sqrt(value)


def _top(value: float | Tensor) -> float:
    if isinstance(value, float):
        return value
    return float(value) if value.ndim == 0 else float(value.max())


def _factor(norms: Tensor, c: float | Tensor) -> Tensor:
    """min(1, C / ||v||) per row; ``c`` broadcasts over the leading dims of ``norms``."""
    if isinstance(c, Tensor):
        c = c.reshape(c.shape + (1,) * (norms.ndim - c.ndim))  # c's shape is a prefix of the norms'
    # a zero row keeps factor <= 1 thanks to the clamp; clipping never scales up
    return torch.div(c, norms.clamp_min(1e-30)).clamp_(max=1.0)


def _wsum(w: Tensor, g: Tensor) -> Tensor:
    """sum_i w_i g_i over the sample dim: (..., b) x (..., b, d) -> (..., d). One BLAS GEMV
    (g read once) in the plain 2-D case, which is about twice as fast as einsum's path there."""
    if g.ndim == 2:
        return torch.mv(g.t(), w)
    return torch.einsum("...b,...bd->...d", w, g)


def clip_rows(v: Tensor, c) -> Tensor:
    """clip(v, C) = v min(1, C / ||v||) over the last dim; ``c`` (> 0) broadcasts over leading dims."""
    c = _on(_threshold(c, v.dtype, "c", "clip_rows"), v.device)
    return v * _factor(torch.linalg.vector_norm(v, dim=-1), c)[..., None]


def _parts(x, owner: str | None = None) -> tuple[list[Tensor], bool]:
    """A tensor is one part; a list/tuple of tensors (one per parameter) is several. With
    ``owner``, the parts are per-sample gradients: they must share their leading (..., b) dims."""
    if isinstance(x, Tensor):
        return [x], False
    parts = list(x)
    if owner is not None and len({v.shape[:-1] for v in parts}) > 1:
        fail("grad_samples", owner, "tensors with the same leading (..., b) dims (one row per sample)",
             [tuple(v.shape) for v in parts])
    return parts, True


def _row_norms(parts: list[Tensor]) -> Tensor:
    """Euclidean norm of each row of the concatenation of ``parts`` along the last dim."""
    if len(parts) == 1:
        return torch.linalg.vector_norm(parts[0], dim=-1)
    # Opacus' per-parameter norms, then the norm of those: no concatenated copy of the rows
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(v, dim=-1) for v in parts], -1),
                                    dim=-1)


def _fused_kernel(threads: int):
    """The compiled norms + raw-sum pass for ``threads`` threads (the serial build for one, so
    numba's thread pool is never started), or None when numba is not installed."""
    try:
        from optzoo.dpc4._fused_numba import sqnorms_colsum, sqnorms_colsum_serial
    except ImportError:
        return None
    if threads > 1:
        import numba

        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        return sqnorms_colsum
    return sqnorms_colsum_serial


def _norms_and_raw_sums(parts: list[Tensor]) -> tuple[Tensor, list[Tensor] | None]:
    """Row norms of the concatenation of ``parts`` and, where the compiled pass applies (2-D
    float parts on CPU, numba installed), each part's unclipped sum over the sample dim from
    the same read; else None, and the caller sums. The pass uses torch's thread count."""
    kernel = None
    b, dt = parts[0].shape[0], parts[0].dtype
    threads = max(1, torch.get_num_threads())
    if dt in (torch.float32, torch.float64) and all(
            v.ndim == 2 and v.shape[0] == b and v.dtype == dt and v.device.type == "cpu" and not v.requires_grad
            for v in parts):
        kernel = _fused_kernel(threads)
    if kernel is None:
        return _row_norms(parts), None
    if threads > 1:
        import numba

        threads = numba.get_num_threads()
    sq = torch.empty(len(parts), b, dtype=dt)
    sums = []
    for k, v in enumerate(parts):
        cs = torch.empty(v.shape[1], dtype=v.dtype)
        kernel(v.numpy(), sq[k].numpy(), cs.numpy(), torch.empty(threads, v.shape[1], dtype=v.dtype).numpy())
        sums.append(cs)
    return sq.sum(0).sqrt_(), sums


def _check_finite_norms(norms: Tensor, parts: list[Tensor], owner: str) -> None:
    # NaN/inf in any entry makes its row norm non-finite: checking b norms replaces a pass over b x d
    if norms.numel() and not bool(torch.isfinite(norms).all()):
        if not all(bool(torch.isfinite(v).all()) for v in parts):
            raise ValueError(f"The 'grad_samples' argument of {owner} must contain only finite values. "
                             "Got NaN or inf.")


class DPC4State(NamedTuple):
    """``step`` t; ``memory`` m_t (anchor) or e_t (ef), shape (..., d); ``anchors`` h, (..., n, d).

    ``memory`` and ``anchors`` may instead be lists with one tensor per parameter (shapes
    (..., d_k) and (..., n, d_k)), matching a list of per-parameter gradients."""

    step: int
    memory: Tensor | list[Tensor]
    anchors: Tensor | list[Tensor] | None


class StepInfo(NamedTuple):
    """What one step released: pre-noise sums (sum units), their sensitivities and noise stds,
    and the accountant entries (z_t, q_t). ``noise`` is the noise added in update units.
    With per-parameter inputs, each sum and ``noise`` are lists with one tensor per part."""

    sums: tuple
    sensitivities: tuple[float, ...]
    noise_stds: tuple[float, ...]
    entries: tuple[tuple[float, float], ...]
    noise: Tensor | list[Tensor]


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


def _gauss(like: Tensor, std: float | Tensor, generator) -> Tensor:
    """N(0, std^2 I) shaped like ``like`` (..., D): one draw over all parameters, so the noise
    does not depend on how they are grouped."""
    eps = torch.randn(like.shape, generator=generator, dtype=like.dtype, device=like.device)
    if isinstance(std, float):
        return eps.mul_(std)
    std = std.to(like.device)
    return eps * (std[..., None] if std.ndim else std)


def _cat(parts: list[Tensor]) -> Tensor:
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)


def _split(flat: Tensor, sizes: list[int], listed: bool):
    """Back to one view per parameter (no copy) when the input was a list."""
    return list(torch.split(flat, sizes, dim=-1)) if listed else flat


def dpc4_update(
    grad_samples,
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

    ``grad_samples``: (..., b, d) per-sample gradients of the Poisson batch (b may be 0: the
    noise is still released), or a list of (..., b, d_k) tensors, one per parameter, clipped
    jointly (then ``u_t``, the state and the info's vectors are lists alike, views of one
    buffer); ``indices``: (b,) record ids (needed by per-record anchors). ``clip1, clip2``
    (> 0) and ``noise_multiplier`` are floats or tensors broadcasting over the leading dims.
    ``noise_multiplier = 0`` gives the noise-free update (for analysis only; the optimizers
    never allow it). ``inplace=True`` writes the anchors of ``state`` in place (saves an
    n x d copy per step; the optimizer uses it).
    """
    owner = "dpc4_update"
    gs, listed = _parts(grad_samples, owner)
    sizes = [g.shape[-1] for g in gs]
    B = float(expected_batch_size)
    dt, dev = gs[0].dtype, gs[0].device
    c1 = _threshold(clip1, dt, "clip1", owner)
    z = _scalar(noise_multiplier, dt)
    mem = _cat(_parts(state.memory)[0])
    if state.anchors is not None:
        if indices is None:
            fail("indices", owner, "the record ids of the batch when memory='anchor'", None)
        anchors = _parts(state.anchors)[0]
        n = anchors[0].shape[-2]
        idx = indices.to(dev)
        if idx.unique().numel() != idx.numel():
            fail("indices", owner, "distinct record ids (a batch holds each record at most once)",
                 idx.tolist())
        h_b = [a.index_select(-2, idx) for a in anchors]
        delta = [g - h for g, h in zip(gs, h_b, strict=True)]
        norms = _row_norms(delta)
        _check_finite_norms(norms, gs, owner)
        f = _factor(norms, _on(c1, dev))
        for dk in delta:
            dk.mul_(f[..., None])  # our own temporaries: the update stays pure
        if not inplace:
            anchors = [a.clone() for a in anchors]
        for a, h, dk in zip(anchors, h_b, delta, strict=True):
            a.index_copy_(a.ndim - 2, idx, h.add_(dk))
        ones = torch.ones_like(f)
        s = _cat([_wsum(ones, dk) for dk in delta])
        xi = _gauss(s, z * c1, generator)
        r = s + xi
        u = mem + r / B
        new = DPC4State(state.step + 1, _split(mem + r / n, sizes, listed), anchors if listed else anchors[0])
        info = StepInfo((_split(s, sizes, listed),), (_top(c1),), (_top(z * c1),), ((_top(z), sample_rate),),
                        _split(xi / B, sizes, listed))
        return _split(u, sizes, listed), new, info
    c2 = _threshold(clip2, dt, "clip2", owner)
    zf = _scalar(0.0 if feedback_noise_multiplier is None else feedback_noise_multiplier, dt)
    norms, raw = _norms_and_raw_sums(gs)
    _check_finite_norms(norms, gs, owner)
    f1 = _factor(norms, _on(c1, dev))
    if raw is not None:  # the raw sums came with the norms: one more read, for the clipped sum
        s1, g_sum = _cat([_wsum(f1, g) for g in gs]), _cat(raw)
    else:  # both sums in one call, [clip factors; ones] @ g (MKL still reads g twice in 2-D)
        w = torch.stack([f1, torch.ones_like(f1)], dim=-2)
        both = _cat([torch.matmul(w, g) for g in gs])
        s1, g_sum = both[..., 0, :], both[..., 1, :]
    f2 = _factor(torch.linalg.vector_norm(mem, dim=-1), _on(c2, dev))[..., None]
    s2 = B * (mem * f2)
    sens2 = 2.0 * c2 * B
    # only R1 + R2 is released: one Gaussian draw with the summed variance has the same law as
    # the two draws, and the ledger still charges both mechanisms (the sum is post-processing)
    xi = _gauss(s1, _sqrt((z * c1) ** 2 + (zf * sens2) ** 2), generator)
    info = StepInfo((_split(s1, sizes, listed), _split(s2, sizes, listed)), (_top(c1), _top(sens2)),
                    (_top(z * c1), _top(zf * sens2)), ((_top(z), sample_rate), (_top(zf), 1.0)),
                    _split(xi / B, sizes, listed))
    s12 = s1 + s2
    u = (s12 + xi).div_(B)
    e = (g_sum - s12).div_(B).add_(mem)
    return _split(u, sizes, listed), DPC4State(state.step + 1, _split(e, sizes, listed), None), info


def dpsgd_update(
    grad_samples,
    *,
    expected_batch_size: float,
    sample_rate: float,
    clip,
    noise_multiplier,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, StepInfo]:
    """DP-SGD with flat clipping (Opacus semantics): noise std z C on the clipped *sum*, then
    division by the *expected* batch size. ``grad_samples``: (..., b, d) or a list of
    (..., b, d_k), one per parameter (then ``u_t`` is a list of views). Returns (u_t, info)."""
    owner = "dpsgd_update"
    gs, listed = _parts(grad_samples, owner)
    sizes = [g.shape[-1] for g in gs]
    c = _threshold(clip, gs[0].dtype, "clip", owner)
    z = _scalar(noise_multiplier, gs[0].dtype)
    norms = _row_norms(gs)
    _check_finite_norms(norms, gs, owner)
    f = _factor(norms, _on(c, gs[0].device))
    s = _cat([_wsum(f, g) for g in gs])
    xi = _gauss(s, z * c, generator)
    B = float(expected_batch_size)
    info = StepInfo((_split(s, sizes, listed),), (_top(c),), (_top(z * c),), ((_top(z), sample_rate),),
                    _split(xi / B, sizes, listed))
    return _split((s + xi) / B, sizes, listed), info
