"""Seeds and seed suites: a checkpoint id + query + descriptor; references keyed by query id."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ufuzz.model.memory import Checkpoint
from ufuzz.model.query import MutationDescriptor, Query
from ufuzz.model.reference import Reference

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Seed:
    """A checkpoint id + query + descriptor. The reference lives in ``SeedSuite.references``.

    ``metadata`` is what the benchmark says about the question that is not a field and not the answer (e.g.
    LoCoMo's ``category``); optional, and absent from the JSON when empty, so older files load unchanged.
    """

    id: str
    checkpoint_id: str
    query: Query
    descriptor: MutationDescriptor
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_dict(self) -> dict[str, Any]:
        d = {"id": self.id, "checkpoint_id": self.checkpoint_id, "query": self.query.to_dict(),
             "descriptor": self.descriptor.to_dict()}
        if self.metadata:
            d["metadata"] = dict(self.metadata)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Seed:
        meta = d.get("metadata") or {}
        if not isinstance(meta, dict):
            raise ValueError(f"seed metadata must be an object, got {type(meta).__name__}")
        return cls(id=str(d["id"]), checkpoint_id=str(d["checkpoint_id"]), query=Query.from_dict(d["query"]),
                   descriptor=MutationDescriptor.from_dict(d.get("descriptor") or {}), metadata=dict(meta))


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
