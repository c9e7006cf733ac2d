"""Embedded backends with injected process-level faults, for the backend-worker tests.

They are the real embedded backend (SQLite + BM25 here, no torch) plus one fault each, triggered by a marker
in the query so a test decides where it strikes: a native crash (SIGSEGV through ctypes), a hang, or a memory
leak that grows with every retrieval. The system under test is the worker that must survive them.
"""

from __future__ import annotations

import ctypes
import time

from ufuzz.backends.embedded import EmbeddedBackend
from ufuzz.backends.options import Option
from ufuzz.backends.protocol import StateHandle

CRASH = "zzcrash"
HANG = "zzhang"


class SegfaultingBackend(EmbeddedBackend):
    """Dereferences NULL (a real SIGSEGV in native code) when the query contains ``CRASH``, and on every
    ``crash_every``-th retrieval of the process when that option is set."""

    isolate = True
    options_spec = (*EmbeddedBackend.options_spec,
                    Option("crash_every", int, default=0, min=0, help="crash on every n-th retrieval (0: never)"))

    def __init__(self, workdir, options=None):
        super().__init__(workdir, options)
        self.crash_every = self.settings["crash_every"]
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

    options_spec = (*EmbeddedBackend.options_spec,
                    Option("leak_mb", int, default=8, min=0, help="memory kept per retrieval"))

    def __init__(self, workdir, options=None):
        super().__init__(workdir, options)
        self.leak_mb = self.settings["leak_mb"]
        self._hoard: list[bytearray] = []

    def retrieve(self, state: StateHandle, query: str, k: int):
        self._hoard.append(bytearray(b"x" * (self.leak_mb << 20)))
        return super().retrieve(state, query, k)
