"""Lanes as threads of the campaign's own process: many calls in flight without a process each
(``--max-concurrency N``).

Real campaigns wait — on a remote LLM answering and judging, on a memory product over HTTP — far more than they
compute. A :class:`ThreadLane` runs a :class:`ufuzz.engine.parallel.core.LaneCore` in a thread: its own executor and
states, over the *one* backend and the *one* LLM client of the campaign, so N lanes cost N threads, not N
interpreters each loading a backend (and torch). The :class:`~ufuzz.engine.parallel.pool.LanePool` drives them exactly
as it drives process lanes — the same batches, the same queue, results applied in task order — so the same seed
and ``--batch`` give the same campaign whatever the lanes and the timing.

A backend that may be called from several threads at once and gains from it (its calls wait on the network:
``MemoryBackend.concurrent_calls``, the HTTP adapter) is shared as it is. Any other backend is shared through
:class:`SerialBackend`, one call at a time: a CPU-bound library gains nothing from threads, but what waits
outside the backend — the LLM answerer's and judge's requests — still overlaps.

With ``--workers N --max-concurrency M`` each of the N process lanes runs M such thread lanes over its own
backend (:func:`serve_slots`, :class:`SlotProcess`): the pool drives N × M lanes, and the campaign is the one
any lanes give with the same seed and ``--batch``.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable, Sequence
from multiprocessing import connection as mp_connection
from pathlib import Path
from typing import Any

from ufuzz.engine.parallel.lane import LaneBase, LaneDied, answer
from ufuzz.engine.parallel.process import ProcessLane

__all__ = ["ProcessSlot", "SerialBackend", "SlotProcess", "ThreadLane", "serve_slots", "shareable", "slot_lanes"]


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


#: the interpreter's switch interval while thread lanes run (Python's default is 5 ms)
LANE_SWITCH_INTERVAL = 0.0005


class _QuickSwitch:
    """A shorter switch interval while any thread lane runs. A lane whose answer came in must take the GIL
    to read it, and a thread running Python (the campaign applying a batch, another lane parsing its answer)
    lets go of it only every switch interval: at the default 5 ms, each of a lane's several takes per request
    could wait that long, and 16 lanes behind a busy campaign spent it waiting for the interpreter, not the
    product. The interval is set back when the last lane closes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._saved = 0.0

    def enter(self) -> None:
        with self._lock:
            if self._running == 0:
                self._saved = sys.getswitchinterval()
                sys.setswitchinterval(min(self._saved, LANE_SWITCH_INTERVAL))
            self._running += 1

    def leave(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                sys.setswitchinterval(self._saved)


_QUICK = _QuickSwitch()


class ThreadLane(LaneBase):
    """A LaneCore in a thread of this process (a :class:`ufuzz.engine.parallel.lane.Lane`). ``make_core`` builds its core
    (over the shared backend); ``signal`` is the condition every lane of a pool notifies when an answer is in."""

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
        self._quick = False  # whether this lane holds the short switch interval (_QuickSwitch)
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
        if not self._quick:  # only once the thread runs: a start that raised holds nothing
            _QUICK.enter()
            self._quick = True

    def ready(self) -> None:
        if self._failed is not None:
            raise LaneDied(self._failed)

    def _serve(self) -> None:
        while True:
            request = self._inbox.get()
            if request is None:
                return
            reply = answer(self._core, *request)
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
        return self.unwrap(reply)

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
        try:
            if self._thread is not None:
                self._inbox.put(None)
                self._thread.join(timeout=120)
                self._thread = None
                core, self._core = self._core, None
                if core is not None:
                    core.close()
        finally:
            if self._quick:  # set back even when the core's close raised
                _QUICK.leave()
                self._quick = False
        after, self.after_close = self.after_close, None
        if after is not None:
            after()


# -- thread lanes inside process lanes (--workers N --max-concurrency M) ----------------------------------------
def serve_slots(conn: Any, spec: Any, workdir: Path) -> None:
    """A process lane's child with ``M = --max-concurrency`` slots: M lane cores over the process's one backend,
    LLM client and checkpoint states, each in a thread of its own. Requests are (slot, method, args), answers
    (slot, "ok" | "err", value); None closes them all (answered ("ok", None), as a lane's close is)."""
    from ufuzz.backends import registry
    from ufuzz.engine.executor import SharedStates
    from ufuzz.engine.parallel.core import LaneCore, LLMMeter, _import, llm_share
    from ufuzz.llm.client import client_for
    from ufuzz.oracles.judging import Judging

    cfg = spec.config
    send_lock = threading.Lock()

    def send(msg: Any) -> None:
        with send_lock:
            conn.send(msg)

    cores: list[Any] = []
    try:
        own = registry.instantiate(cfg.backend, _import(spec.backend_class), workdir / "backend", cfg.backend_options,
                                   isolation=cfg.isolation, worker={"recycle_every": cfg.worker_recycle,
                                                                    "max_rss_mb": cfg.worker_max_rss_mb,
                                                                    "call_timeout": cfg.worker_timeout})
        judging = Judging.of(cfg)
        llm = client_for(cfg, share=llm_share(cfg)) if (judging.answer or judging.judge) else None
        meter = LLMMeter(llm) if llm is not None else None
        backend = shareable(own)
        states = SharedStates(backend)
        cores = [LaneCore(spec, workdir, backend=backend, llm=llm, shared=states, meter=meter)
                 for _ in range(cfg.max_concurrency)]
        send(("ok", None))
    except BaseException as exc:  # noqa: BLE001 - reported to the campaign, which says so
        send(("err", f"{type(exc).__name__}: {exc}"))
        return
    inboxes: list[queue.SimpleQueue[Any]] = [queue.SimpleQueue() for _ in cores]

    def work(slot: int) -> None:
        while (request := inboxes[slot].get()) is not None:
            try:
                send((slot, *answer(cores[slot], *request)))
            except (OSError, ValueError):
                return

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(cores))]
    _QUICK.enter()  # this process is its slots' (see _QuickSwitch)
    for t in threads:
        t.start()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if msg is None:
            break
        slot, method, args = msg
        inboxes[slot].put((method, args))
    for box in inboxes:
        box.put(None)
    for t in threads:
        t.join(timeout=120)
    for core in cores:
        try:
            core.close()
        except BaseException:  # noqa: BLE001
            pass
    try:
        states.close()
        own.close()
    except BaseException:  # noqa: BLE001
        pass
    try:
        send(("ok", None))
    except (OSError, ConnectionError):
        pass


