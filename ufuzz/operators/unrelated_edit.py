"""Unrelated edit: change the memory state without touching any query-relevant evidence.

Targets: ``add`` (a new memory about nothing the query asks), ``update`` (a new value for a fact of another
entity) and ``delete`` (a memory that evidences nothing about the queried entity). The validator checks through
get/list that every memory evidencing the queried entity–attribute (any value, any time) is still stored with
its exact text, and that the edited memory neither evidences nor mentions the queried entity or its values.
The expected behaviour is the parent's: same reference.
"""

from __future__ import annotations

import random
import re
from collections import OrderedDict
from typing import Any

from ufuzz.model import Fact, FuzzCase, Memory, Provenance, Reference, StateOp
from ufuzz.operators.base import Mutation, Operator, Rejected, StateView, Verdict
from ufuzz.operators.requery import entity_pattern
from ufuzz.operators.statewrite import (
    later_timestamp,
    latest_evidence,
    mentions_value,
    natural_key,
    substitute,
    write_add,
    write_update,
)
from ufuzz.seeds.importers.fields import text_class, value_pool
from ufuzz.seeds.speakers import ANNOTATION_TYPES, key_terms, shared_terms

#: neutral memories an ``add`` may write: they mention no person, pet, place or value of any seed
NEUTRAL = (
    "I finally fixed the squeaky hinge on the hallway cupboard.",
    "The weather was grey all weekend, so I stayed in and read.",
    "I reorganised my bookshelf by colour this afternoon.",
    "I tried a new breathing exercise before bed and slept well.",
    "The kettle broke, so I have been boiling water in a pan.",
    "I spent the evening sorting old photos into albums.",
    "My phone screen cracked when it slipped off the table.",
    "I started keeping a small notebook for daily to-do lists.",
)


