"""Shared machinery of the seed importers: reading records, clear errors, and building checkpoints.

Every importer turns one benchmark record (sample, question, episode, user) into a checkpoint plus
*pending queries* (question text, fields, the benchmark's answer and evidence ids, the facts that answer
needs). :meth:`Builder.add_checkpoint` then resolves field collisions, builds the checkpoint, derives each
reference with ``Provenance.reference_for`` and keeps a seed only when that derived reference agrees with
the benchmark's own (answer, abstention, supporting ids) — so imported references are exactly what
provenance gives (plus the benchmark's judging rubric, where it has one), and operators can keep deriving
from it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ufuzz.model import (
    Checkpoint,
    Entity,
    Fact,
    Memory,
    MutationDescriptor,
    Provenance,
    Query,
    QueryFields,
    Rubric,
    Seed,
    SeedSuite,
)
from ufuzz.model.provenance import DATED
from ufuzz.seeds import siblings as siblings_mod
from ufuzz.seeds.importers.fields import (
    PERSON_NAMES,
    accumulates,
    date_of,
    gap_days,
    in_asked_period,
    in_time,
    mentions_word,
    rewrite_time,
    told_days,
    value_pool,
)
from ufuzz.seeds.speakers import ANNOTATION_TYPES, name_pattern

#: value_type of a history fact whose value the benchmark does not state (only that it was superseded).
UNSTATED = "unstated"


class SeedImportError(ValueError):
    """A malformed benchmark file; the message names the file and, where known, the record."""

    def __init__(self, path: str | Path, message: str, record: int | None = None,
                 record_id: str | None = None, line: int | None = None) -> None:
        where = str(path)
        if line is not None:
            where += f":{line}"
        if record is not None:
            where += f": record {record}" + (f" ({record_id})" if record_id else "")
        self.path, self.record, self.record_id, self.line = str(path), record, record_id, line
        super().__init__(f"{where}: {message}")


def read_records(path: Path, containers: Sequence[str] = ()) -> list[Any]:
    """Records of a JSON list, a JSON object holding a list under one of ``containers``, or JSONL."""
    if not path.exists():
        raise SeedImportError(path, "no such file")
    if path.is_dir():
        raise SeedImportError(path, "is a directory, expected a JSON or JSONL file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SeedImportError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise SeedImportError(path, "empty file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise SeedImportError(path, f"invalid JSON: {exc.msg} at column {exc.colno}", line=exc.lineno) from None
        data = None
    if data is None:  # JSON Lines
        records = []
        for lineno, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                records.append(json.loads(raw))
            except json.JSONDecodeError as exc:
                raise SeedImportError(path, f"invalid JSON line: {exc.msg} at column {exc.colno}",
                                      line=lineno) from None
        return records
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in containers:
            if isinstance(data.get(key), list):
                return data[key]
        return [data]
    raise SeedImportError(path, f"expected a JSON list or object, got {type(data).__name__}")


class RecordError(Exception):
    """Raised inside an importer for a malformed record; turned into a SeedImportError naming it."""


def need(obj: Any, key: str, typ: type | tuple[type, ...], where: str = "") -> Any:
    if not isinstance(obj, dict):
        raise RecordError(f"{where or 'record'} must be an object, got {type(obj).__name__}")
    if key not in obj:
        raise RecordError(f"missing required field '{where + '.' if where else ''}{key}'")
    val = obj[key]
    if not isinstance(val, typ):
        tname = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
        raise RecordError(f"field '{where + '.' if where else ''}{key}' must be {tname}, "
                          f"got {type(val).__name__}")
    return val


def each_record(path: Path, records: list[Any], id_key: str | None,
                fn: Callable[[int, Any], None]) -> None:
    """Call ``fn(index, record)`` for every record; a malformed record becomes a SeedImportError naming it.

    Known real-data quirks are handled inside ``fn`` (repaired or skipped with a counted warning); what
    reaches here is a record whose structure the format does not allow.
    """
    for i, rec in enumerate(records):
        rid = str(rec.get(id_key)) if id_key and isinstance(rec, dict) and rec.get(id_key) is not None else None
        try:
            fn(i, rec)
        except RecordError as exc:
            raise SeedImportError(path, str(exc), record=i, record_id=rid) from None
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            if isinstance(exc, SeedImportError):
                raise
            raise SeedImportError(path, f"malformed record ({type(exc).__name__}: {exc})", record=i,
                                  record_id=rid) from None


_BENCH_TIME = re.compile(r"(\d{4})[/-](\d{1,2})[/-](\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(?:T|\s)?\s*"
                         r"(?:(\d{1,2}):(\d{2})(?::(\d{2}))?)?\s*$")
_HUMAN_TIME_FORMATS = ("%b %d, %Y, %H:%M:%S", "%b %d, %Y %H:%M:%S", "%B %d, %Y, %H:%M:%S", "%b %d, %Y")


def parse_timestamp(raw: Any) -> datetime | None:
    """A benchmark timestamp: ISO-8601, ``2023/03/05 (Sun) 11:24`` (LongMemEval, MEME) or ``Dec 15, 2025,
    06:11:23`` (HaluMem). ``None`` when ``raw`` is none of these (the importer repairs or skips, counted)."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    text = raw.strip()
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    m = _BENCH_TIME.match(text)
    if m:
        y, mo, d, h, mi, sec = (int(x) if x else 0 for x in m.groups())
        try:
            return datetime(y, mo, d, h, mi, sec)
        except ValueError:
            return None
    for fmt in _HUMAN_TIME_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def updatable(value: str, latest_evidence_text: str | None) -> bool:
    """Whether a new value of a fact can be written as its latest evidence memory says it: the value is written
    verbatim (whole words) in that memory. Otherwise an update, which rewrites that memory's text, would have to
    invent one, so the seed offers no new values (an empty ``value_pool``)."""
    return bool(value.strip() and latest_evidence_text and mentions_word([latest_evidence_text], value.strip()))


