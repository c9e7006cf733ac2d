"""Search results identified by content as well as by id.

A product can return a memory under an id ufuzz never wrote (a shadow copy an update left behind, a version
kept under an internal id that list/get never show) or return stale text under a known id. Judged by id alone,
such a result is invisible: it shows only when it pushes the valid memory out of the top-k. So each result is
identified against the memories of *this case's* lineage (the checkpoint and every operation of its recipe):

* its text is the current text of the memory its id names: it is that memory (the common case, no work);
* otherwise its exact-normalised text (:func:`ufuzz.oracles.matching.normalize`: case, accents, punctuation and
  spacing only) is the current text of a live memory of the case: it is that memory (its own id first where
  several share the text; an ambiguous match keeps the id);
* otherwise the text is that of a memory the case deleted: it is that deleted memory;
* otherwise the text is one an in-place update overwrote: it is ``<id>@overwritten``
  (:data:`ufuzz.model.execution.OVERWRITTEN`), judged as invalidated where the memory matters to the question;
* otherwise it keeps the id the backend gave (a product id no case memory has: shown as unknown).

The rule is strict on purpose: no similarity, no containment, so a match can never invent a failure. The
product's own id stays in ``Execution.native_ids``, which triage shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ufuzz.backends.protocol import Retrieved
from ufuzz.lru import LRU
from ufuzz.model import Checkpoint, FuzzCase
from ufuzz.model.execution import OVERWRITTEN
from ufuzz.oracles.matching import normalize

__all__ = ["Identities", "identify"]


@dataclass(frozen=True)
class Identities:
    """What a case's lineage holds, by normalised text: live memories, deleted ones, overwritten versions."""

    live: dict[str, tuple[str, ...]]
    deleted: dict[str, tuple[str, ...]]
    overwritten: dict[str, tuple[str, ...]]

    @classmethod
    def of(cls, case: FuzzCase, checkpoint: Checkpoint | None) -> Identities:
        current = dict(case.provenance.memory_texts)
        history: list[tuple[str, str]] = [(m.id, m.text) for m in (checkpoint.memories if checkpoint else ())]
        gone: set[str] = set()
        for op in case.ops:
            if op.op == "delete" and op.target:
                gone.add(op.target)
            elif op.memory is not None:
                history.append((op.memory.id, op.memory.text))
                if op.op == "update" and op.target and op.memory.id not in current:
                    history.append((op.target, op.memory.text))  # rewritten in place: the target holds it now
        live: dict[str, list[str]] = {}
        for mid, text in current.items():
            live.setdefault(normalize(text), []).append(mid)
        deleted: dict[str, list[str]] = {}
        overwritten: dict[str, list[str]] = {}
        for mid, text in history:
            norm = normalize(text)
            if not norm or norm in live:
                continue
            if mid in gone:
                deleted.setdefault(norm, []).append(mid)
            elif mid in current and normalize(current[mid]) != norm:
                overwritten.setdefault(norm, []).append(mid + OVERWRITTEN)
        freeze = lambda d: {k: tuple(sorted(set(v))) for k, v in d.items()}  # noqa: E731
        return cls(freeze(live), freeze(deleted), freeze(overwritten))

    def which(self, rid: str, text: str) -> str:
        norm = normalize(text)
        if not norm:
            return rid
        for table in (self.live, self.deleted, self.overwritten):
            ids = table.get(norm)
            if ids:
                if rid in ids or rid + OVERWRITTEN in ids:
                    return rid if rid in ids else rid + OVERWRITTEN
                return ids[0] if len(ids) == 1 else rid
        return rid


def identify(case: FuzzCase, got: Sequence[Retrieved], checkpoint: Checkpoint | None,
             cache: LRU[str, Identities] | None = None) -> list[str] | None:
    """The case memory each result is (see the module docstring), or None when every result is the memory its
    id names with that memory's current text (nothing to change). ``cache`` keeps the lineages by state key
    (one executor's: a state key names one recipe of one checkpoint)."""
    current = dict(case.provenance.memory_texts)
    if all(current.get(r.id) == r.text for r in got):
        return None
    ident = cache.get(case.state_key) if cache is not None else None
    if ident is None:
        ident = Identities.of(case, checkpoint)
        if cache is not None:
            cache[case.state_key] = ident
    ids = [ident.which(r.id, r.text) if current.get(r.id) != r.text else r.id for r in got]
    return ids if ids != [r.id for r in got] else None
