"""An answer that is neither the reference's (or an alias) nor an abstention nor a stale value, blamed on the
top-ranked memory."""

from __future__ import annotations

from ufuzz.oracles.checks.base import Check, Responded


class WrongAnswer(Check):
    name = "wrong_answer"
    level = "response"
    order = 40

    def could_fail(self, reference, deleted, threshold) -> bool:
        return not reference.abstain

    def find(self, seen: Responded) -> tuple[str, ...] | None:
        return seen.top1 if not seen.reference.abstain and not seen.passed else None
