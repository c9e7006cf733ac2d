"""The write window: records of complete steps only, one transaction per window, nothing half-committed."""

from __future__ import annotations

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, insert, select

from ufuzz.corpus.window import WriteWindow

meta = MetaData()
rows_t = Table("rows", meta, Column("id", Integer, primary_key=True), Column("what", String))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def engine(tmp_path):
    e = create_engine(f"sqlite:///{tmp_path / 'w.sqlite'}")
    meta.create_all(e)
    yield e
    e.dispose()


def write(conn, payloads):
    conn.execute(insert(rows_t), payloads)


def committed(engine) -> list[str]:
    with engine.connect() as c:
        return [r.what for r in c.execute(select(rows_t).order_by(rows_t.c.id))]


def test_only_marked_steps_are_committed_and_a_window_is_due_by_size_or_age(engine):
    clock = Clock()
    w = WriteWindow(engine, max_records=3, max_seconds=1.0, clock=clock)
    w.add(write, {"what": "a1"})
    w.add(write, {"what": "a2"})
    assert not w.due()  # no step has ended
    w.mark()
    assert w.pending == 2 and not w.due()
    w.add(write, {"what": "b1"})  # a step in progress
    clock.now = 1.5
    assert w.due()  # old enough
    assert w.flush() == 2
    assert committed(engine) == ["a1", "a2"] and w.open_records == 1
    w.add(write, {"what": "b2"})
    w.add(write, {"what": "b3"})
    w.mark()
    assert w.due()  # full
    w.flush()
    assert committed(engine) == ["a1", "a2", "b1", "b2", "b3"] and w.commits == 2 and w.records == 5


def test_a_failing_commit_commits_nothing_and_keeps_the_records(engine):
    w = WriteWindow(engine)
    w.add(write, {"what": "ok"})
    w.mark()

    def broken(conn, payloads):
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        w.flush(extra=[(broken, None)])
    assert committed(engine) == [] and w.pending == 1
    assert w.flush() == 1 and committed(engine) == ["ok"]


def test_rewind_drops_the_step_in_progress_only(engine):
    w = WriteWindow(engine)
    w.add(write, {"what": "done"})
    w.mark()
    w.add(write, {"what": "half"})
    assert w.rewind() == 1
    w.flush()
    assert committed(engine) == ["done"]
