"""Failure replay: rebuild every unique failure of a campaign on a fresh backend and judge it again.

For each failure recorded by the oracle side (:class:`~ufuzz.corpus.failures.FailureStore`), the failing
mutant and its parent (a seed, or a retained mutant that may itself descend from mutants) are rebuilt from
the corpus alone — checkpoint, ordered native ops, query — on a *fresh* instance of the campaign's backend
with the campaign's own options:

* the parent's state is the checkpoint with the parent's ops replayed;
* the mutant's state is built independently: the checkpoint again with the mutant's full op recipe;

both queries are executed (top-k ids and a response) and judged with the stored references through the very
functions a campaign decides failures with (:mod:`ufuzz.oracles.verdict`), with the campaign's own responder
and judge (:class:`~ufuzz.oracles.judging.Judging`, rebuilt from its stored config). A failure is *reproduced*
when the parent passes the recorded level and the mutant fails there with the recorded kind. ``same_key``
additionally says whether the recomputed unique-failure key (offending memory ids included) matches. A seed's
baseline failure is re-run alone and judged the same way. A state-level failure (an operation that changed more
than it asked) is re-run as its operator's verification saw it: the parent's state listed before and after the
mutant's own operations (:func:`replay_state`).
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
from ufuzz.backends.protocol import BackendError, BackendUnreachable, MemoryBackend, OpResult
from ufuzz.backends.responders import Responder
from ufuzz.corpus.campaign import CampaignData, case_of, load_campaign, select_failures
from ufuzz.engine import probes
from ufuzz.engine.executor import Executor
from ufuzz.engine.readback import readback, reads_back, written_times
from ufuzz.model import Checkpoint, Execution, FuzzCase, Reference, StateOp
from ufuzz.operators import sideeffects
from ufuzz.operators.registry import classes as operator_classes
from ufuzz.oracles.expectations import STATE
from ufuzz.oracles.judging import Judging
from ufuzz.oracles.verdict import BASELINE, Context, caused, first_failure, judge_case
from ufuzz.oracles.verdict import failure_key as failure_key_of

__all__ = ["ReplayResult", "ReplayReport", "replay_pair", "replay_state", "replay_campaign", "fresh_backend",
           "probe_unreachable"]


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
    got_key: str | None = None  # the unique-failure key of what the replayed mutant did (None: it passed)
    got_offending: tuple[str, ...] = ()
    #: reproduced | fixed (mutant passes) | changed (fails differently) | parent_broken | error (backend fault)
    #: | inconclusive (a write read back that cannot be compared now) | unbuildable (the corpus cannot rebuild it)
    status: str = ""


@dataclass
class ReplayReport:
    campaign_id: str
    backend: str
    backend_options: dict[str, Any]
    results: list[ReplayResult] = field(default_factory=list)
    #: why the backend could not be reached at all (then the failures not replayed are not in ``results``)
    unreachable: str | None = None
    not_run: int = 0

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
                "unreachable": self.unreachable, "not_run": self.not_run,
                "results": [asdict(r) for r in self.results]}



def replay_campaign(campaign_dir: str | Path, db: str | None = None, *, campaign_id: str | None = None,
                    workdir: str | Path | None = None, keys: list[str] | None = None,
                    options: dict[str, Any] | None = None) -> ReplayReport:
    """Replay every unique failure of the campaign in ``campaign_dir`` (see the module docstring).

    ``db`` is the corpus's SQLAlchemy URL (default: the directory's corpus.sqlite). The fresh backend works
    in ``workdir`` (default: a temporary directory, removed afterwards). Raises ``FileNotFoundError`` or
    ``ValueError`` (with a message naming the directory, file or URL) for bad input; backend faults during
    the replay of one failure make that failure "not reproduced", with the fault as the reason. ``options``
    override the campaign's backend options (``--opt base_url=...`` for a product restarted elsewhere). A backend
    that cannot be reached at all (probed before the first failure and after any that errs) stops the replay:
    ``report.unreachable`` says why and the failures left are counted in ``report.not_run``.
    """
    data = load_campaign(campaign_dir, db, campaign_id=campaign_id)
    opts = {**data.backend_options, **(options or {})}
    report = ReplayReport(campaign_id=data.campaign_id, backend=data.backend, backend_options=opts)
    failures = select_failures(data.failures, keys)  # ValueError naming a key that matches none or several
    if not failures:
        return report
    judging = Judging.of(data.config)
    with fresh_backend(data.backend, opts, workdir) as backend:
        responder, context = judging.build(backend)
        first = data.checkpoints.get(_checkpoint_of(failures[0], data))
        report.unreachable = probe_unreachable(backend, first) if first is not None else None
        for n, f in enumerate(failures):
            if report.unreachable is not None:
                report.not_run = len(failures) - n
                break
            result = _replay_one(f, backend, data, responder, context)
            report.results.append(result)
            cp = data.checkpoints.get(_checkpoint_of(f, data))
            if result.status == "error" and cp is not None:
                report.unreachable = probe_unreachable(backend, cp)
                if report.unreachable is not None:  # the error was the backend going away, not this failure's
                    report.results.pop()
                    report.not_run = len(failures) - n
                    break
    return report


def _checkpoint_of(f: Any, data: CampaignData) -> str | None:
    m = data.mutants.get(f.case_id)
    if m is not None and m.checkpoint_id:
        return m.checkpoint_id
    seed = data.seeds.get(f.seed_id)
    return seed.checkpoint_id if seed is not None else None


def probe_unreachable(backend: MemoryBackend, checkpoint: Checkpoint) -> str | None:
    """Why the backend cannot be reached (building one checkpoint raised BackendUnreachable), or None. Other
    faults are not the probe's business: the failures that meet them say so."""
    try:
        handle = backend.build(checkpoint)
    except BackendUnreachable as exc:
        return str(exc)
    except BackendError:
        return None
    try:
        backend.release(handle)
    except BackendError:
        pass
    return None


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
                  k: int, responder: Responder | None = None, hidden: bool = False,
                  probes: bool = False) -> Execution:
    """Build the checkpoint on its own, replay the case's ops, execute its query; release the state.
    ``hidden``: observe the response only, as a campaign with hidden retrieval did; ``probes``: run the system
    probes on a seed's execution (a probe's finding replayed), else none (they cost calls nothing else needs)."""
    executor = Executor(backend, checkpoints, k=k, responder=responder, hidden=hidden, probes=probes)
    try:
        state = executor.state_of(case)
        return executor.execute(case, state)
    finally:
        executor.close()


