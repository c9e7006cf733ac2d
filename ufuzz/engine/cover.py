"""A greedy cover order of seeds by the memories they are expected to reach — AFL's favoured entries for a
memory fuzzer.

On a suite with more seeds than a campaign can start, the order in which phase 1 starts seeds decides what
memory the campaign ever looks at. Each seed names the checkpoint memories its obligations are expected to
reach — the evidence of the fact it asks about and of the facts its replacement targets ask about, taken from
the checkpoint's provenance (never from a reference, a verdict or a retrieval result). The order puts first the
seed that adds most not-yet-expected memories (ties: the checkpoint started least often, then the shuffled
order), so the first seeds between them reach as much of the memory as any seeds could; once every remaining
seed adds nothing new, a new round of cover starts over the remaining seeds, so the order keeps spreading.

The greedy step is the classic (1 - 1/e)-approximation of maximum coverage, computed lazily (a seed's gain
only shrinks as memories are covered, so a stale gain on top of the heap is an upper bound).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Hashable, Sequence

from ufuzz.model import Checkpoint, Seed

__all__ = ["cover_order", "expected_reach"]


def cover_order(items: Sequence[tuple[Hashable, str, frozenset[str]]]) -> list[Hashable]:
    """``items`` (key, group, expected reach) in greedy cover order: every key exactly once. ``items`` come in
    the tie-breaking order (the caller shuffles them with its seeded rng), ``group`` is the checkpoint."""
    remaining = list(range(len(items)))
    order: list[Hashable] = []
    started: Counter[str] = Counter()
    while remaining:
        picked = _one_round(items, remaining, started)
        order.extend(items[i][0] for i in picked)
        taken = set(picked)
        remaining = [i for i in remaining if i not in taken]
    return order


def _one_round(items: Sequence[tuple[Hashable, str, frozenset[str]]], candidates: list[int],
               started: Counter[str]) -> list[int]:
    """One round of greedy cover over ``candidates``: the seeds picked while one still added a new memory
    (at least one seed, so every round makes progress)."""
    covered: set[str] = set()
    # heap entries: (-gain, times the group was started, position, index); stale gains are re-evaluated on top
    heap = [(-len(items[i][2]), started[items[i][1]], pos, i) for pos, i in enumerate(candidates)]
    heapq.heapify(heap)
    picked: list[int] = []
    while heap:
        neg, group_starts, pos, i = heapq.heappop(heap)
        gain = len(items[i][2] - covered)
        now = started[items[i][1]]
        if gain != -neg or now != group_starts:  # stale: put back with its current gain and group count
            heapq.heappush(heap, (-gain, now, pos, i))
            continue
        if gain == 0:
            if picked:
                break
            # no candidate expects to reach anything: all of them, fewest-started checkpoint first
            rest = sorted(heap, key=lambda e: (started[items[e[3]][1]], e[2]))
            return [i, *(e[3] for e in rest)]
        picked.append(i)
        covered |= items[i][2]
        started[items[i][1]] += 1
    return picked


def expected_reach(seed: Seed, checkpoint: Checkpoint) -> frozenset[str]:
    """The checkpoint memories a seed's obligations are expected to reach: the evidence, by the checkpoint's
    provenance, of the fact the seed asks about and of the facts its replacement targets ask about (another
    entity with the same attribute, another attribute of the same entity). Ids are qualified by the checkpoint
    (``cp/memory``), so seeds of different checkpoints never share one."""
    f = seed.query.fields
    targets = {(f.entity, f.attribute)}
    targets.update((e, f.attribute) for e in seed.descriptor.replacement_targets.get("entity", ()))
    targets.update((f.entity, a) for a in seed.descriptor.replacement_targets.get("attribute", ()))
    return frozenset(f"{checkpoint.id}/{m}" for fact in checkpoint.facts if (fact.entity, fact.attribute) in targets
                     for m in fact.evidence)
