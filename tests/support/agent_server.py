"""A memory product that only answers: a small agent service with planted response-level defects.

Like many chat memory products it shows nothing of its retrieval: a question goes to ``/chat`` and an answer
comes back (with the ids of the memories it cites). Memories are managed through a separate management API
(add, list, get, update, delete), which is what ufuzz validates its state mutations with. It serves hidden-
retrieval fuzzing (``ufuzz run --backend http --config examples/agent.toml``) in tests and benchmarks.

``start_agent_server(defects=...)`` runs it on 127.0.0.1 (port 0: the OS picks a free one) in a thread for a
``with`` block; ``python -m tests.support.agent_server --port N [--defects all]`` runs it in the foreground.

API (JSON in and out; the agent assigns its own ids, ``m<n>``)::

    POST   /v1/agents/{ns}/memories        {"text", "timestamp"} -> 201 {"id"}
    GET    /v1/agents/{ns}/memories        -> {"memories": [{"id", "text", "timestamp"}, ...]}
    GET    /v1/agents/{ns}/memories/{id}   -> {"id", "text", "timestamp"} | 404
    PUT    /v1/agents/{ns}/memories/{id}   {"text", "timestamp"} -> {"id"} (rewritten in place) | 404
    DELETE /v1/agents/{ns}/memories/{id}   -> 204 | 404
    POST   /v1/agents/{ns}/chat            {"message"} -> {"reply", "sources": [{"id"}]}
    POST   /v1/agents/{ns}/clone           {"target"} -> 201 (a copy of the agent's memory, same ids)
    DELETE /v1/agents/{ns}                 -> 204

**How it answers** (by rule; no model): it reads the question's *intent* (which personal fact is asked: where
someone lives, who they work for, a pet's vet … — a hand-written lexicon), the *names* it mentions
(capitalised words that are not common words) and the *time scope* (``before``/``used to`` … = the previous
value; otherwise the current one). Its memory index tags each memory with the intents its wording cues and
the names it mentions. Candidates are the memories that cue the intent and mention a name of the question;
the answer is the latest one's text (for a previous-scope question: the one before the latest), with that
memory as its source. No candidate, no intent, or a question about a name no memory mentions: "I don't
know."

**Planted defects** (``DEFECTS``; the fixed build has none). Each keeps the management API truthful — list
and get show exactly what was written — so only the answers are wrong:

* ``answers_deleted`` — DELETE removes the memory from the store but not from the chat index: the agent
  goes on answering from a deleted memory;
* ``keeps_old_value`` — PUT rewrites the stored memory but the chat index keeps the old text: after an
  update the agent answers with the old value;
* ``answers_unknown_person`` — the name check is skipped: asked about a person no memory mentions, the agent
  answers from whatever memory cues the intent (about somebody else) instead of saying it does not know.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from tests.support.loopback import serve_on_loopback

DEFECTS = ("answers_deleted", "keeps_old_value", "answers_unknown_person")
IDK = "I don't know."

# -- understanding questions and memories --------------------------------------------------------------------

# intent -> (question cues, memory cues). Memory cues include the intent's own name, so a plain "X's vet is now
# Y" note is understood too. Order matters for questions: the first intent whose cue matches wins.
_LEXICON: tuple[tuple[str, str, str], ...] = (
    ("species", r"kind of animal|species|sort of creature|what animal",
     r"adopted an? [\w ]+ called|is my \w+|brought home|turned out to be|species|my pet \w+ is an? |, in case you"),
    ("feeding_time", r"\bfed\b|feeding|mealtime|meal time",
     r"\bfed\b|\bfeed\b|feeding|dinner is at|eats at|feeding time"),
    ("vet", r"\bvet\b|veterinarian|check-?ups?", r"\bvet\b|seen by|veterinarian"),
    ("toy", r"\btoys?\b|plaything", r"loves the|favourite toy|playing with|\btoy\b"),
    ("pet_name", r"\bpets?\b", r"\bpet\b|pet name"),
    ("gym_day", r"\bgym\b|\btrain(?:s|ed)?\b|work(?:s|ed)? out", r"\bgym\b|trains on|works? out|gym day"),
    ("hobby", r"hobby|hobbies|free time|pastime", r"really into|weekends on|took up|hobby|all about"),
    ("partner", r"partner|\bdat(?:ing|ed)\b|relationship|seeing",
     r"\bdating\b|partner|together|seeing"),
    ("favourite_food", r"favou?rite food|\bdish\b|to eat",
     r"adores|favourite food|eat [\w ]+ every|happier than a plate|craves|can't get enough|favourite food"),
    ("job", r"\bjobs?\b|for a living|profession|occupation",
     r"works as|worked as|making a living|makes a living|trained as|career|\bis an? |\bjob\b(?! with)"),
    ("employer", r"work(?:s|ed)? (?:for|at)|employ|company",
     r"works at|job with|been with|employed by|switched jobs|position at|joined|company|employer"),
    ("city", r"\blive[sd]?\b|living|based in|\btown\b|\bcity\b|\bhome\b",
     r"\blive[sd]?\b|living in|moved to|relocated|lease|settled|\bcity\b"),
)
_Q_CUES = tuple((name, re.compile(q, re.I)) for name, q, _m in _LEXICON)
_M_CUES = tuple((name, re.compile(m, re.I)) for name, _q, m in _LEXICON)
_PREVIOUS = re.compile(r"\b(before|previously|used to|use to|in the past|formerly|earlier)\b", re.I)
_CAPITALISED = re.compile(r"\b([A-Z][a-z]+(?:-[A-Z][a-z]+)?)(?:'s)?\b")
#: capitalised words that are not names (sentence starts of questions and small talk)
_COMMON = frozenset("""
    what where who whom whose when which how why tell remind let give list please could can would will do does did
    is are was were has have had i i'm i'd i've my me you your we our just quick sorry hope bear this that these
    those there here the a an and or but so if in on at for with about to from by of it its update thanks
    thank hi hello hey okay ok well also still now then again yes no not any some every today yesterday
