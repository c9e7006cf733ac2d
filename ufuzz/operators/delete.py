"""Delete: remove the queried fact's evidence through the backend's native delete.

Targets: ``all`` (every memory carrying any value of the queried entity–attribute) or ``active`` (only the
current value's carriers, leaving superseded history behind); none for a question the state has no answer to (its
fields are not answerable: the reference abstains before and after, so there is nothing to test). A value's
carriers are its evidence and every other memory that writes it. A value not written in its own evidence (an abstractive answer: "Two cats and a
dog", a date a turn tells as "yesterday", a yes) is carried by what says it in other words: every memory holding
half the key words of the value or of one of its list items, or — for a date, a number, a yes or no — half the
key words of the claim its attribute names (:func:`key_carriers`); a delete removes them all, so that more is
deleted rather than a carrier left (a value of no key word to look for, or one the benchmark does not state,
has no delete). Deletion is verified independently through
get/list: each deleted id is gone or inactive, and exactly those ids left the active set. The reference is
derived from the provenance after deletion (usually abstention); deleted values stay there as deleted
history, so their evidence is invalidated and their values are stale answers.
"""

from __future__ import annotations

import math
import random
import re

from ufuzz.model import Fact, FuzzCase, Provenance, Reference, StateOp, UndefinedReference
from ufuzz.model.provenance import DATED
from ufuzz.operators.base import Mutation, Operator, Rejected, StateView, Verdict
from ufuzz.operators.statewrite import mentions_value, value_forms
from ufuzz.seeds.importers._common import JUDGEMENT, UNSTATED
from ufuzz.seeds.importers.fields import value_type_of
from ufuzz.seeds.speakers import ANNOTATION_TYPES, key_terms, shared_terms


class Delete(Operator):
    name = "delete"
    kind = "state"
    order = 50

    def targets(self, case: FuzzCase) -> list[str]:
        if not case.descriptor.allows(self.name):
            return []
        f = case.query.fields
        if not f.answerable:  # a question the state has no answer to: the reference abstains before and after
            return []
        facts = [x for x in case.provenance.facts_for(f.entity, f.attribute) if not x.deleted]
        if not facts or carriers(case.provenance, facts) is None:
            return []
        out = ["all"]
        active = case.provenance.active(f.entity, f.attribute)
        if (active is not None and any(not x.valid for x in facts) and carriers(case.provenance, [active]) is not None
                and case.provenance.with_deletion(self._ids(case, "active")).defines(f)):  # a right answer remains
            out.append("active")
        return out

    def _ids(self, case: FuzzCase, target: str) -> list[str]:
        """Every memory carrying a deleted value: its evidence and any other memory that writes the value
        (otherwise the value would still be in memory and abstaining would be wrong)."""
        f = case.query.fields
        prov = case.provenance
        if target == "all":
            facts = [x for x in prov.facts_for(f.entity, f.attribute) if not getattr(x, "deleted", False)]
            base = prov.relevant_ids(f.entity, f.attribute)
        elif target == "active":
            fact = prov.active(f.entity, f.attribute)
            facts, base = ([fact], set(fact.evidence)) if fact else ([], set())
        else:
            raise Rejected(f"unknown delete target {target!r}")
        found = carriers(prov, facts) if facts else None
        if found is None:
            raise Rejected("a value to delete is not written in its evidence: its other carriers cannot be found")
        return sorted((set(base) | found) & prov.memory_ids)

    def mutate(self, case: FuzzCase, parent_ref: Reference, target: str, rng: random.Random,
               view: StateView | None = None) -> Mutation:
        if view is None:
            raise Rejected("delete needs a state")
        ids = self._ids(case, target)
        if not ids:
            raise Rejected("nothing to delete")
        f = case.query.fields
        results = []
        for mid in ids:
            res = view.delete(mid)
            if not res.ok:
                raise Rejected(f"backend refused delete of {mid}: {res.detail}")
            results.append(res)
        prov = case.provenance.with_deletion(ids)
        try:  # deleted values stay in provenance as deleted history: invalid evidence, stale answers
            ref = prov.reference_for(case.query.id, f)
        except UndefinedReference as exc:
            raise Rejected(f"no right answer after the delete: {exc}") from None
        return Mutation(query=case.query, provenance=prov, reference=ref,
                        ops=tuple(StateOp("delete", mid) for mid in ids), results=tuple(results),
                        detail=f"deleted {','.join(ids)}")

    def validate(self, case: FuzzCase, mutation: Mutation, view: StateView | None = None) -> Verdict:
        if view is None or not mutation.ops:
            return Verdict.reject("no verified operation")
        ids = [op.target for op in mutation.ops]
        if any(not r.ok or r.op != "delete" for r in mutation.results):
            return Verdict.reject("backend did not report successful deletes")
        for mid in ids:
            got = view.get(mid)
            if got is not None and got.active:
                return Verdict.reject(f"deleted memory {mid} is still stored as active")
        listed = view.list()
        active = {m.id for m in listed if m.active}
        if set(ids) & active:
            return Verdict.reject("deleted memory still listed as active")
        expected = set(case.provenance.memory_ids) - set(ids)
        missing = expected - {m.id for m in listed}
        if missing:
            return Verdict.reject(f"delete removed other memories too: {sorted(missing)[:3]}")
        # a tombstoning backend keeps collateral deletions listed, inactive: only superseded history may be
        # inactive, never evidence of a current value or a memory that evidences nothing
        prov = case.provenance
        history = {m for f in prov.facts if not f.valid for m in f.evidence} - \
            {m for f in prov.facts if f.valid for m in f.evidence}
        collateral = {m.id for m in listed if not m.active and m.id in expected} - history
        if collateral:
            return Verdict.reject(f"delete deactivated other memories too: {sorted(collateral)[:3]}")
        if any(i in mutation.reference.supporting for i in ids):
            return Verdict.reject("reference is supported by deleted memory")
        return Verdict.accept("deleted ids gone from get and list", "no collateral deletion")


