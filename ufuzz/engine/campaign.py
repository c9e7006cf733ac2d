"""A fuzzing campaign: seeds → obligations → mutants → isolated executions → feedback → oracles.

Budget: the number of executions of U(q, M) on the backend — every retrieval (+ response) of a parent or a
mutant counts one. Cached parent executions are not re-run and not re-counted; mutants that their validator
rejects are never executed and not counted (they are recorded as rejected).

How it ends (:mod:`ufuzz.engine.ending`): ``budget_spent``, ``exhausted`` (no obligation or pool entry left),
``time_limit``, ``interrupted`` (Ctrl-C / SIGTERM: the current step finishes first) or ``error`` — any exception,
a failed preflight round trip, ``max_consecutive_errors`` backend errors in a row, a corpus that cannot be
written. The reason is recorded in the store, in ``summary.json`` and in the exit code; nothing that happens
while closing can turn a crash into a "normal" end or raise a second error.

Durability and resume: records are committed window by window (:mod:`ufuzz.corpus.window`) together with a
snapshot of the engine's state (:meth:`Campaign._snapshot`), so a killed, interrupted or errored campaign
continues from its committed prefix (:meth:`Campaign.resume`); on a deterministic backend the continued
campaign is the uninterrupted one — same executions, mutants and failures.

Each step is a task from the scheduler, worked on in two parts: *propose and execute* (operators and backend),
which runs in a lane (:mod:`ufuzz.engine.lane`: the campaign's own thread with ``--workers 1``; threads, child
processes or Ray actors otherwise), a batch of tasks at a time, and *apply* (records, feedback, oracle,
scheduler: :meth:`Campaign._apply_batch`), done here in task order (:meth:`Campaign._loop`). There is one step
path: the campaign of ``--workers 1`` is one lane of it. ``plot_data.csv`` (:mod:`ufuzz.engine.plotdata`)
records the curve as it goes.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import structlog

from ufuzz.backends import registry
from ufuzz.backends.protocol import MemoryBackend
from ufuzz.engine import dirlock, ending
from ufuzz.engine.cases import CaseBook
from ufuzz.engine.cover import expected_reach
from ufuzz.engine.executor import Executor
from ufuzz.engine.feedback import Ablation, FeedbackState
from ufuzz.engine.proposal import Proposal, propose
from ufuzz.engine.scheduler import NO_MUTANT, Scheduler, SchedulerConfig, StepOutcome, Task
from ufuzz.engine.snapshot import SnapshotError, dump, load
from ufuzz.llm.client import LLMError, client_for
from ufuzz.model import Execution, FuzzCase, Reference, SeedSuite
from ufuzz.operators import create_all
from ufuzz.operators import names as operator_names
from ufuzz.operators.base import Operator
from ufuzz.oracles.judging import READERS, Judging
from ufuzz.oracles.oracle import Oracle
from ufuzz.oracles.verdict import Failure, Tally
from ufuzz.seeds.io import load_suite

LLM_USES = ("paraphrase", "answer", "judge")
SEARCHES = ("auto", "walk", "spread")
DEFAULT_SEEDS = Path(__file__).resolve().parents[2] / "seeds" / "default.jsonl"
HEARTBEAT_SECONDS = 30.0
#: backend errors in a row at the end of a budget that make it an outage (an error end) even with
#: ``--max-consecutive-errors 0`` (the default limit, which would have stopped the campaign there)
OUTAGE_RUN = 20


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
    # phase 1: "walk" the seeds one by one, "spread" over them by greedy cover and operator yield (the search for
    # suites larger than the budget: ufuzz.engine.scheduler), "auto": spread when the suite has more seeds than
    # the budget has executions
    search: str = "auto"
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
    # what the LLM answerer says when it abstains (--abstain-phrase), and whether the built-in phrases count too
    abstain_phrases: tuple[str, ...] = ()
    abstain_defaults: bool = True
    llm_cache: str | None = None  # call-cache file; None = $UFUZZ_CACHE_DIR/llm_calls.sqlite or ~/.cache/ufuzz
    #: the user's own prompts ({use: {"version", "system"}}, from --prompts DIR); None = the defaults
    prompts: dict[str, dict[str, str]] | None = None
    max_time: float | None = None  # wall seconds of this run; then it ends with reason time_limit
    # "auto": retrieval as the backend exposes it; "hidden": only responses are observed, judged and fed back
    # (a product that only answers; --retrieval-visibility hidden); "visible": require visible retrieval
    retrieval: str = "auto"
    # this many backend errors in a row (no successful execution between them) end the campaign as an error;
    # 0 = never
    max_consecutive_errors: int = 20
    preflight: bool = True  # a round trip through the backend (and LLM endpoint) before anything is spent
    # Write windows and resume snapshots: how much a kill may cost and how often the engine state is saved.
    # They change nothing in a campaign's results.
    window_records: int = 256
    window_seconds: float = 1.0
    snapshot_seconds: float = 0.0  # at least this long between snapshots (0: every window unless slow)
    # Parallel runs (ufuzz.engine.lanes): N > 1 runs batches of tasks in N lanes, each with a backend of its own,
    # and applies the results in task order — the same seed and N give the same campaign. ray_address runs the
    # lanes as Ray actors ("local": a cluster this process starts; "auto", "host:port", "ray://host:port").
    workers: int = 1
    ray_address: str | None = None
    # Calls in flight from one process (--max-concurrency N; Inspect's max_connections, promptfoo's
    # --max-concurrency): N thread lanes (ufuzz.engine.threadlanes) share the campaign's backend and LLM client,
    # so up to N LLM requests (answer, judge, paraphrase) and N backend calls wait at once. Batches are those of
    # workers x N lanes, applied in task order: the same seed and lanes give the same campaign; 1 is the serial one.
    max_concurrency: int = 1
    # Being a good API citizen (ufuzz.llm.ratelimit): requests and tokens per minute (None: no limit), the wait
    # a call may spend on 429/503 answers, prices for the cost estimate (USD per million prompt, completion
    # tokens) and a token budget that ends the campaign (reason llm_budget_spent)
    llm_rpm: float | None = None
    llm_tpm: float | None = None
    llm_rate_limit_wait: float = 600.0
    llm_price: tuple[float, float] | None = None
    max_llm_tokens: int | None = None

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
        if self.search not in SEARCHES:
            raise ValueError(f"--search must be one of {', '.join(SEARCHES)}, not {self.search!r}")
        if self.isolation not in registry.ISOLATION:
            raise ValueError(f"--isolation must be one of {', '.join(registry.ISOLATION)}, not {self.isolation!r}")
        if self.worker_recycle < 0 or (self.worker_max_rss_mb or 0) < 0 or self.worker_timeout <= 0:
            raise ValueError("--worker-recycle and --worker-max-rss-mb must be >= 0, --worker-timeout > 0")
        if self.max_time is not None and not self.max_time > 0:
            raise ValueError(f"--max-time must be positive, not {self.max_time}")
        if self.max_consecutive_errors < 0:
            raise ValueError(f"--max-consecutive-errors must be >= 0, not {self.max_consecutive_errors}")
        if not 0 < self.llm_timeout <= 3600 or not 0 <= self.llm_retries <= 10:
            raise ValueError("--llm-timeout must be in (0, 3600] seconds and --llm-retries in [0, 10]")
        if self.window_records < 1 or self.window_seconds < 0 or self.snapshot_seconds < 0:
            raise ValueError("window_records must be >= 1, window_seconds and snapshot_seconds >= 0")
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1:
            raise ValueError(f"--workers must be a whole number of at least 1, not {self.workers!r}")
        self._check_llm_limits()
        if self.ray_address is not None:
            from ufuzz.engine.raylanes import check_address

            check_address(self.ray_address, self.db)

    def _check_llm_limits(self) -> None:
        c = self.max_concurrency
        if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= 1024:
            raise ValueError(f"--max-concurrency must be a whole number in [1, 1024], not {c!r}")
        if c > 1 and self.ray_address is not None:
            raise ValueError("--max-concurrency N does not combine with --ray-address yet (Ray lanes are one "
                             "call at a time; use --workers N --max-concurrency M on one machine)")
        for name in ("llm_rpm", "llm_tpm"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < 1e12):
                raise ValueError(f"--{name.replace('_', '-')} must be a positive number, not {v!r}")
        if not 0 <= self.llm_rate_limit_wait <= 86400:
            raise ValueError(f"--llm-rate-limit-wait must be in [0, 86400] seconds, not {self.llm_rate_limit_wait}")
        if self.llm_price is not None:
            price = tuple(self.llm_price)
            if len(price) != 2 or any(isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p < 1e9
                                      for p in price):
                raise ValueError(f"--llm-price must be two non-negative numbers IN,OUT (USD per million prompt "
                                 f"and completion tokens), not {self.llm_price!r}")
            self.llm_price = (float(price[0]), float(price[1]))
        t = self.max_llm_tokens
        if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t < 1):
            raise ValueError(f"--max-llm-tokens must be a whole number of at least 1, not {t!r}")
        if t is not None and not self.llm_uses:
            raise ValueError("--max-llm-tokens needs --llm-uses (no LLM is called without one)")

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

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CampaignConfig:
        """A config as :meth:`to_dict` stored it (keys this version does not know are ignored)."""
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        for name in ("llm_uses", "operators", "llm_price"):
            if kw.get(name) is not None:
                kw[name] = tuple(kw[name])
        return cls(**kw)


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
    reader_failures: int = 0
    errors: int = 0
    uncovered_obligations: int = 0
    phase: int = 1


class ResumeError(ValueError):
    """A campaign directory that cannot be resumed (nothing there, still running, nothing left to do)."""


def resolve_seeds(path: str | None) -> Path:
    return Path(path) if path else DEFAULT_SEEDS


class _LogFile:
    """The campaign log's file: a line is written whole or not at all (on a full disk the file is cut back
    to the last complete line and the error is raised)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, text: str) -> None:
        size = os.fstat(self._fd).st_size
        try:
            self._emit(text.encode("utf-8"))
        except OSError:
            try:
                os.ftruncate(self._fd, size)
            except OSError:
                pass
            raise

    def _emit(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

    def flush(self) -> None:
        pass

    def close(self) -> None:
        os.close(self._fd)


class Campaign:
    def __init__(self, config: CampaignConfig, suite: SeedSuite | None = None,
                 backend: MemoryBackend | None = None) -> None:
        self.config = config
        self.out = Path(config.out)
        self.suite = suite if suite is not None else load_suite(resolve_seeds(config.seeds),
                                                                memory_ops=operator_names("state"))
        self._backend = backend
        self.progress = Progress(budget=config.budget)
        self.tally = Tally()  # the system's mutant failures (UF@B), causes, baseline and reader failures
        self.failure_log: list[tuple[int, Failure]] = []  # the system's mutant failures in discovery order
        # made by _open and _prepare; None (or empty) until the campaign runs
        self.backend: MemoryBackend | None = None
        self.store: Any = None  # CorpusStore
        self.failures: Any = None  # FailureStore (the oracle side's tables)
        self.window: Any = None  # WriteWindow shared by both stores
        self.campaign_id: str | None = None
        self.log: Any = None
        self._log_file: Any = None
        self._stop = threading.Event()
        self.plot: Any = None  # PlotData: plot_data.csv, written as the campaign runs
        self.llm: Any = None
        self.operators: dict[str, Operator] = {}
        self.executor: Executor | None = None
        self.lanes: Any = None  # LanePool of a parallel campaign (workers > 1 or Ray); None runs here
        self._ray: Any = None  # the Ray connection this campaign made (closed with it)
        self.feedback: FeedbackState | None = None
        self.scheduler: Scheduler | None = None
        self.oracle: Oracle | None = None
        self.cases = CaseBook()
        self.judging: dict[str, Any] | None = None  # which levels are judged, with what (summary, status)
        self.preflight: dict[str, Any] | None = None  # what the preflight round trip saw
        self.step = 0  # tasks begun (the step counter that names mutants and seeds their rng)
        self.reason: str | None = None  # how the campaign ended (ufuzz.engine.ending)
        self.message: str | None = None  # why, for an error
        self.warnings: list[str] = []  # what went wrong while closing (the user is told)
        self.resumed_from: int | None = None  # the step a resumed campaign went on from
        self._resume_id: str | None = None
        self._deadline: float | None = None
        self._consecutive = 0  # backend errors since the last successful execution
        self._last_error = ""
        self._at_boundary = True  # between steps: the state is the one the committed records describe
        self._mark: tuple[Progress, int] = (replace(self.progress), 0)  # at the end of the last step
        self._committed: tuple[Progress, int] = self._mark  # at the last committed window
        self._last_snapshot = 0.0
        self._snapshot_cost = 0.0
        self._drawn = 0  # tasks drawn from the scheduler (a parallel campaign draws ahead of what it applied)
        self._inflight: dict[str, Any] | None = None  # a parallel campaign's batch queued and not yet applied
        self._heartbeat_stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._lane_llm: dict[str, int] = {}  # what process lanes' own LLM clients did (calls, tokens …)
        self._shielded = 0  # > 0 while committing or closing: a second Ctrl-C waits for it (see run)
        self._interrupted_now = False  # a second Ctrl-C has interrupted the campaign (only one ever does)
        self.on_setup: Callable[[str], None] | None = None  # told each set-up phase (large suites: the CLI)
        self._lock: Any = None  # DirectoryLock of the campaign directory, held from _open to the end of _finish

    # -- resume --------------------------------------------------------------------------------------------
    @classmethod
    def resume(cls, out: str | Path, db: str | None = None, *, backend: MemoryBackend | None = None,
               budget: int | None = None, backend_options: dict[str, Any] | None = None,
               **overrides: Any) -> Campaign:
        """The campaign recorded in ``out`` (its corpus in ``db``, default the directory's SQLite file), ready
        to :meth:`run` on from its last committed snapshot: to its budget, or to ``budget`` when given.
        ``backend_options`` are merged over the stored ones (secrets are never stored); ``overrides`` set
        run-time fields (``max_consecutive_errors``, ``max_time``, ``preflight``, window sizes). Raises
        :class:`ResumeError`."""
        from ufuzz.corpus.failures import FailureStore
        from ufuzz.corpus.store import CorpusStore

        out = Path(out)
        busy = dirlock.holder(out)  # read only: the lock itself is taken when the campaign opens
        if busy is not None:
            raise dirlock.DirectoryLocked(out, busy)
        cid = _directory_campaign(out)
        if db is None and not (out / "corpus.sqlite").is_file():
            raise ResumeError(f"{out}: no campaign to resume here (no corpus.sqlite; pass --db URL if the corpus "
                              "is elsewhere)")
        url = db or f"sqlite:///{(out / 'corpus.sqlite').resolve()}"
        store = CorpusStore(url, readonly=True)  # only checks here: nothing is written before the campaign opens
        try:
            if cid is None:
                from ufuzz.corpus.campaign import resolve_campaign

                cid = resolve_campaign(store, out)
            rec = store.campaign(cid)
            if rec is None:
                raise ResumeError(f"{out}: campaign {cid!r} is not in {store.url}")
            if rec.status == ending.RUNNING and rec.pid != os.getpid() and ending.process_alive(rec.pid, rec.host):
                raise dirlock.DirectoryLocked(out, {"pid": rec.pid, "host": rec.host, "campaign": cid})
            config = CampaignConfig.from_dict(rec.config)
            config.out, config.db = str(out), db if db is not None else config.db
            config.backend_options = {**config.backend_options, **(backend_options or {})}
            for name, value in overrides.items():
                if value is not None:
                    setattr(config, name, value)
            snap = store.snapshot(cid)
            done = snap.seq if snap is not None else 0
            if budget is not None:
                if budget <= done:
                    raise ResumeError(f"--budget {budget}: campaign {cid} has already made {done} executions")
                config.budget = budget
            elif rec.status == ending.BUDGET_SPENT and (out / "summary.json").is_file():
                raise ResumeError(f"campaign {cid} already spent its budget of {rec.budget} executions; pass "
                                  "--budget N (more than that) to go on")
            config.__post_init__()
            suite = None
            if snap is not None:  # the suite as the campaign recorded it (the seed file may have moved)
                suite = SeedSuite(name="resumed", checkpoints=store.checkpoints(cid), seeds=store.seeds(cid))
        finally:
            store.close()
        if suite is None:
            path = resolve_seeds(config.seeds)
            if not path.is_file():
                raise ResumeError(f"campaign {cid} has no snapshot yet and its seed file {path} is gone")
        with FailureStore(url, cid, readonly=True):  # the oracle side's tables exist (an old database fails here)
            pass
        obj = cls(config, suite=suite, backend=backend)
        obj._resume_id = cid
        return obj

    # -- set-up ------------------------------------------------------------------------------------------
    def _open(self):
        from ufuzz.corpus.failures import FailureStore
        from ufuzz.corpus.store import CorpusStore
        from ufuzz.engine.plotdata import PlotData
        from ufuzz.engine.startup import check_start, undo_on_failure

        # where the campaign writes is checked before anything is created, and whatever the set-up creates
        # is removed again if it fails (a backend refusing its options or failing its preflight round trip, a
        # full disk): nothing is left behind
        check_start(self.out, self.config.db)
        cfg = self.config
        if cfg.ray_address is not None:  # before anything is created: an unreachable cluster leaves nothing
            from ufuzz.engine.raylanes import connect

            self._ray = connect(cfg.ray_address, cfg.workers)
        with undo_on_failure(self.out, self._abandon_start):
            self.out.mkdir(parents=True, exist_ok=True)
            self._lock = dirlock.DirectoryLock.acquire(self.out)  # one writer per directory, for its whole life
            for stray in (*self.out.glob(".summary.json.*.tmp"), *self.out.glob(".campaign.json.*.tmp")):
                stray.unlink(missing_ok=True)  # a kill inside an atomic write left it (the directory is ours now)
            self._setup(f"starting backend {cfg.backend!r}")
            self.backend = self._backend or registry.create(
                cfg.backend, self.out / "backend", cfg.backend_options, isolation=cfg.isolation,
                worker={"recycle_every": cfg.worker_recycle, "max_rss_mb": cfg.worker_max_rss_mb,
                        "call_timeout": cfg.worker_timeout})
            Judging.of(cfg).check(self.backend)  # e.g. hidden retrieval with nothing that responds
            self.llm = self._llm_client()
            if cfg.preflight:
                from ufuzz.engine.preflight import preflight

                self._setup("preflight round trip")
                self.preflight = preflight(self.backend, self.llm)
            self.lanes = self._start_lanes()
            url = cfg.db or f"sqlite:///{(self.out / 'corpus.sqlite').resolve()}"
            self.store = CorpusStore(url)
            me = {"pid": os.getpid(), "host": socket.gethostname()}
            if self._resume_id is not None:
                self.campaign_id = self._resume_id
                self.store.resume_campaign(self.campaign_id, budget=cfg.budget, **me)
            else:
                # strategy, seed and start second, plus a random tag: two runs started in the same second on one
                # team database must not collide (the tag is not from the campaign's rng: determinism holds)
                self.campaign_id = (f"{cfg.strategy}-s{cfg.seed}-{time.strftime('%Y%m%dT%H%M%S')}"
                                    f"-{os.urandom(3).hex()}")
                self.store.start_campaign(self.campaign_id, config=cfg.to_dict(),
                                          backend=self.backend.describe(), seed=cfg.seed, budget=cfg.budget, **me)
            self._lock.write(self.campaign_id)
            self.failures = FailureStore(url, self.campaign_id)
            # which campaign of the (possibly shared) store this directory holds: `ufuzz status DIR --db URL`
            ending.write_atomic(self.out / "campaign.json", json.dumps({"campaign": self.campaign_id}) + "\n")
            self._log_file = _LogFile(self.out / "campaign.log")
        self.log = structlog.wrap_logger(
            structlog.WriteLogger(self._log_file),
            processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"),
                        structlog.processors.JSONRenderer(sort_keys=True)],
        ).bind(campaign=self.campaign_id)
        # a resumed campaign's curve goes on in the same file (its rows after the snapshot are redone)
        self.plot = PlotData(self.out / "plot_data.csv", append=self._resume_id is not None)
        if hasattr(self.backend, "observer"):  # a backend worker: its restarts go to the campaign log
            self.backend.observer = lambda event, **facts: self.log.info(event, **facts)
        if self.lanes is not None:  # a lane that dies is logged (its jobs are error records)
            self.lanes.observer = lambda event, **facts: self._log_safely("warning", event, **facts)

    @property
    def lane_count(self) -> int:
        """Lanes of the campaign (``--workers`` × ``--max-concurrency``): what its batches are made of."""
        return self.config.workers * self.config.max_concurrency

    def _start_lanes(self) -> Any:
        """The campaign's lanes, started (each builds its own backend: a bad option fails here, cleanly). One
        lane, in this thread over this process's backend, is the campaign of ``--workers 1``."""
        from ufuzz.backends.protocol import BackendUnavailable
        from ufuzz.engine.lane import InProcessLane
        from ufuzz.engine.lanes import LaneCore, LaneDied, LanePool, LaneSpec, ProcessLane

        cfg = self.config
        try:
            cls = registry.load(cfg.backend)
        except KeyError:
            cls = type(self._backend)
        spec = LaneSpec.of(cfg, cls, self.suite.checkpoints)
        if self._ray is not None:
            lanes = self._ray.lanes(spec, cfg.workers)
        elif cfg.max_concurrency > 1 and cfg.workers > 1:  # N processes of M thread lanes each
            from ufuzz.engine.threadlanes import slot_lanes

            lanes = slot_lanes(spec, self.out / "lanes", cfg.workers, cfg.max_concurrency)
        elif cfg.max_concurrency > 1:
            lanes = self._thread_lanes(spec)
        elif cfg.workers == 1:  # nothing would overlap: the lane's work is done when its answer is asked for
            lanes = [InProcessLane(0, LaneCore(spec, self.out / "lanes" / "lane0", backend=self.backend, llm=self.llm,
                                               prejudge=False))]
        else:
            lanes = [ProcessLane(i, spec, self.out / "lanes" / f"lane{i}") for i in range(cfg.workers)]
        pool = LanePool(lanes)
        try:
            pool.start()
        except LaneDied as exc:
            raise BackendUnavailable(str(exc)) from None
        return pool

    def _thread_lanes(self, spec: Any) -> list[Any]:
        """``--max-concurrency N`` thread lanes over this campaign's backend and LLM client."""
        from ufuzz.engine.executor import SharedStates
        from ufuzz.engine.lanes import LaneCore
        from ufuzz.engine.threadlanes import ThreadLane, shareable

        backend = shareable(self.backend)
        states = SharedStates(backend)  # checkpoint states, built once for all lanes
        signal_ = threading.Condition()

        def core(i: int) -> Callable[[], Any]:
            return lambda: LaneCore(spec, self.out / "lanes" / f"lane{i}", backend=backend, llm=self.llm,
                                    shared=states)

        lanes = [ThreadLane(i, core(i), signal_) for i in range(self.config.max_concurrency)]
        lanes[-1].after_close = states.close  # the pool closes lanes in order: the last releases the shared states
        return lanes

    def _abandon_start(self) -> None:
        """Close what a failed set-up opened (:func:`ufuzz.engine.startup.undo_on_failure` then removes its
        files); a campaign already recorded in a shared database is marked as ended in error there."""
        if self.store is not None and self.campaign_id is not None:
            try:
                self.store.finish_campaign(self.campaign_id, status=ending.ERROR,
                                           message="the campaign failed to start")
            except Exception:  # noqa: BLE001 - best effort: the set-up's own error is reported
                pass
        things = (self._log_file, self.failures, self.store, None if self._backend is not None else self.backend,
                  self.lanes, self._ray)
        for thing in things:
            try:
                if thing is not None:
                    thing.close()
            except Exception:  # noqa: BLE001 - best effort
                pass
        self._log_file = self.failures = self.store = self.backend = self.lanes = self._ray = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _prepare(self) -> None:
        """Operators, executor, oracle and the write window; then either the seeds (a new campaign) or the
        state of the last snapshot (a resumed one)."""
        self._at_boundary = False  # half-built until the seeds' first snapshot (or the restored one) is in place
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
                                 max_live_states=cfg.max_live_states, hidden=not context.visible)
        self.judging = judging.describe(self.backend, responder)
        ending.write_atomic(self.out / "campaign.json", json.dumps({"campaign": self.campaign_id,
                                                                   "judging": self.judging,
                                                                   "llm": self._llm_facts()}) + "\n")
        self.oracle = Oracle(self._sink, context, reference_sink=self.failures.record_reference)
        self.window = self.store.open_window(max_records=cfg.window_records, max_seconds=cfg.window_seconds)
        self.store.attach(self.window)
        self.failures.attach(self.window)
        self.progress.coverage_total = sum(len(c.memories) for c in self.suite.checkpoints.values())
        if self._resume_id is not None and self._restore():
            return
        self._seed()

    def _seed(self) -> None:
        """A new campaign (or a resumed one that had no snapshot yet): seeds, obligations, the first snapshot."""
        cfg = self.config
        if self._resume_id is not None:  # start over: what a snapshot-less campaign committed is dropped
            self.store.rollback(self.campaign_id, step=-1, seq=0)
            self.failures.reset()
        ab = Ablation(**{k: bool(v) for k, v in cfg.ablation.items()})
        self.feedback = FeedbackState(ab, p=cfg.p)
        self.feedback.track(list(self.suite.checkpoints.values()))
        self.scheduler = Scheduler(random.Random(cfg.seed), SchedulerConfig(
            attempts=cfg.attempts, obligation_first=cfg.obligation_first, retain=cfg.retain,
            use_divergence=ab.use_divergence, operators=tuple(self.operators), explore_share=cfg.explore_share,
            use_effect=cfg.retain, spread=self.spreads() and cfg.obligation_first))
        memories = sum(len(cp.memories) for cp in self.suite.checkpoints.values())
        self._setup(f"recording {len(self.suite.checkpoints)} checkpoints ({memories:,} memories) and "
                    f"{len(self.suite.seeds)} seeds")
        for cp in self.suite.checkpoints.values():
            self.store.record_checkpoint(self.campaign_id, cp)
        seeds = sorted(self.suite.seeds, key=lambda s: s.id)
        for seed in seeds:
            cp = self.suite.checkpoint_of(seed)
            case = FuzzCase.from_seed(seed, cp)
            self.cases.add_seed(case)
            self.oracle.add_seed(case, self.suite.reference_of(seed))
            self.store.record_seed(self.campaign_id, seed)
            self.scheduler.add_seed(case.id, seed.id, self._moves(case), reach=expected_reach(seed, cp), group=cp.id)
        self.scheduler.seal()
        self.progress.uncovered_obligations = self.scheduler.uncovered()
        self._setup("first snapshot; then the first states are built as the first steps need them")
        self._end_step(force_snapshot=True)
        self.log.info("started", seeds=len(seeds), obligations=len(self.scheduler.obligations),
                      backend=self.backend.describe(), preflight=self.preflight)

    def spreads(self) -> bool:
        """Whether phase 1 spreads over the seeds (``--search``; auto: more seeds than budget)."""
        cfg = self.config
        return cfg.search == "spread" or (cfg.search == "auto" and len(self.suite.seeds) > cfg.budget)

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
        """Run (or, made by :meth:`resume`, continue) the campaign; returns its summary. Bad input or a failed
        preflight raises before anything is recorded; from then on the campaign always ends with a reason."""
        if self.config.max_time is not None:
            self._deadline = time.monotonic() + self.config.max_time
        self._open()
        previous = previous_term = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, self._on_sigint)
            # a CI job's timeout sends SIGTERM: stop the same way, once
            previous_term = signal.signal(signal.SIGTERM, lambda s, f: self._stop.set())
        try:
            self._start_heartbeat()
            try:
                self._prepare()
                self.reason = self._loop(on_progress)
                p = self.progress
                if self.reason == ending.BUDGET_SPENT and not self.config.max_consecutive_errors \
                        and self._consecutive >= OUTAGE_RUN:
                    # --max-consecutive-errors 0 goes on through an outage, but a budget that ran out in one is
                    # not a campaign that ended well: its last executions tested nothing
                    self.reason = ending.ERROR
                    self.message = (f"the budget ran out in an outage: the last {self._consecutive} executions were "
                                    f"backend errors in a row (--max-consecutive-errors 0); the last: "
                                    f"{self._last_error}")
                if self.reason != ending.INTERRUPTED and p.executions and p.errors >= p.executions:
                    self.reason = ending.ERROR  # it ran, but nothing of it was a test
                    self.message = self.message or (
                        f"every one of the {p.executions} executions was a backend error: the backend is "
                        f"unreachable or broken; the last: {self._last_error}")
                self._shielded += 1  # from here to the end, a Ctrl-C no longer interrupts (see _on_sigint)
            except KeyboardInterrupt:
                self._shielded += 1
                self.reason = ending.INTERRUPTED
            except Exception as exc:  # noqa: BLE001 - any fault ends the campaign as an error, truthfully
                self._shielded += 1
                self.reason, self.message = ending.ERROR, ending.describe(exc)
                self._log_safely("error", "crashed", error=self.message, traceback=traceback.format_exc())
            except BaseException:
                self._shielded += 1
                self.reason, self.message = ending.ERROR, "aborted"
                self._finish()
                raise
            return self._finish()
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
                signal.signal(signal.SIGTERM, previous_term)

    def _on_sigint(self, signum: int, frame: Any) -> None:  # noqa: ARG002 - signal handler signature
        """Ctrl-C asks the loop to stop after the current step, so that no backend call, transaction or lock is
        cut in half. A second Ctrl-C stops at once — "stop now, resume later": the step in progress is dropped
        (its records are not committed, no snapshot is taken of a state it has begun to change) and the resume
        redoes it from the last snapshot. It never interrupts a commit, a snapshot or the campaign's end (it
        waits for them: they are short), and only one interrupt is ever raised, so that the end itself always
        runs and records how the campaign ended."""
        if not self._stop.is_set():
            self._stop.set()
            return
        if self._shielded or self._interrupted_now:
            return
        self._interrupted_now = True
        raise KeyboardInterrupt

    def _ending(self) -> str | None:
        """Why the campaign must end before its next step or batch (budget, Ctrl-C, time limit, LLM token
        budget), or None."""
        if self.progress.executions >= self.config.budget:
            return ending.BUDGET_SPENT
        limit = self.config.max_llm_tokens
        if limit is not None and self.llm is not None:
            used = self.llm.total_tokens + self._lane_llm.get("total_tokens", 0)
            if used >= limit:
                self.message = (f"{used} LLM tokens used, the --max-llm-tokens budget of {limit} (the calls in "
                                "flight when it was reached finished first)")
                return ending.LLM_BUDGET_SPENT
        if self._stop.is_set():
            return ending.INTERRUPTED
        if self._deadline is not None and time.monotonic() >= self._deadline:
            return ending.TIME_LIMIT
        return None

    def _too_many_errors(self) -> bool:
        """``max_consecutive_errors`` backend errors in a row: the campaign ends as an error, saying why."""
        limit = self.config.max_consecutive_errors
        if not (limit and self._consecutive >= limit):
            return False
        self.message = (f"{self._consecutive} backend errors in a row (--max-consecutive-errors {limit}); "
                        f"the last: {self._last_error}")
        return True

    def _loop(self, on_progress: Callable[[Progress], None] | None) -> str:
        """The campaign's loop: batches of tasks (:func:`ufuzz.engine.lanes.batch_size`; one task with one lane),
        each drawn and queued to the lanes before the previous one is applied, so that the lanes work on batch
        k+1 while this process applies batch k in task order (:meth:`_apply_batch`). Which tasks a batch holds
        is fixed by the seed and the number of lanes alone. Between batches is the place to stop, to commit and
        to snapshot (the batch in flight is part of the snapshot, and a resumed campaign queues it again)."""
        from ufuzz.engine.lanes import batch_size

        hidden = self.executor.hidden
        size = batch_size(self.lane_count)
        if self._inflight is not None and "tickets" not in self._inflight:  # resumed: queue it again
            self._inflight["tickets"] = self.lanes.submit(self._inflight["jobs"])
        while True:
            reason = self._ending()
            if reason is not None:
                return reason
            self._at_boundary = False  # drawing changes the scheduler: a boundary again once the batch is queued
            nxt = self._draw(size)
            if self._inflight is None:
                if nxt is None:
                    self._at_boundary = True
                    return ending.EXHAUSTED
                self._inflight = nxt
                self._at_boundary = True  # the batch in flight is part of the snapshot
                if size > 1:  # the pipeline fills: the next batch is drawn before this one is applied
                    continue
                nxt = None  # one lane: step by step
            current, self._inflight = self._inflight, nxt
            self._at_boundary = False
            self._apply_batch(current, hidden)
            self._end_step(counted=True)
            if self._too_many_errors():
                return ending.ERROR
            if on_progress is not None:
                on_progress(self.progress)

    def _draw(self, size: int) -> dict[str, Any] | None:
        """The next batch: up to ``size`` tasks from the scheduler, their jobs made and queued to the lanes.
        With thread lanes (``--max-concurrency``), no more tasks than the budget has executions left beyond the
        batch in flight (each task spends at least one): near the end, tasks that could not be applied would
        still pay for their LLM calls."""
        from ufuzz.engine.lanes import LaneJob

        if self.config.max_concurrency > 1:
            ahead = len(self._inflight["batch"]) if self._inflight is not None else 0
            size = max(1, min(size, self.config.budget - self.progress.executions - ahead))
        batch: list[tuple[Task, int]] = []
        while len(batch) < size:
            task = self.scheduler.next()
            if task is None:
                break
            self._drawn += 1
            batch.append((task, self._drawn))
        if not batch:
            return None
        # A parent not executed yet gets a job of its own, ahead of its tasks' jobs, which the lanes start only
        # once it is in, and skip when it fails its reference everywhere (no mutant of it could show a failure);
        # a parent that a job of the batch in flight executes is not run again.
        planned = {(j.parent.state_key, j.parent.query.text) for j in (self._inflight or {}).get("jobs", ())
                   if j.task is None}
        jobs = []
        # a query mutant is made here; a state operator's is made in its lane, on a fork of the parent's state
        proposals = self._query_proposals(batch)
        for task, counter in batch:
            parent = self.cases[task.case_id]
            key = (parent.state_key, parent.query.text)
            reference = self.oracle.reference_of(parent.id)
            if key not in planned and self.executor.cached(parent) is None:
                planned.add(key)
                jobs.append(LaneJob(0, None, parent, True, reference))
            proposal = proposals.get(counter)
            jobs.append(LaneJob(counter, task, parent, False, reference, proposal,
                                after=key if key in planned else None))
        return {"batch": batch, "jobs": jobs, "tickets": self.lanes.submit(jobs)}

    def _query_proposals(self, batch: list[tuple[Task, int]]) -> dict[int, Proposal]:
        """The query mutants of a batch by counter, each made as :func:`propose` makes it wherever it runs; with
        LLM paraphrases and thread lanes their requests are in flight together (up to --max-concurrency)."""
        work = [(task, counter) for task, counter in batch if self.operators[task.operator].kind != "state"]

        def make(item: tuple[Task, int]) -> Proposal:
            task, counter = item
            parent = self.cases[task.case_id]
            return propose(self.operators[task.operator], parent, self.oracle.reference_of(parent.id), task.target,
                           task.obligation, counter, self.config.seed)

        if "paraphrase" in self.config.llm_uses and self.config.max_concurrency > 1 and len(work) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(len(work), self.config.max_concurrency)) as pool:
                made = list(pool.map(make, work))
        else:
            made = [make(item) for item in work]
        return {counter: p for (_, counter), p in zip(work, made, strict=True)}

    def _end_step(self, force_snapshot: bool = False, counted: bool = False) -> None:
        """Counters of a finished step; the step's records may now be committed (with a snapshot when due).
        Shielded from a second Ctrl-C: the step is either dropped whole or ends whole."""
        self._shielded += 1
        try:
            if not counted:
                self._count()
            self.window.mark()
            self._mark = (replace(self.progress), len(self.failure_log))
            self._at_boundary = True
            if force_snapshot or self.window.due():
                self._flush(snapshot=force_snapshot or self._snapshot_due())
        finally:
            self._shielded -= 1

    def _count(self) -> None:
        """The progress counters after a step (and its row of plot_data.csv)."""
        p = self.progress
        p.uncovered_obligations = self.scheduler.uncovered()
        p.coverage = self.feedback.reached()
        p.unique_failures = len(self.tally.unique)
        p.causes = len(self.tally.causes)
        p.baseline_failures = len(self.tally.baseline)
        p.reader_failures = len(self.tally.reader)
        if self.plot is not None:
            self.plot.record(p)

    def _snapshot_due(self) -> bool:
        # a slow snapshot (a large suite) is taken less often: at most ~5% of the time goes to snapshots
        wait = max(self.config.snapshot_seconds, 20 * self._snapshot_cost)
        return time.monotonic() - self._last_snapshot >= wait

    def _flush(self, snapshot: bool) -> None:
        """Commit the window (complete steps only), with a snapshot of the state at its end if asked."""
        extra = [self.store.heartbeat_write(self.campaign_id)]
        cost = 0.0
        if snapshot:
            t0 = time.perf_counter()
            engine, oracle = self._snapshot()
            cost = time.perf_counter() - t0
            extra += [self.store.snapshot_write(self.campaign_id, step=self.step, seq=self.progress.executions,
                                                data=engine),
                      self.failures.snapshot_write(step=self.step, data=oracle)]
        self.window.flush(extra)
        self._committed = self._mark
        if snapshot:
            self._last_snapshot = time.monotonic()
            self._snapshot_cost = cost

    # -- snapshots ------------------------------------------------------------------------------------------
    def _snapshot(self) -> tuple[bytes, bytes]:
        """The engine's and the oracle's state after the current step, each pickled for its own table."""
        engine = {"step": self.step, "progress": asdict(self.progress), "scheduler": self.scheduler,
                  "feedback": self.feedback, "cases": self.cases, "executor": self.executor.snapshot(),
                  "consecutive": self._consecutive, "last_error": self._last_error, "drawn": self._drawn,
                  "inflight": None if self._inflight is None else
                  {"batch": self._inflight["batch"], "jobs": self._inflight["jobs"]}}
        oracle = {"step": self.step, "oracle": self.oracle.snapshot(), "tally": self.tally,
                  "failure_log": self.failure_log, "counts": self.failures.counts()}
        seeds = self._seed_names(self.cases.seeds())
        return dump(engine, seeds), dump(oracle, seeds)

    @staticmethod
    def _seed_names(cases: list[FuzzCase]) -> dict[str, FuzzCase]:
        """Seed cases by a name for snapshots: a resume rebuilds them from the recorded suite, so a snapshot
        holds their names only (their provenance is most of a large suite's state)."""
        return {f"seed:{c.id}": c for c in cases}

    def _rebuilt_seeds(self) -> dict[str, FuzzCase]:
        return self._seed_names([FuzzCase.from_seed(s, self.suite.checkpoint_of(s))
                                 for s in sorted(self.suite.seeds, key=lambda s: s.id)])

    def _restore(self) -> bool:
        """Go back to the last snapshot: state from it, records committed after it removed. False when the
        campaign has no snapshot (it starts over)."""
        rec = self.store.snapshot(self.campaign_id)
        half = self.failures.snapshot()
        if rec is None or half is None:
            return False
        if rec.step != half[0]:
            raise SnapshotError(f"the engine's snapshot (step {rec.step}) and the oracle's (step {half[0]}) "
                                "differ: the corpus was changed by something else")
        seeds = self._rebuilt_seeds()
        engine, oracle = load(rec.data, seeds), load(half[1], seeds)
        self.step = engine["step"]
        self.progress = Progress(**engine["progress"])
        self.progress.budget = self.config.budget
        self.scheduler = engine["scheduler"]
        self.feedback = engine["feedback"]
        self.cases = engine["cases"]
        self.executor.restore(engine["executor"])
        self._consecutive, self._last_error = engine["consecutive"], engine["last_error"]
        self._drawn = engine.get("drawn", self.step)
        self._inflight = engine.get("inflight")
        self.oracle.restore(oracle["oracle"])
        self.tally, self.failure_log = oracle["tally"], oracle["failure_log"]
        gone = self.store.rollback(self.campaign_id, step=self.step, seq=self.progress.executions)
        self.failures.rollback(oracle["counts"], gone)
        self.resumed_from = self.step
        if self.plot is not None:  # the curve of the rolled-back work goes too (it is redone)
            self.plot.rewind(self.progress.executions)
        self._mark = self._committed = (replace(self.progress), len(self.failure_log))
        self._last_snapshot = time.monotonic()
        self.log.info("resumed", step=self.step, executions=self.progress.executions, budget=self.config.budget,
                      rolled_back_mutants=len(gone), preflight=self.preflight)
        self._at_boundary = True  # the state is the snapshot's
        return True

    # -- ending --------------------------------------------------------------------------------------------
    def _finish(self) -> dict[str, Any]:
        """Commit what is complete, record how the campaign ended, write the summary and close everything.
        Every part is guarded: a failure here is reported (``warnings``), never raised."""
        self._shielded += 1  # the end always runs whole (a Ctrl-C now waits for it)
        reason = self.reason or ending.ERROR
        state = self._mark
        if self.window is not None:
            try:
                if self._at_boundary:
                    self._flush(snapshot=True)  # the state to resume from is exactly the committed one
                else:  # cut off mid-step: its records are dropped; resume redoes from the last snapshot
                    self.window.rewind()
                    self.window.flush([self.store.heartbeat_write(self.campaign_id)])
                    self._committed = self._mark
            except Exception as exc:  # noqa: BLE001 - e.g. a full disk or a database locked by another writer
                state = self._committed
                what = ending.describe(exc)
                if reason == ending.ERROR:
                    self.warnings.append(f"the last records could not be written either: {what}")
                else:
                    self.message = (f"the campaign ended ({reason}) but its last records could not be written: "
                                    f"{what}")
                    reason = ending.ERROR
        self.reason = reason
        if self.message is None and reason == ending.ERROR:
            self.message = "unknown error"
        self._heartbeat_stop.set()
        if reason == ending.INTERRUPTED:
            self._log_safely("warning", "interrupted", executions=state[0].executions)
        if self.executor is not None:
            try:
                self.executor.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        for thing in (self.lanes, self._ray):
            try:
                if thing is not None:
                    thing.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        if self.plot is not None:
            try:
                self.plot.close(state[0])
            except Exception:  # noqa: BLE001
                pass
        # summary.json before the store's end: a kill between the two leaves a campaign the store still calls
        # running, which --resume finishes again at once (writing both), never a finished one without a summary
        summary = self.summary(reason, progress=state[0], found=state[1])
        try:
            ending.write_summary(self.out / "summary.json", summary)
        except Exception as exc:  # noqa: BLE001
            self.warnings.append(f"could not write {self.out / 'summary.json'}: {ending.describe(exc)}")
        if self.store is not None:
            try:
                self.store.attach(None)
                self.store.finish_campaign(self.campaign_id, status=reason, message=self.message)
            except Exception as exc:  # noqa: BLE001
                self.warnings.append(f"could not record the end in the corpus database ({ending.describe(exc)}); "
                                     "summary.json has it")
        summary["warnings"] = list(self.warnings)
        self._log_safely("info", "finished", **{k: v for k, v in summary.items() if k != "failures"})
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=5)
        for thing in (self._log_file, self.store, self.failures):
            try:
                if thing is not None:
                    thing.close()
            except Exception:  # noqa: BLE001 - a team database must not keep idle connections; best effort
                pass
        if self.failures is not None:
            self.failures.attach(None)
        try:
            if self.backend is not None:
                self.backend.close()
        except Exception:  # noqa: BLE001
            pass
        if self._lock is not None:  # last: until here the directory is this campaign's
            self._lock.release()
            self._lock = None
        return summary

    def _setup(self, phase: str) -> None:
        """A set-up phase begins: tell :attr:`on_setup` (a progress line before the first execution)."""
        if self.on_setup is not None:
            try:
                self.on_setup(phase)
            except Exception:  # noqa: BLE001 - a progress line never stops a campaign
                pass

    def _log_safely(self, level: str, event: str, **facts: Any) -> None:
        if self.log is None:
            return
        try:
            getattr(self.log, level)(event, **facts)
        except Exception:  # noqa: BLE001 - the log may be what failed (a full disk)
            pass

    def _start_heartbeat(self) -> None:
        """Mark the campaign alive every HEARTBEAT_SECONDS even while one backend call takes long."""
        def beat() -> None:
            while not self._heartbeat_stop.wait(HEARTBEAT_SECONDS):
                if self._lock is not None:
                    self._lock.beat()
                try:
                    self.store.heartbeat_now(self.campaign_id)
                except Exception:  # noqa: BLE001 - a missed heartbeat is not the campaign's end
                    pass

        self._heartbeat = threading.Thread(target=beat, name="ufuzz-heartbeat", daemon=True)
        self._heartbeat.start()

    # -- records -------------------------------------------------------------------------------------------
    def _record_exec(self, ex: Execution, is_parent: bool, checkpoint_id: str) -> None:
        self.progress.executions += 1
        self.store.record_execution(self.campaign_id, ex, is_parent=is_parent, seq=self.progress.executions,
                                    checkpoint_id=checkpoint_id, step=self.step)
        if ex.error is not None:
            self.progress.errors += 1
            self.store.record_error(self.campaign_id, seq=self.progress.executions, case_id=ex.case_id,
                                    operation="execute", message=ex.error, step=self.step)
            self.log.warning("backend_error", case=ex.case_id, error=ex.error)
            self._consecutive += 1
            self._last_error = ex.error
        else:
            self._consecutive = 0

    def _error(self, case_id: str, operation: str, message: str) -> None:
        self.progress.errors += 1
        self.store.record_error(self.campaign_id, seq=self.progress.executions, case_id=case_id,
                                operation=operation, message=message, step=self.step)
        self.log.warning("backend_error", case=case_id, operation=operation, error=message)
        self._consecutive += 1
        self._last_error = f"{operation}: {message}"

    def _moves(self, case: FuzzCase) -> list[tuple[str, str]]:
        return [(name, t) for name, op in self.operators.items() for t in op.targets(case)]

    def _llm_facts(self) -> dict[str, Any] | None:
        """Model, endpoint kind, sampling and prompt versions of every LLM call the campaign makes (its own
        uses and the backend's LLM mode): what reproducing its LLM calls needs (``campaign.json``)."""
        from ufuzz.llm.prompts import llm_record

        try:
            info = self.backend.describe()
        except Exception:  # noqa: BLE001 - a record only; the campaign's own checks report a broken backend
            info = {}
        return llm_record(asdict(self.config), info if isinstance(info, dict) else {})

    def _llm_client(self) -> Any:
        """The LLM client of every configured LLM use (paraphrase, answer, judge), or None without any."""
        from ufuzz.engine.lanes import llm_share

        return client_for(self.config, share=llm_share(self.config))

    def _llm_summary(self) -> dict[str, Any] | None:
        """The campaign's LLM calls, tokens and estimated cost (this process's client and its process lanes')."""
        if self.llm is None:
            return None
        from ufuzz.llm.client import estimate_cost

        out: dict[str, Any] = {**self.llm.stats(), **self.llm.usage()}
        for k, v in self._lane_llm.items():
            if isinstance(out.get(k), int):
                out[k] += v
        out["cost_usd"] = estimate_cost(out, self.config.llm_price)
        out["price"] = list(self.config.llm_price) if self.config.llm_price is not None else None
        return out

    # -- one step ------------------------------------------------------------------------------------------
    def _parent_execution(self, parent: FuzzCase, hidden: bool) -> Execution:
        """``parent``'s execution: the cached one, else run now in a lane (ahead of the queued jobs), recorded."""
        ex = self.executor.cached(parent)  # the cache is here, the backends are in the lanes
        fresh = ex is None
        if fresh:
            ex = self.lanes.execute(parent)
            self.executor.remember(parent, ex)
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

    def _parent_ready(self, task: Task, parent: FuzzCase, parent_ex: Execution) -> bool:
        """Whether a mutant of ``parent`` is to be made (and its result applied); if not, the task is reported
        as having none."""
        if parent_ex.error is not None or self.progress.executions >= self.config.budget:
            self.scheduler.report(task, NO_MUTANT)
            return False
        try:
            testable = self.oracle.testable(parent, parent_ex)
        except LLMError as exc:  # the LLM judge failed on the parent: no verdict, an error record, no mutant now
            self._error(parent.id, "judge", f"{type(exc).__name__}: {exc}")
            self.scheduler.report(task, NO_MUTANT)
            return False
        if not testable:
            # the parent fails every level it is judged at: no mutant of it could show a failure the mutation
            # caused, so none is made (the scheduler learns only that the case is done, not why)
            self.scheduler.retire(parent.id)
            self.scheduler.report(task, NO_MUTANT)
            return False
        return True

    # -- a batch of steps (parallel campaigns) -------------------------------------------------------------
    def _apply_batch(self, current: dict[str, Any], hidden: bool) -> None:
        """Apply a batch's results in task order; a task begun after the budget was
        spent is not applied (the scheduler gets it back). Forks the lanes hold for mutants not kept are
        released with their next request."""
        results = self.lanes.collect(current["tickets"])
        parents: dict[tuple[str, str], Any] = {}  # the batch's parent runs, by (state, query)
        tasks = iter(current["batch"])
        for job, (lane, res) in zip(current["jobs"], results, strict=True):
            if job.task is None:
                self._count_lane_llm(res.llm)
                parents[(job.parent.state_key, job.parent.query.text)] = res
                continue
            task, counter = next(tasks)
            self._count_lane_llm(res.llm)
            if self.progress.executions >= self.config.budget:
                self.scheduler.report(task, NO_MUTANT)
            else:
                self.step = counter
                errors_before = self.progress.errors
                faults = self._apply_job(job, lane, res, hidden, parents)
                for operation, message in faults:  # e.g. a release that failed in the lane
                    self._error(task.case_id, operation, message)
                if self.progress.errors == errors_before:  # a step without a fault breaks a run of errors
                    self._consecutive = 0
                self.progress.phase = task.phase
                self._count()
            if res.holds and not res.proposal.adopted:
                self.lanes.decide(lane, res.proposal.mutant, keep=False)

    def _count_lane_llm(self, delta: dict[str, int] | None) -> None:
        for k, v in (delta or {}).items():
            self._lane_llm[k] = self._lane_llm.get(k, 0) + v

    def _apply_job(self, job: Any, lane: int, res: Any, hidden: bool,
                   parents: dict[tuple[str, str], Any]) -> list[tuple[str, str]]:
        """One job's result (and its parent's job's, when it ran in this batch) applied: every path reports to
        the scheduler exactly once. Returns the backend faults nothing waited for (the parent's job's first),
        for the step's error records."""
        faults = self._apply_result(job, lane, res, hidden, parents)
        return faults + list(res.faults)

    def _apply_result(self, job: Any, lane: int, res: Any, hidden: bool,
                      parents: dict[tuple[str, str], Any]) -> list[tuple[str, str]]:
        task, parent = job.task, job.parent
        faults: list[tuple[str, str]] = []
        parent_ex = self.executor.cached(parent)
        if parent_ex is None:
            # the parent's own job of this batch, applied with the first task that needs it; none (an earlier
            # batch ran it and it failed, or this batch's run was used up by an earlier task): no mutant now
            ran = parents.pop((parent.state_key, parent.query.text), None)
            if ran is None or ran.lost is not None:
                if ran is not None:
                    self._error(parent.id, "lane", ran.lost)
                self.scheduler.report(task, NO_MUTANT)
                return faults
            faults = list(ran.faults)
            parent_ex = ran.parent_ex
            self._record_exec(parent_ex, is_parent=True, checkpoint_id=parent.checkpoint_id)
            if parent_ex.error is None:
                self.feedback.observe(parent.seed_id, parent.checkpoint_id, parent_ex, None, hidden=hidden)
                self.executor.remember(parent, parent_ex)
        if res.lost is not None:  # the lane died (it is restarted): an error record, never a failure
            self._error(parent.id, "lane", res.lost)
            self.scheduler.report(task, NO_MUTANT)
            return faults
        if not self._parent_ready(task, parent, parent_ex):
            return faults
        if res.skipped:  # the lane judged the parent untestable and this process did not: no mutant this time
            self.scheduler.report(task, NO_MUTANT)
            return faults
        self.scheduler.report(task, self._apply(task, res.proposal, parent, parent_ex, res.ex, hidden, lane=lane))
        return faults

    def _apply(self, task: Task, proposal: Proposal, parent: FuzzCase, parent_ex: Execution,
               ex: Execution | None, hidden: bool, lane: int) -> StepOutcome:
        """Record the proposal and its execution, judge it (the verdict goes to the failure store only) and
        decide from its feedback whether it stays as a parent."""
        cfg = self.config
        if proposal.error is not None:
            self._error(parent.id, *proposal.error)
            return NO_MUTANT
        mutant, mutation = proposal.mutant, proposal.mutation
        self.store.record_mutant(self.campaign_id, mutant, valid=proposal.valid,
                                 rejection_reason=proposal.reason or None, created_seq=self.progress.executions,
                                 step=self.step)
        if not proposal.valid:
            self.progress.mutants_rejected += 1
            if proposal.finding is not None:  # the system changed more than asked: a state-level failure, apart
                self.oracle.state_failure(mutant, parent, proposal.finding, parent_ex)  # from the scheduler
            return StepOutcome(valid=False, final=True) if proposal.final else NO_MUTANT
        self.progress.mutants_valid += 1
        if proposal.unjudged:
            self.progress.mutants_unjudged += 1
            return StepOutcome(valid=False, final=True)
        if ex is None:
            self._error(mutant.id, "state", proposal.state_error or "no state")
            return NO_MUTANT
        self._record_exec(ex, is_parent=False, checkpoint_id=mutant.checkpoint_id)
        if ex.error is not None:
            return NO_MUTANT
        self.oracle.register(mutant.id, mutation.reference)
        fb = self.feedback.observe(mutant.seed_id, mutant.checkpoint_id, ex, parent_ex, hidden=hidden, p=cfg.p)
        # the record says whether the mutant was kept (feedback may ask for it past --max-depth or with retention
        # off): status and the summary count the same retained mutants
        kept = fb.retained and cfg.retain and mutant.depth < cfg.max_depth
        self.store.record_feedback(self.campaign_id, mutant.id, replace(fb, retained=kept),
                                   seq=self.progress.executions, step=self.step)
        try:
            self.oracle.check(mutant, ex, parent, parent_ex, run_seed=lambda sid: self._seed_execution(sid, hidden))
        except LLMError as exc:  # the LLM judge failed: no verdict for this mutant, an error record, never a failure
            self._error(mutant.id, "judge", f"{type(exc).__name__}: {exc}")
        op = self.operators[task.operator]
        if not kept:
            self.oracle.forget(mutant.id)
            return StepOutcome(valid=True, coverage_gain=fb.coverage_gain, divergence=fb.divergence,
                               meaning_preserving=op.meaning_preserving)
        self.progress.retained += 1
        self.cases.retain(mutant, parent)
        self.executor.remember(mutant, ex)
        if proposal.handle is not None:  # the fork is in the lane: it becomes the mutant's state there
            self.lanes.decide(lane, mutant, keep=True)
            proposal.adopted = True
        return StepOutcome(valid=True, retained=True, new_case_id=mutant.id, moves=tuple(self._moves(mutant)),
                           coverage_gain=fb.coverage_gain, divergence=fb.divergence,
                           meaning_preserving=op.meaning_preserving)

    # -- results -----------------------------------------------------------------------------------------
    def summary(self, status: str | None = None, *, progress: Progress | None = None,
                found: int | None = None) -> dict[str, Any]:
        """The campaign's summary (``summary.json``): as it ended (``status``), with the counters of
        ``progress`` and the first ``found`` failures of the log (default: the current ones)."""
        p = progress or self.progress
        log = self.failure_log if found is None else self.failure_log[:found]
        by_op: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        for _, f in log:
            by_op[f.operator] = by_op.get(f.operator, 0) + 1
            by_kind[f"{f.stage}:{f.kind}"] = by_kind.get(f"{f.stage}:{f.kind}", 0) + 1
        status = status or self.reason or ending.RUNNING
        return {
            "version": ending.SUMMARY_VERSION,
            "campaign": self.campaign_id, "status": status, "reason": status, "message": self.message,
            "exit_code": ending.EXIT_CODES.get(status), "executions": p.executions,
            "budget": p.budget, "mutants_valid": p.mutants_valid, "mutants_rejected": p.mutants_rejected,
            "mutants_unjudged": p.mutants_unjudged,
            "retained": p.retained, "coverage": p.coverage, "coverage_total": p.coverage_total,
            "obligations": len(self.scheduler.obligations) if self.scheduler is not None else 0,
            # seed obligations covered (a phase-2 pick also covers its own seed x operator x target, counted
            # only when that is one of the seeds' obligations)
            "obligations_covered": len(self.scheduler.covered & self.scheduler.obligations)
            if self.scheduler is not None else 0,
            "unique_failures": len(log), "causes": p.causes,
            "failures_by_operator": by_op, "failures_by_kind": by_kind,
            "baseline_failures": p.baseline_failures, "reader_failures": p.reader_failures,
            "judging": self.judging, "errors": p.errors, "resumed_from_step": self.resumed_from,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "llm": self._llm_summary(),
            "worker": stats.to_dict() if (stats := getattr(self.backend, "stats", None))
            is not None and hasattr(stats, "to_dict") else None,
            "workers": self.config.workers, "ray_address": self.config.ray_address,
            "search": ("spread" if self.scheduler.config.spread else "walk") if self.scheduler is not None else None,
            "lanes_lost_jobs": self.lanes.lost if self.lanes is not None else 0,
            "failures": sorted(f.key for _, f in log),
            # the benchmark's own accuracy on the seeds (imported LongMemEval/LoCoMo), beside the findings
            "benchmark_accuracy": self.oracle.benchmark_accuracy() if self.oracle is not None else {},
        }


def _directory_campaign(campaign_dir: Path) -> str | None:
    """The id of the campaign a directory holds (``campaign.json``, written when it starts), if known."""
    for name in ("campaign.json", "summary.json"):
        try:
            cid = json.loads((campaign_dir / name).read_text(encoding="utf-8")).get("campaign")
        except (OSError, ValueError, AttributeError):
            continue
        if cid:
            return str(cid)
    return None


__all__ = ["Campaign", "CampaignConfig", "Progress", "Proposal", "ResumeError", "resolve_seeds"]
