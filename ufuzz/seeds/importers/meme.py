"""MEME episodes: sessions with gold facts and dependency rules between facts.

An episode is ``{episode_id, sessions [{session_id, date, turns [{turn, speaker, text}], gold_facts
[{fact_id?, entity, value, fact_text, conveyed_in_turn, attribute?}]}], dependencies [{upstream,
downstream, rule}], questions [{question_id, question, answer (null = abstain)}]}``; dependencies name
gold facts by ``fact_id``.

Memories are the turns (id ``<session_id>:<turn>``). A gold fact becomes a provenance fact with the
conveying turn as evidence; its attribute is the fact's ``attribute`` or, when absent, ``fact_text``
without the entity and the value (``"Priya's time zone is CET"`` → ``"time zone"``). A later gold fact
for the same entity and attribute supersedes the earlier one (update history). Dependencies become
cascade obligations, recorded in the descriptor under additive keys: a seed asking for a downstream
fact carries ``replacement_targets["cascade"] = ("<upstream entity>/<upstream attribute>", …)`` (change
that upstream value and this answer must follow), a seed asking for an upstream fact carries
``replacement_targets["cascade_dependents"]``. Core dataclasses are unchanged.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ufuzz.model import Entity, Fact, Memory, Provenance, QueryFields
from ufuzz.seeds.importers._common import (
    Builder,
    ImportResult,
    Pending,
    answer_text,
    each_record,
    finish,
    need,
    read_records,
    snippets,
)
from ufuzz.seeds.importers.fields import Extractor, establish_fields, value_type_of

_EDGE = {"is", "are", "was", "were", "has", "have", "had", "the", "a", "an", "of", "in", "at", "on", "to",
         "for", "with", "as", "by", "from", "'s", "s"}


def attribute_from_fact_text(fact_text: str, entity: str, value: str) -> str | None:
    """``fact_text`` minus the entity, the value and edge function words; ``None`` when nothing is left."""
    t = fact_text.strip().rstrip(".")
    t = re.sub(re.escape(value), " ", t, flags=re.I)
    t = re.sub(rf"\b{re.escape(entity)}(?:'s|’s)?", " ", t, flags=re.I)
    words = [w for w in re.findall(r"[A-Za-z0-9'’-]+", t)]
    while words and words[0].lower() in _EDGE:
        words.pop(0)
    while words and words[-1].lower() in _EDGE:
        words.pop()
    return " ".join(w.lower() for w in words) or None


def load(path: str | Path, *, extractor: Extractor | None = None, name: str | None = None) -> ImportResult:
    path = Path(path)
    records = read_records(path, containers=("episodes", "data"))
    b = Builder(name=name or path.stem, source="meme")
    each_record(path, records, "episode_id", lambda i, rec: _episode(b, rec, extractor))
    return finish(b)


def _parse_date(raw: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(raw))
    except ValueError:
        return None


def _episode(b: Builder, rec: Any, extractor: Extractor | None) -> None:
    eid = str(need(rec, "episode_id", (str, int)))
    sessions = need(rec, "sessions", list)
    questions = need(rec, "questions", list)
    deps = rec.get("dependencies") or []
    memories: list[Memory] = []
    gold: list[tuple[str | None, Fact]] = []
    last: datetime | None = None
    for s_index, sess in enumerate(sessions):
        sid = str(need(sess, "session_id", (str, int), f"sessions[{s_index}]"))
        turns = need(sess, "turns", list, f"sessions[{s_index}]")
        ts = _parse_date(sess.get("date"))
        if ts is None:
            b.warnings["session_date_unparseable"] += 1
            if last is None:
                b.warnings["session_skipped_no_date"] += 1
                continue
            ts = last + timedelta(hours=1)
        last = ts
        ids: dict[int, str] = {}
        for pos, turn in enumerate(turns):
            if not (isinstance(turn, dict) and isinstance(turn.get("text"), str)):
                b.warnings["turn_malformed"] += 1
                continue
            n = turn.get("turn", pos + 1)
            mid = f"{sid}:{n}"
            ids[int(n)] = mid
            memories.append(Memory(id=mid, text=f"{turn.get('speaker') or 'user'}: {turn['text']}",
                                   timestamp=(ts + timedelta(seconds=pos)).isoformat(),
                                   metadata={"source": "meme", "session_id": sid}))
        for g in sess.get("gold_facts") or []:
            if not (isinstance(g, dict) and isinstance(g.get("entity"), str) and answer_text(g.get("value"))):
                b.warnings["gold_fact_malformed"] += 1
                continue
            value = answer_text(g["value"])
            turn_id = ids.get(g.get("conveyed_in_turn")) if isinstance(g.get("conveyed_in_turn"), int) else None
            if turn_id is None:
                b.warnings["gold_fact_unknown_turn"] += 1
                continue
            attr = g.get("attribute") if isinstance(g.get("attribute"), str) and g["attribute"].strip() else None
            if attr is None:
                attr = attribute_from_fact_text(str(g.get("fact_text") or ""), g["entity"], value)
                if attr is None:
                    b.warnings["gold_fact_no_attribute"] += 1
                    continue
            ts_fact = next(m.timestamp for m in memories if m.id == turn_id)
            gold.append((g.get("fact_id"), Fact(g["entity"].strip(), attr.strip(), value, (turn_id,),
                                                value_type=value_type_of(value), valid_from=ts_fact)))
    # update history: per (entity, attribute), the latest value is valid
    facts: list[Fact] = []
    by_key: dict[tuple[str, str], list[Fact]] = {}
    for _, f in gold:
        by_key.setdefault((f.entity, f.attribute), []).append(f)
    for fs in by_key.values():
        fs.sort(key=lambda f: f.valid_from or "")
        latest = fs[-1].value
        merged: dict[tuple[str, bool], list[str]] = {}
        for f in fs:
            merged.setdefault((f.value, f.value == latest), []).extend(f.evidence)
        for (value, valid), ev in merged.items():
            first = next(f for f in fs if f.value == value)
            facts.append(Fact(first.entity, first.attribute, value, tuple(dict.fromkeys(ev)), valid,
                              first.value_type, max(f.valid_from or "" for f in fs if f.value == value)))
    key_of = {fid: (f.entity, f.attribute) for fid, f in gold if fid}
    upstream: dict[tuple[str, str], set[str]] = {}
    downstream: dict[tuple[str, str], set[str]] = {}
    for d in deps if isinstance(deps, list) else []:
        up = key_of.get(d.get("upstream")) if isinstance(d, dict) else None
        down = key_of.get(d.get("downstream")) if isinstance(d, dict) else None
        if up is None or down is None:
            b.warnings["dependency_unknown_fact"] += 1
            continue
        upstream.setdefault(down, set()).add(f"{up[0]}/{up[1]}")
        downstream.setdefault(up, set()).add(f"{down[0]}/{down[1]}")
    prov = Provenance(facts=tuple(facts), entities=(), memory_ids=frozenset(m.id for m in memories))
    names = sorted({f.entity for f in facts}, key=len, reverse=True)
    pending: list[Pending] = []
    for j, q in enumerate(questions):
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            b.warnings["question_malformed"] += 1
            continue
        qid = str(q.get("question_id") or f"q{j}")
        answer = None if q.get("abstain") is True else answer_text(q.get("answer"))
        fields = None
        if answer is not None:
            hits = {(f.entity, f.attribute, f.valid) for f in facts if f.value.lower() == answer.lower()}
            keys = {(e, a) for e, a, _ in hits}
            if len(keys) == 1:
                e, a = keys.pop()
                cur = prov.active(e, a)
                scope = "current" if cur is not None and cur.value.lower() == answer.lower() else "previous"
                fields = QueryFields(e, a, scope, True)
        if fields is None:
            fields = establish_fields(q["question"], snippets(memories, [m.id for m in memories]),
                                      extractor=extractor, warnings=b.warnings, names=names,
                                      answerable=answer is not None)
        if fields is None:
            b.dropped["no_fields"] += 1
            continue
        k = (fields.entity, fields.attribute)
        ref = prov.reference_for(qid, fields)
        extra = {"cascade": tuple(sorted(upstream.get(k, ()))),
                 "cascade_dependents": tuple(sorted(downstream.get(k, ())))}
        pending.append(Pending(qid=f"meme:{eid}:{qid}", text=q["question"], fields=fields, answer=answer,
                               supporting=ref.supporting if answer is not None else (), extra_targets=extra,
                               memory_ops=None if answer is not None else ("unrelated_edit",)))
    b.add_checkpoint(f"meme-cp:{eid}", memories, pending,
                     entities=[Entity(n, "person") for n in sorted(names)], base_facts=facts)
