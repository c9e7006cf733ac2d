"""Sibling questions: two questions about one person that open the same way and ask of another event, object or
time of theirs ("When did Melanie go to the museum?" / "When did Melanie go to the pottery workshop?").

A benchmark written over a conversation (LoCoMo) asks many questions of each speaker, and many of them share
their opening up to the speaker's name ("When did Melanie …", "What is Caroline's …"). The question a target
change asks is such a sibling: its words after the name are the sibling's, its opening is the parent's (so a
re-worded parent, "At what point in time did Melanie go to the museum?", gives the sibling re-worded the same
way). Nothing is invented: the new question is the benchmark's own, and its answer and evidence are the
sibling's fact in provenance (what the importer checked against the benchmark's answer).

Everything here is text only, so that the importer that offers a sibling and the operator's validator that
checks the new question decide alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ufuzz.model import QueryFields
from ufuzz.seeds import wording
from ufuzz.seeds.importers.fields import heuristic_fields
from ufuzz.seeds.speakers import name_pattern

#: how many sibling questions a seed offers (the ones sharing most words after the name first)
MAX_SIBLINGS = 3
#: rewrites of rewrites a re-worded parent may be (a paraphrase of a paraphrase …)
REWORD_DEPTH = 3


def split_at(question: str, name: str) -> tuple[str, str] | None:
    """``(opening, rest)``: the question before the first whole-word ``name`` and from it on (``"When did "``,
    ``"Melanie go to the museum?"``); None when the name is not written out."""
    m = name_pattern(name).search(question)
    if m is None:
        return None
    return question[:m.start()], question[m.start():]


def swap(parent: str, sibling: str, name: str) -> str | None:
    """``parent``'s question with its words from ``name`` on replaced by ``sibling``'s: the parent's opening
    (as the parent is worded, a rewrite of the wh-phrase included) asking the sibling's event. None when either
    does not write the name out."""
    a, b = split_at(parent, name), split_at(sibling, name)
    if a is None or b is None:
        return None
    return a[0] + b[1]


def rewordings(question: str, depth: int = REWORD_DEPTH) -> set[str]:
    """``question`` and every chain of at most ``depth`` rewrites of its wh-phrase
    (:data:`ufuzz.seeds.wording.FREE_REWRITES`): the wordings a paraphrase of it may have."""
    seen = {question}
    frontier = {question}
    for _ in range(depth):
        frontier = {r for q in frontier for r in wording.free_rewrites(q)} - seen
        if not frontier:
            break
        seen |= frontier
    return seen


def question_fields(question: str, names: Sequence[str]) -> QueryFields | None:
    """The fields a sibling question asks, read from its own words (the importer's rules, without an extractor):
    what the operator's validator re-derives, independently of the target it was handed."""
    return heuristic_fields(question, names=names, answerable=True)


def person_names(entities: Sequence[object]) -> list[str]:
    """The names of a checkpoint's persons (:class:`ufuzz.model.Entity` of type ``person``), sorted: the names
    both the importer and the operator read a sibling question's fields with, so that they read them alike."""
    return sorted(e.name for e in entities if getattr(e, "type", None) == "person")


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']+", text.lower()))


def siblings(question: str, entity: str, candidates: Sequence[tuple[str, QueryFields]],
             names: Sequence[str], limit: int = MAX_SIBLINGS) -> tuple[str, ...]:
    """The sibling questions of ``question`` (about ``entity``) among ``candidates`` (question text, fields):
    about the same entity, another attribute, the same opening up to the entity's name, another rest, no other
    known name than ``question`` names, and fields that its own words give (so that the validator re-derives
    them). The ones sharing most words after the name come first (then by text), at most ``limit``."""
    mine = split_at(question, entity)
    if mine is None:
        return ()
    named = {n for n in names if name_pattern(n).search(question)}
    own_words = _words(mine[1])
    found: list[tuple[float, str]] = []
    for text, fields in candidates:
        if fields.entity != entity or not fields.answerable or text == question:
            continue
        theirs = split_at(text, entity)
        if theirs is None or theirs[0] != mine[0] or theirs[1] == mine[1]:
            continue
        if {n for n in names if name_pattern(n).search(text)} - named:
            continue
        got = question_fields(text, names)
        if got is None or (got.entity, got.attribute, got.scope) != (fields.entity, fields.attribute, fields.scope):
            continue
        words = _words(theirs[1])
        overlap = len(own_words & words) / max(1, len(own_words | words))
        found.append((-overlap, text))
    return tuple(t for _, t in sorted(set(found))[:limit])
