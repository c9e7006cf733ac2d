"""A factual answer where the reference abstains (the memory cannot support the question)."""

from __future__ import annotations

from ufuzz.oracles.checks.base import Check, Responded


class UnsupportedAnswer(Check):
    name = "unsupported_answer"
    level = "response"
    order = 30

    def could_fail(self, reference, deleted, threshold) -> bool:
        return reference.abstain

    def find(self, seen: Responded) -> tuple[str, ...] | None:
        return seen.top1 if seen.reference.abstain and not seen.passed else None
