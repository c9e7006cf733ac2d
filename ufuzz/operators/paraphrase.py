"""Paraphrase: four meaning-preserving query transformations.

``reword`` (another wording template, or for free text a rewrite of the question's wh-phrase),
``shorten`` (drop removable context), ``add_context`` (prepend non-restrictive context), ``change_form``
(question ↔ imperative ↔ indirect; for free text a wrapper such as "Quick question: …").
A paraphrase is accepted only when the answer-affecting fields re-extracted from the new text equal the
parent's and the text mentions no entity, attribute, time scope or value that the parent did not (no added
condition). The reference is the parent's, unchanged.

Free-text questions (imported benchmarks) are validated as strictly as templated ones: the new question
must be the parent's, or exactly one rewrite of it from :data:`ufuzz.seeds.wording.FREE_REWRITES` (per
question type: when / where / who / why / how many / how much / how often / how long / how / what time /
what kind / which / what / what is / would), behind context sentences and at most one wrapper — as a
templated paraphrase must be a template's wording. ``reword`` is offered only where a rewrite applies.

An optional LLM realizer (``realizer``: an object with ``realize(text, transformation) -> str``) may word
the candidate instead of the templates; the same validator decides.
"""

from __future__ import annotations

import random
import re
from dataclasses import replace

from ufuzz.model import FuzzCase, Query, Reference
from ufuzz.operators.base import Mutation, Operator, Rejected, StateView, Verdict
from ufuzz.operators.requery import fields_match, known_entities, stable_index
from ufuzz.seeds import speakers, wording

TRANSFORMATIONS = ("reword", "shorten", "add_context", "change_form")
#: context sentences a question may carry: a third opener ("Sorry for asking again. I'm writing a card. Quick
#: question: ...") reads as padding no user writes, not as a paraphrase
MAX_CONTEXTS = 2

FREE_FORMS = (("Please tell me: ", ""), ("I'd like to know: ", ""), ("Quick question: ", ""))
#: first words a wrapper may lower-case ("Quick question: when did …"); anything else (a name) keeps its case
_LOWERABLE = re.compile(r"^(?:What|When|Where|Who|Whom|Whose|Why|Which|How|Would|Did|Does|Do|Is|Are|Was|Were|"
                        r"Has|Have|Had|Can|Could|Will|In|At|For|On)\b")


def unwrap(core: str) -> tuple[str, str]:
    """``(wrapper, question)``: the :data:`FREE_FORMS` prefix of ``core`` (or ``""``) and the question with
    its first letter restored to upper case."""
    for prefix, _ in FREE_FORMS:
        if core.startswith(prefix):
            q = core[len(prefix):]
            return prefix, q[:1].upper() + q[1:]
    return "", core


def wrap(prefix: str, question: str) -> str:
    if not prefix:
        return question
    body = question[:1].lower() + question[1:] if _LOWERABLE.match(question) else question
    return prefix + body


#: restrictive conditions the wording lexicon does not know: dates, numbers, time expressions (other than
#: the scope markers) and exclusions; a paraphrase may not add any of them
_RESTRICTIVE = re.compile(
    r"\b\d+(?:[:.]\d+)?\b"
    r"|\b(?:January|February|March|April|June|July|August|September|October|November|December)\b"
    r"|\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|\bweekends?\b"
    r"|\b(?:yesterday|today|tonight|tomorrow|ago|since|until|till|during|lately|recently|anymore)\b"
    r"|\b(?:last|next|this|that|each|every)\s+(?:week|month|year|summer|winter|spring|autumn|morning|evening|"
    r"night|time)\b"
    r"|\b(?:summers?|winters?|springtime|autumns?)\b|\bin\s+the\s+(?:morning|afternoon|evening)s?\b"
    r"|\bat\s+night\b|\bon\s+holidays?\b"
    r"|\b(?:except|excluding|besides|unless|instead of|rather than|other than|apart from|aside from|"
    r"not counting|according to)\b",
    re.IGNORECASE)
_NAME = re.compile(r"(?<![\w'])[A-Z][a-z]+(?:'s)?")


def _restrictions(text: str) -> set[str]:
    """Restrictive markers in ``text``: :data:`_RESTRICTIVE` matches and capitalised words that do not
    start a sentence (names the lexicon does not know)."""
    found = {m.group(0).lower() for m in _RESTRICTIVE.finditer(text)}
    for m in _NAME.finditer(text):
        before = text[:m.start()].rstrip()
        if before and before[-1] not in ".?!:":
            found.add(m.group(0).removesuffix("'s"))
    return found


