"""Reproduction of zo_sgd (arXiv 2605.03373): claims, scales, run, judge, figures.

Setting (spec section 3, all INFERRED): GPT-2 models from :func:`optzoo.tinylm.tiny_gpt2`
(vocab 64, 2 layers, 4 heads, n_positions 64, random init per seed and width), widths giving
d from about 3e4 to 4e5 at quick; N ICL prompts (:func:`optzoo.tinylm.icl_batch`, the same for
every width), outputs the last-position logits of V label tokens. Per width: the exact eNTK
(float64, ``torch.func``), the Gaussian ZO kernel by JVP for nested prefixes of one draw of
P_max directions, and the Rademacher one. The paradox experiment (E2) uses the label-word
cross-entropy on half of the prompts and measures, on the other half, the function-space
update predicted by the kernels, and in parameter space the cosine of the ZO gradient
estimate (rebuilt by :func:`zo_sgd_update` from the same directions) with the exact gradient.

The training experiment (E3, claim ``training``) is not implemented yet: judged "not
measured" at every scale (see the docs).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optzoo.repro.claim import Claim, Verdict
from optzoo.repro.figures import new_figure, save_figure
from optzoo.repro.judging import judge as decide
from optzoo.repro.judging import paired
from optzoo.zo_sgd.repro.kernels import run_kernels, slope

__all__ = ["CLAIMS", "SCALES", "Config", "figures", "judge", "run"]

CLAIMS = [
    Claim("error_vs_P",
          "The relative error of the ZO eNTK falls like P^(-1/2) in the number of perturbations.",
          "slope of log ||K_ZO - K||_F/||K||_F against log P (Gaussian, JVP, mean over V), per width",
          direction="equivalent", threshold=-0.5, margin=0.1, source="spec C1; abstract (JL)"),
    Claim("error_vs_V",
          "The ZO eNTK error grows with the output size V.",
          "log(err(V max) / err(V min)), mean over widths and P (Gaussian)",
          direction="greater", threshold=0.0, source="spec C2"),
    Claim("error_vs_d",
          "The ZO eNTK error does not depend on the parameter dimension d.",
          "slope of log err against log d, mean over V and P (Gaussian)",
          direction="equivalent", threshold=0.0, margin=0.1, source="abstract; spec C3"),
    Claim("gradient_cosine_vs_d",
          "In parameter space the ZO gradient's cosine with the true gradient falls like "
          "sqrt(P/d) (the paradox).",
          "slope of log cos(g_hat, grad L) against log d, mean over the cosine P grid",
          direction="equivalent", threshold=-0.5, margin=0.1, source="spec C4"),
    Claim("function_space_vs_d",
          "The function-space update of ZO (its cosine with the first-order update on held-out "
          "prompts) does not depend on d.",
          "slope of log cos(dz_ZO, dz_FO) against log d, mean over the cosine P grid",
          direction="equivalent", threshold=0.0, margin=0.1, source="spec C4"),
    Claim("gaussian_vs_rademacher",
          "Gaussian and Rademacher perturbations give ZO kernels of similar fidelity.",
          "log(err Rademacher / err Gaussian), mean over widths, V and the shared P grid",
          direction="equivalent", threshold=0.0, margin=0.2,
          source="paper summary (similar trajectory convergence)"),
    Claim("training",
          "Fine-tuning: ZO-SGD at moderate P tracks first-order SGD in function space.",
          "not implemented yet (E3)", direction="greater", threshold=0.0, source="spec C5 (full)"),
    Claim("variance_law",
          "On the real models, the Gaussian K_ZO's mean squared relative error equals our closed "
          "form (1 + r_eff)/P (r_eff = tr(K)^2/||K||_F^2).",
          "mean over (width, V, P) cells of err^2 P / (1 + r_eff)",
          direction="equivalent", threshold=1.0, margin=0.15, kind="check",
          source="spec section 1 (derived)"),
    Claim("jl_bound",
          "The JL entry bound (delta = 0.05) holds: the max normalised entry error exceeds it in "
          "fewer than 5% of cells.",
          "fraction of (width, V, P) cells whose max |K_ZO - K|/(|a||b|) exceeds jl_entry_bound",
          direction="less", threshold=0.05, kind="check", source="spec section 1 (JL)"),
]


@dataclass(frozen=True)
class Config:
    widths: tuple = (32, 64, 128)
    outputs: tuple = (2, 8, 32)
    perturbations: tuple = (1, 4, 16, 64, 256)
    rademacher_perturbations: tuple = (1, 4, 16, 64)
    cosine_perturbations: tuple = (16, 64, 256)
    n_prompts: int = 8
    demos: int = 2
    n_features: int = 3
    vocab: int = 64
    n_layer: int = 2
    n_positions: int = 64
    jl_delta: float = 0.05
    seeds: int = 5


# quick's seed count: the largest of {6, 8} whose seeds fit 300 CPU-s at the slower pilot seed
# (rule written before the pilot; pilot seeds 90000 and 90001 took 34.3 and 31.0 CPU-s at one
# thread, so 8 seeds ~ 275 CPU-s). See docs/papers/zo_sgd.md for the pilot's spread.
SCALES = {
    "smoke": Config(widths=(8, 16), outputs=(2, 4), perturbations=(1, 4, 16),
                    rademacher_perturbations=(1, 4), cosine_perturbations=(4, 16), n_prompts=4,
                    n_layer=1, n_positions=16, seeds=2),
    "quick": Config(seeds=8),
    "full": Config(widths=(32, 64, 128, 256), outputs=(2, 8, 32, 64),
                   perturbations=(1, 4, 16, 64, 256, 1024), rademacher_perturbations=(1, 4, 16, 64, 256),
                   cosine_perturbations=(16, 64, 256, 1024), seeds=20),
}


def run(config: Config, seed: int, progress) -> dict:
    progress.start(len(config.widths), "zo_sgd kernels")
    res = run_kernels(config, seed, progress)
    res["config"] = {"widths": list(config.widths), "outputs": list(config.outputs),
                     "perturbations": list(config.perturbations),
                     "rademacher_perturbations": list(config.rademacher_perturbations),
                     "cosine_perturbations": list(config.cosine_perturbations),
                     "n_prompts": config.n_prompts}
    return res


def _err(cell, dist, V):
    return np.asarray(cell["err"][f"{dist}/{V}"], dtype=float)


def judge(per_seed: list[dict]) -> list[Verdict]:
    """One verdict per CLAIMS entry, in order, each from :func:`optzoo.repro.judging.judge`."""
    cfg = per_seed[0]["config"]
    Ps, Pr, Vs = cfg["perturbations"], cfg["rademacher_perturbations"], cfg["outputs"]
    Pc = cfg["cosine_perturbations"]
    nR = len(Pr)
    ev: dict = {}
    ev["error_vs_P"] = {
        f"d={c['d']}": [float(np.mean([slope(Ps, _err(r['cells'][i], 'gaussian', V)) for V in Vs]))
                        for r in per_seed]
        for i, c in enumerate(per_seed[0]["cells"])}
    ev["error_vs_V"] = [float(np.mean([np.mean(paired(_err(c, "gaussian", Vs[-1]), _err(c, "gaussian", Vs[0]),
                                                      "logratio")) for c in r["cells"]]))
                        for r in per_seed]

    def d_slope(r, values):
        return slope([c["d"] for c in r["cells"]], values)

    ev["error_vs_d"] = [float(np.mean([d_slope(r, [_err(c, "gaussian", V)[j] for c in r["cells"]])
                                       for V in Vs for j in range(len(Ps))])) for r in per_seed]
    ev["gradient_cosine_vs_d"] = [float(np.mean([d_slope(r, [abs(c["param_cos"][j]) for c in r["cells"]])
                                                 for j in range(len(Pc))])) for r in per_seed]
    ev["function_space_vs_d"] = [float(np.mean([d_slope(r, [max(c["func_cos"][j], 1e-12) for c in r["cells"]])
                                                for j in range(len(Pc))])) for r in per_seed]
    ev["gaussian_vs_rademacher"] = [float(np.mean([np.mean(paired(_err(c, "rademacher", V),
                                                                  _err(c, "gaussian", V)[:nR], "logratio"))
                                                   for c in r["cells"] for V in Vs])) for r in per_seed]
    ev["training"] = None
    ev["variance_law"] = [float(np.mean([_err(c, "gaussian", V)[j] ** 2 * P / (1.0 + c["r_eff"][str(V)])
                                         for c in r["cells"] for V in Vs for j, P in enumerate(Ps)]))
                          for r in per_seed]
    ev["jl_bound"] = [float(np.mean([b is not None and e > b for c in r["cells"] for V in Vs
                                     for e, b in zip(c["entry"][f"gaussian/{V}"], c["bound"][str(V)],
                                                     strict=True)]))
                      for r in per_seed]
    cells0 = per_seed[0]["cells"]
    numbers = {
        "error_vs_d": {"d": [c["d"] for c in cells0],
                       "r_eff_Vmax": [float(np.mean([r["cells"][i]["r_eff"][str(Vs[-1])] for r in per_seed]))
                                      for i in range(len(cells0))]},
        "gradient_cosine_vs_d": {"mean_cos": [float(np.mean([abs(r["cells"][i]["param_cos"][-1])
                                                             for r in per_seed])) for i in range(len(cells0))],
                                 "predicted": [c["param_cos_pred"][-1] for c in cells0]},
        "function_space_vs_d": {"mean_cos": [float(np.mean([r["cells"][i]["func_cos"][0] for r in per_seed]))
                                             for i in range(len(cells0))]},
    }
    notes = {"training": "E3 (fine-tuning against torch.optim.SGD and Adam) is not implemented yet",
             "gradient_cosine_vs_d": f"P in {Pc}; predicted sqrt(P/(d+P+1)) gives slope close to -0.5",
             "function_space_vs_d": f"P in {Pc}, linearised update -eta K_ZO G vs -eta K G"}
    return [decide(cl, ev[cl.id], note=notes.get(cl.id, ""), numbers=numbers.get(cl.id))
            for cl in CLAIMS]


def figures(per_seed: list[dict], outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    cfg = per_seed[0]["config"]
    Ps, Vs, Pc = cfg["perturbations"], cfg["outputs"], cfg["cosine_perturbations"]
    cells0 = per_seed[0]["cells"]
    paths = []
    fig, axes = new_figure(1, 2, figsize=(9, 3.5))
    for i, c in enumerate(cells0):
        e = np.exp(np.mean([np.log(_err(r["cells"][i], "gaussian", Vs[-1])) for r in per_seed], 0))
        axes[0].loglog(Ps, e, "o-", label=f"d={c['d']:.2g}")
    axes[0].loglog(Ps, e[0] * np.asarray(Ps, float) ** -0.5, "k--", lw=0.8, label="P^-1/2")
    axes[0].set(xlabel="perturbations P", ylabel="||K_ZO-K||/||K||", title=f"V={Vs[-1]}")
    axes[0].legend(fontsize=7)
    for V in Vs:
        e = [np.exp(np.mean([np.log(_err(r["cells"][i], "gaussian", V)[-1]) for r in per_seed]))
             for i in range(len(cells0))]
        axes[1].semilogx([c["d"] for c in cells0], e, "o-", label=f"V={V}")
    axes[1].set(xlabel="parameters d", ylabel=f"error at P={Ps[-1]}", title="error against d (claim: flat)")
    axes[1].legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "kernel_error.png", dpi=90))
    fig, ax = new_figure(figsize=(4.8, 3.6))
    d = [c["d"] for c in cells0]
    for j, P in enumerate(Pc):
        pc = [np.mean([abs(r["cells"][i]["param_cos"][j]) for r in per_seed]) for i in range(len(cells0))]
        fc = [np.mean([r["cells"][i]["func_cos"][j] for r in per_seed]) for i in range(len(cells0))]
        ax.loglog(d, pc, "o-", color=f"C{j}", label=f"param cos, P={P}")
        ax.loglog(d, fc, "s--", color=f"C{j}", label=f"function cos, P={P}")
        ax.loglog(d, [c["param_cos_pred"][j] for c in cells0], ":", color=f"C{j}")
    ax.set(xlabel="parameters d", ylabel="cosine", title="parameter vs function space")
    ax.legend(fontsize=6)
    paths.append(save_figure(fig, outdir / "paradox.png", dpi=90))
    return paths
