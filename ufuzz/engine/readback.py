"""Read your writes: a memory a state operation wrote must be found by its own words as a fresh copy of it is.

A state operator verifies its write through get/list only (:mod:`ufuzz.operators`), never through retrieval. A
system whose search index is not kept with its store — an update whose new text is stored but still searched by
the old one, an add that reaches the store and never the index — passes that verification, and every question
that does not hinge on the new words: the seed's question about the updated field finds the record by the words
the old and the new text share (the person's name). So the write is read back, against controls.

On a scratch copy of the state after the write, a **twin** is added: a new memory with exactly the written
memory's text and time as the system stores them (``get``). Then the copy is searched for that text. Two memories
of the same text and time are the same to a scorer — dense, BM25 with its length and term-frequency quirks, a
recency boost by the stored time — so the written memory must stand above its twin, or below it apart only by
memories carrying that very text. Further below, or not returned, while the twin is in the top-k, the system does
not search the memory by what it stores — unless the premise does not hold on this system, which is checked on
the same copy before anything is said:

* the twin's add must leave the written memory as it was (a product that merges duplicates at write time has no
  twin to compare with);
* a **calibration** memory the operation did not touch (the best-ranked other result, else the first listed)
  gets a twin too, and must stand next to it in a search for its text: a product that collapses identical
  results, diversifies them (MMR) or ranks by a clock or an access count the twin cannot copy fails this, and
  then the comparison says nothing.

What is charged is a failure of the state level (kind ``write_not_found``), recorded beside the mutant — which
stays a valid test, judged as any other. A search for the text alone, without the twin, would blame correct
scorers (BM25 ranks "mopsa mopsa has" above "has mopsa" for the query "has mopsa"). Only backends whose search
returns the stored memories themselves (``Capabilities.verbatim_search``: not a graph's derived facts, not an
LLM's extraction) and whose states can be copied are read back, nothing when retrieval is hidden or the campaign
says ``--no-readback``. It costs a copy, two adds and up to two searches per verified write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ufuzz.backends.protocol import (
    MemoryBackend,
    OpResult,
    Retrieved,
    StateHandle,
    StoredMemory,
)
from ufuzz.model import Memory, StateOp
from ufuzz.operators.sideeffects import WRITE_NOT_FOUND, Finding
from ufuzz.oracles.matching import normalize

__all__ = ["TWIN", "Readback", "apart", "below", "reach", "readback", "reads_back", "written_times"]

#: what a twin's id is its original's id with
TWIN = "~twin"


@dataclass(frozen=True)
class Readback:
    """What reading a write back said: a finding, nothing wrong (both None), or why it could say nothing
    (``inconclusive``) — which a replay must not read as "fixed"."""

    finding: Finding | None = None
    inconclusive: str | None = None
    read: bool = True  # False: the operations wrote nothing, so nothing was read back


def reads_back(caps: Any) -> bool:
    """Whether a backend with capabilities ``caps`` can have its writes read back at all: its search returns the
    stored memories themselves and is seen. (A campaign also needs copies of states; a replay spends its own.)"""
    return bool(caps.verbatim_search) and bool(caps.visible_retrieval)


def apart(hits: Sequence[Retrieved], memory_id: str, twin_id: str, text: str) -> int | None:
    """How many results stand between ``memory_id`` and ``twin_id`` in ``hits`` (0: next to each other), not
    counting results that carry ``text`` (case, accents, punctuation and spacing aside) or that score exactly as the
    twin does (a tie a product may order by any key: a hashed id); None when the twin is not among them (nothing to
    compare with). When the twin is and the memory is not, the memory stands below every result after the twin: as
    many as those that count (none: it may be the next one, beyond the cut — a state holding its text many
    times). Where a memory stands is where it first stands. (Scores a product does not report are 1/(rank+1):
    never a tie.)"""
    pos: dict[str, int] = {}
    for i, r in enumerate(hits):
        pos.setdefault(r.id, i)  # a product may return one memory twice
    if twin_id not in pos:
        return None
    same, tied = normalize(text), hits[pos[twin_id]].score

    def counts(r: Retrieved) -> bool:
        return normalize(r.text) != same and r.score != tied

    if memory_id not in pos:
        return sum(1 for r in hits[pos[twin_id] + 1:] if counts(r))
    lo, hi = sorted((pos[memory_id], pos[twin_id]))
    return sum(1 for r in hits[lo + 1:hi] if counts(r))


def below(hits: Sequence[Retrieved], memory_id: str, twin_id: str, text: str) -> bool:
    """Whether ``memory_id`` stands below its twin apart from it (or is not returned while the twin is): not found
    by its words as its twin is. A memory above its twin has been found by them."""
    ids = [r.id for r in hits]
    if twin_id not in ids:
        return False
    if memory_id in ids and ids.index(memory_id) < ids.index(twin_id):
        return False
    return bool(apart(hits, memory_id, twin_id, text))  # (missing: only below a result that counts)


def readback(backend: MemoryBackend, state: StateHandle, ops: Sequence[StateOp], results: Sequence[OpResult],
             k: int, *, scratch: bool = False, times: Mapping[str, str] | None = None) -> Readback:
    """Read back the memory the last writing operation of ``ops`` wrote (see the module docstring). ``scratch``:
    ``state`` is the caller's to spend (a replay's): the twins are added to it, not to a copy. ``times``: each
    memory's time as ufuzz wrote it (checkpoint and operations), for a system whose ``get`` reports none — a twin
    must carry its original's time."""
    written = _last_write(ops, results)
    if written is None:
        return Readback(inconclusive="the operation wrote nothing", read=False)
    op, wid = written
    when = dict(times or {})
    if op.memory is not None:
        when.setdefault(wid, op.memory.timestamp)
    return reach(backend, state, wid, k, kind=WRITE_NOT_FOUND, scratch=scratch, times=when,
                 touched={o.target for o in ops if o.target}, said=f"the {op.op} wrote {wid}, but")


