"""What a campaign may spend, in one place: executions (``--budget``), wall time (``--max-time``), LLM tokens
(``--max-llm-tokens``) and backend errors in a row (``--max-consecutive-errors``), and how running out of each
ends the campaign (:mod:`ufuzz.engine.ending`).

Budget: the number of executions of U(q, M) on the backend — every retrieval (+ response) of a parent or a
mutant counts one. Cached parent executions are not re-run and not re-counted; mutants that their validator
rejects are never executed and not counted (they are recorded as rejected).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ufuzz.engine import ending
from ufuzz.engine.state import ErrorRun, Progress

__all__ = ["OUTAGE_RUN", "Budget", "End"]

#: backend errors in a row at the end of a budget that make it an outage (an error end) even with
#: ``--max-consecutive-errors 0`` (the default limit, which would have stopped the campaign there)
OUTAGE_RUN = 20


@dataclass(frozen=True)
class End:
    """Why a campaign ends (a reason of :mod:`ufuzz.engine.ending`) and, where it needs one, the message."""

    reason: str
    message: str | None = None


class Budget:
    """The campaign's limits, checked between batches (:meth:`check`) and once more as it ends
    (:meth:`final`)."""

    def __init__(self, executions: int, *, max_time: float | None = None, max_llm_tokens: int | None = None,
                 max_consecutive_errors: int = 0) -> None:
        self.executions = executions
        self.max_time = max_time
        self.max_llm_tokens = max_llm_tokens
        self.max_consecutive_errors = max_consecutive_errors
        self._deadline: float | None = None

    @classmethod
    def of(cls, config: Any) -> Budget:
        """The limits a :class:`ufuzz.engine.config.CampaignConfig` sets."""
        return cls(config.budget, max_time=config.max_time, max_llm_tokens=config.max_llm_tokens,
                   max_consecutive_errors=config.max_consecutive_errors)

    def start(self) -> None:
        """The wall-time limit counts from now (the run's start, set-up included)."""
        if self.max_time is not None:
            self._deadline = time.monotonic() + self.max_time

    def spent(self, progress: Progress) -> bool:
        """Every execution of the budget is spent: a task applied now could not execute anything."""
        return progress.executions >= self.executions

    def left(self, progress: Progress, ahead: int = 0) -> int:
        """Executions left beyond ``ahead`` ones already promised (tasks in flight); none when those cover it."""
        return max(0, self.executions - progress.executions - ahead)

    def check(self, progress: Progress, llm_tokens: int | None, stop: bool) -> End | None:
        """Why the campaign must end before its next batch (budget, LLM tokens, Ctrl-C, time limit), or None.
        ``llm_tokens``: the tokens used so far (None without an LLM); ``stop``: a Ctrl-C or SIGTERM came."""
        if self.spent(progress):
            return End(ending.BUDGET_SPENT)
        limit = self.max_llm_tokens
        if limit is not None and llm_tokens is not None and llm_tokens >= limit:
            return End(ending.LLM_BUDGET_SPENT,
                       f"{llm_tokens} LLM tokens used, the --max-llm-tokens budget of {limit} (the calls in flight "
                       "when it was reached finished first)")
        if stop:
            return End(ending.INTERRUPTED)
        if self._deadline is not None and time.monotonic() >= self._deadline:
            return End(ending.TIME_LIMIT)
        return None

    def errors(self, run: ErrorRun) -> End | None:
        """``--max-consecutive-errors`` backend errors in a row: the campaign ends as an error, saying why."""
        limit = self.max_consecutive_errors
        if not (limit and run.count >= limit):
            return None
        return End(ending.ERROR, f"{run.count} backend errors in a row (--max-consecutive-errors {limit}); "
                                 f"the last: {run.last}")

    def final(self, end: End, progress: Progress, run: ErrorRun) -> End:
        """How a campaign that ran to ``end`` really ended: a budget spent in an outage, or runs that were all
        backend errors, tested nothing — an error end, saying why."""
        reason, message = end.reason, end.message
        if reason == ending.BUDGET_SPENT and not self.max_consecutive_errors and run.count >= OUTAGE_RUN:
            # --max-consecutive-errors 0 goes on through an outage, but a budget that ran out in one is not a
            # campaign that ended well: its last executions tested nothing
            reason = ending.ERROR
            message = (f"the budget ran out in an outage: the last {run.count} executions were backend errors in "
                       f"a row (--max-consecutive-errors 0); the last: {run.last}")
        if reason != ending.INTERRUPTED and progress.executions and progress.errors >= progress.executions:
            reason = ending.ERROR  # it ran, but nothing of it was a test
            message = message or (f"every one of the {progress.executions} executions was a backend error: the "
                                  f"backend is unreachable or broken; the last: {run.last}")
        return End(reason, message)
