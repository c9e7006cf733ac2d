"""Delete: remove the queried fact's evidence through the backend's native delete.

Targets: ``all`` (every memory evidencing any value of the queried entity–attribute) or ``active`` (only the
current value's evidence, leaving superseded history behind). Deletion is verified independently through
get/list: each deleted id is gone or inactive, and exactly those ids left the active set. The reference is
derived from the provenance after deletion (usually abstention); deleted values stay there as deleted
history, so their evidence is invalidated and their values are stale answers.
"""

from __future__ import annotations

import random

from ufuzz.model import FuzzCase, Reference, StateOp, UndefinedReference
from ufuzz.operators.base import Mutation, Operator, Rejected, StateView, Verdict


class Delete(Operator):
    name = "delete"
    kind = "state"
    order = 50

    def targets(self, case: FuzzCase) -> list[str]:
        if not case.descriptor.allows(self.name):
            return []
        f = case.query.fields
        facts = [x for x in case.provenance.facts_for(f.entity, f.attribute) if not x.deleted]
        if not facts:
            return []
        out = ["all"]
        active = case.provenance.active(f.entity, f.attribute)
        if active is not None and any(not x.valid for x in facts) and \
                case.provenance.with_deletion(active.evidence).defines(f):  # a right answer remains
            out.append("active")
        return out

    def _ids(self, case: FuzzCase, target: str) -> list[str]:
        f = case.query.fields
        if target == "all":
            return sorted(case.provenance.relevant_ids(f.entity, f.attribute))
        if target == "active":
            fact = case.provenance.active(f.entity, f.attribute)
            return sorted(fact.evidence) if fact else []
        raise Rejected(f"unknown delete target {target!r}")

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