def latest_text(memories: Sequence[Memory], ids: Sequence[str]) -> str | None:
    """Text of the latest (by timestamp) of the memories ``ids`` — the one an update rewrites."""
    latest = latest_memory(memories, ids)
    return latest.text if latest is not None else None


def latest_memory(memories: Sequence[Memory], ids: Sequence[str]) -> Memory | None:
    """The latest (by timestamp) of the memories ``ids``; None when none of them is among ``memories``."""
    wanted = set(ids)
    chosen = [m for m in memories if m.id in wanted]
    return max(chosen, key=lambda m: (m.timestamp, m.id)) if chosen else None


def answer_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value) and value:
        return ", ".join(str(v) for v in value)
    return None


@dataclass
class Pending:
    """One question waiting for its checkpoint: fields plus what the benchmark says the answer is."""

    qid: str
    text: str
    fields: QueryFields
    answer: str | None  # None: the benchmark expects an abstention
    supporting: tuple[str, ...] = ()
    facts: tuple[Fact, ...] = ()  # facts this question contributes (answer fact and history)
    expect_invalidated: tuple[str, ...] | None = None  # checked when given
    extra_targets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: a new value can be written in the evidence's own words (:func:`updatable`, :func:`can_update`); without it the
    #: seed offers no new values. What a seed says of itself, never which operators may act: each operator decides
    #: from the seed whether it applies, so a state operator added later applies to imported seeds too
    updatable: bool = True
    rubric: Rubric | None = None  # the benchmark's judging rubric, carried on the reference
    #: memories a right response must not come from although they look like evidence (LoCoMo's adversarial
    #: evidence, LongMemEval's abstention turns): added to the reference's invalidated ids
    decoys: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()  # answers the benchmark calls wrong (LoCoMo's adversarial_answer)
    answer_form: str | None = None  # extractive | abstractive (see answer_form())
    metadata: dict[str, Any] = field(default_factory=dict)  # the benchmark's labels (category …) for the seed
    asked_at: str | None = None  # when the benchmark asks the question (ISO), if it says


