import asyncio
import json
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from optzoo.ipgrm import (
    CoupledGRMReward,
    IPGRMReward,
    JudgeError,
    OpenAICompatJudge,
    PrincipleCache,
    SimulatedJudge,
    grpo_advantages,
    make_question,
    measure_drift,
    parse_principles,
    parse_score,
    render_principles,
    strip_think,
    truncate_middle,
)
from optzoo.ipgrm.judges import Judge
from optzoo.ipgrm.text import ParseStats

Q = make_question(0, ["sun", "sea", "salt"], 4, 8)
Q2 = make_question(1, ["oak", "ash", "elm"], 5, 9)


def test_parser_cases():
    st = ParseStats()
    assert parse_score("x \\boxed{3.0} then \\boxed{7.3}", stats=st) == 7.3
    assert parse_score("Score: 8", stats=st) == 8.0
    assert parse_score("Rating: 6.5", stats=st) == 6.5
    assert parse_score("\\boxed{42}", stats=st) == 10.0
    assert parse_score("\\boxed{0.2}", stats=st) == 1.0
    assert parse_score("no number here", stats=st) is None
    assert parse_score("<think>\\boxed{2.0}</think> Final score: 9.1", stats=st) == 9.1
    assert (st.attempts, st.failures, st.clamped) == (7, 1, 2)


def test_principles_parse_renormalise_and_error():
    with pytest.warns(UserWarning, match="renormalised"):
        c = parse_principles("A (Weight: 30%): x\nB (Weight: 30%): y")
    assert [x.weight for x in c] == [0.5, 0.5]
    with pytest.raises(ValueError, match="at least one"):
        parse_principles("nothing useful")
    with pytest.raises(TypeError, match=r"The 'text' argument of parse_principles must be a str"):
        parse_principles(None)


def test_parse_score_bounds_checked():  # trial 2, item 6
    with pytest.raises(ValueError, match=r"The 'high' argument of parse_score must be a real number "
                                         r">= low = 10\. Got 1\.0\."):
        parse_score("Score: 5", low=10, high=1)
    with pytest.raises(ValueError, match=r"The 'low' argument of parse_score"):
        parse_score("Score: 5", low=float("nan"))
    assert parse_score("Score: 5", low=5, high=5) == 5.0


def test_truncate_and_think():
    t = truncate_middle("a" * 50 + "b" * 50, 20)
    assert t.startswith("a" * 10) and t.endswith("b" * 10) and "truncated" in t
    assert strip_think("<think>x</think>answer") == "answer"


def test_stage1_never_sees_response_and_template_round_trip():
    j = SimulatedJudge(seed=3, resample=False)
    assert "[Response]" not in render_principles(Q)
    p = j.principles([Q])[0]
    crit = parse_principles(p)
    assert len(crit) == 3 and abs(sum(c.weight for c in crit) - 1) < 1e-9
    s, text = j.judge([(Q, "sun sea salt f1 f2", p)])[0]
    assert s == parse_score(text) and 1 <= s <= 10


def test_cache_calls_stage1_once_per_question_and_shares_rubric():
    j = SimulatedJudge(seed=0)
    f = IPGRMReward(j, cache=PrincipleCache("step"), num_generations=4)
    qs = [Q] * 4 + [Q2] * 4
    rs = ["sun sea", "sun f1 f2 f3 f4", "BRAG f1 f2 f3", "salt"] + ["oak", "ash elm", "f1 f2", "META"]
    f(qs, rs)
    assert j.calls["principles"] == 2 and j.calls["judge"] == 8
    assert len(set(f.last_principles[:4])) == 1 and len(set(f.last_principles[4:])) == 1
    # same step again: cached; a new step: regenerated
    class S:
        global_step = 7
    f(qs, rs, trainer_state=S())
    f(qs, rs, trainer_state=S())
    assert j.calls["principles"] == 4
    naive = IPGRMReward(SimulatedJudge(seed=0), num_generations=4)
    naive(qs, rs)
    assert naive.judge.calls["principles"] == 8
    coupled = CoupledGRMReward(SimulatedJudge(seed=0), num_generations=4)
    coupled(qs, rs)
    assert coupled.judge.calls == {"principles": 0, "judge": 0, "joint": 8}


def test_principles_independent_of_responses():
    a = IPGRMReward(SimulatedJudge(seed=5), cache=PrincipleCache("step"), num_generations=3)
    b = IPGRMReward(SimulatedJudge(seed=5), cache=PrincipleCache("step"), num_generations=3)
    a([Q] * 3, ["sun", "sea", "salt"])
    b([Q] * 3, ["META BRAG", "f1 f2 f3 f4 f5 f6 f7 f8 f9", "salt sun"])
    assert a.last_principles == b.last_principles


