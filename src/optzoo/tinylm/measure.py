"""The measurements quoted in ``docs/tinylm.md``.

``python -m optzoo.tinylm.measure icl``      ICL accuracy of the committed ``icl`` checkpoint
                                             (k = 0/4/8/16, both families, baselines)
``python -m optzoo.tinylm.measure smollm2``  SmolLM2 forward and forward+backward time per token
"""

from __future__ import annotations

import argparse
import json
import time

__all__ = ["measure_icl", "measure_smollm2", "main"]


def measure_icl(*, n_tasks: int = 64, n_queries: int = 32, seed: int = 12345) -> list[dict]:
    from optzoo.tinylm.icl_train import evaluate_icl
    from optzoo.tinylm.loader import checkpoint_manifest, load_tiny_lm

    model, _ = load_tiny_lm("icl")
    data = checkpoint_manifest("icl")["recipe"]["data"]
    rows = []
    for fam in ("pretrain", "shifted"):
        for k in (4, 8, 16):
            r = evaluate_icl(model, family=fam, k=k, n_tasks=n_tasks, n_queries=n_queries,
                             seed=seed, n_features=data["n_features"], layout=data["layout"])
            rows.append(r)
    return rows


def measure_smollm2(*, seq_len: int = 128, batch: int = 1, reps: int = 3,
                    threads: int = 2) -> dict:
    import torch

    from optzoo.tinylm.smollm2 import load_smollm2

    torch.set_num_threads(threads)
    model, _ = load_smollm2()
    ids = torch.randint(0, model.config.vocab_size, (batch, seq_len),
                        generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model(input_ids=ids)  # warm-up
        t = time.perf_counter()
        for _ in range(reps):
            model(input_ids=ids)
        fwd = (time.perf_counter() - t) / reps
    model.train()
    t = time.perf_counter()
    for _ in range(reps):
        model(input_ids=ids, labels=ids).loss.backward()
        model.zero_grad(set_to_none=True)
    fb = (time.perf_counter() - t) / reps
    n = batch * seq_len
    return {"threads": threads, "batch": batch, "seq_len": seq_len, "reps": reps,
            "forward_ms_per_token": 1e3 * fwd / n, "forward_backward_ms_per_token": 1e3 * fb / n}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m optzoo.tinylm.measure", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["icl", "smollm2"])
    args = parser.parse_args(argv)
    if args.what == "icl":
        print("| family | k | ICL | zero-shot | most frequent label | ideal (pre-training rules) |")
        print("|---|---|---|---|---|---|")
        for r in measure_icl():
            print(f"| {r['family']} | {r['k']} | {r['icl']:.3f} | {r['zero_shot']:.3f} | "
                  f"{r['frequency']:.3f} | {r['ideal_pretrain_rules']:.3f} |")
    else:
        print(json.dumps(measure_smollm2(), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
