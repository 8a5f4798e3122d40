"""Benchmark: CT-KV and CT-Prompt (optzoo) against LoRA test-time training (PEFT), per task.

Times the training of one task (T steps, same optimiser and budget) and counts the tokens
forwarded per epoch, at k = 16 by default, over a curve of k. Default model: a random tiny
Llama (4 layers, width 128; cost does not depend on the weights); ``--model smollm2`` uses
SmolLM2-135M (slow on CPU). Run as ``python -m benchmarks context_tuning [--k 16 --steps 5]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path


def main(argv=None) -> int:
    import torch

    from optzoo._core.io import atomic_write_json
    from optzoo.context_tuning import ContextTuning, ContextTuningConfig
    from optzoo.context_tuning.baselines import lora_ttt

    ap = argparse.ArgumentParser(prog="python -m benchmarks context_tuning")
    ap.add_argument("--k", type=int, nargs="+", default=[4, 8, 16, 32])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--model", choices=["tiny", "smollm2"], default="tiny")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    if args.model == "smollm2":
        from optzoo.tinylm import load_smollm2

        model = load_smollm2()[0].eval()
    else:
        from optzoo.tinylm import tiny_llama

        model = tiny_llama(64, n_layer=4, n_embd=128, n_head=4, n_positions=2048, seed=0).eval()
    vocab = model.get_input_embeddings().num_embeddings
    g = torch.Generator().manual_seed(0)
    delim = torch.tensor([3])
    rows = []
    for k in args.k:
        demos = [(torch.randint(8, min(vocab, 5000), (6,), generator=g),
                  torch.randint(8, min(vocab, 5000), (2,), generator=g)) for _ in range(k)]
        row = {"k": k}
        for name in ("ctkv", "ctprompt"):
            ct = ContextTuning(model, demos, variant="kv" if name == "ctkv" else "prompt", delimiter_ids=delim,
                               config=ContextTuningConfig(steps=args.steps), seed=0)
            t0 = time.perf_counter()
            ct.fit()
            row[name] = {"seconds": time.perf_counter() - t0, "tokens_per_epoch": ct.tokens_per_epoch()}
        t0 = time.perf_counter()
        ctx = lora_ttt(model, demos, delimiter_ids=delim, steps=args.steps, seed=0)
        row["ttt_lora_peft"] = {"seconds": time.perf_counter() - t0,
                                "tokens_per_epoch": ctx.history["tokens_per_epoch"]}
        rows.append(row)
        r = {m: row[m]["seconds"] for m in ("ctkv", "ctprompt", "ttt_lora_peft")}
        print(f"k={k:3d}  CT-KV {r['ctkv']:7.3f} s ({row['ctkv']['tokens_per_epoch']} tok/epoch)  "
              f"CT-Prompt {r['ctprompt']:7.3f} s ({row['ctprompt']['tokens_per_epoch']})  "
              f"TTT-LoRA(PEFT) {r['ttt_lora_peft']:7.3f} s ({row['ttt_lora_peft']['tokens_per_epoch']})  "
              f"ratio TTT/CT-KV {r['ttt_lora_peft'] / r['ctkv']:.2f}x, CT-Prompt/CT-KV {r['ctprompt'] / r['ctkv']:.2f}x")
    out = Path(__file__).parent / "results" / "context_tuning.json"
    atomic_write_json(out, {"config": vars(args), "rows": rows,
                            "note": f"{args.model} model, {args.steps} steps per task, wall seconds on a shared "
                                    "2-core machine under contention (TTT time includes PEFT setup and the "
                                    "model copy)"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
