"""A real OpenAI-compatible HTTP server for tests, with a rule-based local model stand-in.

``start_llm_server(handler_fn)`` runs a stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (port 0, so the OS
picks a free one) in a thread and yields an :class:`LLMServer` whose ``base_url`` an ``LLMConfig`` can use.
It implements ``POST /v1/chat/completions`` and ``GET /v1/models`` with the OpenAI response shapes. The
assistant's content comes from ``handler_fn(request_json)``, which returns

* a ``str`` — the message content as is (so a test can send invalid JSON on purpose),
* a ``dict``/``list`` — JSON-encoded as the content (what a model honouring ``response_format``
  json_schema returns), or
* a :class:`RawReply` — an HTTP reply sent verbatim (status codes, non-JSON bodies).

:class:`RuleBasedResponder` is a deterministic local model for the four ufuzz LLM uses (paraphrase = a
fixed rewrite, answer = best word-overlap memory, judge = string containment, extractor = regexes) and for the
prompts the memory libraries send in their LLM modes (mem0, A-Mem, Graphiti). It is a stand-in for a
language model, not for any memory system. The server counts the requests it received so
tests can assert that a replay made zero calls.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.loopback import serve_on_loopback
from ufuzz.llm.uses import IDK, Answerer, FieldExtractor, Judge, ParaphraseRealizer


@dataclass(frozen=True)
class RawReply:
    status: int = 200
    body: str | bytes = ""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()  # extra response headers, e.g. (("Retry-After", "7"),)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or the raw text when it did not parse


Handler = Callable[[dict[str, Any]], "str | dict[str, Any] | list[Any] | RawReply"]


@dataclass
class LLMServer:
    host: str
    port: int
    model: str
    requests: list[RecordedRequest] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        with self.lock:
            return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    @property
    def count(self) -> int:
        """Chat-completion requests received so far."""
        return len(self.chat_requests)

    def record(self, req: RecordedRequest) -> None:
        with self.lock:
            self.requests.append(req)


def _completion(model: str, content: str, n: int) -> dict[str, Any]:
    prompt_tokens = 0
    completion_tokens = len(content.split())
    return {
        "id": f"chatcmpl-local-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def _headers(h: BaseHTTPRequestHandler) -> dict[str, str]:
    return {k.lower(): v for k, v in h.headers.items()}


def _make_handler(server: LLMServer, handler_fn: Handler) -> type[BaseHTTPRequestHandler]:
    class _H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out at once (no 40 ms delayed-ACK stall)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def _send(self, status: int, body: str | bytes, content_type: str = "application/json",
                  headers: tuple[tuple[str, str], ...] = ()) -> None:
            data = body.encode("utf-8") if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send(status, json.dumps({"error": {"message": message, "type": "invalid_request_error"}}))

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            server.record(RecordedRequest("GET", self.path, _headers(self), None))
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, json.dumps({"object": "list", "data": [
                    {"id": server.model, "object": "model", "created": 0, "owned_by": "ufuzz-tests"}]}))
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode("utf-8", "replace")
            try:
                body: Any = json.loads(raw)
            except json.JSONDecodeError:
                body = raw
            server.record(RecordedRequest("POST", self.path, _headers(self), body))
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._error(404, f"no route {self.path}")
                return
            if not isinstance(body, dict) or "messages" not in body or "model" not in body:
                self._error(400, "body must be a JSON object with 'model' and 'messages'")
                return
            try:
                out = handler_fn(body)
            except Exception as exc:  # noqa: BLE001 - surfaced to the test through server.errors
                server.errors.append(exc)
                self._error(500, f"responder failed: {type(exc).__name__}")
                return
            if isinstance(out, RawReply):
                self._send(out.status, out.body, out.content_type, out.headers)
                return
            content = out if isinstance(out, str) else json.dumps(out)
            self._send(200, json.dumps(_completion(str(body["model"]), content, server.count)))

    return _H


@contextmanager
def start_llm_server(handler_fn: Handler | None = None, model: str = "rule-model") -> Iterator[LLMServer]:
    """Run an OpenAI-compatible server on 127.0.0.1 (free port) for the ``with`` block."""
    handler_fn = handler_fn or RuleBasedResponder()
    state = LLMServer(host="127.0.0.1", port=0, model=model)
    with serve_on_loopback(_make_handler(state, handler_fn)) as port:
        state.port = port
        yield state


# -- the rule-based local model -------------------------------------------------------------------------

_STOP = {"the", "a", "an", "is", "are", "was", "were", "do", "does", "did", "what", "where", "who", "when",
         "which", "how", "me", "tell", "please", "can", "you", "your", "my", "of", "in", "to", "for", "and",
         "now", "currently", "at", "on", "with", "that", "this", "it", "be"}

_QUESTION_WORDS = {"what", "where", "who", "when", "which", "how", "tell", "please", "did", "does", "do",
                   "is", "are", "was", "were", "can", "could", "i", "remind", "give", "list", "by", "so"}

_ATTRIBUTES = [
    (re.compile(r"\b(live|lives|living|city|moved|reside|resides|home town|hometown)\b", re.I), "city"),
    (re.compile(r"\b(work|works|working|employer|job|employed)\b", re.I), "employer"),
    (re.compile(r"\b(pet|dog|cat|puppy)\b", re.I), "pet_name"),
    (re.compile(r"\b(birthday|born)\b", re.I), "birthday"),
    (re.compile(r"\b(car|drive|drives)\b", re.I), "car"),
]

_PREVIOUS = re.compile(r"\b(previous|previously|before|used to|formerly|former|old)\b", re.I)
_ANY = re.compile(r"\b(ever|at any time|any time)\b", re.I)
_ABSTAIN = re.compile(r"\b(don't know|do not know|not sure|cannot tell|can't tell|no information)\b", re.I)

_REWORD = [
    (re.compile(r"\bwhat is\b", re.I), "what's"),
    (re.compile(r"\bwhere does\b", re.I), "in what place does"),
    (re.compile(r"\bwho is\b", re.I), "who's"),
    (re.compile(r"\bcurrently\b", re.I), "right now"),
    (re.compile(r"\btell me\b", re.I), "let me know"),
]
_FILLER = re.compile(r"\b(please|just|actually|by the way|really)\b\s*,?\s*", re.I)


def _section(text: str, label: str) -> str | None:
    m = re.search(rf"^{re.escape(label)}:[ \t]*(.*)$", text, re.M)
    return m.group(1).strip() if m else None


def _listing(text: str, label: str) -> list[str]:
    m = re.search(rf"^{re.escape(label)}:\s*\n((?:\[\d+\] .*\n?)*)", text, re.M)
    if not m:
        return []
    return [re.sub(r"^\[\d+\] ", "", line).strip() for line in m.group(1).splitlines() if line.strip()]


def _cap_first(s: str) -> str:
    return s[:1].upper() + s[1:]


def _stem(w: str) -> str:
    return w[:-1] if len(w) > 3 and w.endswith("s") else w


def _tokens(s: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"[a-z0-9']+", s.casefold()) if w not in _STOP and len(w) > 1}


class RuleBasedResponder:
    """Deterministic replies for the four uses, dispatched on the system prompt, and for the memory libraries'
    own prompts in their LLM modes: mem0's extraction, A-Mem's note analysis and evolution, Graphiti's structured
    prompts (by the ``response_format`` json_schema name, :mod:`tests.support.graphiti_llm`). One server can so
    stand in for the model of any of these LLM modes."""

    def __init__(self) -> None:
        self._graphiti: Any = None  # the GraphitiResponder, made on the first Graphiti prompt

    @property
    def graphiti(self) -> Any:
        """The Graphiti part (its ``calls`` by response model, ``failures``, ``contradictions``)."""
        if self._graphiti is None:
            from tests.support.graphiti_llm import GraphitiResponder

            self._graphiti = GraphitiResponder()
        return self._graphiti

    def __call__(self, request: dict[str, Any]) -> str | dict[str, Any] | RawReply:
        from tests.support import graphiti_llm

        if graphiti_llm.handles(request):  # Graphiti's add_episode / remove_episode prompts
            return self.graphiti(request)
        msgs = request["messages"]
        system = next((m["content"] for m in msgs if m.get("role") == "system"), "")
        user = next((m["content"] for m in reversed(msgs) if m.get("role") == "user"), "")
        if system == ParaphraseRealizer.SYSTEM:
            return self.paraphrase(_section(user, "Transformation") or "", _section(user, "Query") or "")
        if system == Answerer.SYSTEM:
            return self.answer(_section(user, "Query") or "", _listing(user, "Memories"))
        from tests.support import mem0_llm

        if mem0_llm.is_extraction(system):  # mem0's own extraction prompt (mem0 write_mode=infer)
            return mem0_llm.extract(user)
        from tests.support import amem_llm

        if amem_llm.handles(system, user):  # A-Mem's note analysis and evolution prompts
            return amem_llm.answer(user)
        if system == Judge.SYSTEM and _section(user, "Benchmark") is not None:  # a benchmark's criterion
            from tests.support.benchmark_judge import judge_by_benchmark

            return judge_by_benchmark(_section(user, "Benchmark") or "", _section(user, "Question type") or "",
                                      _section(user, "Reference answer") or "", _section(user, "Response") or "")
        if system == Judge.SYSTEM:
            return self.judge(_section(user, "Reference answer") or "", _section(user, "Response") or "")
        if system == FieldExtractor.SYSTEM:
            return self.extract(_section(user, "Question") or "", _listing(user, "Context snippets"))
        return "I can only help with ufuzz prompts."

    @staticmethod
    def paraphrase(transformation: str, query: str) -> str:
        q = query.strip()
        if transformation == "reword":
            out = q
            for pat, rep in _REWORD:
                out = pat.sub(rep, out)
            return _cap_first(out) if out != q else f"Could you tell me: {q}"
        if transformation == "shorten":
            head, sep, tail = q.partition(", ")
            out = tail if sep and "?" in tail else q
            return _cap_first(_FILLER.sub("", out).strip())
        if transformation == "add_context":
            return f"I'm updating my notes, so: {q}"
        if transformation == "change_form":
            if q.endswith("?"):
                return f"Tell me {q[:1].lower()}{q[1:-1]}."
            return f"Can you {q[:1].lower()}{q[1:].rstrip('.')}?"
        return q

    @staticmethod
    def answer(query: str, memories: list[str]) -> str:
        qt = _tokens(query)
        best, best_overlap = None, 0
        for m in memories:
            overlap = len(qt & _tokens(m))
            if overlap > best_overlap:
                best, best_overlap = m, overlap
        return best if best is not None and best_overlap >= 2 else IDK

    @staticmethod
    def judge(reference: str, response: str) -> dict[str, str]:
        resp = response.casefold()
        abstains = bool(_ABSTAIN.search(response))
        if reference.startswith("(none"):
            if abstains:
                return {"label": "Correct", "reason": "abstained as required"}
            return {"label": "Hallucination", "reason": "answered where it should abstain"}
        if reference.casefold() in resp:
            return {"label": "Correct", "reason": "response contains the reference answer"}
        if abstains:
            return {"label": "Omission", "reason": "abstained although the answer is known"}
        return {"label": "Hallucination", "reason": "response does not contain the reference answer"}

    @staticmethod
    def extract(question: str, snippets: list[str]) -> dict[str, Any]:
        words = re.findall(r"[A-Za-z][A-Za-z'-]*", question)
        entity = next((w for w in words if w[0].isupper() and w.casefold() not in _QUESTION_WORDS), "")
        attribute = next((name for pat, name in _ATTRIBUTES if pat.search(question)), "")
        scope = "previous" if _PREVIOUS.search(question) else "any" if _ANY.search(question) else "current"
        if not entity or not attribute:
            return {"established": False, "entity": "", "attribute": "", "scope": "any", "answerable": False}
        answerable = any(entity.casefold() in s.casefold() for s in snippets)
        return {"established": True, "entity": entity, "attribute": attribute, "scope": scope,
                "answerable": answerable}


# -- latency and rate limits (tests/llm/test_rate_limits.py, benchmarks/bench_latency.py) ----------------------

class Slow:
    """A handler that answers as ``handler`` does after ``seconds`` (a remote model's latency); requests wait
    in parallel, as at a real endpoint. ``in_flight``/``peak`` count requests being answered at once."""

    def __init__(self, handler: Handler, seconds: float) -> None:
        self.handler, self.seconds = handler, seconds
        self.in_flight = self.peak = 0
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Any:
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(self.seconds)
            return self.handler(request)
        finally:
            with self._lock:
                self.in_flight -= 1


class RateLimited:
    """A handler that answers HTTP 429 (``Retry-After: retry_after``) to the first ``storm`` requests and then to
    every ``every``-th one (0: never), else as ``handler``: a provider's rate limiter. ``limited`` counts the 429s."""

    def __init__(self, handler: Handler, storm: int = 0, every: int = 0, retry_after: str | None = "0.05",
                 status: int = 429) -> None:
        self.handler, self.storm, self.every, self.retry_after, self.status = handler, storm, every, retry_after, status
        self.seen = self.limited = 0
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Any:
        with self._lock:
            self.seen += 1
            limit = self.seen <= self.storm or (self.every and self.seen % self.every == 0)
            self.limited += bool(limit)
        if limit:
            headers = (("Retry-After", self.retry_after),) if self.retry_after is not None else ()
            return RawReply(self.status, json.dumps({"error": {"message": "rate limit exceeded",
                                                               "type": "rate_limit_error"}}), headers=headers)
        return self.handler(request)
