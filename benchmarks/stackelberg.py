"""stackelberg benchmark: the cost of a ``StackelbergGD`` step (alternating, simultaneous) and of
``curvature`` (20-step Lanczos on Phi and on L) relative to a plain ``torch.optim.SGD`` step, on
the digits MLP (64 -> 128 -> 128 -> 10, batch 64), same model, data and process.

``python -m benchmarks stackelberg [--steps 200]``. Timings on a shared machine are inflated by
contention; the ratios are what to read.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def _time(fn, n):
    fn()  # warm-up
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def main(argv=None) -> int:
    import torch

    from optzoo._core.io import atomic_write_json, environment_manifest
    from optzoo.stackelberg import StackelbergGD, curvature, split_head
    from optzoo.stackelberg.repro.digits import _model, load_split

    ap = argparse.ArgumentParser(prog="python -m benchmarks stackelberg")
    ap.add_argument("--steps", type=int, default=200)
    a = ap.parse_args(argv)
    Xtr, ytr, _, _ = load_split(0, "bench")
    X, y = Xtr[:64], ytr[:64]
    lossf = torch.nn.CrossEntropyLoss()
    rows = {}
    for name in ("sgd", "stackelberg_simultaneous", "stackelberg_alternating"):
        model = _model(0, "bench")
        if name == "sgd":
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
        else:
            body, head = split_head(model)
            opt = StackelbergGD(body, head, lr=0.1, head_ratio=10, mode=name.split("_")[1])

        def closure(model=model, opt=opt):
            opt.zero_grad()
            f = lossf(model(X), y)
            f.backward()
            return f

        rows[name] = {"s_per_step": _time(lambda opt=opt, c=closure: opt.step(c), a.steps)}
    model = _model(0, "bench")
    Y1 = torch.nn.functional.one_hot(y, 10).double()
    m64 = model.double()
    rows["curvature_phi_and_L_20_hvps"] = {"s_per_call": _time(
        lambda: curvature(m64, "mse", X.double(), Y1, max_iter=20), 3)}
    base = rows["sgd"]["s_per_step"]
    ratios = {"simultaneous / sgd": rows["stackelberg_simultaneous"]["s_per_step"] / base,
              "alternating / sgd": rows["stackelberg_alternating"]["s_per_step"] / base,
              "curvature call / sgd step": rows["curvature_phi_and_L_20_hvps"]["s_per_call"] / base}
    for k, v in rows.items():
        print(f"{k:32s} {v}")
    for k, v in ratios.items():
        print(f"ratio {k}: {v:.2f}")
    out = Path(__file__).parent / "results" / "stackelberg.json"
    atomic_write_json(out, {"rows": rows, "ratios": ratios, "steps": a.steps,
                            "environment": environment_manifest()})
    return 0
