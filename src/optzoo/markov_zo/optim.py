"""``torch.optim`` flavour of zero-order SGD with randomized batching under Markov noise.

Same update as :func:`optzoo.markov_zo.markov_zo_minimize` (see ``zo.py`` for the math),
for a model's parameters: the direction :math:`e` is uniform on the unit sphere of the
concatenation of all parameters (dimension D), and the optimizer itself holds the noise
stream, so both halves of a pair are evaluated on the *same* sample by construction.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch

from optzoo._core.rng import np_rng, torch_generator
from optzoo._core.validation import check_int, check_real, fail, joint_group_options
from optzoo.markov_zo.zo import (
    _check_common,
    check_smoothing_resolution,
    mlmc_weights,
    zo_coefficient,
)

__all__ = ["MarkovZOSGD"]

_OWNER = "MarkovZOSGD"


class MarkovZOSGD(torch.optim.Optimizer):
    """Zero-order SGD whose samples come from a Markov stream.

    .. math::
        G=\\sum_i w_i\\,c_i\\,e_i,\\quad c_i=\\tfrac{D}{2t}[\\ell(\\theta+te_i;Z_i)-\\ell(\\theta-te_i;Z_i)]
        \\ (\\text{one-point: } \\tfrac{D}{t}\\ell(\\theta+te_i;Z_i)),\\qquad \\theta\\leftarrow\\theta-\\gamma G,

    with MLMC weights :math:`w` (``batching="randomized"``) or :math:`w_i=1/B` (``"fixed"``).

    Parameters
    ----------
    params : iterable of parameters or groups; ``lr`` is per group (schedulers work).
    stream : the noise source: any object with ``state`` and ``advance()``, e.g. a
        :class:`~optzoo.markov_zo.StickyChain` over data indices.
    smoothing, feedback, batching, batch, max_level, seed : as in ``markov_zo_minimize``.

    ``step(closure)`` calls ``closure(z)`` with the current stream state ``z``; it must return
    the loss of the model *as it is now* on sample ``z`` (no backward needed). The optimizer
    perturbs the parameters, calls the closure (twice per sample for two-point feedback, on
    the same ``z``), restores them, advances the stream once per sample, then steps.

    >>> import torch
    >>> from optzoo.markov_zo import MarkovZOSGD, StickyChain
    >>> w = torch.nn.Parameter(torch.ones(3))
    >>> ch = StickyChain([-0.1, 0.1], stay_prob=0.5, seed=0)
    >>> opt = MarkovZOSGD([w], lr=0.05, stream=ch, smoothing=1e-3, max_level=8, seed=0)
    >>> for _ in range(300):
    ...     loss = opt.step(lambda z: 0.5 * ((w - z) ** 2).sum())
    >>> bool(w.norm() < 0.3)
    True
    """

    def __init__(self, params, lr: float = 1e-3, *, stream, smoothing: float = 1e-3,
                 feedback: str = "two_point", batching: str = "randomized", batch: int = 1,
                 max_level: int = 64, seed: int = 0):
        check_real("lr", lr, owner=_OWNER, low=0.0, closed="neither")
        _check_common(_OWNER, feedback=feedback, smoothing=smoothing, batching=batching,
                      batch=batch, max_level=max_level)
        if not (hasattr(stream, "state") and hasattr(stream, "advance")):
            raise TypeError(f"The 'stream' argument of {_OWNER} must have 'state' and 'advance()' "
                            f"(e.g. a StickyChain). Got {type(stream).__name__}.")
        seed = check_int("seed", seed, owner=_OWNER, low=0)
        # every hyperparameter lives in param_groups (torch's convention, so schedulers and
        # state_dict see them); all but lr are properties of the one joint direction over all
        # parameters, so step() requires the groups to agree on them
        super().__init__(params, dict(lr=lr, smoothing=smoothing, feedback=feedback,
                                      batching=batching, batch=batch, max_level=max_level))
        ps = [p for g in self.param_groups for p in g["params"]]
        if ps and all(torch.is_floating_point(p) for p in ps):
            with torch.no_grad():
                scale = max(float(p.detach().abs().max()) if p.numel() else 0.0 for p in ps)
            check_smoothing_resolution(_OWNER, smoothing, scale,
                                       max(float(torch.finfo(p.dtype).eps) for p in ps))
        # the user's data source, like a DataLoader: not part of the optimizer's state_dict
        self.stream = stream
        self.seed = seed
        self._gen = torch_generator(seed, "markov_zo_dirs")
        self._np = np_rng(seed, "markov_zo_levels")
        self._counts = {"step": 0, "calls": 0, "samples": 0}

    # counters are read from the optimizer's own state (saved with it)
    @property
    def calls(self) -> int:
        return self._counts["calls"]

    @property
    def samples(self) -> int:
        return self._counts["samples"]

    def _params(self):
        return [p for g in self.param_groups for p in g["params"]]

    def _shared(self) -> dict:
        return joint_group_options(self.param_groups, _JOINT, owner=_OWNER)

    def state_dict(self) -> dict:
        """torch's state_dict plus what is not per parameter: the step and call counters, the
        seed and both generators (directions, MLMC levels), so a resumed run continues the
        same trajectory (given the same stream state)."""
        sd = super().state_dict()
        sd["markov_zo"] = {**self._counts, "seed": self.seed,
                           "dir_generator": self._gen.get_state(),
                           "level_rng": copy.deepcopy(self._np.bit_generator.state)}
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        extra = state_dict.pop("markov_zo", None)
        if extra is None:
            raise ValueError(f"The 'state_dict' argument of {_OWNER}.load_state_dict must come "
                             f"from {_OWNER}.state_dict() (a 'markov_zo' entry). Got keys "
                             f"{sorted(state_dict)}.")
        super().load_state_dict(state_dict)
        self.seed = extra["seed"]
        self._gen.set_state(extra["dir_generator"])
        self._np.bit_generator.state = copy.deepcopy(extra["level_rng"])
        self._counts = {k: int(extra[k]) for k in ("step", "calls", "samples")}

    def _value(self, closure, z) -> float:
        v = closure(z)
        v = float(v.detach()) if torch.is_tensor(v) else float(v)
        if not math.isfinite(v):
            fail("closure", _OWNER, "a callable returning finite losses", v)
        self._counts["calls"] += 1
        return v

    @torch.no_grad()
    def step(self, closure):  # noqa: D102 (documented on the class)
        if not callable(closure):
            fail("closure", _OWNER, "a callable closure(z) -> loss", closure, exc=TypeError)
        hp = self._shared()
        params = self._params()
        D = sum(p.numel() for p in params)
        t = hp["smoothing"]
        if hp["batching"] == "randomized":
            w = mlmc_weights(int(self._np.geometric(0.5)), hp["batch"], hp["max_level"])
        else:
            w = np.full(hp["batch"], 1.0 / hp["batch"])
        # G is accumulated on the fly: directions are never stored (memory O(D), not O(nD)).
        acc = [torch.zeros_like(p) for p in params]
        losses = []
        for wi in w:
            e = [torch.randn(p.shape, generator=self._gen, dtype=p.dtype).to(p.device) for p in params]
            norm = math.sqrt(sum(float((x * x).sum()) for x in e))
            e = [x / norm for x in e]
            z = self.stream.state
            for p, x in zip(params, e, strict=False):
                p.add_(x, alpha=t)
            fp = self._value(closure, z)
            if hp["feedback"] == "two_point":
                for p, x in zip(params, e, strict=False):
                    p.add_(x, alpha=-2 * t)
                fm = self._value(closure, z)
                for p, x in zip(params, e, strict=False):
                    p.add_(x, alpha=t)
                losses.append(0.5 * (fp + fm))
            else:
                for p, x in zip(params, e, strict=False):
                    p.add_(x, alpha=-t)
                fm = None
                losses.append(fp)
            coef = zo_coefficient(fp, fm, D, t)  # the estimator's scalar, shared with zo.py
            self.stream.advance()
            self._counts["samples"] += 1
            for a, x in zip(acc, e, strict=False):
                a.add_(x, alpha=float(wi * coef))
        i = 0
        for group in self.param_groups:
            for p in group["params"]:
                p.add_(acc[i], alpha=-group["lr"])
                i += 1
        self._counts["step"] += 1
        for p in params:  # per-parameter state, as torch's optimizers keep it
            self.state[p]["step"] = self._counts["step"]
        st = self.state[params[0]]
        st["calls"], st["samples"] = self.calls, self.samples
        return float(np.mean(losses))


_JOINT = ("smoothing", "feedback", "batching", "batch", "max_level")