def _replay_one(f: Any, backend: MemoryBackend, data: CampaignData, responder: Responder | None,
                context: Context) -> ReplayResult:
    base = {"failure_key": f.failure_key, "case_id": f.case_id, "seed_id": f.seed_id, "operator": f.operator,
            "kind": f.kind, "stage": f.stage, "status": "unbuildable"}
    checkpoints, seeds, mutants, refs = data.checkpoints, data.seeds, data.mutants, data.references
    case = case_of(f.case_id, checkpoints, seeds, mutants)
    if isinstance(case, str):
        return ReplayResult(parent_id=None, reproduced=False, reason=case, **base)
    if f.origin == BASELINE:
        if f.case_id not in refs:
            return ReplayResult(parent_id=None, reproduced=False, reason=f"no stored reference for {f.case_id}",
                                **base)
        return replay_baseline(backend, checkpoints, case, refs[f.case_id], k=data.k, kind=f.kind, stage=f.stage,
                               failure_key=f.failure_key, responder=responder, context=context,
                               offending=tuple(f.detail.get("offending") or ()))
    mutant = case
    base["parent_id"] = mutant.parent_id
    if mutant.parent_id is None:
        return ReplayResult(reproduced=False, reason=f"case {f.case_id} has no parent", **base)
    parent = case_of(mutant.parent_id, checkpoints, seeds, mutants)
    if isinstance(parent, str):
        return ReplayResult(reproduced=False, reason=f"parent: {parent}", **base)
    if f.stage == STATE:
        m = mutants.get(f.case_id)
        return replay_state(backend, checkpoints, parent, mutant, failure_key=f.failure_key, kind=f.kind,
                            target=(m.target if m is not None else None) or "", seed_id=f.seed_id,
                            operator=f.operator, k=data.k)
    for cid in (parent.id, mutant.id):
        if cid not in refs:
            return ReplayResult(reproduced=False, reason=f"no stored reference for case {cid}", **base)
    m = mutants.get(f.case_id)
    target = (m.target if m is not None else None) or ""
    return replay_pair(backend, checkpoints, parent, mutant, refs[parent.id], refs[mutant.id], k=data.k,
                       failure_key=f.failure_key, kind=f.kind, stage=f.stage, target=target,
                       seed_id=f.seed_id, operator=f.operator, responder=responder, context=context)


