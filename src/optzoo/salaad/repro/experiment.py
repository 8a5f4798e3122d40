"""One seed of the SALAAD reproduction: dense and SALAAD training on the same data, then every
compressed model at the same budgets, scored on the same validation sequences."""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import torch

from optzoo._core.rng import derive_seed
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


def train(model, data, cfg, *, rho=None, progress=None, every=10):
    """AdamW (lr, betas (0.9, 0.95), eps 1e-8, wd 0), warm-up + cosine to 0.1 lr, clip 1.0;
    with ``rho``: SALAAD in coupled mode on the same loop. Returns (sal, curve, seconds, svd s)."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _schedule(cfg))
    sal = None
    if rho is not None:
        sal = SALAAD(model, targets=TARGETS, rank_ratio=cfg.rank_ratio, density=cfg.density, rho=rho,
                     admm_every=cfg.admm_every, k_alpha=cfg.k_alpha, k_beta=cfg.k_beta)
    curve, t_svd, t0 = [], 0.0, time.process_time()
    for t, x in enumerate(data):
        task_loss = model(input_ids=x, labels=x).loss
        loss = task_loss + sal.penalty() if sal is not None else task_loss
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


def _tune_rho(cfg, seed, progress):
    """Pick rho from ``cfg.rho_grid`` on a separate tuning task and its own validation split:
    the lowest mean surrogate NLL over the budgets <= 50%."""
    task = HiddenMarkovTask(n_states=cfg.states, vocab=cfg.vocab, seed=derive_seed(seed, "tune-task") % 2**31)
    data = batches(task, cfg, derive_seed(seed, "tune"), cfg.steps)
    val = task.sample(cfg.val_seqs, cfg.seq_len, seed=derive_seed(seed, "tune-val"))
    scores = {}
    for rho in cfg.rho_grid:
        model = build_model(cfg, derive_seed(seed, "tune"))
        sal, *_ = train(model, data, cfg, rho=rho, progress=progress)
        low = [f for f in cfg.fractions if f <= 0.5]
        scores[rho] = float(np.mean([c["value"] for c in sal.budget_curve(lambda m: val_nll(m, val), low)]))
    return min(scores, key=scores.get), scores


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
    training run per grid value), then one run on the evaluation data."""
    out = {"fractions": list(cfg.sltrain_fractions), "nll": [], "params": [], "budget": [], "seconds": [],
           "tune_seconds": [], "share": [], "tune_scores": []}
    tune_task = HiddenMarkovTask(n_states=cfg.states, vocab=cfg.vocab, seed=derive_seed(seed, "tune-task") % 2**31)
    tune_data = batches(tune_task, cfg, derive_seed(seed, "tune"), cfg.steps)
    tune_val = tune_task.sample(cfg.val_seqs, cfg.seq_len, seed=derive_seed(seed, "tune-val"))
    for f in cfg.sltrain_fractions:
        b = budgets[cfg.fractions.index(f)]
        scores, tune_sec = {}, 0.0
        if len(cfg.sltrain_grid) > 1:
            for share in cfg.sltrain_grid:
                r = _sltrain(cfg, derive_seed(seed, "tune"), b, share, derive_seed(seed, "tune-sltrain", f),
                             tune_data, tune_val, progress)
                scores[share], tune_sec = r["nll"], tune_sec + r["seconds"]
        share = min(scores, key=scores.get) if scores else cfg.sltrain_grid[0]
        r = _sltrain(cfg, seed, b, share, derive_seed(seed, "sltrain", f), data, val, progress)
        for k, v in (("nll", r["nll"]), ("params", r["params"]), ("budget", b), ("share", share),
                     ("seconds", r["seconds"]), ("tune_seconds", tune_sec)):
            out[k].append(v)
        out["tune_scores"].append({str(k): v for k, v in scores.items()})
    return out