def carriers(prov: Provenance, facts: list[Fact]) -> set[str] | None:
    """The memories that carry the values of ``facts``: their evidence plus every memory writing a value
    (whole words, a small number as digits or word), or — for a value not written in any of its own evidence —
    every memory saying it in other words (:func:`key_carriers`). None when a value has no carriers to look
    for."""
    texts = dict(prov.memory_texts)
    out: set[str] = set()
    for fact in facts:
        forms = value_forms(fact.value)
        writes = [m for m in fact.evidence if any(mentions_value(texts.get(m, ""), v) for v in forms)]
        if len(writes) < len(fact.evidence):  # some evidence says it in other words: so may other memories
            found = key_carriers(prov, fact)
            if found is None and not writes:
                return None
            out |= found or set()
        out |= set(fact.evidence) & prov.memory_ids
        for v in forms:
            out |= set(prov.text_mentions(v))
    return out


#: the separators of a list answer's items ("Oliver, Luna, Bailey"; "clarinet and violin")
_ITEMS = re.compile(r",|;|\band\b|\bor\b")


def key_carriers(prov: Provenance, fact: Fact) -> set[str] | None:
    """The memories that carry an abstractive value in other words: its evidence, every memory holding all the
    key words (two or more) of the value or of one of its list items, or at least half of them and one key word
    of the claim its attribute names ("it felt awe-inspiring, the meteor shower" for "in awe of the universe",
    "our pets, Luna and Oliver" for "Oliver, Luna, Bailey"), and — for a value a memory tells rather than
    writes (a date told as "yesterday", a number, a yes or no) — every memory holding at least half the key
    words of the claim its attribute names ("museum" for "time: go museum"). None for a benchmark annotation, a
    value the benchmark does not state, or one with no key word to look for."""
    if fact.value_type in (*ANNOTATION_TYPES, UNSTATED) or not fact.evidence:
        return None
    names = prov.entity_names()
    value = fact.value.strip()
    told = (JUDGEMENT.match(value) is not None or any(ch.isdigit() for ch in value)
            or value_type_of(value) in (*DATED, "number", "duration", "time_of_day"))
    claim = key_terms(fact.attribute.partition(":")[2] or fact.attribute, names)
    if told:
        groups, topic = [claim] if claim else [], set()
    else:  # in other words, on the question's topic (or every key word of a phrase of two or more)
        groups = [key_terms(value, names)] + [key_terms(i, names) for i in _ITEMS.split(value) if i.strip()]
        groups, topic = [g for g in groups if g], claim
    if not groups:
        return None
    out = set(fact.evidence) & prov.memory_ids
    for mid, text in prov.memory_texts:
        on_topic = not topic or shared_terms(text, topic) >= 1
        if any((held := shared_terms(text, g)) == len(g) > 1 or (held >= math.ceil(len(g) / 2) and on_topic)
               for g in groups):
            out.add(mid)
    return out
