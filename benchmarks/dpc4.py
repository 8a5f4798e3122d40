"""Benchmark: DP-C4 (and our DP-SGD) against Opacus DP-SGD, same MLP and Poisson batch.

Times (a) the optimizer step alone (clip + noise + wrapped SGD step, per-sample gradients
given) and (b) the full training step (per-sample gradients + step): optzoo's torch.func path
against Opacus' GradSampleModule hooks. All timed functions run *interleaved*: each round runs
every function once, in an order rotated from round to round, so machine load hits them alike;
the ratio of a method to Opacus is the median over rounds of the paired per-round ratio.
DP-C4 EF also needs the unclipped sum of the per-sample gradients (its error memory): with numba
installed, a compiled pass computes it with the row norms in one read, so EF reads them twice as
DP-SGD does; ``step_dpc4_ef_torch`` times the same step with torch's separate passes (what runs
on GPU or without numba).
Run as ``python -m benchmarks dpc4 [--batch 256 --hidden 256 --rounds 40]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path


def _interleaved(fns: dict, rounds: int) -> dict[str, list[float]]:
    names = list(fns)
    for name in names:  # warm-up: allocators, caches, lazy DP state
        fns[name]()
        fns[name]()
    out: dict[str, list[float]] = {k: [] for k in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t0 = time.perf_counter()
            fns[name]()
            out[name].append(time.perf_counter() - t0)
    return out


def main(argv=None) -> int:
    import torch
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    from optzoo._core.io import atomic_write_json
    from optzoo.dpc4 import DPC4, DPSGD, core, per_sample_grads

    ap = argparse.ArgumentParser(prog="python -m benchmarks dpc4")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--records", type=int, default=8192)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    g = torch.Generator().manual_seed(0)
    B, n = args.batch, args.records
    X = torch.randn(B, 64, generator=g)
    y = torch.randint(0, 10, (B,), generator=g)
    idx = torch.arange(B)

    def mlp():
        m = torch.nn.Sequential(torch.nn.Linear(64, args.hidden), torch.nn.Tanh(), torch.nn.Linear(args.hidden, 10))
        with torch.no_grad():
            for p in m.parameters():
                p.normal_(0.0, 0.05, generator=g)
        return m

    loss = torch.nn.functional.cross_entropy
    kw = dict(sample_rate=B / n, expected_batch_size=B, noise_multiplier=1.0, generator=0)
    m_c4, m_sgd, m_ef, m_adam = mlp(), mlp(), mlp(), mlp()
    c4 = DPC4(m_c4.parameters(), lr=0.1, num_records=n, **kw)
    ef = DPC4(m_ef.parameters(), lr=0.1, memory="ef", feedback_noise_multiplier=1.0, **kw)
    ours = DPSGD(m_sgd.parameters(), lr=0.1, **kw)
    ours_adam = DPSGD(torch.optim.Adam(m_adam.parameters(), lr=1e-3), **kw)
    gsm = GradSampleModule(mlp())
    op = DPOptimizer(torch.optim.SGD(gsm.parameters(), lr=0.1), noise_multiplier=1.0, max_grad_norm=1.0,
                     expected_batch_size=B)
    # the step-only timings get modules of their own: the hooks path below (psg_/full_) keeps
    # running backward on `gsm`, which must not touch the tensors the step-only timing reuses
    gsm_step = GradSampleModule(mlp())
    op_step = DPOptimizer(torch.optim.SGD(gsm_step.parameters(), lr=0.1), noise_multiplier=1.0,
                          max_grad_norm=1.0, expected_batch_size=B)
    gsm_psg = GradSampleModule(mlp())
    op_psg = DPOptimizer(torch.optim.SGD(gsm_psg.parameters(), lr=0.1), noise_multiplier=1.0,
                         max_grad_norm=1.0, expected_batch_size=B)
    gsm_adam = GradSampleModule(mlp())
    op_adam = DPOptimizer(torch.optim.Adam(gsm_adam.parameters(), lr=1e-3), noise_multiplier=1.0,
                          max_grad_norm=1.0, expected_batch_size=B)
    params = {m: list(m.parameters()) for m in (m_c4, m_sgd, m_ef, m_adam)}
    per_sample_grads(m_c4, loss, X, y)
    cached = [p.grad_sample.clone() for p in params[m_c4]]

    def fill(m):
        for p, c in zip(params[m], cached, strict=True):
            p.grad_sample = c

    def opacus_fill(module=gsm, opt=op):
        opt.zero_grad()
        loss(module(X), y).backward()

    def opacus_step_only(module, opt):
        opacus_fill(module, opt)
        saved = [(p, p.grad_sample.clone(), p.grad.clone()) for p in module.parameters()]

        def f():
            for p, s, gr in saved:
                p.grad_sample, p.grad = s.detach(), gr.detach()  # fresh objects: Opacus flags used ones
                p.summed_grad = None
            opt.step()
        return f

    def full_opacus():
        opacus_fill()
        op.step()

    def full(opt, m):
        def f():
            per_sample_grads(m, loss, X, y)
            opt.step(indices=idx)
        return f

    def torch_passes(f):  # the same call with the compiled pass switched off
        def g():
            kernel, core._fused_kernel = core._fused_kernel, lambda n: None
            try:
                f()
            finally:
                core._fused_kernel = kernel
        return g

    fns = {
        "step_opacus_dpsgd": opacus_step_only(gsm_step, op_step),
        "step_optzoo_dpsgd": lambda: (fill(m_sgd), ours.step()),
        "step_dpc4_ef": lambda: (fill(m_ef), ef.step()),
        "step_dpc4_ef_torch": torch_passes(lambda: (fill(m_ef), ef.step())),
        "step_dpc4_anchor": lambda: (fill(m_c4), c4.step(indices=idx)),
        "step_opacus_dpsgd_adam": opacus_step_only(gsm_adam, op_adam),
        "step_optzoo_dpsgd_adam": lambda: (fill(m_adam), ours_adam.step()),
        "psg_torch_func": lambda: per_sample_grads(m_c4, loss, X, y),
        "psg_opacus_hooks": lambda: opacus_fill(gsm_psg, op_psg),
        "full_opacus_dpsgd": full_opacus,
        "full_dpc4_ef": full(ef, m_ef),
        "full_dpc4_anchor": full(c4, m_c4),
    }
    times = _interleaved(fns, args.rounds)
    t = {k: statistics.median(v) for k, v in times.items()}

    def paired(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))

    ratios = {
        "step_optzoo_dpsgd/opacus": paired("step_optzoo_dpsgd", "step_opacus_dpsgd"),
        "step_dpc4_ef/opacus": paired("step_dpc4_ef", "step_opacus_dpsgd"),
        "step_dpc4_ef_torch/opacus": paired("step_dpc4_ef_torch", "step_opacus_dpsgd"),
        "step_dpc4_anchor/opacus": paired("step_dpc4_anchor", "step_opacus_dpsgd"),
        "step_optzoo_dpsgd_adam/opacus_adam": paired("step_optzoo_dpsgd_adam", "step_opacus_dpsgd_adam"),
        "full_dpc4_ef/opacus": paired("full_dpc4_ef", "full_opacus_dpsgd"),
        "full_dpc4_anchor/opacus": paired("full_dpc4_anchor", "full_opacus_dpsgd"),
        "psg_torch_func/opacus_hooks": paired("psg_torch_func", "psg_opacus_hooks"),
    }
    n_params = sum(p.numel() for p in params[m_c4])
    print(f"MLP 64-{args.hidden}-10 ({n_params} params), batch {B}, {args.threads} thread(s), "
          f"{args.rounds} interleaved rounds (medians); compiled EF pass: "
          f"{'yes' if core._fused_kernel(1) else 'no (numba not installed)'}")
    for k, v in t.items():
        print(f"  {k:24s} {v * 1e3:9.3f} ms")
    print(f"  per-sample grads/s: torch.func {B / t['psg_torch_func']:.0f}, Opacus hooks {B / t['psg_opacus_hooks']:.0f}")
    for k, v in ratios.items():
        print(f"  ratio {k:36s} {v:6.2f}x  (median of paired per-round ratios)")
    out = Path(__file__).parent / "results" / "dpc4.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out, {"config": vars(args), "n_params": n_params,
                            "compiled_ef_pass": core._fused_kernel(1) is not None,
                            "seconds": t, "ratios": ratios,
                            "note": "interleaved rounds on a shared 2-core machine; medians, ratios paired "
                                    "per round"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
