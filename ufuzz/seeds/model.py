"""The seed model: checkpoint, query, mutation descriptor and (kept apart) reference.

A *seed* is a memory checkpoint plus a query plus a mutation descriptor. The descriptor lists what
operators may change (answer-affecting query fields, checkpoint-supported replacement targets, absent
type-compatible targets, supported memory ops) and never carries the expected answer. The *reference*
(expected answer or abstention, supporting and invalidated memory ids) is stored apart, keyed by query id,
so that nothing that schedules or mutates needs to see it.

Everything here is a plain frozen dataclass with ``to_dict``/``from_dict`` so that the on-disk JSONL
schema (``ufuzz.seeds.io``) is one obvious mapping.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

SCHEMA_VERSION = 1

#: Temporal scope of a query: the value valid now, the one valid before the latest change, or unscoped.
SCOPES = ("current", "previous", "any")

#: Memory operations a descriptor may declare as supported for a seed.
MEMORY_OPS = ("update", "delete", "unrelated_edit")


@dataclass(frozen=True)
class Memory:
    """One stored memory entry with a stable id (ids are the checkpoint's, never a backend's)."""

    id: str
    text: str
    timestamp: str  # ISO-8601; later timestamps are later memories
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {"id": self.id, "text": self.text, "timestamp": self.timestamp}
        if self.metadata:
            d["metadata"] = dict(self.metadata)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Memory:
        return cls(id=str(d["id"]), text=str(d["text"]), timestamp=str(d["timestamp"]),
                   metadata=dict(d.get("metadata") or {}))


@dataclass(frozen=True)
class Fact:
    """An entity–attribute–value fact of the checkpoint's provenance with its evidence memories.

    ``valid`` is False for a value that a later memory superseded (it stays in provenance as history).
    ``value_type`` names the type pool the value comes from (``city``, ``person_name`` …) so that operators
    can pick type-compatible replacements.
    """

    entity: str
    attribute: str
    value: str
    evidence: tuple[str, ...]
    valid: bool = True
    value_type: str = "text"
    valid_from: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"] = list(self.evidence)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Fact:
        return cls(entity=str(d["entity"]), attribute=str(d["attribute"]), value=str(d["value"]),
                   evidence=tuple(str(e) for e in d["evidence"]), valid=bool(d.get("valid", True)),
                   value_type=str(d.get("value_type", "text")), valid_from=d.get("valid_from"))


@dataclass(frozen=True)
class Entity:
    name: str
    type: str  # person, pet, place, ...

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Entity:
        return cls(name=str(d["name"]), type=str(d["type"]))


@dataclass(frozen=True)
class Checkpoint:
    """A memory state: memories with stable ids plus the provenance facts they evidence."""

    id: str
    memories: tuple[Memory, ...]
    facts: tuple[Fact, ...]
    entities: tuple[Entity, ...] = ()

    def memory(self, memory_id: str) -> Memory | None:
        for m in self.memories:
            if m.id == memory_id:
                return m
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "memories": [m.to_dict() for m in self.memories],
                "facts": [f.to_dict() for f in self.facts],
                "entities": [e.to_dict() for e in self.entities]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Checkpoint:
        return cls(id=str(d["id"]), memories=tuple(Memory.from_dict(m) for m in d["memories"]),
                   facts=tuple(Fact.from_dict(f) for f in d.get("facts", [])),
                   entities=tuple(Entity.from_dict(e) for e in d.get("entities", [])))


@dataclass(frozen=True)
class QueryFields:
    """The answer-affecting fields of a query. Paraphrase must keep all four unchanged."""

    entity: str
    attribute: str
    scope: str = "current"  # one of SCOPES
    answerable: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QueryFields:
        scope = str(d.get("scope", "current"))
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
        return cls(entity=str(d["entity"]), attribute=str(d["attribute"]), scope=scope,
                   answerable=bool(d.get("answerable", True)))


@dataclass(frozen=True)
class Query:
    """A query: its text, its answer-affecting fields, and how it is worded.

    ``context`` is removable, non-restrictive context that is part of ``text`` (paraphrase may shorten it);
    ``form`` is the syntactic form (``question``, ``imperative``, ``indirect``, ``free``); ``template`` names
    the wording template used (``None`` for free text, e.g. imported benchmark questions).
    """

    id: str
    text: str
    fields: QueryFields
    context: str = ""
    form: str = "question"
    template: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "fields": self.fields.to_dict(), "context": self.context,
                "form": self.form, "template": self.template}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Query:
        return cls(id=str(d["id"]), text=str(d["text"]), fields=QueryFields.from_dict(d["fields"]),
                   context=str(d.get("context", "")), form=str(d.get("form", "question")),
                   template=d.get("template"))


@dataclass(frozen=True)
class MutationDescriptor:
    """What operators may do with a seed. Never contains the expected answer.

    ``replacement_targets`` maps a query field (``entity``/``attribute``/``scope``) to values the checkpoint
    supports for this query; ``absent_targets`` maps a field to type-compatible values the checkpoint has
    no fact for; ``memory_ops`` lists supported memory operations (subset of ``MEMORY_OPS``);
    ``value_pool`` gives type-compatible fresh values an update may write.
    """

    answer_fields: tuple[str, ...] = ("entity", "attribute", "scope")
    replacement_targets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    absent_targets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    memory_ops: tuple[str, ...] = MEMORY_OPS
    value_pool: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"answer_fields": list(self.answer_fields),
                "replacement_targets": {k: list(v) for k, v in self.replacement_targets.items()},
                "absent_targets": {k: list(v) for k, v in self.absent_targets.items()},
                "memory_ops": list(self.memory_ops), "value_pool": list(self.value_pool)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MutationDescriptor:
        ops = tuple(str(o) for o in d.get("memory_ops", MEMORY_OPS))
        bad = [o for o in ops if o not in MEMORY_OPS]
        if bad:
            raise ValueError(f"unknown memory op(s) {bad}; allowed: {list(MEMORY_OPS)}")
        return cls(answer_fields=tuple(d.get("answer_fields", ("entity", "attribute", "scope"))),
                   replacement_targets={str(k): tuple(str(x) for x in v)
                                        for k, v in (d.get("replacement_targets") or {}).items()},
                   absent_targets={str(k): tuple(str(x) for x in v)
                                   for k, v in (d.get("absent_targets") or {}).items()},
                   memory_ops=ops, value_pool=tuple(str(v) for v in d.get("value_pool", ())))


#: The keys of a judge rubric (the MemOps ``judge_rubric`` and :meth:`ufuzz.llm.uses.Judge.judge`'s).
RUBRIC_KEYS = ("must_include", "must_not_include")


@dataclass(frozen=True)
class Rubric:
    """A benchmark's judging rubric for one question: strings a correct response contains and strings it
    must not contain (e.g. a superseded or retracted value). Only an LLM judge applies it; an empty rubric
    checks nothing and is false."""

    must_include: tuple[str, ...] = ()
    must_not_include: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.must_include or self.must_not_include)

    def to_dict(self) -> dict[str, list[str]]:
        return {"must_include": list(self.must_include), "must_not_include": list(self.must_not_include)}

    @classmethod
    def from_dict(cls, d: Any) -> Rubric:
        """Raises ``ValueError`` naming the key for anything but an object of string lists under
        :data:`RUBRIC_KEYS`."""
        if not isinstance(d, dict):
            raise ValueError(f"a rubric must be an object with {' / '.join(RUBRIC_KEYS)}, got {type(d).__name__}")
        unknown = sorted(set(d) - set(RUBRIC_KEYS))
        if unknown:
            raise ValueError(f"unknown rubric key(s) {unknown}; expected {' / '.join(RUBRIC_KEYS)}")
        for key in RUBRIC_KEYS:
            items = d.get(key, [])
            if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
                raise ValueError(f"rubric {key} must be a list of strings")
        return cls(must_include=tuple(d.get("must_include", ())),
                   must_not_include=tuple(d.get("must_not_include", ())))


@dataclass(frozen=True)
class Reference:
    """Expected behaviour for one query on one memory state: an answer or an abstention.

    ``answer`` is None exactly when ``abstain`` is True. ``supporting`` are the memory ids whose use is
    required; ``invalidated`` are ids (stale, superseded, deleted) whose use is a failure.
    ``aliases`` are accepted alternative surface forms of the answer; ``stale_answers`` are values that are
    wrong *because* they are out of date or deleted (their appearance in a response is a stale answer).
    ``rubric`` is the benchmark's own judging rubric, when it has one (MemOps); only an LLM judge uses it,
    the offline matching ignores it.
    """

    query_id: str
    answer: str | None
    abstain: bool = False
    supporting: tuple[str, ...] = ()
    invalidated: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    stale_answers: tuple[str, ...] = ()
    rubric: Rubric | None = None

    def __post_init__(self) -> None:
        if self.abstain and self.answer is not None:
            raise ValueError("a reference either abstains or has an answer, not both")
        if not self.abstain and not self.answer:
            raise ValueError("a non-abstaining reference needs an answer")

    def to_dict(self) -> dict[str, Any]:
        d = {"query_id": self.query_id, "answer": self.answer, "abstain": self.abstain,
             "supporting": list(self.supporting), "invalidated": list(self.invalidated),
             "aliases": list(self.aliases), "stale_answers": list(self.stale_answers)}
        if self.rubric is not None:  # optional: references without one serialize as before
            d["rubric"] = self.rubric.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Reference:
        rubric = d.get("rubric")
        return cls(query_id=str(d["query_id"]), answer=d.get("answer"), abstain=bool(d.get("abstain", False)),
                   supporting=tuple(str(x) for x in d.get("supporting", ())),
                   invalidated=tuple(str(x) for x in d.get("invalidated", ())),
                   aliases=tuple(str(x) for x in d.get("aliases", ())),
                   stale_answers=tuple(str(x) for x in d.get("stale_answers", ())),
                   rubric=None if rubric is None else Rubric.from_dict(rubric))

    def with_(self, **kw: Any) -> Reference:
        return replace(self, **kw)


@dataclass(frozen=True)
class Seed:
    """A checkpoint id + query + descriptor. The reference lives in ``SeedSuite.references``."""

    id: str
    checkpoint_id: str
    query: Query
    descriptor: MutationDescriptor

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "checkpoint_id": self.checkpoint_id, "query": self.query.to_dict(),
                "descriptor": self.descriptor.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Seed:
        return cls(id=str(d["id"]), checkpoint_id=str(d["checkpoint_id"]), query=Query.from_dict(d["query"]),
                   descriptor=MutationDescriptor.from_dict(d.get("descriptor") or {}))


@dataclass
class SeedSuite:
    """Checkpoints, seeds and references of one suite. References are keyed by query id."""

    name: str
    checkpoints: dict[str, Checkpoint] = field(default_factory=dict)
    seeds: list[Seed] = field(default_factory=list)
    references: dict[str, Reference] = field(default_factory=dict)

    def checkpoint_of(self, seed: Seed) -> Checkpoint:
        return self.checkpoints[seed.checkpoint_id]

    def reference_of(self, seed: Seed) -> Reference:
        return self.references[seed.query.id]
