"""The lane interface: where a campaign's jobs run, written once for every kind of lane.

A lane holds a :class:`ufuzz.engine.parallel.core.LaneCore` (a backend, an executor, the state operators) somewhere —
in the campaign's own thread (:class:`InProcessLane`: the campaign of ``--workers 1``), in a thread of its
process (:class:`ufuzz.engine.parallel.threadlanes.ThreadLane`, ``--max-concurrency``), in a child interpreter
(:class:`ufuzz.engine.parallel.process.ProcessLane`, ``--workers``) or in a Ray actor
(:class:`ufuzz.engine.parallel.raylanes.RayLane`) — and answers one request at a time: :meth:`Lane.submit` sends it,
:meth:`Lane.result` gives its answer back (or raises :class:`LaneDied`), and the class's :meth:`Lane.wait`
tells which of several lanes have an answer in. The :class:`ufuzz.engine.parallel.pool.LanePool` drives every kind
through this interface alone, so a campaign is the same whatever its lanes are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["InProcessLane", "Lane", "LaneBase", "LaneDied", "answer", "unwrap"]


class LaneDied(RuntimeError):
    """A lane died, could not be started or could not be reached; what it was doing is lost."""


@runtime_checkable
class Lane(Protocol):
    """One lane, as the pool drives it. ``index`` names it in messages."""

    index: int

    def start(self) -> None:
        """Begin starting (several lanes start at once); :meth:`ready` waits for it."""

    def ready(self) -> None:
        """Wait until the lane has started; :class:`LaneDied` when it could not."""

    def submit(self, method: str, *args: Any) -> None:
        """Send a request (a :class:`~ufuzz.engine.parallel.core.LaneCore` method and its arguments); a lane that is
        down is started first. Never raises: a failure is :meth:`result`'s to raise."""

    def result(self) -> Any:
        """The answer to the request submitted last (waiting for it), or :class:`LaneDied`."""

    def call(self, method: str, *args: Any) -> Any:
        """:meth:`submit` then :meth:`result`."""

    @staticmethod
    def wait(lanes: Sequence[Any], timeout: float) -> list[Any]:
        """The lanes of ``lanes`` (all of this class) whose answer (or death) is in, waiting up to ``timeout``
        seconds for one."""

    def kill(self) -> None:
        """End the lane now (what it was doing is lost); it starts again on its next request."""

    def close(self) -> None:
        """Let the lane release its states, then end it."""


class LaneBase:
    """What every lane does the same way."""

    index: int
    #: its jobs run apart from the campaign's thread (a thread, a process, an actor): the pool looks for its
    #: answers while the campaign works (:meth:`ufuzz.engine.parallel.pool.LanePool.poll`)
    apart = True

    def call(self, method: str, *args: Any) -> Any:
        self.submit(method, *args)  # type: ignore[attr-defined]
        return self.result()  # type: ignore[attr-defined]

    def unwrap(self, reply: tuple[str, Any]) -> Any:
        """The value of an ("ok", value) answer; an ("err", message) one raises LaneDied naming this lane."""
        return unwrap(self.index, reply)


def answer(core: Any, method: str, args: tuple[Any, ...]) -> tuple[str, Any]:
    """Run one request on ``core`` where the lane lives: ("ok", value), or ("err", message) when it raised — the
    job is lost (an error record in the campaign), the lane goes on."""
    try:
        return "ok", getattr(core, method)(*args)
    except Exception as exc:  # noqa: BLE001 - the campaign records the lost job; the lane goes on
        return "err", f"{type(exc).__name__}: {exc}"


def unwrap(index: int, reply: tuple[str, Any]) -> Any:
    """The value of an ("ok", value) answer; an ("err", message) one raises LaneDied (naming lane ``index``
    unless the message already names a lane)."""
    status, value = reply
    if status == "ok":
        return value
    raise LaneDied(value if str(value).startswith("lane ") else f"lane {index}: {value}")


class InProcessLane(LaneBase):
    """A lane in the campaign's own thread, over the campaign's backend and LLM client: the campaign of
    ``--workers 1``. A request is run when its answer is asked for (:meth:`result`), so nothing runs while the
    campaign draws; there is nothing to start, wait for or kill."""

    #: its jobs run in the campaign's thread, when their answer is asked for (the pool never polls it)
    apart = False

    def __init__(self, index: int, core: Any) -> None:
        self.index = index
        self.core = core
        self._request: tuple[str, tuple[Any, ...]] | None = None

    def start(self) -> None:
        pass

    def ready(self) -> None:
        pass

    def submit(self, method: str, *args: Any) -> None:
        self._request = (method, args)

    def result(self) -> Any:
        request, self._request = self._request, None
        if request is None:
            raise LaneDied(f"lane {self.index}: no request was submitted")
        return self.unwrap(answer(self.core, *request))

    @staticmethod
    def wait(lanes: Sequence[InProcessLane], timeout: float) -> list[InProcessLane]:  # noqa: ARG004 - never waits
        return [lane for lane in lanes if lane._request is not None]

    def kill(self) -> None:
        self._request = None

    def close(self) -> None:
        core, self.core = self.core, None
        if core is not None:
            core.close()
