"""A TRL-style trainer for CoPro on Hugging Face causal LMs: ``CoProConfig`` + ``CoProTrainer``.

The shape follows TRL's ``GRPOConfig`` / ``GRPOTrainer`` (field names ``num_generations``,
``max_completion_length``, ``temperature``, ``learning_rate``, ``beta``, ``num_iterations``,
``per_device_train_batch_size``; ``reward_funcs`` called as ``fn(prompts=..., completions=...)``),
but the loop is our own, small and single-process: it does not subclass
``transformers.Trainer`` and overrides no TRL hook, so no TRL version pin is needed (TRL is not
imported at all). For multi-GPU use the functional pieces (:func:`copro_e_step`,
:func:`copro_loss`) inside your own TRL/verl loop.

One step: sample ``per_device_train_batch_size`` prompts, generate ``num_generations``
completions each, call every reward function, which returns one dict per completion
``{"objectives": [...], "constraints": [...]}`` (constraints feasible iff <= 0; concatenated
across reward functions), run the E-step per prompt group, then ``num_iterations`` optimizer
steps on the M-step loss (weighted token-averaged NLL + ``beta`` x k3 KL to the sampling
policy). Fidelity: reconstructed (see ``docs/papers/copro.md``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, fields

import torch

from optzoo._core.rng import torch_generator
from optzoo._core.validation import check_choice, check_int, check_real, fail
from optzoo.copro.estep import copro_e_step
from optzoo.copro.loss import CoProLoss

__all__ = ["CoProConfig", "CoProTrainer"]


def _f(default, help):  # noqa: A002 - TRL's metadata key
    return field(default=default, metadata={"help": help})


@dataclass
class CoProConfig:
    """Configuration of :class:`CoProTrainer` (every default is INFERRED; see the docs)."""

    num_generations: int = _f(8, "Group size G: completions per prompt (spec: 8 for LLM tasks).")
    per_device_train_batch_size: int = _f(4, "Prompts per step.")
    max_completion_length: int = _f(16, "Maximum new tokens per completion.")
    temperature: float = _f(1.0, "Sampling temperature.")
    learning_rate: float = _f(1e-6, "AdamW learning rate (spec: 1e-6 for LLMs).")
    max_steps: int = _f(100, "Number of training steps.")
    num_iterations: int = _f(1, "M-step gradient steps per batch (K, spec 1-4).")
    beta: float = _f(1.0, "KL coefficient c of the trust region (initial value for kl_constraint).")
    trust_region: str = _f("kl_penalty", "'kl_penalty' (fixed beta) or 'kl_constraint' (dual ascent).")
    kl_bound: float = _f(0.01, "epsilon_M of the KL constraint.")
    senses: tuple | None = _f(None, "'max'/'min' per objective (default: all 'max').")
    tau_feas: float = _f(0.5, "Target feasible mass tau_F.")
    eps_progress: float = _f(0.1, "Progress margin eps_u.")
    eta_tie: float = _f(0.1, "Near-tie mass cap eta_a.")
    tie_tol: float = _f(0.02, "Tie tolerance (fraction of the robust within-group scale).")
    on_nan: str = _f("raise", "'raise' or 'infeasible' for NaN/inf rewards.")
    max_grad_norm: float = _f(1.0, "Gradient clipping norm.")
    logging_steps: int = _f(1, "Log every this many steps.")
    seed: int = _f(0, "Seed of prompt order and sampling.")

    def __post_init__(self):
        o = "CoProConfig"
        for name in ("num_generations", "per_device_train_batch_size", "max_completion_length",
                     "max_steps", "num_iterations", "logging_steps"):
            check_int(name, getattr(self, name), owner=o, low=2 if name == "num_generations" else 1)
        check_real("temperature", self.temperature, owner=o, low=0.0, closed="neither")
        check_real("learning_rate", self.learning_rate, owner=o, low=0.0, closed="neither")
        check_real("beta", self.beta, owner=o, low=0.0)
        check_real("kl_bound", self.kl_bound, owner=o, low=0.0, closed="neither")
        check_choice("trust_region", self.trust_region, ("kl_penalty", "kl_constraint"), owner=o)
        check_real("tau_feas", self.tau_feas, owner=o, low=0.0, high=1.0, closed="neither")
        check_real("eps_progress", self.eps_progress, owner=o, low=0.0)
        check_real("eta_tie", self.eta_tie, owner=o, low=0.0)
        check_real("tie_tol", self.tie_tol, owner=o, low=0.0)
        check_choice("on_nan", self.on_nan, ("raise", "infeasible"), owner=o)
        check_real("max_grad_norm", self.max_grad_norm, owner=o, low=0.0, closed="neither")
        check_int("seed", self.seed, owner=o)

    def to_dict(self):
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _reward_columns(rows, n: int, fn):
    """(objectives [n, m], constraints [n, c]) from one reward function's output: floats (TRL's
    convention: one objective) or dicts with "objectives" and optional "constraints"."""
    name = getattr(fn, "__name__", repr(fn))
    rule = (f"functions returning {n} entries (one per completion), each a float (or None) or a "
            "dict with 'objectives' (a list of floats of one length) and optional 'constraints'")
    if isinstance(rows, torch.Tensor):
        rows = rows.tolist()
    try:
        rows = list(rows)
    except TypeError:
        fail("reward_funcs", "CoProTrainer", rule, f"{type(rows).__name__} from {name}", exc=TypeError)
    if len(rows) != n:
        fail("reward_funcs", "CoProTrainer", rule, f"{len(rows)} entries from {name}")
    if all(r is None or (isinstance(r, numbers.Real) and not isinstance(r, bool)) for r in rows):
        vals = [float("nan") if r is None else float(r) for r in rows]
        return torch.tensor(vals, dtype=torch.float64)[:, None], torch.zeros(n, 0, dtype=torch.float64)
    if not all(isinstance(r, dict) and "objectives" in r for r in rows):
        bad = next(r for r in rows if not (isinstance(r, dict) and "objectives" in r))
        fail("reward_funcs", "CoProTrainer", rule, f"{type(bad).__name__} {bad!r}"[:80] + f" from {name}",
             exc=TypeError)
    out = []
    for key in ("objectives", "constraints"):
        cols = [list(r.get(key, [])) for r in rows]
        if len({len(c) for c in cols}) > 1:
            fail("reward_funcs", "CoProTrainer", rule,
                 f"'{key}' of lengths {sorted({len(c) for c in cols})} from {name}")
        out.append(torch.tensor(cols, dtype=torch.float64).reshape(n, -1))
    return out[0], out[1]


class CoProTrainer:
    """Train ``model`` (a Hugging Face causal LM) with CoPro on ``train_dataset``.

    ``train_dataset``: a sequence of prompts (str) or of dicts with a ``"prompt"`` key.
    ``reward_funcs``: callables ``fn(prompts=list[str], completions=list[str], **kw)`` returning
    one entry per completion: a float (TRL's reward-function convention; ``None`` for "not
    applicable" becomes NaN, handled by ``on_nan``): one objective; or a dict with
    ``"objectives"`` (list of floats, the same length for every completion) and optionally
    ``"constraints"`` (list of floats, feasible iff <= 0). The objectives of all functions, in
    order, are the columns ``senses`` refers to. ``processing_class``: the tokenizer.
    ``train()`` returns ``{"global_step", "log_history"}``; per-step logs also land in
    ``self.log_history`` (loss, nll, kl, beta, q_feasible, entropy, statuses, mean objectives).
    """

    def __init__(self, model, reward_funcs, args: CoProConfig | None = None, train_dataset=None,
                 processing_class=None, *, optimizer=None):
        o = "CoProTrainer"
        self.args = CoProConfig() if args is None else args
        if not isinstance(self.args, CoProConfig):
            fail("args", o, "a CoProConfig", type(self.args).__name__, exc=TypeError)
        if callable(reward_funcs):
            reward_funcs = [reward_funcs]
        if not reward_funcs or not all(callable(f) for f in reward_funcs):
            fail("reward_funcs", o, "a callable or a non-empty list of callables", reward_funcs, exc=TypeError)
        if processing_class is None:
            fail("processing_class", o, "a tokenizer (PreTrainedTokenizerBase)", None, exc=TypeError)
        if not train_dataset:
            fail("train_dataset", o, "a non-empty sequence of prompts", train_dataset)
        self.model, self.reward_funcs, self.tok = model, list(reward_funcs), processing_class
        self.prompts = [d["prompt"] if isinstance(d, dict) else d for d in train_dataset]
        if not all(isinstance(p, str) for p in self.prompts):
            fail("train_dataset", o, "prompts as str (or dicts with a str 'prompt')", self.prompts[:2], exc=TypeError)
        self.optimizer = optimizer or torch.optim.AdamW(model.parameters(), lr=self.args.learning_rate)
        self.loss_fn = CoProLoss(trust_region=self.args.trust_region, coef=self.args.beta,
                                 kl_bound=self.args.kl_bound)
        self.generator = torch_generator(self.args.seed, "copro-trainer")
        self.log_history: list[dict] = []
        self.global_step = 0

    # -- pieces ------------------------------------------------------------------------------

    def _device(self):
        return next(self.model.parameters()).device

    def _token_logps(self, seqs, prompt_len, attn):
        pos = (attn.cumsum(1) - 1).clamp(min=0)  # left padding: positions as generate() used them
        logits = self.model(input_ids=seqs, attention_mask=attn, position_ids=pos).logits
        logits = logits[:, prompt_len - 1:-1]
        logits = logits / self.args.temperature
        return torch.log_softmax(logits.float(), -1).gather(-1, seqs[:, prompt_len:, None])[..., 0]

    def _generate(self, prompts):
        a, tok, dev = self.args, self.tok, self._device()
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        side = getattr(tok, "padding_side", "right")
        tok.padding_side = "left"
        try:
            enc = tok(prompts, return_tensors="pt", padding=True)
        finally:
            tok.padding_side = side
        ids = enc["input_ids"].to(dev).repeat_interleave(a.num_generations, 0)
        att = enc["attention_mask"].to(dev).repeat_interleave(a.num_generations, 0)
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=self.generator))
        with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
            torch.manual_seed(seed)  # generate() samples from the global RNG: fork, seed, restore
            out = self.model.generate(input_ids=ids, attention_mask=att, do_sample=True,
                                      temperature=a.temperature, top_k=0, top_p=1.0,
                                      max_new_tokens=a.max_completion_length, pad_token_id=pad,
                                      eos_token_id=tok.eos_token_id)
        P = ids.shape[1]
        comp = out[:, P:]
        mask = torch.ones_like(comp, dtype=torch.bool)
        if tok.eos_token_id is not None:
            is_eos = comp == tok.eos_token_id
            after = (is_eos.cumsum(1) - is_eos.to(torch.long)) > 0   # tokens after the first EOS
            mask = ~after
        full_att = torch.cat([att, mask.to(att.dtype)], 1)
        texts = tok.batch_decode(comp.masked_fill(~mask, pad), skip_special_tokens=True)
        return out, P, full_att, mask, texts

    def _rewards(self, prompts, texts):
        G = self.args.num_generations
        rep = [p for p in prompts for _ in range(G)]
        objs, cons = [], []
        for fn in self.reward_funcs:
            o, c = _reward_columns(fn(prompts=rep, completions=texts), len(texts), fn)
            objs.append(o)
            cons.append(c)
        F = torch.cat(objs, -1).view(len(prompts), G, -1)
        g = torch.cat(cons, -1).view(len(prompts), G, -1) if sum(c.shape[-1] for c in cons) else None
        return F, g

    def step(self):
        a = self.args
        n = len(self.prompts)
        pick = torch.randint(0, n, (min(a.per_device_train_batch_size, n),), generator=self.generator)
        prompts = [self.prompts[int(i)] for i in pick]
        self.model.eval()
        with torch.no_grad():
            seqs, P, att, mask, texts = self._generate(prompts)
            old = self._token_logps(seqs, P, att)
        F, g = self._rewards(prompts, texts)
        est = copro_e_step(F, g, senses=a.senses, tau_feas=a.tau_feas, eps_progress=a.eps_progress,
                           eta_tie=a.eta_tie, tie_tol=a.tie_tol, on_nan=a.on_nan, warn=False)
        q = est.q.to(self._device())
        B, G = len(prompts), a.num_generations
        T = old.shape[1]
        self.model.train()
        for _ in range(a.num_iterations):
            new = self._token_logps(seqs, P, att)
            loss = self.loss_fn(new.view(B, G, T), old.view(B, G, T), q=q, mask=mask.view(B, G, T))
            if not torch.isfinite(loss):
                raise FloatingPointError(f"CoProTrainer: non-finite loss at step {self.global_step}")
            self.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), a.max_grad_norm)
            self.optimizer.step()
        coef = self.loss_fn.dual_step(self.loss_fn.last_stats["kl"])
        self.global_step += 1
        log = {"step": self.global_step, "loss": float(loss.detach()), **self.loss_fn.last_stats,
               "beta": coef, "q_feasible": float(est.diagnostics["q_feasible"].mean()),
               "entropy": float(est.diagnostics["entropy"].mean() / math.log(G)),
               "status": {s: est.status.count(s) for s in set(est.status)},
               "objectives_mean": F.mean((0, 1)).tolist(),
               "feasible_rate": float(est.feasible.mean())}
        if self.global_step % a.logging_steps == 0:
            self.log_history.append(log)
        return log

    def train(self):
        for _ in range(self.args.max_steps - self.global_step):
            self.step()
        return {"global_step": self.global_step, "log_history": self.log_history}
