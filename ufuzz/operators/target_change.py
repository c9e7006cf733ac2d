"""Target-change: replace one answer-affecting field with a checkpoint-supported target.

The replacement comes from the descriptor's ``replacement_targets`` (entity, attribute or scope). The new
reference is derived independently from the state's provenance, never from the parent's reference or from
any retrieval. A new attribute brings its own value pool (the values provenance records for it), so a later
update writes a value of that attribute, not of the seed's ("Mireille lives in calligraphy"). The validator re-extracts the fields from the new text and checks that provenance supports
the new target with a type-compatible entity.
"""

from __future__ import annotations

import random
from dataclasses import replace

from ufuzz.model import FuzzCase, Provenance, Reference, UndefinedReference
from ufuzz.operators.base import Mutation, Operator, Rejected, StateView, Verdict
from ufuzz.operators.requery import fields_match, requery


def values_of(prov: Provenance, attribute: str) -> tuple[str, ...]:
    """The values provenance records for ``attribute`` (any entity, any time): type-compatible values an update
    of a question about that attribute may write."""
    return tuple(sorted({f.value for f in prov.facts if f.attribute == attribute and not f.deleted}))


def parse_target(target: str) -> tuple[str, str]:
    field, sep, value = target.partition("=")
    if not sep or field not in ("entity", "attribute", "scope") or not value:
        raise Rejected(f"malformed target {target!r}")
    return field, value


class TargetChange(Operator):
    name = "target_change"
    kind = "query"
    order = 20

    def targets(self, case: FuzzCase) -> list[str]:
        out = []
        for field in ("entity", "attribute", "scope"):
            for value in case.descriptor.replacement_targets.get(field, ()):
                if value != getattr(case.query.fields, field):
                    out.append(f"{field}={value}")
        return out

    def mutate(self, case: FuzzCase, parent_ref: Reference, target: str, rng: random.Random,
               view: StateView | None = None) -> Mutation:
        field, value = parse_target(target)
        new_fields = replace(case.query.fields, **{field: value}, answerable=True)
        try:
            ref = case.provenance.reference_for("", new_fields)
        except UndefinedReference as exc:
            raise Rejected(f"{target}: {exc}") from None
        if ref.abstain:
            raise Rejected(f"{target}: the state does not support {new_fields.entity}.{new_fields.attribute}")
        qid = f"{case.query.id}~t{rng.randrange(1 << 30):x}"
        query = requery(case, new_fields, qid)
        descriptor = None
        if field == "attribute":  # the seed's value pool holds values of its own attribute, not of this one
            descriptor = replace(case.descriptor, value_pool=values_of(case.provenance, value))
        return Mutation(query=query, provenance=case.provenance, reference=ref.with_(query_id=qid), detail=target,
                        descriptor=descriptor)

    def validate(self, case: FuzzCase, mutation: Mutation, view: StateView | None = None) -> Verdict:
        parent, child = case.query.fields, mutation.query.fields
        changed = [f for f in ("entity", "attribute", "scope") if getattr(parent, f) != getattr(child, f)]
        if len(changed) != 1:
            return Verdict.reject(f"exactly one field must change, changed {changed}")
        ok, why = fields_match(case, mutation.query, child)
        if not ok:
            return Verdict.reject(why)
        prov = case.provenance
        try:
            expected = prov.reference_for(mutation.query.id, child)
        except UndefinedReference as exc:
            return Verdict.reject(f"no right answer for the new target: {exc}")
        if expected.abstain:
            return Verdict.reject("provenance has no supported value for the new target")
        if changed == ["entity"]:
            t_old, t_new = prov.entity_type(parent.entity), prov.entity_type(child.entity)
            if t_old and t_new and t_old != t_new:
                return Verdict.reject(f"entity type {t_new} is not compatible with {t_old}")
        if expected != mutation.reference:
            return Verdict.reject("reference is not the one provenance derives")
        if changed == ["attribute"] and (mutation.descriptor is None or set(mutation.descriptor.value_pool)
                                         - set(values_of(prov, child.attribute))):
            return Verdict.reject(f"the value pool is not of {child.attribute!r}")
        if not set(mutation.reference.supporting) <= prov.memory_ids:
            return Verdict.reject("supporting evidence is not in the state")
        return Verdict.accept("one field changed", "fields re-extracted", "provenance supports target")
