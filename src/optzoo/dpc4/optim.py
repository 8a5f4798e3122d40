"""``DPC4`` and ``DPSGD`` as ``torch.optim.Optimizer`` subclasses in Opacus' shape, the Poisson
loader and the ``torch.func`` per-sample gradient helper.

Like Opacus' ``DPOptimizer``, each private optimizer *wraps* an ordinary torch optimizer: it
reads ``p.grad_sample`` (shape ``(b, *p.shape)``, filled by :func:`per_sample_grads` or by
Opacus' ``GradSampleModule``), clips the per-sample gradients jointly over all parameters
(one norm per sample, no concatenated copy), adds the Gaussian noise, writes the private
gradient to ``p.grad`` and calls the wrapped optimizer's ``step``. Given parameters instead of
an optimizer, it wraps ``torch.optim.SGD(params, lr=lr)``: the original SGD behaviour.
Every step is checked against the :class:`PrivacyLedger` budget before anything is computed and
charged before the private gradient is released; ``state_dict`` carries the step counter, the
DP memory, the noise generator and the ledger, so a resumed run continues its accounting.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

from optzoo._core.validation import check_choice, check_int, check_real, fail
from optzoo.dpc4.accounting import NoiseSchedule, PrivacyLedger
from optzoo.dpc4.core import DPC4State, ShiftedDecay, as_schedule, dpc4_update, dpsgd_update

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


_CONFIG_KEYS = ("sample_rate", "expected_batch_size")
# constant C1 = 1 (C2 = 1.5 for memory="ef"); frozen: safe as a shared default
_CONSTANT_SHIFTED = ShiftedDecay(c0=1.0, gamma=0.0, shift=0.5)


class _PrivateOptimizer(torch.optim.Optimizer):
    _owner = "DPSGD"
    _config_keys: tuple[str, ...] = _CONFIG_KEYS

    def _setup(self, params, lr, sample_rate, expected_batch_size, noise_multiplier, ledger, generator,
               delta):
        o = self._owner
        if isinstance(params, _PrivateOptimizer) or hasattr(params, "original_optimizer"):
            # a private optimizer (ours or Opacus' DPOptimizer) inside would noise twice
            fail("params", o, "parameters or a non-private torch optimizer", type(params).__name__,
                 exc=TypeError)
        if isinstance(params, torch.optim.Optimizer):
            if lr is not None:
                fail("lr", o, "None when wrapping an optimizer (set the learning rate on the wrapped "
                     "optimizer)", lr)
            inner = params
        else:
            lr = check_real("lr", 0.1 if lr is None else lr, owner=o, low=0.0, closed="neither")
            inner = torch.optim.SGD(params, lr=lr)
        super().__init__(inner.param_groups, inner.defaults)
        self.original_optimizer = inner
        # one list of groups shared with the wrapped optimizer: LR schedulers and
        # add_param_group reach it; self.state keeps only the DP memory of each parameter
        self.param_groups = inner.param_groups
        self.sample_rate = check_real("sample_rate", sample_rate, owner=o, low=0.0, high=1.0, closed="right")
        self.expected_batch_size = check_real("expected_batch_size", expected_batch_size, owner=o,
                                              low=0.0, closed="neither")
        cal = isinstance(noise_multiplier, NoiseSchedule)
        if delta is not None:
            delta = check_real("delta", delta, owner=o, low=0.0, high=1.0, closed="neither")
        if cal:
            if delta is not None and delta != noise_multiplier.delta:
                fail("delta", o, f"omitted or equal to the delta the NoiseSchedule was calibrated for "
                     f"({noise_multiplier.delta:g})", delta)
            if self.sample_rate != noise_multiplier.sample_rate:
                fail("sample_rate", o, f"equal to the sample_rate the NoiseSchedule was calibrated for "
                     f"({noise_multiplier.sample_rate:g})", sample_rate)
        self._z = _noise_schedule(noise_multiplier, owner=o)
        self._fb = None
        if cal and noise_multiplier.feedback_noise_multipliers:
            self._fb = _noise_schedule(list(noise_multiplier.feedback_noise_multipliers), owner=o)
        if ledger is None:
            # a calibrated schedule carries its (delta, target epsilon): the budget becomes a hard stop
            ledger = PrivacyLedger(delta=noise_multiplier.delta if cal else (1e-5 if delta is None else delta),
                                   cross_check=None,
                                   epsilon_budget=noise_multiplier.target_epsilon if cal else None)
        if not isinstance(ledger, PrivacyLedger):
            fail("ledger", o, "a PrivacyLedger or None", ledger, exc=TypeError)
        if delta is not None and delta != ledger.delta:
            fail("delta", o, f"omitted or equal to the given ledger's delta ({ledger.delta:g})", delta)
        self.ledger = ledger
        device = next((p.device for p in self._params()), torch.device("cpu"))
        self.seed = None
        if generator is None:
            self.seed = secrets.randbits(63)
            generator = torch.Generator(device=device).manual_seed(self.seed)
        elif isinstance(generator, int) and not isinstance(generator, bool):
            self.seed = generator
            generator = torch.Generator(device=device).manual_seed(generator)
        elif not isinstance(generator, torch.Generator):
            fail("generator", o, "None, an int seed or a torch.Generator", generator, exc=TypeError)
        if generator.device.type != device.type:
            fail("generator", o, f"a torch.Generator on the parameters' device ({device.type})",
                 generator.device.type)
        self.generator = generator
        self.t = 0

    def add_param_group(self, param_group: dict) -> None:
        if "original_optimizer" not in self.__dict__:  # during torch's __init__
            return super().add_param_group(param_group)
        self.original_optimizer.add_param_group(param_group)  # the list is shared

    def _params(self) -> list[Tensor]:
        return [p for g in self.param_groups for p in g["params"] if p.requires_grad]

    def _grad_samples(self) -> tuple[list[Tensor], list[Tensor], int]:
        """(parameters, their per-sample gradients as (b, d_k) views, b): no copy."""
        o, ps, cols, b = self._owner, self._params(), [], None
        for p in ps:
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
            # explicit numel: reshape(0, -1) is ambiguous on an empty Poisson batch
            cols.append(gs.reshape(b, p.numel()))
        return ps, cols, (0 if b is None else b)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self._params():
            p.grad_sample = None
        self.original_optimizer.zero_grad(set_to_none)

    def _release(self, ps: list[Tensor], u: list[Tensor]) -> None:
        """Hand the private gradient to the wrapped optimizer and let it step."""
        for p, uk in zip(ps, u, strict=True):
            p.grad = uk.reshape(p.shape).to(p.dtype)
            p.grad_sample = None  # a batch is spent once
        self.original_optimizer.step()
        self.t += 1

    def _closure(self, closure):
        if closure is None:
            return None
        with torch.enable_grad():
            return closure()

    # --- checkpoints -------------------------------------------------------------------------
    def _config(self) -> dict:
        return {k: getattr(self, k) for k in self._config_keys}

    def state_dict(self) -> dict:
        """torch's layout (``state``: this optimizer's DP memory per parameter, ``param_groups``)
        plus ``optimizer`` (the wrapped optimizer's state_dict) and ``privacy`` (step counter,
        noise generator state, ledger, and the settings the accounting depends on). The DP
        memory is copied: the snapshot does not change as training continues."""
        sd = super().state_dict()
        sd["state"] = {i: {k: v.clone() if isinstance(v, Tensor) else v for k, v in st.items()}
                       for i, st in sd["state"].items()}
        sd["optimizer"] = self.original_optimizer.state_dict()
        sd["privacy"] = {"step": self.t, "seed": self.seed, "generator": self.generator.get_state(),
                         "ledger": self.ledger.state_dict(), "config": self._config()}
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        o = f"{self._owner}.load_state_dict"
        need = {"state", "param_groups", "optimizer", "privacy"}
        if not isinstance(state_dict, dict) or not need <= set(state_dict):
            fail("state_dict", o, f"a {self._owner}.state_dict() (keys {sorted(need)})",
                 sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__)
        priv = state_dict["privacy"]
        for k, v in self._config().items():
            if priv["config"].get(k) != v:
                fail("state_dict", o, f"saved with {k}={v!r} like this optimizer (the accounting "
                     "depends on it)", priv["config"].get(k))
        self.original_optimizer.load_state_dict(state_dict["optimizer"])
        super().load_state_dict({"state": state_dict["state"], "param_groups": state_dict["param_groups"]})
        self.param_groups = self.original_optimizer.param_groups  # torch's load rebinds the list
        for st in self.state.values():  # never share tensors with the (reusable) checkpoint dict
            for k, v in st.items():
                if isinstance(v, Tensor):
                    st[k] = v.clone()
        self.t = int(priv["step"])
        self.seed = priv["seed"]
        self.generator.set_state(priv["generator"])
        self.ledger.load_state_dict(priv["ledger"])


class DPSGD(_PrivateOptimizer):
    r"""DP-SGD with flat clipping, in Opacus' semantics, consuming ``p.grad_sample``.

    g_t = (sum_{i in B_t} clip(g_i, C_t) + N(0, z_t^2 C_t^2 I)) / B goes to ``p.grad``; the
    wrapped optimizer steps (default ``torch.optim.SGD(params, lr=lr)``: x_{t+1} = x_t - lr g_t).
    ``params``: parameters, or a torch optimizer to wrap (then ``lr`` stays None).
    ``max_grad_norm`` is a float or a public schedule of t (the "decay without coupling"
    ablation). Accounting entry per step: (z_t, q). ``delta`` defaults to the NoiseSchedule's
    (or the ledger's, or 1e-5).

    >>> import torch
    >>> from optzoo.dpc4 import DPSGD, per_sample_grads
    >>> model = torch.nn.Linear(3, 1)
    >>> opt = DPSGD(torch.optim.Adam(model.parameters(), lr=1e-2), sample_rate=0.1,
    ...             expected_batch_size=10, noise_multiplier=1.0, generator=0)
    >>> per_sample_grads(model, lambda out, y: ((out - y) ** 2).mean(), torch.ones(8, 3), torch.zeros(8, 1))
    >>> opt.step()
    >>> opt.ledger.steps, sorted(opt.state_dict()["privacy"])
    (1, ['config', 'generator', 'ledger', 'seed', 'step'])
    """

    _owner = "DPSGD"

    def __init__(self, params, lr: float | None = None, *, sample_rate: float, expected_batch_size: float,
                 noise_multiplier, max_grad_norm=1.0, ledger: PrivacyLedger | None = None,
                 delta: float | None = None, generator=None):
        self._setup(params, lr, sample_rate, expected_batch_size, noise_multiplier, ledger, generator, delta)
        self.clip_schedule = as_schedule(max_grad_norm, owner=self._owner, name="max_grad_norm")

    @torch.no_grad()
    def step(self, closure=None, *, indices=None):
        loss = self._closure(closure)
        ps, g, _ = self._grad_samples()
        c, _ = self.clip_schedule(self.t)
        z = self._z(self.t)
        entries = [(z, self.sample_rate)]
        self.ledger.check(entries)
        u, self.last_info = dpsgd_update(g, expected_batch_size=self.expected_batch_size,
                                         sample_rate=self.sample_rate, clip=c, noise_multiplier=z,
                                         generator=self.generator)
        self.ledger.charge(entries, sensitivity=c, noise_std=z * c, checked=True)
        self._release(ps, u)
        return loss


class DPC4(_PrivateOptimizer):
    r"""DP-C4 (reconstructed): coupled clipping with shifted thresholds and error feedback.

    See :mod:`optzoo.dpc4.core` for the update in math; the update u_t goes to ``p.grad`` and
    the wrapped optimizer steps (default ``torch.optim.SGD(params, lr=lr)``: x <- x - lr u_t;
    pass a torch optimizer as ``params`` to wrap momentum SGD, Adam, ...). ``memory="anchor"``
    keeps one anchor per record (``self.state[p]["anchors"]``, shape ``(n, *p.shape)``; needs
    ``num_records`` and the batch's record ``indices`` at each ``step``); ``memory="ef"`` keeps
    O(d) error-feedback state (``self.state[p]["memory"]``), whose full-batch release is
    accounted with q = 1 and sensitivity 2 C2_t B (needs a feedback noise multiplier: pass a
    :class:`NoiseSchedule` from ``calibrate(..., feedback_ratio=...)`` or
    ``feedback_noise_multiplier``). Thresholds come from a public schedule of t only. An empty
    Poisson batch (b = 0) is a step: its noise is released and charged.

    ``clip_schedule`` defaults to a constant threshold C1 = 1.0 (DP-SGD's usual
    ``max_grad_norm``; ``ShiftedDecay(c0=1, gamma=0, shift=0.5)``, so ``memory="ef"`` keeps the
    shifted C2 = 1.5), with which the anchors can follow the per-record gradients wherever the iterate goes. The
    spec's INFERRED decaying schedule :class:`ShiftedDecay` (what the reproduction runs, with a
    decaying step size) shrinks how far an anchor may move per visit; with a constant step
    size the anchors then lag, the public mean keeps pushing along old gradients and the
    iterate drifts away from the solution (December trial: least squares with almost no noise
    went from mse 0.03 back to 12). With a constant threshold the noise accumulated in the
    public mean grows like sqrt(t) z C / n.

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
    _config_keys = (*_CONFIG_KEYS, "memory", "num_records")

    def __init__(self, params, lr: float | None = None, *, sample_rate: float, expected_batch_size: float,
                 noise_multiplier, clip_schedule=_CONSTANT_SHIFTED, memory: str = "anchor",
                 num_records: int | None = None, feedback_noise_multiplier=None,
                 ledger: PrivacyLedger | None = None, delta: float | None = None, generator=None):
        self._setup(params, lr, sample_rate, expected_batch_size, noise_multiplier, ledger, generator, delta)
        o = self._owner
        self.clip_schedule = as_schedule(clip_schedule, owner=o)
        self.memory = check_choice("memory", memory, ("anchor", "ef"), owner=o)
        if feedback_noise_multiplier is not None:
            self._fb = _noise_schedule(feedback_noise_multiplier, owner=o)
        if memory == "ef" and self._fb is None:
            fail("feedback_noise_multiplier", o, "given (or a NoiseSchedule with feedback multipliers) "
                 "when memory='ef'", None)
        self.num_records = None
        if memory == "anchor":
            self.num_records = check_int("num_records", num_records, owner=o, low=1)
            if abs(round(self.sample_rate * self.num_records) - self.expected_batch_size) > 0.5:
                fail("expected_batch_size", o, f"round(sample_rate * num_records) = "
                     f"{round(self.sample_rate * self.num_records)}", expected_batch_size)

    def _memory_views(self, ps: list[Tensor]) -> tuple[list[Tensor], list[Tensor] | None]:
        """Per-parameter DP memory as flat views (created at the first step, like Adam's moments)."""
        mem, anchors = [], [] if self.memory == "anchor" else None
        for p in ps:
            st = self.state[p]
            if "memory" not in st:
                st["memory"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
                if anchors is not None:
                    st["anchors"] = torch.zeros((self.num_records, *p.shape), dtype=p.dtype, device=p.device)
            mem.append(st["memory"].reshape(-1))
            if anchors is not None:
                if not st["anchors"].is_contiguous():  # the anchors are written in place via a view
                    st["anchors"] = st["anchors"].contiguous()
                anchors.append(st["anchors"].view(self.num_records, -1))
        return mem, anchors

    @property
    def dpc4_state(self) -> DPC4State:
        """The DP memory as one flat :class:`DPC4State` (a concatenated copy, for inspection)."""
        ps = self._params()
        mem, anchors = self._memory_views(ps)
        return DPC4State(self.t, torch.cat(mem), None if anchors is None else torch.cat(anchors, dim=1))

    @torch.no_grad()
    def step(self, closure=None, *, indices=None):
        loss = self._closure(closure)
        ps, g, b = self._grad_samples()
        if self.memory == "anchor":
            if indices is None:
                fail("indices", "DPC4.step", "the record ids of the Poisson batch (memory='anchor')", None)
            indices = torch.as_tensor(indices, dtype=torch.long).reshape(-1)
            if indices.numel() != b:
                fail("indices", "DPC4.step", f"of length {b} (the batch size)", indices.numel())
            if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= self.num_records):
                fail("indices", "DPC4.step", f"ids in [0, {self.num_records - 1}]", indices.tolist())
            if indices.unique().numel() != indices.numel():
                fail("indices", "DPC4.step", "distinct record ids (a Poisson batch holds each record "
                     "at most once)", indices.tolist())
        c1, c2 = self.clip_schedule(self.t)
        z = self._z(self.t)
        if self.memory == "anchor":
            entries, sens, stds, zf = [(z, self.sample_rate)], c1, z * c1, None
        else:
            zf = self._fb(self.t)
            sens2 = 2.0 * c2 * self.expected_batch_size
            entries, sens, stds = [(z, self.sample_rate), (zf, 1.0)], [c1, sens2], [z * c1, zf * sens2]
        self.ledger.check(entries)
        mem, anchors = self._memory_views(ps)
        u, new, self.last_info = dpc4_update(
            g, DPC4State(self.t, mem, anchors), indices=indices,
            expected_batch_size=self.expected_batch_size, sample_rate=self.sample_rate, clip1=c1,
            clip2=c2, noise_multiplier=z, feedback_noise_multiplier=zf, generator=self.generator,
            inplace=True)
        self.ledger.charge(entries, sensitivity=sens, noise_std=stds, checked=True)
        for p, m in zip(ps, new.memory, strict=True):  # anchors were written in place
            self.state[p]["memory"] = m.reshape(p.shape)
        self._release(ps, u)
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
        loss = loss_fn(out, y.unsqueeze(0))
        if not torch.is_tensor(loss) or loss.numel() != 1:
            fail("loss_fn", "per_sample_grads", "a callable returning one loss value (a scalar "
                 "tensor) for a batch of one", tuple(loss.shape) if torch.is_tensor(loss)
                 else type(loss).__name__, exc=TypeError)
        return loss.reshape(())

    if inputs.shape[0] == 0:
        grads = {n: torch.zeros(0, *params[n].shape, dtype=params[n].dtype) for n in names}
    else:
        grads = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, inputs, targets)
    named = dict(model.named_parameters())
    for n in names:
        named[n].grad_sample = grads[n]
