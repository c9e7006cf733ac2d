"""Checkpoint provenance as a graph: entities → attributes → values → evidence memories.

Nodes are typed tuples so that names never collide: ``("entity", name)``, ``("attr", entity, attribute)``,
``("value", entity, attribute, value)`` and ``("memory", id)``. Value nodes carry ``valid`` (False when a
later memory superseded the value), ``value_type`` and ``valid_from``.

A :class:`Provenance` is immutable; memory-state operators derive a new one (``with_update``,
``with_deletion``, ``with_memory``) from the *verified* result of a backend operation, so that every state a
campaign reaches has its own provenance and references can be derived from it alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import networkx as nx

from ufuzz.model.memory import Checkpoint, Entity, Fact
from ufuzz.model.query import QueryFields
from ufuzz.model.reference import Reference


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
            g.add_node(vn, valid=f.valid, value_type=f.value_type, valid_from=f.valid_from, value=f.value)
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
        valid = [f for f in self.facts_for(entity, attribute) if f.valid]
        if not valid:
            return None
        return max(valid, key=lambda f: (f.valid_from or "", f.value))

    def previous(self, entity: str, attribute: str) -> Fact | None:
        old = [f for f in self.facts_for(entity, attribute) if not f.valid]
        if not old:
            return None
        return max(old, key=lambda f: (f.valid_from or "", f.value))

    def relevant_ids(self, entity: str, attribute: str) -> set[str]:
        """Every memory that evidences any value (current or past) of (entity, attribute)."""
        return {mid for f in self.facts_for(entity, attribute) for mid in f.evidence}

    def mentions(self, memory_id: str) -> set[tuple[str, str]]:
        return {(f.entity, f.attribute) for f in self.facts if memory_id in f.evidence}

    def text_mentions(self, needle: str) -> list[str]:
        n = needle.lower()
        return [mid for mid, text in self.memory_texts if n in text.lower()]

    def values_of_type(self, value_type: str) -> set[str]:
        return {f.value for f in self.facts if f.value_type == value_type}

    def reference_for(self, query_id: str, fields: QueryFields) -> Reference:
        """The expected behaviour for ``fields`` derived from provenance alone."""
        facts = self.facts_for(fields.entity, fields.attribute)
        invalid_ids = tuple(sorted({m for f in facts if not f.valid for m in f.evidence}))
        if fields.scope == "previous":
            fact = self.previous(fields.entity, fields.attribute)
            cur = self.active(fields.entity, fields.attribute)
            invalid_ids = tuple(sorted(cur.evidence)) if cur else ()
        else:
            fact = self.active(fields.entity, fields.attribute)
        answer = fact.value if fact else None
        stale = tuple(sorted({f.value for f in facts if f.value != answer and (f.valid is False or
                                                                          fields.scope == "previous")}))
        if fact is None:
            return Reference(query_id=query_id, answer=None, abstain=True, invalidated=invalid_ids,
                             stale_answers=stale)
        return Reference(query_id=query_id, answer=fact.value, supporting=tuple(sorted(fact.evidence)),
                         invalidated=tuple(i for i in invalid_ids if i not in fact.evidence), stale_answers=stale)

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
                ev = tuple(e for e in f.evidence if e not in removed and e not in new_ids)
                if ev:
                    facts.append(replace(f, valid=False, evidence=ev))
            else:
                ev = tuple(e for e in f.evidence if e not in removed)
                if ev or not f.evidence:
                    facts.append(replace(f, evidence=ev))
        facts.append(Fact(entity=entity, attribute=attribute, value=new_value, evidence=new_ids, valid=True,
                          value_type=vtype, valid_from=valid_from))
        return replace(self, facts=tuple(facts), memory_ids=(self.memory_ids - removed) | set(new_ids))

    def with_deletion(self, deleted_ids: Iterable[str]) -> Provenance:
        gone = set(deleted_ids)
        facts = []
        for f in self.facts:
            ev = tuple(e for e in f.evidence if e not in gone)
            if ev:
                facts.append(replace(f, evidence=ev))
        texts = tuple((i, t) for i, t in self.memory_texts if i not in gone)
        return replace(self, facts=tuple(facts), memory_ids=self.memory_ids - gone, memory_texts=texts)
