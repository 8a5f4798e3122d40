"""Judge backends behind one protocol.

A :class:`Judge` only has to turn prompts into completions (``generate``). The base class
builds the IP-GRM prompts and parses the outputs, giving every backend the same three calls:

* ``principles(qs) -> list[str]``: Stage 1, P ~ P(P | Q); the response is never an input;
* ``judge(items) -> list[(score | None, text)]``: Stage 2, J ~ P(J | Q, P, R), items (Q, R, P);
* ``joint(items) -> list[(P, score | None, text)]``: the coupled GRM, (P, J) ~ P(P, J | Q, R).

Backends: :class:`HFJudge` (any transformers causal LM, batched left-padded greedy decoding
with the KV cache), :class:`OpenAICompatJudge` (an OpenAI-compatible HTTP endpoint, async with
bounded concurrency, retries and timeouts) and :class:`~optzoo.ipgrm.simulated.SimulatedJudge`.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request

from optzoo._core.validation import check_choice, check_int, check_real, check_type, fail
from optzoo.ipgrm.text import (
    P_HEADER,
    ParseStats,
    parse_score,
    render_coupled,
    render_judge,
    render_principles,
    strip_think,
    truncate_middle,
)

__all__ = ["Judge", "HFJudge", "OpenAICompatJudge", "JudgeError", "READOUTS", "SCORE_CUE"]


class JudgeError(RuntimeError):
    """A backend failed after its retries (HTTP error, timeout, malformed reply)."""


class Judge:
    """Base class: subclasses implement ``generate(prompts, *, max_new_tokens)``."""

    name = "judge"

    def __init__(self, *, template: str = "paper", max_tokens_principles: int = 512,
                 max_tokens_judge: int = 1024, max_q_chars: int = 10_000, max_r_chars: int = 30_000):
        owner = type(self).__name__
        self.template = check_choice("template", template, ("paper", "released"), owner=owner)
        self.max_tokens_principles = check_int("max_tokens_principles", max_tokens_principles,
                                               owner=owner, low=1)
        self.max_tokens_judge = check_int("max_tokens_judge", max_tokens_judge, owner=owner, low=1)
        self.max_q_chars = check_int("max_q_chars", max_q_chars, owner=owner, low=2)
        self.max_r_chars = check_int("max_r_chars", max_r_chars, owner=owner, low=2)
        self.stats = ParseStats()
        self.calls = {"principles": 0, "judge": 0, "joint": 0}

    def generate(self, prompts: list[str], *, max_new_tokens: int) -> list[str]:  # pragma: no cover
        raise NotImplementedError

    @property
    def identity(self) -> tuple:
        """What the principle-cache key needs to know about this judge."""
        return (self.name, self.template, self.max_tokens_principles)

    def _q(self, q: str, owner: str) -> str:
        if not isinstance(q, str) or not q.strip():
            fail("question", owner, "a non-empty str", q, exc=TypeError if not isinstance(q, str) else ValueError)
        return truncate_middle(q, self.max_q_chars)

    def _r(self, r: str, owner: str) -> str:
        if not isinstance(r, str) or not r.strip():
            fail("response", owner, "a non-empty str", r, exc=TypeError if not isinstance(r, str) else ValueError)
        return truncate_middle(strip_think(r), self.max_r_chars)

    def principles(self, qs: list[str]) -> list[str]:
        prompts = [render_principles(self._q(q, "Judge.principles")) for q in qs]
        self.calls["principles"] += len(prompts)
        outs = self.generate(prompts, max_new_tokens=self.max_tokens_principles) if prompts else []
        return [_principle_block(o) for o in outs]

    def judge(self, items: list[tuple[str, str, str]]) -> list[tuple[float | None, str]]:
        prompts = [render_judge(self._q(q, "Judge.judge"), p, self._r(r, "Judge.judge"),
                                template=self.template) for q, r, p in items]
        self.calls["judge"] += len(prompts)
        outs = self.generate(prompts, max_new_tokens=self.max_tokens_judge) if prompts else []
        return [(parse_score(o, stats=self.stats), o) for o in outs]

    def joint(self, items: list[tuple[str, str]]) -> list[tuple[str, float | None, str]]:
        prompts = [render_coupled(self._q(q, "Judge.joint"), self._r(r, "Judge.joint")) for q, r in items]
        self.calls["joint"] += len(prompts)
        budget = self.max_tokens_principles + self.max_tokens_judge
        outs = self.generate(prompts, max_new_tokens=budget) if prompts else []
        return [(_principle_block(o), parse_score(o, stats=self.stats), o) for o in outs]


def _principle_block(text: str) -> str:
    """The rubric part of a generation: after the header, before any analysis/score lines."""
    body = strip_think(text)
    i = body.rfind(P_HEADER)
    if i >= 0:
        body = body[i + len(P_HEADER):]
    cut = [k for k in (body.find("\nAnalysis"), body.find("\\boxed")) if k >= 0]
    return body[: min(cut)].strip() if cut else body.strip()


#: How :class:`HFJudge` reads a score: ``"generate"`` parses the generated judgment,
#: ``"expected"`` reads the probability-weighted score from the next-token distribution.
READOUTS = ("generate", "expected")
#: Appended to a Stage-2 (or coupled) prompt by the ``"expected"`` readout: the next token is the score.
SCORE_CUE = "Final score: \\boxed{"


class HFJudge(Judge):
    """A transformers causal LM as judge: batched, left-padded, greedy, KV cache on.

    ``model`` and ``tokenizer`` are any HF causal LM pair (an ``optzoo.tinylm`` model on
    CPU, SmolLM2, or a GPU model). ``chat=True`` wraps prompts with the tokenizer's chat
    template when it has one.

    ``readout="generate"`` (default) generates the whole judgment and parses its score.
    ``readout="expected"`` skips the analysis: after the Stage-2 prompt (for ``joint``: the
    coupled prompt and the rubric it generated) comes :data:`SCORE_CUE`, and the score is
    ``sum_d d p(d) / sum_d p(d)`` over the single-token digits d = 1..9 of the next-token
    distribution (a probability-weighted score, as G-Eval reads one). Principles are generated
    in both modes. INFERRED (ours): the cue and the 1-9 digit scale; it suits small judges that
    rarely finish a parseable judgment, and it never fails to parse. The text returned beside
    the score reports the probability mass the digits received.
    """

    def __init__(self, model, tokenizer, *, batch_size: int = 16, chat: bool = False,
                 readout: str = "generate", **kw):
        super().__init__(**kw)
        self.model, self.tokenizer = model, tokenizer
        self.batch_size = check_int("batch_size", batch_size, owner="HFJudge", low=1)
        self.chat = chat
        self.readout = check_choice("readout", readout, READOUTS, owner="HFJudge")
        self.name = f"hf:{getattr(model.config, '_name_or_path', '') or type(model).__name__}"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"  # decoder-only: new tokens must follow the real last token
        self._digits = None
        if readout == "expected":
            ids = [tokenizer.encode(str(d), add_special_tokens=False) for d in range(1, 10)]
            if any(len(i) != 1 for i in ids) or len({i[0] for i in ids}) != 9:
                fail("readout", "HFJudge", "'expected' only with a tokenizer that encodes the digits "
                     "1-9 as nine distinct single tokens", readout)
            self._digits = [i[0] for i in ids]

    @property
    def identity(self) -> tuple:
        return (*super().identity, self.readout)

    def _wrap(self, prompts: list[str]) -> list[str]:
        tok = self.tokenizer
        if self.chat and getattr(tok, "chat_template", None):
            return [tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                            add_generation_prompt=True) for p in prompts]
        return list(prompts)

    def _n_pos(self) -> int:
        cfg = self.model.config
        return getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings", 10**9)

    def generate(self, prompts: list[str], *, max_new_tokens: int) -> list[str]:
        import torch

        tok, n_pos = self.tokenizer, self._n_pos()
        prompts = self._wrap(prompts)
        outs: list[str] = []
        for s in range(0, len(prompts), self.batch_size):
            enc = tok(prompts[s: s + self.batch_size], return_tensors="pt", padding=True,
                      truncation=True, max_length=max(1, n_pos - max_new_tokens))
            with torch.no_grad():
                gen = self.model.generate(**enc, max_new_tokens=min(max_new_tokens, n_pos - 1),
                                          do_sample=False, use_cache=True, pad_token_id=tok.pad_token_id)
            outs += tok.batch_decode(gen[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
        return outs

    def expected_scores(self, prompts: list[str], continuations: list[str] | None = None
                        ) -> list[tuple[float, float]]:
        """(probability-weighted score in [1, 9], probability mass on the digits) per prompt,
        read after the (chat-wrapped when ``chat``) prompt, its continuation (text the judge
        itself wrote, e.g. a rubric; default none) and :data:`SCORE_CUE`."""
        import torch

        if self._digits is None:
            fail("readout", "HFJudge.expected_scores", "'expected' (set at construction)", self.readout)
        tok = self.tokenizer
        cont = [""] * len(prompts) if continuations is None else list(continuations)
        texts = [w + c + SCORE_CUE for w, c in zip(self._wrap(prompts), cont, strict=True)]
        digits = torch.tensor(self._digits)
        out: list[tuple[float, float]] = []
        for s in range(0, len(texts), self.batch_size):
            enc = tok(texts[s: s + self.batch_size], return_tensors="pt", padding=True, truncation=True,
                      max_length=self._n_pos())
            with torch.no_grad():
                logits = self.model(**enc).logits[:, -1, :].float()
            p = torch.softmax(logits, -1)[:, digits]
            mass = p.sum(-1)
            score = (p * torch.arange(1, 10, dtype=p.dtype)).sum(-1) / mass
            out += [(float(a), float(b)) for a, b in zip(score, mass, strict=True)]
        return out

    def judge(self, items: list[tuple[str, str, str]]) -> list[tuple[float | None, str]]:
        if self.readout == "generate":
            return super().judge(items)
        prompts = [render_judge(self._q(q, "Judge.judge"), p, self._r(r, "Judge.judge"),
                                template=self.template) for q, r, p in items]
        self.calls["judge"] += len(prompts)
        self.stats.attempts += len(prompts)
        return [(s, f"expected score {s:.4f} (digit probability {m:.3f})")
                for s, m in (self.expected_scores(prompts) if prompts else [])]

    def joint(self, items: list[tuple[str, str]]) -> list[tuple[str, float | None, str]]:
        if self.readout == "generate":
            return super().joint(items)
        prompts = [render_coupled(self._q(q, "Judge.joint"), self._r(r, "Judge.joint")) for q, r in items]
        self.calls["joint"] += len(prompts)
        self.stats.attempts += len(prompts)
        rubrics = [_principle_block(o) for o in
                   (self.generate(prompts, max_new_tokens=self.max_tokens_principles) if prompts else [])]
        scored = self.expected_scores(prompts, [r + "\n" for r in rubrics])
        return [(r, s, f"expected score {s:.4f} (digit probability {m:.3f})")
                for r, (s, m) in zip(rubrics, scored, strict=True)]


class OpenAICompatJudge(Judge):
    """An OpenAI-compatible endpoint (vLLM, sglang, llama.cpp server...) as judge.

    Requests run concurrently (at most ``concurrency`` in flight, an asyncio semaphore over
    worker threads), each with a ``timeout`` in seconds and up to ``retries`` retries with
    exponential back-off on connection errors, timeouts, HTTP 429 and 5xx. Other HTTP errors
    and exhausted retries raise :class:`JudgeError`. ``api="chat"`` posts to
    ``/chat/completions``, ``api="completions"`` to ``/completions``.
    """

    def __init__(self, base_url: str, model: str, *, concurrency: int = 32, timeout: float = 60.0,
                 retries: int = 3, backoff: float = 0.5, api: str = "chat", temperature: float = 0.0,
                 api_key: str | None = None, **kw):
        super().__init__(**kw)
        check_type("base_url", base_url, str, owner="OpenAICompatJudge", what="a str URL")
        if not base_url.startswith(("http://", "https://")):
            fail("base_url", "OpenAICompatJudge", "an http(s) URL", base_url)
        self.base_url, self.model = base_url.rstrip("/"), model
        self.concurrency = check_int("concurrency", concurrency, owner="OpenAICompatJudge", low=1)
        self.timeout = check_real("timeout", timeout, owner="OpenAICompatJudge", low=0.0, closed="neither")
        self.retries = check_int("retries", retries, owner="OpenAICompatJudge", low=0)
        self.backoff = check_real("backoff", backoff, owner="OpenAICompatJudge", low=0.0)
        self.api = check_choice("api", api, ("chat", "completions"), owner="OpenAICompatJudge")
        self.temperature = check_real("temperature", temperature, owner="OpenAICompatJudge", low=0.0)
        self.api_key = api_key
        self.name = f"openai:{self.base_url}:{model}"
        self.requests_sent = 0

    @property
    def identity(self) -> tuple:
        return super().identity + (self.temperature, self.api)

    def _post(self, prompt: str, max_new_tokens: int) -> str:
        if self.api == "chat":
            url = self.base_url + "/chat/completions"
            body = {"model": self.model, "messages": [{"role": "user", "content": prompt}]}
        else:
            url = self.base_url + "/completions"
            body = {"model": self.model, "prompt": prompt}
        body.update(max_tokens=max_new_tokens, temperature=self.temperature)
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode()
        last = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            self.requests_sent += 1
            try:
                req = urllib.request.Request(url, data=data, headers=headers, method="POST")
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    reply = json.loads(resp.read())
                choice = reply["choices"][0]
                return choice["message"]["content"] if self.api == "chat" else choice["text"]
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code} from {url}"
                if e.code != 429 and e.code < 500:
                    break
            except (urllib.error.URLError, TimeoutError, OSError) as e:
                last = f"{type(e).__name__}: {getattr(e, 'reason', e)} from {url}"
            except (KeyError, IndexError, TypeError, ValueError) as e:
                raise JudgeError(f"malformed reply from {url}: {e!r}") from e
        raise JudgeError(f"request to {url} failed after {attempt + 1} attempt(s): {last}")

    async def agenerate(self, prompts: list[str], *, max_new_tokens: int) -> list[str]:
        sem = asyncio.Semaphore(self.concurrency)

        async def one(p):
            async with sem:
                return await asyncio.to_thread(self._post, p, max_new_tokens)

        return list(await asyncio.gather(*(one(p) for p in prompts)))

    def generate(self, prompts: list[str], *, max_new_tokens: int) -> list[str]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.agenerate(prompts, max_new_tokens=max_new_tokens))
        # Called from inside a running loop (e.g. an async trainer): run on a private loop.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as ex:
            return ex.submit(asyncio.run, self.agenerate(prompts, max_new_tokens=max_new_tokens)).result()