class UnrelatedEdit(Operator):
    name = "unrelated_edit"
    kind = "state"
    order = 60
    meaning_preserving = True

    def targets(self, case: FuzzCase) -> list[str]:
        if not case.descriptor.allows(self.name):
            return []
        out = ["add"]
        if next(self._iter_update_candidates(case, first=True), None) is not None:
            out.append("update")
        if next(self._iter_unrelated_memories(case), None) is not None:
            out.append("delete")
        if next(self._iter_near(case), None) is not None:
            out.append("near")
        return out

    def varies(self, case: FuzzCase, target: str) -> bool:
        """The neutral text, the fact or the memory is drawn: another draw may be accepted."""
        return True

    # -- candidates -------------------------------------------------------------------------------------
    # Each scan below first builds, once, what makes a memory query-relevant (a set of ids, one entity
    # pattern, the protected values), so that it costs one pass over the memories or facts; targets() stops
    # at the first candidate, and what depends on the state alone is indexed once per state (_StateIndex).
    # (Per-memory provenance look-ups made the set-up of a long conversation's seeds quadratic.)
    def _protected_values(self, case: FuzzCase) -> set[str]:
        f = case.query.fields
        return {x.value for x in case.provenance.facts_for(f.entity, f.attribute)}

    def _relevance(self, case: FuzzCase) -> tuple[set[str], re.Pattern[str], set[str]]:
        """(ids that evidence the queried fact or anything about the queried entity, the entity's pattern,
        the protected values)."""
        f = case.query.fields
        blocked = set(case.provenance.relevant_ids(f.entity, f.attribute))
        blocked |= _StateIndex.of(case.provenance).about.get(f.entity, set())
        return blocked, entity_pattern(f.entity), self._protected_values(case)

    @staticmethod
    def _free_of(rel: tuple[set[str], re.Pattern[str], set[str]], mid: str, text: str) -> bool:
        blocked, pattern, values = rel
        return mid not in blocked and not pattern.search(text) and not any(mentions_value(text, v) for v in values)

    def _unrelated(self, case: FuzzCase, mid: str, text: str) -> bool:
        return self._free_of(self._relevance(case), mid, text)

    def _iter_unrelated_memories(self, case: FuzzCase):
        rel = self._relevance(case)
        return (mid for mid, text in case.provenance.memory_texts if self._free_of(rel, mid, text))

    def _unrelated_memories(self, case: FuzzCase) -> list[str]:
        return sorted(self._iter_unrelated_memories(case))

    def _iter_update_candidates(self, case: FuzzCase, first: bool = False):
        """(fact, memory, replacement values) for each fact of another entity an update may change; with
        ``first``, each candidate carries only its first replacement (enough to know there is one)."""
        f = case.query.fields
        index = _StateIndex.of(case.provenance)
        rel = self._relevance(case)
        protected = rel[2]
        for fact, mid, text in index.writable:
            if fact.entity == f.entity or not self._free_of(rel, mid, text):
                continue
            alts = (a for a in sorted(_alternatives(index, fact) - protected) if not mentions_value(text, a))
            found = [next(alts, None)] if first else list(alts)
            if found and found[0] is not None:
                yield fact, mid, found

    def _update_candidates(self, case: FuzzCase):
        return list(self._iter_update_candidates(case))

    def _iter_near(self, case: FuzzCase):
        """(id, text) of the turns a near-miss addition may restate: in a conversation (memories written
        ``"Speaker: …"``), a turn of another speaker on the question's topic (a key term of it) that is no
        question, does not address anyone ("you"), names neither the queried entity nor any word of its values,
        and evidences nothing about it — said again later, it is the same speaker on a nearby topic, another
        fact (the paper's "something about Caroline added while Melanie's instruments are asked")."""
        f = case.query.fields
        others = [e for e in case.provenance.entity_names() if e != f.entity]
        if not others:
            return
        rel = self._relevance(case)
        names = list(case.provenance.entity_names())
        topic = key_terms(case.query.text, names)
        if not topic:
            return
        value_terms = {t for v in rel[2] for t in key_terms(v, names)}
        prefixes = tuple(f"{e}: " for e in others)
        for mid, text in sorted(case.provenance.memory_texts, key=lambda x: natural_key(x[0])):
            if (text.startswith(prefixes) and self._free_of(rel, mid, text) and not _ADDRESS.search(text)
                    and not _IMAGE.sub("", text).rstrip().endswith("?") and shared_terms(text, topic) >= 1
                    and not shared_terms(text, value_terms)):
                yield mid, text

    # -- mutation ---------------------------------------------------------------------------------------
    def mutate(self, case: FuzzCase, parent_ref: Reference, target: str, rng: random.Random,
               view: StateView | None = None) -> Mutation:
        if view is None:
            raise Rejected("unrelated edit needs a state")
        tag = f"{case.depth + 1}{rng.randrange(1 << 16):04x}"
        if target == "add":
            mem = Memory(id=f"{case.checkpoint_id}~a{tag}", text=rng.choice(NEUTRAL),
                         timestamp=later_timestamp(view, before=case.query.asked_at),
                         metadata={"ufuzz_op": "unrelated_add"})
            res, prov = write_add(view, case.provenance, mem)
            ops, detail = (StateOp("add", None, mem),), f"added {mem.id}"
        elif target == "update":
            cands = self._update_candidates(case)
            if not cands:
                raise Rejected("no unrelated fact to update")
            fact, mid, alts = cands[rng.randrange(len(cands))]
            value = alts[rng.randrange(len(alts))]
            text = substitute(dict(case.provenance.memory_texts)[mid], fact.value, value)
            ts = later_timestamp(view, before=case.query.asked_at)
            mem = Memory(id=f"{mid}~e{tag}", text=text, timestamp=ts, metadata={"ufuzz_op": "unrelated_update"})
            res, prov = write_update(view, case.provenance, mid, mem, fact.entity, fact.attribute, value)
            ops, detail = (StateOp("update", mid, mem),), f"{fact.entity}.{fact.attribute} -> {value}"
        elif target == "near":
            cands = list(self._iter_near(case))
            if not cands:
                raise Rejected("no near-miss turn to restate")
            src, text = cands[rng.randrange(len(cands))]
            mem = Memory(id=f"{src}~n{tag}", text=text,
                         timestamp=later_timestamp(view, before=case.query.asked_at),
                         metadata={"ufuzz_op": "unrelated_near", "of": src})
            res, prov = write_add(view, case.provenance, mem)
            ops, detail = (StateOp("add", None, mem),), f"restated {src} as {mem.id}"
        elif target == "delete":
            cands = self._unrelated_memories(case)
            if not cands:
                raise Rejected("no unrelated memory to delete")
            mid = cands[rng.randrange(len(cands))]
            res = view.delete(mid)
            if not res.ok:
                raise Rejected(f"backend refused delete: {res.detail}")
            prov = case.provenance.with_deletion([mid])
            ops, detail = (StateOp("delete", mid),), f"deleted {mid}"
        else:
            raise Rejected(f"unknown unrelated-edit target {target!r}")
        return Mutation(query=case.query, provenance=prov, reference=parent_ref, ops=ops, results=(res,),
                        detail=detail)

    def validate(self, case: FuzzCase, mutation: Mutation, view: StateView | None = None) -> Verdict:
        if view is None or not mutation.results or not mutation.results[0].ok:
            return Verdict.reject("no verified operation")
        f = case.query.fields
        texts = dict(case.provenance.memory_texts)
        current = {m for x in case.provenance.facts_for(f.entity, f.attribute) if x.valid and not x.deleted
                   for m in x.evidence}
        for mid in sorted(case.provenance.relevant_ids(f.entity, f.attribute)):
            got = view.get(mid)
            if got is None:
                return Verdict.reject(f"query-relevant memory {mid} is gone")
            if not got.active and mid in current:  # a tombstone keeps the text but not the memory
                return Verdict.reject(f"query-relevant memory {mid} is no longer active")
            if mid in texts and got.text != texts[mid]:
                return Verdict.reject(f"query-relevant memory {mid} changed")
        op = mutation.ops[0]
        touched = [op.target] if op.target else []
        written = [(op.memory.id, op.memory.text)] if op.memory else []
        for mid in touched:
            if not self._unrelated(case, mid, texts.get(mid, "")):
                return Verdict.reject(f"edited memory {mid} is query-relevant")
        for mid, text in written:
            if entity_pattern(f.entity).search(text) or any(
                    mentions_value(text, v) for v in self._protected_values(case)):
                return Verdict.reject(f"written memory {mid} mentions the queried entity or its values")
        for wid in mutation.results[0].written:
            if view.get(wid) is None:
                return Verdict.reject(f"written memory {wid} is not stored")
        src = op.memory.metadata.get("of") if op.memory is not None and op.op == "add" else None
        if src is not None:  # a near-miss restatement: a verbatim copy of a turn unrelated to the query
            if texts.get(src) != op.memory.text or not self._unrelated(case, src, texts[src]):
                return Verdict.reject(f"restated memory is not a copy of the unrelated turn {src}")
        return Verdict.accept("query-relevant evidence untouched", "edited memory unrelated")


