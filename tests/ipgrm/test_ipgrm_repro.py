
from optzoo.ipgrm import HFJudge, IPGRMReward, PrincipleCache, make_question, repro
from optzoo.ipgrm.throughput import (
    PIPELINES,
    Lengths,
    build_timing_model,
    expected_counts,
    run_pipeline,
)
from optzoo.repro.claim import NullProgress


def test_token_counts_match_cost_model():
    m = build_timing_model(n_layer=1, n_embd=16, n_head=2, vocab=64, n_positions=64)
    L = Lengths(4, 8, 5, 6)
    for k in PIPELINES:
        for share in (False, True):
            o = run_pipeline(k, m, n_prompts=2, group=3, lengths=L, prefix_sharing=share)
            e = expected_counts(k, 2, 3, L, prefix_sharing=share)
            assert (o["prefill_tokens"], o["decoded_tokens"]) == (e["prefill_tokens"], e["decoded_tokens"])


def test_hf_judge_batched_toy():
    from optzoo.tinylm import load_tiny_lm

    model, tok = load_tiny_lm("toy")
    j = HFJudge(model, tok, max_tokens_principles=4, max_tokens_judge=4, max_q_chars=60, max_r_chars=40)
    f = IPGRMReward(j, cache=PrincipleCache("step"), default_score=5.0, num_generations=2)
    q = make_question(0, ["w01", "w02", "w03"], 4, 8)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = f([q, q], ["w01 w02", "w03"])
    assert len(out) == 2 and j.calls["principles"] == 1


def test_smoke_repro(tmp_path):
    per = [repro.run(repro.SCALES["smoke"], s, NullProgress()) for s in (0, 1)]
    vs = repro.judge(per)
    assert {v.claim for v in vs} == {c.id for c in repro.CLAIMS}
    assert all(p.exists() for p in repro.figures(per, tmp_path))
    again = repro.run(repro.SCALES["smoke"], 0, NullProgress())
    assert again["e3"] == per[0]["e3"] and again["e1"] == per[0]["e1"]
