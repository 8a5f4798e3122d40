"""``SALAADTrainer``: SALAAD inside a ``transformers.Trainer`` (spec section 5's usage block).

::

    from optzoo.salaad import SALAADConfig, SALAADTrainer
    trainer = SALAADTrainer(model=model, args=TrainingArguments(...), train_dataset=ds,
                            salaad=SALAADConfig(rho=1e-3, rank_ratio=0.25, density=0.05))
    trainer.train()                      # any optimizer/scheduler the Trainer builds
    small = trainer.salaad.export(200_000)

What it adds to the ordinary Trainer loop, per optimizer step:

* coupled mode: each micro-batch's backward also receives ``penalty() / k`` (``k`` the
  gradient-accumulation steps of the current window), so the accumulated gradient is
  ``grad l + rho (X - L - S + Y/rho)`` once per optimizer step and it goes through the
  Trainer's gradient clipping (``max_grad_norm``) with the task gradient, as in the official
  loop (``penalty`` has its own backward call, so it does not depend on how the Trainer scales
  the task loss for accumulation);
* after each optimizer step (callback ``on_step_end``): :meth:`SALAAD.step` (a structured sweep
  every ``admm_every`` steps; decoupled mode uses the learning rate of the step just taken,
  read in ``on_pre_optimizer_step``);
* checkpoints: ``on_save`` writes ``salaad.pt`` (:meth:`SALAAD.state_dict`) into the
  checkpoint folder the Trainer has just written; ``train(resume_from_checkpoint=...)`` (a path
  or True for the last checkpoint of ``output_dir``) loads it before the Trainer resumes, so L,
  S, Y, the thresholds, the counters and the history continue where they were.

The logged training loss is the task loss (the penalty is not added to it).
Hooks used: ``Trainer.training_step`` and ``Trainer.train`` (public, documented for
subclassing), the callback events ``on_pre_optimizer_step`` / ``on_step_end`` / ``on_save`` and
the attribute ``current_gradient_accumulation_steps`` (falls back to
``args.gradient_accumulation_steps``). :func:`check_transformers_hooks` fails loudly when any of
them is missing; tested with transformers 5.x (``TRANSFORMERS_RANGE``).
Importing this module imports ``transformers``; ``import optzoo.salaad`` does not.
"""

from __future__ import annotations

import os

import torch
import transformers
from transformers import Trainer, TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, get_last_checkpoint

from optzoo._core.validation import check_hooks, check_type, fail
from optzoo.salaad.salaad import SALAAD, SALAADConfig

__all__ = ["SALAAD_STATE_NAME", "SALAADTrainer", "TRANSFORMERS_RANGE", "check_transformers_hooks"]

#: transformers versions this adapter is tested with (>= lower, < upper)
TRANSFORMERS_RANGE = ("4.46", "6")
#: file name of the SALAAD state inside a Trainer checkpoint folder
SALAAD_STATE_NAME = "salaad.pt"


def check_transformers_hooks(trainer_cls=Trainer, callback_cls=TrainerCallback) -> None:
    """Raise ``RuntimeError`` if the Trainer hooks SALAADTrainer relies on are gone."""
    check_hooks("SALAADTrainer", "transformers", transformers.__version__, TRANSFORMERS_RANGE,
                {"Trainer.": (trainer_cls, ("training_step", "train")),
                 "the callback event ": (callback_cls, ("on_pre_optimizer_step", "on_step_end", "on_save"))})


class _SALAADCallback(TrainerCallback):
    def __init__(self, trainer: SALAADTrainer) -> None:
        self.trainer = trainer
        self.lr = None

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        opt = self.trainer.optimizer
        self.lr = float(opt.param_groups[0]["lr"]) if opt is not None else None

    def on_step_end(self, args, state, control, **kwargs):
        sal = self.trainer.salaad
        sal.step(lr=self.lr if sal.config.mode == "decoupled" else None)

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        folder = os.path.join(args.output_dir, f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}")
        if os.path.isdir(folder):
            torch.save(self.trainer.salaad.state_dict(), os.path.join(folder, SALAAD_STATE_NAME))


class SALAADTrainer(Trainer):
    """A ``transformers.Trainer`` that trains with SALAAD (see the module docstring).

    ``salaad``: a :class:`SALAADConfig` (or an existing :class:`SALAAD` wrapper of ``model``);
    every other argument is the Trainer's. ``trainer.salaad`` is the :class:`SALAAD` object
    (export, budget_curve, stats, history, state_dict).
    """

    def __init__(self, *args, salaad: SALAADConfig | SALAAD | None = None, **kwargs) -> None:
        check_transformers_hooks()
        check_type("salaad", salaad, (SALAADConfig, SALAAD), owner="SALAADTrainer",
                   what="a SALAADConfig or a SALAAD wrapper")
        super().__init__(*args, **kwargs)
        if isinstance(salaad, SALAAD):
            if salaad.model is not self.model:
                fail("salaad", "SALAADTrainer", "a SALAAD wrapper of the trainer's own model",
                     "a wrapper of another model")
            self.salaad = salaad
        else:
            self.salaad = SALAAD(self.model, salaad)
        self.add_callback(_SALAADCallback(self))

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        sal = self.salaad
        pen = sal.penalty()
        if pen.requires_grad:
            k = getattr(self, "current_gradient_accumulation_steps", None) or self.args.gradient_accumulation_steps
            self.accelerator.backward(pen / k)
        return loss

    def train(self, resume_from_checkpoint: str | bool | None = None, *args, **kwargs):
        path = resume_from_checkpoint
        if path is True:
            path = get_last_checkpoint(self.args.output_dir)
            if path is None:
                fail("resume_from_checkpoint", "SALAADTrainer.train",
                     "True only when output_dir holds a checkpoint", self.args.output_dir)
        if isinstance(path, (str, os.PathLike)):
            f = os.path.join(path, SALAAD_STATE_NAME)
            if not os.path.isfile(f):
                fail("resume_from_checkpoint", "SALAADTrainer.train",
                     f"a checkpoint folder written by SALAADTrainer (with {SALAAD_STATE_NAME})", str(path))
            self.salaad.load_state_dict(torch.load(f, map_location="cpu", weights_only=True))
        return super().train(path if path is not None else resume_from_checkpoint, *args, **kwargs)