@dataclass
class Builder:
    name: str
    source: str
    warnings: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    #: offer each answerable question's siblings (:mod:`ufuzz.seeds.siblings`) as target changes: a benchmark
    #: asking many questions of each named person (LoCoMo)
    siblings: bool = False

    def __post_init__(self) -> None:
        self.suite = SeedSuite(name=self.name)
        # (entity, attribute, scope) of the current checkpoint's answerable questions
        self._asked: set[tuple[str, str, str]] = set()

    # ------------------------------------------------------------------------------------------------
    def add_checkpoint(self, cp_id: str, memories: Sequence[Memory], pending: Sequence[Pending],
                       entities: Sequence[Entity] = (), base_facts: Sequence[Fact] = ()) -> int:
        """Build one checkpoint from ``memories`` and the questions' facts; add its agreeing seeds.

        Returns the number of seeds added. A checkpoint without any seed is not added.
        """
        mem_ids = {m.id for m in memories}
        accepted: dict[tuple[str, str], frozenset[Fact]] = {}
        for f in base_facts:
            accepted.setdefault((f.entity, f.attribute), frozenset())
            accepted[(f.entity, f.attribute)] |= {f}
        base_keys = set(accepted)
        kept: list[Pending] = []
        # answerable questions first, so that an abstention never shadows a later answer
        for p in sorted(pending, key=lambda p: p.answer is None):
            bad = [e for f in p.facts for e in f.evidence if e not in mem_ids]
            if bad:  # importers filter evidence first; this guards the checkpoint invariant
                self.dropped["unknown_evidence"] += 1
                continue
            groups: dict[tuple[str, str], set[Fact]] = {}
            for f in p.facts:
                groups.setdefault((f.entity, f.attribute), set()).add(f)
            key = (p.fields.entity, p.fields.attribute)
            clash = any(k in accepted and (k in base_keys or accepted[k] != frozenset(v))
                        for k, v in groups.items())
            if p.answer is None and key in accepted and key not in base_keys:
                clash = True
            if clash:
                self.dropped["field_conflict"] += 1
                continue
            for k, v in groups.items():
                accepted[k] = frozenset(v)
            kept.append(p)
        if not kept:
            return 0
        facts = tuple(sorted({f for fs in accepted.values() for f in fs},
                             key=lambda f: (f.entity, f.attribute, f.valid_from or "", f.value)))
        names = {e.name for e in entities}
        ents = list(entities) + [Entity(n, "person" if n not in ("user", "assistant") else n)
                                 for n in sorted({f.entity for f in facts} - names)]
        mems = tuple(sorted(memories, key=lambda m: m.timestamp))
        cp = Checkpoint(id=cp_id, memories=mems, facts=facts, entities=tuple(ents))
        prov = Provenance.of(cp)
        # questions the benchmark itself asks: a target change onto one of them only repeats that seed
        self._asked = {(p.fields.entity, p.fields.attribute, p.fields.scope) for p in kept if p.answer is not None}
        added = 0
        seeds: list[tuple[Seed, Any]] = []
        for p in kept:
            ref = prov.reference_for(p.qid, p.fields)
            if not self._agrees(ref, p):
                self.dropped["reference_mismatch"] += 1
                continue
            query = Query(id=p.qid, text=p.text, fields=p.fields, context="", form="free", template=None,
                          asked_at=p.asked_at)
            if p.rubric:
                ref = ref.with_(rubric=p.rubric)
            ref = _annotated(ref, p)
            seeds.append((Seed(id=p.qid, checkpoint_id=cp_id, query=query,
                               descriptor=self._descriptor(prov, p, cp), metadata=dict(p.metadata)), ref))
        if not seeds:
            return 0
        if self.siblings:
            seeds = _with_siblings(seeds, ents)
        self.suite.checkpoints[cp_id] = cp
        for seed, ref in seeds:
            self.suite.seeds.append(seed)
            self.suite.references[seed.query.id] = ref
            added += 1
        return added

    @staticmethod
    def _agrees(ref: Any, p: Pending) -> bool:
        if p.answer is None:
            ok = ref.abstain
        else:
            ok = (not ref.abstain and ref.answer == p.answer and set(ref.supporting) == set(p.supporting))
        if ok and p.expect_invalidated is not None:
            ok = set(ref.invalidated) == set(p.expect_invalidated)
        return ok

    def _corpus(self, cp: Checkpoint) -> str:
        """All memory text of ``cp`` in one string (absence checks search it once, not per memory)."""
        cache = self.__dict__.setdefault("_corpus_cache", {})
        if cp.id not in cache:
            cache.clear()
            cache[cp.id] = "\n".join(m.text for m in cp.memories)
        return cache[cp.id]

    def _absent_names(self, cp: Checkpoint, known: frozenset[str], corpus: str) -> list[str]:
        """The person names nothing in ``cp`` mentions (once per checkpoint: the corpus is long)."""
        cache = self.__dict__.setdefault("_absent_cache", {})
        key = (cp.id, known)
        if key not in cache:
            low = corpus.lower()
            cache.clear()
            cache[key] = [n for n in PERSON_NAMES if n not in known and not mentions_word([low], n)]
        return list(cache[key])

    # ------------------------------------------------------------------------------------------------
    def _descriptor(self, prov: Provenance, p: Pending, cp: Checkpoint) -> MutationDescriptor:
        f = p.fields
        corpus = self._corpus(cp)
        known = set(prov.entity_names())
        spelled = entity_pattern(f.entity).search(p.text) is not None
        # an imported question is free text: a target change can only swap an entity written out in it, to an
        # entity the state has a value for under the same attribute; no attribute or scope can be re-worded,
        # so none is offered (an obligation no operator can carry out only wastes the budget)
        asked = self._asked
        entities_with_facts = sorted(e for e in {x.entity for x in prov.facts if not _annotation(x)} - {f.entity}
                                     if spelled and not entity_pattern(e).search(p.text)
                                     and (e, f.attribute, f.scope) not in asked
                                     and _supported(prov, QueryFields(e, f.attribute, f.scope)))
        replacement: dict[str, tuple[str, ...]] = {}
        if entities_with_facts:
            replacement["entity"] = tuple(entities_with_facts)
        replacement.update({k: tuple(v) for k, v in p.extra_targets.items() if v})
        rng_key = int(hashlib.sha1(p.qid.encode()).hexdigest()[:8], 16)
        absent_names = self._absent_names(cp, frozenset(known), corpus)
        if absent_names:
            k = rng_key % len(absent_names)
            absent_names = absent_names[k:] + absent_names[:k]
        absent: dict[str, tuple[str, ...]] = {}
        if absent_names and spelled:  # the unsupported operator swaps the written-out entity for one of them
            absent["entity"] = tuple(absent_names[:3])
        pool: tuple[str, ...] = ()
        active = prov.active(f.entity, f.attribute)
        if active is not None and f.answerable:
            existing = {x.value for x in prov.facts}
            try:
                pool = value_pool(active.value, active.value_type, existing, absent_names[3:] or absent_names)
            except ValueError:
                pool = ()
            if active.value_type in DATED and pool:
                # an update tells of the event at a new date, in a memory later than the conversation: never a
                # date after that; and on the side of the time it was told that the old date is (a past event
                # stays past, a plan stays a plan)
                # and between the same two days the conversation was told on (a correction that crosses one
                # contradicts it): where no fixed shift stays there, the days nearest the old date that do
                end = max(datetime.fromisoformat(m.timestamp) for m in cp.memories).date()
                days = told_days([m.timestamp for m in cp.memories])
                told = prov.first_told(active.entity, active.attribute)
                near = gap_days(active.value, days, told, p.text, until=end)
                fit = dict.fromkeys(v for v in (*pool, *near) if (date_of(v) or end) <= end
                                    and in_asked_period(v, p.text) and v not in existing
                                    and in_time(prov, active, v, p.text, days))
                # (a day of a talk is none of them: in_time refuses it — a visit moved onto the day of the last talk
                # holds only if it followed that talk)
                pool = tuple(fit)[:3]
            if active.value_type == "text" and pool and accumulates(active.value, p.text):
                pool = ()  # another pet is one more pet, not a new value of "what pet does she have"
            if active.value_type == "text" and pool:
                # a word of a class (a country, a pet): only one the conversation never mentions, so that a memory
                # holding it is the update's and nothing else's; three of them, the choice spread by question
                fresh = [v for v in pool if not mentions_word([corpus], v)]
                k = rng_key % len(fresh) if fresh else 0
                pool = tuple((fresh[k:] + fresh[:k])[:3])
        if p.answer is None or not p.updatable:
            pool = ()  # no value to replace, or none written in the evidence's own words
        return MutationDescriptor(replacement_targets=replacement, absent_targets=absent, value_pool=pool)