def reach(backend: MemoryBackend, state: StateHandle, memory_id: str, k: int, *, kind: str, scratch: bool = False,
          times: Mapping[str, str] | None = None, touched: set[str] | None = None, said: str = "") -> Readback:
    """Read back a memory ``state`` holds — one an operation just wrote (:func:`readback`), or a checkpoint's own
    — beside a twin, on a copy, calibrated on a memory not in ``touched``. Its finding is of ``kind``; ``said``
    opens its reason (default: the memory is stored)."""
    got = backend.get(state, memory_id)
    if got is None or not got.active or not got.text.strip():
        return Readback(inconclusive=f"{memory_id} is not stored as active with a text")
    copy = state if scratch else backend.fork(state)
    try:
        return _compare(backend, copy, state, memory_id, got, k, dict(times or {}), touched=set(touched or ()),
                        said=said or f"{memory_id} is stored, but", kind=kind)
    finally:
        if not scratch:
            backend.release(copy)


def _compare(backend: MemoryBackend, copy: StateHandle, state: StateHandle, wid: str, got: StoredMemory, k: int,
             when: Mapping[str, str], *, touched: set[str], said: str, kind: str) -> Readback:
    text = got.text.strip()
    twin_id = _twin(backend, copy, wid, got, when)
    if twin_id is None:
        return Readback(inconclusive="the system refused a second memory of the written text (or its time is "
                                     "unknown)")
    again = backend.get(copy, wid)
    if again is None or not again.active or again.text.strip() != text:
        return Readback(inconclusive="adding a second memory of the written text changed the written one (the "
                                     "system merges duplicates)")
    hits = backend.retrieve(copy, text, k + 1)
    top = [r.id for r in hits]
    if twin_id not in top[:k]:
        return Readback(inconclusive=f"a search for the written text does not rank a fresh memory of it in its top "
                                     f"{k}")
    if not below(hits, wid, twin_id, text):
        return Readback()
    why = _calibrate(backend, copy, state, hits, {wid, twin_id, *touched}, text, k, when)
    if why is not None:
        return Readback(inconclusive=why)
    rank = top.index(wid) + 1 if wid in top else None
    where = f"at rank {rank}" if rank else "not at all"
    change = {"memory": wid, "change": "not_found", "after": text, "twin": twin_id, "top_ids": top, "k": k,
              "rank": rank, "twin_rank": top.index(twin_id) + 1}
    return Readback(Finding(kind, (wid,), (change,),
                            f"{said} a search for its own words finds it {where} while a "
                            f"fresh memory of the same text and time comes at rank {top.index(twin_id) + 1} "
                            f"({', '.join(top)}): the search does not score the memory by what it stores"))


