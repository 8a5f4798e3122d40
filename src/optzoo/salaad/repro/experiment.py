"""One seed of the SALAAD reproduction: dense and SALAAD training on the same data, then every
compressed model at the same budgets, scored on the same validation sequences."""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from optzoo._core.rng import derive_seed
from optzoo.repro.evidence import Record
from optzoo.salaad import (
    SALAAD,
    magnitude_prune_compress,
    rpca_compress,
    rpca_decompose,
    sltrain_model,
    truncated_svd_compress,
)
from optzoo.tinylm import HiddenMarkovTask, tiny_llama

TARGETS = r"(q|k|v|o|gate|up|down)_proj|embed_tokens"  # the head is tied to the embedding
SLTRAIN_TARGETS = r"(q|k|v|o|gate|up|down)_proj"        # SLTrain keeps the embedding dense (counted)


def build_model(cfg, seed):
    return tiny_llama(cfg.vocab, n_layer=cfg.layers, n_embd=cfg.hidden, n_head=cfg.heads,
                      n_positions=cfg.seq_len, intermediate_size=cfg.intermediate,
                      seed=derive_seed(seed, "init") % 2**31).train()


def batches(task, cfg, seed, steps):
    return [task.sample(cfg.batch, cfg.seq_len, seed=derive_seed(seed, "batch", t)) for t in range(steps)]


def val_nll(model, val, chunk=64) -> float:
    was = model.training
    model.eval()
    tot, n = 0.0, 0
    with torch.no_grad():
        for i in range(0, val.shape[0], chunk):
            x = val[i:i + chunk]
            tot += float(model(input_ids=x, labels=x).loss) * x.shape[0]
            n += x.shape[0]
    model.train(was)
    return tot / n


def _schedule(cfg):
    def f(t):
        if t < cfg.warmup:
            return (t + 1) / cfg.warmup
        p = (t - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, p)))
    return f


def train(model, data, cfg, *, rho=None, couple=True, progress=None, every=10):
    """AdamW (lr, betas (0.9, 0.95), eps 1e-8, wd 0), warm-up + cosine to 0.1 lr, clip 1.0;
    with ``rho``: SALAAD's sweeps on the same loop. ``couple=True``: SALAAD in coupled mode (its
    penalty in the loss: the X-step is pulled towards L + S). ``couple=False``: the control, the
    penalty's weight in the X-step set to 0 (``loss = task + 0 * penalty``: the gradient, the clip
    and the weights are exactly those of plain training) while the sweeps, the controller and the
    dual run unchanged on the dense trajectory. Returns (sal, curve, seconds, svd s)."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _schedule(cfg))
    sal = None
    if rho is not None:
        sal = SALAAD(model, targets=TARGETS, rank_ratio=cfg.rank_ratio, density=cfg.density, rho=rho,
                     admm_every=cfg.admm_every, k_alpha=cfg.k_alpha, k_beta=cfg.k_beta)
    weight = 1.0 if couple else 0.0
    curve, t_svd, t0 = [], 0.0, time.process_time()
    for t, x in enumerate(data):
        task_loss = model(input_ids=x, labels=x).loss
        loss = task_loss + weight * sal.penalty() if sal is not None else task_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if sal is not None:
            s0 = time.process_time()
            sal.step()
            t_svd += time.process_time() - s0
        if t % every == 0 or t == len(data) - 1:
            curve.append([t, float(task_loss.detach())])
        if progress is not None:
            progress.advance()
    return sal, curve, time.process_time() - t0, t_svd


#: quick's rho choice (tuning seed 90000; its scores as the docs page prints them) as a
#: :class:`~optzoo.repro.tuning.Choice` (absent from an installed wheel: then none recorded)
FROZEN_RHO = Path(__file__).resolve().parents[4] / "docs" / "tuning" / "salaad_quick.json"


def frozen_rho(rho: float) -> list:
    """The frozen choice of SALAAD's rho, if ``rho`` is the value it chose (else none)."""
    from optzoo.repro.tuning import load_choices

    return [c for c in load_choices(FROZEN_RHO) if c.value == rho] if FROZEN_RHO.exists() else []


def _tune_rho(cfg, seed, progress):
    """Pick rho from ``cfg.rho_grid`` on a separate tuning task and its own validation split:
    the lowest mean surrogate NLL over the budgets <= 50% (ties: the first in grid order), by
    :func:`optzoo.repro.tuning.select`; returns the :class:`~optzoo.repro.tuning.Choice`."""
    from optzoo.repro.tuning import select

    task = HiddenMarkovTask(n_states=cfg.states, vocab=cfg.vocab, seed=derive_seed(seed, "tune-task") % 2**31)
    data = batches(task, cfg, derive_seed(seed, "tune"), cfg.steps)
    val = task.sample(cfg.val_seqs, cfg.seq_len, seed=derive_seed(seed, "tune-val"))

    def score(rho, _seed):
        model = build_model(cfg, derive_seed(seed, "tune"))
        sal, *_ = train(model, data, cfg, rho=rho, progress=progress)
        low = [f for f in cfg.fractions if f <= 0.5]
        return float(np.mean([c["value"] for c in sal.budget_curve(lambda m: val_nll(m, val), low)]))

    return select(cfg.rho_grid, score, stream="tune task", arm="salaad", knob="rho",
                  if_all_nonfinite="first", eval_budget=cfg.steps, budget_unit="steps")


