"""A lane in a child interpreter on this machine (``--workers N``): :class:`ProcessLane` runs a
:class:`~ufuzz.engine.parallel.core.LaneCore` in ``python -m ufuzz.engine.parallel.process FD``, talking pickles over a
socket pair, as the backend worker does. A lane that dies is restarted on its next job; the job it was running comes
back ``lost`` (the campaign records an error, never a failure), and its states are rebuilt from their recipes as
after an eviction.
"""

from __future__ import annotations

import multiprocessing as mp
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from multiprocessing import connection as mp_connection
from pathlib import Path
from typing import Any

from ufuzz._util.where import child_env
from ufuzz.backends.worker import end_child, exit_text, serve
from ufuzz.engine.parallel.core import LaneCore, LaneSpec
from ufuzz.engine.parallel.lane import LaneBase, LaneDied

#: seconds a lane may take to start (importing torch and loading a model on a loaded 2-core machine)
START_TIMEOUT = 600.0


# -- a lane in a child process --------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    """Child main (``python -m ufuzz.engine.parallel.process FD``): the first message is (spec, workdir); then answer
    ("ok", value) | ("err", message) per (method, args) request; None closes the lane."""
    conn, spec, workdir = child_setup(argv)
    try:
        core = LaneCore(spec, Path(workdir))
        conn.send(("ok", None))
    except BaseException as exc:  # noqa: BLE001 - reported to the campaign, which says so
        conn.send(("err", f"{type(exc).__name__}: {exc}"))
        return
    serve(conn, core, _lane_error)
    try:
        core.close()
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
    try:
        conn.send(("ok", None))
    except (OSError, ConnectionError):
        pass


def child_setup(argv: list[str] | None) -> tuple[Any, LaneSpec, Path]:
    """A lane child's start: Ctrl-C left to the campaign, fault tracebacks on, the pipe from the command line,
    the first message (spec, workdir) and the campaign's sys.path."""
    from multiprocessing.connection import Connection

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the campaign's: it stops between batches
    try:
        import faulthandler

        faulthandler.enable()
    except Exception:  # noqa: BLE001
        pass
    conn = Connection(int((argv or sys.argv[1:])[0]))
    spec, workdir = conn.recv()
    sys.path[:] = [p for p in spec.path if p] + [p for p in sys.path if p not in spec.path]
    return conn, spec, Path(workdir)


def _lane_error(exc: BaseException) -> tuple[str, str]:
    """A lane call that raised: its traceback to the lane's log (stderr), its message to the campaign."""
    traceback.print_exc()
    return ("err", f"{type(exc).__name__}: {exc}")


class ProcessLane(LaneBase):
    """A :class:`LaneCore` in a child interpreter on this machine, started on first use and after a death."""

    #: the child's module (``python -m MODULE FD``)
    child_module = "ufuzz.engine.parallel.process"

    def __init__(self, index: int, spec: LaneSpec, workdir: Path) -> None:
        self.index = index
        self.spec = spec
        self.workdir = Path(workdir)
        self.log_path = self.workdir / "lane.log"
        self.starts = 0
        self._proc: subprocess.Popen | None = None
        self._conn: Any = None
        self._broken: str | None = None  # why the last start or send failed (raised by result())

    @property
    def running(self) -> bool:
        return self._proc is not None

    def start(self) -> None:
        """Launch the child; :meth:`ready` waits for it (so that several lanes start at once)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.workdir / "backend", ignore_errors=True)  # a dead lane's states are gone
        parent, child = mp.Pipe()
        env = child_env()
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen([sys.executable, "-m", self.child_module, str(child.fileno())],
                                          pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, env=env, cwd=str(self.workdir))
        child.close()
        self._conn = parent
        self.starts += 1
        try:
            parent.send((self.spec, str(self.workdir)))
        except (OSError, ConnectionError):
            pass  # it died at once: ready() says how

    def ready(self) -> None:
        reply = self._receive("start", START_TIMEOUT)
        if reply[0] != "ok":
            self.kill()
            raise LaneDied(f"lane {self.index} could not start: {reply[1]}")

    def submit(self, method: str, *args: Any) -> None:
        """Send a request; its answer is :meth:`result`'s. A lane that is down is started first."""
        self._broken = None
        try:
            if self._proc is None:
                self.start()
                self.ready()
            self._conn.send((method, args))
        except LaneDied as exc:
            self._broken = str(exc)
        except (OSError, ConnectionError):
            self._broken = f"lane {self.index} died before {method} ({self._exit()})"
            self.kill()

    def result(self) -> Any:
        if self._broken is not None:
            raise LaneDied(self._broken)
        return self.unwrap(self._receive("a batch", None))

    @staticmethod
    def wait(lanes: Sequence[ProcessLane], timeout: float) -> list[ProcessLane]:
        """The lanes of ``lanes`` whose answer (or death) is in, waiting up to ``timeout`` seconds for one."""
        broken = [lane for lane in lanes if lane._broken is not None or lane._conn is None]
        if broken:
            return broken
        conns = {id(lane._conn): lane for lane in lanes}
        ready = mp_connection.wait([lane._conn for lane in lanes], timeout)
        out = [conns[id(c)] for c in ready]
        if not out:  # a lane that died without closing its end (its children hold it) is ready too
            out = [lane for lane in lanes if lane._proc is not None and lane._proc.poll() is not None]
        return out

    def _receive(self, what: str, timeout: float | None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not self._conn.poll(1.0):
                if self._proc.poll() is not None and not self._conn.poll(0):
                    raise EOFError
                if deadline is not None and time.monotonic() >= deadline:
                    self.kill()
                    raise LaneDied(f"lane {self.index}: {what} took longer than {timeout:g} s (lane killed)")
            return self._conn.recv()
        except (EOFError, OSError, ConnectionError):
            message = f"lane {self.index} died during {what} ({self._exit()}; see {self.log_path})"
            self.kill()
            raise LaneDied(message) from None

    def _exit(self) -> str:
        if self._proc is None:
            return "not running"
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        return exit_text(code)

    def kill(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        end_child(proc, conn)

    def close(self) -> None:
        """Ask the lane to release its states and close its backend, then end it."""
        if self._proc is None:
            return
        try:
            self._conn.send(None)
            deadline = time.monotonic() + 120
            while self._conn.poll(max(0.0, deadline - time.monotonic())):
                if self._conn.recv() == ("ok", None):  # the close's answer (a job still running answers first)
                    break
        except (EOFError, OSError, ConnectionError):
            pass
        self.kill()


if __name__ == "__main__":
    main()