@dataclass
class ImportResult:
    """What an import produced: the suite plus counted warnings (repaired/skipped quirks) and drops."""

    suite: SeedSuite
    warnings: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        s = self.suite
        parts = [f"{len(s.seeds)} seeds on {len(s.checkpoints)} checkpoints"]
        if self.warnings:
            parts.append("warnings: " + ", ".join(f"{k}={v}" for k, v in sorted(self.warnings.items())))
        if self.dropped:
            parts.append("dropped: " + ", ".join(f"{k}={v}" for k, v in sorted(self.dropped.items())))
        return "; ".join(parts)


def finish(builder: Builder) -> ImportResult:
    return ImportResult(suite=builder.suite, warnings=builder.warnings, dropped=builder.dropped)


def snippets(memories: Sequence[Memory], ids: Sequence[str], limit: int = 6, width: int = 400) -> list[str]:
    by_id = {m.id: m for m in memories}
    return [by_id[i].text[:width] for i in list(ids)[:limit] if i in by_id]


def entity_pattern(name: str) -> re.Pattern[str]:
    return name_pattern(name)


def _with_siblings(seeds: list[tuple[Seed, Any]], entities: Sequence[Entity]) -> list[tuple[Seed, Any]]:
    """``seeds`` with each answerable one's sibling questions (other kept answerable questions about the same
    person, opening alike: :func:`ufuzz.seeds.siblings.siblings`) as target-change targets
    (``replacement_targets["question"]``)."""
    names = siblings_mod.person_names(entities)
    asked = [(seed.query.text, seed.query.fields) for seed, ref in seeds if not ref.abstain]
    out = []
    for seed, ref in seeds:
        found = () if ref.abstain else siblings_mod.siblings(seed.query.text, seed.query.fields.entity, asked, names)
        if found:
            targets = {**seed.descriptor.replacement_targets, "question": found}
            seed = replace(seed, descriptor=replace(seed.descriptor, replacement_targets=targets))
        out.append((seed, ref))
    return out


