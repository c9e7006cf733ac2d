"""Failure replay: rebuild every unique failure of a campaign on a fresh backend and judge it again.

For each failure recorded by the oracle side (:class:`~ufuzz.corpus.failures.FailureStore`), the failing
mutant and its parent (a seed, or a retained mutant that may itself descend from mutants) are rebuilt from
the corpus alone — checkpoint, ordered native ops, query — on a *fresh* instance of the campaign's backend
with the campaign's own options:

* the parent's state is the checkpoint with the parent's ops replayed;
* the mutant's state is built independently: the checkpoint again with the mutant's full op recipe;

both queries are executed (top-k ids and a response) and judged with the stored references. A failure is
*reproduced* when the parent passes and the mutant fails with the recorded kind and stage. ``same_key``
additionally says whether the recomputed unique-failure key (offending memory ids included) matches.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ufuzz.backends import registry
from ufuzz.backends.protocol import BackendError, MemoryBackend
from ufuzz.corpus.campaign import case_of, load_campaign
from ufuzz.engine.executor import Executor
from ufuzz.model import Checkpoint, Execution, FuzzCase, Reference
from ufuzz.oracles.expectations import evaluate
from ufuzz.oracles.expectations import failure_key as compute_failure_key

__all__ = ["ReplayResult", "ReplayReport", "replay_pair", "replay_campaign", "fresh_backend"]


@dataclass(frozen=True)
class ReplayResult:
    failure_key: str
    case_id: str
    parent_id: str | None
    seed_id: str
    operator: str | None
    kind: str  # recorded kind and stage
    stage: str
    reproduced: bool
    reason: str
    got_kind: str | None = None  # what the replayed mutant did (None: passed or not executed)
    got_stage: str | None = None
    same_key: bool = False
    #: reproduced | fixed (mutant passes) | changed (fails differently) | parent_broken | error (backend fault)
    #: | unbuildable (the corpus cannot rebuild the pair)
    status: str = ""


@dataclass
class ReplayReport:
    campaign_id: str
    backend: str
    backend_options: dict[str, Any]
    results: list[ReplayResult] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def reproduced(self) -> int:
        return sum(1 for r in self.results if r.reproduced)

    @property
    def rate(self) -> float | None:
        return self.reproduced / self.total if self.total else None

    def to_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign_id, "backend": self.backend, "backend_options": self.backend_options,
                "reproduced": self.reproduced, "total": self.total, "rate": self.rate,
                "results": [asdict(r) for r in self.results]}


def _deleted(case: FuzzCase) -> tuple[str, ...]:
    return tuple(op.target for op in case.ops if op.op == "delete" and op.target)


def replay_campaign(campaign_dir: str | Path, db: str | None = None, *, campaign_id: str | None = None,
                    workdir: str | Path | None = None) -> ReplayReport:
    """Replay every unique failure of the campaign in ``campaign_dir`` (see the module docstring).

    ``db`` is the corpus's SQLAlchemy URL (default: the directory's corpus.sqlite). The fresh backend works
    in ``workdir`` (default: a temporary directory, removed afterwards). Raises ``FileNotFoundError`` or
    ``ValueError`` (with a message naming the directory, file or URL) for bad input; backend faults during
    the replay of one failure make that failure "not reproduced", with the fault as the reason.
    """
    data = load_campaign(campaign_dir, db, campaign_id=campaign_id)
    checkpoints, seeds, mutants, refs, k = data.checkpoints, data.seeds, data.mutants, data.references, data.k
    failures = data.failures
    backend_name, options = data.backend, data.backend_options
    report = ReplayReport(campaign_id=data.campaign_id, backend=backend_name, backend_options=options)
    if not failures:
        return report

    with fresh_backend(backend_name, options, workdir) as backend:
        for f in failures:
            report.results.append(_replay_one(f, backend, checkpoints, seeds, mutants, refs, k))
    return report


@contextmanager
def fresh_backend(name: str, options: dict[str, Any], workdir: str | Path | None = None, *,
                  prefix: str = "ufuzz-replay-") -> Iterator[MemoryBackend]:
    """A new ``name`` backend with ``options``, working in ``workdir``/backend (default: a temporary
    directory named ``prefix…``, removed afterwards). Closed on exit; a fault while closing is ignored.
    Raises what ``registry.create`` raises when the backend cannot start."""
    tmp = None
    if workdir is None:
        tmp = tempfile.mkdtemp(prefix=prefix)
        wd = Path(tmp)
    else:
        wd = Path(workdir)
    try:
        backend = registry.create(name, wd / "backend", options)
        try:
            yield backend
        finally:
            try:
                backend.close()
            except BackendError:
                pass
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)




def _run_isolated(backend: MemoryBackend, checkpoints: dict[str, Checkpoint], case: FuzzCase,
                  k: int) -> Execution:
    """Build the checkpoint on its own, replay the case's ops, execute its query; release the state."""
    executor = Executor(backend, checkpoints, k=k)
    try:
        state = executor.state_of(case)
        return executor.execute(case, state)
    finally:
        executor.close()


