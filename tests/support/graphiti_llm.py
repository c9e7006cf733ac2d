"""A deterministic rule-based stand-in for the LLM behind Graphiti's ``add_episode`` (graphiti-core 0.31.2).

Served through the real OpenAI-compatible server of ``tests/llm_server.py``::

    responder = GraphitiResponder()
    with start_llm_server(responder, model="graphiti-rules") as srv:
        GraphitiBackend(workdir, {"write_mode": "episode", "llm_base_url": srv.base_url,
                                  "llm_model": "graphiti-rules"})

Graphiti's ``OpenAIGenericClient`` (``structured_output_mode="json_schema"``) sends every prompt with a
``response_format`` of type ``json_schema`` whose ``name`` is the pydantic response model; the responder
dispatches on that name and answers with JSON valid for the schema it was sent (checked here by a small
JSON-schema validator before the reply leaves). The prompts ``add_episode`` and ``remove_episode`` send, with
their response models (``graphiti_core/utils/maintenance/node_operations.py`` and ``edge_operations.py``):

``ExtractedEntities``  (prompts/extract_nodes.py ``extract_message``/``extract_text``)
    the endpoints of each sentence's triple plus every other proper name, once each, type id 0 (Entity).
``NodeResolutions``    (prompts/dedupe_nodes.py ``nodes``; only when Graphiti's own exact/fuzzy name match
    left an entity unresolved) an entity is a duplicate of the existing entity with the same name
    (case-insensitive), else ``-1``.
``ExtractedEdges``     (prompts/extract_edges.py ``edge``) one edge per sentence between its subject and
    object (both must be in the prompt's ENTITIES), ``fact`` = the sentence, ``valid_at`` = REFERENCE_TIME.
``EdgeDuplicate``      (prompts/dedupe_edges.py ``resolve_edge``; only when the graph has candidate edges) a
    duplicate is an existing fact with the same (subject, relation, object); a fact is *contradicted* only
    when it has the same subject and relation and a different object (``Gunnar lives in Kelmarsh.`` vs
    ``Gunnar lives in Brask.``) and, for a first-person subject, the new fact says it is a change (``now``,
    ``moved``, ``instead``...: ``I owe Xenia a present`` does not contradict ``I owe Zainab a present``);
    ``RELATES_TO`` (no predicate words) never contradicts. Nothing else is ever invalidated (on the shipped
    default suite this fires on no pair of seed memories: their value histories are worded differently).
``EdgeTimestamps``     (prompts/extract_edges.py ``extract_timestamps``) ``valid_at`` = REFERENCE TIME.
``SummarizedEntities`` (``extract_summaries_batch``, ``extract_entity_summaries_from_episodes``) the
    existing summary plus the sentences that mention the entity.

Sentence rules (ufuzz memories are short sentences): proper names are runs of capitalised words (a leading
``My``/``The``/``Update``... is not a name; ``Lollop's`` is ``Lollop``); the *subject* is the first proper
name, or ``User`` when the sentence starts in the first person (``I``/``We`` before any name; a possessive
``My sister Lena`` keeps ``Lena``); the *object* is the last other proper name, else the last one or two
words after the final function word (``as a florist`` -> ``florist``), trailing time words dropped; the
*relation* is the content words between the two, in SCREAMING_SNAKE_CASE (``LIVES``), ``RELATES_TO`` when
there are none. A sentence without an object yields entities but no edge.

This stands in for a language model only; graphiti-core and Kuzu are the real libraries. Any prompt it does
not know, or a reply that would not fit its schema, is answered with HTTP 400 (not retried by graphiti or
the openai client) and recorded in ``failures`` so a test can assert there were none.
"""

from __future__ import annotations

import ast
import json
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from tests.support.llm_server import RawReply

USER = "User"
_TITLE = r"(?:Dr|Mr|Mrs|Ms|Prof)\."
_NAME = re.compile(rf"(?:{_TITLE}\s+)?[A-Z][\w'’-]*(?:\s+(?:{_TITLE}\s+)?[A-Z][\w'’-]*)*")
#: capitalised words that start a sentence without being (part of) a name
_LEAD = {"my", "i", "we", "our", "the", "there", "nothing", "update", "note", "a", "an", "his", "her",
         "their", "this", "that", "yesterday", "today", "sorry", "so", "also", "and", "but", "it", "i'm",
         "i’m", "i've", "i'd", "i'll", "we're", "we've", "these", "those", "feeling"}
