"""The regression-corpus file format as strict pydantic models, and the content hash of its records.

A corpus line is a header, a checkpoint, a seed (id, checkpoint and descriptor only) or a failure record (a
parent and a mutant recipe with their references, and the expected verdict). The memory-side and query-side
objects are the seed file's own models (:mod:`ufuzz.seeds.schema`), so a corpus is as strict as a seed
file: no coercion, no unknown keys, no NaN, texts within the same limits.

Since schema 2 every record but the header carries ``sha256``, the SHA-256 of its canonical JSON (keys
sorted, no whitespace, the ``sha256`` key left out): a memory text, an op or a reference edited by hand after
the export no longer matches, and loading names the line. It guards against accidental edits (a merge, a
search-and-replace), not against someone who recomputes the hash. Schema 1 files (written before hashes)
still load, without that check.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from ufuzz._util.strict import OpenModel, StrictModel, Text
from ufuzz.model import StateOp
from ufuzz.seeds.schema import (
    MAX_ID,
    MAX_VALUE,
    CheckpointBody,
    DescriptorModel,
    MemoryModel,
    QueryModel,
    RecordError,
    ReferenceBody,
)

__all__ = ["SCHEMA", "READS", "HASHED_SINCE", "content_hash", "HeaderModel", "CheckpointLine", "SeedLine",
           "FailureLine", "StateOpModel", "CaseModel", "MutantModel", "RECORDS"]

#: the schema this ufuzz writes, and the ones it reads
SCHEMA = 2
READS = (1, 2)
#: the first schema whose records carry a content hash
HASHED_SINCE = 2

Id = Text(MAX_ID)
Name = Text(1_000)
Detail = Text(MAX_VALUE, blank=True)
FailureKey = Text(128)
OffendingId = Text(MAX_ID, blank=True)
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
OpName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]


def content_hash(record: dict[str, Any]) -> str:
    """SHA-256 (hex) of ``record``'s canonical JSON without its ``sha256`` key."""
    body = {k: v for k, v in record.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class HeaderModel(OpenModel):
    """The first line: which backend (and options, k) the failures were found on; other keys are kept."""

    kind: Literal["header"]
    schema_: int = Field(alias="schema")
    corpus: Literal["regression"] = "regression"
    backend: Name
    backend_options: dict[str, Any]
    k: int = Field(ge=1, le=1000)
    records: int | None = Field(default=None, ge=0)
    judging: dict[str, Any] | None = None  # how the failures were decided (ufuzz.oracles.judging.Judging)


class CheckpointLine(CheckpointBody):
    kind: Literal["checkpoint"]
    sha256: Sha256 | None = None


class SeedLine(StrictModel):
    kind: Literal["seed"]
    id: Id
    checkpoint_id: Id
    descriptor: DescriptorModel = Field(default_factory=DescriptorModel)
    sha256: Sha256 | None = None


class StateOpModel(StrictModel):
    """One native operation of a recipe: ``add`` a memory, ``update`` a target with a memory, ``delete`` a
    target."""

    op: Literal["add", "update", "delete"]
    target: Id | None = None
    memory: MemoryModel | None = None

    def check(self) -> None:
        if self.op in ("update", "delete") and self.target is None:
            raise RecordError("target", f"a{'n' if self.op == 'update' else ''} {self.op} op needs a target")
        if self.op in ("add", "update") and self.memory is None:
            raise RecordError("memory", f"an {self.op} op needs the memory it writes")

    def to_model(self) -> StateOp:
        return StateOp(op=self.op, target=self.target,
                       memory=None if self.memory is None else self.memory.to_model())


class CaseModel(StrictModel):
    """One side of a failure: a query on the checkpoint with ``ops`` replayed, and its reference."""

    id: Id
    operator: OpName | None = None
    depth: int = Field(default=0, ge=0, le=10_000)
    query: QueryModel
    ops: list[StateOpModel]
    reference: ReferenceBody
    detail: Detail = ""


class ObligationModel(StrictModel):
    operator: OpName
    target: Detail


class MutantModel(CaseModel):
    obligation: ObligationModel


class ExpectedModel(StrictModel):
    kind: Name
    stage: Name
    failure_key: FailureKey
    offending: list[OffendingId] = Field(default_factory=list)
    cause_key: FailureKey | None = None  # the failure's cause (ufuzz run --baseline matches on it too)
    status: Name = "failing"  # failing (a known failure) | fixed (accepted as fixed: must keep passing)


class DiscoveryModel(StrictModel):
    first_seq: int | None = Field(default=None, ge=0)
    occurrences: int = Field(default=1, ge=1)


class FailureLine(StrictModel):
    kind: Literal["failure"]
    seed_id: Id
    checkpoint_id: Id
    parent: CaseModel
    mutant: MutantModel
    expected: ExpectedModel
    discovery: DiscoveryModel = Field(default_factory=DiscoveryModel)
    sha256: Sha256 | None = None


RECORDS: dict[str, type[StrictModel] | type[OpenModel]] = {
    "header": HeaderModel, "checkpoint": CheckpointLine, "seed": SeedLine, "failure": FailureLine,
}
