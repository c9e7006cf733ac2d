"""Checking a regression corpus: replay every record on a fresh backend and classify it.

``reproduced`` (parent passes, mutant fails with the same kind, stage and failure key), ``fixed`` (the mutant now
passes), ``changed`` (it fails differently, or the same way on other offending memories), ``parent_broken``
(the parent no longer passes its own reference) or ``error`` (a backend fault). The corpus format itself is
:mod:`ufuzz.corpus.regression`; the replay of one pair is :func:`ufuzz.engine.replay.replay_pair`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ufuzz.backends.protocol import BackendError
from ufuzz.corpus.regression import STATUSES, RegressionCorpus, RegressionRecord, load_corpus
from ufuzz.engine.replay import fresh_backend, replay_pair

__all__ = ["CheckResult", "CheckReport", "check_corpus"]



@dataclass(frozen=True)
class CheckResult:
    line: int
    failure_key: str
    case_id: str
    parent_id: str
    operator: str
    kind: str  # expected
    stage: str
    status: str  # one of STATUSES
    reason: str
    got_kind: str | None = None
    got_stage: str | None = None


@dataclass
class CheckReport:
    path: str
    backend: str
    backend_options: dict[str, Any]
    results: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. how the fresh backend differs from the recorded one
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        c = Counter(r.status for r in self.results)
        return {s: c.get(s, 0) for s in STATUSES}

    @property
    def ok(self) -> bool:
        return all(r.status == "reproduced" for r in self.results)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.path, "backend": self.backend, "backend_options": self.backend_options,
                "counts": self.counts(), "total": len(self.results), "ok": self.ok, "notes": self.notes,
                "seconds": self.seconds, "results": [asdict(r) for r in self.results]}


def _classify(res: Any) -> tuple[str, str]:
    """(status, reason) of a :class:`ufuzz.engine.replay.ReplayResult`."""
    if res.status == "reproduced":
        if res.same_key:
            return "reproduced", "parent passes, mutant fails the same way"
        return "changed", "same kind and stage, but other offending memories (failure key differs)"
    if res.status in ("fixed", "changed", "parent_broken"):
        return res.status, res.reason
    return "error", res.reason


def _differences(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    out = []
    for key in sorted(set(recorded) | set(now)):
        if recorded.get(key) != now.get(key):
            out.append(f"{key}: recorded {json.dumps(recorded.get(key))}, now {json.dumps(now.get(key))}")
    return out


def check_corpus(corpus: RegressionCorpus | str | Path, *, backend: str | None = None,
                 options: dict[str, Any] | None = None, workdir: str | Path | None = None,
                 records: Sequence[RegressionRecord] | None = None) -> CheckReport:
    """Replay the records (default: all) of ``corpus`` on a fresh backend and classify each.

    The backend is ``backend`` (default: the header's); its options are the header's updated with
    ``options`` when it is the recorded backend, else ``options`` alone. Raises :class:`CorpusFileError`
    for a malformed file, ``KeyError`` for an unknown backend, ``BackendUnavailable``/``BackendError``/
    ``ValueError`` when the backend cannot start; faults while replaying one record make it ``error``.
    """
    rc = corpus if isinstance(corpus, RegressionCorpus) else load_corpus(corpus)
    name = backend or rc.backend
    opts = {**(rc.backend_options if name == rc.backend else {}), **(options or {})}
    todo = list(rc.records if records is None else records)
    report = CheckReport(path=str(rc.path) if rc.path else "", backend=name, backend_options=opts)
    t0 = time.perf_counter()
    with fresh_backend(name, opts, workdir, prefix="ufuzz-corpus-check-") as be:
        if name == rc.backend and isinstance(rc.header.get("backend_info"), dict):
            try:
                now = be.describe()
            except Exception:  # noqa: BLE001 - a note only; never fail the check on describe()
                now = {}
            diffs = _differences(rc.header["backend_info"], now) if now else []
            report.notes += [f"backend differs from the recorded one: {d}" for d in diffs]
        elif name != rc.backend:
            report.notes.append(f"replaying on {name!r}, the corpus was recorded on {rc.backend!r}")
        responder, context = rc.judging.build(be)
        for r in todo:
            parent, mutant = r.cases(rc.checkpoints[r.checkpoint_id], rc.descriptors.get(r.seed_id))
            try:
                res = replay_pair(be, rc.checkpoints, parent, mutant, r.parent.reference, r.mutant.reference,
                                  k=rc.k, failure_key=r.failure_key, kind=r.kind, stage=r.stage,
                                  target=r.target, seed_id=r.seed_id, operator=r.operator, responder=responder,
                                  context=context)
                status, reason = _classify(res)
                got_kind, got_stage = res.got_kind, res.got_stage
            except BackendError as exc:
                status, reason, got_kind, got_stage = "error", f"backend error: {exc}", None, None
            report.results.append(CheckResult(
                line=r.line, failure_key=r.failure_key, case_id=r.mutant.id, parent_id=r.parent.id,
                operator=r.operator, kind=r.kind, stage=r.stage, status=status, reason=reason,
                got_kind=got_kind, got_stage=got_stage))
    report.seconds = time.perf_counter() - t0
    return report
