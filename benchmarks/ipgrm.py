"""Benchmark: IP-GRM reward latency per GRPO step, cached vs coupled (the anchor) vs naive.

Real greedy decoding with the KV cache on a random-init tinylm GPT-2 (the spec's E2): one
step scores ``--prompts`` x ``--group`` responses. Arms run interleaved in one process, one
torch thread, min over ``--reps``; with and without shared-prefix KV reuse. Prints ms/step
and the ratios to the coupled pipeline, writes ``benchmarks/results/ipgrm.json``.

    python -m benchmarks ipgrm --group 8 --reps 3
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks ipgrm", description=__doc__)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--lengths", type=int, nargs=4, default=[64, 192, 96, 128], metavar=("Q", "R", "P", "J"))
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "ipgrm.json"))
    args = ap.parse_args(argv)

    import torch

    from optzoo.ipgrm.repro.throughput import PIPELINES, Lengths, build_timing_model, run_pipeline

    torch.set_num_threads(1)
    L = Lengths(*args.lengths)
    model = build_timing_model(n_layer=args.layers, n_embd=args.width, n_head=4,
                               n_positions=max(64, sum(args.lengths)), seed=args.seed)
    run_pipeline("cached", model, n_prompts=1, group=2, lengths=L)  # warm-up
    result = {"args": vars(args), "python": platform.python_version(), "torch": torch.__version__,
              "machine": platform.machine(), "note": "2 shared CPU cores: absolute times inflated by contention"}
    for share in (True, False):
        best = {}
        for _ in range(args.reps):
            for k in PIPELINES:
                s = run_pipeline(k, model, n_prompts=args.prompts, group=args.group, lengths=L,
                                 seed=args.seed, prefix_sharing=share)["seconds"]
                best[k] = min(best.get(k, s), s)
        mode = "prefix_reuse" if share else "plain"
        ms = {k: 1000 * v for k, v in best.items()}
        ratio = {k: ms[k] / ms["coupled"] for k in PIPELINES}
        result[mode] = {"ms_per_step": ms, "ratio_to_coupled": ratio}
        print(f"[{mode}] G={args.group} B={args.prompts}: " + ", ".join(
            f"{k} {ms[k]:.0f} ms (x{ratio[k]:.3f} vs coupled)" for k in PIPELINES))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
