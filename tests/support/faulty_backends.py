"""Embedded backends with injected process-level faults, for the backend-worker tests.

They are the real embedded backend (SQLite + BM25 here, no torch) plus one fault each, triggered by a marker
in the query so a test decides where it strikes: a native crash (SIGSEGV through ctypes), a hang, or a memory
leak that grows with every retrieval. The system under test is the worker that must survive them.
"""

from __future__ import annotations

import ctypes
import time

from ufuzz.backends.embedded import EmbeddedBackend
from ufuzz.backends.protocol import StateHandle

CRASH = "zzcrash"
HANG = "zzhang"


class SegfaultingBackend(EmbeddedBackend):
    """Dereferences NULL (a real SIGSEGV in native code) when the query contains ``CRASH``, and on every
    ``crash_every``-th retrieval of the process when that option is set."""

    isolate = True

    def __init__(self, workdir, options=None):
        opts = dict(options or {})
        self.crash_every = int(opts.pop("crash_every", 0))
        super().__init__(workdir, opts)
        self._retrievals = 0

    def retrieve(self, state: StateHandle, query: str, k: int):
        self._retrievals += 1
        if CRASH in query or (self.crash_every and self._retrievals % self.crash_every == 0):
            ctypes.string_at(0)
        return super().retrieve(state, query, k)


class HangingBackend(EmbeddedBackend):
    """Never returns from retrieve when the query contains ``HANG``."""

    def retrieve(self, state: StateHandle, query: str, k: int):
        if HANG in query:
            while True:
                time.sleep(1)
        return super().retrieve(state, query, k)


class LeakingBackend(EmbeddedBackend):
    """Keeps ``leak_mb`` (option) of touched memory per retrieval, like a library that never frees a state."""

    def __init__(self, workdir, options=None):
        opts = dict(options or {})
        self.leak_mb = int(opts.pop("leak_mb", 8))
        super().__init__(workdir, opts)
        self._hoard: list[bytearray] = []

    def retrieve(self, state: StateHandle, query: str, k: int):
        self._hoard.append(bytearray(b"x" * (self.leak_mb << 20)))
        return super().retrieve(state, query, k)
