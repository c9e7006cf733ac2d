"""Search results identified by content as well as by id.

A product can return a memory under an id ufuzz never wrote (a shadow copy an update left behind, a version
kept under an internal id that list/get never show) or return text under an id that never held it. Judged by
id alone, such a result is invisible: it shows only when it pushes the valid memory out of the top-k. So each
result is identified against the memories of *this case*:

* its text is the one the case's recipe (the checkpoint, then every operation) gave the memory its id names
  last: it is that memory (the common case: no work, no request);
* otherwise, with the state's listing (``list()``, the management API, cached per state): its exact-normalised
  text (:func:`ufuzz.oracles.matching.normalize`: case, accents, punctuation and spacing only) is the current
  text of a listed memory: it is that memory (its own id first where several share the text; an ambiguous match
  keeps the id);
* otherwise the text is that of a memory the recipe deleted: it is that deleted memory;
* otherwise the text is one a later update replaced (the memory is listed with another text now — also under
  the memory's own id: a product that rewrites in place and still searches the old wording): it is
  ``<id>@overwritten`` (:data:`ufuzz.model.execution.OVERWRITTEN`), invalidated evidence where the memory
  matters to the question (an append-policy backend lists the superseded memory with its old text: it stays
  that memory);
* otherwise it keeps the id the backend gave (a product id no case memory has: shown as unknown).

The rule is strict on purpose: no similarity, no containment, so a match can never invent a failure. The
product's own id stays in ``Execution.native_ids``, which triage shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ufuzz.backends.protocol import Retrieved, StoredMemory
from ufuzz.model import Checkpoint, FuzzCase
from ufuzz.model.execution import OVERWRITTEN
from ufuzz.oracles.matching import normalize

__all__ = ["Lineage", "distinct", "identify"]


@dataclass(frozen=True)
class Lineage:
    """Every text the recipe gave each memory id, and the ids it deleted."""

    texts: dict[str, tuple[str, ...]]  # id -> the texts it held or may hold, in recipe order
    deleted: frozenset[str]

    @classmethod
    def of(cls, case: FuzzCase, checkpoint: Checkpoint | None) -> Lineage:
        texts: dict[str, list[str]] = {m.id: [m.text] for m in (checkpoint.memories if checkpoint else ())}
        deleted: set[str] = set()
        for op in case.ops:
            if op.op == "delete" and op.target:
                deleted.add(op.target)
            elif op.memory is not None:
                texts.setdefault(op.memory.id, []).append(op.memory.text)
                deleted.discard(op.memory.id)
                if op.op == "update" and op.target:  # a backend that rewrites in place holds it under the target
                    texts.setdefault(op.target, []).append(op.memory.text)
        return cls({k: tuple(v) for k, v in texts.items()}, frozenset(deleted))

    def holds(self, r: Retrieved) -> bool:
        """Whether the result carries the text the recipe gave its id last (its current text)."""
        texts = self.texts.get(r.id, ())
        return bool(texts) and r.text == texts[-1]

    def which(self, r: Retrieved, listed: Sequence[StoredMemory]) -> str:
        norm = normalize(r.text)
        if not norm:
            return r.id
        texts = self.texts.get(r.id, ())
        if texts and normalize(texts[-1]) == norm and r.id not in self.deleted:
            return r.id
        live = sorted({m.id for m in listed if normalize(m.text) == norm})
        if live:
            return r.id if r.id in live else (live[0] if len(live) == 1 else r.id)
        gone = sorted(i for i in self.deleted if any(normalize(t) == norm for t in self.texts.get(i, ())))
        if gone:
            return r.id if r.id in gone else (gone[0] if len(gone) == 1 else r.id)
        now = {m.id: m.text for m in listed}
        old = sorted(i for i, ts in self.texts.items() if i in now and normalize(now[i]) != norm
                     and any(normalize(t) == norm for t in ts))
        if len(old) == 1:
            return old[0] + OVERWRITTEN
        return r.id


def identify(case: FuzzCase, got: Sequence[Retrieved], checkpoint: Checkpoint | None,
             listing: Callable[[], Sequence[StoredMemory]]) -> list[str] | None:
    """The case memory each result is (see the module docstring), or None when every result carries a text its
    id was given (nothing to change, and ``listing`` — the state's list(), called only if needed — not called)."""
    lineage = Lineage.of(case, checkpoint)
    if all(lineage.holds(r) for r in got):
        return None
    listed = listing()
    ids = [r.id if lineage.holds(r) else lineage.which(r, listed) for r in got]
    return ids if ids != [r.id for r in got] else None


def distinct(ids: Sequence[str]) -> list[str]:
    """``ids`` with every repeat renamed ``<id>#<n>`` (an id nothing is named): a product that returns one memory
    twice, or two old versions of one memory, still gives a ranking of distinct items — the first occurrence is
    judged; what it means for coverage and RBO is what it means for the top-k."""
    seen: dict[str, int] = {}
    out = []
    for i in ids:
        seen[i] = seen.get(i, 0) + 1
        out.append(i if seen[i] == 1 else f"{i}#{seen[i]}")
    return out
