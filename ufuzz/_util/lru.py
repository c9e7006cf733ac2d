"""A bounded least-recently-used mapping, for the engine's caches that would otherwise grow with the campaign.

Picklable with its order, so that a resumed campaign evicts exactly what the uninterrupted one would have
(an evicted parent execution is re-run and counted, so eviction order is part of a campaign's behaviour).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

__all__ = ["LRU"]


class LRU(Generic[K, V]):
    """At most ``maxsize`` entries; reading or writing an entry makes it the most recent one."""

    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError(f"an LRU cache holds at least one entry, not {maxsize}")
        self.maxsize = int(maxsize)
        self._data: OrderedDict[K, V] = OrderedDict()
        self.evictions = 0

    def get(self, key: K, default: V | None = None) -> V | None:
        try:
            value = self._data[key]
        except KeyError:
            return default
        self._data.move_to_end(key)
        return value

    def __getitem__(self, key: K) -> V:
        value = self._data[key]
        self._data.move_to_end(key)
        return value

    def __setitem__(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)
            self.evictions += 1

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def pop(self, key: K, default: V | None = None) -> V | None:
        return self._data.pop(key, default)

    def clear(self) -> None:
        self._data.clear()

    def items(self):
        return self._data.items()
