"""A memory the case deleted is among the results (judged whatever the reference)."""

from __future__ import annotations

from ufuzz.oracles.checks.base import Check, Selected


class DeletedEvidenceRetrieved(Check):
    name = "deleted_evidence_retrieved"
    level = "selection"
    order = 10

    def could_fail(self, reference, deleted, threshold) -> bool:
        return bool(deleted)

    def find(self, seen: Selected) -> tuple[str, ...] | None:
        hit = tuple(i for i in seen.top if i in seen.deleted)
        return hit or None
