"""Reward calibration inside TRL: ``RCDPOConfig`` + ``RCDPOTrainer`` (drop-in for ``DPOConfig``
and ``DPOTrainer``; written against ``trl`` 1.16, whose loss lives in ``DPOTrainer._compute_loss``).

How it hooks in, without copying TRL's loss code: ``RCDPOTrainer._compute_loss`` computes the
reference log-probabilities once, hands them to TRL as if precomputed, and calls TRL's own
``_compute_loss`` with a thin proxy of the policy. The proxy runs the real forward, forms
``z_w``, ``z_l`` from TRL's per-token log-probabilities, asks a
:class:`~optzoo.reward_calibration.RewardCalibrator` for ``alpha`` and returns the per-token
log-probabilities rescaled as ``s lp + (1 - s) sg(lp)`` with ``s = alpha`` on chosen rows and
``1/alpha`` on rejected rows. Sums are linear, so TRL then sees exactly ``z^rc`` of the paper:
the loss value and every logged metric are unchanged, only the backward pass is rebalanced.

Supported TRL losses (one ``loss_type``, ``f_divergence_type="reverse_kl"``, no ``ld_alpha``,
no WPO weighting): ``sigmoid`` (DPO), ``ipo`` (TRL's length-normalised IPO, ``beta`` = tau),
``hinge``, ``bco_pair``, ``sigmoid_norm``. Their incentives are computed by autograd on the
same per-pair formula TRL uses.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from trl import DPOConfig, DPOTrainer

from optzoo._core.validation import check_real, fail
from optzoo.reward_calibration.calibration import RewardCalibrator

__all__ = ["RCDPOConfig", "RCDPOTrainer", "TRL_RC_LOSS_TYPES", "trl_pair_loss",
           "make_trl_trainer", "TRL_HOOKS", "check_trl_hooks"]

# The private DPOTrainer methods this adapter overrides or calls, with the parameters they
# have in the TRL range pinned in pyproject.toml (trl>=1.16,<1.17). TRL may rename or
# reshape private methods in any release; check_trl_hooks turns that into one clear error
# instead of a silent fallback to the uncalibrated loss or a TypeError mid-training.
TRL_HOOKS = {
    "_compute_loss": ("self", "model", "inputs", "return_outputs"),
    "compute_ref_log_probs": ("self", "model", "inputs"),
}

TRL_RC_LOSS_TYPES = ("sigmoid", "ipo", "hinge", "bco_pair", "sigmoid_norm")
_PHI_CHOICES = ("head", "last_block", "all")


def trl_pair_loss(loss_type, beta, z_w, z_l, ref_w, ref_l, len_w, len_l):
    """Per-pair loss exactly as TRL 1.16 ``DPOTrainer`` writes it (reverse KL, one loss)."""
    rw, rl = z_w - ref_w, z_l - ref_l
    if loss_type == "sigmoid":
        return -F.logsigmoid(beta * (rw - rl))
    if loss_type == "hinge":
        return torch.relu(1 - beta * (rw - rl))
    if loss_type == "ipo":
        return (rw / len_w.clamp(min=1.0) - rl / len_l.clamp(min=1.0) - 1 / (2 * beta)) ** 2
    if loss_type == "bco_pair":
        return -F.logsigmoid(beta * rw) - F.logsigmoid(-beta * rl)
    if loss_type == "sigmoid_norm":
        return -F.logsigmoid(beta * (rw / len_w.clamp(min=1.0) - rl / len_l.clamp(min=1.0)))
    raise ValueError(f"unsupported loss_type {loss_type!r}")


def _trl_incentives(loss_type, beta, z_w, z_l, ref_w, ref_l, len_w, len_l):
    with torch.enable_grad():
        zw = z_w.detach().double().requires_grad_(True)
        zl = z_l.detach().double().requires_grad_(True)
        loss = trl_pair_loss(loss_type, beta, zw, zl, ref_w.detach().double(),
                             ref_l.detach().double(), len_w.double(), len_l.double()).sum()
        gw, gl = torch.autograd.grad(loss, (zw, zl))
    return -gw, gl


@dataclass
class RCDPOConfig(DPOConfig):
    """``DPOConfig`` plus the reward-calibration flags (official names in brackets).

    ``rc_enable`` [``db_calibration_enable``] defaults to True here (the official flag defaults
    to False; switching class is the opt-in). ``rc_ema_beta`` [``db_ema_beta``] = 0.98,
    ``rc_eps`` [``db_calibration_eps``] = 1e-12. ``rc_params``: the subset phi for ``r*``
    (``head``: the LM head weight, or, if it is frozen, the LoRA parameters of the last block;
    ``last_block``; ``all``). ``rc_joint_clip``: clip ``g_w, g_l`` jointly at
    ``1.414 * max_grad_norm`` (official; it never changes ``alpha``, only the logged inner
    product).
    """

    rc_enable: bool = field(default=True, metadata={"help": "Apply reward calibration."})
    rc_ema_beta: float = field(default=0.98, metadata={"help": "Log-domain EMA factor."})
    rc_eps: float = field(default=1e-12, metadata={"help": "Incentive floor; below it RC skips."})
    rc_params: str = field(default="head", metadata={"help": "phi: head, last_block or all."})
    rc_joint_clip: bool = field(default=True, metadata={"help": "Joint clip of g_w, g_l."})

    def __post_init__(self):
        owner = "RCDPOConfig"
        if isinstance(self.loss_type, str):
            self.loss_type = [self.loss_type]
        check_real("rc_ema_beta", self.rc_ema_beta, owner=owner, low=0.0, high=1.0,
                   closed="left")
        check_real("rc_eps", self.rc_eps, owner=owner, low=0.0, closed="neither")
        if self.rc_params not in _PHI_CHOICES:
            fail("rc_params", owner, "one of " + ", ".join(map(repr, _PHI_CHOICES)),
                 self.rc_params)
        if self.rc_enable:
            self._check_rc_losses(owner)
        super().__post_init__()

    def _check_rc_losses(self, owner):
        if len(self.loss_type) != 1 or self.loss_type[0] not in TRL_RC_LOSS_TYPES:
            fail("loss_type", owner, "a single loss among " +
                 ", ".join(map(repr, TRL_RC_LOSS_TYPES)) + " when rc_enable=True",
                 self.loss_type)
        if self.f_divergence_type != "reverse_kl":
            fail("f_divergence_type", owner, "'reverse_kl' when rc_enable=True",
                 self.f_divergence_type)
        if self.ld_alpha is not None or self.use_weighting:
            fail("ld_alpha", owner, "None (and use_weighting False) when rc_enable=True",
                 self.ld_alpha)


def _phi_params(model, which: str):
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if which == "all":
        return [p for _, p in named]
    layer = lambda n: max((int(x) for x in re.findall(r"\.(\d+)\.", n)), default=-1)  # noqa: E731
    top = max((layer(n) for n, _ in named), default=-1)
    if which == "head":
        head = model.get_output_embeddings()
        if head is not None and head.weight.requires_grad:
            return [head.weight]
        lora = [p for n, p in named if "lora" in n and layer(n) == top]
        if lora:
            return lora
    last = [p for n, p in named if layer(n) == top]
    return last or [p for _, p in named]


class _CalibratedPolicy:
    """Calls the policy and rescales the gradient path of its per-token log-probabilities."""

    def __init__(self, model, trainer, ref_w, ref_l, completion_mask):
        self.model, self.trainer = model, trainer
        self.ref_w, self.ref_l, self.mask = ref_w, ref_l, completion_mask

    def __call__(self, *args, **kwargs):
        out = self.model(*args, **kwargs)
        if not kwargs.get("fused_lm_head"):
            return out
        lp = out.log_probs
        mask = self.mask[..., 1:]
        z = lp[:, -mask.size(1):].sum(1)
        z_w, z_l = z.chunk(2, dim=0)
        lens_w, lens_l = mask.sum(1).to(z.dtype).chunk(2, dim=0)
        tr = self.trainer
        d_w, d_l = _trl_incentives(tr.loss_types[0], tr.beta, z_w, z_l, self.ref_w,
                                   self.ref_l, lens_w, lens_l)
        _, _, info = tr.calibrator.calibrate(z_w, z_l, d_w, d_l,
                                             training=tr.model.training)
        tr._rc_last = info
        if info.get("applied"):
            a = info["alpha"]
            b = z_w.shape[0]
            s = torch.cat([lp.new_full((b, 1), a), lp.new_full((b, 1), 1.0 / a)])
            out.log_probs = s * lp + (1.0 - s) * lp.detach()
            mode = "train"
            for key in ("alpha", "r", "r_star", "rho"):
                tr._metrics[mode][f"rc/{key}"].append(float(info[key]))
            tr._metrics[mode]["rc/in_band_raw"].append(float(info["in_band_raw"]))
        return out


def check_trl_hooks(trainer_cls=DPOTrainer) -> None:
    """Raise ``RuntimeError`` naming the hook when ``trainer_cls`` lacks one of ``TRL_HOOKS``
    or has it with other parameters (the installed TRL is outside the tested range)."""
    import trl

    for name, params in TRL_HOOKS.items():
        hook = inspect.getattr_static(trainer_cls, name, None)
        want = f"DPOTrainer.{name}({', '.join(params)})"
        if not callable(hook):
            raise RuntimeError(
                f"RCDPOTrainer needs the private TRL hook {want}, which trl {trl.__version__} "
                "does not have; reward calibration is tested on trl>=1.16,<1.17 "
                "(pip install 'trl>=1.16,<1.17').")
        got = tuple(inspect.signature(hook).parameters)
        if got != params:
            raise RuntimeError(
                f"RCDPOTrainer needs the private TRL hook {want}; trl {trl.__version__} has "
                f"DPOTrainer.{name}({', '.join(got)}). Reward calibration is tested on "
                "trl>=1.16,<1.17 (pip install 'trl>=1.16,<1.17').")


class RCDPOTrainer(DPOTrainer):
    """``DPOTrainer`` with reward calibration (switch by changing the class name).

    Takes the arguments of ``DPOTrainer``; ``args`` should be an :class:`RCDPOConfig` (a plain
    ``DPOConfig`` gets the RC defaults). RC applies only in training mode with gradients on.

    >>> from trl import DPOTrainer
    >>> issubclass(RCDPOTrainer, DPOTrainer)
    True
    """

    def __init__(self, *args, **kwargs):
        check_trl_hooks(DPOTrainer)
        super().__init__(*args, **kwargs)
        a = self.args
        self.rc_enable = getattr(a, "rc_enable", True)
        self._rc_cfg = {"ema_beta": getattr(a, "rc_ema_beta", 0.98),
                        "eps": getattr(a, "rc_eps", 1e-12),
                        "phi": getattr(a, "rc_params", "head"),
                        "clip": getattr(a, "rc_joint_clip", True)}
        if self.rc_enable and (len(self.loss_types) != 1
                               or self.loss_types[0] not in TRL_RC_LOSS_TYPES):
            fail("loss_type", "RCDPOTrainer", "a single loss among " +
                 ", ".join(map(repr, TRL_RC_LOSS_TYPES)), self.loss_types)
        self.calibrator = None
        self._rc_last: dict = {}

    def _build_calibrator(self, model):
        base = self.accelerator.unwrap_model(model)
        clip = None
        if self._rc_cfg["clip"] and self.args.max_grad_norm and self.args.max_grad_norm > 0:
            clip = 1.414 * float(self.args.max_grad_norm)
        return RewardCalibrator(_phi_params(base, self._rc_cfg["phi"]),
                                ema_beta=self._rc_cfg["ema_beta"], eps=self._rc_cfg["eps"],
                                joint_clip=clip)

    def _compute_loss(self, model, inputs, return_outputs):
        if not (self.rc_enable and self.model.training and torch.is_grad_enabled()):
            return super()._compute_loss(model, inputs, return_outputs)
        if self.calibrator is None:
            self.calibrator = self._build_calibrator(model)
        if self.precompute_ref_logps:
            ref_w, ref_l = inputs["ref_chosen_logps"], inputs["ref_rejected_logps"]
        else:
            ref_w, ref_l = self.compute_ref_log_probs(
                self.ref_model if self.ref_model is not None else model, inputs)
        inputs = dict(inputs, ref_chosen_logps=ref_w, ref_rejected_logps=ref_l)
        proxy = _CalibratedPolicy(model, self, ref_w, ref_l, inputs["completion_mask"])
        saved = self.precompute_ref_logps
        self.precompute_ref_logps = True  # TRL reads the reference log-probs from `inputs`
        try:
            return super()._compute_loss(proxy, inputs, return_outputs)
        finally:
            self.precompute_ref_logps = saved


def make_trl_trainer(policy, pairs, *, rc: bool, steps: int, batch: int, lr: float, seed: int,
                     beta: float = 0.1, loss_type=("sigmoid",), loss_weights=None,
                     ref_model=None, ema_beta: float = 0.98, rc_params: str = "head"):
    """A CPU, offline, no-save TRL trainer on a :class:`~optzoo.tinylm.PreferencePairs` set.

    ``policy`` is copied (the copy is trained); the reference is a frozen copy of ``policy``
    unless ``ref_model`` is given. Adam-style AdamW with no weight decay, constant learning rate.
    """
    import copy

    from datasets import Dataset

    from optzoo.tinylm import toy_vocabulary, word_tokenizer

    tok = word_tokenizer(toy_vocabulary(), eos_token="<eos>")
    model = copy.deepcopy(policy).train()
    ref = copy.deepcopy(policy if ref_model is None else ref_model).eval()
    for m in (model, ref):
        m.config.bos_token_id, m.config.eos_token_id = tok.bos_token_id, tok.eos_token_id
        m.config.pad_token_id = tok.pad_token_id
        m.generation_config.bos_token_id = tok.bos_token_id
        m.generation_config.eos_token_id = tok.eos_token_id
        m.generation_config.pad_token_id = tok.pad_token_id
    cls_cfg, cls_tr = (RCDPOConfig, RCDPOTrainer) if rc else (DPOConfig, DPOTrainer)
    extra = {"rc_ema_beta": ema_beta, "rc_params": rc_params} if rc else {}
    args = cls_cfg(output_dir="/tmp/optzoo-rc-trl", report_to="none", save_strategy="no",
                   max_steps=steps, per_device_train_batch_size=batch, learning_rate=lr,
                   lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0,
                   max_grad_norm=0.0, logging_strategy="no", seed=seed, data_seed=seed,
                   use_cpu=True, beta=beta, loss_type=list(loss_type),
                   loss_weights=None if loss_weights is None else list(loss_weights),
                   dataloader_num_workers=0, disable_tqdm=True, max_length=None,
                   bf16=False, **extra)  # TRL defaults to bf16 autocast; our loop is fp32
    ds = Dataset.from_list(pairs.as_text())
    return cls_tr(model=model, ref_model=ref, args=args, train_dataset=ds,
                  processing_class=tok)
