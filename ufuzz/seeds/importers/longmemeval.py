"""LongMemEval (S and oracle splits): one checkpoint per question.

Each record has ``question_id, question_type, question, answer, question_date, haystack_dates,
haystack_session_ids, haystack_sessions [[{role, content, has_answer?}]], answer_session_ids``; ids ending
in ``_abs`` are abstention questions. Memories are the haystack turns (id ``<session_id>:<turn>``,
timestamp from the session date ``2023/05/20 (Sat) 02:21`` plus the turn index in seconds, text
``User: …``/``Assistant: …``). ``has_answer`` is *not* copied into memory metadata (it would leak the
reference). Supporting ids are the ``has_answer`` turns, falling back to every turn of the answer sessions
(counted warning) when a record marks none.

``knowledge-update`` questions get an update history: the answer sessions are ordered by date; the one
stating the asked value (the latest for ``current`` scope, an earlier one for ``previous``) evidences the
answer, the others evidence a superseded (or, for ``previous``, the current) value whose text the
benchmark does not give — such facts carry ``value_type="unstated"`` and descriptors never offer a scope
change onto them. ``single-session-preference`` questions (answers are rubrics, not values) are dropped.

Abstention questions (ids ending in ``_abs``) have abstaining references; the turns the record marks
``has_answer`` (the related fact the question twists) are decoys: invalidated ids. Each seed carries its
``question_type`` in ``Seed.metadata`` and the benchmark's judging criterion for it on its reference
(:mod:`ufuzz.seeds.criteria`); answerable references are tagged ``extractive`` or ``abstractive``,
and an update (delete) is offered only where the answer is verbatim in its latest evidence (written out, with
no unstated history value).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ufuzz.model import Entity, Fact, Memory, QueryFields
from ufuzz.seeds.criteria import benchmark_rubric
from ufuzz.seeds.importers._common import (
    UNSTATED,
    Builder,
    ImportResult,
    Pending,
    RecordError,
    answer_form,
    answer_text,
    can_update,
    each_record,
    finish,
    need,
    read_records,
    snippets,
)
from ufuzz.seeds.importers.fields import (
    Extractor,
    establish_fields,
    mentions_word,
    stated_forms,
    value_type_of,
)

_DATE = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(\d{1,2}):(\d{2})\s*$")


def parse_date(raw: Any) -> datetime | None:
    if not isinstance(raw, str):
        return None
    m = _DATE.match(raw)
    if not m:
        return None
    y, mo, d, h, mi = (int(x) for x in m.groups())
    try:
        return datetime(y, mo, d, h, mi)
    except ValueError:
        return None


#: the name of this format (``ufuzz seeds import --format longmemeval``): the module is an importer plugin
FORMAT = "longmemeval"


def load(path: str | Path, *, extractor: Extractor | None = None, name: str | None = None) -> ImportResult:
    path = Path(path)
    records = read_records(path, containers=("data", "questions"))
    b = Builder(name=name or path.stem, source="longmemeval")
    each_record(path, records, "question_id", lambda i, rec: _record(b, rec, extractor))
    return finish(b)


def _record(b: Builder, rec: Any, extractor: Extractor | None) -> None:
    qid = need(rec, "question_id", (str, int))
    qid = str(qid)
    qtype = need(rec, "question_type", str)
    question = need(rec, "question", str)
    dates = need(rec, "haystack_dates", list)
    sids = need(rec, "haystack_session_ids", list)
    sessions = need(rec, "haystack_sessions", list)
    answer_sids = rec.get("answer_session_ids") or []
    if not isinstance(answer_sids, list):
        raise RecordError("field 'answer_session_ids' must be list")
    if "answer" not in rec:
        raise RecordError("missing required field 'answer'")
    if not question.strip():
        raise RecordError("field 'question' is empty")
    if not (len(dates) == len(sids) == len(sessions)):
        b.warnings["haystack_length_mismatch"] += 1
    qdate = parse_date(rec.get("question_date"))

    memories: list[Memory] = []
    has_answer: list[str] = []
    by_session: dict[str, list[str]] = {}
    session_ts: dict[str, datetime] = {}
    last_ts: datetime | None = None
    for sid, raw_date, turns in zip(sids, dates, sessions, strict=False):
        sid = str(sid)
        if sid in by_session:
            b.warnings["duplicate_session_id"] += 1
            continue
        if not isinstance(turns, list):
            b.warnings["session_malformed"] += 1
            continue
        ts = parse_date(raw_date)
        if ts is None:
            b.warnings["session_date_unparseable"] += 1
            ts = (last_ts + timedelta(minutes=1)) if last_ts else qdate
            if ts is None:
                b.warnings["session_skipped_no_date"] += 1
                continue
        if qdate is not None and ts > qdate:
            b.warnings["session_after_question_date"] += 1
        last_ts = ts
        session_ts[sid] = ts
        ids: list[str] = []
        for t, turn in enumerate(turns):
            if not (isinstance(turn, dict) and isinstance(turn.get("content"), str)
                    and isinstance(turn.get("role"), str)):
                b.warnings["turn_malformed"] += 1
                continue
            mid = f"{sid}:{t}"
            role = turn["role"]
            memories.append(Memory(id=mid, text=f"{role.capitalize()}: {turn['content']}",
                                   timestamp=(ts + timedelta(seconds=t)).isoformat(),
                                   metadata={"source": "longmemeval", "session_id": sid, "role": role,
                                             "turn": t}))
            ids.append(mid)
            if turn.get("has_answer") is True:
                has_answer.append(mid)
        by_session[sid] = ids
    if not memories:
        b.dropped["no_memories"] += 1
        return
    if qtype == "single-session-preference":
        b.dropped["preference_rubric"] += 1
        return
    answerable = not qid.endswith("_abs")
    answer = answer_text(rec["answer"])
    if answerable and answer is None:
        b.dropped["no_answer"] += 1
        return
    supporting = list(has_answer)
    if answerable and not supporting:
        supporting = [m for s in answer_sids if str(s) in by_session for m in by_session[str(s)]]
        if supporting:
            b.warnings["supporting_from_answer_sessions"] += 1
    if answerable and not supporting:
        b.dropped["no_evidence"] += 1
        return

    # update history: answer sessions in date order (knowledge-update only)
    groups: list[list[str]] = []
    if answerable and qtype == "knowledge-update":
        sess_of = {m: m.rsplit(":", 1)[0] for m in supporting}
        order = sorted({sess_of[m] for m in supporting}, key=lambda s: session_ts[s])
        groups = [[m for m in supporting if sess_of[m] == s] for s in order]
        if len(groups) < 2:
            b.warnings["update_without_history"] += 1
            groups = []
    if answerable:  # a marked session's other turns that write the answer support it too
        supporting, groups = _completed(b, memories, supporting, groups, answer)
    has_history = bool(groups)
    fields = establish_fields(question, snippets(memories, supporting), extractor=extractor,
                              warnings=b.warnings, user_centred=True, answerable=answerable,
                              has_history=has_history)
    if fields is None:
        b.dropped["no_fields"] += 1
        return
    if qtype == "single-session-assistant" and fields.entity == "user":
        fields = QueryFields("assistant", fields.attribute, fields.scope, fields.answerable)
    qkey = f"lme:{qid}"
    ts_of = {m.id: m.timestamp for m in memories}
    facts: list[Fact] = []
    expect_inv: tuple[str, ...] | None = None
    if answerable:
        if has_history:
            if fields.scope == "previous":
                asked, other = [m for g in groups[:-1] for m in g], groups[-1]
                asked_valid, other_valid = False, True
            else:
                asked, other = groups[-1], [m for g in groups[:-1] for m in g]
                asked_valid, other_valid = True, False
            facts.append(Fact(fields.entity, fields.attribute, f"[value stated in {other[0]}]", tuple(other),
                              valid=other_valid, value_type=UNSTATED, valid_from=max(ts_of[m] for m in other)))
            # a previous-scope question's current value is history, not a decoy: nothing is invalidated then
            supporting, expect_inv = asked, (() if fields.scope == "previous" else tuple(other))
        else:
            asked_valid = True
        facts.append(Fact(fields.entity, fields.attribute, answer, tuple(supporting), valid=asked_valid,
                          value_type=value_type_of(answer), valid_from=max(ts_of[m] for m in supporting)))
    form, ok, decoys = None, True, ()
    text_of = {m.id: m.text for m in memories}
    if answerable:
        form = answer_form(answer, [text_of[m] for m in supporting])
        ok = can_update(answer, memories, supporting)
    else:  # the turns the benchmark marks for an abstention question look like evidence and are not
        decoys = tuple(has_answer)
    pending = Pending(qid=qkey, text=question, fields=fields, answer=answer if answerable else None,
                      supporting=tuple(supporting), facts=tuple(facts), expect_invalidated=expect_inv,
                      answer_form=form, updatable=ok, decoys=decoys, metadata={"question_type": qtype},
                      rubric=benchmark_rubric("longmemeval", qtype, abstain=not answerable),
                      asked_at=None if qdate is None else qdate.isoformat())
    b.add_checkpoint(f"lme-cp:{qid}", memories, [pending], entities=[Entity("user", "user"),
                                                                      Entity("assistant", "assistant")])



def _completed(b: Builder, memories: list[Memory], supporting: list[str], groups: list[list[str]],
               answer: str) -> tuple[list[str], list[list[str]]]:
    """``supporting`` (and, with an update history, the group that tells the answer) plus the other turns of the
    same sessions that write the answer as a marked turn writes it (:func:`stated_forms`: "18" as "my 18th
    birthday") — the records mark the user's statement ``has_answer``, not the assistant's reply repeating it
    ("Wow, 20 dozen eggs is a lot!"), and using that reply is no less right. With a history the answer is the
    latest group's (a question about now) or, when only earlier groups write it, theirs (a question about the
    value before: "Congratulations on … earning Premier Silver status!" is the previous status said again). Only
    for an answer a marked turn writes (an extractive one) of two characters or more."""
    text = {m.id: m.text for m in memories}
    if len(answer.strip()) < 2:
        return supporting, groups
    forms_of = {i: forms for i, g in enumerate(groups or [supporting])
                if (forms := _forms_in(answer, [text[m] for m in g]))}
    told = sorted(forms_of)
    if groups and len(groups) - 1 in forms_of:
        told = [len(groups) - 1]  # the current value's group; an earlier one writing it too is history
    added: dict[int, list[str]] = {}
    for i in told:
        asked, forms = (groups or [supporting])[i], forms_of[i]
        # a turn can say the answer again only after it was told: from the session's first marked turn on (an
        # assistant listing "e.g., Premier Silver, Premier Gold" before the user told their status says nothing)
        told_at: dict[str, int] = {}
        for m in asked:
            sid, turn = _session_turn(m)
            told_at[sid] = min(turn, told_at.get(sid, turn))
        extra = [m.id for m in memories if m.id not in supporting and _after(m.id, told_at)
                 and any(mentions_word([m.text], f) for f in forms)]
        if extra:
            added[i] = extra
    if not added:
        return supporting, groups
    b.warnings["supporting_completed"] += 1
    extra_all = list(dict.fromkeys(m for i in sorted(added) for m in added[i]))  # two groups may share a session
    if groups:
        return supporting + extra_all, [g + added.get(i, []) for i, g in enumerate(groups)]
    return supporting + extra_all, groups


def _forms_in(answer: str, texts: list[str]) -> list[str]:
    """The forms of ``answer`` (:func:`stated_forms`) that one of ``texts`` writes, as the marked turns tell it:
    "18" is told "my 18th birthday" there, and a turn saying "the silver necklace my grandma gave me on my 18th
    birthday" answers "how old was I" as well."""
    return [f for f in stated_forms(answer) if any(mentions_word([t], f) for t in texts)]


def _after(memory_id: str, told_at: dict[str, int]) -> bool:
    """Whether the turn ``memory_id`` comes after its session's first telling (``told_at``: session -> turn)."""
    sid, turn = _session_turn(memory_id)
    return sid in told_at and turn > told_at[sid]


def _session_turn(memory_id: str) -> tuple[str, int]:
    """A turn's session id and index within it (the importer's ids are ``<session>:<turn>``)."""
    sid, _, turn = memory_id.rpartition(":")
    return sid, int(turn)