def run_seed(cfg, seed, progress) -> dict:
    n_tune = len(cfg.rho_grid) * cfg.steps if cfg.rho_grid else 0
    n_slt = len(cfg.sltrain_fractions) * (len(cfg.sltrain_grid) + (len(cfg.sltrain_grid) > 1)) * cfg.steps
    progress.start(2 * cfg.steps + n_tune + n_slt + 4, "salaad")
    res: dict = {"config": {"fractions": list(cfg.fractions), "rank_ratio": cfg.rank_ratio,
                            "density": cfg.density, "steps": cfg.steps, "layers": cfg.layers}}
    rho, tune_scores = cfg.rho, None
    if cfg.rho_grid:
        rho, tune_scores = _tune_rho(cfg, seed, progress)
    res["rho"], res["rho_scores"] = rho, tune_scores and {str(k): v for k, v in tune_scores.items()}
    task = HiddenMarkovTask(n_states=cfg.states, vocab=cfg.vocab, seed=derive_seed(seed, "task") % 2**31)
    data = batches(task, cfg, seed, cfg.steps)
    val = task.sample(cfg.val_seqs, cfg.seq_len, seed=derive_seed(seed, "val"))
    res["entropy"] = task.bayes_nll(val)

    dense = build_model(cfg, seed)
    _, curve_d, sec_d, _ = train(dense, data, cfg, progress=progress)
    model = build_model(cfg, seed)
    sal, curve_s, sec_s, svd_s = train(model, data, cfg, rho=rho, progress=progress)
    res["train_curve"] = {"dense": curve_d, "salaad": curve_s}
    res["time"] = {"dense": sec_d, "salaad": sec_s, "salaad_sweeps": svd_s}
    res["dense_nll"] = val_nll(dense, val)
    res["salaad_x_nll"] = val_nll(model, val)
    res["residual"] = sal.residual()
    res["controller"] = {k: {kk: v for kk, v in d.items() if kk != "shape"} | {"shape": list(d["shape"])}
                         for k, d in sal.stats().items()}
    stride = max(1, sal.sweeps // 100)
    res["history"] = {k: {h: v[::stride] for h, v in d.items()} for k, d in sal.history.items()}
    res["history_stride"] = stride
    progress.advance()

    rest, total = sal.rest_params, sal.target_params
    budgets = [rest + round(f * total) for f in cfg.fractions]
    res["rest_params"], res["target_params"], res["budgets"] = rest, total, budgets
    res["full_params"] = sal.full_params()
    out = {m: {"nll": [], "params": [], "bytes": [], "index_bytes": []} for m in ("salaad", "svd", "prune", "rpca")}

    def record(name, c):
        out[name]["nll"].append(val_nll(c.model, val))
        out[name]["params"].append(c.params)
        out[name]["bytes"].append(c.nbytes)
        out[name]["index_bytes"].append(c.index_bytes)

    for b in budgets:
        record("salaad", sal.export(b, gamma=cfg.gamma))
    progress.advance()
    dense_w = {k: dict(dense.named_modules())[k].weight for k in sal.weights}
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a block whose IALM stops at max_iter is still used
        dec = rpca_decompose(dense_w)
    res["time"]["rpca"] = time.process_time() - t0
    for b in budgets:
        record("svd", truncated_svd_compress(dense, dense_w, b))
        record("prune", magnitude_prune_compress(dense, dense_w, b))
        record("rpca", rpca_compress(dense, dense_w, b, gamma=cfg.gamma, decompositions=dec))
    progress.advance()
    res["methods"] = out
    if cfg.sltrain_fractions:
        res["sltrain"] = _run_sltrain(cfg, seed, budgets, data, val, progress)
        res["sltrain"]["salaad_nll"] = [out["salaad"]["nll"][cfg.fractions.index(f)] for f in cfg.sltrain_fractions]
        res["sltrain"]["salaad_params"] = [out["salaad"]["params"][cfg.fractions.index(f)]
                                           for f in cfg.sltrain_fractions]
    res["dense_bytes"] = sum(p.numel() * p.element_size() for p in dense.parameters())
    progress.advance()
    return res
