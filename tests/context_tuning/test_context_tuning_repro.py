"""PEFT baselines, the smoke reproduction on records (random tiny Llama: mechanics only), the
control arm (demonstration initialisation removed, nothing else) and the claims on records."""

import json

import pytest
import torch

from optzoo.context_tuning import ContextTuning, ContextTuningConfig, repro
from optzoo.context_tuning.baselines import lora_ttt, peft_soft_prompt
from optzoo.context_tuning.repro.experiment import ALL_METHODS, _random_init_ctkv
from optzoo.context_tuning.repro.tasks import evaluate, make_task
from optzoo.context_tuning.repro.timing import COST_METHODS
from optzoo.papers import get_paper
from optzoo.repro.claim import NullProgress
from optzoo.repro.evidence import Record, as_records
from optzoo.repro.judging import check_claims, headline_status, judge_claims
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


def test_control_arm_differs_from_ctkv_only_in_the_initialisation():
    m = tiny_llama(40, n_layer=2, n_embd=32, n_head=2, n_positions=128, seed=0).eval()
    g = torch.Generator().manual_seed(1)
    ds = [(torch.randint(4, 40, (3,), generator=g), torch.randint(4, 40, (1,), generator=g)) for _ in range(4)]
    d, cfg = torch.tensor([3]), ContextTuningConfig(steps=3, lr=1e-2)
    ct = ContextTuning(m, ds, variant="kv", delimiter_ids=d, config=cfg, seed=5)
    rc = _random_init_ctkv(m, ds, d, cfg, 5)
    # the same layout, spans, leave-one-out + dropout masks, cost and settings
    assert torch.equal(ct.context_ids, rc.context_ids) and ct.spans == rc.spans and rc.config == ct.config
    assert ct.tokens_per_epoch() == rc.tokens_per_epoch()
    g1, g2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    assert torch.equal(ct._masks(g1), rc._masks(g2))
    # ... but a prefix of the same shape that is not the demonstrations' KV cache
    a, b = ct.initial_context().params, rc.initial_context().params
    assert all(x.shape == y.shape for (x, _), (y, _) in zip(a, b, strict=True))
    assert not any(torch.allclose(x, y) for (x, _), (y, _) in zip(a, b, strict=True))
    # deterministic per seed, and it trains (the loss moves) like CT-KV
    assert all(torch.equal(x, y) for (x, _), (y, _) in zip(b, _random_init_ctkv(m, ds, d, cfg, 5)
                                                           .initial_context().params, strict=True))
    assert len(rc.fit().history["loss"]) == 3


