"""The system abstained where the reference has an answer."""

from __future__ import annotations

from ufuzz.oracles.checks.base import Check, Responded


class FalseAbstention(Check):
    name = "false_abstention"
    level = "response"
    order = 10

    def could_fail(self, reference, deleted, threshold) -> bool:
        return not reference.abstain

    def find(self, seen: Responded) -> tuple[str, ...] | None:
        return () if not seen.reference.abstain and seen.abstained and not seen.passed else None
