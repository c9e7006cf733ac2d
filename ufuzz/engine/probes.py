"""System probes: two promises of any memory system's search, checked on the seeds' own states, with no reference.

The operators test how stored memory is *used* as the question or the state changes; a reference says what must
be found. Two defects of a product's search show in neither way, because they hit every question alike and so a
mutant and its parent alike (a hand walk-through of a product ufuzz had never seen: a search that cut one result
too many, a search that only looked at the 30 newest records — neither was found by any operator):

* **short result list** (``short_result_list``, selection level). Asked for ``k`` results, the system returns
  fewer while more memories match: asking the same question for ``k + 1`` returns more than asking for ``k``. A
  correct search returns ``min(k, matching)`` results, so a shorter list means ``k`` results or all that match;
  nothing is assumed about which memories match (a relevance cut-off, a keyword filter are the product's own).
  Checked on each seed's execution, only when it returned fewer than ``k`` (no extra call otherwise), and asked
  twice more so that a system whose results vary call to call is not charged for that.
* **memory unreachable** (``memory_unreachable``, state level). A memory the checkpoint holds (``get`` shows it)
  is not found by a search for its own words, while a fresh memory of the same text and time is: read back
  exactly as a verified write is (:mod:`ufuzz.engine.readback`: a twin on a copy, calibrated on an untouched
  memory). Probed for the checkpoint's oldest and newest memories — where a search window, a capacity cut or an
  index that lags behind the store cut — once per checkpoint, at its seeds' executions.

Both are findings about the memory system, never caused by a mutation: they are recorded with the seed as
baseline failures (:func:`ufuzz.oracles.verdict.probe_failure`), counted apart from UF@B, and neither feeds the
scheduler. Only backends whose retrieval is seen are probed; the reachability probe needs copies of states and a
search that returns the stored memories (:func:`~ufuzz.engine.readback.reads_back`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ufuzz.backends.protocol import MemoryBackend, Retrieved, StateHandle
from ufuzz.engine.readback import reach
from ufuzz.model import Checkpoint
from ufuzz.oracles.verdict import SHORT_LIST, UNREACHABLE

__all__ = ["SHORT_LIST", "UNREACHABLE", "edges", "short_list", "unreachable"]



def short_list(backend: MemoryBackend, state: StateHandle, query: str, k: int,
               got: Sequence[Retrieved]) -> dict[str, Any] | None:
    """What shows a short result list for ``query`` on ``state`` (``got``: its top-``k`` results), or None.

    Only when ``got`` holds fewer than ``k`` distinct memories: then ``k + 1`` is asked for, and ``k`` again; the
    list is short when the larger request returns more memories than both requests for ``k`` did."""
    if len(_distinct(got)) >= k:
        return None
    more = backend.retrieve(state, query, k + 1)
    if len(_distinct(more)) <= len(_distinct(got)):
        return None
    again = backend.retrieve(state, query, k)
    if len(_distinct(again)) >= k or len(_distinct(more)) <= len(_distinct(again)):
        return None  # the system's results vary between calls: nothing is said
    return {"k": k, "returned": len(_distinct(got)), "returned_again": len(_distinct(again)),
            "asked_more": k + 1, "returned_more": len(_distinct(more)), "ids": _distinct(got),
            "more_ids": _distinct(more),
            "reason": f"asked for {k} results the system returned {len(_distinct(got))} (and "
                      f"{len(_distinct(again))} when asked again), while asked for {k + 1} it returns "
                      f"{len(_distinct(more))}: it cuts the list short of memories it holds and ranks"}


def _distinct(hits: Sequence[Retrieved]) -> list[str]:
    out: list[str] = []
    for r in hits:
        if r.id not in out:
            out.append(r.id)
    return out


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
                times: Mapping[str, str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Read back the checkpoint's :func:`edges` on ``state`` (its own, unmutated): (findings, inconclusive
    reasons). A finding is ``{"memory", "reason", "change"}`` of a memory a search for its own words misses."""
    when = dict(times or {m.id: m.timestamp for m in checkpoint.memories})
    found: list[dict[str, Any]] = []
    unsure: list[str] = []
    for mid, edge in edges(checkpoint).items():
        read = reach(backend, state, mid, k, kind=UNREACHABLE, times=when)
        if read.finding is not None:
            found.append({"memory": mid, "edge": edge, "reason": f"the checkpoint's {edge} memory: "
                          f"{read.finding.reason}", "change": dict(read.finding.changes[0])})
        elif read.inconclusive:
            unsure.append(f"{mid}: {read.inconclusive}")
    return found, unsure
