"""An invalidated memory (superseded, deleted, a decoy) ranked above every supporting one — also when no
supporting one made the top-k: the same defect as one ranked just above it (an update's stale copy at rank 3 with
its replacement at rank 5 or at rank 6), so the same kind, cause and class."""

from __future__ import annotations

from ufuzz.oracles.checks.base import Check, Selected


class StaleRankedAboveValid(Check):
    name = "stale_ranked_above_valid"
    level = "selection"
    order = 30

    def could_fail(self, reference, deleted, threshold) -> bool:
        return not reference.abstain

    def find(self, seen: Selected) -> tuple[str, ...] | None:
        if seen.reference.abstain:
            return None
        return tuple(seen.above) or None
