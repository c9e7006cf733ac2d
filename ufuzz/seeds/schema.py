"""The seed-file format as strict pydantic models: what each JSONL record may hold, checked before use.

One model per record kind (:class:`HeaderRecord`, :class:`CheckpointRecord`, :class:`SeedRecord`,
:class:`ReferenceRecord`) and per nested object (:class:`MemoryModel`, :class:`FactModel`,
:class:`EntityModel`, :class:`QueryModel`, :class:`FieldsModel`, :class:`DescriptorModel`,
:class:`RubricModel`). They are strict (see :mod:`ufuzz._util.strict`): ``"answerable": "no"`` is not false,
``"supporting": "p1-m2"`` is not a list, NaN is not a value, unknown keys are typos. Texts have size limits
so that a runaway line is refused at once instead of being embedded for minutes. After validation each
record becomes the frozen dataclass of :mod:`ufuzz.model` the rest of ufuzz uses (``to_model``).

What a single record cannot know — a seed's checkpoint exists, a reference's memory ids are in that
checkpoint, every reference has its seed — is checked across the file by :func:`ufuzz.seeds.io.load_suite`.
:func:`json_schema` publishes the per-line format as a JSON Schema (``ufuzz seeds schema``;
``seeds/schema.json`` is the committed copy) so that other tools can check a seed file too.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints, TypeAdapter, WithJsonSchema

from ufuzz._util.jsonl import MAX_LINE_BYTES
from ufuzz._util.strict import IdText, OpenModel, StrictModel, Text
from ufuzz.model import (
    SCHEMA_VERSION,
    Checkpoint,
    Entity,
    Fact,
    Memory,
    MutationDescriptor,
    Query,
    QueryFields,
    Reference,
    Rubric,
    Seed,
)

__all__ = [
    "MAX_LINE_BYTES", "MAX_ID", "MAX_MEMORY_TEXT", "MAX_QUERY_TEXT", "MAX_VALUE", "MAX_NAME", "FORMS",
    "MemoryModel", "FactModel", "EntityModel", "CheckpointBody", "CheckpointRecord", "FieldsModel",
    "QueryModel", "DescriptorModel", "SeedRecord", "RubricModel", "ReferenceBody", "ReferenceRecord",
    "HeaderRecord", "RECORDS", "RecordError", "json_schema",
]

MAX_ID = 512
#: one memory; a long chat turn is a few thousand characters
MAX_MEMORY_TEXT = 100_000
MAX_QUERY_TEXT = 10_000
#: answers, fact values, aliases, pool values
MAX_VALUE = 10_000
#: entity, attribute, type and field names
MAX_NAME = 1_000
#: the syntactic forms of a query (``ufuzz.seeds.wording.FORMS`` plus ``free`` for imported free text)
FORMS = ("question", "imperative", "indirect", "free")

_ISO = r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?(?:Z|[+-]\d{2}:\d{2})?$"


def _iso_timestamp(value: str) -> str:
    if not re.match(_ISO, value):
        raise ValueError(f"must be an ISO-8601 date or date-time such as 2023-07-03T19:53:00, got {value[:60]!r}")
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"not a real date and time: {value!r} ({exc})") from None
    return value


Id = IdText(MAX_ID)  # no control characters (NUL, newline …)
Name = Text(MAX_NAME)
Value = Text(MAX_VALUE)
MemoryText = Text(MAX_MEMORY_TEXT)
QueryText = Text(MAX_QUERY_TEXT)
Context = Text(MAX_QUERY_TEXT, blank=True)
#: ISO-8601 date or date-time (``2023-07-03T19:53:00``); memories are ordered by it
Timestamp = Annotated[str, AfterValidator(_iso_timestamp), WithJsonSchema(
    {"type": "string", "pattern": _ISO, "description": "ISO-8601 date or date-time, e.g. 2023-07-03T19:53:00"})]
OpName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]


class RecordError(ValueError):
    """A problem a record's fields do not show on their own (e.g. an evidence id outside the checkpoint);
    ``field`` names where it is."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


# ====================================================================== memory side


class MemoryModel(StrictModel):
    """One memory: a stable id, non-empty text and an ISO-8601 timestamp."""

    id: Id
    text: MemoryText
    timestamp: Timestamp
    metadata: dict[str, Any] = Field(default_factory=dict)

    def to_model(self) -> Memory:
        return Memory(id=self.id, text=self.text, timestamp=self.timestamp, metadata=dict(self.metadata))


