"""Read your writes: a memory a state operation wrote must be found by its own words as a fresh copy of it is.

A state operator verifies its write through get/list only (:mod:`ufuzz.operators`), never through retrieval. A
system whose search index is not kept with its store — an update whose new text is stored but still searched by
the old one, an add that reaches the store and never the index — passes that verification, and every question
that does not hinge on the new words: the seed's question about the updated field finds the record by the words
the old and the new text share (the person's name). So the write is read back, against a control.

On a scratch copy of the state after the write, a **twin** is added: a new memory with exactly the written
memory's text and time as the system stores them (``get``). Then the copy is searched for that text. Whatever the
system's scorer — dense, BM25 with its length and term-frequency quirks, a recency boost — two memories with the
same text and the same time are the same to it, so the written memory must stand next to its twin: right above
or right below it, or apart from it only by memories carrying that very text. Where the twin is in the top-k
and the written memory is further away, or not returned at all, the system does not search the memory by what it
stores: a failure of the state level (kind ``write_not_found``), recorded beside the mutant — which stays a valid
test, judged as any other. Where the twin is not in the top-k either, the search does not find this text by its
words at all, and nothing is said. (A search for the text alone, without the twin, would blame correct scorers:
BM25 ranks "mopsa mopsa has" above "has mopsa" for the query "has mopsa".)

Only backends whose search returns the stored memories themselves (``Capabilities.verbatim_search``: not a
graph's derived facts) and whose states can be copied are read back, and nothing when retrieval is hidden. It
costs a copy, an add and a search per write; no reference, no threshold, no response is involved.
"""

from __future__ import annotations

from collections.abc import Sequence

from ufuzz.backends.protocol import MemoryBackend, OpResult, Retrieved, StateHandle
from ufuzz.model import Memory, StateOp
from ufuzz.operators.sideeffects import WRITE_NOT_FOUND, Finding

__all__ = ["TWIN", "apart", "readback"]

#: what the twin's id is the written memory's id with
TWIN = "~twin"


def apart(hits: Sequence[Retrieved], memory_id: str, twin_id: str, text: str) -> int | None:
    """How many results stand between ``memory_id`` and ``twin_id`` in ``hits``, not counting results that carry
    exactly ``text`` (0: next to each other); None when the twin is not among them (nothing to compare with), and
    ``len(hits)`` when the twin is and the memory is not."""
    pos: dict[str, int] = {}
    for i, r in enumerate(hits):
        pos.setdefault(r.id, i)  # where each memory first stands (a product may return one memory twice)
    if twin_id not in pos:
        return None
    if memory_id not in pos:
        return len(hits)
    lo, hi = sorted((pos[memory_id], pos[twin_id]))
    return sum(1 for r in hits[lo + 1:hi] if r.text.strip() != text)


def readback(backend: MemoryBackend, state: StateHandle, ops: Sequence[StateOp], results: Sequence[OpResult],
             k: int, *, scratch: bool = False) -> Finding | None:
    """The finding when the memory the last writing operation of ``ops`` wrote does not stand next to its twin in a
    search of a copy of ``state`` for its text (see the module docstring); None otherwise. ``scratch``: ``state``
    is the caller's to spend (a replay's): the twin is added to it, not to a copy."""
    written = _last_write(ops, results)
    if written is None:
        return None
    op, wid = written
    got = backend.get(state, wid)
    if got is None or not got.text.strip():
        return None
    text = got.text.strip()
    twin = Memory(id=f"{wid}{TWIN}", text=got.text, timestamp=got.timestamp or (op.memory.timestamp if op.memory
                                                                                 else ""))
    copy = state if scratch else backend.fork(state)
    try:
        added = backend.add(copy, twin)
        if not added.ok:
            return None  # the system refused a second memory of this text: no control
        twin_id = added.written[0] if added.written else twin.id
        hits = backend.retrieve(copy, text, k + 1)
    finally:
        if not scratch:
            backend.release(copy)
    gap = apart(hits, wid, twin_id, text)
    if gap is None or gap == 0 or twin_id not in [r.id for r in hits[:k]]:
        return None
    top = [r.id for r in hits]  # (list.index: where each first stands, as apart() counts)
    where = ("not returned" if wid not in top else f"at rank {top.index(wid) + 1}")
    change = {"memory": wid, "change": "not_found", "after": text, "twin": twin_id, "top_ids": top, "k": k,
              "rank": None if wid not in top else top.index(wid) + 1, "twin_rank": top.index(twin_id) + 1}
    return Finding(WRITE_NOT_FOUND, (wid,), (change,),
                   f"the {op.op} wrote {wid}, but a search for its own words finds it {where} while a fresh memory "
                   f"of the same text and time comes at rank {top.index(twin_id) + 1} "
                   f"({', '.join(top)}): the search does not score the memory by what it stores")


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
