"""Batched corpus writes: a campaign's records go to the database one window at a time.

Committing every record on its own cost a campaign most of its time (a transaction, an ORM flush and a
SQLite commit per record, four per execution). A :class:`WriteWindow` keeps the records of the steps since
the last commit in memory and writes them in **one transaction** once the window holds ``max_records``
records or is ``max_seconds`` old, with bulk Core inserts (one ``executemany`` per table).

What a kill can cost: the records of the open window (at most ``max_records`` records or ``max_seconds`` of
work). Everything committed is a prefix of the campaign's steps, because a window is only cut between steps:
:meth:`mark` records the end of each complete step, and :meth:`flush` writes up to the last mark. The
campaign writes its resume snapshot in the same transaction as a window (:mod:`ufuzz.engine.snapshot`), so
the committed prefix and the state to resume from always agree.

The window knows no table: each store hands it ``(writer, payload)`` pairs, and at a flush every writer gets
the payloads it was given, in order, together with the open connection. So the corpus side and the oracle side
(:mod:`ufuzz.corpus.failures`) share one transaction while neither can reach the other's tables.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Engine

#: a writer of buffered payloads: gets the open connection and its payloads (in the order they were added)
Writer = Callable[[Connection, list[Any]], None]

MAX_RECORDS = 256
MAX_SECONDS = 1.0

__all__ = ["WriteWindow", "Writer", "MAX_RECORDS", "MAX_SECONDS"]


class WriteWindow:
    """Records of complete steps, written in one transaction per ``max_records`` records or ``max_seconds``."""

    def __init__(self, engine: Engine, *, max_records: int = MAX_RECORDS, max_seconds: float = MAX_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_records < 1 or max_seconds < 0:
            raise ValueError("a write window holds at least one record and lasts >= 0 seconds")
        self._engine = engine
        self.max_records = max_records
        self.max_seconds = max_seconds
        self._clock = clock
        self._ops: list[tuple[Writer, Any]] = []
        self._mark = 0  # ops before this index belong to complete steps
        self._opened: float | None = None
        self.commits = 0
        self.records = 0  # records committed so far

    def add(self, writer: Writer, payload: Any) -> None:
        """Buffer one record for ``writer``; it is written at a flush after the step that added it ends."""
        if self._opened is None:
            self._opened = self._clock()
        self._ops.append((writer, payload))

    def mark(self) -> None:
        """A step ended: everything added so far may be committed."""
        self._mark = len(self._ops)

    @property
    def pending(self) -> int:
        """Records of complete steps not yet committed."""
        return self._mark

    @property
    def open_records(self) -> int:
        """Every buffered record, including those of a step in progress."""
        return len(self._ops)

    def due(self) -> bool:
        """The window is full or old enough to be committed."""
        if not self._mark:
            return False
        return self._mark >= self.max_records or self._clock() - (self._opened or 0.0) >= self.max_seconds

    def flush(self, extra: list[tuple[Writer, Any]] | None = None) -> int:
        """Commit the records of complete steps (and ``extra`` writes, e.g. a snapshot) in one transaction.

        Returns how many records were committed. On an exception nothing of the window is committed and the
        records stay buffered (the caller decides whether to retry or to end the campaign).
        """
        ops = self._ops[:self._mark]
        if not ops and not extra:
            return 0
        groups: dict[Writer, list[Any]] = {}
        for writer, payload in ops:
            groups.setdefault(writer, []).append(payload)
        with self._engine.begin() as conn:
            for writer, payloads in groups.items():
                writer(conn, payloads)
            for writer, payload in extra or ():
                writer(conn, [payload])
        del self._ops[:self._mark]
        self._mark = 0
        self._opened = self._clock() if self._ops else None
        self.commits += 1
        self.records += len(ops)
        return len(ops)

    def rewind(self) -> int:
        """Drop the records of the step in progress (added after the last :meth:`mark`); returns how many."""
        n = len(self._ops) - self._mark
        del self._ops[self._mark:]
        if not self._ops:
            self._opened = None
        return n

    def discard(self) -> int:
        """Forget every buffered record (a step that failed half-way); returns how many were dropped."""
        n = len(self._ops)
        self._ops.clear()
        self._mark = 0
        self._opened = None
        return n
