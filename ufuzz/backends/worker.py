"""A backend worker process: runs an adapter in a child process that can die or be recycled without the fuzzer.

Native memory systems (Kuzu under Graphiti, qdrant + torch under mem0, chromadb under A-Mem) hold memory that
closing a state does not give back, and a fault in their C/C++ code kills the whole process. A campaign
therefore runs such adapters (``MemoryBackend.isolate``) through :class:`WorkerBackend`, which implements the
same protocol by forwarding every call over a pipe to a child process that owns the real adapter:

* **States survive the worker.** Every state the campaign holds is a *recipe* here: the checkpoint it was
  built from and the native operations applied since (fork copies the recipe). The worker holds the real
  states of its generation; after a restart a state is rebuilt from its recipe the first time it is used
  again, so handles stay valid and the campaign never notices, except in time.
* **Recycling.** The worker is replaced (between calls, never during one) after ``recycle_every`` calls or
  when its resident memory passes ``max_rss_mb`` — the remedy for libraries that leak per opened state.
* **Crashes and hangs are backend errors.** If the worker dies during a call (a segfault, an abort, the OOM
  killer) or a call takes longer than ``call_timeout`` seconds, that call raises :class:`BackendError`
  naming the signal or the timeout; the campaign records it as an error and goes on, and the next call
  starts a fresh worker. A worker that cannot even start raises :class:`BackendUnavailable` at once.

Deterministic adapters rebuild to the same rankings as their forks, so recycling does not change a campaign's
results (tests/backends/test_backend_worker.py checks that on the embedded backend). The worker's own stdout/stderr
(library chatter, a native crash's last words) go to ``worker.log`` in the backend's working directory.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ufuzz._util.where import child_env
from ufuzz.backends.files import remove_linked_dirs, trim_heap
from ufuzz.backends.protocol import (
    BackendError,
    BackendMismatch,
    BackendUnavailable,
    BackendUnreachable,
    Capabilities,
    MemoryBackend,
    OpResult,
    Retrieved,
    StateHandle,
    StoredMemory,
)
from ufuzz.backends.states import StateTable
from ufuzz.model import Checkpoint, Memory

_START_TIMEOUT = 600.0  # importing torch and a model on a loaded 2-core machine can take a while
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


# -- the child -----------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    """Child main (``python -m ufuzz.backends.worker FD``): the first message on the connection on descriptor
    FD says what to serve; then answer ("ok", value) | ("err", kind, message, hint) per request."""
    from multiprocessing.connection import Connection

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops between calls
    try:
        import faulthandler

        faulthandler.enable()  # a native crash leaves its Python stack in worker.log (our stderr)
    except Exception:  # noqa: BLE001
        pass
    conn = Connection(int((argv or sys.argv[1:])[0]))
    spec, workdir, options, path = conn.recv()
    sys.path[:] = [p for p in path if p] + [p for p in sys.path if p not in path]
    try:
        import importlib

        module, _, attr = spec.partition(":")
        cls = getattr(importlib.import_module(module), attr)
        backend = cls(Path(workdir), options)
        conn.send(("ok", (backend.capabilities, backend.describe())))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises it
        conn.send(_err(exc))
        return
    serve(conn, backend, _err, after=lambda method: _trim() if method == "release" else None)
    try:
        backend.close()
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
    conn.send(("ok", None))


def serve(conn: Any, target: Any, error: Callable[[BaseException], Any],
          after: Callable[[str], Any] | None = None) -> None:
    """The request loop of a child process: each (method, args) on ``conn`` is answered ("ok", value) or, when
    the call raises, ``error(exc)`` (called inside the ``except``); ``after(method)`` runs once the answer is
    sent. Ends at None or when the parent's end of the pipe is gone. (Backend workers and engine lanes.)"""
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if msg is None:
            break
        method, args = msg
        try:
            conn.send(("ok", getattr(target, method)(*args)))
        except BaseException as exc:  # noqa: BLE001 - the parent gets it as an answer
            conn.send(error(exc))
        if after is not None:
            after(method)


def end_child(proc: subprocess.Popen | None, conn: Any) -> None:
    """Kill a child process if it still runs, wait for it (up to 30 s) and close its pipe (either may be None)."""
    if proc is not None and proc.poll() is None:
        proc.kill()
    if proc is not None:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    if conn is not None:
        conn.close()


def _trim() -> None:
    """Give freed heap back to the system after a release. Kuzu frees a closed database's ~90 MB into glibc's
    arenas, which keep it: without this the worker's resident size tracks the most states ever open at once,
    not the states open now, and the memory limit would recycle a worker that holds nothing."""
    trim_heap()


