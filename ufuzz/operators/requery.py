"""Re-wording a query for new field values (shared by target-change and unsupported).

Templated queries are re-realized from their template; free-text queries (imported benchmarks) allow only
an entity substitution where the entity is written out in the text (its pronouns follow where the
checkpoint knows both entities' pronouns).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from ufuzz.model import FuzzCase, Query, QueryFields
from ufuzz.operators.base import Rejected
from ufuzz.seeds import speakers, wording
from ufuzz.seeds.importers.fields import find_entity

#: entities a question names by its person (I/my: the user, you: the assistant), not by a name
IMPLICIT = ("user", "assistant")


def stable_index(n: int, *parts: str) -> int:
    """A deterministic choice among ``n`` that depends only on ``parts`` (not on iteration order)."""
    h = hashlib.sha1("|".join(parts).encode()).hexdigest()
    return int(h[:8], 16) % n


def known_entities(case: FuzzCase) -> list[str]:
    names = set(case.provenance.entity_names())
    for field in ("entity",):
        names.update(case.descriptor.replacement_targets.get(field, ()))
        names.update(case.descriptor.absent_targets.get(field, ()))
    names.add(case.query.fields.entity)
    return sorted(names)


def entity_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w])" + re.escape(name) + r"(?![\w])")


def requery(case: FuzzCase, new_fields: QueryFields, query_id: str) -> Query:
    q = case.query
    if q.template is not None:
        if new_fields.attribute == q.fields.attribute:
            template = q.template
        else:
            ids = wording.template_ids(new_fields.attribute)
            if not ids:
                raise Rejected(f"no template for attribute {new_fields.attribute!r}")
            template = ids[stable_index(len(ids), q.template, new_fields.attribute)]
        etype = case.provenance.entity_type(new_fields.entity)
        try:
            text = wording.realize(new_fields, template=template, form=q.form, context=q.context,
                                   entity_type=etype)
        except (KeyError, ValueError) as exc:  # ValueError: the attribute does not apply to the entity type
            raise Rejected(f"cannot realize {new_fields} with template {template!r}: {exc}") from None
        return replace(q, id=query_id, text=text, fields=new_fields, template=template)
    # free text: only an entity written out in the text can be swapped (with its pronouns, where the
    # checkpoint knows how both entities are referred to)
    changed = [f for f in ("entity", "attribute", "scope") if getattr(new_fields, f) != getattr(q.fields, f)]
    if changed != ["entity"]:
        raise Rejected(f"free-text query: cannot re-word field(s) {changed}")
    if not entity_pattern(q.fields.entity).search(q.text):
        raise Rejected(f"free-text query does not spell out entity {q.fields.entity!r}")
    if entity_pattern(new_fields.entity).search(q.text):
        raise Rejected(f"free-text query already names {new_fields.entity!r}")
    text = speakers.reword_about(q.text, q.fields.entity, new_fields.entity, pronoun(case, q.fields.entity),
                                 pronoun(case, new_fields.entity), strict=False)
    if text is None:
        raise Rejected(f"cannot re-word the query about {new_fields.entity!r}")
    return replace(q, id=query_id, text=text, fields=new_fields)


def pronoun(case: FuzzCase, name: str) -> str | None:
    """How the checkpoint refers to entity ``name`` (``he``/``she``), where the importer could tell."""
    for e in case.provenance.entities:
        if e.name == name:
            return getattr(e, "pronoun", None)
    return None


def fields_match(case: FuzzCase, query: Query, expected: QueryFields,
                 lexicon: bool | None = None) -> tuple[bool, str]:
    """Independent re-extraction of the fields a query text expresses, compared with ``expected``.

    ``lexicon`` (default: the query is templated) re-extracts all fields with the wording lexicon; otherwise
    (free text) the expected entity must be spelled out and no other known entity mentioned.
    """
    ents = known_entities(case)
    if lexicon is None:
        lexicon = query.template is not None
    if lexicon:
        got = wording.fields_of(query.text, ents, default_scope=expected.scope if expected.scope == "any"
                                else "current")
        if got is None:
            return False, "fields cannot be re-extracted from the text"
        for f in ("entity", "attribute", "scope"):
            if getattr(got, f) != getattr(expected, f):
                return False, f"text expresses {f}={getattr(got, f)!r}, expected {getattr(expected, f)!r}"
        return True, "fields re-extracted from text"
    # free text: the expected entity is spelled out and no other known entity is, beyond those the parent's
    # text already names besides its own entity ("… recommend to Melanie" keeps Melanie); a new entity must
    # not be one the parent's text already names
    m = wording.extract(query.text, ents)
    parent = case.query
    implicit = expected.entity in IMPLICIT and not entity_pattern(expected.entity).search(parent.text)
    if implicit:  # "my cat" asks about the user, "you suggested" about the assistant: the wording says who
        if expected.entity != parent.fields.entity or \
                find_entity(query.text, (), user_centred=True) != find_entity(parent.text, (), user_centred=True):
            return False, f"text no longer asks about the {expected.entity} as its parent does"
    elif expected.entity not in m.entities and not entity_pattern(expected.entity).search(query.text):
        return False, f"entity {expected.entity!r} not in text"
    before = set(wording.extract(parent.text, ents).entities) - {parent.fields.entity}
    if expected.entity != parent.fields.entity and expected.entity in before:
        return False, f"the parent's text already names {expected.entity!r}"
    others = set(m.entities) - {expected.entity} - before
    if others:
        return False, f"text mentions other entities {sorted(others)}"
    return True, "entity spelled out, no other entity"