def main(argv: list[str] | None = None) -> None:
    """Child main of a :class:`SlotProcess` (``python -m ufuzz.engine.parallel.threadlanes FD``)."""
    from ufuzz.engine.parallel.process import child_setup

    conn, spec, workdir = child_setup(argv)
    serve_slots(conn, spec, workdir)


class SlotProcess(ProcessLane):
    """A process lane whose child serves ``slots`` thread lanes (:func:`serve_slots`): the campaign's pool sees
    each slot as a lane (:class:`ProcessSlot`); their answers share the pipe and are sorted out here."""

    child_module = "ufuzz.engine.parallel.threadlanes"

    def __init__(self, index: int, spec: Any, workdir: Path, slots: int) -> None:
        super().__init__(index, spec, workdir)
        self.slots = slots
        self._replies: dict[int, tuple[str, Any]] = {}
        self._outstanding: set[int] = set()
        self._ready_done = False

    def ensure(self) -> None:
        """Start the child (once) and wait until its slots are ready."""
        if self._proc is None:
            self._ready_done = False
            self.start()
        if not self._ready_done:
            self._ready_done = True
            self.ready()

    def send_slot(self, slot: int, method: str, args: tuple[Any, ...]) -> None:
        self._replies.pop(slot, None)
        try:
            self.ensure()
            self._conn.send((slot, method, args))
            self._outstanding.add(slot)
        except LaneDied as exc:
            self._replies[slot] = ("err", str(exc))
        except (OSError, ConnectionError):
            message = f"lane {self.index} died before {method} ({self._exit()})"
            self.kill()
            self._replies[slot] = ("err", message)

    def drain(self, timeout: float) -> None:
        """Take in every answer there is (waiting up to ``timeout`` for one); a child that died answers each
        outstanding slot with its death."""
        if self._conn is None or not self._outstanding:
            return
        try:
            if not self._conn.poll(timeout):
                if self._proc is not None and self._proc.poll() is not None and not self._conn.poll(0):
                    raise EOFError
                return
            while self._conn.poll(0):
                slot, status, value = self._conn.recv()
                self._outstanding.discard(slot)
                self._replies[slot] = (status, value)
        except (EOFError, OSError, ConnectionError):
            message = f"lane {self.index} died ({self._exit()}; see {self.log_path})"
            self.kill()
            for slot in self._outstanding:
                self._replies[slot] = ("err", message)
            self._outstanding.clear()

    def result_of(self, slot: int) -> Any:
        while slot not in self._replies:
            self.drain(1.0)
        return self.unwrap(self._replies.pop(slot))

    def kill(self) -> None:
        self._ready_done = False
        for slot in self._outstanding:  # every slot waiting on the child learns that it died
            self._replies[slot] = ("err", f"lane {self.index} died (killed; see {self.log_path})")
        self._outstanding.clear()
        super().kill()

    def close(self) -> None:
        self._outstanding.clear()
        super().close()


class ProcessSlot(LaneBase):
    """One thread lane of a :class:`SlotProcess` (a :class:`ufuzz.engine.parallel.lane.Lane`)."""

    def __init__(self, proc: SlotProcess, slot: int, index: int) -> None:
        self.proc, self.slot, self.index = proc, slot, index

    def start(self) -> None:
        if self.slot == 0:
            self.proc.start()

    def ready(self) -> None:
        if self.slot == 0:
            self.proc._ready_done = True
            self.proc.ready()

    def submit(self, method: str, *args: Any) -> None:
        self.proc.send_slot(self.slot, method, args)

    def result(self) -> Any:
        return self.proc.result_of(self.slot)

    @staticmethod
    def wait(lanes: Sequence[ProcessSlot], timeout: float) -> list[ProcessSlot]:
        procs = list({id(lane.proc): lane.proc for lane in lanes}.values())
        ready = [lane for lane in lanes if lane.slot in lane.proc._replies]
        if ready:
            return ready
        busy = [p for p in procs if p._conn is not None and p._outstanding]
        if busy:
            mp_connection.wait([p._conn for p in busy], timeout)
            for p in busy:
                p.drain(0)
        return [lane for lane in lanes if lane.slot in lane.proc._replies]

    def kill(self) -> None:
        self.proc.kill()

    def close(self) -> None:
        if self.slot == 0:
            self.proc.close()


def slot_lanes(spec: Any, workdir: Path, workers: int, slots: int) -> list[ProcessSlot]:
    """``workers`` process lanes of ``slots`` thread lanes each, as the pool's ``workers × slots`` lanes."""
    procs = [SlotProcess(i, spec, workdir / f"lane{i}", slots) for i in range(workers)]
    return [ProcessSlot(p, j, i * slots + j) for i, p in enumerate(procs) for j in range(slots)]


if __name__ == "__main__":  # run as the package's module, so that what it sends pickles as ufuzz.engine classes
    from ufuzz.engine.parallel import threadlanes as _threadlanes

    _threadlanes.main()
