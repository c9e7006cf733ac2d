"""Test cases, state operations and obligations: the units the engine moves around.

A :class:`FuzzCase` is a seed or a mutant: a query on a memory state. The memory state is described by a
*recipe* — the checkpoint id plus the ordered native operations applied to it — so any backend can
reproduce it (fork where it can copy, rebuild-and-replay where it cannot). A case never carries its
reference; references live on the oracle side (``ufuzz.oracles``), keyed by case id.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ufuzz.model.memory import Checkpoint, Memory
from ufuzz.model.provenance import Provenance
from ufuzz.model.query import MutationDescriptor, Query
from ufuzz.model.seed import Seed


@dataclass(frozen=True)
class StateOp:
    """One native memory operation of a state recipe."""

    op: str  # add | update | delete
    target: str | None = None  # memory id updated/deleted
    memory: Memory | None = None  # content written by add/update

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "target": self.target, "memory": self.memory.to_dict() if self.memory else None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StateOp:
        return cls(op=d["op"], target=d.get("target"),
                   memory=Memory.from_dict(d["memory"]) if d.get("memory") else None)


def state_key(checkpoint_id: str, ops: tuple[StateOp, ...]) -> str:
    """A stable name for the memory state reached by applying ``ops`` to the checkpoint."""
    payload = json.dumps([checkpoint_id, [o.to_dict() for o in ops]], sort_keys=True)
    return hashlib.sha1(payload.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Obligation:
    """One seed–operator–target test obligation."""

    seed_id: str
    operator: str
    target: str

    @property
    def key(self) -> str:
        return f"{self.seed_id}|{self.operator}|{self.target}"


CONTROL_SUFFIX = "~control"
"""Ends the id of a control case: a mutant's question on its checkpoint's own state, which the oracle asks before it
blames a state change (``ufuzz.oracles.oracle``); the store counts their executions apart."""


@dataclass(frozen=True)
class FuzzCase:
    id: str
    seed_id: str
    checkpoint_id: str
    query: Query
    descriptor: MutationDescriptor
    provenance: Provenance
    ops: tuple[StateOp, ...] = ()
    parent_id: str | None = None
    operator: str | None = None  # operator that produced this case (None for a seed)
    obligation: Obligation | None = None
    depth: int = 0
    detail: str = ""

    @cached_property
    def state_key(self) -> str:
        """The recipe's name (computed once per case: the engine asks for it at every step)."""
        return state_key(self.checkpoint_id, self.ops)

    @classmethod
    def from_seed(cls, seed: Seed, checkpoint: Checkpoint) -> FuzzCase:
        """A seed as a case: the checkpoint's own state (no ops), the seed's query and descriptor. Every
        campaign, replay and test builds seed cases here, so they are the same case everywhere."""
        if seed.checkpoint_id != checkpoint.id:
            raise ValueError(f"seed {seed.id} is on checkpoint {seed.checkpoint_id}, not {checkpoint.id}")
        return cls(id=seed.id, seed_id=seed.id, checkpoint_id=checkpoint.id, query=seed.query,
                   descriptor=seed.descriptor, provenance=Provenance.of(checkpoint))

    def child(self, case_id: str, *, operator: str, query: Query | None = None,
              provenance: Provenance | None = None, ops: tuple[StateOp, ...] = (),
              obligation: Obligation | None = None, detail: str = "",
              descriptor: MutationDescriptor | None = None) -> FuzzCase:
        """A mutant of this case, one level deeper: ``ops`` are appended to this case's recipe, so the
        mutant's state is always reproducible from the checkpoint alone."""
        return FuzzCase(id=case_id, seed_id=self.seed_id, checkpoint_id=self.checkpoint_id,
                        query=self.query if query is None else query,
                        descriptor=self.descriptor if descriptor is None else descriptor,
                        provenance=self.provenance if provenance is None else provenance,
                        ops=self.ops + tuple(ops), parent_id=self.id, operator=operator, obligation=obligation,
                        depth=self.depth + 1, detail=detail)