def _replay_one(f: Any, backend: MemoryBackend, checkpoints: dict[str, Checkpoint], seeds: dict[str, Any],
                mutants: dict[str, Any], refs: dict[str, Any], k: int) -> ReplayResult:
    base = {"failure_key": f.failure_key, "case_id": f.case_id, "seed_id": f.seed_id, "operator": f.operator,
            "kind": f.kind, "stage": f.stage, "status": "unbuildable"}
    mutant = case_of(f.case_id, checkpoints, seeds, mutants)
    if isinstance(mutant, str):
        return ReplayResult(parent_id=None, reproduced=False, reason=mutant, **base)
    base["parent_id"] = mutant.parent_id
    if mutant.parent_id is None:
        return ReplayResult(reproduced=False, reason=f"case {f.case_id} has no parent", **base)
    parent = case_of(mutant.parent_id, checkpoints, seeds, mutants)
    if isinstance(parent, str):
        return ReplayResult(reproduced=False, reason=f"parent: {parent}", **base)
    for cid in (parent.id, mutant.id):
        if cid not in refs:
            return ReplayResult(reproduced=False, reason=f"no stored reference for case {cid}", **base)
    m = mutants.get(f.case_id)
    target = (m.target if m is not None else None) or ""
    return replay_pair(backend, checkpoints, parent, mutant, refs[parent.id], refs[mutant.id], k=k,
                       failure_key=f.failure_key, kind=f.kind, stage=f.stage, target=target,
                       seed_id=f.seed_id, operator=f.operator)


def replay_pair(backend: MemoryBackend, checkpoints: dict[str, Checkpoint], parent: FuzzCase, mutant: FuzzCase,
                parent_ref: Reference, mutant_ref: Reference, *, k: int, failure_key: str, kind: str, stage: str,
                target: str, seed_id: str | None = None, operator: str | None = None) -> ReplayResult:
    """Rebuild ``parent`` and ``mutant`` each on its own fresh state of ``backend`` (checkpoint + full op
    recipe), execute both and judge them with their references against the recorded verdict (``kind``,
    ``stage``, ``failure_key``; ``target`` is the obligation target the key was computed with)."""
    base = {"failure_key": failure_key, "case_id": mutant.id, "parent_id": parent.id,
            "seed_id": seed_id or mutant.seed_id, "operator": operator if operator is not None else mutant.operator,
            "kind": kind, "stage": stage}
    try:
        parent_ex = _run_isolated(backend, checkpoints, parent, k)
        mutant_ex = _run_isolated(backend, checkpoints, mutant, k)
    except BackendError as exc:  # replaying the op recipe failed
        return ReplayResult(reproduced=False, reason=f"backend error while rebuilding: {exc}", status="error",
                            **base)
    for who, ex in (("parent", parent_ex), ("mutant", mutant_ex)):
        if ex.error is not None:
            return ReplayResult(reproduced=False, reason=f"backend error executing the {who}: {ex.error}",
                                status="error", **base)
    hidden = not backend.capabilities.visible_retrieval
    p_out = evaluate(parent_ref, parent_ex, _deleted(parent), hidden)
    m_out = evaluate(mutant_ref, mutant_ex, _deleted(mutant), hidden)
    got = {"got_kind": m_out.kind, "got_stage": m_out.stage}
    if not p_out.passed:
        return ReplayResult(reproduced=False, reason=f"parent {parent.id} no longer passes "
                            f"({p_out.stage}:{p_out.kind})", status="parent_broken", **got, **base)
    if m_out.passed:
        return ReplayResult(reproduced=False, reason="mutant passes", status="fixed", **got, **base)
    if (m_out.kind, m_out.stage) != (kind, stage):
        return ReplayResult(reproduced=False, reason=f"mutant fails differently ({m_out.stage}:{m_out.kind})",
                            status="changed", **got, **base)
    key = compute_failure_key(mutant.seed_id, mutant.operator or "", target, m_out.kind or "", m_out.stage or "",
                              m_out.offending)
    same = key == failure_key
    reason = "parent passes, mutant fails the same way" + ("" if same else " (other offending ids)")
    return ReplayResult(reproduced=True, reason=reason, same_key=same, status="reproduced", **got, **base)
