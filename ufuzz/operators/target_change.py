"""Target-change: replace one answer-affecting field with a checkpoint-supported target.

The replacement comes from the descriptor's ``replacement_targets`` (entity, attribute or scope), or, for a
free-text question about a named person, a sibling question (``question``: :mod:`ufuzz.seeds.siblings`) — the
same person's other event, object or time, asked with the parent's opening ("When did Melanie go to the
museum?" → "… go to the pottery workshop?"); its fields are read from the sibling's own words and its
reference is derived from that fact's evidence in provenance. The new
reference is derived independently from the state's provenance, never from the parent's reference or from
any retrieval. A new attribute brings its own value pool (the values provenance records for it), so a later
update writes a value of that attribute, not of the seed's ("Mireille lives in calligraphy"). The validator re-extracts the fields from the new text and checks that provenance supports
the new target with a type-compatible entity.
"""

from __future__ import annotations

import random
from dataclasses import replace

from ufuzz.model import FuzzCase, MutationDescriptor, Provenance, QueryFields, Reference, UndefinedReference
from ufuzz.operators.base import Mutation, Operator, Rejected, StateView, Verdict
from ufuzz.operators.paraphrase import unwrap, wrap
from ufuzz.operators.requery import fields_match, requery
from ufuzz.seeds import siblings, wording

#: the descriptor key of sibling questions (free text)
QUESTION = "question"


def values_of(prov: Provenance, attribute: str) -> tuple[str, ...]:
    """The values provenance records for ``attribute`` (any entity, any time): type-compatible values an update
    of a question about that attribute may write."""
    return tuple(sorted({f.value for f in prov.facts if f.attribute == attribute and not f.deleted}))


def parse_target(target: str) -> tuple[str, str]:
    field, sep, value = target.partition("=")
    if not sep or field not in ("entity", "attribute", "scope", QUESTION) or not value:
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
        if case.query.template is None and case.query.fields.answerable:
            out += [f"{QUESTION}={q}" for q in case.descriptor.replacement_targets.get(QUESTION, ())]
        return out

    def mutate(self, case: FuzzCase, parent_ref: Reference, target: str, rng: random.Random,
               view: StateView | None = None) -> Mutation:
        field, value = parse_target(target)
        if field == QUESTION:
            return self._sibling(case, value, rng)
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

    def _sibling(self, case: FuzzCase, sibling: str, rng: random.Random) -> Mutation:
        """The parent asking the sibling question's event (its words after the name), worded with the parent's
        opening; the reference is the sibling fact's, from provenance."""
        q = case.query
        fields = siblings.question_fields(sibling, siblings.person_names(case.provenance.entities))
        if fields is None or fields.entity != q.fields.entity:
            raise Rejected(f"the sibling question does not ask about {q.fields.entity!r}")
        try:
            ref = case.provenance.reference_for("", fields)
        except UndefinedReference as exc:
            raise Rejected(f"no right answer for the sibling question: {exc}") from None
        if ref.abstain:
            raise Rejected("the state does not support the sibling question")
        text = sibling_text(q.text, sibling, q.fields.entity)
        if text is None:
            raise Rejected(f"cannot word the sibling question with the parent's opening ({q.fields.entity!r})")
        qid = f"{q.id}~t{rng.randrange(1 << 30):x}"
        query = replace(q, id=qid, text=text, fields=fields)
        # the sibling's own moves are not known here: the mutant keeps only what needs no knowledge of its fact
        # (unrelated edits; an absent name for the unsupported operator), never the parent's values or targets
        descriptor = MutationDescriptor(absent_targets=dict(case.descriptor.absent_targets),
                                        memory_ops=("unrelated_edit",))
        return Mutation(query=query, provenance=case.provenance, reference=ref.with_(query_id=qid),
                        detail=f"{QUESTION}={sibling}", descriptor=descriptor)

    def validate(self, case: FuzzCase, mutation: Mutation, view: StateView | None = None) -> Verdict:
        if mutation.detail.startswith(f"{QUESTION}="):
            return self._validate_sibling(case, mutation)
        parent, child = case.query.fields, mutation.query.fields
        changed = [f for f in ("entity", "attribute", "scope") if getattr(parent, f) != getattr(child, f)]
        if len(changed) != 1:
            return Verdict.reject(f"exactly one field must change, changed {changed}")
        ok, why = fields_match(case, mutation.query, child)
        if not ok:
            return Verdict.reject(why)
        prov = case.provenance
        expected, why = _derived_reference(prov, mutation, child, "the new target")
        if why:
            return Verdict.reject(why)
        if changed == ["entity"]:
            t_old, t_new = prov.entity_type(parent.entity), prov.entity_type(child.entity)
            if t_old and t_new and t_old != t_new:
                return Verdict.reject(f"entity type {t_new} is not compatible with {t_old}")
        why = _disagreement(prov, mutation, expected)
        if why:
            return Verdict.reject(why)
        if changed == ["attribute"] and (mutation.descriptor is None or set(mutation.descriptor.value_pool)
                                         - set(values_of(prov, child.attribute))):
            return Verdict.reject(f"the value pool is not of {child.attribute!r}")
        return Verdict.accept("one field changed", "fields re-extracted", "provenance supports target")

    def _validate_sibling(self, case: FuzzCase, mutation: Mutation) -> Verdict:
        """The new question is the sibling's, or a rewrite of its wh-phrase, with the parent's opening (context
        and wrapper kept); its fields are the sibling's own words' and name the parent's person; the reference
        is the one provenance derives for them and answers."""
        sibling = mutation.detail.partition("=")[2]
        parent = case.query
        if sibling not in case.descriptor.replacement_targets.get(QUESTION, ()):
            return Verdict.reject("the sibling question is not one the seed offers")
        prov = case.provenance
        fields = siblings.question_fields(sibling, siblings.person_names(prov.entities))
        if fields is None or fields != mutation.query.fields:
            return Verdict.reject("the mutant's fields are not the ones the sibling question's words give")
        if fields.entity != parent.fields.entity or fields == parent.fields:
            return Verdict.reject("a sibling asks about the same person, another fact")
        why = _not_the_sibling(parent.text, mutation.query.text, sibling, fields.entity)
        if why:
            return Verdict.reject(why)
        ok, why = fields_match(case, mutation.query, fields)
        if not ok:
            return Verdict.reject(why)
        expected, why = _derived_reference(prov, mutation, fields, "the sibling question")
        why = why or _disagreement(prov, mutation, expected)
        if why:
            return Verdict.reject(why)
        return Verdict.accept("sibling question of the same person", "fields re-read from its words",
                              "provenance supports target")