""".split())


def intent_of(question: str) -> str | None:
    return next((name for name, cue in _Q_CUES if cue.search(question)), None)


def cues_of(text: str) -> frozenset[str]:
    return frozenset(name for name, cue in _M_CUES if cue.search(text))


def names_in(question: str) -> set[str]:
    return {n for n in _CAPITALISED.findall(question) if n.lower() not in _COMMON}


def mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text, re.I) is not None


@dataclass
class Note:
    id: str
    text: str
    timestamp: str


def answer(question: str, notes: Iterable[Note], *, check_names: bool = True) -> tuple[str, list[str]]:
    """(reply, cited ids) for ``question`` from ``notes`` (see the module docstring)."""
    notes = list(notes)
    intent = intent_of(question)
    if intent is None:
        return IDK, []
    names = names_in(question)
    about = [n for n in notes if any(mentions(n.text, name) for name in names)]
    if names and not about and check_names:
        return IDK, []  # nobody the question names is in memory
    pool = about or notes  # (with the defect, a name no memory mentions leaves every memory in the pool)
    cands = sorted((n for n in pool if intent in cues_of(n.text)), key=lambda n: (n.timestamp, n.id))
    if _PREVIOUS.search(question):
        cands = cands[:-1]
    if not cands:
        return IDK, []
    pick = cands[-1]
    return pick.text, [pick.id]


# -- the service ------------------------------------------------------------------------------------------------

@dataclass
class Agent:
    """One agent's memory: the management store and the chat index (the same, but for the defects)."""

    store: dict[str, Note] = field(default_factory=dict)
    index: dict[str, Note] = field(default_factory=dict)


