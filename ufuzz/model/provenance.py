"""Checkpoint provenance as a graph: entities → attributes → values → evidence memories.

Nodes are typed tuples so that names never collide: ``("entity", name)``, ``("attr", entity, attribute)``,
``("value", entity, attribute, value)`` and ``("memory", id)``. Value nodes carry ``valid`` (False when a
later memory superseded the value), ``deleted`` (its evidence is gone), ``value_type`` and ``valid_from``.

A :class:`Provenance` is immutable; memory-state operators derive a new one (``with_update``,
``with_deletion``, ``with_memory``) from the *verified* result of a backend operation, so that every state a
campaign reaches has its own provenance and references can be derived from it alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache

import networkx as nx

from ufuzz.model.memory import Checkpoint, Entity, Fact
from ufuzz.model.query import QueryFields
from ufuzz.model.reference import Reference

#: Value types that name when one event happened (a date, a year, a date told relative to another). An event has
#: one date: a later value of it corrects the earlier one (see :meth:`Provenance.scope_of`).
DATED = ("date", "year", "relative_date")


@dataclass(frozen=True)
class Provenance:
    facts: tuple[Fact, ...]
    entities: tuple[Entity, ...]
    memory_ids: frozenset[str]
    memory_texts: tuple[tuple[str, str], ...] = ()  # (id, text) for text-level absence checks

    # -- construction -------------------------------------------------------------------------------
    @classmethod
    def of(cls, checkpoint: Checkpoint) -> Provenance:
        return cls(facts=tuple(checkpoint.facts), entities=tuple(checkpoint.entities),
                   memory_ids=frozenset(m.id for m in checkpoint.memories),
                   memory_texts=tuple((m.id, m.text) for m in checkpoint.memories))

    def graph(self) -> nx.DiGraph:
        g = nx.DiGraph()
        for e in self.entities:
            g.add_node(("entity", e.name), type=e.type)
        for mid in self.memory_ids:
            g.add_node(("memory", mid))
        for f in self.facts:
            en, an = ("entity", f.entity), ("attr", f.entity, f.attribute)
            vn = ("value", f.entity, f.attribute, f.value)
            if en not in g:
                g.add_node(en, type="unknown")
            g.add_node(an, attribute=f.attribute)
            g.add_node(vn, valid=f.valid, deleted=f.deleted, value_type=f.value_type, valid_from=f.valid_from,
                       value=f.value)
            g.add_edge(en, an)
            g.add_edge(an, vn)
            for mid in f.evidence:
                g.add_edge(vn, ("memory", mid))
        return g

    # -- queries ------------------------------------------------------------------------------------
    def entity_names(self) -> list[str]:
        names = {e.name for e in self.entities} | {f.entity for f in self.facts}
        return sorted(names)

    def entity_type(self, name: str) -> str | None:
        for e in self.entities:
            if e.name == name:
                return e.type
        return None

    def facts_for(self, entity: str, attribute: str) -> list[Fact]:
        return [f for f in self.facts if f.entity == entity and f.attribute == attribute]

    def attributes_of(self, entity: str) -> list[str]:
        return sorted({f.attribute for f in self.facts if f.entity == entity})

    def active(self, entity: str, attribute: str) -> Fact | None:
        """The value valid now: the latest valid fact still in memory, or None."""
        valid = [f for f in self.facts_for(entity, attribute) if f.valid and not f.deleted]
        return max(valid, key=_order) if valid else None

    def predecessor(self, entity: str, attribute: str) -> Fact | None:
        """The value the active one replaced (the latest other fact ordered before it, possibly deleted), or
        None when there is no active value or it replaced nothing."""
        act = self.active(entity, attribute)
        if act is None:
            return None
        before = [f for f in self.facts_for(entity, attribute) if f is not act and _order(f) <= _order(act)]
        return max(before, key=_order) if before else None

    def previous(self, entity: str, attribute: str) -> Fact | None:
        """The answer of a ``previous``-scope question: the value the active one replaced, when that value
        is still in memory; else None (see :meth:`reference_for` for when the question is undefined)."""
        pred = self.predecessor(entity, attribute)
        return pred if pred is not None and not pred.deleted else None

    def first_told(self, entity: str, attribute: str) -> str | None:
        """When (entity, attribute) was first told: the ``valid_from`` of the first value of its history (an importer
        dates a fact by its evidence), or None where that value is not dated (an update's later date is no telling
        time of the event)."""
        facts = self.facts_for(entity, attribute)
        return min(facts, key=_order).valid_from if facts else None

    def relevant_ids(self, entity: str, attribute: str) -> set[str]:
        """Every memory still in the state that evidences any value (current or past) of (entity, attribute)."""
        return {mid for f in self.facts_for(entity, attribute) if not f.deleted for mid in f.evidence}

    def mentions(self, memory_id: str) -> set[tuple[str, str]]:
        return {(f.entity, f.attribute) for f in self.facts if not f.deleted and memory_id in f.evidence}

    def text_mentions(self, needle: str) -> list[str]:
        """Ids of the memories whose text mentions ``needle`` as a whole word, case-insensitively ("Wen" is
        not in "went"; a needle starting or ending with punctuation still matches at a word boundary)."""
        n = needle.strip().lower()
        if not n:
            return []
        pat = _word_pattern(n)
        return [mid for mid, text in self.memory_texts if n in text.lower() and pat.search(text.lower())]

    def values_of_type(self, value_type: str) -> set[str]:
        return {f.value for f in self.facts if f.value_type == value_type}

    def scope_of(self, fields: QueryFields) -> str:
        """The scope a question's reference is derived under: its own, except for a question over every value
        (``any``, "When did Melanie go to the park?") of a date whose history is one value superseding others. An
        event has one date, so a later date of it — an update, which the backend records as superseding the memory
        that told the old one — corrects the old date rather than adding a second occurrence: such a question is
        judged as asking the ``current`` value (the old date stale, its memory invalid). A date with no history, a
        lone value no longer valid, or two valid at once (a recurring event) keeps the question's own scope."""
        facts = self.facts_for(fields.entity, fields.attribute)
        if (fields.scope == "any" and any(f.value_type in DATED for f in facts) and len(facts) > 1
                and sum(f.valid for f in facts) == 1):
            return "current"
        return fields.scope

    def reference_for(self, query_id: str, fields: QueryFields) -> Reference:
        """The expected behaviour for ``fields``, derived from provenance alone.

        Over the value history of (entity, attribute) — values superseded by later ones, values deleted
        (``Fact.deleted``), at most one active value:

        * ``current``: the active value, supported by its evidence; every other value's evidence is
          invalidated and every other value is a stale answer. No active value: abstain — except when the
          latest value was deleted and earlier ones are still in memory: undefined, since what superseded
          them is gone (a system left with "Zofia is into model railways" may answer that or abstain; neither
          is wrong, so no test may be built on it). Values invalidated by a memory still present (a
          retraction) leave the abstention defined.
        * ``previous``: the value the active one replaced (the answer), and every earlier value still in memory
          (aliases: "what did she do previously?" is rightly answered by any value before the current one),
          supported by their evidence; only deleted values are invalid (the active value is
          history-consistent, just not the answer). Nothing replaced, or nothing left in memory: abstain. Undefined (:class:`UndefinedReference`) when values are left but none is
          active, or the replaced one was deleted — no answer is right then, so no test may be built on it.
        * ``any``: any value still in memory (the latest is the answer, the others aliases), supported by all
          their evidence; deleted values are invalid and stale. Nothing left: abstain. A date one value
          superseded others of is judged as ``current`` (:meth:`scope_of`).
        """
        facts = self.facts_for(fields.entity, fields.attribute)
        gone = [f for f in facts if f.deleted]
        scope = self.scope_of(fields)
        if scope == "current":
            act = self.active(fields.entity, fields.attribute)
            if act is None and facts and max(facts, key=_order).deleted and any(not f.deleted for f in facts):
                raise UndefinedReference(f"{fields.entity}.{fields.attribute}: the current value was deleted and "
                                         "earlier ones are left, so whether they hold again is unknown")
            return _reference(query_id, [act] if act else [], [f for f in facts if f is not act])
        if scope == "previous":
            if not any(not f.deleted for f in facts):  # nothing left in memory: abstaining is right
                return _reference(query_id, [], gone)
            if self.active(fields.entity, fields.attribute) is None:
                raise UndefinedReference(f"{fields.entity}.{fields.attribute}: no current value, so no previous one")
            pred = self.predecessor(fields.entity, fields.attribute)
            if pred is not None and pred.deleted:
                raise UndefinedReference(f"{fields.entity}.{fields.attribute}: the previous value is no longer in "
                                         "memory (deleted, or overwritten in place by an update)")
            act = self.active(fields.entity, fields.attribute)
            earlier = [f for f in facts if f is not act and not f.deleted and _order(f) <= _order(act)]
            return _reference(query_id, sorted(earlier, key=_order, reverse=True), gone)
        live = [f for f in facts if not f.deleted]
        return _reference(query_id, sorted(live, key=_order, reverse=True), gone)

    def defines(self, fields: QueryFields) -> bool:
        """Whether a question with ``fields`` has a right answer (or a right abstention) on this state."""
        try:
            self.reference_for("", fields)
        except UndefinedReference:
            return False
        return True

    # -- derivation for memory-state operators ---------------------------------------------------------
    def with_memory(self, memory_id: str, text: str) -> Provenance:
        texts = tuple((i, t) for i, t in self.memory_texts if i != memory_id) + ((memory_id, text),)
        return replace(self, memory_ids=self.memory_ids | {memory_id}, memory_texts=texts)

    def with_update(self, entity: str, attribute: str, new_value: str, new_ids: Iterable[str],
                    valid_from: str, removed_ids: Iterable[str] = ()) -> Provenance:
        """Record ``new_value`` as the active value; earlier values become invalid history.

        ``removed_ids`` are memories the backend overwrote in place (rewrite policy): they no longer
        evidence the old value.
        """
        removed = set(removed_ids)
        new_ids = tuple(new_ids)
        facts: list[Fact] = []
        vtype = "text"
        for f in self.facts:
            if f.entity == entity and f.attribute == attribute:
                vtype = f.value_type
                facts.append(_without(replace(f, valid=False), removed | set(new_ids)))
            else:
                facts.append(_without(f, removed))
        facts.append(Fact(entity=entity, attribute=attribute, value=new_value, evidence=new_ids, valid=True,
                          value_type=vtype, valid_from=valid_from))
        return replace(self, facts=tuple(facts), memory_ids=(self.memory_ids - removed) | set(new_ids))

    def with_deletion(self, deleted_ids: Iterable[str]) -> Provenance:
        """Memories ``deleted_ids`` are gone: a value left without evidence stays in provenance as deleted
        history (its answer is stale, its old evidence invalid) rather than vanishing."""
        gone = set(deleted_ids)
        facts = tuple(_without(f, gone) for f in self.facts)
        texts = tuple((i, t) for i, t in self.memory_texts if i not in gone)
        return replace(self, facts=facts, memory_ids=self.memory_ids - gone, memory_texts=texts)


