"""What a campaign reports about itself: its :class:`~ufuzz.corpus.summary.CampaignSummary`, made here only.

The store counts what a campaign recorded (:meth:`ufuzz.corpus.store.CorpusStore.counted`); this adds what only
the campaign's process knows — its scheduler's obligations, the failures in discovery order, its LLM use, its
backend worker, its lanes — so ``summary.json`` and the summary ``Campaign.run`` returns are one record, built
from the counters of the last commit when the campaign ends (a record never counts work that was not kept).
"""

from __future__ import annotations

from typing import Any

from ufuzz.corpus.summary import CampaignSummary
from ufuzz.engine import ending
from ufuzz.engine.llmuse import llm_summary
from ufuzz.engine.state import Progress

__all__ = ["summarise"]


def summarise(campaign: Any, status: str, *, progress: Progress | None = None,
              found: int | None = None) -> CampaignSummary:
    """The summary of ``campaign`` (a :class:`ufuzz.engine.campaign.Campaign`) as it ended (``status``), with the
    counters of ``progress`` and the first ``found`` failures of its log (default: the current ones)."""
    c = campaign
    p, sched, cfg = progress or c.progress, c.scheduler, c.config
    log = c.failure_log if found is None else c.failure_log[:found]
    by_op: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    for _, f in log:
        by_op[f.operator] = by_op.get(f.operator, 0) + 1
        by_kind[f"{f.stage}:{f.kind}"] = by_kind.get(f"{f.stage}:{f.kind}", 0) + 1
    stats = getattr(c.backend, "stats", None)
    return CampaignSummary(
        campaign=c.campaign_id, status=status, message=c.message,
        exit_code=ending.INTERNAL_ERROR if c.internal and status == ending.ERROR else ending.EXIT_CODES.get(status),
        executions=p.executions, budget=p.budget, mutants_valid=p.mutants_valid,
        mutants_rejected=p.mutants_rejected, mutants_unjudged=p.mutants_unjudged, retained=p.retained,
        readbacks={"read": p.readbacks, "inconclusive": p.readbacks_inconclusive}
        if (c.judging or {}).get("readback") else None,
        coverage=p.coverage, coverage_total=p.coverage_total,
        obligations=len(sched.obligations) if sched is not None else 0,
        # seed obligations covered (a phase-2 pick also covers its own seed x operator x target, counted only
        # when that is one of the seeds' obligations)
        obligations_covered=len(sched.covered & sched.obligations) if sched is not None else 0,
        unique_failures=len(log), causes=p.causes, failures_by_operator=by_op, failures_by_kind=by_kind,
        baseline_failures=p.baseline_failures, reader_failures=p.reader_failures, judging=c.judging,
        errors=p.errors, resumed_from_step=c.resumed_from,
        llm=llm_summary(c.llm, c.steps.lane_llm if c.steps else {}, cfg.llm_price),
        worker=stats.to_dict() if stats is not None and hasattr(stats, "to_dict") else None,
        workers=cfg.workers, ray_address=cfg.ray_address,
        search=({True: "spread", False: "walk"}.get(sched.config.spread, "auto")) if sched is not None else None,
        lanes_lost_jobs=c.lanes.lost if c.lanes is not None else 0,
        failures=sorted(f.key for _, f in log),
        # the benchmark's own accuracy on the seeds (imported LongMemEval/LoCoMo), beside the findings
        benchmark_accuracy=c.oracle.benchmark_accuracy() if c.oracle is not None else {},
    ).finished()
