"""A fuzzing campaign: seeds → obligations → mutants → isolated executions → feedback → oracles.

Budget: the number of executions of U(q, M) on the backend — every retrieval (+ response) of a parent or a
mutant counts one. Cached parent executions are not re-run and not re-counted; mutants that their validator
rejects are never executed and not counted (they are recorded as rejected). A campaign stops when the budget
is spent, when no obligation or pool entry is left (status ``finished``), when ``max_time`` has passed (status
``time_limit``, checked between steps) or on Ctrl-C/SIGTERM (``interrupted``); the summary is always written.
``plot_data.csv`` (:mod:`ufuzz.engine.plotdata`) records the curve as it goes.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import structlog

from ufuzz.backends import registry
from ufuzz.backends.protocol import BackendError, MemoryBackend
from ufuzz.engine.executor import Executor
from ufuzz.engine.feedback import Ablation, FeedbackState
from ufuzz.engine.scheduler import NO_MUTANT, Scheduler, SchedulerConfig, StepOutcome, Task
from ufuzz.llm.client import LLMError
from ufuzz.model import Execution, FuzzCase, Reference, SeedSuite
from ufuzz.operators import create_all
from ufuzz.operators.base import Mutation, Operator, Rejected, StateView
from ufuzz.oracles.judging import READERS, Judging
from ufuzz.oracles.oracle import Oracle
from ufuzz.oracles.verdict import Failure, Tally
from ufuzz.seeds.io import load_suite

LLM_USES = ("paraphrase", "answer", "judge")
DEFAULT_SEEDS = Path(__file__).resolve().parents[2] / "seeds" / "default.jsonl"


@dataclass
class CampaignConfig:
    backend: str = "embedded"
    backend_options: dict[str, Any] = field(default_factory=dict)
    seeds: str | None = None  # path to a JSONL suite; None = the shipped default suite
    budget: int = 2000
    seed: int = 0
    k: int = 5
    out: str = "campaigns/run"
    db: str | None = None  # SQLAlchemy URL; None = sqlite file in the campaign directory
    p: float = 0.9  # RBO persistence
    max_depth: int = 3
    attempts: int = 3
    strategy: str = "full"
    operators: tuple[str, ...] | None = None
    ablation: dict[str, bool] = field(default_factory=dict)
    retain: bool = True
    obligation_first: bool = True
    explore_share: float = 0.0  # chance of a retained-mutant pick while obligations remain (see scheduler)
    # Query mutants write nothing. None (auto): they get their own fork where forking is cheap (copy-on-write,
    # the embedded backend) and run on the parent's state otherwise (mem0, Graphiti: a fork is a file copy,
    # and Kuzu does not survive thousands of database opens in one process). True/False force it.
    fork_queries: bool | None = None
    max_live_states: int = 32  # mutated states kept open at once; older ones are rebuilt on demand
    # "auto": adapters over native libraries (mem0, Graphiti, A-Mem) run in a worker process that is recycled
    # when it grows past worker_max_rss_mb (or every worker_recycle backend calls) and restarted after a crash;
    # "process" forces a worker, "none" runs the backend in the fuzzer's own process.
    isolation: str = "auto"
    worker_recycle: int = 0  # backend calls per worker; 0 = no call limit
    worker_max_rss_mb: float | None = None  # recycle the worker past this resident size; None = a third of RAM
    worker_timeout: float = 600  # seconds one backend call may take before the worker is killed
    llm_base_url: str | None = None  # OpenAI-compatible endpoint; None = no LLM anywhere
    llm_model: str | None = None
    llm_api_key_env: str = "OPENAI_API_KEY"
    llm_uses: tuple[str, ...] = ()  # subset of LLM_USES
    # "none": responses come only from the system under test (a backend that answers, or --llm-uses answer);
    # "top-evidence": the made-up reader that echoes the top memory, opt-in, its failures labelled as its own
    reader: str = "none"
    reader_threshold: float | None = None  # the top-evidence reader's cut-off; None = the backend's hint
    llm_timeout: float = 30.0  # seconds per LLM request
    llm_retries: int = 2  # retries of a failed LLM request, with exponential backoff
    llm_cache: str | None = None  # call-cache file; None = $UFUZZ_CACHE_DIR/llm_calls.sqlite or ~/.cache/ufuzz
    max_time: float | None = None  # wall seconds from the start; then the campaign ends with status time_limit
    # "auto": retrieval as the backend exposes it; "hidden": only responses are observed, judged and fed back
    # (a product that only answers; --retrieval-visibility hidden); "visible": require visible retrieval
    retrieval: str = "auto"

    def __post_init__(self) -> None:
        bad = [u for u in self.llm_uses if u not in LLM_USES]
        if bad:
            raise ValueError(f"--llm-uses: unknown use(s) {bad}; allowed: {', '.join(LLM_USES)}")
        if self.llm_uses and not self.llm_base_url:
            raise ValueError("--llm-uses needs --llm-base-url (an OpenAI-compatible endpoint)")
        if self.reader not in READERS:
            raise ValueError(f"--reader must be one of {', '.join(READERS)}, not {self.reader!r}")
        Judging.of(self)  # the responder and judge settings must fit together
        if not 0.0 <= self.explore_share < 1.0:
            raise ValueError(f"--explore-share must be in [0, 1), not {self.explore_share}")
        if self.isolation not in registry.ISOLATION:
            raise ValueError(f"--isolation must be one of {', '.join(registry.ISOLATION)}, not {self.isolation!r}")
        if self.max_time is not None and self.max_time <= 0:
            raise ValueError(f"--max-time must be positive, not {self.max_time}")
        if self.worker_recycle < 0 or (self.worker_max_rss_mb or 0) < 0 or self.worker_timeout <= 0:
            raise ValueError("--worker-recycle and --worker-max-rss-mb must be >= 0, --worker-timeout > 0")
        if not 0 < self.llm_timeout <= 3600 or not 0 <= self.llm_retries <= 10:
            raise ValueError("--llm-timeout must be in (0, 3600] seconds and --llm-retries in [0, 10]")

    def to_dict(self) -> dict[str, Any]:
        """The config as recorded with the campaign: a backend's secret options masked (its declared
        ``secret`` ones, and any option named like a key), so no secret reaches the store or a corpus."""
        d = asdict(self)
        try:
            opts = registry.load(self.backend).public_options(self.backend_options)
        except Exception:  # noqa: BLE001 - an unknown backend fails elsewhere, with its own message
            opts = dict(self.backend_options)
        d["backend_options"] = {k: v for k, v in opts.items() if "key" not in k.lower()}
        return d


@dataclass
class Progress:
    executions: int = 0
    budget: int = 0
    mutants_valid: int = 0
    mutants_rejected: int = 0
    mutants_unjudged: int = 0  # valid, not executed: none of their checks can fail on this backend
    retained: int = 0
    coverage: int = 0
    coverage_total: int = 0
    unique_failures: int = 0
    causes: int = 0
    baseline_failures: int = 0
    errors: int = 0
    uncovered_obligations: int = 0
    phase: int = 1


@dataclass
class Proposal:
    """A step's mutant in the making: the fork it writes to and, once valid, the mutant and its mutation."""

    handle: str | None = None  # the mutant's own fork (state operators; query mutants where forks are cheap)
    mutant: FuzzCase | None = None  # set only when the mutation was produced and validated
    mutation: Mutation | None = None
    adopted: bool = False  # the fork became a retained mutant's live state: not released
    final: bool = False  # rejected, and no other try can go otherwise (the operator's move is deterministic)


