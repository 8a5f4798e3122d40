"""E1 + E2 of the spec for one seed, as records: exact vs ZO eNTK over a width sweep of tiny
GPT-2s, and the same ZO directions judged in parameter space (the control arm).

For each width the model is a fresh random initialisation (seeded by the seed and the width),
the prompts are the same ``N`` ICL prompts for every width (so only the model and d vary), the
outputs are the last-position logits of the first ``V`` label tokens. Everything goes through
the library's public functions (:func:`empirical_ntk`, :func:`zo_projections`,
:func:`zo_directions`, :func:`jl_entry_bound`, :func:`effective_rank`).

Arms (the ``arm`` field of the records):

* ``kernel``: the Gaussian ZO eNTK :math:`K_{ZO}=(JU)(JU)^\\top/P` against the exact eNTK, i.e.
  the random projection applied to the N V tangent vectors (the paper's mechanism);
* ``kernel_rademacher``: the same with Rademacher directions;
* ``parameter``: the SAME Gaussian directions and P, judged in parameter space: the ZO gradient
  estimate :math:`\\hat g=UU^\\top g/P` of the label-word cross-entropy over the V outputs
  against its exact gradient :math:`g=J^\\top G`. It is the estimator without the Jacobian
  projection the kernel view credits (its error grows like :math:`\\sqrt{d/P}`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from optzoo._core.rng import derive_seed
from optzoo.repro.evidence import Record
from optzoo.tinylm import icl_batch, tiny_gpt2
from optzoo.zo_sgd import (
    effective_rank,
    empirical_ntk,
    jl_entry_bound,
    label_logits,
    zo_directions,
    zo_projections,
)

KERNEL, RADEMACHER, PARAMETER = "kernel", "kernel_rademacher", "parameter"


def label_ids(vocab: int, V: int) -> list[int]:
    """The V output tokens: the two ICL labels first (ids 3, 4), then the other tokens."""
    return (list(range(3, vocab)) + [0, 1, 2])[:V]


def _rows(N: int, Vmax: int, V: int, examples=None) -> list[int]:
    ex = range(N) if examples is None else examples
    return [i * Vmax + v for i in ex for v in range(V)]


def _geomean(x) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.exp(np.mean(np.log(x)))) if (x > 0).all() else float("nan")


def width_cell(cfg, seed: int, width: int, ids: torch.Tensor, labels: np.ndarray) -> dict:
    """Every measured number of one width (one model): a plain dict, turned into records by
    :func:`cell_records`."""
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
        out["r_eff"][V] = effective_rank(Ks)
        for dist, Ps in (("gaussian", cfg.perturbations), ("rademacher", cfg.rademacher_perturbations)):
            errs, entries = [], []
            for P in Ps:
                Kz = proj[dist].kernel(P, rows, rows)
                errs.append(float((Kz - Ks).norm() / Ks.norm()))
                entries.append(float(((Kz - Ks).abs() / (nrm[:, None] * nrm[None, :])).max()))
            out["err"][(dist, V)] = errs
            out["entry"][(dist, V)] = entries
        out["bound"][V] = [jl_entry_bound(P, N * V, delta=cfg.jl_delta) for P in cfg.perturbations]
    out.update(_parameter_space(cfg, model, ids, labels, K, proj["gaussian"], fn))
    return out


def _parameter_space(cfg, model, ids, labels, K, proj, fn) -> dict:
    """The same Gaussian directions in parameter space, and E2's two cosines.

    For each V: the label-word cross-entropy over the V outputs summed over the N prompts (label
    ``labels[i]`` is output 0 or 1), its exact gradient g_V (one float64 VJP), the projections
    c_p = g_V . u_p (exact, from the JVP projections), and ||g_hat - g|| / ||g|| for every P of
    the grid, with g_hat = (1/P) sum_p c_p u_p rebuilt from the regenerated directions.
    E2 (the paradox): for the V = 2 cross-entropy on the update half of the prompts, the cosine
    of g_hat with g (parameter space) and of the linearised function-space update
    -eta K_ZO G with -eta K G on the other (held-out) half.
    """
    from torch.func import functional_call, vjp

    N, Vmax = ids.shape[0], max(cfg.outputs)
    half = N // 2
    obs, upd = list(range(half)), list(range(half, N))
    m = _float64(model)
    params = {n: p.detach() for n, p in m.named_parameters()}
    plist = list(params.values())
    y_all = torch.as_tensor(labels, dtype=torch.long)

    def grad(examples, V):
        x = ids[examples]

        def f(p):
            return fn(functional_call(m, p, (x,)))[:, :V]

        z, pull = vjp(f, params)
        G = torch.softmax(z, 1) - torch.nn.functional.one_hot(y_all[examples], V).to(z.dtype)  # dCE/dz
        (g,) = pull(G)
        return torch.cat([g[n].reshape(-1) for n in params]), G.reshape(-1)

    targets = {}  # name -> (exact gradient, projections c_p for p < P_max)
    for V in cfg.outputs:
        g, G = grad(list(range(N)), V)
        targets[V] = (g, proj.A[_rows(N, Vmax, V)].T @ G)
    g_e2, G_e2 = grad(upd, 2)
    rows_o, rows_u = _rows(N, Vmax, 2, obs), _rows(N, Vmax, 2, upd)
    targets["e2"] = (g_e2, proj.A[rows_u].T @ G_e2)
    grid = sorted(set(cfg.perturbations) | set(cfg.cosine_perturbations))
    sums = {k: torch.zeros_like(g) for k, (g, _) in targets.items()}
    at = {}
    for p in range(max(grid)):
        u = torch.cat([t.reshape(-1) for t in zo_directions(plist, seed=proj.seed, step=0, index=p,
                                                            distribution=proj.distribution)])
        for k, (_, c) in targets.items():
            sums[k].add_(u, alpha=float(c[p]))
        if p + 1 in grid:
            at[p + 1] = {k: s / (p + 1) for k, s in sums.items()}
    perr = {V: [float((at[P][V] - targets[V][0]).norm() / targets[V][0].norm()) for P in cfg.perturbations]
            for V in cfg.outputs}
    dz_fo = K[rows_o][:, rows_u] @ G_e2
    pcos, fcos = [], []
    for P in cfg.cosine_perturbations:
        gh = at[P]["e2"]
        pcos.append(float(torch.dot(gh, g_e2) / (gh.norm() * g_e2.norm())))
        dz_zo = proj.kernel(P, rows_o, rows_u) @ G_e2
        fcos.append(float(torch.dot(dz_zo, dz_fo) / (dz_zo.norm() * dz_fo.norm())))
    return {"param_err": perr, "param_cos": pcos, "func_cos": fcos}


def _float64(model):
    import copy

    from optzoo.zo_sgd.kernel import _eager_attention

    m = copy.deepcopy(model).double().eval()
    _eager_attention(m)
    return m


def cell_records(cfg, cells: list[dict]) -> list[Record]:
    """The records of one seed's width sweep (metrics are described in the room's docstring)."""
    out: list[Record] = []
    Ps, Pr, Vs, Pc = cfg.perturbations, cfg.rademacher_perturbations, cfg.outputs, cfg.cosine_perturbations
    err = {KERNEL: lambda c, V: c["err"][("gaussian", V)], PARAMETER: lambda c, V: c["param_err"][V]}
    for c in cells:
        d, inst = c["d"], f"d={c['d']}"
        for arm, e in err.items():
            # headline: error against d, geometric mean over the V and P grids (its log-slope is
            # the mean of the per-(V, P) slopes)
            out.append(Record("", arm, inst, "rel_err", _geomean([e(c, V) for V in Vs]), x=d))
            for j, P in enumerate(Ps):  # error against P, one part per width
                out.append(Record(inst, arm, f"P={P}", "rel_err_vs_P",
                                  _geomean([e(c, V)[j] for V in Vs]), x=P))
            for V in Vs:
                for j, P in enumerate(Ps):
                    out.append(Record("", arm, f"{inst},V={V},P={P}", "rel_err_cell", e(c, V)[j]))
        for V in Vs:
            out.append(Record("", KERNEL, f"{inst},V={V}", "r_eff", c["r_eff"][V], x=d))
            for j, P in enumerate(Pr):  # the shared P grid of the two distributions
                key = f"{inst},V={V},P={P}"
                out.append(Record("", RADEMACHER, key, "rel_err_shared", c["err"][("rademacher", V)][j]))
                out.append(Record("", KERNEL, key, "rel_err_shared", c["err"][("gaussian", V)][Ps.index(P)]))
            for j, P in enumerate(Ps):
                e = c["err"][("gaussian", V)][j]
                key = f"{inst},V={V},P={P}"
                out.append(Record("", KERNEL, key, "variance_ratio", e ** 2 * P / (1.0 + c["r_eff"][V])))
                b = c["bound"][V][j]  # an infinite bound is vacuous: never exceeded
                out.append(Record("", KERNEL, key, "jl_exceeded",
                                  float(math.isfinite(b) and c["entry"][("gaussian", V)][j] > b)))
        # E2 cosines, geometric mean over the cosine P grid (kernel: function space; parameter:
        # cos(g_hat, g)); the prediction sqrt(P/(d+P+1)) rides along for the figure
        out.append(Record("", KERNEL, inst, "update_cos", _geomean([max(v, 1e-12) for v in c["func_cos"]]), x=d))
        out.append(Record("", PARAMETER, inst, "update_cos", _geomean([abs(v) for v in c["param_cos"]]), x=d))
        for j, P in enumerate(Pc):
            out.append(Record(f"P={P}", KERNEL, inst, "update_cos_at_P", c["func_cos"][j], x=d))
            out.append(Record(f"P={P}", PARAMETER, inst, "update_cos_at_P", abs(c["param_cos"][j]), x=d))
    # error against the output size V: geometric mean over widths and P, one record per V
    for arm, e in err.items():
        for V in Vs:
            out.append(Record("", arm, f"V={V}", "rel_err_by_V",
                              _geomean([e(c, V) for c in cells]), x=V))
    return out


def run_kernels(cfg, seed: int, progress) -> list[Record]:
    b = icl_batch(cfg.n_prompts, k=cfg.demos, n_features=cfg.n_features,
                  seed=derive_seed(seed, "prompts") % 2 ** 31)
    ids = torch.as_tensor(b.input_ids)
    cells = []
    for w in cfg.widths:
        cells.append(width_cell(cfg, seed, w, ids, b.labels))
        progress.advance()
    return cell_records(cfg, cells)
