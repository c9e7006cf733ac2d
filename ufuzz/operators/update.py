"""Update: record a new value for the queried fact as later/active through the backend's native update.

The target is a fresh type-compatible value from the descriptor's ``value_pool``. The operator rewrites the
latest evidence memory of the active fact with the new value and hands it to ``backend.update`` with a
timestamp later than anything in the state. It is offered only where the value is written in that memory,
and rejects rather than invent text where it is not. The validator checks through get/list only — never retrieval —
that the written memory exists, is active, carries the new value and is the latest evidence; that whatever
the backend reported as superseded or removed is as reported. The reference (new value; new evidence
supports it; superseded evidence is invalidated; the old value is a stale answer) is derived from the
provenance updated with the *verified* operation result.
"""

from __future__ import annotations

import random
from datetime import datetime

from ufuzz.model import FuzzCase, Memory, Reference, StateOp, UndefinedReference
from ufuzz.model.provenance import DATED
from ufuzz.operators.base import Mutation, Operator, Rejected, StateView, Verdict
from ufuzz.operators.statewrite import (
    later_timestamp,
    mentions_value,
    rewritable_evidence,
    rewrite_value,
    uncarried_evidence,
    write_update,
    written_in_evidence,
)
from ufuzz.seeds.importers.fields import date_of, in_time, no_new_answer, told_days


def _stated_before(case: FuzzCase, fact, values) -> set[str]:
    """Those of ``values`` that ``fact``'s entity and attribute had before in the case's state (or have now): a
    value of their history, or one written in the evidence of an earlier value (an importer may know that a
    later session superseded an earlier one without reading the earlier value: "[value stated in …]"). An
    update back to one would make the memories that told it — stale in the reference — state the new value
    ("7:00 pm" said in a first session, superseded by "6:00 pm", then "updated" to "7:00 pm")."""
    prov = case.provenance
    history = prov.facts_for(fact.entity, fact.attribute)
    had = {x.value for x in history}
    texts = dict(prov.memory_texts)
    told = [texts.get(m, "") for x in history if x is not fact for m in x.evidence]
    return {v for v in values if v in had or any(mentions_value(t, v) for t in told)}