def _executions(backend: MemoryBackend, checkpoints: dict[str, Checkpoint], cases: list[FuzzCase], k: int,
                responder: Responder | None, hidden: bool = False, probes: bool = False) -> list[Execution] | str:
    """Each case executed on its own fresh state, or why that failed (a backend fault)."""
    out = []
    for case in cases:
        try:
            ex = _run_isolated(backend, checkpoints, case, k, responder, hidden, probes=probes)
        except BackendError as exc:  # replaying the op recipe failed
            return f"backend error while rebuilding: {exc}"
        if ex.error is not None:
            return f"backend error executing {case.id}: {ex.error}"
        out.append(ex)
    return out


def replay_pair(backend: MemoryBackend, checkpoints: dict[str, Checkpoint], parent: FuzzCase, mutant: FuzzCase,
                parent_ref: Reference, mutant_ref: Reference, *, k: int, failure_key: str, kind: str, stage: str,
                target: str, seed_id: str | None = None, operator: str | None = None,
                responder: Responder | None = None, context: Context | None = None) -> ReplayResult:
    """Rebuild ``parent`` and ``mutant`` each on its own fresh state of ``backend`` (checkpoint + full op
    recipe), execute both and judge them with their references — through the campaign's own verdict
    functions, responder and judge — against the recorded verdict (``kind``, ``stage`` = level,
    ``failure_key``; ``target`` is the obligation target the key was computed with)."""
    base = {"failure_key": failure_key, "case_id": mutant.id, "parent_id": parent.id,
            "seed_id": seed_id or mutant.seed_id, "operator": operator if operator is not None else mutant.operator,
            "kind": kind, "stage": stage}
    ctx = context or Context(visible=backend.capabilities.visible_retrieval,
                             threshold=backend.capabilities.relevance_threshold)
    got_ex = _executions(backend, checkpoints, [parent, mutant], k, responder, hidden=not ctx.visible)
    if isinstance(got_ex, str):
        return ReplayResult(reproduced=False, reason=got_ex, status="error", **base)
    parent_ex, mutant_ex = got_ex
    p_levels = judge_case(parent, parent_ref, parent_ex, ctx)
    m_levels = judge_case(mutant, mutant_ref, mutant_ex, ctx)
    p_out = p_levels.get(stage)
    if p_out is None:
        return ReplayResult(reproduced=False, reason=f"level {stage} is not judged on this backend/responder",
                            status="changed", **base)
    if not p_out.passed:
        return ReplayResult(reproduced=False, reason=f"parent {parent.id} no longer passes ({stage}:{p_out.kind})",
                            status="parent_broken", got_kind=p_out.kind, got_stage=stage, **base)
    out = caused(p_levels, m_levels)
    got = {"got_kind": out.kind if out else None, "got_stage": out.level if out else None,
           "got_offending": tuple(out.offending) if out else (),
           "got_key": failure_key_of(mutant.seed_id, mutant.operator or "", target, out.kind or "", out.level,
                                     out.offending) if out else None}
    if out is None:
        return ReplayResult(reproduced=False, reason="mutant passes", status="fixed", **got, **base)
    if (out.kind, out.level) != (kind, stage):
        return ReplayResult(reproduced=False, reason=f"mutant fails differently ({out.level}:{out.kind})",
                            status="changed", **got, **base)
    key = failure_key_of(mutant.seed_id, mutant.operator or "", target, out.kind or "", out.level, out.offending)
    same = key == failure_key
    reason = "parent passes, mutant fails the same way" + ("" if same else " (other offending ids)")
    return ReplayResult(reproduced=True, reason=reason, same_key=same, status="reproduced", **got, **base)


