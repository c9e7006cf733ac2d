"""Speaker swap (misattribution): ask a conversation partner what only the other one said or did.

In a two-person conversation (LoCoMo) most questions are about one speaker. Asked of the other speaker —
where nothing of theirs (their observations and event summaries in provenance, their own turns) supports
the question and no fact of theirs answers it — the right behaviour is to abstain: the original speaker's
evidence is a decoy (invalidated); answering with the original answer is an unsupported answer (not a stale
one: that value is not out of date, it belongs to another person's question). That is the misattribution
LoCoMo's adversarial questions test; this operator makes such questions from every
answerable one the importer found swappable (``replacement_targets["speaker"]``).

The new text names the other speaker wherever the old one was written out and switches pronouns where the
checkpoint knows both speakers' pronouns; a text with a gendered pronoun and an unknown pronoun is not
produced. The validator checks, from the query text and provenance only, that exactly the entity changed to
a person of the checkpoint, that the text names them and nobody else known, that nothing of theirs
supports the question, and that the reference abstains with the parent's evidence invalidated.
"""

from __future__ import annotations

import random
from dataclasses import replace

from ufuzz.model import FuzzCase, Provenance, Reference
from ufuzz.operators.base import Mutation, Operator, Rejected, StateView, Verdict
from ufuzz.operators.requery import fields_match, pronoun
from ufuzz.seeds import speakers

FIELD = "speaker"


def said_by(prov: Provenance, name: str) -> list[str]:
    """What the state records of ``name``: their annotations (observations, events) and their own turns."""
    notes = [f.value for f in prov.facts if f.entity == name and f.value_type in speakers.ANNOTATION_TYPES]
    prefix = f"{name}:"
    return notes + [text for _, text in prov.memory_texts if text.startswith(prefix)]


class SpeakerSwap(Operator):
    name = "speaker_swap"
    kind = "query"
    order = 35
    unanswerable = True

    def targets(self, case: FuzzCase) -> list[str]:
        f = case.query.fields
        if not f.answerable:
            return []
        return [f"{FIELD}={s}" for s in case.descriptor.replacement_targets.get(FIELD, ()) if s != f.entity]

    def mutate(self, case: FuzzCase, parent_ref: Reference, target: str, rng: random.Random,
               view: StateView | None = None) -> Mutation:
        field, _, other = target.partition("=")
        if field != FIELD or not other:
            raise Rejected(f"malformed target {target!r}")
        if parent_ref.abstain:
            raise Rejected("the parent abstains: there is no answer to misattribute")
        f = case.query.fields
        text = speakers.reword_about(case.query.text, f.entity, other, pronoun(case, f.entity),
                                     pronoun(case, other), strict=True)
        if text is None:
            raise Rejected(f"cannot word the question about {other!r} (name not written out, or pronouns unknown)")
        qid = f"{case.query.id}~s{rng.randrange(1 << 30):x}"
        ref = Reference(query_id=qid, answer=None, abstain=True,
                        invalidated=tuple(sorted(set(parent_ref.supporting) | set(parent_ref.invalidated))))
        query = replace(case.query, id=qid, text=text, fields=replace(f, entity=other, answerable=False))
        return Mutation(query=query, provenance=case.provenance, reference=ref, detail=f"{f.entity} -> {other}")

    def validate(self, case: FuzzCase, mutation: Mutation, view: StateView | None = None) -> Verdict:
        parent, child = case.query.fields, mutation.query.fields
        if (child.attribute, child.scope) != (parent.attribute, parent.scope) or child.entity == parent.entity:
            return Verdict.reject("exactly the entity must change")
        if child.answerable:
            return Verdict.reject("a misattributed question is not answerable")
        prov = case.provenance
        if prov.entity_type(child.entity) != "person" or prov.entity_type(parent.entity) != "person":
            return Verdict.reject("both must be persons of the checkpoint")
        ok, why = fields_match(case, mutation.query, child)
        if not ok:
            return Verdict.reject(why)
        if prov.facts_for(child.entity, child.attribute):
            return Verdict.reject(f"provenance records {child.attribute!r} for {child.entity!r}")
        names = prov.entity_names()
        original = prov.reference_for("", parent)
        answers = [a for a in (original.answer, *original.aliases) if a]
        if speakers.supports(mutation.query.text, said_by(prov, child.entity), names, answers):
            return Verdict.reject(f"something {child.entity!r} said or did may support the question")
        src, dst = pronoun(case, parent.entity), pronoun(case, child.entity)
        if speakers.has_gendered_pronoun(mutation.query.text) and (src is None or dst is None):
            return Verdict.reject("gendered pronoun with an unknown pronoun of a speaker")
        ref = mutation.reference
        if not ref.abstain:
            return Verdict.reject("reference must be abstention")
        parent_support = set(original.supporting)
        if not parent_support <= set(ref.invalidated):
            return Verdict.reject("the original speaker's evidence must be invalidated")
        if not set(ref.invalidated) <= prov.memory_ids:
            return Verdict.reject("invalidated ids are not in the state")
        return Verdict.accept("entity swapped to the other speaker", "nothing of theirs supports the question",
                              "reference abstains, original evidence invalidated")
