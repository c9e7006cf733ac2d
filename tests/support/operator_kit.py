"""Helpers shared by the operator, validator, isolation and determinism tests (real suite, real backend)."""

from __future__ import annotations

import random
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from ufuzz.backends.adapters.embedded import EmbeddedBackend
from ufuzz.backends.protocol import Capabilities, StateHandle
from ufuzz.model import FuzzCase, Reference, Seed, SeedSuite
from ufuzz.operators import Mutation, Operator, StateView, all_operators
from ufuzz.seeds.io import load_suite

ROOT = Path(__file__).resolve().parents[2]

#: the embedded backend's update/delete policies (every combination)
POLICIES = [("append", "hard"), ("append", "tombstone"), ("rewrite", "hard"), ("rewrite", "tombstone")]


@lru_cache(maxsize=1)
def suite() -> SeedSuite:
    return load_suite(ROOT / "seeds" / "default.jsonl")


def case_of(seed: Seed, s: SeedSuite | None = None) -> FuzzCase:
    """A seed as a campaign turns it into a case."""
    s = s or suite()
    return FuzzCase.from_seed(seed, s.checkpoint_of(seed))


def state_moves(seed: Seed, s: SeedSuite) -> set[str]:
    """The memory-state operators that offer a move on ``seed`` of suite ``s``: what a seed states about itself
    (its fields, facts and value pool) decides it, each operator for itself."""
    case = case_of(seed, s)
    return {name for name, op in operators().items() if op.kind == "state" and op.targets(case)}


@lru_cache(maxsize=1)
def cases() -> tuple[FuzzCase, ...]:
    return tuple(case_of(seed) for seed in sorted(suite().seeds, key=lambda x: x.id))


def reference(case: FuzzCase) -> Reference:
    return suite().references[case.query.id]


def seed_by_id(seed_id: str) -> Seed:
    return next(x for x in suite().seeds if x.id == seed_id)


def operators() -> dict[str, Operator]:
    return all_operators()


def child_of(parent: FuzzCase, mutation: Mutation, op: Operator, case_id: str) -> FuzzCase:
    """The mutant case a step (:mod:`ufuzz.engine.step`) builds from ``mutation``."""
    return parent.child(case_id, operator=op.name, query=mutation.query, provenance=mutation.provenance,
                        ops=mutation.ops, detail=mutation.detail, descriptor=mutation.descriptor)


def embedded(tmp: Path, update_policy: str = "append", delete: str = "hard", retrieval: str = "dense",
             cls: type[EmbeddedBackend] = EmbeddedBackend) -> EmbeddedBackend:
    return cls(tmp, {"retrieval": retrieval, "update_policy": update_policy, "delete": delete, "db": "memory"})


class NoRetrievalBackend(EmbeddedBackend):
    """An embedded backend on which any retrieval or response is a test failure."""

    def retrieve(self, state: StateHandle, query: str, k: int):
        raise AssertionError(f"retrieve() called by an operator or validator ({query!r})")

    def answer(self, state: StateHandle, query: str, retrieved):
        raise AssertionError("answer() called by an operator or validator")


class NonCopyableBackend(EmbeddedBackend):
    """An embedded backend that says it cannot copy a state: the executor must rebuild and replay."""

    @property
    def capabilities(self) -> Capabilities:
        return replace(super().capabilities, copyable=False)

    def fork(self, state: StateHandle) -> StateHandle:
        raise NotImplementedError("this backend cannot copy a state")


def snapshot(view: StateView) -> list[tuple[str, str, str, bool]]:
    """Everything get/list shows of a state."""
    return sorted((m.id, m.text, m.timestamp, m.active) for m in view.list())


def rng(*parts: object) -> random.Random:
    return random.Random("|".join(map(str, parts)))
