"""PEFT baselines and the smoke reproduction (random tiny Llama: mechanics only)."""

import torch

from optzoo.context_tuning import repro
from optzoo.context_tuning.baselines import lora_ttt, peft_soft_prompt
from optzoo.repro.claim import NullProgress, Verdict
from optzoo.tinylm import tiny_llama


def test_peft_baselines_train_and_leave_model_untouched():
    m = tiny_llama(40, n_layer=2, n_embd=32, n_head=2, n_positions=128, seed=0).eval()
    before = [p.detach().clone() for p in m.parameters()]
    g = torch.Generator().manual_seed(0)
    ds = [(torch.randint(4, 40, (3,), generator=g), torch.randint(4, 40, (1,), generator=g)) for _ in range(4)]
    d = torch.tensor([3])
    for kind in ("prompt", "prefix"):
        s = peft_soft_prompt(m, ds, kind=kind, delimiter_ids=d, steps=8, lr=5e-2, seed=0)
        assert s.history["loss"][-1] < s.history["loss"][0]
        assert s.nll([(s.query_ids(ds[0][0]), ds[0][1])]).shape == (1,)
    t = lora_ttt(m, ds, delimiter_ids=d, steps=8, lr=5e-2, seed=0)
    assert t.history["loss"][-1] < t.history["loss"][0]
    assert all(torch.equal(a, b) for a, b in zip(before, m.parameters(), strict=True))
    assert not any("lora" in n for n, _ in m.named_parameters())


def test_smoke_reproduction(tmp_path):
    per = [repro.run(repro.SCALES["smoke"], s, NullProgress()) for s in (0, 1)]
    again = repro.run(repro.SCALES["smoke"], 0, NullProgress())
    assert again["mean"]["ctkv"]["margin"] == per[0]["mean"]["ctkv"]["margin"]  # determinism
    vs = repro.judge(per)
    assert {v.claim for v in vs} == {c.id for c in repro.CLAIMS}
    assert all(isinstance(v, Verdict) for v in vs)
    paths = repro.figures(per, tmp_path)
    assert paths and all(p.exists() for p in paths)