class UndefinedReference(ValueError):
    """No behaviour is right for the question on this state (e.g. a ``previous`` question whose previous
    value was deleted): an operator must not build a test on it."""


@lru_cache(maxsize=1 << 14)
def _word_pattern(needle: str) -> re.Pattern[str]:
    """A lower-case needle as a whole-word pattern, compiled once (see :meth:`Provenance.text_mentions`)."""
    return re.compile(rf"(?<!\w){re.escape(needle)}(?!\w)")


def _order(f: Fact) -> tuple[str, str]:
    """History order: by the time a value became valid (values of one time by text, for determinism)."""
    return (f.valid_from or "", f.value)


def _same(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def _without(f: Fact, gone: set[str]) -> Fact:
    """``f`` once memories ``gone`` are deleted or overwritten: evidence left, or deleted history."""
    if f.deleted or not gone & set(f.evidence):
        return f
    left = tuple(e for e in f.evidence if e not in gone)
    return replace(f, evidence=left) if left else replace(f, deleted=True)


def _reference(query_id: str, answers: list[Fact], wrong: list[Fact]) -> Reference:
    """A reference whose acceptable answers are ``answers`` (first = the answer, others aliases; none =
    abstain) and whose ``wrong`` facts are invalid evidence and stale answers."""
    support = {m for f in answers for m in f.evidence}
    values: list[str] = []
    for f in answers:
        if not any(_same(f.value, v) for v in values):
            values.append(f.value)
    invalid = tuple(sorted({m for f in wrong for m in f.evidence} - support))
    stale = tuple(sorted({f.value for f in wrong if not any(_same(f.value, v) for v in values)}))
    if not values:
        return Reference(query_id=query_id, answer=None, abstain=True, invalidated=invalid, stale_answers=stale)
    return Reference(query_id=query_id, answer=values[0], aliases=tuple(values[1:]),
                     supporting=tuple(sorted(support)), invalidated=invalid, stale_answers=stale)
