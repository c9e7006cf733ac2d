"""The per-state bookkeeping every adapter uses (``ufuzz.backends.states.StateTable``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ufuzz.backends.protocol import BackendError
from ufuzz.backends.states import StateTable


def test_handles_are_minted_in_order_with_prefix_and_width():
    t: StateTable[int] = StateTable("graphiti", prefix="g", width=5)
    assert [t.mint() for _ in range(3)] == ["g00001", "g00002", "g00003"] and t.minted == 3
    assert StateTable("x").mint() == "s1"


def test_an_unknown_or_released_handle_names_backend_and_operation():
    t: StateTable[str] = StateTable("mem0")
    h = t.mint()
    t.put(h, "record")
    assert t.get(h, "retrieve") == t[h] == "record"
    assert t.pop(h) == "record" and t.pop(h) is None  # releasing twice is not an error
    with pytest.raises(BackendError, match=r"^mem0 retrieve: unknown state 's1' \(never built, or already released\)$"):
        t.get(h, "retrieve")
    with pytest.raises(BackendError, match=r"^mem0: unknown state 'zz'"):
        t["zz"]
    assert t.find("zz") is None


def test_touch_moves_a_handle_to_the_most_recently_used_end():
    t: StateTable[int] = StateTable("x")
    for i in range(3):
        t.put(t.mint(), i)
    t.touch("s1")
    t.touch("nope")  # an unknown handle is ignored
    assert t.handles() == ["s2", "s3", "s1"] and t["s1"] == 0


@given(st.lists(st.one_of(st.just(("build",)), st.tuples(st.just("release"), st.integers(0, 20)),
                          st.tuples(st.just("repoint"), st.integers(0, 20))), max_size=40))
def test_the_table_follows_builds_releases_and_repoints(ops):
    t: StateTable[int] = StateTable("x")
    model: dict[str, int] = {}
    for i, op in enumerate(ops):
        if op[0] == "build":
            h = t.mint()
            assert h not in model and h not in t  # a handle is never reused, even after a release
            t.put(h, i)
            model[h] = i
        elif op[0] == "release":
            h = f"s{op[1]}"
            assert t.pop(h) == model.pop(h, None)
        elif f"s{op[1]}" in model:  # re-point a live handle (copy-on-write adapters move a handle)
            t.put(f"s{op[1]}", -i)
            model[f"s{op[1]}"] = -i
    assert t.handles() == list(model) and t.records() == list(model.values()) and len(t) == len(model)
    assert list(t) == list(model)
