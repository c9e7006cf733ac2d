"""Embedded backends with injected faults: process-level ones for the backend-worker tests, a BackendError in any
chosen operation (FaultyBackend) and a SIGKILL at a chosen call (KillingBackend) for the campaign runtime tests.

They are the real embedded backend (SQLite + BM25 here, no torch) plus one fault each, triggered by a marker
in the query so a test decides where it strikes: a native crash (SIGSEGV through ctypes), a hang, or a memory
leak that grows with every retrieval. The system under test is the worker that must survive them.
"""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

from ufuzz.backends.adapters.embedded import EmbeddedBackend
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


# -- faults in every backend operation, and a process that dies where a test says ----------------------------
#: every operation of the backend protocol a campaign calls
OPERATIONS = ("build", "add", "update", "delete", "fork", "get", "list", "retrieve", "release")


class FaultyBackend(EmbeddedBackend):
    """The embedded backend whose operation ``fail_op`` raises :class:`BackendError` — on every
    ``fail_every``-th call of it (1 = every call), counting only calls after the first ``fail_after`` ones (so
    that a preflight round trip can pass). ``fail_op=none`` injects nothing (the same backend, fault-free)."""

    options_spec = (*EmbeddedBackend.options_spec,
                    Option("fail_op", str, default="none", choices=(*OPERATIONS, "none"), help="operation that fails"),
                    Option("fail_every", int, default=1, min=1, help="fail every n-th call of it"),
                    Option("fail_after", int, default=0, min=0, help="calls of it that pass first"))

    def __init__(self, workdir, options=None):
        super().__init__(workdir, options)
        self.fail_op = self.settings["fail_op"]
        self.fail_every = self.settings["fail_every"]
        self.fail_after = self.settings["fail_after"]
        self.calls = dict.fromkeys(OPERATIONS, 0)
        self.injected = 0

    def _maybe_fail(self, op: str) -> None:
        self.calls[op] += 1
        n = self.calls[op] - self.fail_after
        if op == self.fail_op and n > 0 and n % self.fail_every == 0:
            self.injected += 1
            from ufuzz.backends.protocol import BackendError

            raise BackendError(f"injected fault in {op} (call {self.calls[op]})")

    def build(self, checkpoint):
        self._maybe_fail("build")
        return super().build(checkpoint)

    def add(self, state, memory):
        self._maybe_fail("add")
        return super().add(state, memory)

    def update(self, state, memory_id, new):
        self._maybe_fail("update")
        return super().update(state, memory_id, new)

    def delete(self, state, memory_id):
        self._maybe_fail("delete")
        return super().delete(state, memory_id)

    def fork(self, state):
        self._maybe_fail("fork")
        return super().fork(state)

    def get(self, state, memory_id):
        self._maybe_fail("get")
        return super().get(state, memory_id)

    def list(self, state):
        self._maybe_fail("list")
        return super().list(state)

    def retrieve(self, state, query, k):
        self._maybe_fail("retrieve")
        return super().retrieve(state, query, k)

    def release(self, state):
        self._maybe_fail("release")
        return super().release(state)


class KillingBackend(EmbeddedBackend):
    """The embedded backend that SIGKILLs its own process at its ``kill_at``-th protocol call (0: never), in
    the middle of a campaign step — what a crash, the OOM killer or ``kill -9`` does to a campaign."""

    options_spec = (*EmbeddedBackend.options_spec,
                    Option("kill_at", int, default=0, min=0, help="SIGKILL at this protocol call (0: never)"))

    def __init__(self, workdir, options=None):
        super().__init__(workdir, options)
        self.kill_at = self.settings["kill_at"]
        self._calls = 0

    def _tick(self) -> None:
        self._calls += 1
        if self.kill_at and self._calls >= self.kill_at:
            import os
            import signal

            os.kill(os.getpid(), signal.SIGKILL)

    def build(self, checkpoint):
        self._tick()
        return super().build(checkpoint)

    def fork(self, state):
        self._tick()
        return super().fork(state)

    def retrieve(self, state, query, k):
        self._tick()
        return super().retrieve(state, query, k)

    def add(self, state, memory):
        self._tick()
        return super().add(state, memory)

    def update(self, state, memory_id, new):
        self._tick()
        return super().update(state, memory_id, new)

    def delete(self, state, memory_id):
        self._tick()
        return super().delete(state, memory_id)

    def get(self, state, memory_id):
        self._tick()
        return super().get(state, memory_id)

    def list(self, state):
        self._tick()
        return super().list(state)

    def release(self, state):
        self._tick()
        return super().release(state)


def preflight_calls(tmp: Path) -> dict[str, int]:
    """How often the campaign's preflight round trip calls each operation (a fault meant for the campaign itself
    is injected after that many calls)."""
    from ufuzz.engine.preflight import preflight

    backend = FaultyBackend(tmp / "preflight-count", {"retrieval": "bm25"})
    try:
        preflight(backend)
        return dict(backend.calls)
    finally:
        backend.close()
