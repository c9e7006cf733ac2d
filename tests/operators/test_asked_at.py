"""Nothing a state operator writes is dated after the question is asked (LongMemEval hand audit: an update dated
five hours after the question date made "23 dozen" the expected answer to a question asked while it was 20)."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.operator_kit import embedded
from ufuzz.model import Checkpoint, Entity, Fact, FuzzCase, Memory, MutationDescriptor, Query, QueryFields
from ufuzz.model.provenance import Provenance
from ufuzz.operators import Rejected, StateView
from ufuzz.operators.statewrite import later_timestamp
from ufuzz.operators.unrelated_edit import UnrelatedEdit
from ufuzz.operators.update import Update


@dataclass(frozen=True)
class _Stored:
    timestamp: str


class _Listing:
    """Only what :func:`later_timestamp` reads of a state: its memories' timestamps."""

    def __init__(self, stamps: list[datetime]) -> None:
        self._stamps = stamps

    def list(self) -> list[_Stored]:
        return [_Stored(s.isoformat()) for s in self._stamps]


_WHEN = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2030, 1, 1))


@given(stamps=st.lists(_WHEN, min_size=1, max_size=6), gap=st.integers(min_value=-86_400, max_value=5 * 86_400),
       days=st.integers(min_value=1, max_value=3))
def test_a_write_is_later_than_every_memory_and_earlier_than_the_question(stamps, gap, days):
    latest = max(stamps)
    asked = (latest + timedelta(seconds=gap)).replace(microsecond=0)
    try:
        got = datetime.fromisoformat(later_timestamp(_Listing(stamps), days=days, before=asked.isoformat()))
    except Rejected:
        assert asked - latest < timedelta(seconds=2)  # no whole second between the two
        return
    assert latest < got < asked
    unbounded = datetime.fromisoformat(later_timestamp(_Listing(stamps), days=days, before=None))
    assert got == unbounded or unbounded >= asked  # a whole day after the latest memory wherever that fits


@given(stamps=st.lists(_WHEN, min_size=1, max_size=6), days=st.integers(min_value=1, max_value=3))
def test_without_a_question_time_a_write_is_days_after_the_latest_memory(stamps, days):
    got = datetime.fromisoformat(later_timestamp(_Listing(stamps), days=days, before=None))
    assert got == (max(stamps) + timedelta(days=days)).replace(microsecond=0)


_MEMORIES = (Memory("s1:0", "User: we've got 20 dozen eggs in the fridge.", "2023-03-15T12:06:00"),
             Memory("s1:1", "Assistant: That is a lot of eggs!", "2023-03-15T12:06:01"),
             Memory("s2:0", "User: any tips for a tidy desk?", "2023-03-15T12:10:00"))
_CHECKPOINT = Checkpoint("c1", _MEMORIES, (Fact("user", "dozen eggs", "20", ("s1:0",), value_type="number"),),
                         (Entity("user", "user"), Entity("assistant", "assistant")))


def _case(asked_at: str | None) -> FuzzCase:
    fields = QueryFields(entity="user", attribute="dozen eggs", scope="current", answerable=True)
    query = Query(id="q1", text="How many dozen eggs do I have?", fields=fields, asked_at=asked_at)
    return FuzzCase(id="s1", seed_id="s1", checkpoint_id="c1", query=query,
                    descriptor=MutationDescriptor(value_pool=("23",)), provenance=Provenance.of(_CHECKPOINT))


def _mutate(tmp_path, case: FuzzCase, op, target: str):
    backend = embedded(tmp_path)
    try:
        view = StateView(backend, backend.fork(backend.build(_CHECKPOINT)))
        return op.mutate(case, None, target, random.Random(0), view)
    finally:
        backend.close()


def test_an_update_is_dated_between_the_last_memory_and_the_question(tmp_path):
    unbounded = _mutate(tmp_path / "a", _case(None), Update(), "value=23")
    assert unbounded.ops[0].memory.timestamp == "2023-03-16T12:10:00"  # a day after the latest memory
    asked = _mutate(tmp_path / "b", _case("2023-03-16T07:05:00"), Update(), "value=23")
    assert "2023-03-15T12:10:00" < asked.ops[0].memory.timestamp < "2023-03-16T07:05:00"
    assert asked.reference.answer == "23"


def test_no_write_when_the_question_is_asked_right_after_the_last_memory(tmp_path):
    for op, target in ((Update(), "value=23"), (UnrelatedEdit(), "add")):
        with pytest.raises(Rejected, match="before the question is asked"):
            _mutate(tmp_path / op.name, _case("2023-03-15T12:10:01"), op, target)


def test_every_state_operator_keeps_the_question_time_on_its_mutant(tmp_path):
    case = _case("2023-03-16T07:05:00")
    m = _mutate(tmp_path, case, UnrelatedEdit(), "add")
    assert m.query.asked_at == "2023-03-16T07:05:00" and m.ops[0].memory.timestamp < "2023-03-16T07:05:00"
    assert replace(case.query, text="Tell me how many dozen eggs I have.").asked_at == case.query.asked_at


def test_no_time_left_is_a_final_rejection_although_the_add_is_drawn(tmp_path):
    """The unrelated edit draws its text, so its rejections are retried; this one depends on the state alone,
    so the scheduler must not spend tries on it again (LongMemEval: 12 retried adds on three seeds)."""
    from ufuzz.engine.executor import Executor
    from ufuzz.engine.proposal import propose

    backend = embedded(tmp_path)
    try:
        executor = Executor(backend, {"c1": _CHECKPOINT})
        late = _case("2023-03-15T12:10:01")
        assert UnrelatedEdit().varies(late, "add")
        got = propose(UnrelatedEdit(), late, None, "add", None, 1, 0, executor=executor, fork=True)
        assert not got.valid and got.final and "before the question is asked" in got.reason
        ok = propose(UnrelatedEdit(), _case("2023-03-16T07:05:00"), None, "add", None, 2, 0, executor=executor,
                     fork=True)
        assert ok.valid and not ok.final
    finally:
        backend.close()
