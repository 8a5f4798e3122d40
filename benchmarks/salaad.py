"""SALAAD benchmark: training-step overhead against plain AdamW on the same model, the share of
it spent in the structured sweeps (SVDs), and the memory of exported models against the dense one.

Model: the reproduction's tiny tied-embedding Llama (2 layers, hidden 64, MLP 172, vocab 128)
on the hidden Markov task, batch 16 x 64 tokens. Anchor: the same loop with AdamW alone.
Method: the same loop with ``loss + sal.penalty()`` and ``sal.step()`` (a sweep every 2 steps).
CPU process time per step (one thread); the ratio is SALAAD / AdamW. Then ``export`` at
100/50/30% of the targeted parameters: exact parameters and bytes (factors, CSR values and
int32 indices, the rest) against the dense model's bytes. Timings on a shared machine are noisy.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch


def main(argv: list[str]) -> int:
    from optzoo.salaad import SALAAD
    from optzoo.salaad.repro import SCALES
    from optzoo.salaad.repro.experiment import TARGETS, build_model
    from optzoo.tinylm import HiddenMarkovTask

    torch.set_num_threads(1)
    steps = int(argv[0]) if argv else 60
    cfg = SCALES["quick"]
    task = HiddenMarkovTask(seed=0)
    data = [task.sample(cfg.batch, cfg.seq_len, seed=t) for t in range(steps)]
    out: dict = {"steps": steps, "threads": torch.get_num_threads()}
    for name in ("adamw", "salaad"):
        model = build_model(cfg, 0)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95))
        sal = SALAAD(model, targets=TARGETS, rho=cfg.rho, rank_ratio=cfg.rank_ratio) if name == "salaad" else None
        t_all = t_sweep = 0.0
        for x in data:
            t0 = time.process_time()
            loss = model(input_ids=x, labels=x).loss
            if sal is not None:
                loss = loss + sal.penalty()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if sal is not None:
                t1 = time.process_time()
                sal.step()
                t_sweep += time.process_time() - t1
            t_all += time.process_time() - t0
        out[name] = {"seconds_per_step": t_all / steps, "sweep_seconds_per_step": t_sweep / steps}
        if sal is not None:
            dense_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
            out["export"] = []
            for f in (1.0, 0.5, 0.3):
                c = sal.export(sal.rest_params + round(f * sal.target_params))
                out["export"].append({"fraction": f, "params": c.params, "bytes": c.nbytes,
                                      "index_bytes": c.index_bytes, "dense_params": c.dense_params,
                                      "dense_bytes": dense_bytes, "bytes_ratio": c.nbytes / dense_bytes})
    out["ratio_salaad_over_adamw"] = out["salaad"]["seconds_per_step"] / out["adamw"]["seconds_per_step"]
    out["sweep_share_of_salaad_step"] = (out["salaad"]["sweep_seconds_per_step"]
                                         / out["salaad"]["seconds_per_step"])
    print(json.dumps(out, indent=2))
    path = Path(__file__).parent / "results" / "salaad.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    return 0
