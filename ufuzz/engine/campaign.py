"""A fuzzing campaign: seeds → obligations → mutants → isolated executions → feedback → oracles.

:class:`Campaign` wires the parts and runs the loop (:meth:`Campaign._loop`); each part is a module of its own:

* a step — draw tasks, run them in lanes, apply their results in task order: :mod:`ufuzz.engine.step`;
* a lane — where a step's work runs (this thread, threads, processes, Ray actors): :mod:`ufuzz.engine.parallel.lane`,
  chosen by :mod:`ufuzz.engine.parallel.lanesetup`;
* the state — everything that decides what comes next, pickled whole for a snapshot: :mod:`ufuzz.engine.state`;
* the journal — commits, snapshots, resume: :mod:`ufuzz.engine.journal`;
* the monitor — progress, plot data, the log, the heartbeat: :mod:`ufuzz.engine.monitor`;
* the session — what the campaign holds open and the signals that stop it: :mod:`ufuzz.engine.session`;
* the budget — executions, time, LLM tokens, errors in a row: :mod:`ufuzz.engine.budget`;
* the start — the seeds made cases and obligations: :mod:`ufuzz.engine.seeding`;
* the summary — one typed, versioned record (:class:`ufuzz.corpus.summary.CampaignSummary`), made by
  :mod:`ufuzz.engine.summarise`.

How it ends (:mod:`ufuzz.engine.ending`): ``budget_spent``, ``exhausted`` (no obligation or pool entry left),
``time_limit``, ``llm_budget_spent``, ``interrupted`` (Ctrl-C / SIGTERM: the current batch finishes first) or
``error`` — any exception, a failed preflight round trip, ``max_consecutive_errors`` backend errors in a row, a
corpus that cannot be written. The reason is recorded in the store, in ``summary.json`` and in the exit code;
nothing that happens while closing can turn a crash into a "normal" end or raise a second error.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ufuzz.backends.protocol import MemoryBackend
from ufuzz.engine import ending
from ufuzz.engine.budget import OUTAGE_RUN, Budget, End
from ufuzz.engine.config import DEFAULT_SEEDS, LLM_USES, SEARCHES, CampaignConfig, resolve_seeds
from ufuzz.engine.executor import Executor
from ufuzz.engine.journal import Journal, ResumeError, reopen
from ufuzz.engine.llmuse import llm_facts
from ufuzz.engine.monitor import HEARTBEAT_SECONDS, Monitor
from ufuzz.engine.proposal import Proposal
from ufuzz.engine.seeding import sow
from ufuzz.engine.session import Session
from ufuzz.engine.state import CampaignState, Progress
from ufuzz.engine.step import Steps
from ufuzz.engine.summarise import summarise
from ufuzz.model import SeedSuite
from ufuzz.operators import create_all
from ufuzz.operators import names as operator_names
from ufuzz.oracles.judging import Judging
from ufuzz.oracles.oracle import Oracle
from ufuzz.seeds.io import load_suite

__all__ = ["DEFAULT_SEEDS", "HEARTBEAT_SECONDS", "LLM_USES", "OUTAGE_RUN", "SEARCHES", "Campaign", "CampaignConfig",
           "Progress", "Proposal", "ResumeError", "resolve_seeds"]


class Campaign:
    """One campaign, from its seeds (or its last snapshot) to its end: the loop over the components above. It
    owns no step of its own, so that every lane kind runs the same campaign, and keeps what decides the search
    in one :class:`~ufuzz.engine.state.CampaignState`, so that a snapshot is that object and nothing else."""

    def __init__(self, config: CampaignConfig, suite: SeedSuite | None = None,
                 backend: MemoryBackend | None = None) -> None:
        self.config = config
        self.out = Path(config.out)
        self.suite = suite if suite is not None else load_suite(resolve_seeds(config.seeds),
                                                                memory_ops=operator_names("state"))
        self._backend = backend  # the caller's, if given (else made from the config when the campaign opens)
        self.state = CampaignState.new(config.budget)
        self.budget = Budget.of(config)
        self.session = Session()
        self.monitor = Monitor()
        # made as the campaign is prepared (_prepare); None until then
        self.operators: dict[str, Any] = {}
        self.executor: Executor | None = None  # the parent executions' cache (the backends are in the lanes)
        self.oracle: Oracle | None = None
        self.steps: Steps | None = None
        self.journal: Journal | None = None
        self.judging: dict[str, Any] | None = None  # which levels are judged, with what (summary, status)
        self.reason: str | None = None  # how the campaign ended (ufuzz.engine.ending)
        self.message: str | None = None  # why, for an error
        self.internal = False  # the error was ufuzz's own fault (exit ending.INTERNAL_ERROR), not the environment's
        self.warnings: list[str] = []  # what went wrong while closing (the user is told)
        self.resumed_from: int | None = None  # the step a resumed campaign went on from
        self._resume_id: str | None = None

    # -- what the campaign is at (views of its state) -------------------------------------------------------
    progress = property(lambda self: self.state.search.progress)
    scheduler = property(lambda self: self.state.search.scheduler)
    feedback = property(lambda self: self.state.search.feedback)
    cases = property(lambda self: self.state.search.cases)
    step = property(lambda self: self.state.search.step, doc="tasks applied (names mutants, seeds their rng)")
    tally = property(lambda self: self.state.findings.tally)
    failure_log = property(lambda self: self.state.findings.failure_log, doc="mutant failures in discovery order")
    log = property(lambda self: self.monitor.log)
    # what the campaign holds open (ufuzz.engine.session)
    backend = property(lambda self: self.session.backend)
    llm = property(lambda self: self.session.llm)
    lanes = property(lambda self: self.session.lanes)
    store = property(lambda self: self.session.store, doc="the CorpusStore")
    failures = property(lambda self: self.session.failures, doc="the FailureStore (the oracle side's tables)")
    campaign_id = property(lambda self: self.session.campaign_id)
    preflight = property(lambda self: self.session.preflight, doc="what the preflight round trip saw")

    @property
    def unique_keys(self) -> set[str]:
        """Keys of the system's unique mutant failures (UF@B)."""
        return self.tally.unique

    @property
    def on_setup(self) -> Callable[[str], None] | None:
        """Told each set-up phase (large suites: the CLI prints them)."""
        return self.monitor.on_setup

    @on_setup.setter
    def on_setup(self, tell: Callable[[str], None] | None) -> None:
        self.monitor.on_setup = tell

    def spreads(self) -> bool | None:
        """Whether phase 1 spreads over the seeds (``--search``); None for auto: the scheduler spreads when the
        seeds' obligations are more than the budget (:meth:`ufuzz.engine.scheduler.Scheduler.seal`)."""
        return {"spread": True, "walk": False}.get(self.config.search)

    # -- resume --------------------------------------------------------------------------------------------
    @classmethod
    def resume(cls, out: str | Path, db: str | None = None, *, backend: MemoryBackend | None = None,
               budget: int | None = None, backend_options: dict[str, Any] | None = None,
               **overrides: Any) -> Campaign:
        """The campaign recorded in ``out`` (its corpus in ``db``), ready to :meth:`run` on from its last
        committed snapshot: to its budget, or to ``budget`` when given (see :func:`ufuzz.engine.journal.reopen`;
        ``overrides`` set run-time fields: ``max_consecutive_errors``, ``max_time``, ``preflight``, window
        sizes). Raises :class:`ResumeError`."""
        config, suite, cid = reopen(Path(out), db, budget, backend_options, overrides)
        obj = cls(config, suite=suite, backend=backend)
        obj._resume_id = cid
        return obj

    # -- set-up ------------------------------------------------------------------------------------------
    def _open(self) -> None:
        """Open what the campaign holds (:meth:`ufuzz.engine.session.Session.open`), then its log and curve."""
        self.session.open(self.config, self.suite, backend=self._backend, resume_id=self._resume_id,
                          setup=self.monitor.setup)
        self.monitor.open(self.session.log_file, self.campaign_id, self.out / "plot_data.csv",
                          resumed=self._resume_id is not None)
        if hasattr(self.backend, "observer"):  # a backend worker: its restarts go to the campaign log
            self.backend.observer = lambda event, **facts: self.log.info(event, **facts)
        # a lane that dies is logged (its jobs are error records)
        self.lanes.observer = lambda event, **facts: self.monitor.safely("warning", event, **facts)

    def _prepare(self) -> None:
        """Operators, the parent cache, the steps, the oracle and the journal; then either the seeds (a new
        campaign) or the state of the last snapshot (a resumed one)."""
        cfg = self.config
        judging = Judging.of(cfg)
        realizer = None
        if "paraphrase" in cfg.llm_uses:
            from ufuzz.llm.prompts import system_of
            from ufuzz.llm.uses import ParaphraseRealizer

            realizer = ParaphraseRealizer(self.llm, system_of("paraphrase", cfg.prompts))
        self.operators = create_all(realizer=realizer, only=tuple(cfg.operators) if cfg.operators else None)
        responder, context = judging.build(self.backend, self.llm)
        self.executor = Executor(self.backend, self.suite.checkpoints, k=cfg.k, responder=responder,
                                 max_live_states=cfg.max_live_states, hidden=not context.visible,
                                 readback=cfg.readback)
        # whether verified writes are read back (ufuzz.engine.readback): said by status beside the levels
        self.judging = {**judging.describe(self.backend, responder), "readback": self.executor.readback}
        ending.write_atomic(self.out / "campaign.json", json.dumps({"campaign": self.campaign_id,
                                                                   "judging": self.judging,
                                                                   "llm": llm_facts(cfg, self.backend)}) + "\n")
        self.steps = Steps(cfg, self.state, budget=self.budget, store=self.store, failures=self.failures,
                           campaign_id=self.campaign_id, operators=self.operators, executor=self.executor,
                           lanes=self.lanes, log=self.log)
        self.oracle = self.steps.oracle = Oracle(self.steps.sink, context,
                                                 reference_sink=self.failures.record_reference)
        self.journal = Journal(self.store, self.failures, self.campaign_id, cfg, executor=self.executor,
                               oracle=self.oracle)
        self.progress.coverage_total = sum(len(c.memories) for c in self.suite.checkpoints.values())
        if self._resume_id is not None and self._restore():
            return
        self._seed()

    def _seed(self) -> None:
        """A new campaign (or a resumed one that had no snapshot yet): seeds, obligations, the first snapshot."""
        if self._resume_id is not None:
            self.journal.start_over()
        seeds = sow(self.state.search, self.suite, self.config, operators=self.operators, spread=self.spreads(),
                    moves=self.steps.moves, oracle=self.oracle, store=self.store, campaign_id=self.campaign_id,
                    setup=self.monitor.setup)
        self.monitor.setup("first snapshot; then the first states are built as the first steps need them")
        self.monitor.count(self.state)
        self._end_batch(force_snapshot=True)
        self.log.info("started", seeds=seeds, obligations=len(self.scheduler.obligations),
                      backend=self.backend.describe(), preflight=self.preflight)

    def _restore(self) -> bool:
        """Go back to the last snapshot (:meth:`ufuzz.engine.journal.Journal.restore`), and the curve with it;
        False when the campaign has none (it starts over)."""
        gone = self.journal.restore(self.state, self.suite, self.config.budget)
        if gone is None:
            return False
        s = self.state.search
        self.resumed_from = s.step
        self.monitor.plot.rewind(s.progress.executions)  # the curve of the rolled-back work goes too (redone)
        self.log.info("resumed", step=s.step, executions=s.progress.executions, budget=self.config.budget,
                      rolled_back_mutants=gone, preflight=self.preflight)
        return True

    # -- run ---------------------------------------------------------------------------------------------
    def run(self, on_progress: Callable[[Progress], None] | None = None,
            on_step: Callable[[Progress], None] | None = None) -> dict[str, Any]:
        """Run (or, made by :meth:`resume`, continue) the campaign; returns its summary. Bad input or a failed
        preflight raises before anything is recorded; from then on the campaign always ends with a reason.
        ``on_progress`` gets the counters after each batch, ``on_step`` after each step (a curve by executions)."""
        self.budget.start()
        self.monitor.on_progress = on_progress
        self.monitor.on_step = on_step
        self._open()
        self.session.catch_signals()
        try:
            self.monitor.start_heartbeat(self._beat)
            self._prepare()
            end = self.budget.final(self._loop(), self.progress, self.state.search.errors)
            self.reason, self.message = end.reason, end.message
            self.session.shield_to_the_end()
        except KeyboardInterrupt:
            self.session.shield_to_the_end()
            self.reason = ending.INTERRUPTED
        except Exception as exc:  # noqa: BLE001 - any fault ends the campaign as an error, truthfully
            self.session.shield_to_the_end()
            self.reason, self.message = ending.ERROR, ending.describe(exc)
            if not ending.environmental(exc):  # ufuzz's own fault: said so, and its own exit code
                self.internal = True
                self.message = f"internal error (a bug in ufuzz, not the system under test): {self.message}"
            self.monitor.safely("error", "crashed", error=self.message, traceback=traceback.format_exc())
        except BaseException:
            self.session.shield_to_the_end()
            self.reason, self.message = ending.ERROR, "aborted"
            self._finish()
            raise
        return self._finish()

    def _loop(self) -> End:
        """Batches of tasks (``--batch``: :mod:`ufuzz.engine.parallel.batching`), each drawn and queued to the
        lanes before the previous one is applied, so that the lanes work on batch k+1 while this process applies
        batch k in task order. Which tasks a batch holds is fixed by the seed and the batch alone, whatever the
        lanes. Between batches is the place to stop, to commit and to snapshot (the batch in flight is
        part of the snapshot, and a resumed campaign queues it again)."""
        from ufuzz.engine.parallel.batching import batch_size

        s, journal = self.state.search, self.journal
        size = batch_size(self.config)
        if s.inflight is not None:
            self.steps.requeue(s.inflight)
        while True:
            end = self.budget.check(s.progress, self._llm_tokens(), self.session.stop.is_set())
            if end is not None:
                return end
            journal.at_boundary = False  # drawing changes the scheduler: a boundary again once the batch is queued
            nxt = self.steps.draw(size)
            if s.inflight is None:
                if nxt is None:
                    journal.at_boundary = True
                    return End(ending.EXHAUSTED)
                s.inflight = nxt
                journal.at_boundary = True  # the batch in flight is part of the snapshot
                if size > 1:  # the pipeline fills: the next batch is drawn before this one is applied
                    continue
                nxt = None  # --batch 1: step by step
            current, s.inflight = s.inflight, nxt
            journal.at_boundary = False
            self.steps.apply(current, lambda: self.monitor.count(self.state))
            self._end_batch()
            end = self.budget.errors(s.errors)
            if end is not None:
                return end
            self.monitor.progressed(s.progress)

    def _end_batch(self, force_snapshot: bool = False) -> None:
        """A batch is whole: commit (and snapshot) when due. A second Ctrl-C waits for it."""
        with self.session.shielded():
            self.journal.end_batch(self.state, force_snapshot)

    def _llm_tokens(self) -> int | None:
        """LLM tokens used so far (this process's client and its process lanes'); None without an LLM."""
        if self.llm is None:
            return None
        return self.llm.total_tokens + self.steps.lane_llm.get("total_tokens", 0)

    def _beat(self) -> None:
        """The heartbeat: the directory lock and the store's record say the campaign is alive."""
        if self.session.lock is not None:
            self.session.lock.beat()
        self.store.heartbeat_now(self.campaign_id)

    # -- ending --------------------------------------------------------------------------------------------
    def _finish(self) -> dict[str, Any]:
        """Commit what is whole, record how the campaign ended, write the summary and close everything.
        Every part is guarded: a failure here is reported (``warnings``), never raised."""
        self.session.shield_to_the_end()  # the end always runs whole (a Ctrl-C now waits for it)
        reason = self.reason or ending.ERROR
        ended: tuple[Progress, int] = (Progress(budget=self.config.budget), 0)
        if self.journal is not None:
            failed = self.journal.last_commit(self.state)
            ended = self.journal.committed if failed else self.journal.mark
            if failed and reason == ending.ERROR:
                self.warnings.append(f"the last records could not be written either: {failed}")
            elif failed:
                self.message = f"the campaign ended ({reason}) but its last records could not be written: {failed}"
                reason = ending.ERROR
        self.reason = reason
        if self.message is None and reason == ending.ERROR:
            self.message = "unknown error"
        self.monitor.stop_heartbeat()
        if reason == ending.INTERRUPTED:
            self.monitor.safely("warning", "interrupted", executions=ended[0].executions)
        self.session.release(self.lanes, self.session.ray)  # their work is over (a Ray cluster it started stops)
        self.monitor.close_plot(ended[0])
        # summary.json before the store's end: a kill between the two leaves a campaign the store still calls
        # running, which --resume finishes again at once (writing both), never a finished one without a summary
        summary = summarise(self, reason, progress=ended[0], found=ended[1])
        try:
            ending.write_summary(self.out / "summary.json", summary.to_json())
        except Exception as exc:  # noqa: BLE001
            self.warnings.append(f"could not write {self.out / 'summary.json'}: {ending.describe(exc)}")
        if self.store is not None:
            try:
                self.store.attach(None)
                self.store.finish_campaign(self.campaign_id, status=reason, message=self.message)
            except Exception as exc:  # noqa: BLE001
                self.warnings.append(f"could not record the end in the corpus database ({ending.describe(exc)}); "
                                     "summary.json has it")
        summary.warnings = list(self.warnings)
        result = summary.returned()
        self.monitor.safely("info", "finished", **{k: v for k, v in result.items() if k != "failures"})
        self.monitor.join_heartbeat()
        self.session.close()  # the log, the stores, the backend; the directory's lock last
        return result

    def summary(self, status: str | None = None) -> dict[str, Any]:
        """The campaign's summary as it stands (``summary.json``'s fields)."""
        return summarise(self, status or self.reason or ending.RUNNING).to_json()
