"""The response states an out-of-date or deleted value (one of the reference's stale answers), blamed on the
retrieved memories that carry it (the top-ranked one when none does)."""

from __future__ import annotations

from ufuzz.oracles.checks.base import Check, Responded


class StaleAnswer(Check):
    name = "stale_answer"
    level = "response"
    order = 20

    def could_fail(self, reference, deleted, threshold) -> bool:
        return bool(reference.stale_answers)

    def find(self, seen: Responded) -> tuple[str, ...] | None:
        if seen.passed or not seen.stale:
            return None
        return seen.carriers or seen.top1
