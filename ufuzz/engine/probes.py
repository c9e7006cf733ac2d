"""System probes: two promises of any memory system's search, checked on the seeds' own states, with no reference.

The operators test how stored memory is *used* as the question or the state changes; a reference says what must
be found. Two defects of a product's search show in neither way, because they hit every question alike and so a
mutant and its parent alike (a hand walk-through of a product ufuzz had never seen: a search that cut one result
too many, a search that only looked at the 30 newest records — neither was found by any operator):

* **short result list** (``short_result_list``, selection level). Asked for ``k`` results, the system returns
  fewer while more memories match: asking the same question for ``k + 1`` returns those and more, and asking for
  ``k`` again returns exactly the same. A correct search returns ``min(k, matching)`` results, so a shorter list
  means ``k`` results or all that match; nothing is assumed about which memories match (a relevance cut-off, a
  keyword filter are the product's own). Checked on each seed's execution, only when it returned fewer than ``k``
  results (no extra call otherwise). A search whose results vary between calls is charged only if it comes up
  short the very same way twice running (the odds are lowered, not removed); never where the state holds a
  second memory of a returned text (a product may collapse identical results after its cut). A product that over-fetches in proportion to ``k`` and then
  cuts by a reranker's score shows the same way: a memory that passes its own bar was cut from a list shorter
  than asked, which is what is reported.
* **memory unreachable** (``memory_unreachable``, state level). A memory the checkpoint holds (``get`` shows it)
  is not returned at all by a search for its own words, while a fresh memory of the same text and time is in the
  top ``k``: read back as a verified write is (:mod:`ufuzz.engine.readback`: a twin on a copy, calibrated on an
  untouched memory), and then not found by a wide search of the state either. Probed for the checkpoint's oldest
  and newest memories — where a search window, a capacity cut or an index that lags behind the store cut — once
  per checkpoint, at its seeds' executions. A memory found below its twin is said nothing about (a product may
  rank by its own clock, which the twin, written last, cannot copy), nor is a window over the stored times (the
  twin carries its original's time, so it is cut too).

Both are findings about the memory system, never caused by a mutation: they are recorded with the seed as
baseline failures (:func:`ufuzz.oracles.verdict.probe_failures`), counted apart from UF@B, and neither feeds the
scheduler. Only backends whose retrieval is seen are probed; the reachability probe needs copies of states and a
search that returns the stored memories (:func:`~ufuzz.engine.readback.reads_back`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ufuzz.backends.protocol import MemoryBackend, Retrieved, StateHandle, StoredMemory
from ufuzz.engine.readback import reach
from ufuzz.model import Checkpoint
from ufuzz.oracles.matching import normalize
from ufuzz.oracles.verdict import SHORT_LIST, UNREACHABLE

__all__ = ["SHORT_LIST", "UNREACHABLE", "WIDE", "edges", "short_list", "unreachable"]

#: the fewest results the wide search of the reachability probe asks for (else 10 k)
WIDE = 50


def short_list(backend: MemoryBackend, state: StateHandle, query: str, k: int, got: Sequence[Retrieved],
               listing: Callable[[], Sequence[StoredMemory]] | None = None) -> dict[str, Any] | None:
    """What shows a short result list for ``query`` on ``state`` (``got``: its top-``k`` results), or None.

    Only when ``got`` holds fewer than ``k`` results: then ``k + 1`` is asked for, and ``k`` again. The list is
    short when asking for ``k`` again gives the very same results and asking for ``k + 1`` gives them and more
    (a search whose results vary between calls must come up short the same way twice). Said nothing about either where the state holds
    two memories of one text among those returned (``listing``: the state's memories): a product may collapse
    identical results after its cut."""
    if len(got) >= k:
        return None
    more = backend.retrieve(state, query, k + 1)
    if len(more) <= len(got):
        return None
    again = backend.retrieve(state, query, k)
    ids, again_ids, more_ids = [r.id for r in got], [r.id for r in again], [r.id for r in more]
    if again_ids != ids or not set(ids) < set(more_ids):
        return None  # the system's results vary between calls, or the longer list is another one: nothing said
    if listing is not None and _duplicated(ids, listing()):
        return None
    return {"k": k, "returned": len(ids), "asked_more": k + 1, "returned_more": len(more_ids), "ids": ids,
            "more_ids": more_ids,
            "reason": f"asked for {k} results the system returned {len(ids)} (the same {len(ids)} when asked "
                      f"again), while asked for {k + 1} it returns those and {len(more_ids) - len(ids)} more: it cuts "
                      f"the list short of memories it holds and ranks"}


def _duplicated(ids: Sequence[str], listing: Sequence[StoredMemory]) -> bool:
    """Whether a returned memory's text is also another active memory's (case and punctuation aside)."""
    texts = Counter(normalize(m.text) for m in listing if m.active)
    by_id = {m.id: normalize(m.text) for m in listing}
    return any(texts[by_id[i]] > 1 for i in ids if i in by_id)


def edges(checkpoint: Checkpoint) -> dict[str, str]:
    """The checkpoint's oldest and newest memories by the time ufuzz wrote them (ties: checkpoint order), by id,
    with which edge each is — where a window of the newest, a capacity cut or a lagging index cut first."""
    mems = [m for m in checkpoint.memories if m.text.strip()]
    if not mems:
        return {}
    order = sorted(range(len(mems)), key=lambda i: (mems[i].timestamp, i))
    out = {mems[order[0]].id: "oldest"}
    out.setdefault(mems[order[-1]].id, "newest")
    return out


def unreachable(backend: MemoryBackend, state: StateHandle, checkpoint: Checkpoint, k: int,
                times: Mapping[str, str] | None = None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Read back the checkpoint's :func:`edges` on ``state`` (its own, unmutated): (findings, what each edge
    memory showed: ``reachable``, ``unreachable`` or ``inconclusive: why``). A finding is ``{"memory", "edge",
    "reason", "change"}`` of a memory a search for its own words does not return at all — not in the top k + 1
    beside its twin, nor anywhere in a wide search of the state — while its twin is. A memory found below its twin
    is said nothing about here: a product may rank by its own clock (a recency boost by write order), which the
    twin, written last, cannot copy."""
    when = dict(times or {m.id: m.timestamp for m in checkpoint.memories})
    found: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for mid, edge in edges(checkpoint).items():
        read = reach(backend, state, mid, k, kind=UNREACHABLE, times=when)
        if read.finding is None:
            seen[mid] = f"inconclusive: {read.inconclusive}" if read.inconclusive else "reachable"
            continue
        change = dict(read.finding.changes[0])
        if change.get("rank") is not None:
            seen[mid] = "inconclusive: found below its twin (a clock the twin cannot copy may rank it)"
            continue
        wide = [r.id for r in backend.retrieve(state, str(change.get("after") or ""), max(WIDE, 10 * k))]
        if mid in wide:
            seen[mid] = (f"inconclusive: found at rank {wide.index(mid) + 1} of a wider search (ranked low, not "
                         "unreachable)")
            continue
        seen[mid] = "unreachable"
        found.append({"memory": mid, "edge": edge, "reason": f"the checkpoint's {edge} memory: "
                      f"{read.finding.reason}; not returned by a search for {max(WIDE, 10 * k)} results either",
                      "change": change})
    return found, seen