class Paraphrase(Operator):
    name = "paraphrase"
    kind = "query"
    order = 10
    meaning_preserving = True

    @classmethod
    def create(cls, *, realizer=None) -> Paraphrase:
        return cls(realizer)

    def __init__(self, realizer=None) -> None:
        self.realizer = realizer

    def targets(self, case: FuzzCase) -> list[str]:
        q = case.query
        out = ["reword", "add_context", "change_form"]
        ctx = q.context if q.template is not None else wording.split_contexts(q.text)[0]
        if ctx:
            out.insert(1, "shorten")
        if sum(c in ctx for c in wording.CONTEXTS) >= MAX_CONTEXTS:  # no stack of openers across generations
            out.remove("add_context")
        if q.template is None and self.realizer is None:  # free text: only what the rewrite table can word
            ctx, core = wording.split_contexts(q.text)
            wrapper, question = unwrap(core)
            if not wording.free_rewrites(question):
                out.remove("reword")
            if wrapper:
                out.remove("change_form")
        return out

    def varies(self, case: FuzzCase, target: str) -> bool:
        """An LLM wording, a drawn context or wrapper, a drawn template or rewrite may go otherwise; removing
        the context, or the one rewrite there is, may not."""
        if self.realizer is not None:
            return True
        if target == "shorten":
            return False
        if target == "reword" and case.query.template is None:
            _, core = wording.split_contexts(case.query.text)
            return len(wording.free_rewrites(unwrap(core)[1])) > 1
        return True

    # -- mutation ---------------------------------------------------------------------------------------
    def mutate(self, case: FuzzCase, parent_ref: Reference, target: str, rng: random.Random,
               view: StateView | None = None) -> Mutation:
        if target not in TRANSFORMATIONS:
            raise Rejected(f"unknown paraphrase transformation {target!r}")
        qid = f"{case.query.id}~p{rng.randrange(1 << 30):x}"
        if self.realizer is not None:
            try:
                text = " ".join(self.realizer.realize(case.query.text, target).split())
            except Exception as exc:  # an LLM fault yields no mutant; it is not a test
                raise Rejected(f"realizer failed: {exc}") from None
            if not text:
                raise Rejected("realizer returned nothing")
            q = replace(case.query, id=qid, text=text, context=wording.split_context(text)[0], form="free",
                        template="llm" if case.query.template is not None else None)
            return Mutation(query=q, provenance=case.provenance, reference=parent_ref, detail=f"llm:{target}")
        if case.query.template not in (None, "llm"):
            q = self._templated(case, target, rng)
        else:
            q = self._free(case, target, rng)
        return Mutation(query=replace(q, id=qid), provenance=case.provenance, reference=parent_ref, detail=target)

    def _templated(self, case: FuzzCase, target: str, rng: random.Random) -> Query:
        q = case.query
        template, form, context = q.template, q.form, q.context
        if target == "reword":
            others = [t for t in wording.template_ids(q.fields.attribute) if t != q.template]
            if not others:
                raise Rejected("no other template for this attribute")
            template = rng.choice(others)
        elif target == "shorten":
            if not context:
                raise Rejected("no removable context")
            context = ""
        elif target == "add_context":
            pool = [c for c in wording.CONTEXTS if c not in context]
            context = (context + " " + rng.choice(pool)).strip() if context else rng.choice(pool)
        else:
            forms = [f for f in wording.FORMS if f != q.form]
            form = rng.choice(forms)
        etype = case.provenance.entity_type(q.fields.entity)
        try:
            text = wording.realize(q.fields, template=template, form=form, context=context, entity_type=etype)
        except KeyError as exc:
            raise Rejected(f"cannot realize: {exc}") from None
        return replace(q, text=text, template=template, form=form, context=context)

    def _free(self, case: FuzzCase, target: str, rng: random.Random) -> Query:
        q = case.query
        ctx, core = wording.split_contexts(q.text)
        wrapper, question = unwrap(core)
        if target == "reword":
            choices = wording.free_rewrites(question)
            if not choices:
                raise Rejected("no rewrite of the question's wh-phrase applies to this free-text query")
            core = wrap(wrapper, choices[stable_index(len(choices), q.text, str(rng.random()))])
            text = f"{ctx} {core}".strip()
        elif target == "shorten":
            if not ctx:
                raise Rejected("no removable context")
            text, ctx = core, ""
        elif target == "add_context":
            pool = [c for c in wording.CONTEXTS if c not in ctx]
            ctx = rng.choice(pool) if not ctx else f"{ctx} {rng.choice(pool)}"
            text = f"{ctx} {core}"
        else:
            if wrapper:
                raise Rejected("already in a wrapped form")
            prefix, _ = rng.choice(FREE_FORMS)
            text = f"{ctx} {wrap(prefix, question)}".strip()
        return replace(q, text=text, context=ctx, form="free")

    # -- validation -------------------------------------------------------------------------------------
    def validate(self, case: FuzzCase, mutation: Mutation, view: StateView | None = None) -> Verdict:
        parent, child = case.query, mutation.query
        if child.text.strip() == parent.text.strip():
            return Verdict.reject("text unchanged")
        if child.fields != parent.fields:
            return Verdict.reject("answer-affecting fields changed")
        # templated parents (and LLM wordings of them) are re-read with the wording lexicon
        lexicon = parent.template is not None
        ok, why = fields_match(case, child, parent.fields, lexicon=lexicon)
        if not ok:
            return Verdict.reject(why)
        ents = known_entities(case)
        values = sorted({f.value for f in case.provenance.facts if f.value_type not in speakers.ANNOTATION_TYPES})
        pm = wording.extract(parent.text, ents, values)
        cm = wording.extract(child.text, ents, values)
        for part in ("entities", "attributes", "scopes", "values"):
            added = set(getattr(cm, part)) - set(getattr(pm, part))
            lost = set(getattr(pm, part)) - set(getattr(cm, part))
            if added:
                return Verdict.reject(f"adds a condition: new {part} {sorted(added)}")
            if lost and part != "values":
                return Verdict.reject(f"drops {part} {sorted(lost)}")
        added = _restrictions(child.text) - _restrictions(parent.text)
        if added:
            return Verdict.reject(f"adds a condition the lexicon does not know: {sorted(added)}")
        ctx, core = wording.split_contexts(child.text)
        if ctx and any(getattr(wording.extract(ctx, ents, values), p) for p in
                       ("entities", "attributes", "scopes", "values")):
            return Verdict.reject("context is restrictive")
        if child.template not in (None, "llm") and not mutation.detail.startswith("llm:"):
            # a templated wording must be exactly one the lexicon defines for the parent's fields
            why = self._not_a_realization(case, child)
            if why:
                return Verdict.reject(why)
        if not lexicon and child.template is None and not mutation.detail.startswith("llm:"):
            why = self._not_a_free_rewording(parent.text, child.text)
            if why:
                return Verdict.reject(why)
        return Verdict.accept("fields unchanged", "no added condition")

    @staticmethod
    def _not_a_free_rewording(parent: str, child: str) -> str:
        """Why ``child`` is not a free-text paraphrase of ``parent`` ("" when it is): it must be the parent's
        question, or one rewrite of it from :data:`wording.FREE_REWRITES`, behind context sentences from
        :data:`wording.CONTEXTS` and at most one :data:`FREE_FORMS` wrapper — nothing else may change."""
        cctx, ccore = wording.split_contexts(child)
        if wording.split_context(ccore)[0] or any(c in ccore for c in wording.CONTEXTS):
            return "context sentences must lead the question"
        _, pcore = wording.split_contexts(parent)
        _, pq = unwrap(pcore)
        cwrap, cq = unwrap(ccore)
        if wrap(cwrap, cq) != ccore:
            return "the wrapper changed the question's case"
        if cq != pq and cq not in wording.free_rewrites(pq):
            return "content words of the question changed: not a rewrite of its wh-phrase"
        return ""

    @staticmethod
    def _not_a_realization(case: FuzzCase, child: Query) -> str:
        fields = case.query.fields
        if child.template not in wording.template_ids(fields.attribute):
            return f"template {child.template!r} is not a wording of {fields.attribute!r}"
        rest = child.context.strip()
        while rest:  # the context is a sequence of the non-restrictive context sentences
            head = next((c for c in wording.CONTEXTS if rest == c or rest.startswith(c + " ")), None)
            if head is None:
                return f"context {child.context!r} is not made of non-restrictive context sentences"
            rest = rest[len(head):].strip()
        try:
            text = wording.realize(fields, template=child.template, form=child.form, context=child.context,
                                   entity_type=case.provenance.entity_type(fields.entity))
        except (KeyError, ValueError) as exc:
            return f"cannot re-realize the wording: {exc}"
        if text != child.text:
            return "text is not the lexicon's wording of the parent's fields for its template/form/context"
        return ""
