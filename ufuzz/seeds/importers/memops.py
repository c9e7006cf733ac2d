"""MemOps evidence files: explicit memory operations with validity, plus judged questions.

Source of the format: none published. No MemOps dataset, loader or data card could be found in the public
code and documentation indexes (searched: "MemOps" benchmark / dataset / memory operations, the GitHub
repositories named memops — all unrelated: process-memory and hackathon projects —, and the field names
``evidence_spans``/``judge_rubric``), so this importer reads the interchange format defined below, which is
ufuzz's own: a benchmark or a user who records memory operations can export to it. Should MemOps publish its
files, this module is the one to adapt.

An episode is ``{episode_id, turns [{turn_id, timestamp, speaker, text}], operations [...], questions
[...]}``. An operation is ``{op_id, type: add|update|delete, validity: confirmed|tentative|retracted,
target ("Entity.attribute" or {entity, attribute}), old_value, new_value, evidence_spans}``; a span is
``{turn_id, start?, end?}`` or a bare turn id. A question is ``{question_id, question, expected_answer
(null = abstain), judge_rubric {must_include, must_not_include}, target?}``.

Mapping: confirmed add/update operations build each target's fact history (an update supersedes the
earlier value, so its seeds carry update obligations: new values in the descriptor's ``value_pool`` and
provenance keeps the history); a confirmed delete supersedes the value without a successor (the
question then abstains, the deleted value's memory is ``invalidated``). Tentative and retracted values are
*recency traps*: they are listed in the descriptor under the additive key
``replacement_targets["recency_trap"]``; a retracted value is also a never-valid fact (``valid=False``,
``valid_from=None``) so its memory is in the reference's ``invalidated``. A tentative value is not a fact
(the memory stays as a distractor). A question's target is its ``target`` field, else the one target
whose values match the expected answer (or, for abstentions, a ``must_not_include`` value), else the
heuristic fields. A non-empty ``judge_rubric`` is kept on the seed's reference (``Reference.rubric``) for
the LLM judge.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ufuzz.model import Entity, Fact, Memory, Provenance, QueryFields, Rubric
from ufuzz.seeds.importers._common import (
    Builder,
    ImportResult,
    Pending,
    answer_text,
    each_record,
    finish,
    latest_text,
    need,
    read_records,
    snippets,
    updatable,
)
from ufuzz.seeds.importers.fields import Extractor, establish_fields, value_type_of

OP_TYPES = ("add", "update", "delete")
VALIDITIES = ("confirmed", "tentative", "retracted")


#: the name of this format (``ufuzz seeds import --format memops``): the module is an importer plugin
FORMAT = "memops"


def load(path: str | Path, *, extractor: Extractor | None = None, name: str | None = None) -> ImportResult:
    path = Path(path)
    records = read_records(path, containers=("episodes", "data"))
    b = Builder(name=name or path.stem, source="memops")
    each_record(path, records, "episode_id", lambda i, rec: _episode(b, i, rec, extractor))
    return finish(b)


def parse_target(raw: Any) -> tuple[str, str] | None:
    if isinstance(raw, dict) and isinstance(raw.get("entity"), str) and isinstance(raw.get("attribute"), str):
        return raw["entity"].strip(), raw["attribute"].strip()
    if isinstance(raw, str):
        for sep in (".", "/", "::"):
            if sep in raw:
                e, a = raw.split(sep, 1)
                if e.strip() and a.strip():
                    return e.strip(), a.strip()
    return None


def _span_ids(raw: Any, known: set[str], b: Builder) -> list[str]:
    out: list[str] = []
    for span in raw if isinstance(raw, list) else []:
        tid = span.get("turn_id") if isinstance(span, dict) else span.split("[", 1)[0] if isinstance(span, str) else None
        if not isinstance(tid, str):
            b.warnings["evidence_malformed"] += 1
        elif tid.strip() not in known:
            b.warnings["evidence_unknown_id"] += 1
        elif tid.strip() not in out:
            out.append(tid.strip())
    return out


def _episode(b: Builder, index: int, rec: Any, extractor: Extractor | None) -> None:
    eid = str(need(rec, "episode_id", (str, int)))
    turns = need(rec, "turns", list)
    ops = need(rec, "operations", list)
    questions = need(rec, "questions", list)
    memories: list[Memory] = []
    last: datetime | None = None
    for turn in turns:
        if not (isinstance(turn, dict) and isinstance(turn.get("turn_id"), str) and isinstance(turn.get("text"), str)):
            b.warnings["turn_malformed"] += 1
            continue
        try:
            ts = datetime.fromisoformat(str(turn.get("timestamp")))
        except ValueError:
            b.warnings["turn_timestamp_unparseable"] += 1
            if last is None:
                b.warnings["turn_skipped_no_timestamp"] += 1
                continue
            ts = last + timedelta(minutes=1)
        last = ts
        speaker = turn.get("speaker") or "user"
        memories.append(Memory(id=turn["turn_id"], text=f"{speaker}: {turn['text']}", timestamp=ts.isoformat(),
                               metadata={"source": "memops", "episode": eid}))
    known = {m.id for m in memories}
    ts_of = {m.id: m.timestamp for m in memories}
    history: dict[tuple[str, str], list[Fact]] = {}
    traps: dict[tuple[str, str], list[str]] = {}
    for op in ops:
        if not isinstance(op, dict) or op.get("type") not in OP_TYPES:
            b.warnings["operation_unknown_type"] += 1
            continue
        key = parse_target(op.get("target"))
        if key is None:
            b.warnings["operation_bad_target"] += 1
            continue
        validity = op.get("validity")
        if validity is None:
            b.warnings["validity_missing"] += 1
            validity = "confirmed"
        if validity not in VALIDITIES:
            b.warnings["validity_unknown"] += 1
            continue
        ev = _span_ids(op.get("evidence_spans"), known, b)
        if not ev:
            b.warnings["operation_no_evidence"] += 1
            continue
        facts = history.setdefault(key, [])
        when = max(ts_of[e] for e in ev)
        if op["type"] == "delete":
            if validity == "confirmed":
                if not any(f.valid for f in facts):
                    b.warnings["delete_without_value"] += 1
                history[key] = [Fact(f.entity, f.attribute, f.value, f.evidence, False, f.value_type, f.valid_from)
                                for f in facts]
            continue
        new = answer_text(op.get("new_value"))
        if new is None:
            b.warnings["operation_no_value"] += 1
            continue
        if validity != "confirmed":
            traps.setdefault(key, []).append(new)
            if validity == "retracted":
                facts.append(Fact(key[0], key[1], new, tuple(ev), valid=False, value_type=value_type_of(new)))
            continue
        current = [f for f in facts if f.valid]
        old = answer_text(op.get("old_value"))
        if op["type"] == "update" and old is not None and current and all(f.value != old for f in current):
            b.warnings["old_value_mismatch"] += 1
        same = [f for f in current if f.value == new]
        rest = [f for f in facts if f not in same]
        rest = [Fact(f.entity, f.attribute, f.value, f.evidence, False, f.value_type, f.valid_from)
                if f.valid else f for f in rest]
        evidence = tuple(dict.fromkeys([e for f in same for e in f.evidence] + ev))
        history[key] = rest + [Fact(key[0], key[1], new, evidence, True, value_type_of(new), when)]
    base = [f for fs in history.values() for f in fs]
    prov = Provenance(facts=tuple(base), entities=(), memory_ids=frozenset(known))
    names = sorted({k[0] for k in history})
    pending: list[Pending] = []
    for j, q in enumerate(questions):
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            b.warnings["question_malformed"] += 1
            continue
        qid = str(q.get("question_id") or f"q{j}")
        answer = answer_text(q.get("expected_answer"))
        if q.get("answerable") is False:
            answer = None
        rubric = q.get("judge_rubric") if isinstance(q.get("judge_rubric"), dict) else {}
        must = [str(x) for x in rubric.get("must_include") or []]
        must_not = [str(x) for x in rubric.get("must_not_include") or []]
        key = parse_target(q.get("target")) or _match_target(history, answer, must_not)
        if key is not None and key in history:
            scope = _scope_for(prov, key, answer)
            fields = QueryFields(key[0], key[1], scope, answer is not None)
        else:
            fields = establish_fields(q["question"], snippets(memories, sorted(known)), extractor=extractor,
                                      warnings=b.warnings, names=names, answerable=answer is not None)
        if fields is None:
            b.dropped["no_fields"] += 1
            continue
        k = (fields.entity, fields.attribute)
        if answer is not None and any(m.lower() not in answer.lower() for m in must):
            b.warnings["rubric_answer_mismatch"] += 1
        values = {f.value.lower() for f in history.get(k, [])} | {t.lower() for t in traps.get(k, [])}
        if any(not any(x.lower() in v for v in values) for x in must_not):
            b.warnings["rubric_value_unmapped"] += 1
        ref = prov.reference_for(qid, fields)
        active = prov.active(*k)
        ok = updatable(active.value, latest_text(memories, active.evidence)) if active else True
        pending.append(Pending(qid=f"memops:{eid}:{qid}", text=q["question"], fields=fields, answer=answer,
                               supporting=ref.supporting if answer is not None else (),
                               extra_targets={"recency_trap": tuple(traps.get(k, []))}, updatable=ok,
                               rubric=Rubric(tuple(must), tuple(must_not)) or None))
    b.add_checkpoint(f"memops-cp:{eid}", memories, pending, entities=[Entity(n, "person") for n in names],
                     base_facts=base)


def _match_target(history: dict[tuple[str, str], list[Fact]], answer: str | None,
                  must_not: list[str]) -> tuple[str, str] | None:
    if answer is not None:
        hits = {k for k, fs in history.items() for f in fs if f.value.lower() == answer.lower()}
    else:
        hits = {k for k, fs in history.items() for f in fs for x in must_not if x.lower() in f.value.lower()}
    return hits.pop() if len(hits) == 1 else None


def _scope_for(prov: Provenance, key: tuple[str, str], answer: str | None) -> str:
    if answer is None:
        return "current"
    cur, prev = prov.active(*key), prov.previous(*key)
    if cur is not None and cur.value == answer:
        return "current"
    if prev is not None and prev.value == answer:
        return "previous"
    return "current"  # disagreement is caught by the reference check (dropped: reference_mismatch)
