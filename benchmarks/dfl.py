"""dfl benchmark: training-epoch CPU time of the solver-free candidates A and B (INFERRED, ours)
against PyEPO's SPO+, PFYL, DBB and NCE (solve_ratio 0.05) on the same data, model and
batches, with SciPy's HiGHS LP on PyEPO's 5x5 shortest path (the anchor: ``pyepo.func.SPOPlus``); then test regret at equal
CPU time (each method trains until it has used SPO+'s CPU time of ``--epochs`` epochs).

``python -m benchmarks dfl [--n 1000] [--epochs 3] [--deg 4] [--pfyl-samples 3]``.
Times are CPU seconds (``time.process_time``) so a loaded machine does not inflate them;
solver calls are counted by ``optzoo.dfl.count_solver_calls``.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path


def _nce(pyepo, m, train):
    """PyEPO's NCE with solve_ratio 0.05 (the solver-light arm), its coin seeded."""
    import numpy as np

    mod = pyepo.func.noiseContrastiveEstimation(m, processes=1, solve_ratio=0.05, dataset=train)
    mod._branch_rng = np.random.RandomState(0)
    return mod


def main(argv=None) -> int:
    import pyepo
    import torch

    from optzoo._core.io import atomic_write_json, environment_manifest
    from optzoo.dfl import precompute, shortest_path_model, train_predictor
    from optzoo.dfl.experimental import DirectionalLoss, PoolSoftminLoss
    from optzoo.dfl.repro.experiment import DBBRegretLoss

    ap = argparse.ArgumentParser(prog="python -m benchmarks dfl")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--n-test", type=int, default=500)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--deg", type=int, default=4)
    ap.add_argument("--pfyl-samples", type=int, default=3)
    a = ap.parse_args(argv)
    m = shortest_path_model((5, 5))
    x, c = pyepo.data.shortestpath.genData(a.n + a.n_test, 5, (5, 5), deg=a.deg, noise_width=0.5,
                                           seed=1)
    train, pre_calls, pre_cpu = precompute(m, x[:a.n], c[:a.n])
    test, _, _ = precompute(m, x[a.n:], c[a.n:])
    losses = {"mse": lambda: torch.nn.MSELoss(),
              "spo+": lambda: pyepo.func.SPOPlus(m, processes=1),
              "pfyl": lambda: pyepo.func.perturbedFenchelYoung(m, n_samples=a.pfyl_samples, processes=1),
              "dbb": lambda: DBBRegretLoss(m, lambd=10.0),
              "nce": lambda: _nce(pyepo, m, train),
              "A": lambda: DirectionalLoss(m),
              "B": lambda: PoolSoftminLoss(m, dataset=train, tau=1.0)}
    rows = {}
    for name, make in losses.items():
        torch.manual_seed(0)
        net = torch.nn.Linear(5, 40)
        t = time.process_time()
        r = train_predictor(net, make(), train, optmodel=m, epochs=a.epochs, lr=1e-2, seed=0,
                            test_data=test, solver_free=name in ("mse", "A", "B"))
        rows[name] = {"epoch_cpu_s": r.loop_cpu_s / a.epochs, "loop_solver_calls": r.nfev,
                      "regret": r.fun, "total_cpu_s": time.process_time() - t}
    budget = rows["spo+"]["epoch_cpu_s"] * a.epochs
    for name in ("mse", "A", "B"):
        epochs = max(1, min(200, int(budget / max(rows[name]["epoch_cpu_s"], 1e-6))))
        torch.manual_seed(0)
        net = torch.nn.Linear(5, 40)
        r = train_predictor(net, losses[name](), train, optmodel=m, epochs=epochs, lr=1e-2, seed=0,
                            test_data=test, solver_free=True)
        rows[name]["equal_time_epochs"] = epochs
        rows[name]["equal_time_regret"] = r.fun
    for k, v in rows.items():
        print(f"{k:5s} " + ", ".join(f"{kk}={vv:.4g}" if isinstance(vv, float) else f"{kk}={vv}"
                                      for kk, vv in v.items()))
    ratio = rows["spo+"]["epoch_cpu_s"] / rows["A"]["epoch_cpu_s"]
    ratio_b = rows["spo+"]["epoch_cpu_s"] / rows["B"]["epoch_cpu_s"]
    print(f"pre-computation: {pre_calls} solves, {pre_cpu:.3g} CPU s")
    print(f"epoch CPU time ratio SPO+ / candidate A: {ratio:.3g}x; SPO+ / candidate B: "
          f"{ratio_b:.3g}x (HiGHS LP, n={a.n}); log10 {math.log10(ratio):.2f}")
    out = Path(__file__).parent / "results" / "dfl.json"
    atomic_write_json(out, {"args": vars(a), "precompute": {"calls": pre_calls, "cpu_s": pre_cpu},
                            "rows": rows, "epoch_ratio_spo_over_A": ratio,
                            "epoch_ratio_spo_over_B": ratio_b, "env": environment_manifest()})
    return 0
