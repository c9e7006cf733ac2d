"""The batch: how many tasks the scheduler draws before it sees their results (``--batch``).

A batch never waits on a result of its own, so lanes (``--workers``, ``--max-concurrency``, Ray) can run its tasks
at once; the campaign applies the results in task order. Which tasks a batch holds decides which results the
scheduler has seen when it draws the next, so the batch is part of the schedule — like ``--seed`` — and the
lanes are not: the same seed and batch give the same campaign at any concurrency, and a nightly run with 16 calls
in flight finds the failures a developer's run at 1 finds when both give ``--batch``. Not given, the batch is 1
where nothing could run beside a task (one lane: step by step, the scheduler sees every result before it draws
again) and 128 where lanes or concurrency could (:func:`default_batch`). Two batches are in flight at most (the lanes work on
batch k+1 while batch k is applied), so concurrency beyond twice the batch waits.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_BATCH", "MAX_BATCH", "SERIAL_BATCH", "batch_size", "default_batch", "legacy_batch"]

#: 128: on every suite measured a larger batch finds as much as 64 (mean over 5 runs, ``--batch 64`` against 128, on
#: 2026-12-06: shipped suite at 2,000 executions 176.0 / 106.0 against 176.2 / 106.6 unique failures / causes;
#: LoCoMo dev at 1,000 8.6 against 10.0 causes; LongMemEval subset 7.2 and 7.2; the shipped suite over HTTP, 3 runs,
#: 112.3 against 116.7) while it keeps the lanes of a latency-bound campaign busy while one batch is applied: an
#: HTTP product at 20 ms a call gets 11.6x over one lane at 16 calls in flight with 128, 6.7x with 64
#: (benchmarks/bench_latency.py --http-budget 2000)
DEFAULT_BATCH = 128

#: the default of a campaign that makes one call at a time (one lane, no concurrency, no Ray): nothing runs while
#: a batch waits, so a batch only delays what the scheduler learns. Measured late on 2026-12-06 with the scheduler's
#: warm-up, at the same speed: the shipped suite at 2,000 (3 runs) full 107.0 causes at 1 against 99.3 at 128;
#: LoCoMo dev at 1,000, 20 runs, 9.9 against 9.6-9.7 (query-only 9.5); the LongMemEval subset, 5 runs, 6.0 against
#: 6.4 (within a run's spread, 1.0)
SERIAL_BATCH = 1

#: the largest ``--batch``
MAX_BATCH = 4096

#: tasks per lane in a batch before ``--batch`` existed (one task with one lane)
LEGACY_TASKS_PER_LANE = 4


def default_batch(workers: int, max_concurrency: int, ray_address: str | None = None) -> int:
    """The batch of a campaign that does not say (``--batch`` not given): :data:`SERIAL_BATCH` when it makes one
    call at a time, else :data:`DEFAULT_BATCH`, which keeps many lanes busy. Recorded with the campaign, so a resume
    and ``--match-baseline`` keep it; give ``--batch`` to make runs with other lanes the same campaign."""
    return SERIAL_BATCH if _lanes(workers, max_concurrency) == 1 and not ray_address else DEFAULT_BATCH


def _lanes(workers: Any, max_concurrency: Any) -> int:
    """Calls a campaign can have in flight: its process lanes times the thread lanes of each."""
    return max(1, int(workers or 1)) * max(1, int(max_concurrency or 1))


def batch_size(config: Any) -> int:
    """Tasks per batch of a campaign: its ``--batch``, whatever its lanes."""
    return max(1, int(getattr(config, "batch", 1) or 1))


def legacy_batch(config: dict[str, Any]) -> int:
    """The batch of a campaign recorded (``config``: its stored settings) before ``--batch`` existed: one task with
    one lane, else four per lane — so that resuming it keeps its batches (this version's other rules apply)."""
    lanes = _lanes(config.get("workers", 1), config.get("max_concurrency", 1))
    return 1 if lanes <= 1 else min(MAX_BATCH, lanes * LEGACY_TASKS_PER_LANE)