def test_offline_cache_and_concurrent_async_single_generation():
    j = SimulatedJudge(seed=0)
    c = PrincipleCache("offline")
    c.preload({Q: j.principles([Q])[0]})
    f = IPGRMReward(j, cache=c)
    f([Q, Q], ["sun", "sea"])
    assert j.calls["principles"] == 1  # only the preload
    with pytest.raises(ValueError, match="preloaded"):
        f([Q2], ["oak"])
    cache, made = PrincipleCache("persistent"), []

    async def make(q):
        made.append(q)
        await asyncio.sleep(0.01)
        return "P"

    async def main():
        return await asyncio.gather(*(cache.aget(Q, ("j",), make) for _ in range(5)))

    assert asyncio.run(main()) == ["P"] * 5 and len(made) == 1
    # threads: duplicate and overlapping key sets, one generation per key, no deadlock
    tc, calls = PrincipleCache("step"), []

    def mk(qs):
        calls.extend(qs)
        return [q[:4] for q in qs]

    ths = [threading.Thread(target=tc.get_many, args=(qq, ("j",), mk)) for qq in ([Q, Q2, Q], [Q2, Q]) * 4]
    for t in ths:
        t.start()
    for t in ths:
        t.join(timeout=10)
    assert sorted(calls) == sorted([Q, Q2])


def test_bad_inputs():
    f = IPGRMReward(SimulatedJudge(seed=0), num_generations=2)
    with pytest.raises(ValueError, match="non-empty"):
        f(["", ""], ["a", "b"])
    with pytest.raises(ValueError, match="'response' argument of Judge.judge must be a non-empty str"):
        f.judge.judge([(Q, " ", "P")])
    g = IPGRMReward(SimulatedJudge(seed=0), num_generations=2, default_score=1.0)
    assert g([Q, Q], ["sun", "  "])[1] == 1.0 and (g.empty, g.failures) == (1, 1)
    with pytest.raises(ValueError, match="blocks of num_generations=2"):
        f([Q, Q2], ["a", "b"])
    with pytest.raises(ValueError, match="'num_generations' argument of IPGRMReward"):
        IPGRMReward(SimulatedJudge(seed=0), num_generations=0)
    with pytest.raises(TypeError, match="Judge backend"):
        IPGRMReward("not a judge")


class _Garbage(Judge):
    def generate(self, prompts, *, max_new_tokens):
        return ["A (Weight: 100%): x" if "[Response]" not in p else "I refuse." for p in prompts]


def test_parse_failures_counted_default_or_raise():
    f = IPGRMReward(_Garbage(), default_score=1.0)
    with pytest.warns(UserWarning, match="no parseable score"):
        assert f([Q, Q], ["a", "b"]) == [1.0, 1.0]
    assert f.failures == 2 and f.judge.stats.failures == 2
    g = IPGRMReward(_Garbage())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="failed to parse"):
            g([Q, Q], ["a", "b"])


def test_grpo_invariance():
    r = np.array([1.0, 2.0, 4.0, 3.0])
    assert np.allclose(grpo_advantages(r, 4), grpo_advantages(r + 5.0, 4))
    assert not np.allclose(grpo_advantages(r, 4), grpo_advantages(r + np.array([0, 1.0, 0, 0]), 4))
    with pytest.raises(ValueError, match="finite"):
        grpo_advantages([1.0, np.nan], 2)


def test_simulated_determinism_and_kappa0_equivalence():
    qs = [make_question(i, ["a1", "b2", "c3"], 4, 8) for i in range(30)]
    rs = [" ".join(["a1", "b2"][: i % 3] + ["f"] * (i % 9) + (["BRAG"] if i % 4 == 0 else [])) or "f"
          for i in range(30)]
    s1 = CoupledGRMReward(SimulatedJudge(seed=1, drift=1.0, drop_p=0.5))(qs, rs)
    s2 = CoupledGRMReward(SimulatedJudge(seed=1, drift=1.0, drop_p=0.5))(qs, rs)
    assert s1 == s2
    a = CoupledGRMReward(SimulatedJudge(seed=1, resample=False))(qs, rs)
    b = IPGRMReward(SimulatedJudge(seed=1, resample=False))(qs, rs)
    assert np.allclose(a, b)


def test_measure_drift_zero_and_monotone():
    pairs = [(make_question(i, ["a1", "b2", "c3"], 4, 8), "a1 b2 f f f", "a1 f") for i in range(20)]
    d0 = measure_drift(SimulatedJudge(seed=0, resample=False), pairs)
    assert max(map(abs, d0["plus_values"] + d0["minus_values"])) == 0.0
    est = [measure_drift(SimulatedJudge(seed=0, drift=k, resample=False), pairs)["minus"]["estimate"]
           for k in (0.5, 1.0, 2.0)]
    assert 0 < est[0] < est[1] < est[2]


