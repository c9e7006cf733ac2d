"""Unsupported: replace a field with an absent, type-compatible target; the reference is abstention.

Targets come from the descriptor's ``absent_targets``. The validator checks, against provenance and the
state's memory texts only, that nothing records the new (entity, attribute) and that an absent entity name
appears in no memory at all. The parent's supporting memories become invalid support for the mutant (decoys):
answering from them is an unsupported factual answer — not a stale one: the parent's value is not out of date,
it belongs to another question.
"""

from __future__ import annotations

import random
from dataclasses import replace

from ufuzz.model import FuzzCase, Reference
from ufuzz.operators.base import Mutation, Operator, StateView, Verdict
from ufuzz.operators.requery import fields_match, requery
from ufuzz.operators.target_change import parse_target
from ufuzz.seeds import wording


class Unsupported(Operator):
    name = "unsupported"
    kind = "query"
    order = 30
    unanswerable = True

    def targets(self, case: FuzzCase) -> list[str]:
        return [f"{field}={value}" for field in ("entity", "attribute")
                for value in case.descriptor.absent_targets.get(field, ())
                if value != getattr(case.query.fields, field)]

    def mutate(self, case: FuzzCase, parent_ref: Reference, target: str, rng: random.Random,
               view: StateView | None = None) -> Mutation:
        field, value = parse_target(target)
        new_fields = replace(case.query.fields, **{field: value}, answerable=False)
        qid = f"{case.query.id}~u{rng.randrange(1 << 30):x}"
        query = requery(case, new_fields, qid)
        ref = Reference(query_id=qid, answer=None, abstain=True, invalidated=parent_ref.supporting)
        return Mutation(query=query, provenance=case.provenance, reference=ref, detail=target)

    def validate(self, case: FuzzCase, mutation: Mutation, view: StateView | None = None) -> Verdict:
        parent, child = case.query.fields, mutation.query.fields
        changed = [f for f in ("entity", "attribute") if getattr(parent, f) != getattr(child, f)]
        if len(changed) != 1 or child.scope != parent.scope:
            return Verdict.reject(f"exactly one of entity/attribute must change, changed {changed}")
        ok, why = fields_match(case, mutation.query, child)
        if not ok:
            return Verdict.reject(why)
        prov = case.provenance
        if prov.facts_for(child.entity, child.attribute):
            return Verdict.reject("provenance records the new target: it is not absent")
        if changed == ["entity"]:
            if child.entity in prov.entity_names() or prov.text_mentions(child.entity):
                return Verdict.reject(f"{child.entity!r} appears in the memory state")
        else:
            spec = wording.ATTRIBUTES.get(child.attribute)
            etype = prov.entity_type(child.entity)
            if spec is not None and etype is not None and etype not in spec.entity_types:
                return Verdict.reject(f"attribute {child.attribute!r} is not type-compatible with {etype}")
        if not mutation.reference.abstain:
            return Verdict.reject("reference must be abstention")
        return Verdict.accept("one field changed", "target absent from provenance and memory texts")
