"""The toy-language preference experiment of the reproduction (SFT reference, then DPO-family
training with and without reward calibration, held-out likelihood changes).

Everything here is INFERRED (our CPU-scale reproduction design, spec section 3): the toy world
of :mod:`optzoo.tinylm.toylang`, the SFT reference (the committed ``toy`` checkpoint when it is
present, else our own seeded SFT of a fresh tiny GPT-2), Adam with a constant learning rate,
and the evaluation on held-out pairs.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
import torch.nn.functional as F

from optzoo._core.rng import derive_seed, np_rng, torch_generator
from optzoo.reward_calibration import RewardCalibrator, incentives, pairwise_loss

__all__ = ["ToyData", "evaluate_pairs", "make_data", "reference_model", "sample_gold_reward",
           "sequence_logps", "stack_weights", "stacked_logps", "train_arms", "trl_parity",
           "trl_rpo_arm"]

WORLD_SEED = 0  # the world the ``toy`` checkpoint was trained on
PROMPT_LEN = 6
RESP_TOKENS = 11  # 10 response words + <eos>


class ToyData:
    """Token ids of chosen/rejected sequences (``<bos> prompt response <eos>``) plus pairs."""

    def __init__(self, pairs, world):
        self.pairs = pairs
        self.chosen = torch.from_numpy(world.encode(pairs.prompts, pairs.chosen))
        self.rejected = torch.from_numpy(world.encode(pairs.prompts, pairs.rejected))

    def __len__(self):
        return len(self.chosen)


def make_data(seed: int, *, k: int, n_train: int, n_eval: int):
    from optzoo.tinylm import ToyLanguage

    world = ToyLanguage(seed=WORLD_SEED)
    train = world.preference_pairs(n_train, k=k, seed=derive_seed(seed, "train", k) % 2**31)
    held = world.preference_pairs(n_eval, k=k, seed=derive_seed(seed, "eval", k) % 2**31)
    return ToyData(train, world), ToyData(held, world)


def _sft(model, *, steps: int, batch: int, lr: float, seed: int):
    from optzoo.tinylm import ToyLanguage

    world = ToyLanguage(seed=WORLD_SEED)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    model.train()
    for step in range(steps):
        s = derive_seed(seed, "sft", step) % 2**31
        prompts = world.sample_prompts(batch, seed=s)
        resp = world.sample_responses(prompts, seed=s)
        bad = world.corrupt(resp, k=3, seed=s)
        mix = np_rng(s, "mix").random(batch) >= 0.7  # 70/30 good/corrupted, as the checkpoint
        ids = torch.from_numpy(world.encode(prompts, np.where(mix[:, None], bad, resp)))
        logits = model(input_ids=ids).logits[:, PROMPT_LEN:-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 ids[:, PROMPT_LEN + 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return model.eval()


def reference_model(seed: int, *, sft_steps: int, use_checkpoint: bool = True):
    """``(model, source)``: the ``toy`` checkpoint if present, else a seeded fresh SFT."""
    from optzoo.tinylm import available_checkpoints, load_tiny_lm, tiny_gpt2, toy_vocabulary

    if use_checkpoint and "toy" in available_checkpoints():
        try:
            model, _ = load_tiny_lm("toy")
            return model.eval(), "checkpoint:toy"
        except Exception:  # a checkpoint being rewritten by its owner: fall back to our SFT
            pass
    model = tiny_gpt2(len(toy_vocabulary()), n_layer=2, n_embd=64, n_head=2, n_positions=32,
                      seed=derive_seed(seed, "init") % 2**31, eos_token_id=3)
    return _sft(model, steps=sft_steps, batch=64, lr=3e-3, seed=seed), f"sft:{sft_steps}"


def sequence_logps(model, ids):
    """Summed log-probabilities of the 11 response tokens of each ``ids`` row (TRL convention)."""
    logits = model(input_ids=ids).logits[:, PROMPT_LEN:-1]
    lp = torch.log_softmax(logits.float(), -1)
    return lp.gather(-1, ids[:, PROMPT_LEN + 1:, None])[..., 0].sum(1)


@torch.no_grad()
def _logps_pairs(model, data: ToyData, chunk: int = 1024):
    out_w, out_l = [], []
    for i in range(0, len(data), chunk):
        ids = torch.cat([data.chosen[i:i + chunk], data.rejected[i:i + chunk]])
        z = sequence_logps(model, ids)
        out_w.append(z[: len(z) // 2])
        out_l.append(z[len(z) // 2:])
    return torch.cat(out_w), torch.cat(out_l)


def evaluate_pairs(model, data: ToyData, ref_w, ref_l) -> dict:
    """Held-out means of dz_w, dz_l vs the reference, displacement rate and accuracy."""
    model.eval()
    z_w, z_l = _logps_pairs(model, data)
    dw, dl = (z_w - ref_w), (z_l - ref_l)
    return {"dz_w": float(dw.mean()), "dz_l": float(dl.mean()),
            "displaced": float((dw < 0).double().mean()),
            "accuracy": float(((dw - dl) > 0).double().mean())}


# ---- a functional GPT-2 over a leading "arm" axis: every arm has its own weights --------------

_LAYER_KEYS = ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
               "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
               "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias")


def stack_weights(model, n_arms: int) -> dict:
    """Leaf tensors ``(n_arms, ...)`` copied from a HF ``GPT2LMHeadModel`` (tied head)."""
    sd = {k.removeprefix("transformer."): v.detach().float()
          for k, v in model.state_dict().items()}
    keys = ["wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"] + [
        f"h.{i}.{k}" for i in range(model.config.n_layer) for k in _LAYER_KEYS]
    return {k: sd[k].unsqueeze(0).repeat(n_arms, *([1] * sd[k].ndim)).requires_grad_(True)
            for k in keys}


def _ln(x, w, b):
    return F.layer_norm(x, x.shape[-1:], eps=1e-5) * w[:, None, None] + b[:, None, None]


def _lin(x, w, b):
    return torch.einsum("abte,aef->abtf", x, w) + b[:, None, None]


def _stacked_hidden(W: dict, ids, n_head: int):
    """Final-layer-norm hidden states ``(A, B, T, E)`` of the stacked GPT-2 (GPT-2 math)."""
    A, B, T = ids.shape
    arm = torch.arange(A)[:, None, None]
    h = W["wte.weight"][arm, ids] + W["wpe.weight"][:, None, :T]
    n_layer = sum(1 for k in W if k.endswith(".ln_1.weight"))
    E = h.shape[-1]
    for i in range(n_layer):
        def p(k, i=i):
            return W[f"h.{i}.{k}"]
        x = _ln(h, p("ln_1.weight"), p("ln_1.bias"))
        q, k, v = _lin(x, p("attn.c_attn.weight"), p("attn.c_attn.bias")).split(E, dim=-1)
        sh = (A * B, T, n_head, E // n_head)
        q, k, v = (t.reshape(sh).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(A, B, T, E)
        h = h + _lin(y, p("attn.c_proj.weight"), p("attn.c_proj.bias"))
        x = _ln(h, p("ln_2.weight"), p("ln_2.bias"))
        x = F.gelu(_lin(x, p("mlp.c_fc.weight"), p("mlp.c_fc.bias")), approximate="tanh")
        h = h + _lin(x, p("mlp.c_proj.weight"), p("mlp.c_proj.bias"))
    return _ln(h, W["ln_f.weight"], W["ln_f.bias"])


def stacked_logps(W: dict, ids, n_head: int, *, head=None):
    """Summed response log-probabilities, ``ids`` (A, B, T) -> (A, B); GPT-2 math exactly.

    ``head`` (default ``W["wte.weight"]``) lets the caller pass a separate tensor for the output
    use of the tied embedding, so that its gradient is the LM-head gradient alone.
    """
    h = _stacked_hidden(W, ids, n_head)[:, :, PROMPT_LEN:-1]
    logits = torch.einsum("abte,ave->abtv", h, W["wte.weight"] if head is None else head)
    lp = torch.log_softmax(logits, -1)
    return lp.gather(-1, ids[:, :, PROMPT_LEN + 1:, None])[..., 0].sum(-1)


@torch.no_grad()
def sample_gold_reward(W: dict, n_head: int, *, n_prompts: int, per_prompt: int,
                       seed: int) -> list[float]:
    """Mean gold reward (teacher log-likelihood - cost x bad tokens) of policy samples, per arm.

    ``n_prompts`` fresh prompts, ``per_prompt`` samples each at temperature 1, 10 response
    words each. INFERRED (ours): sampling is restricted to the 32 word tokens (the softmax is
    renormalised over them) so every sample is a scorable 10-word response. All arms use the
    same prompts and the same uniforms (common random numbers: the paired RC - base difference
    is not blurred by sampling noise that the arms do not share).
    """
    from optzoo.tinylm import ToyLanguage
    from optzoo.tinylm.toylang import RESPONSE_LEN, WORD0

    world = ToyLanguage(seed=WORLD_SEED)
    A = W["wte.weight"].shape[0]
    prompts = world.sample_prompts(n_prompts, seed=derive_seed(seed, "gold_prompts") % 2**31)
    prompts = np.repeat(prompts, per_prompt, axis=0)
    n = len(prompts)
    ids = torch.from_numpy(world.encode(prompts))[None].repeat(A, 1, 1)
    u = torch.rand(RESPONSE_LEN, n, generator=torch_generator(seed, "gold_uniforms"))
    words = torch.empty(A, n, RESPONSE_LEN, dtype=torch.long)
    for t in range(RESPONSE_LEN):
        h = _stacked_hidden(W, ids, n_head)[:, :, -1]
        logits = torch.einsum("abe,ave->abv", h, W["wte.weight"])[..., WORD0:WORD0 + 32]
        cdf = torch.softmax(logits.double(), -1).cumsum(-1)
        tok = torch.searchsorted(cdf, u[t][None, :, None].double().expand(A, n, 1).contiguous())[..., 0]
        tok = tok.clamp(max=31)
        words[:, :, t] = tok
        ids = torch.cat([ids, (WORD0 + tok)[..., None]], dim=-1)
    return [float(world.gold_reward(prompts, words[a].numpy()).mean()) for a in range(A)]


def _new_trace():
    return {"step": [], "dz_w_train": [], "dz_l_train": [], "loss": [], "log_r": [],
            "log_r_star": [], "rho": [], "alpha": [], "in_band_raw": []}


def train_arms(ref_model, arms: list[dict], datasets: dict, *, steps: int, batch: int,
               lr: float, seed: int, phi: str = "head", ema_beta: float = 0.98,
               trace_every: int = 10, progress=None, gold_prompts: int = 0,
               gold_per_prompt: int = 16, eval_mid: bool = False) -> list[dict]:
    """Train one copy of ``ref_model`` per arm, all arms in one batched computation.

    ``arms``: dicts with ``loss_type``, ``rc`` (bool), ``k`` (a key of ``datasets``), optional
    ``beta``, ``tau``, ``nll_weight`` (TRL's ``sft`` term, mean chosen-token NLL: the
    ``rpo_alpha`` baseline). ``datasets[k] = (train, held)``. Arms differ only in their loss:
    same reference, same batch indices at every step, same Adam and learning rate. ``phi``:
    ``head`` (the output use of the tied embedding: the LM-head gradient) or ``all``.
    ``gold_prompts`` > 0: also the mean gold reward of ``gold_per_prompt`` samples on each of
    that many fresh prompts (:func:`sample_gold_reward`), key ``gold``. ``eval_mid``: also the
    held-out means after ``steps // 2`` steps (keys ``dz_w_mid``, ``dz_l_mid``), so the change
    over the second half (after the early stage) can be read.
    """
    A = len(arms)
    W = stack_weights(ref_model, A)
    n_head = ref_model.config.n_head
    opt = torch.optim.Adam(list(W.values()), lr=lr)
    calibs = [RewardCalibrator([W["wte.weight"]], ema_beta=ema_beta) if a["rc"] else None
              for a in arms]
    refs = {k: (_logps_pairs(ref_model, tr), _logps_pairs(ref_model, he))
            for k, (tr, he) in datasets.items()}
    n = min(len(tr) for tr, _ in datasets.values())
    gen = torch_generator(seed, "order")
    order = torch.cat([torch.randperm(n, generator=gen) for _ in range(steps * batch // n + 1)])
    lens = torch.full((batch,), float(RESP_TOKENS))
    traces = [_new_trace() for _ in arms]
    mid: list[tuple[float, float]] | None = None
    t0 = time.perf_counter()
    for step in range(steps):
        if eval_mid and step == steps // 2:
            mid = [_heldout_means(W, a, datasets[arm["k"]][1], refs[arm["k"]][1], n_head)[:2]
                   for a, arm in enumerate(arms)]
        idx = order[step * batch:(step + 1) * batch]
        ids = torch.stack([torch.cat([datasets[a["k"]][0].chosen[idx],
                                      datasets[a["k"]][0].rejected[idx]]) for a in arms])
        head = W["wte.weight"].clone() if phi == "head" else None
        z = stacked_logps(W, ids, n_head, head=head)
        z_w, z_l = z[:, :batch], z[:, batch:]
        if any(c is not None for c in calibs):
            # Arms are independent, so one grad call gives every arm's own phi-gradient.
            target = [head] if phi == "head" else list(W.values())
            g_w = torch.autograd.grad(z_w.mean(1).sum(), target, retain_graph=True)
            g_l = torch.autograd.grad(z_l.mean(1).sum(), target, retain_graph=True)
        total = 0.0
        record = step % trace_every == 0 or step == steps - 1
        for a, arm in enumerate(arms):
            rw, rl = (t[idx] for t in refs[arm["k"]][0])
            kw = dict(loss_type=arm["loss_type"], beta=arm.get("beta", 0.1),
                      tau=arm.get("tau", 0.1), len_w=lens, len_l=lens)
            zw, zl = z_w[a], z_l[a]
            info = None
            if calibs[a] is not None:
                d_w, d_l = incentives(zw, zl, rw, rl, **kw)
                info = calibs[a].update(d_w.mean(), d_l.mean(),
                                        [g[a] for g in g_w], [g[a] for g in g_l])
                if info is not None:
                    zw, zl = RewardCalibrator.rescale(zw, zl, info["alpha"])
            loss = pairwise_loss(zw, zl, rw, rl, **kw).mean()
            if arm.get("nll_weight"):
                loss = loss + arm["nll_weight"] * (-z_w[a].mean() / RESP_TOKENS)
            total = total + loss
            if record:
                tr = traces[a]
                tr["step"].append(step)
                tr["loss"].append(float(loss.detach()))
                tr["dz_w_train"].append(float((z_w[a].detach() - rw).mean()))
                tr["dz_l_train"].append(float((z_l[a].detach() - rl).mean()))
                if info is not None:
                    tr["log_r"].append(math.log(info["r"]))
                    tr["log_r_star"].append(math.log(info["r_star"]))
                    tr["rho"].append(info["rho"])
                    tr["alpha"].append(info["alpha"])
                    tr["in_band_raw"].append(bool(info["in_band_raw"]))
        opt.zero_grad(set_to_none=True)
        total.backward()
        opt.step()
        if progress is not None:
            progress.advance()
    wall = time.perf_counter() - t0
    gold = (sample_gold_reward(W, n_head, n_prompts=gold_prompts, per_prompt=gold_per_prompt,
                               seed=seed) if gold_prompts > 0 else None)
    out = []
    with torch.no_grad():
        for a, arm in enumerate(arms):
            dz_w, dz_l, displaced, accuracy = _heldout_means(
                W, a, datasets[arm["k"]][1], refs[arm["k"]][1], n_head)
            out.append({"dz_w": dz_w, "dz_l": dz_l, "displaced": displaced, "accuracy": accuracy,
                        "trace": traces[a], "wall_s": wall / A,
                        "skipped": 0 if calibs[a] is None else int(calibs[a].state["skipped"])})
            if mid is not None:
                out[-1]["dz_w_mid"], out[-1]["dz_l_mid"] = mid[a]
            if gold is not None:
                out[-1]["gold"] = gold[a]
    return out


@torch.no_grad()
def _heldout_means(W: dict, a: int, held: ToyData, ref, n_head: int):
    """Arm ``a``'s held-out means ``(dz_w, dz_l, displacement rate, accuracy)`` vs ``ref``."""
    rw, rl = ref
    zs = stacked_logps({k: v[a:a + 1].detach() for k, v in W.items()},
                       torch.cat([held.chosen, held.rejected])[None], n_head)[0]
    dw, dl = zs[:len(held)] - rw, zs[len(held):] - rl
    return (float(dw.mean()), float(dl.mean()), float((dw < 0).double().mean()),
            float(((dw - dl) > 0).double().mean()))


