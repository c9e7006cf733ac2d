"""Memories, provenance facts, entities and checkpoints: the memory side of a seed.

Ids are the checkpoint's, never a backend's. Every class is a frozen dataclass with ``to_dict``/``from_dict`` so
that the on-disk JSONL schema (``ufuzz.seeds.io``) is one obvious mapping.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any


def utc_time(timestamp: str) -> datetime:
    """An ISO-8601 timestamp as an aware date-time, one without a zone read as UTC ("Z" accepted on every Python);
    ``ValueError`` when it is none. Memory timestamps are compared through this wherever their form may vary."""
    when = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


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
    ``deleted`` is True for a value whose evidence was deleted or overwritten in place: it is no longer in
    memory, and ``evidence`` keeps the ids it had (their retrieval, or the value in an answer, is stale).
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
    deleted: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"] = list(self.evidence)
        if not self.deleted:  # only mutated states have deleted history: seed files stay as they were
            del d["deleted"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Fact:
        return cls(entity=str(d["entity"]), attribute=str(d["attribute"]), value=str(d["value"]),
                   evidence=tuple(str(e) for e in d["evidence"]), valid=bool(d.get("valid", True)),
                   value_type=str(d.get("value_type", "text")), valid_from=d.get("valid_from"),
                   deleted=bool(d.get("deleted", False)))


@dataclass(frozen=True)
class Entity:
    """A named entity of a checkpoint. ``pronoun`` (``he``/``she``/``they``) is how the benchmark refers to a
    person, where an importer can tell (so a question can be re-worded about another person without
    mixing up pronouns); optional, and absent from the JSON when unknown."""

    name: str
    type: str  # person, pet, place, ...
    pronoun: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"name": self.name, "type": self.type}
        if self.pronoun is not None:
            d["pronoun"] = self.pronoun
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Entity:
        pronoun = d.get("pronoun")
        return cls(name=str(d["name"]), type=str(d["type"]), pronoun=None if pronoun is None else str(pronoun))


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