def _derived_reference(prov: Provenance, mutation: Mutation, fields: QueryFields,
                       target: str) -> tuple[Reference | None, str | None]:
    """The reference provenance derives for the mutant's ``fields``, or why there is none: a changed target is
    only a test when the parent's state answers it (an abstention would be the unsupported operator's)."""
    try:
        expected = prov.reference_for(mutation.query.id, fields)
    except UndefinedReference as exc:
        return None, f"no right answer for the new target: {exc}"
    if expected.abstain:
        return None, f"provenance has no supported value for {target}"
    return expected, None


def _disagreement(prov: Provenance, mutation: Mutation, expected: Reference | None) -> str | None:
    """Why the mutant's reference is not the derived one, or its evidence not in the state (None: it is)."""
    if expected != mutation.reference:
        return "reference is not the one provenance derives"
    if not set(expected.supporting) <= prov.memory_ids:
        return "supporting evidence is not in the state"
    return None


def _parts(text: str) -> tuple[str, str, str]:
    """``(context sentences, wrapper, question)`` of a free-text query (see the paraphrase operator)."""
    ctx, core = wording.split_contexts(text)
    wrapper, question = unwrap(core)
    return ctx, wrapper, question


def sibling_text(parent: str, sibling: str, name: str) -> str | None:
    """The parent's query (its context sentences and wrapper kept) asking the sibling's words after ``name``."""
    ctx, wrapper, question = _parts(parent)
    new = siblings.swap(question, sibling, name)
    if new is None or new == question:
        return None
    return f"{ctx} {wrap(wrapper, new)}".strip()


def _not_the_sibling(parent: str, child: str, sibling: str, name: str) -> str:
    """Why ``child`` is not the sibling question asked as ``parent`` is worded ("" when it is)."""
    pctx, pwrap, pq = _parts(parent)
    cctx, cwrap, cq = _parts(child)
    if (cctx, cwrap) != (pctx, pwrap):
        return "the context or wrapper of the parent changed"
    if cq not in siblings.rewordings(sibling):
        return "the new question is not the sibling question or a rewrite of its wh-phrase"
    p, c = siblings.split_at(pq, name), siblings.split_at(cq, name)
    if p is None or c is None or p[0] != c[0]:
        return "the new question does not keep the parent's opening"
    return ""

