"""``DPC4`` and ``DPSGD`` as ``torch.optim.Optimizer`` subclasses, the Poisson loader and the
``torch.func`` per-sample gradient helper.

The optimizers read ``p.grad_sample`` (shape ``(b, *p.shape)``), the field filled both by
:func:`per_sample_grads` (``torch.func.vmap(grad)``) and by Opacus' ``GradSampleModule``.
Every step charges the :class:`PrivacyLedger` *before* drawing noise or touching parameters.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

from optzoo._core.validation import check_choice, check_int, check_real, fail
from optzoo.dpc4.accounting import NoiseSchedule, PrivacyLedger
from optzoo.dpc4.core import ShiftedDecay, as_schedule, dpc4_init, dpc4_update, dpsgd_update

__all__ = ["DPC4", "DPSGD", "PoissonLoader", "per_sample_grads"]


def _noise_schedule(value, *, owner: str) -> Callable[[int], float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        z = check_real("noise_multiplier", value, owner=owner, low=0.0, closed="neither")
        return lambda t: z
    if isinstance(value, (NoiseSchedule, list, tuple)):
        seq = list(value.noise_multipliers if isinstance(value, NoiseSchedule) else value)
        for t, z in enumerate(seq):
            check_real(f"noise_multiplier[{t}]", z, owner=owner, low=0.0, closed="neither")

        def at(t: int) -> float:
            if t >= len(seq):
                raise IndexError(f"{owner}: the noise schedule covers {len(seq)} steps; step {t} requested.")
            return float(seq[t])

        return at
    if callable(value):
        return lambda t: check_real("noise_multiplier", value(t), owner=owner, low=0.0, closed="neither")
    fail("noise_multiplier", owner, "a positive float, a sequence, a NoiseSchedule or a callable of t",
         value, exc=TypeError)


class _PrivateOptimizer(torch.optim.Optimizer):
    _owner = "DPSGD"

    def _setup(self, params, lr, sample_rate, expected_batch_size, noise_multiplier, ledger, generator,
               delta):
        o = self._owner
        lr = check_real("lr", lr, owner=o, low=0.0, closed="neither")
        super().__init__(params, dict(lr=lr))
        self.sample_rate = check_real("sample_rate", sample_rate, owner=o, low=0.0, high=1.0, closed="right")
        self.expected_batch_size = check_real("expected_batch_size", expected_batch_size, owner=o,
                                              low=0.0, closed="neither")
        self._z = _noise_schedule(noise_multiplier, owner=o)
        self._fb = None
        if isinstance(noise_multiplier, NoiseSchedule) and noise_multiplier.feedback_noise_multipliers:
            self._fb = _noise_schedule(list(noise_multiplier.feedback_noise_multipliers), owner=o)
        if ledger is None:
            # a calibrated schedule carries its (delta, target epsilon): the budget becomes a hard stop
            cal = isinstance(noise_multiplier, NoiseSchedule)
            ledger = PrivacyLedger(delta=noise_multiplier.delta if cal else delta, cross_check=None,
                                   epsilon_budget=noise_multiplier.target_epsilon if cal else None)
        if not isinstance(ledger, PrivacyLedger):
            fail("ledger", o, "a PrivacyLedger or None", ledger, exc=TypeError)
        self.ledger = ledger
        if generator is None:
            self.seed = secrets.randbits(63)
            generator = torch.Generator().manual_seed(self.seed)
        elif isinstance(generator, int) and not isinstance(generator, bool):
            self.seed = generator
            generator = torch.Generator().manual_seed(generator)
        elif not isinstance(generator, torch.Generator):
            fail("generator", o, "None, an int seed or a torch.Generator", generator, exc=TypeError)
        self.generator = generator
        self.t = 0

    def _params(self) -> list[Tensor]:
        return [p for g in self.param_groups for p in g["params"] if p.requires_grad]

    def _flat_grad_samples(self) -> Tensor:
        o, cols, b = self._owner, [], None
        for p in self._params():
            gs = getattr(p, "grad_sample", None)
            if gs is None:
                raise ValueError(
                    f"The parameters given to {o} must carry per-sample gradients in 'grad_sample' "
                    f"(shape (batch, *param.shape)). Got a parameter of shape {tuple(p.shape)} without "
                    "them: call optzoo.dpc4.per_sample_grads(model, loss_fn, inputs, targets) or wrap "
                    "the model in opacus.GradSampleModule before step().")
            if isinstance(gs, list):
                raise ValueError(
                    f"The 'grad_sample' of a parameter given to {o} must be one tensor (one Poisson "
                    f"batch per step). Got a list of {len(gs)}: gradient accumulation over several "
                    "batches is not covered by the accounting.")
            if b is None:
                b = gs.shape[0]
            if gs.shape[0] != b or tuple(gs.shape[1:]) != tuple(p.shape):
                fail("grad_sample", o, f"of shape ({b}, *param.shape) for every parameter",
                     tuple(gs.shape))
            cols.append(gs.reshape(b, -1))
        flat = torch.cat(cols, dim=1) if cols else torch.zeros(0, 0)
        if flat.numel() and not bool(torch.isfinite(flat.abs().amax())):  # amax propagates NaN
            raise ValueError(f"The 'grad_sample' argument of {o} must contain only finite values. "
                             "Got NaN or inf.")
        return flat

    def _apply(self, u: Tensor) -> None:
        off = 0
        for g in self.param_groups:
            for p in g["params"]:
                if not p.requires_grad:
                    continue
                k = p.numel()
                p.add_(u[off:off + k].view_as(p).to(p.dtype), alpha=-g["lr"])
                off += k

    def zero_grad(self, set_to_none: bool = True) -> None:
        super().zero_grad(set_to_none)
        for p in self._params():
            p.grad_sample = None

    def _finish(self, u: Tensor) -> None:
        with torch.no_grad():
            self._apply(u)
        for p in self._params():
            p.grad_sample = None  # a batch is spent once
        self.t += 1


class DPSGD(_PrivateOptimizer):
    r"""DP-SGD with flat clipping, in Opacus' semantics, consuming ``p.grad_sample``.

    x_{t+1} = x_t - lr * (sum_{i in B_t} clip(g_i, C_t) + N(0, z_t^2 C_t^2 I)) / B.
    ``max_grad_norm`` is a float or a public schedule of t (the "decay without coupling"
    ablation). Accounting entry per step: (z_t, q).
    """

    _owner = "DPSGD"

    def __init__(self, params, lr: float = 0.1, *, sample_rate: float, expected_batch_size: float,
                 noise_multiplier, max_grad_norm=1.0, ledger: PrivacyLedger | None = None,
                 delta: float = 1e-5, generator=None):
        self._setup(params, lr, sample_rate, expected_batch_size, noise_multiplier, ledger, generator, delta)
        self.clip_schedule = as_schedule(max_grad_norm, owner=self._owner)

    @torch.no_grad()
    def step(self, closure=None, *, indices=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        g = self._flat_grad_samples()
        c, _ = self.clip_schedule(self.t)
        z = self._z(self.t)
        self.ledger.charge([(z, self.sample_rate)], sensitivity=c, noise_std=z * c)
        u, self.last_info = dpsgd_update(g, expected_batch_size=self.expected_batch_size,
                                         sample_rate=self.sample_rate, clip=c, noise_multiplier=z,
                                         generator=self.generator)
        self._finish(u)
        return loss


class DPC4(_PrivateOptimizer):
    r"""DP-C4 (reconstructed): coupled clipping with shifted thresholds and error feedback.

    See :mod:`optzoo.dpc4.core` for the update in math. ``memory="anchor"`` keeps one anchor
    per record (needs ``num_records`` and the batch's record ``indices`` at each ``step``);
    ``memory="ef"`` keeps O(d) error-feedback state, whose full-batch release is accounted
    with q = 1 and sensitivity 2 C2_t B (needs a feedback noise multiplier: pass a
    :class:`NoiseSchedule` from ``calibrate(..., feedback_ratio=...)`` or
    ``feedback_noise_multiplier``). Thresholds come from a public schedule of t only.

    >>> import torch
    >>> from optzoo.dpc4 import DPC4, PoissonLoader, calibrate, per_sample_grads
    >>> X, y = torch.randn(100, 3, generator=torch.Generator().manual_seed(0)), torch.zeros(100)
    >>> model = torch.nn.Linear(3, 1)
    >>> sched = calibrate(4.0, delta=1e-3, steps=20, sample_rate=0.1)
    >>> opt = DPC4(model.parameters(), lr=0.1, sample_rate=0.1, expected_batch_size=10,
    ...            noise_multiplier=sched, num_records=100, generator=0)
    >>> loss = lambda out, yb: ((out.squeeze(-1) - yb) ** 2).mean()
    >>> for idx in PoissonLoader(100, sample_rate=0.1, steps=20, seed=0):
    ...     per_sample_grads(model, loss, X[idx], y[idx])
    ...     opt.step(indices=idx)
    >>> opt.ledger.epsilon() <= 4.0
    True
    """

    _owner = "DPC4"

    def __init__(self, params, lr: float = 0.1, *, sample_rate: float, expected_batch_size: float,
                 noise_multiplier, clip_schedule=ShiftedDecay(), memory: str = "anchor",
                 num_records: int | None = None, feedback_noise_multiplier=None,
                 ledger: PrivacyLedger | None = None, delta: float = 1e-5, generator=None):
        self._setup(params, lr, sample_rate, expected_batch_size, noise_multiplier, ledger, generator, delta)
        o = self._owner
        self.clip_schedule = as_schedule(clip_schedule, owner=o)
        self.memory = check_choice("memory", memory, ("anchor", "ef"), owner=o)
        if feedback_noise_multiplier is not None:
            self._fb = _noise_schedule(feedback_noise_multiplier, owner=o)
        if memory == "ef" and self._fb is None:
            fail("feedback_noise_multiplier", o, "given (or a NoiseSchedule with feedback multipliers) "
                 "when memory='ef'", None)
        if memory == "anchor":
            self.num_records = check_int("num_records", num_records, owner=o, low=1)
            if abs(round(self.sample_rate * self.num_records) - self.expected_batch_size) > 0.5:
                fail("expected_batch_size", o, f"round(sample_rate * num_records) = "
                     f"{round(self.sample_rate * self.num_records)}", expected_batch_size)
        dim = sum(p.numel() for p in self._params())
        dtype = next(iter(self._params())).dtype if dim else torch.float32
        self.dpc4_state = dpc4_init(dim, memory=memory, num_records=num_records, dtype=dtype)

    @torch.no_grad()
    def step(self, closure=None, *, indices=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        g = self._flat_grad_samples()
        if self.memory == "anchor":
            if indices is None:
                fail("indices", "DPC4.step", "the record ids of the Poisson batch (memory='anchor')", None)
            indices = torch.as_tensor(indices, dtype=torch.long).reshape(-1)
            if indices.numel() != g.shape[0]:
                fail("indices", "DPC4.step", f"of length {g.shape[0]} (the batch size)", indices.numel())
            if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= self.num_records):
                fail("indices", "DPC4.step", f"ids in [0, {self.num_records - 1}]", indices.tolist())
        c1, c2 = self.clip_schedule(self.t)
        z = self._z(self.t)
        if self.memory == "anchor":
            self.ledger.charge([(z, self.sample_rate)], sensitivity=c1, noise_std=z * c1)
            zf = None
        else:
            zf = self._fb(self.t)
            sens2 = 2.0 * c2 * self.expected_batch_size
            self.ledger.charge([(z, self.sample_rate), (zf, 1.0)], sensitivity=[c1, sens2],
                               noise_std=[z * c1, zf * sens2])
        u, self.dpc4_state, self.last_info = dpc4_update(
            g, self.dpc4_state, indices=indices, expected_batch_size=self.expected_batch_size,
            sample_rate=self.sample_rate, clip1=c1, clip2=c2, noise_multiplier=z,
            feedback_noise_multiplier=zf, generator=self.generator, inplace=True)
        self._finish(u)
        return loss


class PoissonLoader:
    """Poisson sampling of record ids: each of ``n`` records enters a batch independently with
    probability ``sample_rate``; yields ``steps`` index tensors (possibly empty).

    >>> [len(b) for b in PoissonLoader(10, sample_rate=0.5, steps=3, seed=0)]
    [6, 7, 5]
    """

    def __init__(self, n: int, *, sample_rate: float, steps: int, seed: int):
        self.n = check_int("n", n, owner="PoissonLoader", low=1)
        self.sample_rate = check_real("sample_rate", sample_rate, owner="PoissonLoader", low=0.0,
                                      high=1.0, closed="right")
        self.steps = check_int("steps", steps, owner="PoissonLoader", low=1)
        self.seed = check_int("seed", seed, owner="PoissonLoader")

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[Tensor]:
        g = torch.Generator().manual_seed(self.seed)
        for _ in range(self.steps):
            yield torch.nonzero(torch.rand(self.n, generator=g) < self.sample_rate).reshape(-1)


_CROSS_SAMPLE = (nn.modules.batchnorm._BatchNorm,)


def per_sample_grads(model: nn.Module, loss_fn, inputs: Tensor, targets: Tensor) -> None:
    """Fill ``p.grad_sample`` (shape ``(b, *p.shape)``) of every trainable parameter with the
    gradients of ``loss_fn(model(x_i), y_i)`` per sample, via ``torch.func.vmap(grad)``.

    ``loss_fn(output, target)`` receives a batch of one. Models with BatchNorm are refused
    (it mixes samples, so per-sample gradients would leak across records, as Opacus' validator says).
    """
    from torch.func import functional_call, grad, vmap

    for m in model.modules():
        if isinstance(m, _CROSS_SAMPLE):
            fail("model", "per_sample_grads", "free of BatchNorm layers (use GroupNorm or LayerNorm)",
                 type(m).__name__, exc=TypeError)
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    params = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
    buffers = {n: b.detach() for n, b in model.named_buffers()}

    def loss_one(prm, x, y):
        out = functional_call(model, (prm, buffers), (x.unsqueeze(0),))
        return loss_fn(out, y.unsqueeze(0))

    if inputs.shape[0] == 0:
        grads = {n: torch.zeros(0, *params[n].shape, dtype=params[n].dtype) for n in names}
    else:
        grads = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, inputs, targets)
    named = dict(model.named_parameters())
    for n in names:
        named[n].grad_sample = grads[n]