def trl_rpo_arm(ref_model, train: ToyData, held: ToyData, *, steps: int, batch: int,
                lr: float, seed: int, beta: float = 0.1, rpo_alpha: float = 1.0,
                ref_held=None) -> dict:
    """A real TRL ``DPOTrainer`` run with the RPO NLL term.

    TRL 1.16 has no ``rpo_alpha`` field any more; its documented equivalent is
    ``loss_type=["sigmoid", "sft"]`` with ``loss_weights=[1, rpo_alpha]``.
    """
    from optzoo.reward_calibration.trl_adapter import make_trl_trainer

    t0 = time.perf_counter()
    trainer = make_trl_trainer(ref_model, train.pairs, rc=False, steps=steps, batch=batch,
                               lr=lr, seed=seed, beta=beta,
                               loss_type=["sigmoid", "sft"], loss_weights=[1.0, rpo_alpha])
    trainer.train()
    wall = time.perf_counter() - t0
    model = trainer.model
    rw, rl = ref_held if ref_held is not None else _logps_pairs(ref_model, held)
    out = evaluate_pairs(model, held, rw, rl)
    out.update(wall_s=wall)
    return out


def trl_parity(ref_model, pairs, *, beta: float = 0.1, seed: int = 0) -> dict:
    """Our DPO loss and gradients vs TRL ``DPOTrainer._compute_loss`` on one identical batch.

    The policy is a perturbed copy of ``ref_model`` (so the margin is not zero); TRL gets the
    whole pair set as one batch (the mean is order-free), we encode the same pairs ourselves.
    """
    import copy

    from optzoo.reward_calibration.losses import preference_loss
    from optzoo.reward_calibration.trl_adapter import make_trl_trainer
    from optzoo.tinylm import ToyLanguage

    policy = copy.deepcopy(ref_model)
    g = torch_generator(seed, "parity")
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=g))
    n = len(pairs.prompts)
    trainer = make_trl_trainer(policy, pairs, rc=False, steps=1, batch=n, lr=1e-3, seed=seed,
                               beta=beta, ref_model=ref_model)
    model = trainer.model.train()
    batch = next(iter(trainer.get_train_dataloader()))
    params = [p for p in model.parameters() if p.requires_grad]
    loss_trl = trainer.compute_loss(model, batch)
    g_trl = torch.autograd.grad(loss_trl, params)
    world = ToyLanguage(seed=WORLD_SEED)
    ids_w = torch.from_numpy(world.encode(pairs.prompts, pairs.chosen))
    ids_l = torch.from_numpy(world.encode(pairs.prompts, pairs.rejected))
    z = sequence_logps(model, torch.cat([ids_w, ids_l]))
    with torch.no_grad():
        z_ref = sequence_logps(ref_model, torch.cat([ids_w, ids_l]))
    loss_ours, _ = preference_loss(z[:n], z[n:], z_ref[:n], z_ref[n:], loss_type="dpo",
                                   beta=beta)
    g_ours = torch.autograd.grad(loss_ours, params)
    diff = max(float((a - b).abs().max()) for a, b in zip(g_trl, g_ours, strict=False))
    scale = max(float(a.abs().max()) for a in g_trl)
    loss_trl, loss_ours = float(loss_trl.detach()), float(loss_ours.detach())
    return {"loss_trl": loss_trl, "loss_ours": loss_ours,
            "loss_abs_diff": abs(loss_trl - loss_ours),
            "grad_max_abs_diff": diff, "grad_rel_diff": diff / max(scale, 1e-30),
            "batch_pairs": n}