@dataclass
class AgentServer:
    defects: frozenset[str] = frozenset()
    host: str = "127.0.0.1"
    port: int = 0
    agents: dict[str, Agent] = field(default_factory=dict)
    next_id: int = 1
    chats: int = 0
    lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.defects) - set(DEFECTS))
        if unknown:
            raise ValueError(f"unknown defect(s) {unknown}; known: {', '.join(DEFECTS)}")
        self.defects = frozenset(self.defects)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        parts = [unquote(p) for p in urlsplit(path).path.strip("/").split("/")]
        if len(parts) < 3 or parts[:2] != ["v1", "agents"]:
            return 404, {"error": "no such route"}
        ns, rest = parts[2], parts[3:]
        with self.lock:
            if not rest and method == "DELETE":
                return (204, None) if self.agents.pop(ns, None) is not None else (404, {"error": "no agent"})
            agent = self.agents.setdefault(ns, Agent())
            if rest == ["memories"] and method == "POST":
                if not isinstance(body, dict) or not isinstance(body.get("text"), str):
                    return 400, {"error": "body needs a string 'text'"}
                note = Note(f"m{self.next_id}", body["text"], str(body.get("timestamp", "")))
                self.next_id += 1
                agent.store[note.id] = note
                agent.index[note.id] = copy.copy(note)
                return 201, {"id": note.id}
            if rest == ["memories"] and method == "GET":
                return 200, {"memories": [vars(n) for _i, n in sorted(agent.store.items())]}
            if len(rest) == 2 and rest[0] == "memories":
                return self._memory(agent, method, rest[1], body)
            if rest == ["chat"] and method == "POST":
                if not isinstance(body, dict) or not isinstance(body.get("message"), str):
                    return 400, {"error": "body needs a string 'message'"}
                self.chats += 1
                reply, cited = answer(body["message"], agent.index.values(),
                                      check_names="answers_unknown_person" not in self.defects)
                return 200, {"reply": reply, "sources": [{"id": i} for i in cited]}
            if rest == ["clone"] and method == "POST":
                target = body.get("target") if isinstance(body, dict) else None
                if not isinstance(target, str) or not target:
                    return 400, {"error": "body needs a 'target' agent"}
                if target in self.agents:
                    return 409, {"error": f"agent {target} exists"}
                self.agents[target] = copy.deepcopy(agent)
                return 201, {"agent": target}
        return 405, {"error": f"{method} not allowed on {path}"}

    def _memory(self, agent: Agent, method: str, mid: str, body: Any) -> tuple[int, Any]:
        note = agent.store.get(mid)
        if note is None:
            return 404, {"error": f"no memory {mid}"}
        if method == "GET":
            return 200, vars(note)
        if method == "PUT":
            if not isinstance(body, dict) or not isinstance(body.get("text"), str):
                return 400, {"error": "body needs a string 'text'"}
            note.text, note.timestamp = body["text"], str(body.get("timestamp", note.timestamp))
            if "keeps_old_value" not in self.defects:
                agent.index[mid] = copy.copy(note)
            return 200, {"id": mid}
        if method == "DELETE":
            del agent.store[mid]
            if "answers_deleted" not in self.defects:
                agent.index.pop(mid, None)
            return 204, None
        return 405, {"error": f"{method} not allowed on a memory"}


def _make_handler(server: AgentServer) -> type[BaseHTTPRequestHandler]:
    class _H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def _serve(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                status, payload = 400, {"error": "body is not JSON"}
            else:
                status, payload = server.handle(self.command, self.path, body)
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            if data:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815 - stdlib names

    return _H


@contextmanager
def start_agent_server(defects: Iterable[str] = ()) -> Iterator[AgentServer]:
    """Run the agent on 127.0.0.1 (a free port) for the ``with`` block; ``defects``: planted defects."""
    state = AgentServer(defects=frozenset(defects))
    with serve_on_loopback(_make_handler(state)) as port:
        state.port = port
        yield state


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="the test agent that only answers (tests/support/agent_server.py)")
    ap.add_argument("--port", type=int, default=8090)
    ap.add_argument("--defects", default="", help=f"comma-separated, or 'all': {', '.join(DEFECTS)}")
    args = ap.parse_args(argv)
    names = DEFECTS if args.defects == "all" else tuple(d for d in args.defects.split(",") if d)
    state = AgentServer(defects=frozenset(names), port=args.port)
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), _make_handler(state))
    print(f"agent on {state.base_url}, defects: {', '.join(sorted(state.defects)) or 'none (fixed build)'}",
          flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