def test_task_families_are_balanced_and_disjoint():
    ids: dict = {}

    def enc(w):  # a distinct id per word
        return torch.tensor([ids.setdefault(w, len(ids) + 10)])

    for fam, k, n_lab in (("cat2", 8, 2), ("cat3", 9, 3), ("union", 8, 2)):
        demos, qs, labels = make_task(90000, 0, k, 12, enc, family=fam)
        assert len(labels) == n_lab and len(demos) == k and len(qs) == 12
        assert sorted(c for _, c in demos) == sorted(list(range(n_lab)) * (k // n_lab))
        seen = {tuple(x.tolist()) for x, _ in demos}
        assert not seen & {tuple(x.tolist()) for x, _ in qs}  # queries are held out
    with pytest.raises(ValueError, match="Unknown task family"):
        make_task(0, 0, 8, 4, enc, family="nope")


def test_evaluate_margin_uses_the_best_wrong_label():
    class Fixed:
        def query_ids(self, x):
            return x

        def nll(self, rows):  # label 0 always best: nll 1, 2, 3 for labels 0, 1, 2
            return torch.tensor([1.0 + (i % 3) for i in range(len(rows))])

    qs = [(torch.tensor([1]), 0), (torch.tensor([2]), 2)]
    acc, margin = evaluate(Fixed(), qs, [torch.tensor([7]), torch.tensor([8]), torch.tensor([9])])
    assert acc == 0.5 and margin == pytest.approx(((2 - 1) + (1 - 3)) / 2)


@pytest.fixture(scope="module")
def smoke():
    cfg = repro.SCALES["smoke"]
    return [repro.run(cfg, s, NullProgress()) for s in range(cfg.seeds)]


def test_smoke_reproduction(smoke, tmp_path):
    again = repro.run(repro.SCALES["smoke"], 0, NullProgress())
    key = [(r.arm, r.instance, r.metric, r.value) for r in again if r.metric in ("acc", "margin")]
    assert key == [(r.arm, r.instance, r.metric, r.value) for r in smoke[0] if r.metric in ("acc", "margin")]
    assert {r.arm for r in smoke[0] if r.metric == "acc"} == set(ALL_METHODS)
    rows = [[r.__dict__ for r in s] for s in smoke]
    json.loads(json.dumps(rows, allow_nan=False))  # plain, finite JSON, as a unit stores it
    vs = judge_claims(repro.CLAIMS, [as_records(s) for s in rows], scale="smoke", notes=repro.notes(smoke))
    assert [v.claim for v in vs] == [c.id for c in repro.CLAIMS]
    assert all(v.measured for v in vs)  # smoke runs every arm: nothing "not measured"
    assert all("could not be read" not in v.summary for v in vs)
    assert all(v.control is not None for v in vs if v.kind == "claim")
    paths = repro.figures(smoke, tmp_path)
    assert paths and all(p.exists() for p in paths)


def test_contract_headline_and_scales():
    check_claims(repro.CLAIMS)
    assert tuple(repro.HEADLINE) == tuple(get_paper("context_tuning").headline_claims)
    kinds = {c.id: c.kind for c in repro.CLAIMS}
    assert all(kinds[h] == "claim" for h in repro.HEADLINE)
    assert repro.MAX_THREADS == 1  # linear_cost judges process CPU time
    assert repro.SCALES["smoke"].seeds in (2, 3) and repro.SCALES["quick"].seeds >= 5
    for name, cfg in repro.SCALES.items():
        assert set(cfg.methods) <= set(ALL_METHODS)
        assert {m for m, _ in cfg.lrs} >= set(cfg.methods) - {"zeroshot", "icl"}
        for c in repro.CLAIMS:  # a claim measured at a scale reads only arms that scale runs
            if c.scales and name not in c.scales:
                continue
            arms = set(c.evidence.arms) | set(c.control.arms.values() if c.control else ())
            assert arms <= set(cfg.methods) | set(COST_METHODS), (name, c.id)
    assert set(repro.SCALES["full"].methods) == set(ALL_METHODS)
    # quick measures beats_prefix (with its control) but not vs_ttt (TTT is too costly there)
    quick = {c.id for c in repro.CLAIMS if not c.scales or "quick" in c.scales}
    assert "beats_prefix" in quick and "vs_ttt" not in quick
    assert "ctkv_randinit" in repro.SCALES["quick"].methods


def test_full_refuses_untuned_rates():
    cfg = repro.SCALES["full"]
    if any(lr is None for _, lr in cfg.lrs):
        with pytest.raises(ValueError, match="not tuned"):
            repro.run(cfg, 0, NullProgress())


def _synthetic(delta: float, control_delta: float = 0.0, n: int = 6, methods=ALL_METHODS):
    """Records where CT-KV is ``delta`` above every baseline and its control ``control_delta``."""
    out = []
    for s in range(n):
        rec = []
        for t in range(2):
            wobble = 0.01 * ((s * 7 + t) % 5 - 2)
            for m in methods:
                acc = 0.6 + wobble * (1 if m == "ctkv" else -1)
                acc += {"ctkv": delta, "ctkv_randinit": control_delta, "ctprompt": delta,
                        "ttt_ctkv": 2 * delta}.get(m, 0.0)
                rec.append(Record("", m, f"task{t}", "acc", acc))
                rec.append(Record("", m, f"task{t}", "loss", 0.8 - (0.3 if m == "ctkv_noloo" else 0) + 0.001 * s))
        for m in COST_METHODS:
            for k in (4, 8, 16):
                p = 1.0 if m == "ctkv" else 2.0
                rec.append(Record("", m, f"k{k}", "time_per_step", 1e-3 * k ** p * (1 + 0.01 * s), x=k))
            rec.append(Record("", m, "max_k", "tokens_at_max_k", 100 if m == "ctkv" else 900, x=16, exact=True))
        out.append(rec)
    return out


def test_claims_reproduced_by_the_method_and_not_by_its_control():
    vs = {v.claim: v for v in judge_claims(repro.CLAIMS, _synthetic(+0.2, control_delta=-0.1), scale="full")}
    for cid in ("beats_prefix", "beats_icl_kv", "beats_prompt_tuning"):
        assert vs[cid].verdict == "reproduced" and vs[cid].control.verdict == "not reproduced"
        assert vs[cid].status == "reproduced"
    assert vs["vs_ttt"].status == "reproduced"
    assert headline_status(list(vs.values()), repro.HEADLINE) == "reproduced"
    assert vs["loo_ablation"].verdict == "reproduced"
    assert vs["fewer_tokens"].verdict == "passed" and vs["linear_cost"].verdict == "passed"


def test_a_control_that_also_reproduces_makes_the_claim_unable_to_fail():
    vs = {v.claim: v for v in judge_claims(repro.CLAIMS, _synthetic(+0.2, control_delta=+0.2), scale="full")}
    assert vs["beats_prefix"].verdict == "reproduced" and vs["beats_prefix"].status == "cannot fail"
    assert headline_status(list(vs.values()), repro.HEADLINE) == "undecided"


def test_claims_can_fail_when_the_method_is_worse():
    vs = {v.claim: v for v in judge_claims(repro.CLAIMS, _synthetic(-0.2), scale="full")}
    for cid in ("beats_prefix", "beats_icl_kv", "vs_ttt"):
        assert vs[cid].verdict == "not reproduced"
    assert headline_status(list(vs.values()), repro.HEADLINE) == "not reproduced"


def test_no_loo_scoring_higher_fails_the_ablation():
    per = _synthetic(+0.2)
    per = [[Record(r.part, r.arm, r.instance, r.metric, r.value + 0.35)
            if (r.arm == "ctkv_noloo" and r.metric == "acc") else r for r in s] for s in per]
    v = {v.claim: v for v in judge_claims(repro.CLAIMS, per, scale="full")}["loo_ablation"]
    assert v.verdict == "not reproduced"
    assert {p.name: p.verdict for p in v.parts} == {"train loss": "reproduced", "test accuracy": "not reproduced"}


def test_quick_does_not_measure_the_expensive_arms_claims():
    quick = repro.SCALES["quick"]
    vs = {v.claim: v for v in judge_claims(repro.CLAIMS, _synthetic(+0.2, -0.1, methods=quick.methods),
                                           scale="quick")}
    for cid in ("vs_ttt", "beats_icl_prompt", "beats_prompt_tuning", "ttt_plus_ctkv", "dropout_ablation"):
        assert not vs[cid].measured and vs[cid].status == "not measured"
    assert vs["beats_prefix"].status == "reproduced"
    assert headline_status(list(vs.values()), repro.HEADLINE) == "untested at this scale"


def test_tuning_choice_is_accuracy_then_margin():
    from optzoo.context_tuning.repro.tuning import choose

    def row(seed, lr, acc, margin):
        return {"seed": seed, "lr": lr, "mean": {"ctkv": {"acc": acc, "margin": margin}}}

    rows = [row(0, 1e-2, 0.75, 1.0), row(1, 1e-2, 0.25, 1.0),  # mean accuracy 0.5
            row(0, 3e-2, 0.5, 5.0), row(1, 3e-2, 0.5, 5.0),    # 0.5 too, larger margin: chosen
            row(0, 1e-1, 0.25, 9.0), row(1, 1e-1, 0.25, 9.0)]  # largest margin, lower accuracy
    lr, acc, margin = choose(rows)["ctkv"]
    assert (lr, acc, margin) == (3e-2, 0.5, 5.0)


def test_frozen_rates_are_the_choices_in_docs_tuning():
    # quick's (and full's) rates are the Choices frozen in docs/tuning, and the rule re-derives them
    import json

    from optzoo.context_tuning.repro.tuning import FROZEN, FROZEN_FULL, choices, frozen_choices

    for path in (FROZEN, FROZEN_FULL):
        doc = json.loads(path.read_text())
        again = choices(doc["rows"], grid=tuple(doc["grid"]), seeds=tuple(doc["seeds"]), steps=doc["steps"])
        assert {c.arm: c.value for c in again} == doc["chosen"]
    for scale in ("quick", "full"):
        cfg = repro.SCALES[scale]
        got = {c.arm: c.value for c in frozen_choices(cfg)}
        # every tuned arm's rate is a frozen choice; ttt_ctkv is not tuned on its own (TTT's rate)
        assert got == {m: lr for m, lr in cfg.lrs if m in cfg.methods and m != "ttt_ctkv"}
        assert not any(c.at_edge for c in frozen_choices(cfg))
    full = dict(repro.SCALES["full"].lrs)
    assert full["ttt_ctkv"] == full["ttt"]
    assert frozen_choices(repro.SCALES["smoke"]) == []
