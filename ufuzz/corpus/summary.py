"""A campaign's summary as one typed, versioned record (:class:`CampaignSummary`).

Two places summarise a campaign: the campaign itself as it ends (``summary.json``, what only its process knew:
its LLM usage, its backend worker, how phase 1 ran) and the corpus store, which counts what a campaign recorded
(``ufuzz status``, reports, benchmarks). Both make a :class:`CampaignSummary`; each fills what it knows and
leaves the rest None. :meth:`CampaignSummary.to_json` is ``summary.json``'s shape and
:meth:`CampaignSummary.counts` the store's, so the fields readers rely on keep their names and meaning.

``version`` (:data:`SUMMARY_VERSION`) names the shape of ``summary.json``: 1 was unversioned (status finished |
interrupted); 2 added ``version``, ``reason`` and ``message`` and the exit reasons of :mod:`ufuzz.engine.ending`.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

__all__ = ["SUMMARY_VERSION", "CampaignSummary"]

SUMMARY_VERSION = 2

#: fields only the store counts (not in summary.json)
_COUNTED = ("parent_executions", "control_executions", "failed_executions", "coverage_extra")
#: fields only the returned summary has (written after summary.json: what went wrong while closing)
_RETURNED = ("warnings",)


@dataclass
class CampaignSummary:
    campaign: str | None
    status: str
    executions: int = 0
    mutants_valid: int = 0
    mutants_rejected: int = 0
    retained: int = 0
    coverage: int = 0  # checkpoint memories reached in some top-k of a successful execution
    coverage_total: int = 0  # memories of the campaign's checkpoints
    errors: int = 0
    # -- what the campaign knows as it ends (summary.json) ------------------------------------------------------
    version: int = SUMMARY_VERSION
    message: str | None = None  # why, for an error
    exit_code: int | None = None
    budget: int | None = None
    mutants_unjudged: int = 0  # valid, not executed: none of their checks can fail on this backend
    # verified writes read back and how many of them the comparison said nothing about (ufuzz.engine.readback)
    readbacks: dict[str, int] | None = None
    obligations: int = 0
    obligations_covered: int = 0  # seed obligations covered
    unique_failures: int = 0
    causes: int = 0
    failures_by_operator: dict[str, int] = field(default_factory=dict)
    failures_by_kind: dict[str, int] = field(default_factory=dict)
    baseline_failures: int = 0
    reader_failures: int = 0
    judging: dict[str, Any] | None = None  # which levels are judged, with what
    resumed_from_step: int | None = None
    finished_at: str | None = None
    llm: dict[str, Any] | None = None  # LLM calls, tokens and the estimated cost
    worker: dict[str, Any] | None = None  # the backend worker's restarts and recycles
    workers: int = 1
    ray_address: str | None = None
    search: str | None = None  # how phase 1 ran: walk or spread
    lanes_lost_jobs: int = 0
    failures: list[str] = field(default_factory=list)  # the unique failures' keys
    benchmark_accuracy: dict[str, Any] = field(default_factory=dict)  # the benchmark's own judging of the seeds
    warnings: list[str] = field(default_factory=list)
    # -- what only the store counts ----------------------------------------------------------------------------
    parent_executions: int | None = None
    #: of the parent executions, controls: a mutant's question on its checkpoint's own state, asked by the oracle
    #: before a state change is blamed for what those words miss there too (ufuzz.oracles.oracle)
    control_executions: int | None = None
    failed_executions: int | None = None
    coverage_extra: int | None = None  # ids reached that no checkpoint has (memories state mutants added)

    @property
    def reason(self) -> str:
        """How the campaign ended (the same as ``status``; summary.json has both names)."""
        return self.status

    def finished(self) -> CampaignSummary:
        """This summary, stamped with the time it is written."""
        self.finished_at = time.strftime("%Y-%m-%dT%H:%M:%S")
        return self

    def to_json(self) -> dict[str, Any]:
        """``summary.json``'s fields."""
        out = {k: v for k, v in asdict(self).items() if k not in _COUNTED and k not in _RETURNED}
        out["reason"] = self.status
        return out

    def returned(self) -> dict[str, Any]:
        """What ``Campaign.run`` returns: ``summary.json``'s fields and the warnings of its end."""
        return {**self.to_json(), "warnings": list(self.warnings)}

    def counts(self) -> dict[str, Any]:
        """The store's counts (``ufuzz status``, reports): executions by kind, mutants, coverage as reached of
        total with its ratio and the extra ids, errors."""
        parents = self.parent_executions or 0
        return {
            "campaign": self.campaign, "status": self.status, "executions": self.executions,
            "parent_executions": parents - (self.control_executions or 0),
            "control_executions": self.control_executions or 0, "mutant_executions": self.executions - parents,
            "failed_executions": self.failed_executions or 0,
            "mutants": {"valid": self.mutants_valid, "rejected": self.mutants_rejected,
                        "total": self.mutants_valid + self.mutants_rejected},
            "retained": self.retained,
            "coverage": {"reached": self.coverage, "total": self.coverage_total,
                         "ratio": self.coverage / self.coverage_total if self.coverage_total else 0.0,
                         "extra": self.coverage_extra or 0},
            "errors": self.errors,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CampaignSummary:
        """A summary as :meth:`to_json` wrote it (any version: fields it lacks keep their defaults, fields this
        version does not know are ignored). ValueError when it is not a summary."""
        if not isinstance(data, dict) or "status" not in data:
            raise ValueError("not a campaign summary (no status)")
        known = {f.name for f in fields(cls)} - set(_COUNTED)
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def read(cls, path: Path) -> CampaignSummary | None:
        """The summary in ``path`` (a ``summary.json``), or None when it is missing or not one."""
        try:
            return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None