#: clock times are values too ("fed at 10:45 am")
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?:\s*(?:am|pm)\b)?", re.I)
_FIRST_PERSON = re.compile(r"\b(I|we|me|us)\b", re.I)
_POSSESSIVE = re.compile(r"\b(my|our)\b", re.I)
_FUNC = {"a", "an", "the", "as", "is", "are", "was", "were", "in", "at", "on", "to", "with", "by", "of",
         "about", "for", "from", "up", "into", "called", "named", "after", "than", "off", "who", "that",
         "and", "it", "its", "has", "have", "had", "be", "been", "my", "our", "his", "her", "their"}
_TRAILING = {"ago", "again", "while", "years", "year", "months", "month", "weeks", "week", "now", "today",
             "yesterday", "recently", "lately", "night", "morning", "evening", "spring", "summer", "autumn",
             "winter", "last", "this", "a", "the", "for", "on", "at", "in", "too", "also", "sharp", "instead"}
_NOT_RELATION = _FUNC | {"now", "just", "still", "currently", "usually", "really", "'s", "s", "never",
                         "always", "which", "where", "i", "we", "me", "us", "m", "re", "ve", "d", "ll"}
_SENTENCES = re.compile(r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bProf\.)(?<=[.!?])\s+(?=\S)")
#: words that mark a first-person fact as a change ("I now feed Lumo at 9:00 am")
_CHANGE = re.compile(r"\b(now|update|updated|moved|no longer|instead|switched|changed|anymore)\b", re.I)
_WORD = re.compile(r"[\w:'’-]+")


def _norm(name: str) -> str:
    return " ".join(name.casefold().split())


@dataclass(frozen=True)
class Span:
    name: str
    start: int
    end: int


@dataclass(frozen=True)
class Triple:
    subject: str
    relation: str
    object: str
    sentence: str


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCES.split(text.strip()) if s.strip()]


def proper_names(sentence: str) -> list[Span]:
    out: list[Span] = []
    for m in _NAME.finditer(sentence):
        words = m.group(0).split()
        start = m.start()
        while words and words[0].casefold().rstrip(":,") in _LEAD:
            start += len(words[0]) + 1
            words = words[1:]
            while start < m.end() and sentence[start] == " ":
                start += 1
        if not words:
            continue
        name = re.sub(r"['’]s$", "", " ".join(words)).rstrip(":,")
        if name and _norm(name) not in _LEAD:
            out.append(Span(name, start, start + len(name)))
    return out


def _tail_phrase(segment: str) -> str | None:
    """The last run of non-function words (at most its last two words), trailing time words dropped."""
    words = [w.strip("'’") for w in _WORD.findall(segment)]
    while words and words[-1].casefold() in _TRAILING:
        words.pop()
    run: list[str] = []
    for w in reversed(words):
        if w.casefold() in _FUNC:
            if run:
                break
            continue
        run.insert(0, w)
    return " ".join(run[-2:]) if run else None


def triple(sentence: str) -> Triple | None:
    names = proper_names(sentence)
    values = sorted(names + [Span(m.group(0), m.start(), m.end()) for m in _CLOCK.finditer(sentence)],
                    key=lambda n: n.start)
    fp = _FIRST_PERSON.search(sentence)
    if fp and (not names or fp.start() < names[0].start):
        subject = Span(USER, fp.start(), fp.end())
    elif names:
        subject = names[0]
    elif _POSSESSIVE.search(sentence):
        p = _POSSESSIVE.search(sentence)
        subject = Span(USER, p.start(), p.end())
    else:
        return None
    later = [n for n in values if n.start >= subject.end and _norm(n.name) != _norm(subject.name)]
    if later:
        obj = later[-1]
        between = sentence[subject.end:obj.start]
    else:
        body = sentence[subject.end:].rstrip(".!? ")
        phrase = _tail_phrase(body)
        if phrase is None or _norm(phrase) == _norm(subject.name):
            phrase = _tail_phrase(sentence[:subject.start].rstrip())
            between = ""
        else:
            between = body[:body.rfind(phrase)] if phrase in body else body
        if phrase is None or _norm(phrase) == _norm(subject.name):
            return None
        obj = Span(phrase, -1, -1)
    words = [w.casefold().strip("'’") for w in _WORD.findall(between)]
    rel = [w for w in words if w and w not in _NOT_RELATION and not w.startswith("'")][:3]
    relation = "_".join(re.sub(r"\W+", "", w).upper() for w in rel if re.sub(r"\W+", "", w)) or "RELATES_TO"
    return Triple(subject.name, relation, obj.name, sentence)


def triples(text: str) -> list[Triple]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for s in sentences(text):
        t = triple(s)
        if t is None:
            continue
        key = (_norm(t.subject), t.relation, _norm(t.object))
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def entities(text: str) -> list[str]:
    """Triple endpoints first, then every other proper name; each once (case-insensitive)."""
    names: list[str] = []
    for t in triples(text):
        names += [t.subject, t.object]
    for s in sentences(text):
        names += [n.name for n in proper_names(s)] + _CLOCK.findall(s)
    out: list[str] = []
    seen: set[str] = set()
    for n in names:
        if _norm(n) not in seen:
            seen.add(_norm(n))
            out.append(n)
    return out