#: a turn addressing someone ("you", "your"): in a conversation, that may be the queried speaker
_ADDRESS = re.compile(r"(?i)\b(?:you|your|yours|yourself|you're|you've|you'll|you'd|u|ur)\b")
#: an image caption appended to a turn
_IMAGE = re.compile(r"\s*\[image:[^\]]*\]\s*$")


def _alternatives(index: _StateIndex, fact: Fact) -> set[str]:
    """Values an update of ``fact`` (another entity's) may write: the state's other values of its type — for
    free text, only other words of its class (a country for a country), never another answer's sentence
    ("I'm interested in She wanted to catch the eye …")."""
    if fact.value_type != "text":
        return index.by_type[fact.value_type] - {fact.value}
    cls = text_class(fact.value)
    if cls is None:
        return set()
    return set(value_pool(fact.value, "text", set(), ()))


class _StateIndex:
    """What the unrelated edit needs of one state, whatever the query: each entity's evidence ids, the values
    of each type, and the facts an update could rewrite (valid, not an annotation, the value written in the
    latest evidence memory). Built once per state and kept for the last few states."""

    _cache: OrderedDict[tuple[int, int], tuple[Any, Any, _StateIndex]] = OrderedDict()
    _size = 64

    def __init__(self, prov: Provenance) -> None:
        texts = dict(prov.memory_texts)
        self.about: dict[str, set[str]] = {}
        self.by_type: dict[str, set[str]] = {}
        self.writable: list[tuple[Fact, str, str]] = []
        for x in prov.facts:
            self.by_type.setdefault(x.value_type, set()).add(x.value)
            if getattr(x, "deleted", False):
                continue
            self.about.setdefault(x.entity, set()).update(x.evidence)
            if not x.valid or not x.evidence or x.value_type in ANNOTATION_TYPES:
                continue
            mid = latest_evidence(None, x.evidence)
            text = texts.get(mid)
            if text is not None and mentions_value(text, x.value):  # substitute() rewrites it there
                self.writable.append((x, mid, text))

    @classmethod
    def of(cls, prov: Provenance) -> _StateIndex:
        key = (id(prov.facts), hash(prov.memory_texts))
        hit = cls._cache.get(key)
        if hit is not None and hit[0] is prov.facts and hit[1] == prov.memory_texts:
            cls._cache.move_to_end(key)
            return hit[2]
        index = cls(prov)
        cls._cache[key] = (prov.facts, prov.memory_texts, index)
        if len(cls._cache) > cls._size:
            cls._cache.popitem(last=False)
        return index