def default_max_rss_mb() -> float:
    """The memory limit when none is given: a third of this machine's physical memory, at least 2 GB."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * _PAGE / 2**20
    except (ValueError, OSError, AttributeError):
        return 4096.0
    return float(max(2048, int(total / 3)))


def _err(exc: BaseException) -> tuple[str, str, str, str]:
    if isinstance(exc, BackendUnavailable):
        kind = "unavailable"
    elif isinstance(exc, BackendMismatch):  # the user's configuration to fix (exit 2), not a system that is down
        kind = "mismatch"
    elif isinstance(exc, BackendUnreachable):  # no answer at all (exit 3, said so)
        kind = "unreachable"
    elif isinstance(exc, BackendError):
        kind = "backend"
    elif isinstance(exc, NotImplementedError):
        kind = "notimplemented"
    elif isinstance(exc, (ValueError, KeyError)):
        kind = "value"
    else:
        kind = "other"
    return ("err", kind, f"{type(exc).__name__}: {exc}" if kind == "other" else str(exc),
            getattr(exc, "hint", ""))


def _raise(reply: tuple[str, str, str, str], prefix: str) -> None:
    _, kind, message, hint = reply
    if kind == "unavailable":
        exc = BackendUnavailable(message)
        exc.hint = hint
        raise exc
    if kind == "mismatch":
        raise BackendMismatch(message)
    if kind == "unreachable":
        raise BackendUnreachable(message)
    if kind == "notimplemented":
        raise NotImplementedError(message)
    if kind == "value":
        raise ValueError(message)
    raise BackendError(message if kind == "backend" else f"{prefix}: {message}")


# -- the parent ----------------------------------------------------------------------------------------------
@dataclass
class _Recipe:
    checkpoint: Checkpoint
    ops: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)


@dataclass
class WorkerStats:
    starts: int = 0
    recycles: int = 0  # planned restarts (call count or memory)
    crashes: int = 0  # the worker died or hung during a call
    rebuilds: int = 0  # states rebuilt from their recipe in a newer worker
    calls: int = 0
    peak_rss_mb: float = 0.0
    last_exit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class WorkerBackend(MemoryBackend):
    """The protocol of ``inner`` (a backend class spec ``module:Class``) served from a recyclable child."""

    options_spec = None  # forwarded to the adapter in the child, whose own declaration checks them

    def __init__(self, name: str, spec: str, workdir: Path, options: dict[str, Any] | None = None, *,
                 recycle_every: int = 0, max_rss_mb: float | None = None, call_timeout: float = 600,
                 observer: Callable[..., None] | None = None) -> None:
        super().__init__(workdir, options)
        self.name = name
        self.spec = spec
        self.recycle_every = max(0, int(recycle_every))
        self.max_rss_mb = default_max_rss_mb() if max_rss_mb is None else float(max_rss_mb)
        #: called as observer(event, **facts) on worker_started / worker_recycled / worker_crashed
        self.observer = observer
        self.call_timeout = float(call_timeout)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.workdir / "worker.log"
        self.stats = WorkerStats()
        self._proc: Any = None
        self._conn: Any = None
        self._gen = 0
        self._calls_in_gen = 0
        self._next_rss_check = 0
        self._recipes: StateTable[_Recipe] = StateTable(self.name, prefix="w", width=6)
        self._live: dict[StateHandle, tuple[int, StateHandle]] = {}  # handle -> (generation, worker handle)
        self._closed = False
        self._start()  # bad options / missing libraries surface here, with the adapter's own message

    # -- the child process ---------------------------------------------------------------------------------
    def _start(self) -> None:
        # a fresh interpreter (not multiprocessing's fork or spawn: fork copies native threads and locks,
        # spawn re-runs the caller's __main__), talking pickles over a socket pair
        parent, child = mp.Pipe()
        self._gen += 1
        gen_dir = self._gen_dir(self._gen)
        shutil.rmtree(gen_dir, ignore_errors=True)
        gen_dir.mkdir(parents=True)
        env = child_env()
        with self.log_path.open("ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "ufuzz.backends.worker", str(child.fileno())],
                                    pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, env=env, cwd=str(gen_dir))
        child.close()
        self._proc, self._conn = proc, parent
        self._calls_in_gen = 0
        self._next_rss_check = 0
        self.stats.starts += 1
        try:
            parent.send((self.spec, str(gen_dir), self.options, list(sys.path)))
        except (OSError, ConnectionError):
            pass  # it died at once: _receive reports how
        reply = self._receive("start", _START_TIMEOUT)
        if reply[0] != "ok":
            self._reap()
            try:
                _raise(reply, f"{self.name} worker")
            except BackendUnavailable:
                raise
            except BackendError as exc:
                raise BackendUnavailable(f"backend {self.name!r} worker failed to start: {exc}",
                                         getattr(exc, "hint", "")) from exc
        self._caps, self._describe = reply[1]
        self._emit("worker_started", generation=self._gen, pid=proc.pid)

    def _emit(self, event: str, **facts: Any) -> None:
        if self.observer is not None:
            try:
                self.observer(event, backend=self.name, **facts)
            except Exception:  # noqa: BLE001 - an observer must not break the backend
                pass

    def _gen_dir(self, gen: int) -> Path:
        """Each worker generation works in its own directory, removed with the worker (crashed ones too)."""
        return self.workdir / f"gen{gen:04d}"

    def _receive(self, what: str, timeout: float) -> Any:
        """The worker's reply; on death or timeout the worker is reaped and a BackendError raised."""
        deadline = time.monotonic() + timeout
        try:
            while not self._conn.poll(min(1.0, max(0.0, deadline - time.monotonic()))):
                if self._proc.poll() is not None and not self._conn.poll(0):
                    raise EOFError
                if time.monotonic() >= deadline:
                    self._fault(f"{what} took longer than {timeout:g} s (worker killed)")
            return self._conn.recv()
        except (EOFError, OSError, ConnectionError):
            self._fault(f"worker died during {what} ({exit_text(self._wait())}; see {self.log_path.name})")

    def _wait(self) -> int | None:
        try:
            return self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None

    def _fault(self, message: str) -> None:
        self.stats.crashes += 1
        self.stats.last_exit = message
        self._emit("worker_crashed", generation=self._gen, message=message)
        self._reap()
        if self._gen == 1 and self.stats.calls == 0:  # the first worker never answered a call
            raise BackendUnavailable(f"backend {self.name!r}: {message}")
        raise BackendError(f"{self.name}: {message}; states are rebuilt in a new worker")

    def _reap(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        self._live.clear()
        end_child(proc, conn)
        remove_linked_dirs(self._gen_dir(self._gen))  # scratch directories the adapter kept elsewhere (RAM)
        shutil.rmtree(self._gen_dir(self._gen), ignore_errors=True)

    def _stop_worker(self) -> None:
        """Ask the worker to close its backend and exit (a planned recycle, or close)."""
        if self._proc is None:
            return
        try:
            self._conn.send(None)
            if self._conn.poll(120):
                self._conn.recv()
        except (EOFError, OSError, ConnectionError):
            pass
        self._reap()

    def rss_mb(self) -> float:
        """Resident memory of the worker now (0 when none runs or the platform has no /proc)."""
        if self._proc is None or self._proc.pid is None:
            return 0.0
        try:
            pages = int(Path(f"/proc/{self._proc.pid}/statm").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            return 0.0
        return pages * _PAGE / 2**20

    def _maybe_recycle(self) -> None:
        """Start a worker if none runs; replace it when it is due. Only called between protocol calls."""
        if self._closed:
            raise BackendError(f"{self.name}: backend is closed")
        if self._proc is None:
            self._start()
            return
        due = bool(self.recycle_every) and self._calls_in_gen >= self.recycle_every
        if not due and self.max_rss_mb and self._calls_in_gen >= self._next_rss_check:
            self._next_rss_check = self._calls_in_gen + 16
            rss = self.rss_mb()
            self.stats.peak_rss_mb = max(self.stats.peak_rss_mb, round(rss, 1))
            due = rss > self.max_rss_mb
        if due:
            self.stats.recycles += 1
            self._emit("worker_recycled", generation=self._gen, calls=self._calls_in_gen,
                       rss_mb=round(self.rss_mb(), 1), live_states=len(self._live))
            self._stop_worker()
            self._start()

    def _call(self, method: str, *args: Any) -> Any:
        """One request to the running worker (never recycles: handles of this generation stay valid)."""
        if self._proc is None:
            raise BackendError(f"{self.name} {method}: no worker (it died earlier in this call)")
        self.stats.calls += 1
        self._calls_in_gen += 1
        try:
            self._conn.send((method, args))
        except (OSError, ConnectionError):
            self._fault(f"worker died before {method} ({exit_text(self._wait())}; see {self.log_path.name})")
        reply = self._receive(method, self.call_timeout)
        if reply[0] != "ok":
            _raise(reply, f"{self.name} {method}")
        return reply[1]

    # -- recipes ---------------------------------------------------------------------------------------------
    def _worker_handle(self, state: StateHandle, *, first: bool = False) -> StateHandle:
        """The worker's handle for ``state`` in the current generation, rebuilt from its recipe if needed."""
        recipe = self._recipes.get(state)
        live = self._live.get(state)
        if live is not None and live[0] == self._gen:
            return live[1]
        self._live.pop(state, None)
        wh = self._call("build", recipe.checkpoint)
        try:
            for method, args in recipe.ops:
                res = self._call(method, wh, *args)
                if not res.ok:
                    raise BackendError(f"{self.name}: rebuilding {state} from its recipe: {method} failed: "
                                       f"{res.detail}")
        except BackendError:
            self._call_quiet("release", wh)
            raise
        if not first:
            self.stats.rebuilds += 1
        self._live[state] = (self._gen, wh)
        return wh

    def _call_quiet(self, method: str, *args: Any) -> None:
        if self._proc is None:
            return
        try:
            self._call(method, *args)
        except BackendError:
            pass

    def _on_state(self, method: str, state: StateHandle, *args: Any) -> Any:
        self._maybe_recycle()
        wh = self._worker_handle(state)
        try:
            return self._call(method, wh, *args)
        except BackendError:
            if method in ("add", "update", "delete"):
                # a failed write may have changed the worker's state halfway: rebuild from the recipe next time
                self._forget_live(state)
            raise

    def _forget_live(self, state: StateHandle) -> None:
        live = self._live.pop(state, None)
        if live is not None and live[0] == self._gen:
            self._call_quiet("release", live[1])

    # -- protocol ---------------------------------------------------------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        return self._caps

    def describe(self) -> dict[str, Any]:
        return {**self._describe, "worker": {"recycle_every": self.recycle_every, "max_rss_mb": self.max_rss_mb,
                                             "call_timeout": self.call_timeout}}

    def build(self, checkpoint: Checkpoint) -> StateHandle:
        self._maybe_recycle()
        handle = self._recipes.mint()
        self._recipes.put(handle, _Recipe(checkpoint))
        try:
            self._worker_handle(handle, first=True)
        except BaseException:
            self._recipes.pop(handle)
            raise
        return handle

    def fork(self, state: StateHandle) -> StateHandle:
        src = self._recipes.get(state, "fork")
        if not self._caps.copyable:
            raise NotImplementedError(f"{self.name} cannot copy a state")
        wh = self._on_state("fork", state)
        handle = self._recipes.mint()
        self._recipes.put(handle, _Recipe(src.checkpoint, list(src.ops)))
        self._live[handle] = (self._gen, wh)
        return handle

    def release(self, state: StateHandle) -> None:
        self._recipes.pop(state)
        self._forget_live(state)

    def retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        return self._on_state("retrieve", state, query, k)

    def answer(self, state: StateHandle, query: str, retrieved: list[Retrieved]) -> str | None:
        return self._on_state("answer", state, query, retrieved)

    def _write(self, method: str, state: StateHandle, *args: Any) -> OpResult:
        res = self._on_state(method, state, *args)
        if res.ok:
            self._recipes.get(state, method).ops.append((method, args))
        else:  # a refused write may still have touched the state: rebuild from the recipe next time
            self._forget_live(state)
        return res

    def add(self, state: StateHandle, memory: Memory) -> OpResult:
        return self._write("add", state, memory)

    def update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        return self._write("update", state, memory_id, new)

    def delete(self, state: StateHandle, memory_id: str) -> OpResult:
        return self._write("delete", state, memory_id)

    def get(self, state: StateHandle, memory_id: str) -> StoredMemory | None:
        return self._on_state("get", state, memory_id)

    def list(self, state: StateHandle) -> list[StoredMemory]:
        return self._on_state("list", state)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop_worker()
        self._recipes.clear()


def exit_text(code: int | None) -> str:
    """How a child process ended, from its exit code (None: it has not)."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def wrap(name: str, cls: type[MemoryBackend], workdir: Path, options: dict[str, Any] | None = None,
         **worker: Any) -> WorkerBackend:
    """``cls`` served from a worker process (``worker``: recycle_every, max_rss_mb, call_timeout)."""
    return WorkerBackend(name, f"{cls.__module__}:{cls.__qualname__}", workdir, options, **worker)


if __name__ == "__main__":
    main()
