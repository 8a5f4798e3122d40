"""``CoProConfig`` + ``CoProTrainer``: CoPro on Hugging Face causal LMs as a ``transformers.Trainer``.

The shape is TRL's ``GRPOConfig`` / ``GRPOTrainer``: the config is a ``TrainingArguments``
subclass with GRPO's field names (``num_generations``, ``max_completion_length``,
``temperature``, ``beta``, ``num_iterations``), and reward functions follow TRL's convention,
``fn(prompts=..., completions=..., **columns) -> list`` with one entry per completion. Because
it is a ``Trainer``, everything the Trainer does comes with it: any optimizer and scheduler
it builds, gradient accumulation and clipping (``max_grad_norm``), logging to
``state.log_history`` and the usual integrations, and checkpoints that resume **bit for bit**
(``save_steps``; ``trainer.train(resume_from_checkpoint=path or True)``).

::

    from optzoo.copro import CoProConfig, CoProTrainer
    args = CoProConfig(output_dir="out", num_generations=8, max_steps=200, save_steps=50,
                       senses=("max", "min"))
    trainer = CoProTrainer(model, reward_funcs=[my_reward], args=args,
                           train_dataset=prompts, processing_class=tokenizer)
    trainer.train()

One optimizer step: take ``per_device_train_batch_size`` prompts, generate ``num_generations``
completions each (sampling at ``temperature``, no top-k/top-p), call every reward function,
run the E-step per prompt group (:func:`copro_e_step`), and take a gradient step on the M-step
loss (weighted token-averaged NLL + ``beta`` x k3 KL to the sampling policy,
:class:`CoProLoss`). A reward function returns per completion either a float (one objective;
``None`` means "not applicable" and becomes NaN, handled by ``on_nan``) or a dict
``{"objectives": [...], "constraints": [...]}`` (constraints feasible iff <= 0); the objectives
of all functions, in order, are the columns ``senses`` refers to. As in TRL, the dataset's
other columns reach the reward functions as keyword arguments, one entry per completion.

``num_iterations`` = K > 1 reuses each generated batch for K optimizer steps, as TRL's GRPO
does: the sampler yields each batch of prompts K times in a row, the completions, old
log-probabilities and E-step weights are generated on the first and kept for the other K - 1
(and saved in a checkpoint taken between them). With ``trust_region="kl_constraint"`` the KL
coefficient takes one dual-ascent step after every optimizer step.

Checkpoints: besides what the Trainer writes (model, optimizer, scheduler, RNG, trainer state),
``copro.pt`` holds the loss's coefficient, the sampling generator and the kept batch.
Generation draws from the trainer's own generator (seeded from ``args.seed``), never from the
global RNG, so it does not depend on what else the process samples.

Hooks used: ``Trainer.compute_loss``, ``Trainer.log`` and ``Trainer.train`` (public, documented
for subclassing), ``Trainer._get_train_sampler`` (private: TRL's GRPOTrainer overrides it the
same way), and the callback events ``on_step_end`` / ``on_save``;
:func:`check_transformers_hooks` fails loudly when any is missing (``TRANSFORMERS_RANGE``).
Importing this module imports ``transformers``; ``import optzoo.copro`` does not.
Fidelity: reconstructed (see ``docs/papers/copro.md``); every default below is INFERRED.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass, field

import torch
import transformers
from transformers import Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, get_last_checkpoint

from optzoo._core.rng import torch_generator
from optzoo._core.validation import check_choice, check_hooks, check_int, check_real, fail
from optzoo.copro.estep import copro_e_step
from optzoo.copro.loss import CoProLoss

__all__ = ["COPRO_STATE_NAME", "CoProConfig", "CoProTrainer", "TRANSFORMERS_RANGE",
           "check_transformers_hooks"]

#: transformers versions this trainer is tested with (>= lower, < upper)
TRANSFORMERS_RANGE = ("5.0", "6")
#: file name of CoPro's own state inside a Trainer checkpoint folder
COPRO_STATE_NAME = "copro.pt"


def _f(default, help):  # noqa: A002 - TrainingArguments' metadata key
    return field(default=default, metadata={"help": help})


@dataclass
class CoProConfig(TrainingArguments):
    """``TrainingArguments`` plus CoPro's fields (every CoPro default is INFERRED; see the docs).

    Defaults changed from ``TrainingArguments``: ``learning_rate`` 1e-6 (spec, LLMs),
    ``per_device_train_batch_size`` 4, ``max_steps`` 100, ``logging_steps`` 1 and
    ``remove_unused_columns`` False (the prompts are not a model input). Checkpointing is the
    Trainer's (``save_strategy="steps"``, every ``save_steps`` = 500 steps unless set).
    """

    num_generations: int = _f(8, "Group size G: completions per prompt (spec: 8 for LLM tasks).")
    max_completion_length: int = _f(16, "Maximum new tokens per completion.")
    temperature: float = _f(1.0, "Sampling temperature.")
    num_iterations: int = _f(1, "Optimizer steps per generated batch (K, spec 1-4).")
    beta: float = _f(1.0, "KL coefficient c of the trust region (initial value for kl_constraint).")
    trust_region: str = _f("kl_penalty", "'kl_penalty' (fixed beta) or 'kl_constraint' (dual ascent).")
    kl_bound: float = _f(0.01, "epsilon_M of the KL constraint.")
    senses: tuple | None = _f(None, "'max'/'min' per objective (default: all 'max').")
    tau_feas: float = _f(0.5, "Target feasible mass tau_F.")
    eps_progress: float = _f(0.1, "Progress margin eps_u.")
    eta_tie: float = _f(0.1, "Near-tie mass cap eta_a.")
    tie_tol: float = _f(0.02, "Tie tolerance (fraction of the robust within-group scale).")
    on_nan: str = _f("raise", "'raise' or 'infeasible' for NaN/inf/None rewards.")
    learning_rate: float = _f(1e-6, "AdamW learning rate (spec: 1e-6 for LLMs).")
    per_device_train_batch_size: int = _f(4, "Prompts per optimizer step (and device).")
    max_steps: int = _f(100, "Number of optimizer steps.")
    logging_steps: float = _f(1, "Log every this many steps.")
    remove_unused_columns: bool = _f(False, "Keep the dataset's columns (the prompts are not a model input).")

    def __post_init__(self):
        o = "CoProConfig"
        check_int("num_generations", self.num_generations, owner=o, low=2)
        for name in ("max_completion_length", "num_iterations", "per_device_train_batch_size"):
            check_int(name, getattr(self, name), owner=o, low=1)
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
        if self.senses is not None:
            self.senses = tuple(self.senses)
        super().__post_init__()


def check_transformers_hooks(trainer_cls=Trainer, callback_cls=TrainerCallback) -> None:
    """Raise ``RuntimeError`` if the Trainer hooks CoProTrainer relies on are gone."""
    check_hooks("CoProTrainer", "transformers", transformers.__version__, TRANSFORMERS_RANGE,
                {"Trainer.": (trainer_cls, ("compute_loss", "log", "train", "_get_train_sampler")),
                 "the callback event ": (callback_cls, ("on_step_end", "on_save"))})


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


class _Prompts(torch.utils.data.Dataset):
    """A list of prompts (str) or of dicts with a str ``"prompt"`` as a map-style dataset."""

    def __init__(self, rows):
        self.rows = [r if isinstance(r, dict) else {"prompt": r} for r in rows]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


class _RepeatedBlocks(torch.utils.data.Sampler):
    """Per epoch: a random permutation cut into blocks of ``block`` indices (a trailing partial
    block is dropped), each block yielded ``repeats`` times in a row. The order depends only on
    (seed, epoch), so a resumed run that skips the first batches sees the same prompts."""

    def __init__(self, n: int, block: int, repeats: int, seed: int):
        self.n, self.block, self.repeats, self.seed, self.epoch = n, block, repeats, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self):
        return (self.n // self.block) * self.block * self.repeats

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        perm = torch.randperm(self.n, generator=g)[: (self.n // self.block) * self.block]
        for b in perm.view(-1, self.block).tolist():
            for _ in range(self.repeats):
                yield from b


class _CoProCallback(TrainerCallback):
    def __init__(self, trainer: CoProTrainer) -> None:
        self.trainer = trainer

    def on_step_end(self, args, state, control, **kwargs):
        tr = self.trainer
        kls = tr._step_kl
        if kls:
            tr.loss_fn.dual_step(sum(kls) / len(kls))
        tr._step_kl = []

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        folder = os.path.join(args.output_dir, f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}")
        if os.path.isdir(folder):
            torch.save(self.trainer._copro_state(), os.path.join(folder, COPRO_STATE_NAME))


class CoProTrainer(Trainer):
    """Train ``model`` (a Hugging Face causal LM) with CoPro (see the module docstring).

    ``reward_funcs``: a callable or a list of callables (TRL's convention, see above).
    ``args``: a :class:`CoProConfig` (default ``CoProConfig()``, writing to ``trainer_output``).
    ``train_dataset``: prompts as str, dicts with a str ``"prompt"``, or a ``datasets.Dataset``
    with a ``"prompt"`` column; at least ``per_device_train_batch_size`` x
    ``gradient_accumulation_steps`` of them. ``processing_class``: the tokenizer. Every other
    keyword is the Trainer's (``optimizers``, ``callbacks``, ...).

    Logged per step (averaged over the logging window): the Trainer's ``loss``, ``learning_rate``
    and ``grad_norm``, and CoPro's ``nll``, ``kl``, ``beta`` (the KL coefficient),
    ``q_feasible``, ``entropy`` (of q, normalised by log G), ``feasible_rate``,
    ``objective_<j>`` (mean of objective j) and ``status_<s>`` (E-step groups with status s).
    """

    def __init__(self, model, reward_funcs, args: CoProConfig | None = None, train_dataset=None,
                 processing_class=None, **kwargs):
        o = "CoProTrainer"
        check_transformers_hooks()
        args = CoProConfig() if args is None else args
        if not isinstance(args, CoProConfig):
            fail("args", o, "a CoProConfig", type(args).__name__, exc=TypeError)
        if callable(reward_funcs):
            reward_funcs = [reward_funcs]
        if not reward_funcs or not all(callable(f) for f in reward_funcs):
            fail("reward_funcs", o, "a callable or a non-empty list of callables", reward_funcs, exc=TypeError)
        if processing_class is None:
            fail("processing_class", o, "a tokenizer (PreTrainedTokenizerBase)", None, exc=TypeError)
        if train_dataset is None or len(train_dataset) == 0:
            fail("train_dataset", o, "a non-empty sequence of prompts", train_dataset)
        if isinstance(train_dataset, (list, tuple)):
            if not all(isinstance(r, str) or (isinstance(r, dict) and isinstance(r.get("prompt"), str))
                       for r in train_dataset):
                fail("train_dataset", o, "prompts as str (or dicts with a str 'prompt')",
                     list(train_dataset[:2]), exc=TypeError)
            train_dataset = _Prompts(train_dataset)
        elif not isinstance(train_dataset[0], dict) or not isinstance(train_dataset[0].get("prompt"), str):
            fail("train_dataset", o, "a dataset whose rows are dicts with a str 'prompt'",
                 type(train_dataset[0]).__name__, exc=TypeError)
        block = args.per_device_train_batch_size * args.gradient_accumulation_steps
        if len(train_dataset) < block:
            fail("train_dataset", o, f"at least per_device_train_batch_size x gradient_accumulation_steps "
                 f"= {block} prompts", f"{len(train_dataset)} prompts")
        self.reward_funcs = list(reward_funcs)
        self.loss_fn = CoProLoss(trust_region=args.trust_region, coef=args.beta, kl_bound=args.kl_bound)
        self.generator = torch_generator(args.seed, "copro-trainer")
        self._kept: list = []                 # generated micro-batches reused for num_iterations steps
        self._micro = (-1, 0)                 # (global_step, index of the micro-batch within it)
        self._step_kl: list[float] = []
        self._metrics: dict[str, list[float]] = {}
        super().__init__(model=model, args=args, train_dataset=train_dataset,
                         processing_class=processing_class, data_collator=lambda rows: rows, **kwargs)
        self.add_callback(_CoProCallback(self))

    # -- data -------------------------------------------------------------------------------

    def _get_train_sampler(self, train_dataset=None):
        ds = self.train_dataset if train_dataset is None else train_dataset
        a = self.args
        return _RepeatedBlocks(len(ds), a.per_device_train_batch_size * a.gradient_accumulation_steps,
                               a.num_iterations, a.seed)

    # -- pieces ------------------------------------------------------------------------------

    def _token_logps(self, model, seqs, prompt_len, attn):
        pos = (attn.cumsum(1) - 1).clamp(min=0)  # left padding: positions as generate() used them
        logits = model(input_ids=seqs, attention_mask=attn, position_ids=pos).logits
        logits = logits[:, prompt_len - 1:-1] / self.args.temperature
        return torch.log_softmax(logits.float(), -1).gather(-1, seqs[:, prompt_len:, None])[..., 0]

    def _generate(self, model, prompts):
        a, tok, dev = self.args, self.processing_class, self.args.device
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
            out = model.generate(input_ids=ids, attention_mask=att, do_sample=True,
                                 temperature=a.temperature, top_k=0, top_p=1.0,
                                 max_new_tokens=a.max_completion_length, pad_token_id=pad,
                                 eos_token_id=tok.eos_token_id)
        P = ids.shape[1]
        comp = out[:, P:]
        mask = torch.ones_like(comp, dtype=torch.bool)
        if tok.eos_token_id is not None:
            is_eos = comp == tok.eos_token_id
            mask = ~((is_eos.cumsum(1) - is_eos.to(torch.long)) > 0)   # drop tokens after the first EOS
        full_att = torch.cat([att, mask.to(att.dtype)], 1)
        texts = tok.batch_decode(comp.masked_fill(~mask, pad), skip_special_tokens=True)
        return out, P, full_att, mask, texts

    def _rewards(self, rows, texts):
        G = self.args.num_generations
        rep = [r for r in rows for _ in range(G)]
        extra = {k: [r[k] for r in rep] for k in rows[0] if k not in ("prompt", "completion")}
        objs, cons = [], []
        for fn in self.reward_funcs:
            o, c = _reward_columns(fn(prompts=[r["prompt"] for r in rep], completions=texts, **extra),
                                   len(texts), fn)
            objs.append(o)
            cons.append(c)
        F = torch.cat(objs, -1).view(len(rows), G, -1)
        g = torch.cat(cons, -1).view(len(rows), G, -1) if sum(c.shape[-1] for c in cons) else None
        return F, g

    def _make_batch(self, model, rows):
        """Generate, score and weight one micro-batch: (seqs, prompt length, attention, mask,
        old log-probs, q) plus its metrics."""
        a = self.args
        gen_model = self.accelerator.unwrap_model(model)
        was_training = gen_model.training
        gen_model.eval()
        try:
            with torch.no_grad():
                seqs, P, att, mask, texts = self._generate(gen_model, [r["prompt"] for r in rows])
                old = self._token_logps(gen_model, seqs, P, att)
        finally:
            gen_model.train(was_training)
        F, g = self._rewards(rows, texts)
        est = copro_e_step(F, g, senses=a.senses, tau_feas=a.tau_feas, eps_progress=a.eps_progress,
                           eta_tie=a.eta_tie, tie_tol=a.tie_tol, on_nan=a.on_nan, warn=False)
        G = a.num_generations
        metrics = {"q_feasible": float(est.diagnostics["q_feasible"].mean()),
                   "entropy": float(est.diagnostics["entropy"].mean() / math.log(G)),
                   "feasible_rate": float(est.feasible.float().mean())}
        metrics.update({f"objective_{j}": float(v) for j, v in enumerate(F.nanmean((0, 1)).tolist())})
        metrics.update({f"status_{s}": float(est.status.count(s)) for s in set(est.status)})
        return (seqs, P, att, mask, old, est.q.to(a.device)), metrics

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        a = self.args
        step = self.state.global_step
        j = self._micro[1] + 1 if self._micro[0] == step else 0
        self._micro = (step, j)
        if step % a.num_iterations == 0:
            if j == 0:
                self._kept = []
            batch, metrics = self._make_batch(model, inputs)
            self._kept.append((batch, metrics))
        if j >= len(self._kept):
            raise RuntimeError(f"CoProTrainer: no kept batch for micro-batch {j} of step {step}; "
                               "resume from a checkpoint written by CoProTrainer")
        (seqs, P, att, mask, old, q), metrics = self._kept[j]
        B, G, T = len(inputs), a.num_generations, old.shape[1]
        new = self._token_logps(model, seqs, P, att)
        loss = self.loss_fn(new.view(B, G, T), old.view(B, G, T), q=q, mask=mask.view(B, G, T))
        if not torch.isfinite(loss):
            raise FloatingPointError(f"CoProTrainer: non-finite M-step loss at step {step}")
        self._step_kl.append(self.loss_fn.last_stats["kl"])
        for k, v in {**metrics, **self.loss_fn.last_stats, "beta": float(self.loss_fn.coef)}.items():
            self._metrics.setdefault(k, []).append(v)
        return (loss, None) if return_outputs else loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs and self._metrics:
            for k, vals in self._metrics.items():
                logs[k] = (sum(vals) if k.startswith("status_") else sum(vals) / len(vals))
            self._metrics = {}
        super().log(logs, start_time)

    # -- checkpoints ----------------------------------------------------------------------------

    def _copro_state(self) -> dict:
        kept = [([t.cpu() if isinstance(t, torch.Tensor) else t for t in batch], m) for batch, m in self._kept]
        return {"loss": self.loss_fn.state_dict(), "generator": self.generator.get_state(),
                "kept": kept, "micro": self._micro}

    def _load_copro_state(self, state: dict) -> None:
        self.loss_fn.load_state_dict(state["loss"])
        self.generator.set_state(state["generator"])
        dev = self.args.device
        self._kept = [(tuple(t.to(dev) if isinstance(t, torch.Tensor) else t for t in batch), m)
                      for batch, m in state["kept"]]
        self._micro = tuple(state["micro"])

    def train(self, resume_from_checkpoint: str | bool | None = None, *args, **kwargs):
        path = resume_from_checkpoint
        if path is True:
            path = get_last_checkpoint(self.args.output_dir)
            if path is None:
                fail("resume_from_checkpoint", "CoProTrainer.train",
                     "True only when output_dir holds a checkpoint", self.args.output_dir)
        if isinstance(path, (str, os.PathLike)):
            f = os.path.join(path, COPRO_STATE_NAME)
            if not os.path.isfile(f):
                fail("resume_from_checkpoint", "CoProTrainer.train",
                     f"a checkpoint folder written by CoProTrainer (with {COPRO_STATE_NAME})", str(path))
            self._load_copro_state(torch.load(f, map_location="cpu", weights_only=True))
        return super().train(path if path is not None else resume_from_checkpoint, *args, **kwargs)