def _unrelated(operator: str | None) -> bool:
    """Whether ``operator``'s edits must change nothing the question uses (then deactivations count too)."""
    cls = operator_classes().get(operator or "")
    return cls is not None and cls.kind == "state" and cls.meaning_preserving


def _apply(backend: MemoryBackend, state: str, op: StateOp) -> OpResult:
    if op.op == "add" and op.memory is not None:
        return backend.add(state, op.memory)
    if op.op == "update" and op.target and op.memory is not None:
        return backend.update(state, op.target, op.memory)
    if op.op == "delete" and op.target:
        return backend.delete(state, op.target)
    raise BackendError(f"cannot replay malformed op {op}")


def replay_state(backend: MemoryBackend, checkpoints: dict[str, Checkpoint], parent: FuzzCase, mutant: FuzzCase,
                 *, failure_key: str, kind: str, target: str, seed_id: str | None = None,
                 operator: str | None = None, k: int = 5) -> ReplayResult:
    """Re-run a state-level failure: rebuild the parent's state on its own, list it, apply the mutant's own
    operations, list it again and look for the same side effect (:mod:`ufuzz.operators.sideeffects`), as the
    operator's verification did; a write not found by its own words (``write_not_found``) is searched for again
    in the top ``k`` (:mod:`ufuzz.engine.readback`). Nothing is judged against a reference."""
    base = {"failure_key": failure_key, "case_id": mutant.id, "parent_id": parent.id,
            "seed_id": seed_id or mutant.seed_id, "operator": operator if operator is not None else mutant.operator,
            "kind": kind, "stage": STATE}
    own = mutant.ops[len(parent.ops):]
    executor = Executor(backend, checkpoints, k=1)
    try:
        state = executor.state_of(parent)
        before = backend.list(state)
        results = [_apply(backend, state, op) for op in own]
        if not all(r.ok for r in results):
            bad = next(r for r in results if not r.ok)
            return ReplayResult(reproduced=False, reason=f"the backend refused the {bad.op}: {bad.detail}",
                                status="error", **base)
        after = backend.list(state)
        # the replay's own state: the twins are added to it (the last thing done to it)
        read = (readback(backend, state, own, results, k, scratch=True,
                         times=written_times(checkpoints.get(mutant.checkpoint_id), mutant.ops))
                if kind == sideeffects.WRITE_NOT_FOUND and reads_back(backend.capabilities) else None)
    except BackendError as exc:
        return ReplayResult(reproduced=False, reason=f"backend error while rebuilding: {exc}", status="error",
                            **base)
    finally:
        executor.close()
    if kind == sideeffects.WRITE_NOT_FOUND and (read is None or read.inconclusive):
        why = read.inconclusive if read is not None else "this backend's writes are not read back"
        return ReplayResult(reproduced=False, reason=f"the read-back says nothing now: {why}",
                            status="inconclusive", **base)
    found = read.finding if read is not None else sideeffects.find(
        before, after, own, results, deactivation=_unrelated(mutant.operator))
    if found is None:
        now = ("a search for the written memory's own words finds it now" if kind == sideeffects.WRITE_NOT_FOUND
               else "the operation changes nothing else now")
        return ReplayResult(reproduced=False, reason=now, status="fixed", **base)
    key = failure_key_of(mutant.seed_id, mutant.operator or "", target, found.kind, STATE, found.memories)
    got = {"got_kind": found.kind, "got_stage": STATE, "got_offending": tuple(found.memories), "got_key": key}
    if found.kind != kind:
        return ReplayResult(reproduced=False, reason=f"the operation changes something else now ({found.reason})",
                            status="changed", **got, **base)
    same = key == failure_key
    return ReplayResult(reproduced=True, reason=found.reason + ("" if same else " (other memories)"),
                        same_key=same, status="reproduced", **got, **base)


