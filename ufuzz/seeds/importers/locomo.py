"""LoCoMo (``locomo10.json``): one checkpoint per sample, one seed per QA item.

A sample has ``sample_id``, ``conversation`` (``speaker_a``, ``speaker_b``, ``session_N`` turn lists of
``{speaker, dia_id "D<s>:<t>", text, blip_caption?}``, ``session_N_date_time`` like ``"1:56 pm on 8 May,
2023"``) and ``qa`` items ``{question, answer | adversarial_answer, evidence [dia_id], category}``
(1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial). ``event_summary``,
``observation`` and ``session_summary`` are accepted and not imported (they are derived annotations,
not memories).

Memories are the turns (id = ``dia_id``, timestamp = session date plus the turn index in seconds, text
``"Speaker: text"`` plus ``" [image: caption]"``). Each answerable QA item contributes the fact (entity =
the speaker it asks about, attribute = the question's head noun phrase, value = the answer, evidence = its
dia_ids); category 5 questions are abstentions. Real-file quirks are repaired or skipped with a counted
warning: evidence strings holding several ids (``"D8:6; D9:17"``) are split, zero-padded or spaced ids
(``"D30:05"``) normalised, ids with no turn (``"D"``, ``"D99:1"``) dropped; date keys without a session,
sessions without a (parseable) date, malformed and duplicate turns.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ufuzz.model import Entity, Fact, Memory
from ufuzz.seeds.importers._common import (
    Builder,
    ImportResult,
    Pending,
    RecordError,
    answer_text,
    each_record,
    finish,
    need,
    read_records,
    snippets,
)
from ufuzz.seeds.importers.fields import Extractor, establish_fields, value_type_of

_DATE = re.compile(r"^\s*(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$",
                   re.I)
_SESSION = re.compile(r"^session_(\d+)$")
_SESSION_DATE = re.compile(r"^session_(\d+)_date_time$")
_DIA = re.compile(r"^D\s*(\d+)\s*:\s*(\d+)$", re.I)
_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july",
                                       "august", "september", "october", "november", "december"), start=1)}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def parse_date(raw: Any) -> datetime | None:
    if not isinstance(raw, str):
        return None
    m = _DATE.match(raw)
    if not m:
        return None
    hour, minute, ampm, day, month, year = m.groups()
    mon = _MONTHS.get(month.lower()) or next((v for k, v in _MONTHS.items() if k.startswith(month.lower()[:3])),
                                             None)
    if mon is None:
        return None
    h = int(hour) % 12 + (12 if ampm.lower() == "p" else 0)
    try:
        return datetime(int(year), mon, int(day), h, int(minute or 0))
    except ValueError:
        return None


def load(path: str | Path, *, extractor: Extractor | None = None, name: str | None = None) -> ImportResult:
    path = Path(path)
    records = read_records(path, containers=("samples", "data"))
    b = Builder(name=name or path.stem, source="locomo")
    each_record(path, records, "sample_id", lambda i, rec: _sample(b, i, rec, extractor))
    return finish(b)


def _turn_memories(b: Builder, conv: dict[str, Any]) -> list[Memory]:
    sessions = {int(m.group(1)): k for k in conv if (m := _SESSION.match(k))}
    dated = {int(m.group(1)): conv[k] for k in conv if (m := _SESSION_DATE.match(k))}
    if set(dated) - set(sessions):  # real files carry date keys for sessions they do not contain
        b.warnings["date_without_session"] += len(set(dated) - set(sessions))
    memories: list[Memory] = []
    seen: set[str] = set()
    last: datetime | None = None
    for n in sorted(sessions):
        turns = conv[sessions[n]]
        if not isinstance(turns, list):
            raise RecordError(f"field 'conversation.session_{n}' must be list, got {type(turns).__name__}")
        ts = parse_date(dated.get(n))
        if ts is None:
            b.warnings["session_date_missing" if n not in dated else "session_date_unparseable"] += 1
            if last is None:
                b.warnings["session_skipped_no_date"] += 1
                continue
            ts = last + timedelta(hours=1)  # keep order: just after the previous session
        last = ts + timedelta(seconds=len(turns))
        for t, turn in enumerate(turns):
            if not (isinstance(turn, dict) and isinstance(turn.get("dia_id"), str)
                    and isinstance(turn.get("text"), str) and isinstance(turn.get("speaker"), str)):
                b.warnings["turn_malformed"] += 1
                continue
            mid = turn["dia_id"].strip()
            if mid in seen:
                b.warnings["duplicate_dia_id"] += 1
                continue
            seen.add(mid)
            text = f"{turn['speaker']}: {turn['text']}"
            cap = turn.get("blip_caption")
            if isinstance(cap, str) and cap.strip():
                text += f" [image: {cap.strip()}]"
            memories.append(Memory(id=mid, text=text, timestamp=(ts + timedelta(seconds=t)).isoformat(),
                                   metadata={"source": "locomo", "session": n, "speaker": turn["speaker"]}))
    return memories


def clean_evidence(raw: Any, known: set[str], warnings: Any) -> list[str]:
    """Split, normalise and filter evidence ids; every repair or drop is a counted warning."""
    items = raw if isinstance(raw, list) else [raw] if isinstance(raw, str) else []
    if not isinstance(raw, (list, str)) and raw is not None:
        warnings["evidence_malformed"] += 1
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            warnings["evidence_malformed"] += 1
            continue
        parts = [p for p in re.split(r"[;,]\s*|\s+(?=D)", item.strip()) if p.strip()]
        if len(parts) > 1:
            warnings["evidence_split"] += 1
        for part in parts:
            part = part.strip()
            m = _DIA.match(part)
            if not m:
                warnings["evidence_malformed"] += 1
                continue
            norm = f"D{int(m.group(1))}:{int(m.group(2))}"
            if norm != part:
                warnings["evidence_repaired"] += 1
            if norm not in known:
                warnings["evidence_unknown_id"] += 1
                continue
            if norm not in out:
                out.append(norm)
    return out


def _sample(b: Builder, index: int, rec: Any, extractor: Extractor | None) -> None:
    sid = str(need(rec, "sample_id", (str, int)))
    conv = need(rec, "conversation", dict)
    qa = need(rec, "qa", list)
    speakers = [s for s in (conv.get("speaker_a"), conv.get("speaker_b")) if isinstance(s, str) and s.strip()]
    if len(speakers) < 2:
        b.warnings["speaker_missing"] += 1
    memories = _turn_memories(b, conv)
    speakers += sorted({m.metadata["speaker"] for m in memories} - set(speakers))
    if not memories:
        b.dropped["no_memories"] += len(qa)
        return
    known = {m.id for m in memories}
    ts_of = {m.id: m.timestamp for m in memories}
    pending: list[Pending] = []
    for j, item in enumerate(qa):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str) or not item["question"].strip():
            raise RecordError(f"qa[{j}] must be an object with a non-empty 'question'")
        cat = item.get("category")
        adversarial = cat == 5 or ("answer" not in item and "adversarial_answer" in item)
        evidence = clean_evidence(item.get("evidence"), known, b.warnings)
        answer = None if adversarial else answer_text(item.get("answer"))
        if not adversarial and answer is None:
            b.dropped["no_answer"] += 1
            continue
        if not adversarial and not evidence:
            b.dropped["no_evidence"] += 1
            continue
        fields = establish_fields(item["question"], snippets(memories, evidence), extractor=extractor,
                                  warnings=b.warnings, names=speakers, answerable=not adversarial)
        if fields is None:
            b.dropped["no_fields"] += 1
            continue
        facts: tuple[Fact, ...] = ()
        if answer is not None:
            facts = (Fact(fields.entity, fields.attribute, answer, tuple(evidence),
                          value_type=value_type_of(answer, speakers),
                          valid_from=max(ts_of[e] for e in evidence)),)
        pending.append(Pending(qid=f"locomo:{sid}:q{j}", text=item["question"], fields=fields, answer=answer,
                               supporting=tuple(evidence), facts=facts))
    b.add_checkpoint(f"locomo-cp:{sid}", memories, pending, entities=[Entity(s, "person") for s in speakers])
