"""E1 + E2 of the spec for one seed: exact vs ZO eNTK over a width sweep of tiny GPT-2s.

For each width the model is a fresh random initialisation (seeded by the seed and the width),
the prompts are the same ``N`` ICL prompts for every width (so only d varies), the outputs are
the last-position logits of the first ``V`` label tokens. Everything goes through the
library's public functions (:func:`empirical_ntk`, :func:`zo_projections`,
:func:`zo_sgd_update`, :func:`jl_entry_bound`, :func:`effective_rank`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from optzoo._core.rng import derive_seed
from optzoo.tinylm import icl_batch, tiny_gpt2
from optzoo.zo_sgd import (
    effective_rank,
    empirical_ntk,
    expected_gradient_cosine,
    jl_entry_bound,
    label_logits,
    zo_projections,
    zo_sgd_update,
)


def label_ids(vocab: int, V: int) -> list[int]:
    """The V output tokens: the two ICL labels first (ids 3, 4), then the other tokens."""
    return (list(range(3, vocab)) + [0, 1, 2])[:V]


def _rows(N: int, Vmax: int, V: int, examples=None) -> list[int]:
    ex = range(N) if examples is None else examples
    return [i * Vmax + v for i in ex for v in range(V)]


def width_cell(cfg, seed: int, width: int, ids: torch.Tensor, labels: np.ndarray) -> dict:
    vocab, Vmax, N = cfg.vocab, max(cfg.outputs), ids.shape[0]
    model = tiny_gpt2(vocab, n_layer=cfg.n_layer, n_embd=width, n_head=4,
                      n_positions=cfg.n_positions, seed=derive_seed(seed, "model", width) % 2 ** 31)
    d = int(sum(p.numel() for p in model.parameters()))
    fn = label_logits(label_ids(vocab, Vmax))
    K = empirical_ntk(model, ids, output_fn=fn)
    proj = {dist: zo_projections(model, ids, num_perturbations=pm, output_fn=fn,
                                 distribution=dist, seed=derive_seed(seed, "dirs", dist) % 2 ** 31)
            for dist, pm in (("gaussian", max(cfg.perturbations)),
                             ("rademacher", max(cfg.rademacher_perturbations)))}
    out = {"d": d, "width": width, "err": {}, "entry": {}, "bound": {}, "r_eff": {}}
    for V in cfg.outputs:
        rows = _rows(N, Vmax, V)
        Ks = K[rows][:, rows]
        nrm = Ks.diagonal().clamp_min(1e-300).sqrt()
        out["r_eff"][str(V)] = effective_rank(Ks)
        for dist, Ps in (("gaussian", cfg.perturbations), ("rademacher", cfg.rademacher_perturbations)):
            errs, entries = [], []
            for P in Ps:
                Kz = proj[dist].kernel(P, rows, rows)
                errs.append(float((Kz - Ks).norm() / Ks.norm()))
                entries.append(float(((Kz - Ks).abs() / (nrm[:, None] * nrm[None, :])).max()))
            out["err"][f"{dist}/{V}"] = errs
            out["entry"][f"{dist}/{V}"] = entries
        bounds = [jl_entry_bound(P, N * V, delta=cfg.jl_delta) for P in cfg.perturbations]
        out["bound"][str(V)] = [b if math.isfinite(b) else None for b in bounds]  # None: vacuous
    out.update(_paradox(cfg, model, ids, labels, K, proj["gaussian"], fn, d))
    return out


def _paradox(cfg, model, ids, labels, K, proj, fn, d) -> dict:
    """E2: parameter-space cosine cos(g_hat, g) and function-space cosine on held-out prompts,
    for the label-word (V = 2) cross-entropy on the update half of the prompts."""
    from torch.func import functional_call, vjp

    N, Vmax = ids.shape[0], max(cfg.outputs)
    half = N // 2
    obs, upd = list(range(half)), list(range(half, N))
    m = _float64(model)
    params = {n: p.detach() for n, p in m.named_parameters()}
    plist = list(params.values())
    xu = ids[upd]

    def f_u(p):
        return fn(functional_call(m, p, (xu,)))[:, :2]

    z_u, pull = vjp(f_u, params)
    y = torch.as_tensor(labels[upd], dtype=torch.long)
    G = torch.softmax(z_u, 1) - torch.nn.functional.one_hot(y, 2).to(z_u.dtype)  # dCE/dz
    (g,) = pull(G)
    gflat = torch.cat([g[n].reshape(-1) for n in params])
    rows_o, rows_u = _rows(N, Vmax, 2, obs), _rows(N, Vmax, 2, upd)
    dz_fo = K[rows_o][:, rows_u] @ G.reshape(-1)
    c_all = proj.A[rows_u].T @ G.reshape(-1)  # c_p = grad L . u_p (exact JVP projections)
    pcos, fcos = [], []
    for P in cfg.cosine_perturbations:
        dz_zo = proj.kernel(P, rows_o, rows_u) @ G.reshape(-1)
        fcos.append(float(torch.dot(dz_zo, dz_fo) / (dz_zo.norm() * dz_fo.norm())))
        step = zo_sgd_update(plist, c_all[:P], lr=1.0, seed=proj.seed, step=0,
                             distribution=proj.distribution)  # = -g_hat
        gh = -torch.cat([s.reshape(-1) for s in step])
        pcos.append(float(torch.dot(gh, gflat) / (gh.norm() * gflat.norm())))
    return {"param_cos": pcos, "func_cos": fcos,
            "param_cos_pred": [expected_gradient_cosine(d, P) for P in cfg.cosine_perturbations]}


def _float64(model):
    import copy

    from optzoo.zo_sgd.kernel import _eager_attention

    m = copy.deepcopy(model).double().eval()
    _eager_attention(m)
    return m


def run_kernels(cfg, seed: int, progress) -> dict:
    b = icl_batch(cfg.n_prompts, k=cfg.demos, n_features=cfg.n_features,
                  seed=derive_seed(seed, "prompts") % 2 ** 31)
    ids = torch.as_tensor(b.input_ids)
    cells = []
    for w in cfg.widths:
        cells.append(width_cell(cfg, seed, w, ids, b.labels))
        progress.advance()
    return {"cells": cells, "prompt_tokens": int(ids.shape[1])}


def slope(x, y) -> float:
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])