def _mentions(sentence: str, name: str) -> bool:
    if name == USER:
        return bool(_FIRST_PERSON.search(sentence) or _POSSESSIVE.search(sentence))
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", sentence, re.I) is not None


# -- prompt parsing ---------------------------------------------------------------------------------------

def section(text: str, tag: str) -> str | None:
    m = re.search(rf"<{re.escape(tag)}>\s*\n(.*?)\n\s*</{re.escape(tag)}>", text, re.S)
    return m.group(1).strip() if m else None


def json_section(text: str, tag: str) -> Any:
    body = section(text, tag)
    if body is None:
        raise ValueError(f"prompt has no <{tag}> section")
    return json.loads(body)


def _message_texts(text: str, tag: str) -> list[str]:
    """The episode contents in a <MESSAGES>/<EPISODES> section (a JSON list of previous episodes, then the
    current content as a JSON string)."""
    body = section(text, tag)
    if body is None:
        raise ValueError(f"prompt has no <{tag}> section")
    out: list[str] = []
    for line in body.splitlines():
        line = line.strip()
        if not line:
            continue
        v = json.loads(line)
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            out += [x["content"] for x in v if isinstance(x, dict) and x.get("content")]
    return out


def _iso_z(ts: str) -> str:
    ts = ts.split("#", 1)[0].strip()
    dt = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- a small JSON-schema check (the subset pydantic's model_json_schema emits) ------------------------------

def schema_errors(value: Any, schema: dict[str, Any], defs: dict[str, Any], path: str = "$") -> list[str]:
    if "$ref" in schema:
        return schema_errors(value, defs[schema["$ref"].rsplit("/", 1)[-1]], defs, path)
    if "anyOf" in schema:
        options = [schema_errors(value, s, defs, path) for s in schema["anyOf"]]
        return [] if any(not o for o in options) else [f"{path}: matches no anyOf branch"]
    t = schema.get("type")
    checks: dict[str, Callable[[Any], bool]] = {
        "object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str), "null": lambda v: v is None,
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool)}
    if t is not None and not checks[t](value):
        return [f"{path}: expected {t}, got {type(value).__name__}"]
    errs: list[str] = []
    if t == "object":
        props = schema.get("properties", {})
        errs += [f"{path}: missing {k!r}" for k in schema.get("required", []) if k not in value]
        for k, v in value.items():
            if k in props:
                errs += schema_errors(v, props[k], defs, f"{path}.{k}")
            elif schema.get("additionalProperties") is False:
                errs.append(f"{path}: unexpected {k!r}")
    elif t == "array" and "items" in schema:
        for i, v in enumerate(value):
            errs += schema_errors(v, schema["items"], defs, f"{path}[{i}]")
    return errs


# -- the responder ----------------------------------------------------------------------------------------

#: the response models of the prompts add_episode and remove_episode send (graphiti-core 0.31.2)
MODELS = ("ExtractedEntities", "NodeResolutions", "ExtractedEdges", "EdgeDuplicate", "EdgeTimestamps",
          "SummarizedEntities")


def _schema_name(request: dict[str, Any]) -> str | None:
    fmt = request.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name") if fmt.get("type") == "json_schema" else None


def handles(request: dict[str, Any]) -> bool:
    """Whether ``request`` is one of Graphiti's structured prompts (its json_schema names a Graphiti model)."""
    return _schema_name(request) in MODELS


