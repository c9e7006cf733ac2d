"""The work of a lane, whatever kind of lane runs it: :class:`LaneCore` holds a backend instance of its own and runs
*jobs* — a parent's execution (a job of its own, with a verdict on whether the parent can be tested at all), a state
operator's mutation on a fork of the parent's state (made with the same per-step random generator as anywhere), a
mutant's execution — and gives back what happened (:class:`LaneResult`). It never sees the corpus, the oracle's
verdicts, failures or the scheduler: those stay in the campaign, which applies the results in task order
(:mod:`ufuzz.engine.step`).

Retained state mutants keep their fork in the lane that made it: the lane holds every executed mutant's fork until
the campaign says, with that lane's next request, whether the mutant was kept (adopted as its state) or not
(released). Where it runs: in this thread (:mod:`~ufuzz.engine.parallel.lane`), in threads
(:mod:`~ufuzz.engine.parallel.threadlanes`), in a child process (:mod:`~ufuzz.engine.parallel.process`) or as a Ray
actor (:mod:`~ufuzz.engine.parallel.raylanes`).
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ufuzz.backends import registry
from ufuzz.backends.protocol import BackendError, StateHandle
from ufuzz.engine.executor import Executor
from ufuzz.engine.proposal import Proposal, propose
from ufuzz.engine.scheduler import Task
from ufuzz.model import Checkpoint, Execution, FuzzCase, Reference


def llm_share(cfg: Any) -> int:
    """How many processes of a campaign call the LLM endpoint with a client of their own, each held to that
    share of ``--llm-rpm``/``--llm-tpm``: the campaign's and each process lane's (thread lanes share the
    campaign's client)."""
    workers = int(getattr(cfg, "workers", 1) or 1)
    return workers + 1 if workers > 1 or getattr(cfg, "ray_address", None) else 1



@dataclass(frozen=True)
class LaneSpec:
    """What a lane needs to build its backend and run jobs: the campaign's configuration (with its secrets: it
    goes to the campaign's own processes only), the backend class and the suite's checkpoints."""

    config: Any  # the CampaignConfig
    backend_class: str  # "module:QualName", importable in the lane (registrations do not cross processes)
    checkpoints: dict[str, Checkpoint]
    path: tuple[str, ...] = ()  # the campaign's sys.path, so that the lane imports the same code

    @classmethod
    def of(cls, config: Any, backend_class: type, checkpoints: dict[str, Checkpoint]) -> LaneSpec:
        return cls(config, f"{backend_class.__module__}:{backend_class.__qualname__}", dict(checkpoints),
                   tuple(p for p in sys.path if p))


@dataclass
class LaneJob:
    """One job for a lane: a parent's execution alone (``task`` None, ``run_parent``), or a task — either the
    mutant's proposal (made by the campaign: query operators) or the reference a state operator mutates
    against — on the parent's state."""

    counter: int
    task: Task | None  # None: only the parent's execution is asked for
    parent: FuzzCase
    run_parent: bool
    reference: Reference | None = None
    proposal: Proposal | None = None
    after: tuple[str, str] | None = None  # (state key, query) of a parent job of the batch that must come first


@dataclass
class LaneResult:
    parent_ex: Execution | None = None  # when the job ran the parent
    proposal: Proposal | None = None  # None when the parent's execution failed (nothing else was done)
    ex: Execution | None = None  # the mutant's execution, when it ran
    faults: list[tuple[str, str]] = field(default_factory=list)  # backend faults nothing waited for
    lost: str | None = None  # the lane failed this job as a whole (it died, or an adapter bug escaped)
    seconds: float = 0.0  # the job's time in its lane (benchmarks: how evenly a batch's work is spread)
    holds: bool = False  # the lane keeps the mutant's fork until the campaign says to adopt or drop it
    testable: bool | None = None  # a parent job: whether the parent passes a level it is judged at
    skipped: bool = False  # not run: its parent's job found the parent failing, or untestable
    llm: dict[str, int] | None = None  # what the lane's own LLM client did for this job (calls, tokens …)
    evicted: tuple[str, ...] = ()  # state keys the lane does not hold (let go, or never kept): the pool's to know


def _import(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class LLMMeter:
    """What an LLM client of a lane's own process did since it was last asked (calls, tokens …): the campaign
    adds it to its totals (a client shared with the campaign counts there, and has no meter)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self) -> dict[str, int] | None:
        with self._lock:
            now = {**self.client.stats(),
                   **{k: v for k, v in self.client.usage().items() if isinstance(v, int)}}
            delta = {k: v - self._seen.get(k, 0) for k, v in now.items()}
            self._seen = now
        return {k: v for k, v in delta.items() if v} or None


class LaneCore:
    """A lane's backend, executor and state operators; :meth:`run` works through a list of jobs."""

    def __init__(self, spec: LaneSpec, workdir: Path, backend: Any = None, llm: Any = None,
                 shared: Any = None, meter: LLMMeter | None = None, prejudge: bool = True) -> None:
        """A core with a backend of its own (a process or Ray lane), or over ``backend`` and ``llm`` shared with
        the campaign (its in-process lane, :class:`ufuzz.engine.parallel.lane.InProcessLane`) or with the campaign's
        other thread lanes (:mod:`ufuzz.engine.parallel.threadlanes`): never closed here; ``shared``: their checkpoint
        states, built once for all; ``meter``: the counts of a client of the lane's process, reported to the campaign
        with each job; ``prejudge``: ask an LLM judge ahead of the campaign (:meth:`_prejudge`), which only
        pays where the lane's wait overlaps the campaign's work."""
        from ufuzz.llm.client import client_for
        from ufuzz.operators import create_all
        from ufuzz.oracles.judging import Judging

        cfg = spec.config
        self.seed = cfg.seed
        self.prejudge = prejudge
        self.owns_backend = backend is None
        self.backend = backend if backend is not None else registry.instantiate(
            cfg.backend, _import(spec.backend_class), Path(workdir) / "backend", cfg.backend_options,
            isolation=cfg.isolation, worker={"recycle_every": cfg.worker_recycle,
                                             "max_rss_mb": cfg.worker_max_rss_mb,
                                             "call_timeout": cfg.worker_timeout})
        try:
            judging = Judging.of(cfg)
            self.llm = llm
            if llm is None and (judging.answer or judging.judge):  # a lane of its own process: its own client
                self.llm = client_for(cfg, share=llm_share(cfg))
            self.meter = meter if meter is not None else (
                LLMMeter(self.llm) if llm is None and self.llm is not None else None)
            responder, self.context = judging.build(self.backend, self.llm)
            self.executor = Executor(self.backend, spec.checkpoints, k=cfg.k, responder=responder,
                                     max_live_states=cfg.max_live_states, hidden=not self.context.visible,
                                     shared=shared, readback=cfg.readback)
            self.operators = create_all(only=tuple(cfg.operators) if cfg.operators else None)
        except BaseException:
            if self.owns_backend:
                self.backend.close()
            raise
        caps = self.backend.capabilities
        self.fork_queries = caps.cheap_fork if cfg.fork_queries is None else bool(cfg.fork_queries)
        self.responds = self.executor.answers or self.executor.responder is not None
        self.pending: dict[str, StateHandle] = {}  # executed mutants' forks, until the campaign says which stay

    # -- the lane's calls ---------------------------------------------------------------------------------
    def run(self, jobs: Sequence[LaneJob], keep: Sequence[FuzzCase] = (), drop: Sequence[str] = ()) -> list[LaneResult]:
        """Run ``jobs``; first adopt the forks of the mutants the campaign kept (``keep``: their cases) as their
        states and release those of the mutants it did not (``drop``: their ids)."""
        self._settle(keep, drop)
        return [self._job(job) for job in jobs]

    def execute(self, case: FuzzCase) -> Execution:
        """``case`` on its state (built or rebuilt here as needed); a state that cannot be had is an error."""
        try:
            state = self.executor.state_of(case)
        except BackendError as exc:
            return Execution(case_id=case.id, state_key=case.state_key, query=case.query.text,
                             error=f"{type(exc).__name__}: {exc}")
        return self.executor.execute(case, state)

    def close(self) -> None:
        try:
            self._settle((), list(self.pending))
            self.executor.close()
        finally:
            if self.owns_backend:
                self.backend.close()

    # -- jobs ---------------------------------------------------------------------------------------------
    def _settle(self, keep: Sequence[FuzzCase], drop: Sequence[str]) -> None:
        for case in keep:
            handle = self.pending.pop(case.id, None)
            if handle is not None:
                self.executor.adopt(case, handle)
        for mid in drop:
            handle = self.pending.pop(mid, None)
            if handle is not None:
                self.executor.release(handle)

    def _job(self, job: LaneJob) -> LaneResult:
        res = LaneResult()
        t0 = time.perf_counter()
        try:
            self._work(job, res)
        except Exception as exc:  # noqa: BLE001 - an adapter bug outside the guarded calls: this job is lost
            res.lost = f"{type(exc).__name__}: {exc}"
        res.faults = list(self.executor.faults)
        self.executor.faults.clear()
        res.seconds = time.perf_counter() - t0
        res.llm = self.meter.take() if self.meter is not None else None
        res.evicted = self.executor.take_evicted()
        parent = job.parent
        if parent.ops and not self.executor.live(parent.state_key):  # e.g. rebuilt only to be forked, not kept
            res.evicted += (parent.state_key,)
        return res

    def _work(self, job: LaneJob, res: LaneResult) -> None:
        from ufuzz.oracles.oracle import could_fail

        parent, task = job.parent, job.task
        if job.run_parent:
            res.parent_ex = self.execute(parent)
            if task is None and job.reference is not None and res.parent_ex.error is None:
                res.testable = self._testable(parent, job.reference, res.parent_ex)
            if res.parent_ex.error is not None or task is None:
                return
        op = self.operators[task.operator]
        if job.proposal is None:  # a state operator: it mutates a fork of the parent's state, here
            proposal = propose(op, parent, job.reference, task.target, task.obligation, job.counter, self.seed,
                               executor=self.executor, fork=True)
        else:
            proposal = replace(job.proposal)  # the campaign's own stays as it made it (a thread lane shares it)
            if proposal.valid and self.fork_queries and self.executor.copyable:
                try:
                    proposal.handle = self.executor.fork(parent)
                except BackendError as exc:
                    proposal.error = (f"{op.name}:{task.target}", f"{type(exc).__name__}: {exc}")
        res.proposal = proposal
        if proposal.error is None and proposal.valid:
            if not could_fail(proposal.mutant, proposal.mutation.reference, self.responds, self.context,
                              on_parent_state=not proposal.mutation.ops):
                proposal.unjudged = True
            else:
                res.ex = self._run_mutant(proposal, parent)
                if res.ex is not None and res.ex.error is None:
                    self._prejudge(proposal, res.ex)
        if proposal.handle is not None:
            if res.ex is not None and res.ex.error is None:
                # it may be kept as a parent: the campaign says which (LaneResult.holds tells it to)
                self.pending[proposal.mutant.id] = proposal.handle
                res.holds = True
            else:
                self.executor.release(proposal.handle)

    def _prejudge(self, proposal: Proposal, ex: Execution) -> None:
        """Ask an LLM judge for the mutant's verdict here, where the wait overlaps other lanes' work: the reply
        lands in the call cache, so the campaign's own verdict (the same request, judged in task order) is a
        cache hit. Only a speed-up: the verdict is the campaign's, and a failed request is its to record."""
        if self.context.judge is None or not self.prejudge:
            return
        from ufuzz.oracles.verdict import judge_case

        try:
            judge_case(proposal.mutant, proposal.mutation.reference, ex, self.context)
        except Exception:  # noqa: BLE001 - the campaign asks again and records what fails
            pass

    def _testable(self, parent: FuzzCase, reference: Reference, ex: Execution) -> bool:
        """As :meth:`ufuzz.oracles.oracle.Oracle.testable` (the same pure verdict), so that the lanes skip the
        mutants of a parent the campaign will not test; when unsure (a judge that failed) it says testable."""
        from ufuzz.oracles.verdict import judge_case

        try:
            return any(o.passed for o in judge_case(parent, reference, ex, self.context).values())
        except Exception:  # noqa: BLE001 - e.g. an LLM judge that failed: the campaign decides
            return True

    def _run_mutant(self, proposal: Proposal, parent: FuzzCase) -> Execution | None:
        try:
            state = proposal.handle if proposal.handle is not None else self.executor.state_of(parent)
        except BackendError as exc:
            proposal.state_error = f"{type(exc).__name__}: {exc}"
            return None
        return self.executor.execute(proposal.mutant, state)
