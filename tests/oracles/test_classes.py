"""Behaviour classes (ufuzz.oracles.classes): every failure gets exactly one, from its operator, level and kind;
one behaviour seen through two operators is one class; a class's causes are the sum of its groups' causes."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from ufuzz.oracles.classes import class_of, summarise
from ufuzz.oracles.expectations import KINDS, RESPONSE_KINDS, SELECTION_KINDS

OPERATORS = ("paraphrase", "target_change", "unsupported", "speaker_swap", "update", "delete", "unrelated_edit")
SLUG = re.compile(r"^[a-z0-9_-]+(:[a-z0-9_-]+)*$")


def test_the_named_behaviours():
    assert class_of("update", "selection", "stale_ranked_above_valid").title == \
        "a superseded memory outranks its replacement"
    assert class_of("paraphrase", "selection", "missing_evidence").id == "evidence-lost-under-rewording"
    assert class_of("delete", "selection", "deleted_evidence_retrieved").title == "a deleted memory is still retrieved"


def test_one_behaviour_through_two_operators_is_one_class():
    # a delete that never reaches search, whichever operator deleted the memory
    assert class_of("delete", "selection", "deleted_evidence_retrieved") == \
        class_of("unrelated_edit", "selection", "deleted_evidence_retrieved")
    # a question nothing supports answered with memories, however it became unsupported
    assert class_of("unsupported", "selection", "unsupported_retrieved") == \
        class_of("target_change", "selection", "unsupported_retrieved")


def test_different_behaviours_are_different_classes():
    ids = {class_of(op, "selection", kind).id for op, kind in [
        ("update", "stale_ranked_above_valid"), ("paraphrase", "missing_evidence"),
        ("unrelated_edit", "missing_evidence"), ("target_change", "missing_evidence"),
        ("speaker_swap", "unsupported_retrieved"), ("unsupported", "unsupported_retrieved")]}
    assert len(ids) == 6
    # the same kind at another level is another behaviour (the answer, not the ranking)
    assert class_of("update", "response", "stale_answer") != class_of("update", "selection", "stale_ranked_above_valid")


@given(st.sampled_from(OPERATORS + ("my_plugin_op",)), st.sampled_from(("selection", "response", "state")),
       st.sampled_from(KINDS + ("lost_write",)))
def test_every_failure_has_a_stable_class(op, level, kind):
    c = class_of(op, level, kind)
    assert SLUG.match(c.id), c.id
    assert c.title and c == class_of(op, level, kind)


def test_unknown_operators_and_levels_are_kept_apart():
    assert class_of("my_op", "selection", "missing_evidence").id == "evidence-not-retrieved:my_op"
    assert class_of("my_op", "state", "lost_write").id == "my_op:state:lost_write"
    assert class_of("update", "state", "lost_write") != class_of("delete", "state", "lost_write")
    assert class_of("", "selection", "missing_evidence").id.startswith("fails-as-asked:")


@given(st.lists(st.tuples(st.sampled_from(OPERATORS), st.sampled_from(SELECTION_KINDS + RESPONSE_KINDS),
                          st.integers(1, 5), st.integers(0, 4), st.integers(0, 9)), max_size=20, unique_by=lambda t: t[:2]))
def test_summarise_adds_up_the_groups(items):
    groups = [{"operator": op, "stage": "selection" if kind in SELECTION_KINDS else "response", "kind": kind,
               "unique": u, "causes": min(c, u), "occurrences": u + o} for op, kind, u, c, o in items]
    rows = summarise(groups)
    assert sum(r["unique"] for r in rows) == sum(g["unique"] for g in groups)
    assert sum(r["causes"] for r in rows) == sum(g["causes"] for g in groups)
    assert sum(r["occurrences"] for r in rows) == sum(g["occurrences"] for g in groups)
    assert len({r["class"] for r in rows}) == len(rows)
    assert sum(len(r["covers"]) for r in rows) == len(groups)
    assert [(-r["causes"], -r["unique"]) for r in rows] == sorted((-r["causes"], -r["unique"]) for r in rows)
