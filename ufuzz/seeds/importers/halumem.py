"""HaluMem users (Halu-Medium / Halu-Long) → checkpoints, seeds and references.

Source of the format: the released files ``HaluMem-medium.jsonl`` / Halu-Long of the Hugging Face dataset
``IAAR-Shanghai/HaluMem``, documented in ``README.md`` ("Dataset Structure") of GitHub ``MemTensor/HaluMem``
and read by its ``eval/eval_memos.py`` / ``eval/evaluation.py``; question types from
``scripts/stage6_1_question_generation.py``, Halu-Long's inserted sessions from
``scripts/stage6_3_final_result_long.py``. One JSON object per line: ``{uuid, persona_info ("Name: …;
Gender: …; …"), sessions [{start_time, end_time, dialogue_turn_num, dialogue [{role, content, timestamp,
dialogue_turn}], memory_points [{index, memory_content, memory_type, memory_source
(primary|secondary|interference|system), is_update ("True"/"False"), original_memories [...], timestamp
"Dec 15, 2025, 06:11:23", importance}], questions [{question, answer, evidence [{memory_content,
memory_type}], difficulty, question_type}], dialogue_token_length}]}``; Halu-Long adds filler sessions
marked ``is_generated_qa_session`` (no memory points, no questions), which are skipped (counted).

Mapping. Memories are the *memory points* (id ``s<session>:m<index>``, text = ``memory_content``) — question
evidence names memory points by content, so supporting ids are exact. ``interference`` points (the false
statements HaluMem plants in the assistant's turns, which a memory system should not store) are excluded,
counted: as stored memories they would contradict the true ones and make a reader's answer from them look
like a failure of the system under test. Questions are asked after their session, so each session with
questions gets its own checkpoint holding the memory points of that session and all earlier ones. An
evidence point with ``is_update`` supersedes its ``original_memories``: the answer is the current value and
the originals evidence a superseded value whose text the benchmark does not give (``value_type="unstated"``,
their memories ``invalidated``); for ``Dynamic Update`` questions (which ask for the latest status) an
evidence point that another evidence point supersedes is such an original too. ``Memory Boundary`` questions
(and answers saying the information is not mentioned) are abstentions. The entity is the persona's name when
the question mentions it; the attribute comes from the question (``fields``). ``update`` is offered only when
the answer is verbatim in its latest evidence point; an answer stated nowhere verbatim (``Multi-hop
Inference``, ``Generalization & Application``, ``Memory Conflict`` answers are usually written anew) is
kept for an LLM judge and counted as ``abstractive_answer``.

Not used: the ``dialogue`` (memories are the gold memory points), ``importance``, ``difficulty`` and
updates between memory points no question asks about (provenance facts need a question's entity and
attribute).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ufuzz.model import Entity, Fact, Memory
from ufuzz.seeds.importers._common import (
    UNSTATED,
    Builder,
    ImportResult,
    Pending,
    RecordError,
    answer_text,
    each_record,
    finish,
    latest_text,
    need,
    read_records,
    snippets,
    updatable,
)
from ufuzz.seeds.importers.fields import Extractor, establish_fields, mentions_word, value_type_of

_ABSTAIN = re.compile(r"\b(not mentioned|no information|not (?:been )?(?:provided|stated|specified)|unknown|"
                      r"cannot be determined|not enough information)\b", re.I)


def parse_time(raw: Any) -> datetime | None:
    if not isinstance(raw, str):
        return None
    for fmt in ("%b %d, %Y, %H:%M:%S", "%b %d, %Y %H:%M:%S", "%B %d, %Y, %H:%M:%S", "%Y-%m-%d %H:%M:%S",
                "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(raw.strip(), fmt)
        except ValueError:
            continue
    return None


def _flag(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() == "true")


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def persona_name(info: Any) -> str | None:
    if isinstance(info, dict):
        for k in ("name", "Name", "full_name"):
            if isinstance(info.get(k), str) and info[k].strip():
                return info[k].strip()
        return None
    if isinstance(info, str):
        m = re.search(r"\bname\s*[:：]\s*([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)", info, re.I)
        return m.group(1).strip() if m else None
    return None


#: the name of this format (``ufuzz seeds import --format halumem``): the module is an importer plugin
FORMAT = "halumem"


def load(path: str | Path, *, extractor: Extractor | None = None, name: str | None = None) -> ImportResult:
    path = Path(path)
    records = read_records(path, containers=("users", "data"))
    b = Builder(name=name or path.stem, source="halumem")
    each_record(path, records, "uuid", lambda i, rec: _user(b, i, rec, extractor))
    return finish(b)


def _user(b: Builder, index: int, rec: Any, extractor: Extractor | None) -> None:
    uid = str(need(rec, "uuid", (str, int)))
    sessions = need(rec, "sessions", list)
    person = persona_name(rec.get("persona_info"))
    if person is None:
        b.warnings["persona_name_missing"] += 1
    names = [person] if person else []
    memories: list[Memory] = []
    by_content: dict[str, str] = {}
    updates: dict[str, list[str]] = {}  # memory id -> ids it supersedes
    for s, sess in enumerate(sessions):
        if isinstance(sess, dict) and _flag(sess.get("is_generated_qa_session")):
            b.warnings["generated_qa_session_skipped"] += 1  # Halu-Long filler: no memory points, no questions
            continue
        points = need(sess, "memory_points", list, f"sessions[{s}]")
        start = parse_time(sess.get("start_time"))
        for p_i, mp in enumerate(points):
            mem = _memory_point(b, s, p_i, mp, start, {m.id for m in memories})
            if mem is None:
                continue
            memories.append(mem)
            if _flag(mp.get("is_update")):
                olds = []
                for o in mp.get("original_memories") or []:
                    hit = by_content.get(_norm(str(o)))
                    if hit is None:
                        b.warnings["original_memory_unmatched"] += 1
                    else:
                        olds.append(hit)
                if olds:
                    updates[mem.id] = olds
            by_content[_norm(mp["memory_content"])] = mem.id
        qs = sess.get("questions")
        if qs is None or qs == []:
            continue
        if not isinstance(qs, list):
            raise RecordError(f"field 'sessions[{s}].questions' must be list, got {type(qs).__name__}")
        pending = [p for j, q in enumerate(qs) if (p := _question(b, uid, s, j, q, memories, by_content, updates,
                                                                  names, extractor)) is not None]
        b.add_checkpoint(f"halumem-cp:{uid}:s{s}", list(memories), pending,
                         entities=[Entity(n, "person") for n in names])


def _memory_point(b: Builder, s: int, p_i: int, mp: Any, start: datetime | None, used: set[str]) -> Memory | None:
    """One memory point as a memory, or ``None`` (counted): malformed, undated, or an ``interference`` point.

    Interference points are the false statements HaluMem plants in the assistant's turns (its distractor
    memories, which a memory system should *not* store); in a checkpoint they would be stored memories that
    contradict the true ones, and a reader answering from them would be no failure of the system under test.
    """
    if not (isinstance(mp, dict) and isinstance(mp.get("memory_content"), str) and mp["memory_content"].strip()):
        b.warnings["memory_point_malformed"] += 1
        return None
    if str(mp.get("memory_source") or "").strip().lower() == "interference":
        b.warnings["interference_point_excluded"] += 1
        return None
    mid = f"s{s}:m{mp.get('index', p_i)}"
    if mid in used:
        b.warnings["memory_point_duplicate_index"] += 1
        mid = f"s{s}:p{p_i}"
    ts = parse_time(mp.get("timestamp"))
    if ts is None:
        b.warnings["timestamp_unparseable"] += 1
        ts = start
    if ts is None:
        b.warnings["memory_point_skipped_no_time"] += 1
        return None
    return Memory(id=mid, text=mp["memory_content"].strip(), timestamp=ts.isoformat(),
                  metadata={"source": "halumem", "session": s, "memory_type": str(mp.get("memory_type") or ""),
                            "memory_source": str(mp.get("memory_source") or "")})


def _question(b: Builder, uid: str, s: int, j: int, q: Any, memories: list[Memory], by_content: dict[str, str],
              updates: dict[str, list[str]], names: list[str], extractor: Extractor | None) -> Pending | None:
    if not isinstance(q, dict) or not isinstance(q.get("question"), str) or not q["question"].strip():
        b.warnings["question_malformed"] += 1
        return None
    answer = answer_text(q.get("answer"))
    abstain = q.get("question_type") == "Memory Boundary" or answer is None or bool(_ABSTAIN.search(answer or ""))
    evidence: list[str] = []
    for ev in q.get("evidence") or []:
        content = ev.get("memory_content") if isinstance(ev, dict) else ev if isinstance(ev, str) else None
        hit = by_content.get(_norm(content)) if isinstance(content, str) else None
        if hit is None:
            b.warnings["evidence_unmatched"] += 1
        elif hit not in evidence:
            evidence.append(hit)
    if not abstain and not evidence:
        b.dropped["no_evidence"] += 1
        return None
    if q.get("question_type") == "Dynamic Update" and not abstain:
        # asks for the latest status; an evidence point another evidence point supersedes is the old value
        superseded = {o for e in evidence for o in updates.get(e, []) if o in evidence}
        if superseded and len(superseded) < len(evidence):
            evidence = [e for e in evidence if e not in superseded]
    olds = [o for e in evidence for o in updates.get(e, []) if o not in evidence]
    has_history = bool(olds) and not abstain
    fields = establish_fields(q["question"], snippets(memories, evidence), extractor=extractor,
                              warnings=b.warnings, names=names, answerable=not abstain, has_history=has_history)
    if fields is None:
        b.dropped["no_fields"] += 1
        return None
    if has_history and fields.scope == "previous":
        b.dropped["previous_scope_unsupported"] += 1
        return None
    ts_of = {m.id: m.timestamp for m in memories}
    facts: list[Fact] = []
    if not abstain:
        assert answer is not None
        facts.append(Fact(fields.entity, fields.attribute, answer, tuple(evidence), True, value_type_of(answer),
                          max(ts_of[e] for e in evidence)))
        if has_history:
            facts.append(Fact(fields.entity, fields.attribute, f"[value stated in {olds[0]}]", tuple(olds), False,
                              UNSTATED, max(ts_of[o] for o in olds)))
    ok = True
    if not abstain:
        assert answer is not None
        if not mentions_word([m.text for m in memories if m.id in set(evidence)], answer):
            b.warnings["abstractive_answer"] += 1  # not stated verbatim: only an LLM judge can match it
        ok = updatable(answer, latest_text(memories, evidence))
    return Pending(qid=f"halumem:{uid}:s{s}:q{j}", text=q["question"], fields=fields,
                   answer=None if abstain else answer, supporting=tuple(evidence) if not abstain else (),
                   facts=tuple(facts), expect_invalidated=tuple(olds) if has_history else None, updatable=ok)
