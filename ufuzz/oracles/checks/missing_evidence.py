"""An answerable question with no supporting memory among the results, and no invalidated one either (an
invalidated memory retrieved instead is :mod:`~ufuzz.oracles.checks.stale_ranked`)."""

from __future__ import annotations

from ufuzz.oracles.checks.base import Check, Selected


class MissingEvidence(Check):
    name = "missing_evidence"
    level = "selection"
    order = 20

    def could_fail(self, reference, deleted, threshold) -> bool:
        return not reference.abstain

    def find(self, seen: Selected) -> tuple[str, ...] | None:
        if seen.reference.abstain or seen.support or seen.above:
            return None
        return ()