def _annotation(f: Fact) -> bool:
    """A benchmark annotation about an entity (an observation, an event summary), not an answer."""
    return f.value_type in ANNOTATION_TYPES


def _supported(prov: Provenance, fields: QueryFields) -> bool:
    """Whether ``fields`` has an answer on the state (a target change needs one)."""
    return prov.defines(fields) and not prov.reference_for("", fields).abstain


def _annotated(ref: Any, p: Pending) -> Any:
    """``ref`` with what the benchmark says beyond provenance: decoy evidence (invalidated), wrong answers the
    benchmark names (stale) and the answer form."""
    if p.decoys:
        inv = tuple(sorted((set(ref.invalidated) | set(p.decoys)) - set(ref.supporting)))
        ref = ref.with_(invalidated=inv)
    if p.stale:
        accepted = {ref.answer, *ref.aliases} if not ref.abstain else set()
        ref = ref.with_(stale_answers=tuple(sorted((set(ref.stale_answers) | set(p.stale)) - accepted)))
    if p.answer_form is not None and not ref.abstain:
        ref = ref.with_(answer_form=p.answer_form)
    return ref


#: answers that are judgements, not text a memory carries ("Yes", "Likely no")
JUDGEMENT = re.compile(r"^(?:(?:most\s+)?likely|probably|possibly|maybe|definitely|not)?[\s,]*(?:yes|no|not|"
                        r"true|false)\b", re.I)


def can_update(answer: str, memories: Sequence[Memory], evidence: Sequence[str]) -> bool:
    """Whether a new value of an answer can be written in the words of its evidence (the memories ``evidence`` names):
    it is written verbatim in an evidence memory (an update rewrites the latest that writes it) or is a date the latest
    evidence tells by a relative time that means it, told on that memory's day ("yesterday": the update dates it;
    :func:`~ufuzz.seeds.importers.fields.time_of`) — never a yes/no judgement. (With an update
    history a delete finds no carriers of the earlier values where they are not stated:
    :func:`ufuzz.operators.delete.carriers` says so, and the delete offers nothing.)"""
    a = answer.strip()
    if not a or JUDGEMENT.match(a):
        return False
    ids = set(evidence)
    if any(mentions_word([m.text], a) for m in memories if m.id in ids):
        return True
    latest = latest_memory(memories, evidence)
    return latest is not None and rewrite_time(latest.text, a, a, latest.timestamp) is not None


def answer_form(answer: str, evidence_texts: Sequence[str]) -> str:
    """``extractive`` when ``answer`` is written verbatim (whole words, any case) in one of the evidence
    texts and is not a yes/no judgement; ``abstractive`` otherwise (a summary, a computed date, an
    inference)."""
    a = answer.strip()
    if not a or JUDGEMENT.match(a) or not any(mentions_word([t], a) for t in evidence_texts):
        return "abstractive"
    return "extractive"