def _sltrain(cfg, model_seed, budget, share, slt_seed, data, val, progress):
    """One SLTrain-style model with at most ``budget`` parameters (the budgets of every other
    method), trained from scratch on ``data`` with the same loop; returns its record."""
    slt = sltrain_model(build_model(cfg, model_seed), budget, targets=SLTRAIN_TARGETS, sparse_share=share,
                        seed=slt_seed % 2**31)
    model = slt.model.train()
    _, curve, sec, _ = train(model, data, cfg, progress=progress)
    return {"nll": val_nll(model, val), "params": slt.params, "seconds": sec}


def _run_sltrain(cfg, seed, budgets, data, val, progress) -> dict:
    """Spec baseline 4 (full): for each budget in ``sltrain_fractions``, the support share picked
    from ``sltrain_grid`` on the tuning task by validation NLL (as rho is for SALAAD: one
    training run per grid value; :func:`optzoo.repro.tuning.select`, ties: the first in grid
    order), then one run on the evaluation data."""
    from optzoo.repro.tuning import select

    out = {"fractions": list(cfg.sltrain_fractions), "nll": [], "params": [], "budget": [], "seconds": [],
           "tune_seconds": [], "share": [], "tune_scores": []}
    tune_task = HiddenMarkovTask(n_states=cfg.states, vocab=cfg.vocab, seed=derive_seed(seed, "tune-task") % 2**31)
    tune_data = batches(tune_task, cfg, derive_seed(seed, "tune"), cfg.steps)
    tune_val = tune_task.sample(cfg.val_seqs, cfg.seq_len, seed=derive_seed(seed, "tune-val"))
    out["choices"] = []
    for f in cfg.sltrain_fractions:
        b = budgets[cfg.fractions.index(f)]
        scores, tune_sec = {}, 0.0
        share = cfg.sltrain_grid[0]
        if len(cfg.sltrain_grid) > 1:
            def score(share, _seed, f=f, b=b):
                nonlocal tune_sec
                r = _sltrain(cfg, derive_seed(seed, "tune"), b, share, derive_seed(seed, "tune-sltrain", f),
                             tune_data, tune_val, progress)
                tune_sec += r["seconds"]
                return r["nll"]

            ch = select(cfg.sltrain_grid, score, stream="tune task", arm="sltrain", knob="share",
                        context=_part(f), if_all_nonfinite="first", eval_budget=cfg.steps,
                        budget_unit="steps")
            scores, share = dict(zip(ch.grid, ch.scores, strict=True)), ch.value
            out["choices"].append(ch)
        r = _sltrain(cfg, seed, b, share, derive_seed(seed, "sltrain", f), data, val, progress)
        for k, v in (("nll", r["nll"]), ("params", r["params"]), ("budget", b), ("share", share),
                     ("seconds", r["seconds"]), ("tune_seconds", tune_sec)):
            out[k].append(v)
        out["tune_scores"].append({str(k): v for k, v in scores.items()})
    return out


#: every arm whose export is scored at every budget
EXPORT_ARMS = ("salaad", "salaad_uncoupled", "svd", "prune", "rpca")


def _part(f: float) -> str:
    return f"f={f:g}"


