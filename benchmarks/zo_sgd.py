"""zo_sgd benchmark: ZOSGD (MeZO, P = 1) step time and memory against ``torch.optim.SGD`` with
backprop on the same tiny GPT-2 and batch, and ``zo_entk`` (JVP) time against the exact
``empirical_ntk``.

Memory on the CPU is counted, not sampled: bytes held across the step (parameters, ``.grad``,
optimizer state) plus the activations autograd saves for backward (``saved_tensors_hooks``);
a ZO step saves none. On CUDA the allocator's peak is reported as well.

Step times: the two optimizers' steps alternate, each timed alone, and the median of
``--steps`` steps is reported (``step_s_all`` keeps every one), so a change of the machine's
load during the run reaches both. The ZO step is two no-grad forward passes plus one draw of
its direction and two fused in-place passes over the weights (perturb; restore-and-update).

``python -m benchmarks zo_sgd [--width 128] [--batch 16] [--steps 15] [--device cpu]``.
Timings on a shared 2-core machine are inflated by contention.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path


def _batch(vocab, batch, seq, device):
    import torch

    g = torch.Generator().manual_seed(0)
    x = torch.randint(3, vocab, (batch, seq), generator=g).to(device)
    return x, torch.randint(3, vocab, (batch,), generator=g).to(device)


def _loss(model, x, y):
    import torch

    return torch.nn.functional.cross_entropy(model(x).logits[:, -1], y)


def _tensor_bytes(ts):
    return sum(t.numel() * t.element_size() for t in ts)


def main(argv=None) -> int:
    import torch

    from optzoo._core.io import atomic_write_json, environment_manifest
    from optzoo.tinylm import tiny_gpt2
    from optzoo.zo_sgd import ZOSGD, empirical_ntk, label_logits, zo_entk

    ap = argparse.ArgumentParser(prog="python -m benchmarks zo_sgd")
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--kernel-P", type=int, default=64)
    a = ap.parse_args(argv)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    rows, steps, counted = {}, {}, {}
    for name in ("sgd_backprop", "zosgd_mezo"):
        model = tiny_gpt2(64, n_layer=2, n_embd=a.width, n_head=4, n_positions=64, seed=0).to(dev)
        x, y = _batch(64, a.batch, a.seq, dev)
        params = list(model.parameters())
        saved = [0]

        def pack(t, saved=saved):
            saved[0] += t.numel() * t.element_size()
            return t

        def unpack(t):
            return t

        if name == "sgd_backprop":
            opt = torch.optim.SGD(params, lr=1e-3, momentum=0.0)

            def step(opt=opt, model=model, x=x, y=y, pack=pack):
                opt.zero_grad()
                with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                    loss = _loss(model, x, y)
                loss.backward()
                opt.step()
                return loss
        else:
            for p in params:
                p.requires_grad_(False)  # inference memory: no autograd graph at all
            opt = ZOSGD(params, lr=1e-4, eps=1e-3, num_perturbations=1, seed=0)

            def step(opt=opt, model=model, x=x, y=y, pack=pack):
                with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                    return opt.step(lambda: _loss(model, x, y))
        step()  # warm-up
        saved[0] = 0
        steps[name], counted[name] = step, (params, opt, saved)
    # the two steps alternate and each is timed alone, so a change in the machine's load
    # during the run hits both; the median over the steps is reported
    times = {name: [] for name in steps}
    for _ in range(a.steps):
        for name, step in steps.items():
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
            step()
            if cuda:
                torch.cuda.synchronize()
            times[name].append(time.perf_counter() - t0)
            if cuda:
                rows.setdefault(name, {})["cuda_peak_bytes"] = torch.cuda.max_memory_allocated()
    for name, (params, opt, saved) in counted.items():
        grads = [p.grad for p in params if p.grad is not None]
        state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
        row = rows.setdefault(name, {})
        row.update({"step_s": statistics.median(times[name]), "step_s_all": times[name],
                    "forward_passes_per_step": 2 if name == "zosgd_mezo" else 1,
                    "param_bytes": _tensor_bytes(params), "grad_bytes": _tensor_bytes(grads),
                    "state_bytes": _tensor_bytes(state),
                    "saved_activation_bytes_per_step": saved[0] // a.steps})
        row["held_bytes"] = (row["param_bytes"] + row["grad_bytes"] + row["state_bytes"]
                             + row["saved_activation_bytes_per_step"])
    model = tiny_gpt2(64, n_layer=2, n_embd=a.width, n_head=4, n_positions=64, seed=0)
    x, _ = _batch(64, 4, 10, "cpu")
    fn = label_logits(range(3, 11))
    t = time.perf_counter()
    empirical_ntk(model, x, output_fn=fn)
    exact = time.perf_counter() - t
    t = time.perf_counter()
    zo_entk(model, x, output_fn=fn, num_perturbations=a.kernel_P, seed=0)
    zo = time.perf_counter() - t
    rows["kernel"] = {"exact_s": exact, "zo_jvp_s": zo, "P": a.kernel_P, "N": 4, "V": 8}
    s, z = rows["sgd_backprop"], rows["zosgd_mezo"]
    time_ratio = z["step_s"] / s["step_s"]
    mem_ratio = z["held_bytes"] / s["held_bytes"]
    for k, v in rows.items():
        print(f"{k:14s} {v}")
    print(f"step time ratio ZOSGD(P=1) / SGD+backprop: {time_ratio:.2f}; memory held ratio: "
          f"{mem_ratio:.2f} (ZO saves {s['held_bytes'] - z['held_bytes']} bytes); "
          f"kernel time ratio zo_entk(P={a.kernel_P}) / exact: {zo / exact:.2f}")
    out = Path(__file__).parent / "results" / "zo_sgd.json"
    atomic_write_json(out, {"args": vars(a), "rows": rows, "step_time_ratio": time_ratio,
                            "memory_ratio": mem_ratio, "kernel_time_ratio": zo / exact,
                            "env": environment_manifest()})
    return 0
