"""Preflight: one round trip through the backend (and the LLM endpoint) before a campaign spends anything.

A backend that cannot be reached (an HTTP product on a closed port, a database that will not open) would
otherwise turn the whole budget into error records and still end "normally". Before the first seed is
recorded, :func:`preflight` builds a two-memory scratch checkpoint, adds a memory, searches, gets and lists it,
deletes it and releases the state; when LLM uses are configured it also asks the endpoint for its models. Any
exception, or an operation the backend refuses, fails the start with a message naming the step and the
backend's own words.

The scratch state is the backend's like any other and is released at once; its ids cannot collide with a
checkpoint's (they start with ``ufuzz-preflight``).
"""

from __future__ import annotations

from typing import Any

from ufuzz.backends.protocol import MemoryBackend
from ufuzz.model import Checkpoint, Memory

__all__ = ["PreflightError", "preflight"]

_CHECKPOINT = Checkpoint(id="ufuzz-preflight", memories=(
    Memory("ufuzz-preflight-1", "The preflight check stored this note about a blue kettle.",
           "2000-01-01T09:00:00"),
    Memory("ufuzz-preflight-2", "A second preflight note mentions a quiet library on Elm Street.",
           "2000-01-02T09:00:00"),
), facts=())
_ADDED = Memory("ufuzz-preflight-3", "The preflight check added a note about a green umbrella.",
                "2000-01-03T09:00:00")


class PreflightError(RuntimeError):
    """The backend or the LLM endpoint failed its preflight round trip; the message says where."""


def _step(what: str, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - any fault of the backend fails the preflight, with its words
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise PreflightError(f"{what} failed: {text}") from None


def preflight(backend: MemoryBackend, llm: Any = None) -> dict[str, Any]:
    """Round trip through ``backend`` (and ``llm``, an :class:`~ufuzz.llm.LLMClient`, when given); returns
    what was seen (for the campaign log). Raises :class:`PreflightError`."""
    seen: dict[str, Any] = {}
    state = _step("building a 2-memory scratch checkpoint", backend.build, _CHECKPOINT)
    ok = False
    try:
        added = _step("adding a memory", backend.add, state, _ADDED)
        if not added.ok:
            raise PreflightError(f"adding a memory was refused: {added.detail or 'no reason given'}")
        got = _step("searching", backend.retrieve, state, "What is the note about a green umbrella?", 2)
        seen["retrieved"] = [r.id for r in got]
        written = (added.written or (_ADDED.id,))[0]
        stored = _step("getting a memory", backend.get, state, written)
        seen["get"] = stored is not None
        listed = _step("listing the memories", backend.list, state)
        seen["listed"] = len(listed)
        gone = _step("deleting a memory", backend.delete, state, written)
        if not gone.ok:
            raise PreflightError(f"deleting a memory was refused: {gone.detail or 'no reason given'}")
        ok = True
    finally:
        if not ok:
            try:
                backend.release(state)
            except Exception:  # noqa: BLE001 - the failure above is the one to report
                pass
    _step("releasing the scratch state", backend.release, state)
    if llm is not None:
        _step(f"reaching the LLM endpoint {llm.config.base_url}", llm.ping)
        seen["llm"] = True
    return seen