def _twin(backend: MemoryBackend, copy: StateHandle, memory_id: str, of: StoredMemory,
          when: Mapping[str, str]) -> str | None:
    """Add a twin of ``of`` (stored as ``memory_id``) to ``copy``: its text and its time (as the system reports it,
    else as ufuzz wrote it); the twin's id, or None when the system refused it (an HTTP product's 409 Conflict is a
    refusal, :class:`~ufuzz.backends.adapters.http.HttpBackend`): a correct system may keep one memory per text. Any other
    fault is the backend's, an error record (a product that fails adds now and then fails them here too)."""
    stamp = of.timestamp or when.get(memory_id, "")
    if not stamp:
        return None
    added = backend.add(copy, Memory(id=f"{memory_id}{TWIN}", text=of.text, timestamp=stamp))
    if not added.ok:
        return None
    return added.written[0] if added.written else f"{memory_id}{TWIN}"


def _calibrate(backend: MemoryBackend, copy: StateHandle, state: StateHandle, hits: Sequence[Retrieved],
               touched: set[str], text: str, k: int, when: Mapping[str, str]) -> str | None:
    """None when an untouched memory of the state stands next to its own twin in a search for its text (the
    premise holds on this system); else why it does not (then nothing is charged)."""
    ids = [r.id for r in hits if r.id not in touched and r.text.strip() and r.text.strip() != text]
    ctrl = next(((i, m) for i, m in ((i, backend.get(copy, i)) for i in ids) if m is not None and m.active), None)
    if ctrl is None:
        ctrl = next(((m.id, m) for m in backend.list(state) if m.active and m.id not in touched and m.text.strip()
                     and m.text.strip() != text), None)
    if ctrl is None:
        return "no untouched memory to calibrate the comparison with"
    cid, cmem = ctrl
    twin_id = _twin(backend, copy, cid, cmem, when)
    if twin_id is None:
        return "the system refused a second memory of the calibration text"
    ctext = cmem.text.strip()
    chits = backend.retrieve(copy, ctext, k + 1)
    if twin_id not in [r.id for r in chits[:k]] or below(chits, cid, twin_id, ctext):
        return (f"an untouched memory ({cid}) does not stand next to a fresh memory of its own text either: this "
                "system does not rank two memories of one text together, so the comparison says nothing")
    return None


def written_times(checkpoint: Any, ops: Sequence[StateOp]) -> dict[str, str]:
    """Each memory's time as ufuzz wrote it: the checkpoint's, then the operations' (for :func:`readback`)."""
    out = {m.id: m.timestamp for m in (checkpoint.memories if checkpoint is not None else ())}
    out.update({op.memory.id: op.memory.timestamp for op in ops if op.memory is not None})
    return out


def _last_write(ops: Sequence[StateOp], results: Sequence[OpResult]) -> tuple[StateOp, str] | None:
    """The last add or update of ``ops`` with the id of the memory it wrote (the backend's, else the op's)."""
    for op, res in reversed(list(zip(ops, results, strict=False))):
        if op.op not in ("add", "update") or not res.ok:
            continue
        if res.written:
            return op, res.written[0]
        if op.memory is not None:
            return op, op.memory.id
    return None