def run_seed(cfg, seed, progress) -> list[Record]:
    """One seed, every arm on the same task, init, data order, validation sequences and budgets.

    Arms: ``dense`` (plain AdamW), ``salaad`` (coupled), ``salaad_uncoupled`` (the control: the
    same sweeps, controller and export on the dense run, the penalty's weight in the X-step 0,
    so its X *is* the dense model), post-hoc ``svd``, ``prune`` and ``rpca`` of the dense model,
    ``bayes`` (the exact Bayes NLL of the validation sequences) and, at full, ``sltrain``."""
    n_tune = len(cfg.rho_grid) * cfg.steps if cfg.rho_grid else 0
    n_slt = len(cfg.sltrain_fractions) * (len(cfg.sltrain_grid) + (len(cfg.sltrain_grid) > 1)) * cfg.steps
    progress.start(2 * cfg.steps + n_tune + n_slt + 4, "salaad")
    rec: list[Record] = []
    add = rec.append
    rho, tune_scores = cfg.rho, None
    if cfg.rho_grid:
        choice = _tune_rho(cfg, seed, progress)
        rho, tune_scores = choice.value, dict(zip(choice.grid, choice.scores, strict=True))
        rec += choice.to_records()
    else:  # quick's frozen rho: the pilot's choice behind it, when it is the one run
        rec += [r for c in frozen_rho(rho) for r in c.to_records()]
    add(Record("", "salaad", "", "rho", rho))
    for k, v in (tune_scores or {}).items():
        add(Record("", "salaad", f"rho={k:g}", "tune_score", v))
    add(Record("", "config", "", "rank_ratio_target", cfg.rank_ratio))
    add(Record("", "config", "", "density_target", cfg.density))
    task = HiddenMarkovTask(n_states=cfg.states, vocab=cfg.vocab, seed=derive_seed(seed, "task") % 2**31)
    data = batches(task, cfg, seed, cfg.steps)
    val = task.sample(cfg.val_seqs, cfg.seq_len, seed=derive_seed(seed, "val"))
    H = task.bayes_nll(val)
    add(Record("", "bayes", "val", "nll", H))

    # dense training carries the control's sweeps: its weights are those of plain training
    dense = build_model(cfg, seed)
    ctl, curve_d, sec_d, svd_d = train(dense, data, cfg, rho=rho, couple=False, progress=progress)
    model = build_model(cfg, seed)
    sal, curve_s, sec_s, svd_s = train(model, data, cfg, rho=rho, progress=progress)
    for arm, curve in (("dense", curve_d), ("salaad", curve_s)):
        rec += [Record("", arm, f"t={t}", "train_nll", v, x=t) for t, v in curve]
    for arm, sec, sv in (("dense", sec_d, svd_d), ("salaad", sec_s, svd_s)):
        add(Record("", arm, "train", "cpu_s", sec))
        add(Record("", arm, "sweeps", "cpu_s", sv))
    nll_dense, nll_x = val_nll(dense, val), val_nll(model, val)
    for arm, v in (("dense", nll_dense), ("salaad_uncoupled", nll_dense), ("salaad", nll_x)):
        add(Record("", arm, "val", "x_nll", v))
        add(Record("", arm, "val", "x_excess", v - H))
    for arm, s in (("salaad", sal), ("salaad_uncoupled", ctl)):
        add(Record("", arm, "", "residual", s.residual()))
        add(Record("", arm, "", "full_params", s.full_params()))
        for k, d in s.stats().items():
            for key in ("rank_ratio", "density", "tau_L", "tau_S"):
                add(Record("", arm, k, key, d[key]))
        stride = max(1, s.sweeps // 50)
        for k, h in s.history.items():
            for key in ("rank_ratio", "density"):
                rec += [Record("", arm, f"{k}@{i}", f"hist_{key}", v, x=i)
                        for i, v in list(enumerate(h[key]))[::stride]]
    progress.advance()

    rest, total = sal.rest_params, sal.target_params
    budgets = [rest + round(f * total) for f in cfg.fractions]
    add(Record("", "config", "", "rest_params", rest))
    add(Record("", "config", "", "target_params", total))

    def record(arm, f, b, c):
        nll = val_nll(c.model, val)
        for metric, v in (("nll", nll), ("excess", nll - H), ("params", c.params), ("budget", b),
                          ("bytes", c.nbytes), ("index_bytes", c.index_bytes)):
            add(Record(_part(f), arm, "val", metric, v))

    for arm, s in (("salaad", sal), ("salaad_uncoupled", ctl)):
        prev = -1
        for f, b in sorted(zip(cfg.fractions, budgets, strict=True), key=lambda p: p[1]):
            c = s.export(b, gamma=cfg.gamma)
            record(arm, f, b, c)
            add(Record("", arm, _part(f), "one_run", float(c.params <= b and c.params >= prev)))
            prev = c.params
    progress.advance()
    dense_w = {k: dict(dense.named_modules())[k].weight for k in sal.weights}
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a block whose IALM stops at max_iter is still used
        dec = rpca_decompose(dense_w)
    add(Record("", "rpca", "decompose", "cpu_s", time.process_time() - t0))
    for f, b in zip(cfg.fractions, budgets, strict=True):
        record("svd", f, b, truncated_svd_compress(dense, dense_w, b))
        record("prune", f, b, magnitude_prune_compress(dense, dense_w, b))
        record("rpca", f, b, rpca_compress(dense, dense_w, b, gamma=cfg.gamma, decompositions=dec))
    progress.advance()
    if cfg.sltrain_fractions:
        slt = _run_sltrain(cfg, seed, budgets, data, val, progress)
        for ch in slt["choices"]:
            rec += ch.to_records()
        for i, f in enumerate(slt["fractions"]):
            for metric in ("nll", "params", "budget", "share", "seconds", "tune_seconds"):
                add(Record(_part(f), "sltrain", "val", metric, slt[metric][i]))
            add(Record(_part(f), "sltrain", "val", "excess", slt["nll"][i] - H))
            add(Record(_part(f), "sltrain", "val", "runs", 1 + len(slt["tune_scores"][i])))
    add(Record("", "dense", "", "bytes", sum(p.numel() * p.element_size() for p in dense.parameters())))
    progress.advance()
    return rec
