"""Side effects of state operations (issue 23, item 2): what the system changed beyond the operation asked."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ufuzz.backends.protocol import OpResult, StoredMemory
from ufuzz.model import Memory, StateOp
from ufuzz.operators.sideeffects import KINDS, find


def _m(mid: str, text: str = "", active: bool = True) -> StoredMemory:
    return StoredMemory(mid, text or f"text of {mid}", "2024-01-01T00:00:00", active)


BEFORE = [_m("a"), _m("b"), _m("c")]
ADD = (StateOp("add", None, Memory("n", "I fixed the hinge.", "2024-02-01T00:00:00")),)
ADDED = (OpResult("add", True, "n", written=("n",)),)


def test_an_add_that_evicts_another_memory_is_a_collateral_removal():
    after = [_m("b"), _m("c"), _m("n", "I fixed the hinge.")]
    got = find(BEFORE, after, ADD, ADDED)
    assert got is not None and got.kind == "collateral_removal" and got.memories == ("a",)
    assert got.changes[0] == {"memory": "a", "change": "removed", "before": "text of a"}
    assert "a removed" in got.reason


def test_an_add_that_does_only_what_it_asked_has_no_side_effect():
    assert find(BEFORE, [*BEFORE, _m("n", "I fixed the hinge.")], ADD, ADDED) is None


def test_rewrite_deactivation_and_new_memories_are_seen_in_order_of_seriousness():
    after = [_m("a", "changed"), _m("b", active=False), _m("c"), _m("n"), _m("zz", "surprise")]
    got = find(BEFORE, after, ADD, ADDED)
    assert got.kind == "collateral_rewrite" and got.memories == ("a",)
    assert [c["change"] for c in got.changes] == ["rewritten", "deactivated", "added"]


def test_an_update_that_leaves_its_old_text_under_another_id_leaves_a_duplicate():
    ops = (StateOp("update", "b", Memory("b~u1", "new text", "2024-02-01T00:00:00")),)
    res = (OpResult("update", True, "b", written=("b",), detail="rewritten in place"),)
    after = [_m("a"), _m("b", "new text"), _m("c"), _m("p-77", "text of b")]
    got = find(BEFORE, after, ops, res)
    assert got.kind == "duplicate_left" and got.memories == ("p-77",)
    # the updated memory itself changing, and an appended version the backend reported, are what was asked
    assert find(BEFORE, [_m("a"), _m("b", "new text"), _m("c")], ops, res) is None
    appended = (OpResult("update", True, "b", written=("b~u1",), superseded=("b",)),)
    assert find(BEFORE, [_m("a"), _m("b", active=False), _m("c"), _m("b~u1", "new text")], ops, appended) is None


def test_a_delete_of_the_wrong_memory_removes_another():
    ops = (StateOp("delete", "b"),)
    res = (OpResult("delete", True, "b", removed=("b",)),)
    got = find(BEFORE, [_m("b"), _m("c")], ops, res)
    assert got.kind == "collateral_removal" and got.memories == ("a",)


_ids = st.lists(st.sampled_from([f"m{i}" for i in range(8)]), unique=True, min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(_ids, st.data())
def test_property_untouched_unchanged_state_has_no_side_effect_and_any_removal_is_found(ids, data):
    before = [_m(i) for i in ids]
    target = data.draw(st.sampled_from(ids))
    ops = (StateOp("delete", target),)
    res = (OpResult("delete", True, target, removed=(target,)),)
    assert find(before, before, ops, res) is None
    assert find(before, [m for m in before if m.id != target], ops, res) is None  # what it asked
    others = [i for i in ids if i != target]
    if others:
        gone = data.draw(st.sampled_from(others))
        got = find(before, [m for m in before if m.id not in (target, gone)], ops, res)
        assert got is not None and got.kind == "collateral_removal" and gone in got.memories
        assert target not in got.memories and got.kind in KINDS


def test_deactivation_counts_only_where_asked():
    ops = (StateOp("update", "b", Memory("b~u1", "new text", "2024-02-01T00:00:00")),)
    res = (OpResult("update", True, "b", written=("b~u1",), superseded=("b",)),)
    after = [_m("a", active=False), _m("b", active=False), _m("c"), _m("b~u1", "new text")]
    assert find(BEFORE, after, ops, res, deactivation=False) is None  # another carrier of the old value
    assert find(BEFORE, after, ops, res).kind == "collateral_deactivation"


def _at(mid: str, stamp: str) -> StoredMemory:
    return StoredMemory(mid, f"text of {mid}", stamp, True)


UPDATE_B = (StateOp("update", "b", Memory("b~u1", "new text", "2024-03-01T00:00:00")),)
UPDATED_B = (OpResult("update", True, "b", written=("b",)),)


def test_an_update_that_restamps_another_memory_is_a_collateral_retime():
    after = [_at("a", "2024-03-01T00:00:00"), _m("b", "new text"), _m("c")]
    got = find(BEFORE, after, UPDATE_B, UPDATED_B)
    assert got is not None and got.kind == "collateral_retime" and got.memories == ("a",)
    assert got.changes[0] == {"memory": "a", "change": "retimed", "before": "2024-01-01T00:00:00",
                              "after": "2024-03-01T00:00:00"}
    # its own target taking the new time is what the update asked
    assert find(BEFORE, [_m("a"), _at("b", "2024-03-01T00:00:00"), _m("c")], UPDATE_B, UPDATED_B) is None


def test_a_retime_ranks_below_a_rewrite_and_above_a_new_memory():
    after = [_at("a", "2024-03-01T00:00:00"), _m("b", "new text"), _m("c", "changed"), _m("zz", "surprise")]
    assert find(BEFORE, after, UPDATE_B, UPDATED_B).kind == "collateral_rewrite"
    after = [_at("a", "2024-03-01T00:00:00"), _m("b", "new text"), _m("c"), _m("zz", "surprise")]
    assert find(BEFORE, after, UPDATE_B, UPDATED_B).kind == "collateral_retime"


@pytest.mark.parametrize("shown", ["2024-01-01T00:00:00+00:00", "2024-01-01T00:00:00Z", "2024-01-01 00:00:00",
                                   "2024-01-01T00:00:00.000000", "2024-01-01T01:00:00+01:00", "", "  "])
def test_the_same_instant_written_another_way_or_no_time_shown_is_no_retime(shown):
    after = [_at("a", shown), _m("b", "new text"), _m("c")]
    assert find(BEFORE, after, UPDATE_B, UPDATED_B) is None
    assert find([_at("a", ""), _m("b"), _m("c")], [_m("a"), _m("b", "new text"), _m("c")], UPDATE_B,
                UPDATED_B) is None  # a listing that showed no time before shows no change either


def test_times_that_are_not_iso_are_compared_as_written():
    before = [_at("a", "yesterday"), _m("b"), _m("c")]
    assert find(before, [_at("a", " yesterday "), _m("b", "new text"), _m("c")], UPDATE_B, UPDATED_B) is None
    got = find(before, [_at("a", "today"), _m("b", "new text"), _m("c")], UPDATE_B, UPDATED_B)
    assert got.kind == "collateral_retime"
    got = find(before, [_at("a", "2024-01-01T00:00:00"), _m("b", "new text"), _m("c")], UPDATE_B, UPDATED_B)
    assert got.kind == "collateral_retime"


_stamps = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2030, 12, 31))


@settings(max_examples=200, deadline=None)
@given(_stamps, _stamps, st.sampled_from(["", "+00:00", "Z"]))
def test_property_a_retime_is_found_exactly_when_the_instant_differs(was, now, suffix):
    before = [_at("a", was.isoformat()), _m("b")]
    after = [_at("a", now.isoformat() + suffix), _m("b", "new text")]
    got = find(before, after, UPDATE_B, UPDATED_B)
    assert (got is not None) == (was != now)
    assert got is None or got.kind == "collateral_retime"
