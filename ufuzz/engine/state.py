"""A campaign's state: everything that decides what it does next, in one place, pickled whole for a snapshot.

A snapshot (:mod:`ufuzz.engine.journal`) is this state between two batches, so that a resumed campaign goes on
exactly as the uninterrupted one would. It has two halves, each pickled whole into its own table: the search's
(:class:`SearchState`: counters, scheduler, feedback, cases, cached parent executions, the batch in flight) in
the corpus store, and the findings' (:class:`FindingsState`: the oracle's references and verdicts, the failure
tallies) in the failure store — the search never holds a failure (``tests/engine/test_separation.py``).
Backend states are not part of it: the lanes rebuild them from their recipes when first used again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ufuzz.engine.cases import CaseBook
from ufuzz.engine.feedback import FeedbackState
from ufuzz.engine.scheduler import Scheduler, Task
from ufuzz.oracles.verdict import Failure, Tally

__all__ = ["Batch", "CampaignState", "ErrorRun", "FindingsState", "Progress", "SearchState"]


@dataclass
class Progress:
    """The counters a person follows (progress line, ``plot_data.csv``, the summary)."""

    executions: int = 0
    budget: int = 0
    mutants_valid: int = 0
    mutants_rejected: int = 0
    mutants_unjudged: int = 0  # valid, not executed: none of their checks can fail on this backend
    readbacks: int = 0  # verified writes read back (ufuzz.engine.readback)
    readbacks_inconclusive: int = 0  # ... of which the comparison said nothing (the premise failed on this system)
    retained: int = 0
    coverage: int = 0
    coverage_total: int = 0
    unique_failures: int = 0
    causes: int = 0
    baseline_failures: int = 0
    reader_failures: int = 0
    errors: int = 0
    uncovered_obligations: int = 0
    phase: int = 1


@dataclass
class ErrorRun:
    """Backend errors since the last successful execution: ``--max-consecutive-errors`` counts them (checked
    between batches), an outage is
    a long one, and no snapshot is taken inside one (a resume redoes it, see :mod:`ufuzz.engine.journal`)."""

    count: int = 0
    last: str = ""  # the last error's message

    def add(self, message: str) -> None:
        self.count += 1
        self.last = message


@dataclass
class Batch:
    """Tasks drawn together and their lane jobs (:mod:`ufuzz.engine.step`). ``tickets`` are the pool's names of
    the queued jobs: they mean nothing to another process, so a snapshot leaves them out (a resumed campaign
    queues the batch again)."""

    tasks: list[tuple[Task, int]]  # (task, its step counter)
    jobs: list[Any]  # LaneJob
    tickets: list[int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "tickets": None}


@dataclass
class SearchState:
    """The search's half of the state."""

    progress: Progress
    step: int = 0  # the counter of the last task applied (names its mutant, seeds its random generator)
    drawn: int = 0  # tasks drawn from the scheduler (a batch may be drawn ahead of what was applied)
    scheduler: Scheduler | None = None
    feedback: FeedbackState | None = None
    cases: CaseBook = field(default_factory=CaseBook)
    parents: Any = None  # the executor's cached parent executions, as of the snapshot (Executor.snapshot)
    errors: ErrorRun = field(default_factory=ErrorRun)
    inflight: Batch | None = None  # drawn and queued to the lanes, not yet applied


@dataclass
class FindingsState:
    """The findings' half of the state."""

    tally: Tally = field(default_factory=Tally)  # the system's mutant failures (UF@B), causes, baseline, reader
    failure_log: list[tuple[int, Failure]] = field(default_factory=list)  # mutant failures in discovery order
    step: int = 0  # the search's step it goes with (the two halves are checked to agree)
    oracle: Any = None  # the oracle's references and verdicts, as of the snapshot (Oracle.snapshot)
    counts: Any = None  # the failure store's counters, as of the snapshot (FailureStore.counts)


@dataclass
class CampaignState:
    search: SearchState
    findings: FindingsState = field(default_factory=FindingsState)

    @classmethod
    def new(cls, budget: int) -> CampaignState:
        return cls(SearchState(Progress(budget=budget)))