class _Handler(BaseHTTPRequestHandler):
    fail_first = 0

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers["Content-Length"])
        body = json.loads(self.rfile.read(n))
        if _Handler.fail_first > 0:
            _Handler.fail_first -= 1
            self.send_response(503)
            self.end_headers()
            return
        if "/slow" in self.path:
            import time

            time.sleep(0.5)
        if "/broken" in self.path:
            self.send_response(400)
            self.end_headers()
            return
        prompt = body["messages"][-1]["content"]
        text = self.server.generate(prompt, min(body["max_tokens"], 8))
        out = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


@pytest.fixture(scope="module")
def server():
    import torch

    from optzoo.tinylm import load_tiny_lm

    torch.set_num_threads(1)
    model, tok = load_tiny_lm("toy")
    lock = threading.Lock()

    def generate(prompt, n):
        # the toy LM only knows its own vocabulary: feed it a fixed-size id slice of the prompt
        ids = torch.tensor([[2 + (ord(c) % 30) for c in prompt[-16:]]])
        with lock, torch.no_grad():
            out = model.generate(ids, max_new_tokens=n, do_sample=False, pad_token_id=0)
        words = tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
        return f"{words} Score: 7.5/10.0 \\boxed{{{1 + len(prompt) % 9}.0}}"

    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.generate = generate
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


def test_openai_judge_real_server_retries_and_errors(server):
    j = OpenAICompatJudge(server, "toy", concurrency=4, timeout=10.0, retries=2, backoff=0.01)
    f = IPGRMReward(j, cache=PrincipleCache("step"), num_generations=3)
    out = f([Q] * 3, ["sun", "sea", "salt f1"])
    assert len(out) == 3 and all(1.0 <= s <= 10.0 for s in out)
    assert j.calls["principles"] == 1
    _Handler.fail_first = 1
    assert j.generate(["hello"], max_new_tokens=4)[0].endswith("}")
    bad = OpenAICompatJudge(server + "/broken", "toy", retries=3, backoff=0.01)
    with pytest.raises(JudgeError, match="HTTP 400"):
        bad.generate(["x"], max_new_tokens=2)
    slow = OpenAICompatJudge(server + "/slow", "toy", retries=1, backoff=0.01, timeout=0.1)
    with pytest.raises(JudgeError, match="after 2 attempt"):
        slow.generate(["x"], max_new_tokens=2)
    dead = OpenAICompatJudge("http://127.0.0.1:9/v1", "toy", retries=1, backoff=0.01, timeout=1.0)
    with pytest.raises(JudgeError, match="after 2 attempt"):
        dead.generate(["x"], max_new_tokens=2)


def test_trl_call_shape_and_templates():
    from trl.trainer.utils import get_callable_name

    from optzoo.ipgrm import render_judge

    f = IPGRMReward(SimulatedJudge(seed=0), cache=PrincipleCache("step"), num_generations=2)
    assert get_callable_name(f) == "IPGRMReward"

    class S:
        global_step = 3

    prompts = [[{"role": "user", "content": Q}]] * 2
    comps = [[{"role": "assistant", "content": "sun sea salt f1"}], [{"role": "assistant", "content": "BRAG"}]]
    out = f(prompts=prompts, completions=comps, completion_ids=[[1], [2]], trainer_state=S(),
            log_extra=None, log_metric=None)
    assert len(out) == 2 and out[0] > out[1]
    assert "strictly below 5.0" in render_judge(Q, "P", "R", template="released")
    assert "strictly below 5.0" not in render_judge(Q, "P", "R", template="paper")
    with pytest.raises(ValueError, match="'template' argument of render_judge"):
        render_judge(Q, "P", "R", template="other")


def test_trl_grpo_trainer_two_steps(tmp_path):
    pytest.importorskip("datasets")
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from optzoo.ipgrm.repro.hacking import make_world
    from optzoo.tinylm import tiny_gpt2, word_tokenizer

    torch.set_num_threads(1)
    world = make_world(8, 0)
    words = sorted({w for q in world for w in q.split()} | {"BRAG", "META"} | {f"f{j:02d}" for j in range(16)})
    tok = word_tokenizer(["<pad>", "<bos>", "<unk>", "<eos>"] + words, eos_token="<eos>")
    model = tiny_gpt2(len(tok), n_layer=1, n_embd=32, n_head=2, n_positions=128, eos_token_id=3)
    judge = SimulatedJudge(seed=0)
    reward = IPGRMReward(judge, cache=PrincipleCache("step"), num_generations=4, default_score=1.0)
    args = GRPOConfig(output_dir=str(tmp_path), num_generations=4, per_device_train_batch_size=8, max_completion_length=8,
                      max_steps=2, learning_rate=1e-3, report_to=[], use_cpu=True, save_strategy="no", beta=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=Dataset.from_dict({"prompt": world}),
                    processing_class=tok).train()
    # 2 steps x 2 distinct prompts: one Stage-1 call per question per step, Stage 2 for all 16 rows
    assert judge.calls["principles"] == 4 and judge.calls["judge"] + reward.empty == 16