class GraphitiResponder:
    """Answers graphiti-core's structured prompts by rule; counts them by response model."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.failures: list[str] = []
        self.contradictions: list[tuple[str, str]] = []  # (new fact, contradicted fact)
        self._handlers: dict[str, Callable[[str], dict[str, Any]]] = {
            "ExtractedEntities": self.extract_entities,
            "NodeResolutions": self.dedupe_nodes,
            "ExtractedEdges": self.extract_edges,
            "EdgeDuplicate": self.dedupe_edge,
            "EdgeTimestamps": self.timestamps,
            "SummarizedEntities": self.summaries,
        }

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()
            self.failures.clear()
            self.contradictions.clear()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any] | RawReply:
        fmt = request.get("response_format") or {}
        spec = fmt.get("json_schema") or {}
        name = _schema_name(request)
        user = "\n".join(m["content"] for m in request["messages"] if m.get("role") == "user")
        handler = self._handlers.get(name or "")
        try:
            if handler is None:
                raise ValueError(f"no rule for response_format {fmt.get('type')!r} {name!r}")
            out = handler(user)
            schema = spec.get("schema") or {}
            errs = schema_errors(out, schema, schema.get("$defs", {}))
            if errs:
                raise ValueError(f"reply does not fit the {name} schema: {errs[:3]}")
        except Exception as exc:  # noqa: BLE001 - reported to the test, answered with a 400
            with self.lock:
                self.failures.append(f"{name}: {type(exc).__name__}: {exc}")
            return RawReply(400, json.dumps({"error": {"message": f"rule responder: {exc}",
                                                       "type": "invalid_request_error"}}))
        with self.lock:
            self.calls[name or ""] += 1
        return out

    # -- one method per response model -------------------------------------------------------------------
    @staticmethod
    def extract_entities(user: str) -> dict[str, Any]:
        content = next((c for c in (section(user, t) for t in ("CURRENT MESSAGE", "TEXT", "JSON"))
                        if c is not None), None)
        if content is None:
            raise ValueError("entity prompt without CURRENT MESSAGE/TEXT/JSON")
        return {"extracted_entities": [{"name": n, "entity_type_id": 0, "episode_indices": [0]}
                                       for n in entities(content)]}

    @staticmethod
    def dedupe_nodes(user: str) -> dict[str, Any]:
        new = json_section(user, "ENTITIES")
        existing = json_section(user, "EXISTING ENTITIES")
        out = []
        for e in new:
            match = next((c["candidate_id"] for c in existing if _norm(c["name"]) == _norm(e["name"])), -1)
            out.append({"id": e["id"], "name": e["name"], "duplicate_candidate_id": match})
        return {"entity_resolutions": out}

    @staticmethod
    def extract_edges(user: str) -> dict[str, Any]:
        content = section(user, "CURRENT_MESSAGE")
        ref = section(user, "REFERENCE_TIME")
        if content is None or ref is None:
            raise ValueError("edge prompt without CURRENT_MESSAGE/REFERENCE_TIME")
        listed = {_norm(e["name"]): e["name"] for e in json_section(user, "ENTITIES")}
        valid_at = _iso_z(ref)
        edges = []
        for t in triples(content):
            src, dst = listed.get(_norm(t.subject)), listed.get(_norm(t.object))
            if src is None or dst is None or src == dst:
                continue
            edges.append({"source_entity_name": src, "target_entity_name": dst, "relation_type": t.relation,
                          "fact": t.sentence, "valid_at": valid_at, "invalid_at": None, "episode_indices": [0]})
        return {"edges": edges}

    def dedupe_edge(self, user: str) -> dict[str, Any]:
        new_fact = section(user, "NEW FACT")
        if new_fact is None:
            raise ValueError("edge dedupe prompt without NEW FACT")
        # these two lists are interpolated as Python reprs, not JSON (prompts/dedupe_edges.py resolve_edge)
        existing = ast.literal_eval(section(user, "EXISTING FACTS") or "[]")
        candidates = ast.literal_eval(section(user, "FACT INVALIDATION CANDIDATES") or "[]")
        new = triple(new_fact)
        duplicates, contradicted = [], []
        if new is not None:
            for item in existing + candidates:
                old = triple(item["fact"])
                if old is None or _norm(old.subject) != _norm(new.subject) or old.relation != new.relation:
                    continue
                if _norm(old.object) == _norm(new.object):
                    if item in existing:
                        duplicates.append(item["idx"])
                elif new.relation != "RELATES_TO" and (new.subject != USER or _CHANGE.search(new_fact)):
                    contradicted.append(item["idx"])
                    with self.lock:
                        self.contradictions.append((new_fact, item["fact"]))
        return {"duplicate_facts": duplicates, "contradicted_facts": contradicted}

    @staticmethod
    def timestamps(user: str) -> dict[str, Any]:
        ref = section(user, "REFERENCE TIME")
        if ref is None:
            raise ValueError("timestamp prompt without REFERENCE TIME")
        return {"valid_at": _iso_z(ref), "invalid_at": None}

    @staticmethod
    def summaries(user: str) -> dict[str, Any]:
        tag = "EPISODES" if section(user, "EPISODES") is not None else "MESSAGES"
        texts = _message_texts(user, tag)
        said = [s for t in texts for s in sentences(re.sub(r"^\[Episode \d+\].*$", "", t, flags=re.M))]
        out = []
        for e in json_section(user, "ENTITIES"):
            old = (e.get("summary") or "").strip()
            new = [s for s in dict.fromkeys(said) if _mentions(s, e["name"]) and s not in old]
            summary = " ".join([old] * bool(old) + new)
            if summary:
                out.append({"name": e["name"], "summary": summary[:1000]})
        return {"summaries": out}


__all__ = ["MODELS", "GraphitiResponder", "Triple", "handles", "entities", "schema_errors", "sentences", "triple", "triples"]