class Update(Operator):
    name = "update"
    kind = "state"
    order = 40

    def targets(self, case: FuzzCase) -> list[str]:
        if not case.descriptor.allows(self.name):
            return []
        f = case.query.fields
        fact = case.provenance.active(f.entity, f.attribute)
        if fact is None or not written_in_evidence(case.provenance, fact):
            return []
        if _judged_current(case, fact) and uncarried_evidence(case.provenance, fact):
            # the new value would leave support that states no old value either way: a parent found by it
            # ("Can't wait!" for "excited") never found the memory the update rewrites (only a question over
            # every value, which still accepts the old one, keeps it as support)
            return []
        pool = case.descriptor.value_pool
        had = _stated_before(case, fact, pool)
        return [f"value={v}" for v in pool if v not in had and not no_new_answer(fact.value, v, _asked(case))
                and in_time(case.provenance, fact, v, case.query.text)][:3]

    def mutate(self, case: FuzzCase, parent_ref: Reference, target: str, rng: random.Random,
               view: StateView | None = None) -> Mutation:
        if view is None:
            raise Rejected("update needs a state")
        value = target.partition("=")[2]
        f = case.query.fields
        fact = case.provenance.active(f.entity, f.attribute)
        if fact is None or not value:
            raise Rejected("no active fact to update")
        if _judged_current(case, fact) and uncarried_evidence(case.provenance, fact):
            raise Rejected("evidence that does not state the value would be superseded with it")
        old_id = rewritable_evidence(case.provenance, fact, view)
        if old_id is None:
            raise Rejected(f"the value {fact.value!r} is not written in evidence of {f.entity}'s own")
        old_text = view.get(old_id)
        if old_text is None:
            raise Rejected(f"evidence {old_id} not stored")
        new_text = rewrite_value(old_text.text, fact, value)
        if new_text is None:  # the value is not written in the memory: rewriting it would mean inventing text
            raise Rejected(f"the value {fact.value!r} is not written in its evidence {old_id}")
        if not in_time(case.provenance, fact, value, case.query.text, _told_days(view, fact)):
            raise Rejected(f"the new date {value!r} is not on the side of the time {fact.value!r} was told, or "
                           f"crosses a day the conversation was told on")
        ts = later_timestamp(view, before=case.query.asked_at)
        if not _not_after(value, ts):
            raise Rejected(f"the new date {value!r} is later than the memory telling it ({ts})")
        new_id = f"{old_id}~u{case.depth + 1}{rng.randrange(1 << 16):04x}"
        new = Memory(id=new_id, text=new_text, timestamp=ts, metadata={"ufuzz_op": "update", "of": old_id})
        res, prov = write_update(view, case.provenance, old_id, new, f.entity, f.attribute, value)
        try:
            ref = prov.reference_for(case.query.id, f)
        except UndefinedReference as exc:
            raise Rejected(f"no right answer after the update: {exc}") from None
        return Mutation(query=case.query, provenance=prov, reference=ref,
                        ops=(StateOp("update", old_id, new),), results=(res,),
                        detail=f"{f.entity}.{f.attribute}: {fact.value} -> {value}")

    def validate(self, case: FuzzCase, mutation: Mutation, view: StateView | None = None) -> Verdict:
        if view is None or not mutation.results:
            return Verdict.reject("no verified operation")
        res = mutation.results[0]
        op = mutation.ops[0]
        f = case.query.fields
        # the new value is what the mutant's provenance records as active (the reference's answer is the
        # previous value for a 'previous'-scope query, so it cannot name the new value)
        new_fact = mutation.provenance.active(f.entity, f.attribute)
        old_fact = case.provenance.active(f.entity, f.attribute)
        value = new_fact.value if new_fact is not None else None
        if not res.ok or res.op != "update" or not res.written or value is None:
            return Verdict.reject("backend did not report a successful update")
        if old_fact is not None and no_new_answer(old_fact.value, value, _asked(case)):
            return Verdict.reject("the update does not record a new value (the old one still answers)")
        if old_fact is not None and _stated_before(case, old_fact, (value,)):
            return Verdict.reject("the update writes back a value the fact had before")
        scope = case.provenance.scope_of(f)
        if old_fact is not None and _judged_current(case, old_fact) and uncarried_evidence(case.provenance, old_fact):
            return Verdict.reject("superseded evidence that does not state the old value")
        if old_fact is not None and not in_time(case.provenance, old_fact, value, case.query.text,
                                                _told_days(view, old_fact)):
            return Verdict.reject("a past event moved into the future of its telling, or a plan into its past, "
                                  "or across a day the conversation was told on")
        if value not in case.descriptor.value_pool:  # e.g. a pool left over from another attribute
            return Verdict.reject(f"{value!r} is not among the question's type-compatible values")
        if set(new_fact.evidence) != set(res.written):
            return Verdict.reject("the new value's evidence is not the written memory")
        stored = {m.id: m for m in view.list()}
        for wid in res.written:
            got = view.get(wid)
            if got is None or not got.active:
                return Verdict.reject(f"written memory {wid} is not stored as active")
            if not mentions_value(got.text, value):
                return Verdict.reject(f"written memory {wid} does not carry the new value")
            later = [m for m in stored.values() if m.id != wid and m.timestamp > got.timestamp]
            if later:
                return Verdict.reject(f"written memory {wid} is not the latest ({later[0].id} is later)")
        for sid in res.superseded:
            if view.get(sid) is None:
                return Verdict.reject(f"superseded memory {sid} vanished")
        for rid in res.removed:
            got = view.get(rid)
            if got is not None and got.active and rid not in res.written:
                return Verdict.reject(f"removed memory {rid} is still active")
        if op.target not in res.written and op.target not in res.superseded and op.target not in res.removed:
            return Verdict.reject("backend did not say what happened to the old memory")
        ref = mutation.reference
        try:
            expected = mutation.provenance.reference_for(ref.query_id, f)
        except UndefinedReference as exc:
            return Verdict.reject(f"no right answer after the update: {exc}")
        if ref != expected:
            return Verdict.reject("reference is not the one provenance derives after the update")
        written = set(res.written)
        if scope == "current" and (ref.answer != value or set(ref.supporting) != written):
            return Verdict.reject("reference is not the new value on the written evidence")
        if scope == "previous" and written & set(ref.supporting):
            return Verdict.reject("the written memory supports the previous value")
        if scope == "any" and (value not in (ref.answer, *ref.aliases) or not written <= set(ref.supporting)):
            return Verdict.reject("the new value is not among the accepted answers")
        return Verdict.accept("written memory active with new value", "latest timestamp", "old memory as reported")



def _asked(case: FuzzCase) -> str:
    """What the question asks, for :func:`no_new_answer`: its words and its attribute's ("gym_day" asks a day
    however a paraphrase words it)."""
    return f"{case.query.text} {case.query.fields.attribute.replace('_', ' ')}"


def _judged_current(case: FuzzCase, fact) -> bool:
    """Whether the case's question is judged on the current value once ``fact`` is updated: it asks for it, or it
    asks over every value of a date, which an update corrects (:meth:`Provenance.scope_of`) — then whatever
    evidence of the old value does not state it would be stale without stating anything stale (hand audit: a photo
    turn with no date marked superseded beside the rewritten "last year")."""
    return case.provenance.scope_of(case.query.fields) != "any" or fact.value_type in DATED


def _told_days(view: StateView, fact) -> tuple:
    """For a date ``fact``: the days the memories in ``view`` were told on (an update's own later day among them: no
    date it writes reaches it); nothing for any other fact, whose update no telling day bounds (no listing asked of
    the backend for it)."""
    return told_days([m.timestamp for m in view.list()]) if fact.value_type in DATED else ()


def _not_after(value: str, timestamp: str) -> bool:
    """False when ``value`` is a date (or year) after the day of ``timestamp``: a memory cannot tell of a past
    event on a later date. True for any other value."""
    when = date_of(value)
    return when is None or when <= datetime.fromisoformat(timestamp).date()
