"""MEME (Multi-Entity and Evolving Memory Evaluation) episodes → checkpoints, seeds and references.

Source of the format (read, not assumed):

* the released data files ``meme_filler32k.json`` / ``meme_filler128k.json`` / ``meme_nofiller.json`` of the
  Hugging Face dataset ``meme-benchmark/MEME`` (dataset card: ``dataset/README.md`` of GitHub
  ``wagmi97/MEME``): a JSON list of episodes ``{episode_id, domain, root, root_change, entities, tasks,
  dependency_edges_used [{source, target, hop, pattern}], evidence_session_indices, sessions [{session_id,
  type: evidence|filler, timestamp "2023/03/05 (Sun) 11:24", evidence_type, conversation [{role, content}],
  gold_facts [{fact_id, entity, value, fact_text, conveyed_in_turn, notes}]}], before_questions /
  after_questions {timestamp, position_after_session, questions [{task_type, question, gold_answer |
  expected_answer, entity [...], entity_values {...}, hop}]}}``; the per-episode files that
  ``code/dataset_tools/unpack_dataset.py`` writes hold one such episode each. Field use confirmed against
  the loaders that read these files (``scripts/build_sw033.mjs`` of GitHub ``SeokwonJung-Jay/meme-eval``,
  which reads ``episode_033.json``; two third-party MEME loaders in the public code index).
* the project page's walkthrough file ``src/data/sw033.json`` of ``SeokwonJung-Jay/meme-eval`` (the one
  real episode published whole): ``{episode {id, tag, domain, root, probe_before_idx, probe_after_idx, …},
  sessions [{idx, kind, timestamp, evidence_type, conversation, gold_facts}], results {system: {before
  [...], after [...]}}, snapshots, grid, taskOrder, taskTagMap}``. Its questions are the ``results``
  entries (``task_type`` in long form, ``question``, ``gold_answer``, ``entity``, ``entity_values``),
  de-duplicated over systems; ``agent_answer``/``u_pass``/``snapshots`` are the systems' outputs and are not
  read.

Mapping. MEME's "entities" are slots of the user's life or team (``package_manager``, ``team_lead``);
each becomes the attribute (``"package manager"``) of the entity ``user``. Memories are the conversation
turns of every session, filler included (id ``s<session index>:<turn index>``, text ``User: …`` /
``Assistant: …``, timestamp the session's plus the turn index in seconds). A gold fact's evidence is the turn
``conveyed_in_turn`` (0-based index into ``conversation``). Questions are asked after session
``position_after_session`` (inclusive), so each probe gets its own checkpoint (``meme-cp:<episode>:before``
/ ``:after``) holding the sessions up to it and the facts known then. The history is replayed in order:

* a later value for a slot supersedes the earlier one (Tracking: the old value is an invalid fact, a stale
  answer);
* a turn restating the current value and asking to delete/forget it (Deletion) invalidates the value
  without successor; the deletion turn is evidence of the deleted value too (a delete request for any other
  value changes nothing, counted);
* a conditional "if the team lead changes, X will be …" (``notes`` "Cascade-D: future value
  pre-declaration") is not a fact until its upstream slot changes; then it becomes the value (evidence:
  the declaration and the change turn) — Cascade;
* when an upstream slot changes, a dependent slot (``dependency_edges_used``; the walkthrough file has none,
  so there the dependents are the slots its Cascade/Absence questions ask about, with the episode's
  ``root`` upstream) with no pre-declared value loses its value (Absence: the reference abstains and the
  old value is a stale answer); dependents of dependents follow.

A question's reference must agree with that replay (its gold answer is the slot's value, or it is a
Deletion/Absence probe and the slot has none) or it is dropped (``reference_mismatch``). Not imported,
counted in ``dropped``: Aggregation (``multi_fact_question``: the answer combines several slots) and
Tracking (``history_list_question``: the answer is the ordered list of all values) — their slots' histories
still become provenance, so the update/stale checks of other seeds use them. Descriptors carry the
dependency edges under the additive keys ``replacement_targets["cascade"]`` (upstream slots) and
``["cascade_dependents"]``; ``update`` is offered only when the value is verbatim in its evidence turn.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ufuzz.model import Entity, Fact, Memory, Provenance, QueryFields
from ufuzz.seeds.importers._common import (
    Builder,
    ImportResult,
    Pending,
    RecordError,
    answer_text,
    each_record,
    finish,
    latest_text,
    need,
    parse_timestamp,
    read_records,
    updatable,
)
from ufuzz.seeds.importers.fields import Extractor, value_type_of

#: The entity every MEME slot belongs to (the user, speaking of their life or their team).
SUBJECT = "user"
PHASES = ("before", "after")

_DELETE = re.compile(r"\b(?:delete|forget|erase|remove)\b[^.?!]{0,40}\b(?:memory|that|this|it)\b", re.I)
_CONDITIONAL_NOTE = re.compile(r"pre-?declar|future value|conditional", re.I)


def task_tag(raw: Any) -> str | None:
    """The six MEME task tags from the short (``Cas``) or long (``Cascade-D (1-hop)``) spelling."""
    t = str(raw or "").strip().lower()
    if t.startswith("cascade-u") or t in ("abs", "absence"):
        return "Abs"
    if t.startswith("cascade") or t == "cas":
        return "Cas"
    if t.startswith("exact") or t == "er":
        return "ER"
    if t.startswith("multi-hop") or t in ("agg", "aggregation"):
        return "Agg"
    if t.startswith("multiple-update") or t in ("tr", "tracking"):
        return "Tr"
    if t.startswith("del"):
        return "Del"
    return None


def slot_label(key: str) -> str:
    return " ".join(str(key).replace("_", " ").split()).lower()


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("’", "'").split()).strip(" .\"'")


#: the name of this format (``ufuzz seeds import --format meme``): the module is an importer plugin
FORMAT = "meme"


def load(path: str | Path, *, extractor: Extractor | None = None, name: str | None = None) -> ImportResult:
    path = Path(path)
    records = read_records(path, containers=("episodes", "data"))
    b = Builder(name=name or path.stem, source="meme")
    each_record(path, records, "episode_id", lambda i, rec: _import_episode(b, rec))
    return finish(b)


# -- normalising the two published layouts ---------------------------------------------------------------
@dataclass
class _Probe:
    phase: str
    position: int | None
    questions: list[Any]


@dataclass
class _Episode:
    eid: str
    root: str | None
    sessions: list[Any]
    probes: list[_Probe]
    edges: list[tuple[str, str]] | None  # None: the file does not give them


def _episode(rec: Any, b: Builder) -> _Episode:
    if not isinstance(rec, dict):
        raise RecordError(f"an episode must be an object, got {type(rec).__name__}")
    if isinstance(rec.get("episode"), dict):
        return _walkthrough(rec, b)
    eid = str(need(rec, "episode_id", (str, int)))
    sessions = need(rec, "sessions", list)
    probes = []
    for phase in PHASES:
        block = rec.get(f"{phase}_questions")
        if block is None:
            continue
        if not isinstance(block, dict):
            raise RecordError(f"field '{phase}_questions' must be object, got {type(block).__name__}")
        qs = need(block, "questions", list, f"{phase}_questions")
        pos = block.get("position_after_session")
        probes.append(_Probe(phase, pos if isinstance(pos, int) and not isinstance(pos, bool) else None, qs))
    edges = None
    raw_edges = rec.get("dependency_edges_used")
    if raw_edges is not None:
        if not isinstance(raw_edges, list):
            raise RecordError(f"field 'dependency_edges_used' must be list, got {type(raw_edges).__name__}")
        edges = []
        for e in raw_edges:
            if isinstance(e, dict) and isinstance(e.get("source"), str) and isinstance(e.get("target"), str):
                edges.append((e["source"], e["target"]))
            else:
                b.warnings["dependency_edge_malformed"] += 1
    root = rec.get("root") if isinstance(rec.get("root"), str) else None
    return _Episode(eid, root, sessions, probes, edges)


def _walkthrough(rec: dict[str, Any], b: Builder) -> _Episode:
    ep = rec["episode"]
    eid = ep.get("tag") if isinstance(ep.get("tag"), str) and ep["tag"].strip() else ep.get("id")
    if not isinstance(eid, (str, int)) or isinstance(eid, bool):
        raise RecordError("missing required field 'episode.tag' (or 'episode.id')")
    sessions = need(rec, "sessions", list)
    results = need(rec, "results", dict)
    seen: set[tuple[str, str]] = set()
    questions: dict[str, list[Any]] = {p: [] for p in PHASES}
    for system in sorted(results):
        per = results[system]
        if not isinstance(per, dict):
            raise RecordError(f"field 'results.{system}' must be object, got {type(per).__name__}")
        for phase in PHASES:
            items = per.get(phase) or []
            if not isinstance(items, list):
                raise RecordError(f"field 'results.{system}.{phase}' must be list, got {type(items).__name__}")
            for q in items:
                key = (phase, str(q.get("question")) if isinstance(q, dict) else repr(q))
                if key not in seen:
                    seen.add(key)
                    questions[phase].append(q)
    probes = []
    for phase in PHASES:
        pos = ep.get(f"probe_{phase}_idx")
        if questions[phase]:
            probes.append(_Probe(phase, pos if isinstance(pos, int) and not isinstance(pos, bool) else None,
                                 questions[phase]))
    root = ep.get("root") if isinstance(ep.get("root"), str) else None
    return _Episode(str(eid), root, sessions, probes, None)


# -- memories and gold facts --------------------------------------------------------------------------------
@dataclass
class _Event:
    session: int
    slot: str
    value: str
    memory_id: str
    timestamp: str
    fact_text: str
    notes: str

    @property
    def conditional(self) -> bool:
        return bool(_CONDITIONAL_NOTE.search(self.notes)) or bool(re.match(r"\s*if\b", self.fact_text, re.I))

    @property
    def deletion(self) -> bool:
        return bool(_DELETE.search(self.fact_text)) or "delet" in self.notes.lower()


def _session_memories(b: Builder, eid: str, sessions: list[Any]) -> list[list[Memory | None]]:
    """Per session, its turns as memories (``None`` for a skipped turn, so turn indices stay aligned)."""
    out: list[list[Memory | None]] = []
    last: datetime | None = None
    for i, sess in enumerate(sessions):
        conv = need(sess, "conversation", list, f"sessions[{i}]")
        ts = parse_timestamp(sess.get("timestamp"))
        if ts is None:
            b.warnings["session_timestamp_unparseable"] += 1
            ts = (last + timedelta(hours=1)) if last is not None else datetime(2000, 1, 1)
        last = ts
        sid = sess.get("session_id")
        kind = sess.get("type") or sess.get("kind") or ""
        turns: list[Memory | None] = []
        for t, turn in enumerate(conv):
            content = turn.get("content") if isinstance(turn, dict) else None
            if not isinstance(content, str) or not content.strip():
                b.warnings["turn_malformed" if not isinstance(content, str) else "turn_empty"] += 1
                turns.append(None)
                continue
            role = str(turn.get("role") or "user").strip().capitalize()
            meta = {"source": "meme", "episode": eid, "session": i, "session_type": str(kind)}
            if sid is not None:
                meta["session_id"] = str(sid)
            turns.append(Memory(id=f"s{i}:{t}", text=f"{role}: {content}",
                                timestamp=(ts + timedelta(seconds=t)).isoformat(), metadata=meta))
        out.append(turns)
    return out


def _events(b: Builder, sessions: list[Any], turns: list[list[Memory | None]]) -> list[_Event]:
    events: list[_Event] = []
    for i, sess in enumerate(sessions):
        facts = sess.get("gold_facts") or []
        if not isinstance(facts, list):
            raise RecordError(f"field 'sessions[{i}].gold_facts' must be list, got {type(facts).__name__}")
        for g in facts:
            value = answer_text(g.get("value")) if isinstance(g, dict) else None
            if value is None or not isinstance(g.get("entity"), str) or not g["entity"].strip():
                b.warnings["gold_fact_malformed"] += 1
                continue
            mem = _conveying_turn(g, value, turns[i], b)
            if mem is None:
                b.warnings["gold_fact_unknown_turn"] += 1
                continue
            events.append(_Event(i, g["entity"].strip(), value, mem.id, mem.timestamp,
                                 str(g.get("fact_text") or g.get("original_seed") or ""), str(g.get("notes") or "")))
    return events


def _conveying_turn(g: dict[str, Any], value: str, turns: list[Memory | None], b: Builder) -> Memory | None:
    """The turn ``conveyed_in_turn`` names; when that index is missing or out of range, the one user turn of
    the session stating the value (repaired, counted) — never a guess between several."""
    t = g.get("conveyed_in_turn")
    if isinstance(t, int) and not isinstance(t, bool) and 0 <= t < len(turns) and turns[t] is not None:
        return turns[t]
    hits = [m for m in turns if m is not None and m.text.startswith("User: ") and value.lower() in m.text.lower()]
    if len(hits) == 1:
        b.warnings["gold_fact_turn_repaired"] += 1
        return hits[0]
    return None


# -- replaying the history ----------------------------------------------------------------------------------
@dataclass
class _Value:
    value: str
    evidence: list[str]
    since: str
    valid: bool = True


@dataclass
class _History:
    dependents: dict[str, set[str]]
    warnings: Counter[str]
    slots: dict[str, list[_Value]] = field(default_factory=dict)
    pending: dict[str, tuple[str, list[str]]] = field(default_factory=dict)

    def current(self, slot: str) -> _Value | None:
        vals = [v for v in self.slots.get(slot, []) if v.valid]
        return vals[-1] if vals else None

    def apply(self, ev: _Event) -> None:
        if ev.conditional:
            self.pending[ev.slot] = (ev.value, [ev.memory_id])
            return
        cur = self.current(ev.slot)
        same = cur is not None and _norm(cur.value) == _norm(ev.value)
        if ev.deletion:  # a delete request is never a new value: it removes the current one or nothing
            if same:
                assert cur is not None
                cur.evidence.append(ev.memory_id)
                cur.valid = False
            else:
                self.warnings["deletion_of_unknown_value"] += 1
            return
        if same:
            assert cur is not None
            cur.evidence.append(ev.memory_id)
            return
        if cur is not None:
            cur.valid = False
        self.slots.setdefault(ev.slot, []).append(_Value(ev.value, [ev.memory_id], ev.timestamp))
        if cur is not None:
            self._cascade(ev.slot, ev.memory_id, ev.timestamp, {ev.slot})

    def _cascade(self, slot: str, memory_id: str, ts: str, seen: set[str]) -> None:
        for dep in sorted(self.dependents.get(slot, ())):
            if dep in seen:
                continue
            seen.add(dep)
            cur = self.current(dep)
            if dep in self.pending:
                value, evidence = self.pending.pop(dep)
                if cur is not None:
                    cur.valid = False
                self.slots.setdefault(dep, []).append(_Value(value, [*evidence, memory_id], ts))
            elif cur is not None:
                cur.valid = False  # Absence: the old value can no longer be trusted, no successor known
            else:
                continue
            self._cascade(dep, memory_id, ts, seen)

    def facts(self) -> list[Fact]:
        out = []
        for slot, vals in self.slots.items():
            for v in vals:
                out.append(Fact(SUBJECT, slot_label(slot), v.value, tuple(dict.fromkeys(v.evidence)), v.valid,
                                value_type_of(v.value), v.since))
        return out


def _dependents(ep: _Episode, b: Builder) -> dict[str, set[str]]:
    deps: dict[str, set[str]] = {}
    if ep.edges is not None:
        for src, dst in ep.edges:
            deps.setdefault(src, set()).add(dst)
        return deps
    cascading = {e for p in ep.probes for q in p.questions if isinstance(q, dict)
                 and task_tag(q.get("task_type")) in ("Cas", "Abs") for e in _question_slots(q)}
    root = ep.root
    if cascading and root is None:
        b.warnings["cascade_without_dependencies"] += 1
    elif cascading and root is not None:
        deps[root] = cascading - {root}
    return deps


def _question_slots(q: dict[str, Any]) -> list[str]:
    ents = q.get("entity")
    if isinstance(ents, str):
        ents = [ents]
    if not isinstance(ents, list) or not ents:
        ents = list(q["entity_values"]) if isinstance(q.get("entity_values"), dict) else []
    return [e for e in ents if isinstance(e, str) and e.strip()]


# -- one episode ----------------------------------------------------------------------------------------------
def _import_episode(b: Builder, rec: Any) -> None:
    ep = _episode(rec, b)
    turns = _session_memories(b, ep.eid, ep.sessions)
    events = _events(b, ep.sessions, turns)
    dependents = _dependents(ep, b)
    upstream: dict[str, set[str]] = {}
    for src, dsts in dependents.items():
        for d in dsts:
            upstream.setdefault(d, set()).add(src)
    if not ep.probes:
        b.warnings["episode_without_questions"] += 1
    for probe in ep.probes:
        last = len(ep.sessions) - 1
        pos = probe.position
        if pos is None:
            if probe.phase == "before":
                b.warnings["probe_position_missing"] += 1
                b.dropped["probe_position_missing"] += len(probe.questions)
                continue
            pos = last
        if not 0 <= pos <= last:
            raise RecordError(f"field '{probe.phase}_questions.position_after_session' is {pos}, but the episode "
                              f"has sessions 0..{last}")
        memories = [m for sess in turns[:pos + 1] for m in sess if m is not None]
        # replay quirks are counted once, on the replay that covers the most sessions
        hist = _History(dependents, b.warnings if pos == max(_positions(ep)) else Counter())
        for ev in events:
            if ev.session <= pos:
                hist.apply(ev)
        facts = hist.facts()
        prov = Provenance(facts=tuple(facts), entities=(), memory_ids=frozenset(m.id for m in memories))
        pending = [p for j, q in enumerate(probe.questions)
                   if (p := _question(b, ep, probe.phase, j, q, prov, memories, dependents, upstream)) is not None]
        b.add_checkpoint(f"meme-cp:{ep.eid}:{probe.phase}", memories, pending,
                         entities=[Entity(SUBJECT, SUBJECT)], base_facts=facts)


def _positions(ep: _Episode) -> list[int]:
    """Where the probes that get a checkpoint are asked (a ``before`` probe without position gets none)."""
    last = len(ep.sessions) - 1
    return [last if p.position is None else p.position for p in ep.probes
            if p.position is not None or p.phase != "before"] or [last]


def _question(b: Builder, ep: _Episode, phase: str, j: int, q: Any, prov: Provenance, memories: list[Memory],
              dependents: dict[str, set[str]], upstream: dict[str, set[str]]) -> Pending | None:
    if not isinstance(q, dict) or not isinstance(q.get("question"), str) or not q["question"].strip():
        b.warnings["question_malformed"] += 1
        return None
    tag = task_tag(q.get("task_type"))
    if tag is None:
        b.dropped["unknown_task_type"] += 1
        return None
    if tag == "Agg":
        b.dropped["multi_fact_question"] += 1
        return None
    if tag == "Tr":
        b.dropped["history_list_question"] += 1
        return None
    slots = _question_slots(q)
    if len(slots) != 1:
        b.dropped["multi_fact_question" if slots else "no_entity"] += 1
        return None
    slot = slots[0]
    attr = slot_label(slot)
    gold = answer_text(q.get("gold_answer") if q.get("gold_answer") is not None else q.get("expected_answer"))
    active = prov.active(SUBJECT, attr)
    if active is not None and gold is not None and _norm(gold) == _norm(active.value):
        answer: str | None = active.value
    elif active is None and tag in ("Del", "Abs") and prov.facts_for(SUBJECT, attr):
        answer = None  # deleted, or no longer trustworthy after an upstream change
    else:
        b.dropped["reference_mismatch"] += 1
        return None
    fields = QueryFields(SUBJECT, attr, "current", answer is not None)
    ref = prov.reference_for(f"meme:{ep.eid}:{phase}:{j}", fields)
    extra = {"cascade": tuple(sorted(f"{SUBJECT}/{slot_label(s)}" for s in upstream.get(slot, ()))),
             "cascade_dependents": tuple(sorted(f"{SUBJECT}/{slot_label(s)}" for s in dependents.get(slot, ())))}
    ok = True
    if answer is not None and active is not None:
        ok = updatable(answer, latest_text(memories, active.evidence))
    return Pending(qid=f"meme:{ep.eid}:{phase}:{j}", text=q["question"].strip(), fields=fields, answer=answer,
                   supporting=ref.supporting if answer is not None else (), extra_targets=extra, updatable=ok)
