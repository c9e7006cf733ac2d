"""Side effects: what a state operation changed beyond what it asked for, seen through get/list only.

A state operator's validator compares the state's listing before its operation (the parent's state) with the
listing after it. Every memory the operation did not name — not its target, not what the backend reported as
written, superseded or removed by it — must be as it was: still stored, with the same text and the same
activity; and nothing else may appear. What differs is a change the *system* made on its own (the paper's
non-interference failure): an add that evicts the oldest memory, an update that leaves a duplicate of the old
text, a delete that removes another memory. It is found before any retrieval, never from one, and recorded as
a failure of the ``state`` level (:class:`~ufuzz.operators.base.Verdict` ``finding``) — apart from the
rejections caused by the fuzzer's own choices (an edit that turns out query-relevant, a value not written),
which stay plain rejections.

Kinds (most serious first, one per finding): ``collateral_removal`` (a memory gone), ``collateral_rewrite`` (its
text changed), ``collateral_deactivation`` (active before, inactive after), ``collateral_retime`` (its timestamp
changed: the memory now claims another time, which moves it in any recency ranking and answers any "when" or
"latest" question wrongly), ``duplicate_left`` (a new memory carrying the old text of the updated one),
``unrequested_memory`` (any other new memory). One more kind of the state level is found by a search, after the
verification, not by it: ``write_not_found`` — the memory an operation wrote is not found by its own words
(:mod:`ufuzz.engine.readback`).

A timestamp counts only where both listings give one and they name different instants (ISO 8601 texts are
compared as times, so ``2024-01-01T00:00:00`` and ``2024-01-01T00:00:00+00:00`` are one instant; other texts as
written): a backend whose listing shows no time, or one that renders the same time another way, is never
charged with a change.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ufuzz.backends.protocol import OpResult, StoredMemory
from ufuzz.model import StateOp
from ufuzz.model.memory import utc_time

__all__ = ["KINDS", "STATE", "WRITE_NOT_FOUND", "Finding", "find", "touched_by"]

STATE = "state"
#: a written memory that a search for its own text does not return (:mod:`ufuzz.engine.readback`)
WRITE_NOT_FOUND = "write_not_found"
KINDS = ("collateral_removal", "collateral_rewrite", "collateral_deactivation", "collateral_retime",
         "duplicate_left", "unrequested_memory", WRITE_NOT_FOUND)
_CHANGE_KIND = {"removed": "collateral_removal", "rewritten": "collateral_rewrite",
                "deactivated": "collateral_deactivation", "retimed": "collateral_retime",
                "duplicate": "duplicate_left", "added": "unrequested_memory"}


@dataclass(frozen=True)
class Finding:
    """A change the system made beyond the operation: its kind, the memories concerned and what changed."""

    kind: str
    memories: tuple[str, ...]
    changes: tuple[dict[str, Any], ...]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "memories": list(self.memories), "changes": [dict(c) for c in self.changes],
                "reason": self.reason}


def touched_by(ops: Sequence[StateOp], results: Sequence[OpResult]) -> set[str]:
    """The ids the operations named or the backend reported writing, superseding or removing."""
    ids: set[str] = set()
    for op in ops:
        if op.target:
            ids.add(op.target)
        if op.memory is not None:
            ids.add(op.memory.id)
    for res in results:
        if res.target:
            ids.add(res.target)
        ids.update(res.written, res.superseded, res.removed)
    return ids


def find(before: Iterable[StoredMemory], after: Iterable[StoredMemory], ops: Sequence[StateOp],
         results: Sequence[OpResult], *, deactivation: bool = True) -> Finding | None:
    """The side effect of ``ops`` (with the backend's ``results``) from listing ``before`` to ``after``, if any.

    ``deactivation`` False: a memory that turns inactive is not counted. An update or a delete of a fact may
    rightly mark other carriers of the same old value superseded (a tombstoning backend, a graph that
    invalidates every edge of the old value), so only edits meant to change nothing the question uses (the
    unrelated edits) count deactivations; removals, rewrites and new memories count for every operation."""
    old = {m.id: m for m in before}
    new = {m.id: m for m in after}
    touched = touched_by(ops, results)
    old_texts = {old[op.target].text for op in ops if op.op == "update" and op.target in old}
    changes: list[dict[str, Any]] = []
    for mid in sorted(set(old) - touched):
        was, now = old[mid], new.get(mid)
        if now is None:
            changes.append({"memory": mid, "change": "removed", "before": was.text})
        elif now.text != was.text:
            changes.append({"memory": mid, "change": "rewritten", "before": was.text, "after": now.text})
        elif deactivation and was.active and not now.active:
            changes.append({"memory": mid, "change": "deactivated", "before": was.text})
        elif _retimed(was.timestamp, now.timestamp):
            changes.append({"memory": mid, "change": "retimed", "before": was.timestamp, "after": now.timestamp})
    for mid in sorted(set(new) - set(old) - touched):
        text = new[mid].text
        changes.append({"memory": mid, "change": "duplicate" if text in old_texts else "added", "after": text})
    if not changes:
        return None
    order = list(_CHANGE_KIND)
    worst = min(changes, key=lambda c: order.index(c["change"]))["change"]
    kind = _CHANGE_KIND[worst]
    ids = tuple(c["memory"] for c in changes if c["change"] == worst)
    what = ", ".join(f"{c['memory']} {c['change']}" for c in changes[:4]) + (" ..." if len(changes) > 4 else "")
    verb = {o.op for o in ops}
    return Finding(kind, ids, tuple(changes), f"the {'/'.join(sorted(verb))} changed more than it asked: {what}")


def _instant(stamp: str) -> datetime | str:
    """An ISO 8601 timestamp as an aware time (naive ones read as UTC), anything else as its stripped text."""
    text = stamp.strip()
    try:
        return utc_time(text)
    except ValueError:
        return text


def _retimed(before: str, after: str) -> bool:
    """Both listings give a time for the memory, and not the same one."""
    if not before.strip() or not after.strip():
        return False
    a, b = _instant(before), _instant(after)
    return type(a) is not type(b) or a != b
