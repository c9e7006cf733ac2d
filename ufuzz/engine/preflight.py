"""Preflight: one round trip through the backend (and the LLM endpoint) before a campaign spends anything.

A backend that cannot be reached (an HTTP product on a closed port, a database that will not open) would
otherwise turn the whole budget into error records and still end "normally". Before the first seed is
recorded, :func:`preflight` builds a two-memory scratch checkpoint, adds a memory, searches, gets and lists it,
deletes it and releases the state; a backend whose build checks its listing (an HTTP product) also builds the
campaign's largest checkpoint; when LLM uses are configured it also asks the endpoint for its models. Any
exception, or an operation the backend refuses, fails the start with a message naming the step and the
backend's own words.

A backend that copies states (``capabilities.copyable``: a product's snapshot endpoint) also has its copy checked:
it must list the original's memories under their ids, and a memory added to the copy and one deleted from it must
change neither the original's listing nor its search.
The method runs parent and mutant on independent copies; on a copy that shares its index with the original,
one mutant's writes show up in another state's results and the failures blame the wrong operation (a held-out
product whose copy shared its search index: hundreds of "failures", a third of them reproducible). Such a start
is refused, saying what leaked.

The scratch state is the backend's like any other and is released at once; its ids cannot collide with a
checkpoint's (they start with ``ufuzz-preflight``).
"""

from __future__ import annotations

from typing import Any

from ufuzz.backends.protocol import BackendMismatch, MemoryBackend
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
_IN_COPY = Memory("ufuzz-preflight-4", "Only the preflight copy holds this note about a red bicycle.",
                  "2000-01-04T09:00:00")


class PreflightError(RuntimeError):
    """The backend or the LLM endpoint failed its preflight round trip; the message says where. ``config``: the
    backend answered, but not in the shape its configuration describes (the user's file to fix, not a system
    that is down)."""

    def __init__(self, message: str, config: bool = False) -> None:
        super().__init__(message)
        self.config = config


def _step(what: str, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - any fault of the backend fails the preflight, with its words
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise PreflightError(f"{what} failed: {text}", config=isinstance(exc, BackendMismatch)) from None


def preflight(backend: MemoryBackend, llm: Any = None, largest: Checkpoint | None = None) -> dict[str, Any]:
    """Round trip through ``backend`` (and ``llm``, an :class:`~ufuzz.llm.LLMClient`, when given); returns
    what was seen (for the campaign log). ``largest``: the campaign's largest checkpoint, built and released too —
    given where the backend's build checks its listing (``build_checks_listing``: a product whose listing pages
    shows it only on a state larger than a page — the scratch state's two memories never are — and a campaign
    would otherwise spend its first builds on errors). Raises :class:`PreflightError`."""
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
        if backend.capabilities.copyable:
            seen["copy_isolated"] = _copy_isolated(backend, state)
        ok = True
    finally:
        if not ok:
            try:
                backend.release(state)
            except Exception:  # noqa: BLE001 - the failure above is the one to report
                pass
    _step("releasing the scratch state", backend.release, state)
    if largest is not None and len(largest.memories) > len(_CHECKPOINT.memories):
        big = _step(f"building the largest checkpoint {largest.id!r} ({len(largest.memories)} memories)",
                    backend.build, largest)
        _step(f"releasing the state of {largest.id!r}", backend.release, big)
        seen["largest_built"] = largest.id
    if llm is not None:
        _step(f"reaching the LLM endpoint {llm.config.base_url}", llm.ping)
        seen["llm"] = True
    return seen


def _same_ids(original: dict[str, bool], copy: dict[str, bool]) -> None:
    """The copy lists the original's memories under the original's ids, or :class:`PreflightError`: a campaign
    addresses a memory by its id on every copy of a state (an update's target, a delete's, the evidence a
    reference names), so on a copy whose product gave the memories new ids every state operation would miss and
    its verification would report the memories it cannot find as removed — false failures (a product walkthrough:
    25 memories "removed" by each unrelated add)."""
    lost = sorted(i for i, active in original.items() if active and not copy.get(i, False))
    if lost:
        new = sorted(set(copy) - set(original))
        raise PreflightError(
            f"the backend's copy of a state does not hold the original's memories under their ids: {len(lost)} of "
            f"{sum(original.values())} are missing from the copy's listing (e.g. {', '.join(lost[:3])})"
            + (f", which lists {', '.join(new[:3])} instead" if new else "") + ". A campaign addresses memories by "
            "id on every copy, so it would blame its mutations for memories it cannot find. Make the product's copy "
            "(snapshot) keep the memories' ids, or leave it out of the backend's configuration (an HTTP product: "
            "remove [snapshot] from its TOML) so that ufuzz rebuilds every state instead")


def _copy_isolated(backend: MemoryBackend, state: Any) -> bool:
    """Write to a copy of ``state`` (an add, a delete) and check that the original shows neither: its listing
    before and after the writes (what it held is what it must still hold, nothing more), and its search; raises
    :class:`PreflightError` naming what leaked. What the backend made of the scratch notes is its own business (an
    extracting backend may store none of a note): only a change of the original counts."""
    before = {m.id: m.active for m in _step("listing the original", backend.list, state)}
    copy = _step("copying a state", backend.fork, state)
    try:
        _same_ids(before, {m.id: m.active for m in _step("listing the copy", backend.list, copy)})
        _step("adding a memory to the copy", backend.add, copy, _IN_COPY)
        kept = next((i for i in sorted(before) if before[i]), None)
        gone = _step("deleting a memory of the copy", backend.delete, copy, kept) if kept is not None else None
        after = {m.id: m.active for m in _step("listing the original", backend.list, state)}
        leaks = []
        if set(after) - set(before):
            leaks.append("the memory added to the copy is listed in the original")
        if gone is not None and gone.ok and not after.get(kept, False):
            leaks.append("the memory deleted from the copy is gone from the original's listing")
        found = _step("searching the original", backend.retrieve, state, "Which note is about a red bicycle?", 3)
        if any("red bicycle" in (r.text or "") for r in found):
            leaks.append("the original's search returns the memory added to the copy")
        if leaks:
            raise PreflightError(
                "the backend's copy of a state is not independent of the original: " + "; ".join(leaks) + ". "
                "Parent and mutant must run on independent copies, so the campaign would blame mutations for "
                "each other's writes. Fix the product's copy (snapshot) operation, or leave it out of the "
                "backend's configuration (an HTTP product: remove [snapshot] from its TOML) so that ufuzz "
                "rebuilds every state instead")
        return True
    finally:
        try:
            backend.release(copy)
        except Exception:  # noqa: BLE001 - the verdict above is the one to report
            pass