class FactModel(StrictModel):
    """An entity–attribute–value fact with the ids of the memories that evidence it."""

    entity: Name
    attribute: Name
    value: Value
    evidence: list[Id]
    valid: bool = True
    value_type: Name = "text"
    valid_from: Timestamp | None = None
    deleted: bool = False  # a value whose evidence was deleted (mutated states; seed files leave it out)

    def to_model(self) -> Fact:
        return Fact(entity=self.entity, attribute=self.attribute, value=self.value, evidence=tuple(self.evidence),
                    valid=self.valid, value_type=self.value_type, valid_from=self.valid_from,
                    deleted=self.deleted)


class EntityModel(StrictModel):
    name: Name
    type: Name
    pronoun: Literal["he", "she", "they"] | None = None  # how the benchmark refers to a person, where known

    def to_model(self) -> Entity:
        return Entity(name=self.name, type=self.type, pronoun=self.pronoun)


class CheckpointBody(StrictModel):
    """A memory state: at least one memory, and the facts and entities they evidence."""

    id: Id
    memories: list[MemoryModel] = Field(min_length=1)
    facts: list[FactModel] = Field(default_factory=list)
    entities: list[EntityModel] = Field(default_factory=list)

    def check(self) -> None:
        """Memory ids are unique; every evidence id is a memory of this checkpoint."""
        seen: set[str] = set()
        for i, m in enumerate(self.memories):
            if m.id in seen:
                raise RecordError(f"memories[{i}].id", f"duplicate memory id {m.id!r}")
            seen.add(m.id)
        for i, f in enumerate(self.facts):
            for j, e in enumerate(f.evidence):
                if e not in seen:
                    raise RecordError(f"facts[{i}].evidence[{j}]",
                                      f"evidence id {e!r} is not a memory of this checkpoint")

    def to_model(self) -> Checkpoint:
        return Checkpoint(id=self.id, memories=tuple(m.to_model() for m in self.memories),
                          facts=tuple(f.to_model() for f in self.facts),
                          entities=tuple(e.to_model() for e in self.entities))


class CheckpointRecord(CheckpointBody):
    kind: Literal["checkpoint"]


# ====================================================================== query side


class FieldsModel(StrictModel):
    """The answer-affecting fields of a query."""

    entity: Name
    attribute: Name
    scope: Literal["current", "previous", "any"] = "current"
    answerable: bool = True

    def to_model(self) -> QueryFields:
        return QueryFields(entity=self.entity, attribute=self.attribute, scope=self.scope,
                           answerable=self.answerable)


class QueryModel(StrictModel):
    id: Id
    text: QueryText
    fields: FieldsModel
    context: Context = ""
    form: Literal["question", "imperative", "indirect", "free"] = "question"
    template: Name | None = None
    #: when the question is asked (a benchmark's question date): nothing a state operator writes is dated later
    asked_at: Timestamp | None = None

    def to_model(self) -> Query:
        return Query(id=self.id, text=self.text, fields=self.fields.to_model(), context=self.context,
                     form=self.form, template=self.template, asked_at=self.asked_at)


class DescriptorModel(StrictModel):
    """What operators may do with a seed; never the answer. ``memory_ops`` null/absent: every state operator."""

    answer_fields: list[Literal["entity", "attribute", "scope"]] = Field(
        default_factory=lambda: ["entity", "attribute", "scope"])
    replacement_targets: dict[Name, list[Value]] = Field(default_factory=dict)
    absent_targets: dict[Name, list[Value]] = Field(default_factory=dict)
    memory_ops: list[OpName] | None = None
    value_pool: list[Value] = Field(default_factory=list)

    def to_model(self) -> MutationDescriptor:
        return MutationDescriptor(
            answer_fields=tuple(self.answer_fields),
            replacement_targets={k: tuple(v) for k, v in self.replacement_targets.items()},
            absent_targets={k: tuple(v) for k, v in self.absent_targets.items()},
            memory_ops=None if self.memory_ops is None else tuple(self.memory_ops),
            value_pool=tuple(self.value_pool))


class SeedRecord(StrictModel):
    """A seed: a checkpoint id, a query and its descriptor. The answer lives in a reference record."""

    kind: Literal["seed"]
    id: Id
    checkpoint_id: Id
    query: QueryModel
    descriptor: DescriptorModel = Field(default_factory=DescriptorModel)
    #: the benchmark's labels for the question (LoCoMo's category, LongMemEval's question_type)
    metadata: dict[Name, str | int | float | bool | None] = Field(default_factory=dict)

    def to_model(self) -> Seed:
        return Seed(id=self.id, checkpoint_id=self.checkpoint_id, query=self.query.to_model(),
                    descriptor=self.descriptor.to_model(), metadata=dict(self.metadata))


