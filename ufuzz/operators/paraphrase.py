"""Paraphrase: four meaning-preserving query transformations.

``reword`` (another wording template or lexical rewrite), ``shorten`` (drop removable context),
``add_context`` (prepend non-restrictive context), ``change_form`` (question ↔ imperative ↔ indirect).
A paraphrase is accepted only when the answer-affecting fields re-extracted from the new text equal the
parent's and the text mentions no entity, attribute, time scope or value that the parent did not (no added
condition). The reference is the parent's, unchanged.

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
from ufuzz.seeds import wording

TRANSFORMATIONS = ("reword", "shorten", "add_context", "change_form")

#: meaning-preserving lexical rewrites for free-text queries (both directions are applied)
LEXICAL = (
    (r"\bWhat's\b", "What is"), (r"\bwhat's\b", "what is"), (r"\bWhere's\b", "Where is"),
    (r"\bfavorite\b", "favourite"), (r"\bCan you\b", "Could you"), (r"\bdo you know\b", "can you recall"),
    (r"\bHow many\b", "What number of"), (r"\bI've\b", "I have"), (r"\bI'm\b", "I am"), (r"\bdidn't\b", "did not"),
)
FREE_FORMS = (("Please tell me: ", ""), ("I'd like to know: ", ""), ("Quick question: ", ""))

_WORD = re.compile(r"[A-Za-z0-9']+")
_FUNCTION = {"please", "tell", "me", "i'd", "like", "to", "know", "quick", "question", "could", "can", "you",
             "what", "is", "number", "of", "how", "many", "i", "have", "am", "i've", "i'm", "did", "not",
             "didn't", "what's", "where's", "where", "favourite", "favorite", "recall", "do"}


def _content_words(text: str) -> list[str]:
    return sorted(w.lower() for w in _WORD.findall(text) if w.lower() not in _FUNCTION)


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
        ctx = q.context if q.template is not None else wording.split_context(q.text)[0]
        if ctx:
            out.insert(1, "shorten")
        return out

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
        ctx, core = wording.split_context(q.text)
        if target == "reword":
            choices = []
            for pat, rep in LEXICAL:
                if re.search(pat, core):
                    choices.append((pat, rep))
                back = r"\b" + re.escape(rep) + r"\b"
                if re.search(back, core):
                    choices.append((back, pat.replace(r"\b", "").replace("\\'", "'")))
            if not choices:
                raise Rejected("no lexical rewrite applies to this free-text query")
            pat, rep = choices[stable_index(len(choices), q.text, str(rng.random()))]
            core = re.sub(pat, rep, core, count=1)
            text = f"{ctx} {core}".strip()
        elif target == "shorten":
            if not ctx:
                raise Rejected("no removable context")
            text, ctx = core, ""
        elif target == "add_context":
            pool = [c for c in wording.CONTEXTS if c != ctx]
            ctx = rng.choice(pool) if not ctx else f"{ctx} {rng.choice(pool)}"
            text = f"{ctx} {core}"
        else:
            prefix, _ = rng.choice(FREE_FORMS)
            body = core[0].lower() + core[1:] if core[:2] not in ("I ", "I'") else core
            if any(core.startswith(p) for p, _ in FREE_FORMS):
                raise Rejected("already in a wrapped form")
            text = f"{ctx} {prefix}{body}".strip()
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
        values = sorted({f.value for f in case.provenance.facts})
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
        ctx, core = wording.split_context(child.text)
        if ctx and any(getattr(wording.extract(ctx, ents, values), p) for p in
                       ("entities", "attributes", "scopes", "values")):
            return Verdict.reject("context is restrictive")
        if child.template not in (None, "llm") and not mutation.detail.startswith("llm:"):
            # a templated wording must be exactly one the lexicon defines for the parent's fields
            why = self._not_a_realization(case, child)
            if why:
                return Verdict.reject(why)
        if not lexicon and child.template is None and not mutation.detail.startswith("llm:"):
            # free text: the core keeps its content words (only function words / wrappers may change)
            _, pcore = wording.split_context(parent.text)
            strip = tuple(p for p, _ in FREE_FORMS)
            ccore = core
            for p in strip:
                if ccore.startswith(p):
                    ccore = ccore[len(p):]
            if _content_words(ccore) != _content_words(pcore):
                return Verdict.reject("content words of the question changed")
        return Verdict.accept("fields unchanged", "no added condition")

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
