"""The batch: how many tasks the scheduler draws before it sees their results (``--batch``).

A batch never waits on a result of its own, so lanes (``--workers``, ``--max-concurrency``, Ray) can run its tasks
at once; the campaign applies the results in task order. Which tasks a batch holds decides which results the
scheduler has seen when it draws the next, so the batch is part of the schedule — like ``--seed`` — and the
lanes are not: the same seed and batch give the same campaign at any concurrency, and a nightly run with 16 calls
in flight finds the failures a developer's run at 1 finds. Two batches are in flight at most (the lanes work on
batch k+1 while batch k is applied), so concurrency beyond twice the batch waits.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_BATCH", "MAX_BATCH", "batch_size", "legacy_batch"]

#: 64 keeps the feedback near enough (a 2,000-execution campaign is some 30 batches; on the shipped suite batches
#: of 1 to 128 find as many failures) and fills 128 calls in flight; larger batches keep more lanes busy while one
#: is applied (an HTTP product at 20 ms a call: 5.7x over one lane at 16 with 32, 7.8x with 64, 9.5x with 128 —
#: benchmarks/bench_latency.py --batch, on the campaign of commit c33e6e7)
DEFAULT_BATCH = 64

#: the largest ``--batch``
MAX_BATCH = 4096

#: tasks per lane in a batch before ``--batch`` existed (one task with one lane)
LEGACY_TASKS_PER_LANE = 4


def batch_size(config: Any) -> int:
    """Tasks per batch of a campaign: its ``--batch``, whatever its lanes."""
    return max(1, int(getattr(config, "batch", 1) or 1))


def legacy_batch(config: dict[str, Any]) -> int:
    """The batch of a campaign recorded (``config``: its stored settings) before ``--batch`` existed: one task with
    one lane, else four per lane — so that resuming it keeps its batches (this version's other rules apply)."""
    lanes = int(config.get("workers", 1) or 1) * int(config.get("max_concurrency", 1) or 1)
    return 1 if lanes <= 1 else min(MAX_BATCH, lanes * LEGACY_TASKS_PER_LANE)
