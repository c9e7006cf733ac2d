"""Lanes as threads of the campaign's own process: many calls in flight without a process each
(``--max-concurrency N``).

Real campaigns wait — on a remote LLM answering and judging, on a memory product over HTTP — far more than they
compute. A :class:`ThreadLane` runs a :class:`ufuzz.engine.lanes.LaneCore` in a thread: its own executor and
states, over the *one* backend and the *one* LLM client of the campaign, so N lanes cost N threads, not N
interpreters each loading a backend (and torch). The :class:`~ufuzz.engine.lanes.LanePool` drives them exactly
as it drives process lanes — the same batches, the same queue, results applied in task order — so the same seed
and the same number of lanes (``--workers`` × ``--max-concurrency``) give the same campaign whatever the timing.

A backend that may be called from several threads at once and gains from it (its calls wait on the network:
``MemoryBackend.concurrent_calls``, the HTTP adapter) is shared as it is. Any other backend is shared through
:class:`SerialBackend`, one call at a time: a CPU-bound library gains nothing from threads, but what waits
outside the backend — the LLM answerer's and judge's requests — still overlaps.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ufuzz.engine.lanes import LaneDied

__all__ = ["SerialBackend", "ThreadLane", "shareable"]


class SerialBackend:
    """A backend shared by threads one call at a time (a lock around every method call); attributes and
    properties (``capabilities``, ``name``) pass through."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._lock = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._backend, name)
        if not callable(value) or name.startswith("__"):
            return value
        lock = self._lock

        def call(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return value(*args, **kwargs)

        return call


def shareable(backend: Any) -> Any:
    """``backend`` as thread lanes may share it: itself when its calls may overlap, else serialised."""
    return backend if getattr(backend, "concurrent_calls", False) else SerialBackend(backend)


class ThreadLane:
    """A LaneCore in a thread of this process, with the interface of :class:`ufuzz.engine.lanes.ProcessLane`
    (``start``/``ready``/``submit``/``result``/``wait``/``close``). ``make_core`` builds its core (over the
    shared backend); ``signal`` is the condition every lane of a pool notifies when an answer is in."""

    def __init__(self, index: int, make_core: Callable[[], Any], signal: threading.Condition) -> None:
        self.index = index
        self.starts = 0
        self._make_core = make_core
        self._signal = signal
        self._inbox: queue.SimpleQueue[tuple[str, tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._reply: tuple[str, Any] | None = None
        self._thread: threading.Thread | None = None
        self._core: Any = None
        self._failed: str | None = None
        self.after_close: Callable[[], None] | None = None  # run once this lane is closed (shared states)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self.alive:
            return
        self.starts += 1
        self._failed = None
        try:
            self._core = self._make_core()
        except Exception as exc:  # noqa: BLE001 - reported by ready(), as a process lane's start is
            self._failed = f"lane {self.index} could not start: {type(exc).__name__}: {exc}"
            return
        self._thread = threading.Thread(target=self._serve, name=f"ufuzz-lane-{self.index}", daemon=True)
        self._thread.start()

    def ready(self) -> None:
        if self._failed is not None:
            raise LaneDied(self._failed)

    def _serve(self) -> None:
        while True:
            request = self._inbox.get()
            if request is None:
                return
            method, args = request
            try:
                reply: tuple[str, Any] = ("ok", getattr(self._core, method)(*args))
            except Exception as exc:  # noqa: BLE001 - the campaign records the lost job; the lane goes on
                reply = ("err", f"{type(exc).__name__}: {exc}")
            with self._signal:
                self._reply = reply
                self._signal.notify_all()

    def submit(self, method: str, *args: Any) -> None:
        if not self.alive:
            self.start()
        with self._signal:
            self._reply = None
        if self._failed is None:
            self._inbox.put((method, args))

    def result(self) -> Any:
        if self._failed is not None:
            raise LaneDied(self._failed)
        with self._signal:
            self._signal.wait_for(lambda: self._reply is not None)
            reply, self._reply = self._reply, None
        if reply[0] != "ok":
            raise LaneDied(f"lane {self.index}: {reply[1]}")
        return reply[1]

    def call(self, method: str, *args: Any) -> Any:
        self.submit(method, *args)
        return self.result()

    @staticmethod
    def wait(lanes: Sequence[ThreadLane], timeout: float) -> list[ThreadLane]:
        """The lanes of ``lanes`` whose answer is in, waiting up to ``timeout`` seconds for one."""
        if not lanes:
            return []
        failed = [lane for lane in lanes if lane._failed is not None]
        if failed:
            return failed
        signal = lanes[0]._signal
        with signal:
            signal.wait_for(lambda: any(lane._reply is not None for lane in lanes), timeout)
            return [lane for lane in lanes if lane._reply is not None]

    def kill(self) -> None:
        self.close()

    def close(self) -> None:
        """Release the lane's states (never the shared backend) and end its thread."""
        if self._thread is not None:
            self._inbox.put(None)
            self._thread.join(timeout=120)
            self._thread = None
            core, self._core = self._core, None
            if core is not None:
                core.close()
        after, self.after_close = self.after_close, None
        if after is not None:
            after()
