"""Operator interface: each operator is bound to seed–operator–target obligations and has a validator.

An operator ``mutate``s a parent case for one target and then ``validate``s its own output. Validators
see only query fields, checkpoint provenance, backend *state* (get/list) and the results of the native
operations the operator itself issued — never retrieval results or responses. This is enforced by the type
of what they are handed: a :class:`StateView`, which exposes add/update/delete/get/list and nothing else.

State operators run against a fork of the parent state that the executor prepared; a state mutant whose
validation fails is discarded and is not counted as a test.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from ufuzz.backends.protocol import MemoryBackend, OpResult, StateHandle, StoredMemory
from ufuzz.model import FuzzCase, Memory, MutationDescriptor, Provenance, Query, Reference, StateOp


class StateView:
    """The part of a backend a state operator and its validator may touch: ops and observation only.

    ``listings`` (a mapping from state key to a listing) with ``key`` (the state's key, e.g. the parent's
    ``state_key`` for a fresh fork) lets ``list()`` reuse the listing of an unchanged state: until the first
    write through this view the state is the keyed one, afterwards every ``list()`` asks the backend."""

    def __init__(self, backend: MemoryBackend, state: StateHandle, *, listings: Any = None,
                 key: str | None = None) -> None:
        self._backend = backend
        self._state = state
        self._listings = listings
        self._key = key if listings is not None else None
        self._written = False
        #: the state's listing before the first write through this view, once something listed it
        #: (:meth:`remember_before`): what a side effect is measured against (:mod:`ufuzz.operators.sideeffects`)
        self.before: list[StoredMemory] | None = None

    def remember_before(self) -> None:
        """Keep the listing of the state as it is now (before this view's first write)."""
        if not self._written:
            self.list()

    def _write(self) -> None:
        self._key = None
        self._written = True

    def add(self, memory: Memory) -> OpResult:
        self._write()
        return self._backend.add(self._state, memory)

    def update(self, memory_id: str, new: Memory) -> OpResult:
        self._write()
        return self._backend.update(self._state, memory_id, new)

    def delete(self, memory_id: str) -> OpResult:
        self._write()
        return self._backend.delete(self._state, memory_id)

    def get(self, memory_id: str) -> StoredMemory | None:
        return self._backend.get(self._state, memory_id)

    def list(self) -> list[StoredMemory]:
        if self._key is None:
            got = self._backend.list(self._state)
        else:
            hit = self._listings.get(self._key)
            if hit is None:
                hit = tuple(self._backend.list(self._state))
                self._listings[self._key] = hit
            got = list(hit)
        if not self._written and self.before is None:
            self.before = list(got)
        return got


@dataclass(frozen=True)
class Mutation:
    """An operator's proposed mutant: new query and/or state, with the reference derived for it."""

    query: Query
    provenance: Provenance
    reference: Reference
    ops: tuple[StateOp, ...] = ()  # native ops this mutation applied (state operators)
    results: tuple[OpResult, ...] = ()
    detail: str = ""
    #: the mutant's descriptor where the mutation changes what it may do (a target change to another attribute
    #: needs values of that attribute for later updates); None: the parent's
    descriptor: MutationDescriptor | None = None


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""
    checks: tuple[str, ...] = field(default_factory=tuple)
    #: a change the system made beyond the operation (a :class:`~ufuzz.operators.sideeffects.Finding`): the
    #: mutant is not a test, but the change is a failure of the ``state`` level
    finding: Any = None

    @classmethod
    def side_effect(cls, finding: Any) -> Verdict:
        return cls(False, finding.reason, finding=finding)

    @classmethod
    def accept(cls, *checks: str) -> Verdict:
        return cls(True, "", tuple(checks))

    @classmethod
    def reject(cls, reason: str) -> Verdict:
        return cls(False, reason)


class Rejected(Exception):
    """Raised by ``mutate`` when no mutant can be produced for this target (not a test). ``final``: no other
    draw can go otherwise on this state (what the operator drew is not what failed), so it is not tried again
    even where :meth:`Operator.varies` says the move is drawn."""

    def __init__(self, reason: str, *, final: bool = False) -> None:
        super().__init__(reason)
        self.final = final


class Operator(ABC):
    """A mutation operator. A named subclass in a module of ``ufuzz.operators`` is registered by that alone
    (:mod:`ufuzz.operators.registry`); another package registers one through the ``ufuzz.operators``
    entry-point group."""

    name: str = "abstract"
    kind: str = "query"  # "query" or "state"
    #: True when the mutant must behave like its parent (paraphrase, unrelated edit)
    meaning_preserving: bool = False
    #: True when the mutant asks, by construction, what the memory cannot support (an absent target, the other
    #: speaker): where the backend declares a relevance threshold, its operation predicts that nothing is selected
    unanswerable: bool = False
    #: place in a campaign's operator list (ties by name): it fixes the order of the moves the campaign's
    #: random choices see, so it is part of what makes a campaign reproducible
    order: int = 100
    #: an opt-in operator is part of a campaign only when named (``--strategy stress``, or a config's
    #: ``operators``): adding it to every campaign would change the default campaign and its measured figures
    opt_in: bool = False

    @classmethod
    def create(cls, *, realizer: Any = None) -> Operator:
        """A fresh instance for one campaign. ``realizer`` is the optional LLM paraphrase realizer; operators
        that do not word text ignore it."""
        return cls()

    def varies(self, case: FuzzCase, target: str) -> bool:
        """Whether the mutant for ``target`` on ``case`` depends on the rng (beyond its new ids): only then can
        another try go otherwise after a rejection. By default a move is deterministic, so a rejection is
        final and the scheduler never retries it."""
        return False

    @abstractmethod
    def targets(self, case: FuzzCase) -> list[str]:
        """Obligation targets this operator has on ``case`` (deterministic order)."""

    @abstractmethod
    def mutate(self, case: FuzzCase, parent_ref: Reference, target: str, rng: random.Random,
               view: StateView | None = None) -> Mutation:
        """Produce a mutant for ``target``. State operators issue native ops through ``view``."""

    @abstractmethod
    def validate(self, case: FuzzCase, mutation: Mutation, view: StateView | None = None) -> Verdict:
        """Independent check that ``mutation`` is what the operator claims."""
