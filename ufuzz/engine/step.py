"""A step: one task from the scheduler, made into lane jobs, run in a lane, and applied here in task order.

A step has two parts. *Propose and execute* needs only operators and a backend, so it runs in a lane
(:mod:`ufuzz.engine.parallel.lane`): a query mutant is made here (:func:`ufuzz.engine.proposal.propose`, with the same
per-step random generator as anywhere), a state mutant in its lane on a fork of the parent's state; a parent not
executed yet gets a job of its own ahead of its tasks'. *Apply* — records, feedback, the oracle's verdict (it goes
to the failure store only), retention, the scheduler's report — happens in this process, in task order, so
that which lane ran a job, and when, changes nothing.

Tasks are drawn in batches (:meth:`Steps.draw`; ``--batch`` tasks, whatever the lanes) and applied batch by batch
(:meth:`Steps.apply`); the loop that drives them is :meth:`ufuzz.engine.campaign.Campaign._loop`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ufuzz.engine.budget import Budget
from ufuzz.engine.executor import Executor
from ufuzz.engine.feedback import expected_top
from ufuzz.engine.proposal import Proposal, propose
from ufuzz.engine.scheduler import NO_MUTANT, StepOutcome, Task
from ufuzz.engine.state import Batch, CampaignState, FindingsState, Progress, SearchState
from ufuzz.llm.client import LLMError
from ufuzz.model import Execution, FuzzCase, Reference
from ufuzz.operators.base import Operator
from ufuzz.oracles.oracle import Oracle
from ufuzz.oracles.verdict import Failure

__all__ = ["Steps"]


class Steps:
    """Draws batches of tasks and applies their results. Holds no state of its own: everything it changes is
    the campaign's :class:`~ufuzz.engine.state.CampaignState`, the store's records or the lanes' forks."""

    def __init__(self, config: Any, state: CampaignState, *, budget: Budget, store: Any, failures: Any,
                 campaign_id: str, operators: dict[str, Operator], executor: Executor, lanes: Any,
                 log: Any) -> None:
        self.config = config
        self.state = state
        self.budget = budget
        self.store = store
        self.failures = failures
        self.campaign_id = campaign_id
        self.operators = operators
        self.executor = executor
        self.lanes = lanes
        self.log = log  # the campaign log
        self.oracle: Oracle | None = None  # set once made (it reports failures to :meth:`sink`)
        self.lane_llm: dict[str, int] = {}  # what process lanes' own LLM clients did (calls, tokens …)

    @property
    def search(self) -> SearchState:
        return self.state.search

    @property
    def findings(self) -> FindingsState:
        return self.state.findings

    @property
    def progress(self) -> Progress:
        return self.state.search.progress

    @property
    def hidden(self) -> bool:
        return self.executor.hidden

    # -- drawing -------------------------------------------------------------------------------------------
    def draw(self, size: int) -> Batch | None:
        """The next batch: up to ``size`` tasks from the scheduler, their jobs made and queued to the lanes.
        No more tasks than the budget has executions left beyond the batch in flight (each task spends at least
        one): near the end, tasks that could not be applied would still pay for their calls. (Whatever the lanes,
        so that they never change the schedule.)"""
        from ufuzz.engine.parallel.core import LaneJob

        s = self.search
        size = min(size, self.budget.left(s.progress, len(s.inflight.tasks) if s.inflight else 0))
        tasks: list[tuple[Task, int]] = []
        while len(tasks) < size:
            self.lanes.poll()  # the lanes go on with the batch in flight while this one is drawn
            task = s.scheduler.next()
            if task is None:
                break
            s.drawn += 1
            tasks.append((task, s.drawn))
        if not tasks:
            return None
        # A parent not executed yet gets a job of its own, ahead of its tasks' jobs, which the lanes start only
        # once it is in, and skip when it fails its reference everywhere (no mutant of it could show a failure);
        # a parent that a job of the batch in flight executes is not run again.
        planned = {(j.parent.state_key, j.parent.query.text) for j in (s.inflight.jobs if s.inflight else ())
                   if j.task is None}
        jobs = []
        # a query mutant is made here; a state operator's is made in its lane, on a fork of the parent's state
        proposals = self._query_proposals(tasks)
        for task, counter in tasks:
            parent = s.cases[task.case_id]
            key = (parent.state_key, parent.query.text)
            reference = self.oracle.reference_of(parent.id)
            if key not in planned and self.executor.cached(parent) is None:
                planned.add(key)
                jobs.append(LaneJob(0, None, parent, True, reference))
            jobs.append(LaneJob(counter, task, parent, False, reference, proposals.get(counter),
                                after=key if key in planned else None))
        return Batch(tasks, jobs, self.lanes.submit(jobs))

    def requeue(self, batch: Batch) -> None:
        """Queue a batch again (the one in flight when a resumed campaign's snapshot was taken)."""
        if batch.tickets is None:
            batch.tickets = self.lanes.submit(batch.jobs)

    def _query_proposals(self, tasks: list[tuple[Task, int]]) -> dict[int, Proposal]:
        """The query mutants of a batch by counter, each made as :func:`propose` makes it wherever it runs; with
        LLM paraphrases and thread lanes their requests are in flight together (up to --max-concurrency)."""
        work = [(task, counter) for task, counter in tasks if self.operators[task.operator].kind != "state"]

        def make(item: tuple[Task, int]) -> Proposal:
            task, counter = item
            parent = self.search.cases[task.case_id]
            return propose(self.operators[task.operator], parent, self.oracle.reference_of(parent.id), task.target,
                           task.obligation, counter, self.config.seed)

        if "paraphrase" in self.config.llm_uses and self.config.max_concurrency > 1 and len(work) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(len(work), self.config.max_concurrency)) as pool:
                made = list(pool.map(make, work))
        else:
            made = []
            for item in work:
                self.lanes.poll()
                made.append(make(item))
        return {counter: p for (_, counter), p in zip(work, made, strict=True)}

    # -- applying ------------------------------------------------------------------------------------------
    def apply(self, batch: Batch, count: Callable[[], None]) -> None:
        """Apply a batch's results in task order (``count`` after each applied task: the progress counters); a
        task begun after the budget was spent is not applied (the scheduler gets it back). Forks the lanes hold
        for mutants not kept are released with their next request."""
        s = self.search
        results = self.lanes.collect(batch.tickets)
        parents: dict[tuple[str, str], Any] = {}  # the batch's parent runs, by (state, query)
        tasks = iter(batch.tasks)
        for job, (lane, res) in zip(batch.jobs, results, strict=True):
            self.lanes.poll()  # the lanes go on with the next batch while this one is applied
            self._count_lane_llm(res.llm)
            if job.task is None:
                parents[(job.parent.state_key, job.parent.query.text)] = res
                continue
            task, counter = next(tasks)
            if self.budget.spent(s.progress):
                s.scheduler.report(task, NO_MUTANT)
            else:
                s.step = counter
                # a run of backend errors is broken by a successful execution only (record_execution): a step that
                # executed nothing — a rejected or unjudged mutant, a task whose parent's run failed — breaks none
                for operation, message in self._apply_job(job, lane, res, parents):  # e.g. a failed release
                    self.error(task.case_id, operation, message)
                s.progress.phase = task.phase
                count()
            if res.holds and not res.proposal.adopted:
                self.lanes.decide(lane, res.proposal.mutant, keep=False)

    def _count_lane_llm(self, delta: dict[str, int] | None) -> None:
        for k, v in (delta or {}).items():
            self.lane_llm[k] = self.lane_llm.get(k, 0) + v

    def _apply_job(self, job: Any, lane: int, res: Any, parents: dict[tuple[str, str], Any]) -> list[tuple[str, str]]:
        """One task's job (and its parent's job, when that ran in this batch) applied: every path reports to the
        scheduler exactly once. Returns the backend faults nothing waited for (the parent's job's first), for the
        step's error records."""
        task, parent = job.task, job.parent
        faults: list[tuple[str, str]] = []
        parent_ex = self.executor.cached(parent)
        if parent_ex is None:
            # the parent's own job of this batch, applied with the first task that needs it; none (an earlier
            # batch ran it and it failed, or this batch's run was used up by an earlier task): no mutant now
            ran = parents.pop((parent.state_key, parent.query.text), None)
            if ran is None or ran.lost is not None:
                if ran is not None:
                    self.error(parent.id, "lane", ran.lost)
                self.search.scheduler.report(task, NO_MUTANT)
                return faults + res.faults
            faults = list(ran.faults)
            parent_ex = ran.parent_ex
            self._parent_ran(parent, parent_ex)
        if res.lost is not None:  # the lane died (it is restarted): an error record, never a failure
            self.error(parent.id, "lane", res.lost)
            outcome = NO_MUTANT
        elif not self._parent_ready(task, parent, parent_ex):
            return faults + res.faults
        elif res.skipped:  # the lane judged the parent untestable and this process did not: no mutant this time
            outcome = NO_MUTANT
        else:
            outcome = self._apply(task, res.proposal, parent, parent_ex, res.ex, lane)
        self.search.scheduler.report(task, outcome)
        return faults + res.faults

    def _parent_ran(self, parent: FuzzCase, ex: Execution) -> None:
        """A parent's execution, recorded; a successful one is fed back and cached (it is not run again)."""
        self.record_execution(ex, is_parent=True, checkpoint_id=parent.checkpoint_id)
        if ex.error is None:
            self.search.feedback.observe(parent.seed_id, parent.checkpoint_id, ex, None, hidden=self.hidden)
            self.executor.remember(parent, ex)

    def _parent_ready(self, task: Task, parent: FuzzCase, parent_ex: Execution) -> bool:
        """Whether a mutant of ``parent`` is to be made (and its result applied); if not, the task is reported
        as having none."""
        scheduler = self.search.scheduler
        if parent_ex.error is not None or self.budget.spent(self.progress):
            scheduler.report(task, NO_MUTANT)
            return False
        try:
            testable = self.oracle.testable(parent, parent_ex)
        except LLMError as exc:  # the LLM judge failed on the parent: no verdict, an error record, no mutant now
            self.error(parent.id, "judge", f"{type(exc).__name__}: {exc}")
            scheduler.report(task, NO_MUTANT)
            return False
        if not testable:
            # the parent fails every level it is judged at: no mutant of it could show a failure the mutation
            # caused, so none is made (the scheduler learns only that the case is done, not why)
            scheduler.retire(parent.id)
            scheduler.report(task, NO_MUTANT)
            return False
        return True

    def _apply(self, task: Task, proposal: Proposal, parent: FuzzCase, parent_ex: Execution,
               ex: Execution | None, lane: int) -> StepOutcome:
        """Record the proposal and its execution, judge it (the verdict goes to the failure store only) and
        decide from its feedback whether it stays as a parent."""
        cfg, s, p = self.config, self.search, self.progress
        if proposal.error is not None:
            self.error(parent.id, *proposal.error)
            return NO_MUTANT
        mutant, mutation = proposal.mutant, proposal.mutation
        self.store.record_mutant(self.campaign_id, mutant, valid=proposal.valid,
                                 rejection_reason=proposal.reason or None, created_seq=p.executions, step=s.step)
        if not proposal.valid:
            p.mutants_rejected += 1
            if proposal.finding is not None:  # the system changed more than asked: a state-level failure, apart
                self.oracle.state_failure(mutant, parent, proposal.finding, parent_ex)  # from the scheduler
            return StepOutcome(valid=False, final=True) if proposal.final else NO_MUTANT
        p.mutants_valid += 1
        read = proposal.readback
        if read is not None:  # counted, so that status never says "read back" where nothing could be compared
            p.readbacks += 1
            p.readbacks_inconclusive += read.inconclusive is not None
        if read is not None and read.finding is not None:  # its write is not found by its own words: a state-level
            self.oracle.state_failure(mutant, parent, read.finding, parent_ex,  # failure beside the mutant, which
                                      reference=mutation.reference)  # stays a test
        if proposal.unjudged:
            p.mutants_unjudged += 1
            return StepOutcome(valid=False, final=True)
        if ex is None:
            self.error(mutant.id, "state", proposal.state_error or "no state")
            return NO_MUTANT
        self.record_execution(ex, is_parent=False, checkpoint_id=mutant.checkpoint_id)
        if ex.error is not None:
            return NO_MUTANT
        self.oracle.register(mutant.id, mutation.reference)
        # a state mutation's own operations predict the parent's top-k it is compared with (expected_top)
        expected = expected_top(parent_ex.top_ids, mutation.ops, mutation.results) if mutation.ops else None
        op = self.operators[task.operator]
        fb = s.feedback.observe(mutant.seed_id, mutant.checkpoint_id, ex, parent_ex, hidden=self.hidden, p=cfg.p,
                                expected=expected, meaning_preserving=op.meaning_preserving,
                                unanswerable=op.unanswerable, threshold=self.oracle.context.threshold)
        # the record says whether the mutant was kept (feedback may ask for it past --max-depth or with retention
        # off): status and the summary count the same retained mutants
        kept = fb.retained and cfg.retain and mutant.depth < cfg.max_depth
        self.store.record_feedback(self.campaign_id, mutant.id, fb.values, kept, seq=p.executions, step=s.step)
        try:
            self.oracle.check(mutant, ex, parent, parent_ex, run_seed=self._seed_execution,
                              run_case=self._control_execution)
        except LLMError as exc:  # the LLM judge failed: no verdict for this mutant, an error record, never a failure
            self.error(mutant.id, "judge", f"{type(exc).__name__}: {exc}")
        if not kept:
            self.oracle.forget(mutant.id)
            return StepOutcome(valid=True, energy=fb.energy, effect=fb.effect(asks_anew=_asks_anew(op), kept=False),
                               instability=fb.instability)
        p.retained += 1
        s.cases.retain(mutant, parent)
        self.executor.remember(mutant, ex)
        if proposal.handle is not None:  # the fork is in the lane: it becomes the mutant's state there
            self.lanes.decide(lane, mutant, keep=True)
            proposal.adopted = True
        return StepOutcome(valid=True, retained=True, new_case_id=mutant.id, moves=tuple(self.moves(mutant)),
                           energy=fb.energy, effect=fb.effect(asks_anew=_asks_anew(op), kept=True),
                           instability=fb.instability)

    def _seed_execution(self, seed_id: str) -> Execution | None:
        """A seed's execution for the oracle's baseline attribution, fed back as any parent's."""
        return self._run_for_oracle(self.search.cases[seed_id], fed_back=True)

    def _control_execution(self, case: FuzzCase) -> Execution | None:
        """A control's execution for the oracle (a question on its checkpoint's own state, to tell a wording's
        failure from a state change's). Not fed back: the scheduler never learns that a verdict asked."""
        return self._run_for_oracle(case, fed_back=False)

    def _run_for_oracle(self, case: FuzzCase, *, fed_back: bool) -> Execution | None:
        """The cached execution of ``case``, else run now in a lane (ahead of the queued jobs) and counted as an
        execution of the budget; None once the budget is spent."""
        ex = self.executor.cached(case)  # the cache is here, the backends are in the lanes
        if ex is not None:
            return ex
        if self.budget.spent(self.progress):
            return None
        ex, faults = self.run_now(case)
        if fed_back:
            self._parent_ran(case, ex)
        else:
            self.record_execution(ex, is_parent=True, checkpoint_id=case.checkpoint_id)
            self.executor.remember(case, ex)
        for operation, message in faults:  # after the execution, as a job's are (_apply_job)
            self.error(case.id, operation, message)
        return ex

    def run_now(self, case: FuzzCase) -> tuple[Execution, list[tuple[str, str]]]:
        """(``case`` executed in a lane ahead of the queued jobs, the backend faults nothing waited for — a seed's
        probe that failed on it is an error record like any job's); the job's LLM use is counted, and a job the
        lane lost is an execution with that error."""
        res = self.lanes.execute(case)
        self._count_lane_llm(res.llm)
        if res.lost is not None or res.parent_ex is None:
            return Execution(case_id=case.id, state_key=case.state_key, query=case.query.text,
                             error=f"LaneDied: {res.lost}"), list(res.faults)
        return res.parent_ex, list(res.faults)

    def moves(self, case: FuzzCase) -> list[tuple[str, str]]:
        """Every (operator, target) that applies to ``case``: its obligations, or a retained mutant's moves."""
        return [(name, t) for name, op in self.operators.items() for t in op.targets(case)]

    # -- records -------------------------------------------------------------------------------------------
    def record_execution(self, ex: Execution, is_parent: bool, checkpoint_id: str) -> None:
        s, p = self.search, self.progress
        p.executions += 1
        self.store.record_execution(self.campaign_id, ex, is_parent=is_parent, seq=p.executions,
                                    checkpoint_id=checkpoint_id, step=s.step)
        if ex.error is None:
            s.errors.count = 0
            return
        p.errors += 1
        self.store.record_error(self.campaign_id, seq=p.executions, case_id=ex.case_id, operation="execute",
                                message=ex.error, step=s.step)
        self.log.warning("backend_error", case=ex.case_id, error=ex.error)
        s.errors.add(ex.error)

    def error(self, case_id: str, operation: str, message: str) -> None:
        """A backend fault that is not an execution's (a fork, a release, a judge, a lost lane job)."""
        s, p = self.search, self.progress
        p.errors += 1
        self.store.record_error(self.campaign_id, seq=p.executions, case_id=case_id, operation=operation,
                                message=message, step=s.step)
        self.log.warning("backend_error", case=case_id, operation=operation, error=message)
        s.errors.add(f"{operation}: {message}")

    def sink(self, failure: Failure, reference: Reference) -> None:  # noqa: ARG002 - the oracle's sink signature
        """A failure the oracle found: to the failure store (never the scheduler), counted and logged."""
        f, p = self.findings, self.progress
        self.failures.record(failure, None, seq=p.executions)
        if f.tally.add(failure):
            f.failure_log.append((p.executions, failure))
            self.log.info("failure", key=failure.key, cause=failure.cause, operator=failure.operator,
                             kind=failure.kind, level=failure.level, case=failure.case_id)
        elif failure.origin == "baseline":
            self.log.info("baseline_failure", seed=failure.seed_id, kind=failure.kind, level=failure.level,
                             responder=failure.responder)


def _asks_anew(op: Any) -> bool:
    """Whether the operator asks another question (a target change, an unsupported target, a swapped speaker):
    its mutant's ranking differs from its parent's by design, so only memories reached for the first time say
    it did something (:meth:`ufuzz.engine.signals.Combined.effect`)."""
    return op.kind != "state" and not op.meaning_preserving