def _replay_probe(ex: Execution, kind: str, offending: tuple[str, ...], base: dict[str, Any]) -> ReplayResult:
    """Whether the seed's execution on a fresh backend shows the system probe's finding again
    (:mod:`ufuzz.engine.probes`): a short result list, or the same memory unreachable by its own words — and
    ``inconclusive`` where the probe could say nothing now (a twin refused, no copy, results that vary), never
    "fixed" for that."""
    seen = ex.probes or {}
    if kind == probes.SHORT_LIST:
        again = seen.get("short")
        ok, why = (again is not None, again["reason"] if again else "the search returns k results, or all that match")
        status = "reproduced" if ok else "fixed"
    else:
        hit = [f for f in seen.get("unreachable") or () if f["memory"] in offending]
        said = {m: str((seen.get("probed") or {}).get(m, "inconclusive: not probed (no copy of states, or "
                                                        "retrieval hidden)")) for m in offending}
        ok = bool(hit)
        unsure = [f"{m}: {v}" for m, v in said.items() if v.startswith("inconclusive")]
        status = "reproduced" if ok else "inconclusive" if unsure else "fixed"
        why = (hit[0]["reason"] if ok else "; ".join(unsure) if unsure else
               f"a search for its own words finds {', '.join(offending)} now")
    got = {"got_kind": kind if ok else None, "got_stage": base["stage"] if ok else None}
    return ReplayResult(reproduced=ok, reason=why, same_key=ok, status=status, **got, **base)


def replay_baseline(backend: MemoryBackend, checkpoints: dict[str, Checkpoint], seed: FuzzCase, ref: Reference,
                    *, k: int, kind: str, stage: str, failure_key: str, responder: Responder | None = None,
                    context: Context | None = None, offending: tuple[str, ...] = ()) -> ReplayResult:
    """Re-run a seed that failed its own reference and judge it again the same way (a system probe's finding:
    probe again)."""
    base = {"failure_key": failure_key, "case_id": seed.id, "parent_id": None, "seed_id": seed.seed_id,
            "operator": None, "kind": kind, "stage": stage}
    ctx = context or Context(visible=backend.capabilities.visible_retrieval,
                             threshold=backend.capabilities.relevance_threshold)
    probed = kind in (probes.SHORT_LIST, probes.UNREACHABLE)
    got_ex = _executions(backend, checkpoints, [seed], k, responder, hidden=not ctx.visible, probes=probed)
    if isinstance(got_ex, str):
        return ReplayResult(reproduced=False, reason=got_ex, status="error", **base)
    if probed:
        return _replay_probe(got_ex[0], kind, offending, base)
    out = first_failure(judge_case(seed, ref, got_ex[0], ctx))
    got = {"got_kind": out.kind if out else None, "got_stage": out.level if out else None}
    if out is None:
        return ReplayResult(reproduced=False, reason="the seed passes", status="fixed", **got, **base)
    if (out.kind, out.level) != (kind, stage):
        return ReplayResult(reproduced=False, reason=f"the seed fails differently ({out.level}:{out.kind})",
                            status="changed", **got, **base)
    return ReplayResult(reproduced=True, reason="the seed fails the same way", same_key=True, status="reproduced",
                        **got, **base)
