"""Per-state bookkeeping shared by the adapters: handles minted in order, each naming the adapter's record.

Every adapter keeps, per state handle, something of its own (a database file and its driver, a namespace
and an id map, a copy-on-write node). :class:`StateTable` is that map with the protocol's rules in one
place: handles are minted deterministically (``prefix`` + a counter, so a rebuilt campaign names its states
the same), using a handle that was never built or is already released is a :class:`BackendError` naming the
backend and the operation, and releasing an unknown handle is not an error (release is idempotent).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from ufuzz.backends.protocol import BackendError, StateHandle

R = TypeVar("R")


class StateTable(Generic[R]):
    """``handle -> record`` for one backend instance (not thread-safe: adapters hold their own lock)."""

    def __init__(self, owner: str, prefix: str = "s", width: int = 0) -> None:
        self.owner = owner  # names the backend in messages ("mem0", "http backend")
        self.prefix = prefix
        self.width = width
        self._records: dict[StateHandle, R] = {}
        self._minted = 0

    def mint(self) -> StateHandle:
        """A fresh handle: ``prefix`` + the next number (zero-padded to ``width``)."""
        self._minted += 1
        return f"{self.prefix}{self._minted:0{self.width}d}"

    @property
    def minted(self) -> int:
        """How many handles were minted (the number in the last one)."""
        return self._minted

    def put(self, handle: StateHandle, record: R) -> R:
        """Record (or re-point) ``handle``."""
        self._records[handle] = record
        return record

    def get(self, handle: StateHandle, op: str = "") -> R:
        """The record of a live handle; BackendError naming the operation for any other."""
        record = self._records.get(handle)
        if record is None:
            where = f"{self.owner} {op}".rstrip()
            raise BackendError(f"{where}: unknown state {handle!r} (never built, or already released)")
        return record

    def __getitem__(self, handle: StateHandle) -> R:
        return self.get(handle)

    def touch(self, handle: StateHandle) -> None:
        """Mark ``handle`` most recently used: iteration goes from the least to the most recently touched
        (adapters that close idle states under a memory budget close the oldest first)."""
        if handle in self._records:
            self._records[handle] = self._records.pop(handle)

    def find(self, handle: StateHandle) -> R | None:
        return self._records.get(handle)

    def pop(self, handle: StateHandle) -> R | None:
        """Forget ``handle`` and give its record back (None when it was not live)."""
        return self._records.pop(handle, None)

    def handles(self) -> list[StateHandle]:
        """Live handles, oldest (least recently put or touched) first."""
        return list(self._records)

    def records(self) -> list[R]:
        return list(self._records.values())

    def clear(self) -> None:
        self._records.clear()

    def __contains__(self, handle: object) -> bool:
        return handle in self._records

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[StateHandle]:
        return iter(list(self._records))
