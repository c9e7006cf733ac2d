"""For an abstaining reference, an invalidated memory returned at or above the backend's *own* relevance
threshold. Only where the backend declares one: without it nothing tells a retrieved memory from a returned
candidate."""

from __future__ import annotations

from ufuzz.oracles.checks.base import Check, Selected


class UnsupportedRetrieved(Check):
    name = "unsupported_retrieved"
    level = "selection"
    order = 40

    def could_fail(self, reference, deleted, threshold) -> bool:
        return reference.abstain and threshold is not None

    def find(self, seen: Selected) -> tuple[str, ...] | None:
        if not seen.reference.abstain or seen.threshold is None:
            return None
        return tuple(i for i in seen.top if i in seen.invalid) or None