def resolve_seeds(path: str | None) -> Path:
    return Path(path) if path else DEFAULT_SEEDS


class Campaign:
    def __init__(self, config: CampaignConfig, suite: SeedSuite | None = None,
                 backend: MemoryBackend | None = None) -> None:
        self.config = config
        self.out = Path(config.out)
        self.suite = suite if suite is not None else load_suite(resolve_seeds(config.seeds))
        self._backend = backend
        self.progress = Progress(budget=config.budget)
        self.tally = Tally()  # the system's mutant failures (UF@B), causes, baseline and reader failures
        self.failure_log: list[tuple[int, Failure]] = []  # the system's mutant failures in discovery order
        # made by _open and _loop; None (or empty) until the campaign runs
        self.backend: MemoryBackend | None = None
        self.store: Any = None  # CorpusStore
        self.failures: Any = None  # FailureStore (the oracle side's tables)
        self.campaign_id: str | None = None
        self.log: Any = None
        self._log_file: Any = None
        self._stop = threading.Event()
        self.end_reason: str | None = None  # why the loop ended early on its own (time_limit)
        self._deadline: float | None = None
        self.plot: Any = None  # PlotData: plot_data.csv, written as the campaign runs
        self.llm: Any = None
        self.operators: dict[str, Operator] = {}
        self.executor: Executor | None = None
        self.feedback: FeedbackState | None = None
        self.scheduler: Scheduler | None = None
        self.oracle: Oracle | None = None
        self.cases: dict[str, FuzzCase] = {}
        self.judging: dict[str, Any] | None = None  # which levels are judged, with what (summary, status)

    # -- set-up ------------------------------------------------------------------------------------------
    def _open(self):
        from ufuzz.corpus.failures import FailureStore
        from ufuzz.corpus.store import CorpusStore
        from ufuzz.engine.startup import check_start, undo_on_failure

        # where the campaign writes is checked before anything is created, and whatever the set-up creates
        # is removed again if it fails (a backend refusing its options, a full disk): nothing is left behind
        check_start(self.out, self.config.db)
        with undo_on_failure(self.out, self._abandon_start):
            self.out.mkdir(parents=True, exist_ok=True)
            cfg = self.config
            self.backend = self._backend or registry.create(
                cfg.backend, self.out / "backend", cfg.backend_options, isolation=cfg.isolation,
                worker={"recycle_every": cfg.worker_recycle, "max_rss_mb": cfg.worker_max_rss_mb,
                        "call_timeout": cfg.worker_timeout})
            Judging.of(cfg).check(self.backend)  # e.g. hidden retrieval with nothing that responds
            url = self.config.db or f"sqlite:///{(self.out / 'corpus.sqlite').resolve()}"
            self.store = CorpusStore(url)
            # strategy, seed and start second, plus a random tag: two runs started in the same second on one
            # team database must not collide (the tag is not from the campaign's rng: determinism holds)
            self.campaign_id = (f"{self.config.strategy}-s{self.config.seed}-{time.strftime('%Y%m%dT%H%M%S')}"
                                f"-{os.urandom(3).hex()}")
            self.store.start_campaign(self.campaign_id, config=self.config.to_dict(),
                                      backend=self.backend.describe(), seed=self.config.seed,
                                      budget=self.config.budget)
            self.failures = FailureStore(url, self.campaign_id)
            # which campaign of the (possibly shared) store this directory holds: `ufuzz status DIR --db URL`
            (self.out / "campaign.json").write_text(json.dumps({"campaign": self.campaign_id}) + "\n")
            log_file = (self.out / "campaign.log").open("a", encoding="utf-8")
            self._log_file = log_file
        self.log = structlog.wrap_logger(
            structlog.WriteLogger(log_file),
            processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"),
                        structlog.processors.JSONRenderer(sort_keys=True)],
        ).bind(campaign=self.campaign_id)
        from ufuzz.engine.plotdata import PlotData

        self.plot = PlotData(self.out / "plot_data.csv")
        if hasattr(self.backend, "observer"):  # a backend worker: its restarts go to the campaign log
            self.backend.observer = lambda event, **facts: self.log.info(event, **facts)

    def _abandon_start(self) -> None:
        """Close what a failed set-up opened (:func:`ufuzz.engine.startup.undo_on_failure` then removes its
        files); a campaign already recorded in a shared database is marked as ended in error there."""
        if self.store is not None and self.campaign_id is not None:
            try:
                self.store.finish_campaign(self.campaign_id, status="error")
            except Exception:  # noqa: BLE001 - best effort: the set-up's own error is reported
                pass
        for thing in (self._log_file, self.failures, self.store, self.backend):
            try:
                if thing is not None:
                    thing.close()
            except Exception:  # noqa: BLE001 - best effort
                pass
        self._log_file = self.failures = self.store = self.backend = None

    def _sink(self, failure: Failure, reference: Reference) -> None:
        self.failures.record(failure, None, seq=self.progress.executions)
        if self.tally.add(failure):
            self.failure_log.append((self.progress.executions, failure))
            self.log.info("failure", key=failure.key, cause=failure.cause, operator=failure.operator,
                          kind=failure.kind, level=failure.level, case=failure.case_id)
        elif failure.origin == "baseline":
            self.log.info("baseline_failure", seed=failure.seed_id, kind=failure.kind, level=failure.level,
                          responder=failure.responder)

    @property
    def unique_keys(self) -> set[str]:
        """Keys of the system's unique mutant failures (UF@B)."""
        return self.tally.unique

    # -- run ---------------------------------------------------------------------------------------------
    def run(self, on_progress: Callable[[Progress], None] | None = None) -> dict[str, Any]:
        if self.config.max_time is not None:
            self._deadline = time.monotonic() + self.config.max_time
        self._open()
        status = "finished"
        previous = None
        if threading.current_thread() is threading.main_thread():
            # Ctrl-C asks the loop to stop after the current step, so that no backend call, transaction or
            # lock is cut in half; a second Ctrl-C interrupts at once.
            def on_sigint(signum, frame):  # noqa: ARG001 - signal handler signature
                if self._stop.is_set():
                    raise KeyboardInterrupt
                self._stop.set()

            previous = signal.signal(signal.SIGINT, on_sigint)
            # a CI job's timeout sends SIGTERM: stop the same way, once
            previous_term = signal.signal(signal.SIGTERM, lambda s, f: self._stop.set())
        try:
            self._loop(on_progress)
            if self.end_reason is not None:
                status = self.end_reason
            elif self._stop.is_set():
                status = "interrupted"
        except KeyboardInterrupt:
            status = "interrupted"
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
                signal.signal(signal.SIGTERM, previous_term)
            if status == "interrupted":
                self.log.warning("interrupted", executions=self.progress.executions)
            if self.executor is not None:
                self.executor.close()
            self.plot.close(self.progress)
            self.store.finish_campaign(self.campaign_id, status=status)
            summary = self.summary(status)
            (self.out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
            self.log.info("finished", **{k: v for k, v in summary.items() if k != "failures"})
            self._log_file.close()
            for store in (self.store, self.failures):  # a team database must not keep idle connections
                try:
                    store.close()
                except Exception:  # noqa: BLE001 - closing is best effort once the summary is written
                    pass
            try:
                self.backend.close()
            except BackendError:
                pass
        return summary

    def _record_exec(self, ex: Execution, is_parent: bool, checkpoint_id: str) -> None:
        self.progress.executions += 1
        self.store.record_execution(self.campaign_id, ex, is_parent=is_parent, seq=self.progress.executions,
                                    checkpoint_id=checkpoint_id)
        if ex.error is not None:
            self.progress.errors += 1
            self.store.record_error(self.campaign_id, seq=self.progress.executions, case_id=ex.case_id,
                                    operation="execute", message=ex.error)
            self.log.warning("backend_error", case=ex.case_id, error=ex.error)

    def _error(self, case_id: str, operation: str, exc: Exception) -> None:
        self.progress.errors += 1
        self.store.record_error(self.campaign_id, seq=self.progress.executions, case_id=case_id,
                                operation=operation, message=f"{type(exc).__name__}: {exc}")
        self.log.warning("backend_error", case=case_id, operation=operation, error=str(exc))

    def _moves(self, case: FuzzCase) -> list[tuple[str, str]]:
        return [(name, t) for name, op in self.operators.items() for t in op.targets(case)]

    def _loop(self, on_progress: Callable[[Progress], None] | None) -> None:
        cfg = self.config
        judging = Judging.of(cfg)
        self.llm = self._llm_client()
        realizer = None
        if "paraphrase" in cfg.llm_uses:
            from ufuzz.llm.uses import ParaphraseRealizer

            realizer = ParaphraseRealizer(self.llm)
        self.operators = create_all(realizer=realizer, only=tuple(cfg.operators) if cfg.operators else None)
        responder, context = judging.build(self.backend, self.llm)
        self.executor = Executor(self.backend, self.suite.checkpoints, k=cfg.k, responder=responder,
                                 max_live_states=cfg.max_live_states, hidden=not context.visible)
        hidden = self.executor.hidden
        self.judging = judging.describe(self.backend, responder)
        (self.out / "campaign.json").write_text(json.dumps({"campaign": self.campaign_id,
                                                            "judging": self.judging}) + "\n")
        self.oracle = Oracle(self._sink, context, reference_sink=self.failures.record_reference)
        ab = Ablation(**{k: bool(v) for k, v in cfg.ablation.items()})
        self.feedback = FeedbackState(ab, p=cfg.p)
        self.scheduler = Scheduler(random.Random(cfg.seed), SchedulerConfig(
            attempts=cfg.attempts, obligation_first=cfg.obligation_first, retain=cfg.retain,
            use_divergence=ab.use_divergence, operators=tuple(self.operators), explore_share=cfg.explore_share,
            use_effect=cfg.retain))
        self.progress.coverage_total = sum(len(c.memories) for c in self.suite.checkpoints.values())
        seeds = sorted(self.suite.seeds, key=lambda s: s.id)
        cases = [FuzzCase.from_seed(seed, self.suite.checkpoint_of(seed)) for seed in seeds]
        with self.store.batch():  # one commit for the set-up, not one per seed (the stores share the file)
            for cp in self.suite.checkpoints.values():
                self.store.record_checkpoint(self.campaign_id, cp)
            for seed in seeds:
                self.store.record_seed(self.campaign_id, seed)
        with self.failures.batch():
            for case, seed in zip(cases, seeds, strict=True):
                self.oracle.add_seed(case, self.suite.reference_of(seed))
        for case, seed in zip(cases, seeds, strict=True):
            self.cases[case.id] = case
            self.scheduler.add_seed(case.id, seed.id, self._moves(case))
        self.scheduler.seal()
        self.progress.uncovered_obligations = self.scheduler.uncovered()
        self.log.info("started", seeds=len(self.cases), obligations=len(self.scheduler.obligations),
                      backend=self.backend.describe())
        counter = 0
        while self.progress.executions < cfg.budget and not self._stop.is_set():
            if self._deadline is not None and time.monotonic() >= self._deadline:
                self.end_reason = "time_limit"
                break
            task = self.scheduler.next()
            if task is None:
                break
            counter += 1
            self._step(task, counter, hidden)
            self.progress.phase = task.phase
            self.progress.uncovered_obligations = self.scheduler.uncovered()
            self.progress.coverage = sum(self.feedback.coverage_of(cp).reached
                                         for cp in self.suite.checkpoints.values())
            self.progress.unique_failures = len(self.tally.unique)
            self.progress.causes = len(self.tally.causes)
            self.progress.baseline_failures = len(self.tally.baseline)
            self.plot.record(self.progress)
            if on_progress is not None:
                on_progress(self.progress)

    def _llm_client(self) -> Any:
        """The LLM client of every configured LLM use (paraphrase, answer, judge), or None without any."""
        cfg = self.config
        if not cfg.llm_uses:
            return None
        from ufuzz.llm import CallCache, LLMClient, LLMConfig

        return LLMClient(LLMConfig(base_url=cfg.llm_base_url, model=cfg.llm_model or "default",
                                   api_key_env=cfg.llm_api_key_env, timeout=cfg.llm_timeout,
                                   max_retries=cfg.llm_retries), CallCache(cfg.llm_cache))

    def _parent_execution(self, parent: FuzzCase, hidden: bool) -> Execution:
        ex, fresh = self.executor.execute_parent(parent)
        if fresh:
            self._record_exec(ex, is_parent=True, checkpoint_id=parent.checkpoint_id)
            if ex.error is None:
                self.feedback.observe(parent.seed_id, parent.checkpoint_id, ex, None, hidden=hidden)
        return ex

    def _seed_execution(self, seed_id: str, hidden: bool) -> Execution | None:
        """A seed's execution for the oracle's baseline attribution; None once the budget is spent."""
        seed = self.cases[seed_id]
        if not self.executor.has_parent_execution(seed) and self.progress.executions >= self.config.budget:
            return None
        return self._parent_execution(seed, hidden)

    def _step(self, task: Task, counter: int, hidden: bool) -> None:
        """One task: propose and validate a mutant, execute it, then retain or release it. Every path ends
        in exactly one report to the scheduler and releases the mutant's fork unless the mutant was kept."""
        parent = self.cases[task.case_id]
        parent_ex = self._parent_execution(parent, hidden)
        if parent_ex.error is not None or self.progress.executions >= self.config.budget:
            self.scheduler.report(task, NO_MUTANT)
            return
        try:
            testable = self.oracle.testable(parent, parent_ex)
        except LLMError as exc:  # the LLM judge failed on the parent: no verdict, an error record, no mutant now
            self._error(parent.id, "judge", exc)
            self.scheduler.report(task, NO_MUTANT)
            return
        if not testable:
            # the parent fails every level it is judged at: no mutant of it could show a failure the mutation
            # caused, so none is made (the scheduler learns only that the case is done, not why)
            self.scheduler.retire(parent.id)
            self.scheduler.report(task, NO_MUTANT)
            return
        proposal = self._propose(task, parent, counter)
        outcome = StepOutcome(valid=False, final=True) if proposal.final else NO_MUTANT
        try:
            responds = self.executor.answers or self.executor.responder is not None
            if proposal.mutant is not None and not self.oracle.can_fail(proposal.mutant, proposal.mutation.reference,
                                                                        responds):
                # e.g. an abstaining mutant where retrieval is judged without a relevance threshold and nothing
                # responds: executing it would spend budget on a test that cannot fail
                self.progress.mutants_unjudged += 1
                outcome = StepOutcome(valid=False, final=True)
            elif proposal.mutant is not None:
                outcome = self._execute(task, proposal, parent, parent_ex, hidden)
        finally:
            if proposal.handle is not None and not proposal.adopted:
                self.executor.release(proposal.handle)
        self.scheduler.report(task, outcome)

    def _propose(self, task: Task, parent: FuzzCase, counter: int) -> Proposal:
        """Mutate ``parent`` for the task's target and validate the result (never looking at retrieval or
        responses). The mutant is recorded, valid or rejected; a backend fault is an error record."""
        cfg = self.config
        op = self.operators[task.operator]
        rng = random.Random(f"{cfg.seed}:{counter}")
        proposal = Proposal()
        mutation, reason, ok = None, "", False
        try:
            fork_queries = self.backend.capabilities.cheap_fork if cfg.fork_queries is None else cfg.fork_queries
            if op.kind == "state" or (fork_queries and self.executor.copyable):
                proposal.handle = self.executor.fork(parent)
            view = StateView(self.backend, proposal.handle) if op.kind == "state" else None
            mutation = op.mutate(parent, self.oracle.reference_of(parent.id), task.target, rng, view)
            verdict = op.validate(parent, mutation, view)
            ok, reason = verdict.ok, verdict.reason
        except Rejected as exc:
            reason = str(exc)
        except (BackendError, NotImplementedError) as exc:
            self._error(parent.id, f"{op.name}:{task.target}", exc)
            return proposal
        mid = f"x{counter:06d}"
        if mutation is not None:
            mutant = parent.child(mid, operator=op.name, query=mutation.query, provenance=mutation.provenance,
                                  ops=mutation.ops, obligation=task.obligation, detail=mutation.detail)
        else:  # the operator could not produce a mutant for this target: recorded as rejected
            mutant = parent.child(mid, operator=op.name, obligation=task.obligation, detail="not produced")
        self.store.record_mutant(self.campaign_id, mutant, valid=ok, rejection_reason=reason or None,
                                 created_seq=self.progress.executions)
        if not ok or mutation is None:
            self.progress.mutants_rejected += 1
            proposal.final = not op.varies(parent, task.target)
            return proposal
        self.progress.mutants_valid += 1
        proposal.mutant, proposal.mutation = mutant, mutation
        return proposal

    def _execute(self, task: Task, proposal: Proposal, parent: FuzzCase, parent_ex: Execution,
                 hidden: bool) -> StepOutcome:
        """Run a valid mutant on its own state, judge it (the verdict goes to the failure store only) and
        decide from its feedback whether it stays as a parent."""
        cfg = self.config
        mutant, mutation = proposal.mutant, proposal.mutation
        try:
            state = proposal.handle if proposal.handle is not None else self.executor.state_of(parent)
        except BackendError as exc:  # the parent's state could not be rebuilt (e.g. a worker died meanwhile)
            self._error(mutant.id, "state", exc)
            return NO_MUTANT
        ex = self.executor.execute(mutant, state)
        self._record_exec(ex, is_parent=False, checkpoint_id=mutant.checkpoint_id)
        if ex.error is not None:
            return NO_MUTANT
        self.oracle.register(mutant.id, mutation.reference)
        fb = self.feedback.observe(mutant.seed_id, mutant.checkpoint_id, ex, parent_ex, hidden=hidden, p=cfg.p)
        self.store.record_feedback(self.campaign_id, mutant.id, fb, seq=self.progress.executions)
        try:
            self.oracle.check(mutant, ex, parent, parent_ex, run_seed=lambda sid: self._seed_execution(sid, hidden))
        except LLMError as exc:  # the LLM judge failed: no verdict for this mutant, an error record, never a failure
            self._error(mutant.id, "judge", exc)
        op = self.operators[task.operator]
        if not (fb.retained and cfg.retain and mutant.depth < cfg.max_depth):
            self.oracle.forget(mutant.id)
            return StepOutcome(valid=True, coverage_gain=fb.coverage_gain, divergence=fb.divergence,
                               meaning_preserving=op.meaning_preserving)
        self.progress.retained += 1
        self.cases[mutant.id] = mutant
        self.executor.remember(mutant, ex)
        if proposal.handle is not None:
            self.executor.adopt(mutant, proposal.handle)
            proposal.adopted = True
        return StepOutcome(valid=True, retained=True, new_case_id=mutant.id, moves=tuple(self._moves(mutant)),
                           coverage_gain=fb.coverage_gain, divergence=fb.divergence,
                           meaning_preserving=op.meaning_preserving)

    # -- results -----------------------------------------------------------------------------------------
    def summary(self, status: str = "finished") -> dict[str, Any]:
        by_op: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        for _, f in self.failure_log:
            by_op[f.operator] = by_op.get(f.operator, 0) + 1
            by_kind[f"{f.stage}:{f.kind}"] = by_kind.get(f"{f.stage}:{f.kind}", 0) + 1
        p = self.progress
        return {
            "campaign": self.campaign_id, "status": status, "executions": p.executions,
            "budget": p.budget, "mutants_valid": p.mutants_valid, "mutants_rejected": p.mutants_rejected,
            "mutants_unjudged": p.mutants_unjudged,
            "retained": p.retained, "coverage": p.coverage, "coverage_total": p.coverage_total,
            "obligations": len(self.scheduler.obligations) if self.scheduler is not None else 0,
            # seed obligations covered (a phase-2 pick also covers its own seed x operator x target, counted
            # only when that is one of the seeds' obligations)
            "obligations_covered": len(self.scheduler.covered & self.scheduler.obligations)
            if self.scheduler is not None else 0,
            "unique_failures": len(self.tally.unique), "causes": len(self.tally.causes),
            "failures_by_operator": by_op, "failures_by_kind": by_kind,
            "baseline_failures": len(self.tally.baseline), "reader_failures": len(self.tally.reader),
            "judging": self.judging, "errors": p.errors,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "llm": self.llm.stats() if self.llm is not None else None,
            "worker": stats.to_dict() if (stats := getattr(self.backend, "stats", None))
            is not None and hasattr(stats, "to_dict") else None,
            "failures": sorted(f.key for _, f in self.failure_log),
        }
