"""SALAAD: sparse + low-rank structure learned during training (arXiv 2602.00942, ICML 2026).

Ma, Bal, Zhang, Li, He, Zeilinger, Muehlebach. Official code ``HaoMAFRLu/salaad`` (CC BY-NC
4.0: read to understand, nothing copied). Problem, over chosen weight blocks :math:`X_i`:

.. math::

   \\min_{X,L,S}\\; \\ell(X) + \\sum_i \\alpha_i\\|L_i\\|_* + \\beta_i\\|S_i\\|_1
   \\quad\\text{s.t.}\\quad X_i = L_i + S_i,

solved by an inexact augmented Lagrangian. X-step ("coupled", the default): the user's
optimizer steps on :math:`\\ell(X) + \\sum_i \\tfrac{\\rho_i}{2}\\|X_i - L_i - S_i + Y_i/\\rho_i\\|_F^2`
(:meth:`SALAAD.penalty`); "decoupled": the optimizer steps on :math:`\\ell` and
:meth:`SALAAD.step` applies :math:`X \\leftarrow X - \\eta\\rho(X - L - S + Y/\\rho)`.
Every ``admm_every`` calls of :meth:`SALAAD.step` each block gets one structured sweep
(:func:`optzoo.salaad.prox.admm_sweep`: SVT for L, the rank controller on alpha, soft
threshold for S, the density controller on beta, the dual ascent on Y).
:meth:`SALAAD.export` turns one state into a compressed model at any budget.

Fidelity: official-code for the sweep, its order, the controller (with the late ``k_d`` term
after ``d_start`` updates), the rho modes, the initialisations and the budget allocation, as
described in the project's spec (which was written from the code). Ours / INFERRED: alpha and
beta clamped at 0; one rho for every block (the official configs use smaller rho for the
embeddings and head); the export density counts exact non-zeros; the default ``init="zero"``.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields, replace

import torch

from optzoo._core.validation import (
    check_bool,
    check_choice,
    check_int,
    check_real,
    check_type,
    fail,
    returned_real,
)
from optzoo.salaad.export import Compressed, compress_blocks
from optzoo.salaad.prox import BlockState, admm_sweep

__all__ = ["DEFAULT_TARGETS", "SALAAD", "SALAADConfig"]

#: attention, MLP, embedding and head matrices of Llama-style Hugging Face models
DEFAULT_TARGETS = r"(q|k|v|o|gate|up|down)_proj|embed_tokens|lm_head"


@dataclass(frozen=True)
class SALAADConfig:
    """SALAAD's hyperparameters (defaults: the official ``configs/llama_9m.yaml``).

    targets: regex searched in module names; the ``weight`` of every matching ``nn.Linear`` /
        ``nn.Embedding`` becomes a block.
    rank_ratio: target ``r*`` of ``rank / min(m, n)`` (official ``rate_rank``), in (0, 1].
    density: target ``d*`` of ``nnz(S) / mn`` (official ``rate_sparsity``), in (0, 1].
    rho: penalty ``rho`` > 0 (official 1e-6 for 32k-vocabulary models: retune for yours).
    admm_every: optimizer steps per structured sweep (official ``num_freq``).
    k_alpha, k_beta: integral gains of the rank and density controllers (``rate_decay``).
    k_d: gain of the late anti-growth term (``drate``), active after ``d_start`` sweeps.
    energy: sigma^2 energy that defines the recorded rank during training.
    mode: ``"coupled"`` (penalty in the loss) or ``"decoupled"`` (explicit step in ``step``).
    rho_mode: ``"fixed"`` or ``"adaptive"`` (tanh ramp from rho to 10 rho centred at sweep
        ``rho_center``, width ``rho_width``).
    init: ``"zero"`` (L = 0) or ``"svd"`` (L = rank-floor(R r*) truncated SVD of X).
    init_threshold: start alpha at ``rho * sigma_k`` with ``k = ceil(R r*) - 1`` (``is_init``).
    enabled: False turns SALAAD off: no penalty, no sweeps (plain training).
    """

    targets: str = DEFAULT_TARGETS
    rank_ratio: float = 0.15
    density: float = 0.05
    rho: float = 1e-6
    admm_every: int = 2
    k_alpha: float = 0.2
    k_beta: float = 0.002
    k_d: float = 0.01
    d_start: int = 1500
    energy: float = 0.999
    mode: str = "coupled"
    rho_mode: str = "fixed"
    rho_center: int = 2000
    rho_width: float = 100.0
    init: str = "zero"
    init_threshold: bool = False
    enabled: bool = True

    def __post_init__(self) -> None:
        o = "SALAADConfig"
        check_type("targets", self.targets, str, owner=o, what="a regular expression (str)")
        try:
            re.compile(self.targets)
        except re.error as e:
            fail("targets", o, f"a valid regular expression ({e})", self.targets)
        check_real("rank_ratio", self.rank_ratio, owner=o, low=0.0, high=1.0, closed="right")
        check_real("density", self.density, owner=o, low=0.0, high=1.0, closed="right")
        check_real("rho", self.rho, owner=o, low=0.0, closed="neither")
        check_int("admm_every", self.admm_every, owner=o, low=1)
        for name in ("k_alpha", "k_beta", "k_d"):
            check_real(name, getattr(self, name), owner=o, low=0.0)
        check_int("d_start", self.d_start, owner=o, low=0)
        check_real("energy", self.energy, owner=o, low=0.0, high=1.0, closed="right")
        check_choice("mode", self.mode, ("coupled", "decoupled"), owner=o)
        check_choice("rho_mode", self.rho_mode, ("fixed", "adaptive"), owner=o)
        check_int("rho_center", self.rho_center, owner=o, low=0)
        check_real("rho_width", self.rho_width, owner=o, low=0.0, closed="neither")
        check_choice("init", self.init, ("zero", "svd"), owner=o)
        check_bool("init_threshold", self.init_threshold, owner=o)
        check_bool("enabled", self.enabled, owner=o)


def _find_blocks(model: torch.nn.Module, pattern: str) -> dict[str, torch.nn.Parameter]:
    found: dict[str, torch.nn.Parameter] = {}
    seen: dict[int, str] = {}
    candidates = []
    for name, mod in model.named_modules(remove_duplicate=False):
        w = getattr(mod, "weight", None)
        if not isinstance(w, torch.nn.Parameter) or not isinstance(mod, (torch.nn.Linear, torch.nn.Embedding)):
            continue
        candidates.append(name)
        if not re.search(pattern, name):
            continue
        if w.ndim != 2:
            fail("targets", "SALAAD", "a pattern matching only 2-D weights", f"{name} has shape {tuple(w.shape)}")
        if id(w) in seen:
            warnings.warn(f"SALAAD: {name}.weight is tied to {seen[id(w)]}.weight; it is one block "
                          f"(handled once, under the name {seen[id(w)]!r}).", stacklevel=3)
            continue
        seen[id(w)] = name
        found[name] = w
    if not found:
        fail("targets", "SALAAD", "a pattern matching at least one nn.Linear / nn.Embedding of the "
             f"model (its candidates: {', '.join(candidates[:8]) or 'none'}"
             f"{', ...' if len(candidates) > 8 else ''})", pattern)
    return found


class SALAAD:
    """Keeps the sparse + low-rank surrogates of a model's targeted matrices during training.

    Use it beside any optimizer::

        sal = SALAAD(model, rho=1e-3, rank_ratio=0.25)
        for batch in data:
            loss = task_loss(model, batch) + sal.penalty()   # coupled mode
            loss.backward(); opt.step(); opt.zero_grad()
            sal.step()                                       # a sweep every admm_every calls
        small = sal.export(200_000)                          # any budget, same state

    ``config`` (a :class:`SALAADConfig`) and keyword overrides of its fields. The state (L, S,
    Y in float32 on each weight's device, alpha, beta, counters) round-trips through
    :meth:`state_dict`; :attr:`history` has per-block rank ratio, density and thresholds per sweep.
    """

    def __init__(self, model: torch.nn.Module, config: SALAADConfig | None = None, **overrides) -> None:
        check_type("model", model, torch.nn.Module, owner="SALAAD", what="a torch.nn.Module")
        if config is None:
            config = SALAADConfig()
        check_type("config", config, SALAADConfig, owner="SALAAD", what="a SALAADConfig")
        known = {f.name for f in fields(SALAADConfig)}
        for k in overrides:
            if k not in known:
                raise TypeError(f"SALAAD got an unexpected keyword argument {k!r} (fields of SALAADConfig: "
                                f"{', '.join(sorted(known))}).")
        self.config = replace(config, **overrides)
        self.model = model
        self.weights = _find_blocks(model, self.config.targets)
        for name, w in self.weights.items():
            if not bool(torch.isfinite(w.detach()).all()):
                fail("model", "SALAAD", "a model with finite weights", f"NaN/inf in {name}.weight")
        self.blocks: dict[str, BlockState] = {k: self._init_block(w) for k, w in self.weights.items()}
        self.history: dict[str, dict[str, list[float]]] = {
            k: {"rank_ratio": [], "density": [], "tau_L": [], "tau_S": []} for k in self.weights}
        self.calls = 0
        self.sweeps = 0
        self._penalty_used = False

    # ------------------------------------------------------------------ state
    def _init_block(self, w: torch.nn.Parameter) -> BlockState:
        cfg = self.config
        X = w.detach().float()
        m, n = X.shape
        R = min(m, n)
        L = torch.zeros_like(X)
        alpha = 0.0
        if cfg.init == "svd" or cfg.init_threshold:
            U, s, Vh = torch.linalg.svd(X, full_matrices=False)
            if cfg.init == "svd":
                k = max(1, math.floor(R * cfg.rank_ratio))
                L = (U[:, :k] * s[:k]) @ Vh[:k]
            if cfg.init_threshold:
                k = max(0, math.ceil(R * cfg.rank_ratio) - 1)
                alpha = cfg.rho * float(s[k])
        return BlockState(L, torch.zeros_like(X), torch.zeros_like(X), alpha, 0.0, R, m * n)

    def rho_at(self, sweep: int | None = None) -> float:
        """The penalty rho at a sweep (fixed, or the adaptive tanh ramp to 10 rho)."""
        cfg = self.config
        t = self.sweeps if sweep is None else sweep
        if cfg.rho_mode == "fixed":
            return cfg.rho
        return cfg.rho * (1.0 + 4.5 * (1.0 + math.tanh((t - cfg.rho_center) / cfg.rho_width)))

    @property
    def target_params(self) -> int:
        """Parameters in the targeted blocks (dense)."""
        return sum(w.numel() for w in self.weights.values())

    @property
    def rest_params(self) -> int:
        """Parameters outside the targeted blocks: the smallest exportable budget."""
        ids = {id(w) for w in self.weights.values()}
        seen, n = set(), 0
        for p in self.model.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                n += 0 if id(p) in ids else p.numel()
        return n

    # ------------------------------------------------------------------ training
    def penalty(self) -> torch.Tensor:
        """``sum_i rho/2 ||X_i - L_i - S_i + Y_i/rho||_F^2`` (differentiable in the weights);
        zero when disabled or in decoupled mode. Add it to the loss before ``backward``."""
        w0 = next(iter(self.weights.values()))
        self._penalty_used = True
        if not self.config.enabled or self.config.mode == "decoupled":
            return torch.zeros((), device=w0.device)
        rho = self.rho_at()
        total = torch.zeros((), device=w0.device)
        for k, w in self.weights.items():
            st = self.blocks[k]
            total = total + 0.5 * rho * ((w.float() - st.L - st.S + st.Y / rho) ** 2).sum()
        return total

    @torch.no_grad()
    def step(self, lr: float | None = None) -> bool:
        """Call once after each optimizer step. Runs a structured sweep every ``admm_every``
        calls (returns True when it did). Decoupled mode needs ``lr`` (the step size eta)."""
        cfg = self.config
        if not cfg.enabled:
            return False
        if cfg.mode == "coupled" and not self._penalty_used:
            raise RuntimeError("SALAAD.step: penalty() was not used since the last step; in coupled "
                               "mode add sal.penalty() to the loss before backward (or use "
                               "mode='decoupled').")
        self._penalty_used = False
        rho = self.rho_at()
        if cfg.mode == "decoupled":
            if lr is None:
                fail("lr", "SALAAD.step", "a real number > 0 in decoupled mode", lr)
            lr = check_real("lr", lr, owner="SALAAD.step", low=0.0, closed="neither")
            for k, w in self.weights.items():
                st = self.blocks[k]
                w.sub_((lr * rho * (w.float() - st.L - st.S + st.Y / rho)).to(w.dtype))
        self.calls += 1
        if self.calls % cfg.admm_every:
            return False
        late = self.sweeps >= cfg.d_start
        for k, w in self.weights.items():
            X = w.detach()
            if not bool(torch.isfinite(X).all()):
                raise FloatingPointError(f"SALAAD.step: the weight of block {k!r} has NaN/inf entries "
                                         f"(training diverged before sweep {self.sweeps}).")
            st = admm_sweep(X, self.blocks[k], rho=rho, rank_ratio=cfg.rank_ratio, density=cfg.density,
                            k_alpha=cfg.k_alpha, k_beta=cfg.k_beta, k_d=cfg.k_d, late=late,
                            energy=cfg.energy)
            self.blocks[k] = st
            m, n = X.shape
            h = self.history[k]
            h["rank_ratio"].append(st.rank / min(m, n))
            h["density"].append(st.nnz / (m * n))
            h["tau_L"].append(st.alpha / rho)
            h["tau_S"].append(st.beta / rho)
        self.sweeps += 1
        return True

    def surrogate(self, name: str) -> torch.Tensor:
        """``L + S`` of one block (float32)."""
        st = self.blocks[name]
        return st.L + st.S

    def residual(self) -> float:
        """Primal residual ``sqrt(sum_i ||X_i - L_i - S_i||^2)``."""
        return math.sqrt(sum(float(((w.detach().float() - self.surrogate(k)) ** 2).sum())
                             for k, w in self.weights.items()))

    def stats(self) -> dict[str, dict[str, float]]:
        """Per block: last rank ratio, density and thresholds tau_L = alpha/rho, tau_S = beta/rho."""
        rho = self.rho_at()
        out = {}
        for k, w in self.weights.items():
            st = self.blocks[k]
            m, n = w.shape
            out[k] = {"rank_ratio": st.rank / min(m, n), "density": st.nnz / (m * n),
                      "tau_L": st.alpha / rho, "tau_S": st.beta / rho, "shape": (m, n)}
        return out

    # ------------------------------------------------------------------ deployment
    def full_params(self, *, energy: float = 0.999) -> int:
        """``P_tot``: the exported count at every block's own rank and nnz (no budget cut)."""
        return self.export(None, energy=energy).params

    def export(self, budget: int | None, *, gamma: float = 0.5, energy: float = 0.999) -> Compressed:
        """A compressed copy of the model with at most ``budget`` parameters (exact count).

        ``budget``: total parameters of the exported model, counting the non-targeted ones
        (at least :attr:`rest_params`; ``None``: every block at its own rank and nnz).
        ``gamma``: share of the cut taken from the low-rank parts (0.5 as in the official
        resave script; 1.0 cuts ranks first). ``energy``: cumulative-sigma share that sets each
        block's rank (1.0: the exact rank of L, so a budget at or above ``P_tot`` exports
        ``L + S`` itself).
        """
        if budget is not None:
            budget = check_int("budget", budget, owner="SALAAD.export", low=0)
        if self.sweeps == 0:
            raise RuntimeError("SALAAD.export: no sweep has run yet, so every block's L and S are "
                               "still 0 and the export would zero every targeted weight; call "
                               "step() (or train with SALAADTrainer) until at least one sweep runs")
        L = {k: st.L for k, st in self.blocks.items()}
        S = {k: st.S for k, st in self.blocks.items()}
        return compress_blocks(self.model, self.weights, L, S, budget=budget, gamma=gamma,
                               energy=energy, owner="SALAAD.export")

    def budget_curve(self, evaluate: Callable[[torch.nn.Module], float],
                     fractions: Sequence[float] = (1.0, 0.8, 0.6, 0.5, 0.4, 0.3), *,
                     gamma: float = 0.5, energy: float = 0.999) -> list[dict]:
        """Export at ``rest + f * target_params`` for each fraction ``f`` and evaluate each
        exported model with ``evaluate(model) -> float``. One training state, every budget."""
        out = []
        for f in fractions:
            f = check_real("fractions", f, owner="SALAAD.budget_curve", low=0.0, high=1.0)
            c = self.export(self.rest_params + round(f * self.target_params), gamma=gamma, energy=energy)
            v = returned_real("evaluate", evaluate(c.model), owner="SALAAD.budget_curve",
                              rule="a callable returning a real number per model")
            if math.isnan(v):
                fail("evaluate", "SALAAD.budget_curve", "a callable returning a real number per "
                     f"model, not NaN (fraction {f:g})", v)
            out.append({"fraction": f, "budget": c.budget, "params": c.params, "bytes": c.nbytes,
                        "index_bytes": c.index_bytes, "value": v})
        return out

    # ------------------------------------------------------------------ checkpointing
    def state_dict(self) -> dict:
        return {"config": asdict(self.config), "calls": self.calls, "sweeps": self.sweeps,
                "blocks": {k: {"L": st.L.clone(), "S": st.S.clone(), "Y": st.Y.clone(),
                               "alpha": st.alpha, "beta": st.beta, "rank": st.rank, "nnz": st.nnz}
                           for k, st in self.blocks.items()},
                "history": {k: {h: list(v) for h, v in d.items()} for k, d in self.history.items()}}

    def load_state_dict(self, state: dict) -> None:
        if set(state.get("blocks", {})) != set(self.weights):
            fail("state", "SALAAD.load_state_dict", f"a state with the blocks {sorted(self.weights)}",
                 sorted(state.get("blocks", {})))
        for k, b in state["blocks"].items():
            want = tuple(self.weights[k].shape)
            for part in ("L", "S", "Y"):
                got = tuple(b[part].shape)
                if got != want:
                    fail("state", "SALAAD.load_state_dict", f"blocks of this model's shapes (block "
                         f"{k!r}: {want})", f"{part} of block {k!r} with shape {got}")
        self.config = SALAADConfig(**state["config"])
        self.calls, self.sweeps = int(state["calls"]), int(state["sweeps"])
        for k, b in state["blocks"].items():
            dev = self.weights[k].device
            self.blocks[k] = BlockState(b["L"].to(dev, torch.float32), b["S"].to(dev, torch.float32),
                                        b["Y"].to(dev, torch.float32), float(b["alpha"]), float(b["beta"]),
                                        int(b["rank"]), int(b["nnz"]))
        self.history = {k: {h: list(v) for h, v in d.items()} for k, d in state["history"].items()}
