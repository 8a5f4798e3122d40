"""Reward calibration benchmark: one training step of ``RCDPOTrainer`` vs plain TRL ``DPOTrainer``.

Same tiny model (the tinylm ``toy`` GPT-2, ~0.1M parameters, or a seeded fresh one if the
checkpoint is absent), same batch of 16 toy-language pairs, fp32 on CPU. Timed: TRL's
``training_step`` (forward of policy and reference, loss, backward) repeated, median per step.
The calibrated step adds two ``autograd.grad`` calls to phi (phi = the LM head, which GPT-2
ties to the input embedding, so each call back-propagates to the embeddings) and one
reference forward done by our hook instead of TRL. Timings on a shared 2-core machine are
inflated and noisy; the ratio is the informative number.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path


def _time_steps(trainer, batch, reps: int) -> float:
    model = trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # normally set inside train()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        trainer.training_step(model, batch)
        times.append(time.perf_counter() - t0)
        model.zero_grad(set_to_none=True)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks reward_calibration")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    from optzoo.reward_calibration.repro import toy
    from optzoo.reward_calibration.trl_adapter import make_trl_trainer

    ref, source = toy.reference_model(0, sft_steps=100)
    train, _ = toy.make_data(0, k=1, n_train=args.batch, n_eval=4)
    base = make_trl_trainer(ref, train.pairs, rc=False, steps=1, batch=args.batch, lr=1e-4,
                            seed=0)
    rc = make_trl_trainer(ref, train.pairs, rc=True, steps=1, batch=args.batch, lr=1e-4,
                          seed=0)
    batch = next(iter(base.get_train_dataloader()))
    for tr in (base, rc):  # warm-up
        _time_steps(tr, batch, 3)
    t_base = _time_steps(base, batch, args.reps)
    t_rc = _time_steps(rc, batch, args.reps)
    res = {"model": source, "batch_pairs": args.batch, "reps": args.reps,
           "trl_dpo_step_s": t_base, "rc_dpo_step_s": t_rc, "ratio_rc_over_trl": t_rc / t_base,
           "note": "median training_step time, CPU 1 thread, shared 2-core machine"}
    print(f"TRL DPOTrainer step   : {t_base * 1e3:8.2f} ms")
    print(f"RCDPOTrainer step     : {t_rc * 1e3:8.2f} ms")
    print(f"ratio (RC / TRL)      : {t_rc / t_base:8.2f}")
    out = Path(__file__).parent / "results" / "reward_calibration.json"
    out.parent.mkdir(exist_ok=True)
    from optzoo._core.io import atomic_write_json

    atomic_write_json(out, res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