# ====================================================================== reference side


class RubricModel(StrictModel):
    """A benchmark's judging rubric (only an LLM judge applies it)."""

    must_include: list[Value] = Field(default_factory=list)
    must_not_include: list[Value] = Field(default_factory=list)
    #: the benchmark's judging criteria for the question's type (LongMemEval, LoCoMo), applied by the judge
    benchmark: Name | None = None
    question_type: Value | None = None
    criteria: Value | None = None
    criteria_version: Value | None = None

    def to_model(self) -> Rubric:
        return Rubric(must_include=tuple(self.must_include), must_not_include=tuple(self.must_not_include),
                      benchmark=self.benchmark, question_type=self.question_type, criteria=self.criteria,
                      criteria_version=self.criteria_version)


class ReferenceBody(StrictModel):
    """Expected behaviour for one query: an answer (``abstain`` false) or an abstention (``answer`` null)."""

    query_id: Id
    answer: Value | None = None
    abstain: bool = False
    supporting: list[Id] = Field(default_factory=list)
    invalidated: list[Id] = Field(default_factory=list)
    aliases: list[Value] = Field(default_factory=list)
    stale_answers: list[Value] = Field(default_factory=list)
    rubric: RubricModel | None = None
    #: extractive: the answer is written in a supporting memory; abstractive: a summary or inference
    answer_form: Literal["extractive", "abstractive"] | None = None

    def check(self) -> None:
        if self.abstain and self.answer is not None:
            raise RecordError("answer", "a reference either abstains (abstain true, answer null) or has an "
                              "answer, not both")
        if not self.abstain and self.answer is None:
            raise RecordError("answer", "a non-abstaining reference needs an answer (or set abstain true)")
        both = sorted(set(self.supporting) & set(self.invalidated))
        if both:
            raise RecordError("invalidated", f"memory id {both[0]!r} is both supporting and invalidated")

    def memory_ids(self) -> list[tuple[str, str]]:
        """``(field, id)`` of every memory id the reference names."""
        return ([(f"supporting[{i}]", m) for i, m in enumerate(self.supporting)]
                + [(f"invalidated[{i}]", m) for i, m in enumerate(self.invalidated)])

    def to_model(self) -> Reference:
        return Reference(query_id=self.query_id, answer=self.answer, abstain=self.abstain,
                         supporting=tuple(self.supporting), invalidated=tuple(self.invalidated),
                         aliases=tuple(self.aliases), stale_answers=tuple(self.stale_answers),
                         rubric=None if self.rubric is None else self.rubric.to_model(),
                         answer_form=self.answer_form)


class ReferenceRecord(ReferenceBody):
    kind: Literal["reference"]


# ====================================================================== header


class HeaderRecord(OpenModel):
    """The first line. Keys besides these (``generator``, ``generator_args``, ``source`` …) are kept as
    provenance of the file."""

    kind: Literal["header"]
    schema_: Literal[1] = Field(alias="schema", description=f"format version; this ufuzz reads {SCHEMA_VERSION}")
    suite: Name | None = None


#: the model of each record kind
RECORDS: dict[str, type[StrictModel] | type[OpenModel]] = {
    "header": HeaderRecord, "checkpoint": CheckpointRecord, "seed": SeedRecord, "reference": ReferenceRecord,
}


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one line of a seed file (every line is one of the four record kinds)."""
    line = Annotated[HeaderRecord | CheckpointRecord | SeedRecord | ReferenceRecord, Field(discriminator="kind")]
    schema = TypeAdapter(line).json_schema(by_alias=True)
    limits = (f"A line holds at most {MAX_LINE_BYTES} bytes; NaN and Infinity are not JSON. Rules across lines "
              "(checked by `ufuzz seeds check`, not expressible here): the header comes first and once; ids "
              "are unique per kind; every seed's checkpoint exists and every seed has exactly one reference "
              "(keyed by its query id); every reference belongs to a seed; a reference's supporting and "
              "invalidated ids are memories of that seed's checkpoint; a file holds at least one seed.")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"ufuzz seed file, one JSON object per line (schema version {SCHEMA_VERSION})",
            "description": re.sub(r"\s+", " ", limits), **schema}
