"""Checking a regression corpus: replay every record on a fresh backend and classify it.

Each record's replay ends ``reproduced`` (parent passes, mutant fails with the same kind, stage and failure
key), ``fixed`` (the mutant now passes), ``changed`` (it fails differently, or the same way on other offending
memories), ``parent_broken`` (the parent no longer passes its own reference), ``error`` (a backend fault) or
``inconclusive`` (a write read back that cannot be compared any more: :mod:`ufuzz.engine.readback`).
What that means for CI depends on what the record expects (``expected.status``):

==================  ==================================  ==========================================
replay              record ``failing`` (known failure)  record ``fixed`` (a guard)
==================  ==================================  ==========================================
reproduced          ``known`` — ok                      ``regressed`` — exit 1
fixed (passes)      ``fixed`` — ok, good news            ``passes`` — ok
changed             ``changed`` — exit 1                 ``regressed`` — exit 1
parent_broken       ``parent_broken`` — exit 1           ``parent_broken`` — exit 1
error               ``error`` — exit 1                   ``error`` — exit 1
inconclusive        ``inconclusive`` — ok, said          ``inconclusive`` — ok, said
==================  ==================================  ==========================================

A backend that cannot be reached at all (:class:`~ufuzz.backends.protocol.BackendUnreachable`, found by a
probe before the first record and after any record that ends in an error) stops the check: the remaining
records are ``not_run`` and the exit status is 3, so a nightly job tells "the product is down" apart from "a
known failure changed". The corpus format itself is :mod:`ufuzz.triage.corpusfile`; the replay of one pair
is :func:`ufuzz.triage.replay.replay_pair`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ufuzz.backends.protocol import BackendError, MemoryBackend
from ufuzz.model import Checkpoint
from ufuzz.oracles.expectations import STATE
from ufuzz.triage.corpusfile import (
    STATUSES,
    RegressionCorpus,
    RegressionRecord,
    load_corpus,
    path_options,
    resolve_options,
)
from ufuzz.triage.replay import fresh_backend, probe_unreachable, replay_pair, replay_state

__all__ = ["CheckResult", "CheckReport", "check_corpus", "OUTCOMES", "BAD_OUTCOMES", "EXIT_UNREACHABLE"]

#: what a record's check means for CI, in display order (see the module docstring)
OUTCOMES = ("known", "fixed", "passes", "changed", "regressed", "parent_broken", "error", "inconclusive", "not_run")
#: the outcomes that fail a check (exit 1)
BAD_OUTCOMES = ("changed", "regressed", "parent_broken", "error")
EXIT_UNREACHABLE = 3


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
    got_key: str | None = None
    got_offending: tuple[str, ...] = ()
    expected_status: str = "failing"  # what the record expects: failing | fixed
    outcome: str = ""  # one of OUTCOMES
    seconds: float = 0.0  # how long its replay took (the JUnit case's time)

    @property
    def bad(self) -> bool:
        return self.outcome in BAD_OUTCOMES


@dataclass
class CheckReport:
    path: str
    backend: str
    backend_options: dict[str, Any]
    results: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. how the fresh backend differs from the recorded one
    seconds: float = 0.0
    unreachable: str | None = None  # why the backend could not be reached (the check stopped there)

    def counts(self) -> dict[str, int]:
        """Replay statuses (reproduced, fixed, changed, parent_broken, error) of the records that ran."""
        c = Counter(r.status for r in self.results if r.outcome != "not_run")
        return {s: c.get(s, 0) for s in STATUSES}

    def outcomes(self) -> dict[str, int]:
        c = Counter(r.outcome for r in self.results)
        return {s: c.get(s, 0) for s in OUTCOMES}

    @property
    def ok(self) -> bool:
        """Every record behaves exactly as recorded: known failures reproduce, fixed ones pass."""
        return self.unreachable is None and all(r.outcome in ("known", "passes") for r in self.results)

    @property
    def regressions(self) -> list[CheckResult]:
        return [r for r in self.results if r.bad]

    @property
    def exit_code(self) -> int:
        """0 nothing regressed (fixed records are good news), 1 a record regressed or changed, 3 unreachable."""
        if self.unreachable is not None:
            return EXIT_UNREACHABLE
        return 1 if self.regressions else 0

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.path, "backend": self.backend, "backend_options": self.backend_options,
                "counts": self.counts(), "outcomes": self.outcomes(), "total": len(self.results),
                # ok agrees with the exit code (fixed records are good news, not a failed check);
                # as_recorded: every record behaved exactly as recorded (nothing to `ufuzz corpus accept`)
                "ok": self.exit_code == 0, "as_recorded": self.ok,
                "exit_code": self.exit_code, "unreachable": self.unreachable, "notes": self.notes,
                "seconds": self.seconds, "results": [asdict(r) for r in self.results]}


def _outcome(status: str, expected: str) -> str:
    """A record's CI outcome from its replay status and what it expects (the module docstring's table)."""
    if status in ("parent_broken", "error", "inconclusive"):
        return status
    if expected == "fixed":
        return "passes" if status == "fixed" else "regressed"
    return {"reproduced": "known", "fixed": "fixed"}.get(status, "changed")


def _probe(be: MemoryBackend, checkpoint: Checkpoint) -> str | None:
    """Why the backend cannot be reached, or None (:func:`ufuzz.triage.replay.probe_unreachable`)."""
    return probe_unreachable(be, checkpoint)


def _classify(res: Any) -> tuple[str, str]:
    """(status, reason) of a :class:`ufuzz.triage.replay.ReplayResult`."""
    if res.status == "reproduced":
        if res.same_key:
            return "reproduced", "parent passes, mutant fails the same way"
        return "changed", "same kind and stage, but other offending memories (failure key differs)"
    if res.status in ("fixed", "changed", "parent_broken", "inconclusive"):
        return res.status, res.reason
    return "error", res.reason


def _differences(recorded: dict[str, Any], now: dict[str, Any], backend: str) -> list[str]:
    """How the fresh backend's description differs from the recorded one. Where a file option lives (the
    product TOML) is not a difference in behaviour: a corpus checked from another folder names it otherwise."""
    out = []
    for key in sorted((set(recorded) | set(now)) - set(path_options(backend))):
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
    recorded = resolve_options(rc.backend_options, rc.path, rc.backend) if name == rc.backend else {}
    opts = {**recorded, **(options or {})}
    todo = list(rc.records if records is None else records)
    report = CheckReport(path=str(rc.path) if rc.path else "", backend=name, backend_options=opts)
    t0 = time.perf_counter()
    with fresh_backend(name, opts, workdir, prefix="ufuzz-corpus-check-") as be:
        if name == rc.backend and isinstance(rc.header.get("backend_info"), dict):
            try:
                now = be.describe()
            except Exception:  # noqa: BLE001 - a note only; never fail the check on describe()
                now = {}
            diffs = _differences(rc.header["backend_info"], now, name) if now else []
            report.notes += [f"backend differs from the recorded one: {d}" for d in diffs]
        elif name != rc.backend:
            report.notes.append(f"replaying on {name!r}, the corpus was recorded on {rc.backend!r}")
        responder, context = rc.judging.build(be)
        if todo:
            report.unreachable = _probe(be, rc.checkpoints[todo[0].checkpoint_id])
        for r in todo:
            if report.unreachable is not None:
                report.results.append(_not_run(r, report.unreachable))
                continue
            t1 = time.perf_counter()
            result = replace(_check_one(be, rc, r, responder, context), seconds=time.perf_counter() - t1)
            if result.status == "error":
                report.unreachable = _probe(be, rc.checkpoints[r.checkpoint_id])
            report.results.append(result)
    report.seconds = time.perf_counter() - t0
    return report


def _check_one(be: MemoryBackend, rc: RegressionCorpus, r: RegressionRecord, responder: Any,
               context: Any) -> CheckResult:
    parent, mutant = r.cases(rc.checkpoints[r.checkpoint_id], rc.descriptors.get(r.seed_id))
    got_key, got_offending = None, ()
    try:
        if r.stage == STATE:  # a side effect of the mutant's operation, re-run as its verification saw it
            res = replay_state(be, rc.checkpoints, parent, mutant, failure_key=r.failure_key, kind=r.kind,
                               target=r.target, seed_id=r.seed_id, operator=r.operator, k=rc.k)
        else:
            res = replay_pair(be, rc.checkpoints, parent, mutant, r.parent.reference, r.mutant.reference,
                              k=rc.k, failure_key=r.failure_key, kind=r.kind, stage=r.stage,
                              target=r.target, seed_id=r.seed_id, operator=r.operator, responder=responder,
                              context=context)
        status, reason = _classify(res)
        got_kind, got_stage, got_key = res.got_kind, res.got_stage, getattr(res, "got_key", None)
        got_offending = tuple(getattr(res, "got_offending", ()))
    except BackendError as exc:
        status, reason, got_kind, got_stage = "error", f"backend error: {exc}", None, None
    outcome = _outcome(status, r.status)
    if outcome == "regressed":
        reason = f"fixed before, fails again: {reason}"
    return CheckResult(line=r.line, failure_key=r.failure_key, case_id=r.mutant.id, parent_id=r.parent.id,
                       operator=r.operator, kind=r.kind, stage=r.stage, status=status, reason=reason,
                       got_kind=got_kind, got_stage=got_stage, got_key=got_key, got_offending=got_offending,
                       expected_status=r.status,
                       outcome=outcome)


def _not_run(r: RegressionRecord, why: str) -> CheckResult:
    return CheckResult(line=r.line, failure_key=r.failure_key, case_id=r.mutant.id, parent_id=r.parent.id,
                       operator=r.operator, kind=r.kind, stage=r.stage, status="error",
                       reason=f"not run: the backend is unreachable ({why})", expected_status=r.status,
                       outcome="not_run")


# ====================================================================== accepting a check


@dataclass
class Acceptance:
    """What ``ufuzz corpus accept`` did to each record (failure keys as they were before)."""

    records: list[RegressionRecord]
    now_fixed: list[str] = field(default_factory=list)  # failing -> fixed (kept as guards)
    dropped_fixed: list[str] = field(default_factory=list)  # failing -> removed (--drop-fixed)
    updated: list[str] = field(default_factory=list)  # changed or regressed -> failing with what it does now
    dropped_broken: list[str] = field(default_factory=list)  # parent broken: the pair no longer isolates it
    kept_errors: list[str] = field(default_factory=list)  # a backend fault: nothing learnt, kept as it was

    @property
    def changes(self) -> int:
        return len(self.now_fixed) + len(self.dropped_fixed) + len(self.updated) + len(self.dropped_broken)


def accept_check(rc: RegressionCorpus, results: Sequence[Any], *, drop_fixed: bool = False) -> Acceptance:
    """The corpus's records updated to what a check (``results``: CheckResults or their dicts) observed.

    A fixed failure becomes a ``fixed`` guard (or is dropped with ``drop_fixed``); a changed or regressed one
    becomes a failing record with the kind, stage, key and offending memories it has now; a record whose
    parent broke is dropped; an error or a record the check did not run stays as it was. Raises ValueError
    when the results are not those of this corpus (unknown failure keys) or the check did not reach the
    backend."""
    from dataclasses import replace

    by_key = {_get(r, "failure_key"): r for r in results}
    unknown = sorted(set(by_key) - {r.failure_key for r in rc.records})
    if unknown:
        raise ValueError(f"the check results name failure key(s) this corpus does not hold ({unknown[0]}, ...): "
                         "were they made from another corpus file?")
    out = Acceptance(records=[])
    for rec in rc.records:
        res = by_key.get(rec.failure_key)
        outcome = _get(res, "outcome") if res is not None else None
        if outcome == "fixed":
            (out.dropped_fixed if drop_fixed else out.now_fixed).append(rec.failure_key)
            if not drop_fixed:
                out.records.append(replace(rec, status="fixed"))
        elif outcome in ("changed", "regressed") and _get(res, "got_key"):
            out.updated.append(rec.failure_key)
            out.records.append(replace(rec, status="failing", kind=_get(res, "got_kind"),
                                       stage=_get(res, "got_stage"), failure_key=_get(res, "got_key"),
                                       offending=tuple(_get(res, "got_offending") or ())))
        elif outcome == "parent_broken":
            out.dropped_broken.append(rec.failure_key)
        else:
            if outcome in ("error", "not_run"):
                out.kept_errors.append(rec.failure_key)
            out.records.append(rec)
    keys = [r.failure_key for r in out.records]
    if len(keys) != len(set(keys)):  # two records now fail the same way: keep the first
        seen: set[str] = set()
        out.records = [r for r in out.records if not (r.failure_key in seen or seen.add(r.failure_key))]
    return out


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
