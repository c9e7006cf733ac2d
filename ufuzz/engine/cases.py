"""The cases a campaign can still pick: seeds and retained mutants, bounded in memory.

A retained mutant stays pickable for the whole campaign (it is in the scheduler's pool), but a full
:class:`~ufuzz.model.FuzzCase` carries its state's provenance — every fact and memory text of its checkpoint —
so keeping each one costs memory in proportion to the checkpoint. :class:`CaseBook` keeps the seeds, and for a
retained mutant only what it changed relative to its parent (its recipe: query, ops, and the runs of its
provenance that are new); a bounded number of mutants stay materialised (least recently used first out), and an
evicted one is rebuilt from its parent on demand — equal to the original, field by field.

The book pickles without its materialised cases: a resume snapshot holds seeds and recipes only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ufuzz._util.lru import LRU
from ufuzz.model import FuzzCase, Provenance

__all__ = ["CaseBook"]

#: a tuple encoded against its parent's: ("s", start, end) slices of the parent's tuple and ("n", items) runs
#: of new items, in order
Runs = tuple[tuple[Any, ...], ...]


def _encode(child: tuple[Any, ...], parent: tuple[Any, ...]) -> Runs:
    """``child`` as slices of ``parent`` (items shared by identity) and runs of new items, in order."""
    if child is parent:
        return (("s", 0, len(parent)),)
    where = {id(x): k for k, x in enumerate(parent)}
    out: list[tuple[Any, ...]] = []
    i, n = 0, len(child)
    while i < n:
        k = where.get(id(child[i]))
        if k is not None:
            start = k
            while i < n and k < len(parent) and child[i] is parent[k]:
                i += 1
                k += 1
            out.append(("s", start, k))
        else:
            new = []
            while i < n and id(child[i]) not in where:
                new.append(child[i])
                i += 1
            out.append(("n", tuple(new)))
    return tuple(out)


def _apply(runs: Runs, parent: tuple[Any, ...]) -> tuple[Any, ...]:
    out: list[Any] = []
    for run in runs:
        if run[0] == "s":
            out.extend(parent[run[1]:run[2]])
        else:
            out.extend(run[1])
    return tuple(out)


@dataclass(frozen=True)
class _Recipe:
    """A retained mutant relative to its parent: everything but the provenance as is, the provenance's
    tuples as runs of the parent's and its memory ids as what was added and removed."""

    case: FuzzCase  # with provenance=None
    facts: Runs
    entities: Runs
    texts: Runs
    added: frozenset[str]
    removed: frozenset[str]


def _recipe(case: FuzzCase, parent: FuzzCase) -> _Recipe:
    p, q = case.provenance, parent.provenance
    return _Recipe(case=replace(case, provenance=None), facts=_encode(p.facts, q.facts),
                   entities=_encode(p.entities, q.entities), texts=_encode(p.memory_texts, q.memory_texts),
                   added=frozenset(p.memory_ids - q.memory_ids), removed=frozenset(q.memory_ids - p.memory_ids))


def _rebuild(r: _Recipe, parent: FuzzCase) -> FuzzCase:
    q = parent.provenance
    prov = Provenance(facts=_apply(r.facts, q.facts), entities=_apply(r.entities, q.entities),
                      memory_ids=(q.memory_ids - r.removed) | r.added, memory_texts=_apply(r.texts, q.memory_texts))
    return replace(r.case, provenance=prov)


class CaseBook:
    """Seeds and retained mutants by id; at most ``live`` mutants materialised at once."""

    def __init__(self, live: int = 1024) -> None:
        self._seeds: dict[str, FuzzCase] = {}
        self._recipes: dict[str, _Recipe] = {}
        self._live: LRU[str, FuzzCase] = LRU(live)
        self.rebuilt = 0

    def add_seed(self, case: FuzzCase) -> None:
        self._seeds[case.id] = case

    def retain(self, case: FuzzCase, parent: FuzzCase) -> None:
        """Keep ``case`` (a mutant of ``parent``) for later picks."""
        if case.id in self._seeds or case.id in self._recipes:
            raise ValueError(f"case {case.id!r} is already in the book")
        self._recipes[case.id] = _recipe(case, parent)
        self._live[case.id] = case

    def __getitem__(self, case_id: str) -> FuzzCase:
        seed = self._seeds.get(case_id)
        if seed is not None:
            return seed
        live = self._live.get(case_id)
        if live is not None:
            return live
        r = self._recipes[case_id]  # KeyError: not a case of this campaign
        case = _rebuild(r, self[r.case.parent_id])
        self.rebuilt += 1
        self._live[case_id] = case
        return case

    def __contains__(self, case_id: object) -> bool:
        return case_id in self._seeds or case_id in self._recipes

    def __len__(self) -> int:
        return len(self._seeds) + len(self._recipes)

    def __iter__(self):
        yield from self._seeds
        yield from self._recipes

    def values(self):
        """Every case, seeds first then mutants in the order they were retained (rebuilding evicted ones)."""
        for case_id in self:
            yield self[case_id]

    def items(self):
        for case_id in self:
            yield case_id, self[case_id]

    def seeds(self) -> list[FuzzCase]:
        return list(self._seeds.values())

    def __getstate__(self) -> dict[str, Any]:
        return {"seeds": self._seeds, "recipes": self._recipes, "live": self._live.maxsize}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._seeds = state["seeds"]
        self._recipes = state["recipes"]
        self._live = LRU(state["live"])
        self.rebuilt = 0
