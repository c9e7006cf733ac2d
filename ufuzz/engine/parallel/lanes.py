"""Process lanes and the pool that feeds every kind of lane (``--workers N``; ``--ray-address`` for Ray actors).

A lane holds a backend instance of its own and runs *jobs* through :class:`LaneCore` (here in a child process,
:class:`ProcessLane`; in this process, :mod:`ufuzz.engine.parallel.lane`; as threads or Ray actors, the modules
beside this one) — a parent's execution (a job of its own, with a verdict on whether the parent can be tested at
all), a state operator's mutation on a fork of the parent's state (made with the same per-step random generator as
anywhere), a mutant's execution — and gives back what happened. It never sees the corpus, the oracle's verdicts, failures or the
scheduler: those stay in the campaign, which applies the results in task order
(:mod:`ufuzz.engine.step`).

The campaign's :class:`LanePool` feeds the lanes from one queue: a free lane takes the next job, preferring one
whose state it holds, then one whose root seed hashes to it (:func:`home_lane`). Which lane runs a job may depend
on timing; on a deterministic backend its result does not, so neither does the campaign. A task's job waits
for its parent's job and is skipped when that parent failed or cannot be tested.

Retained state mutants keep their fork in the lane that made it: the lane holds every executed mutant's fork
until the campaign says, with that lane's next request, whether the mutant was kept (adopted as its state) or
not (released). A lane that dies is restarted on its next job; the job it was running comes back ``lost`` (the
campaign records an error, never a failure), and its states are rebuilt from their recipes as after an eviction.

:class:`ProcessLane` runs a LaneCore in a child interpreter on this machine (``python -m ufuzz.engine.parallel.lanes``,
talking pickles over a socket pair, as the backend worker does); :mod:`ufuzz.engine.parallel.raylanes` runs it as a Ray
actor.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing import connection as mp_connection
from pathlib import Path
from typing import Any

from ufuzz._util.lru import LRU
from ufuzz.backends import registry
from ufuzz.backends.protocol import BackendError, StateHandle
from ufuzz.backends.worker import end_child, exit_text, serve
from ufuzz.engine.executor import Executor
from ufuzz.engine.parallel.lane import Lane, LaneBase, LaneDied
from ufuzz.engine.proposal import Proposal, propose
from ufuzz.engine.scheduler import Task
from ufuzz.model import Checkpoint, Execution, FuzzCase, Reference

__all__ = ["LaneCore", "LaneDied", "LaneJob", "LanePool", "LaneResult", "LaneSpec", "ProcessLane", "home_lane"]

#: the lanes' dispatch window per lane: tasks a pool hands out ahead so that jobs of unequal length (a state
#: mutant's writes beside a query mutant's one call) even out; only how fast, never what a campaign does
TASKS_PER_LANE = 4


def llm_share(cfg: Any) -> int:
    """How many processes of a campaign call the LLM endpoint with a client of their own, each held to that
    share of ``--llm-rpm``/``--llm-tpm``: the campaign's and each process lane's (thread lanes share the
    campaign's client)."""
    workers = int(getattr(cfg, "workers", 1) or 1)
    return workers + 1 if workers > 1 or getattr(cfg, "ray_address", None) else 1


#: parent jobs' outcomes a pool remembers (their tasks come in the same or the next batch)
GATES = 4096

#: seconds a lane may take to start (importing torch and loading a model on a loaded 2-core machine)
START_TIMEOUT = 600.0


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


# -- a seed's lane ------------------------------------------------------------------------------------------
def home_lane(seed_id: str, lanes: int) -> int:
    """The lane a root seed's jobs prefer (a stable hash, the same in every process and run), so that a lane
    tends to keep working on the states it has built."""
    return zlib.crc32(seed_id.encode("utf-8")) % lanes


# -- a lane in a child process --------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    """Child main (``python -m ufuzz.engine.parallel.lanes FD``): the first message is (spec, workdir); then answer
    ("ok", value) | ("err", message) per (method, args) request; None closes the lane."""
    conn, spec, workdir = child_setup(argv)
    try:
        core = LaneCore(spec, Path(workdir))
        conn.send(("ok", None))
    except BaseException as exc:  # noqa: BLE001 - reported to the campaign, which says so
        conn.send(("err", f"{type(exc).__name__}: {exc}"))
        return
    serve(conn, core, _lane_error)
    try:
        core.close()
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
    try:
        conn.send(("ok", None))
    except (OSError, ConnectionError):
        pass


def child_setup(argv: list[str] | None) -> tuple[Any, LaneSpec, Path]:
    """A lane child's start: Ctrl-C left to the campaign, fault tracebacks on, the pipe from the command line,
    the first message (spec, workdir) and the campaign's sys.path."""
    from multiprocessing.connection import Connection

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the campaign's: it stops between batches
    try:
        import faulthandler

        faulthandler.enable()
    except Exception:  # noqa: BLE001
        pass
    conn = Connection(int((argv or sys.argv[1:])[0]))
    spec, workdir = conn.recv()
    sys.path[:] = [p for p in spec.path if p] + [p for p in sys.path if p not in spec.path]
    return conn, spec, Path(workdir)


def _lane_error(exc: BaseException) -> tuple[str, str]:
    """A lane call that raised: its traceback to the lane's log (stderr), its message to the campaign."""
    traceback.print_exc()
    return ("err", f"{type(exc).__name__}: {exc}")


class ProcessLane(LaneBase):
    """A :class:`LaneCore` in a child interpreter on this machine, started on first use and after a death."""

    #: the child's module (``python -m MODULE FD``)
    child_module = "ufuzz.engine.parallel.lanes"

    def __init__(self, index: int, spec: LaneSpec, workdir: Path) -> None:
        self.index = index
        self.spec = spec
        self.workdir = Path(workdir)
        self.log_path = self.workdir / "lane.log"
        self.starts = 0
        self._proc: subprocess.Popen | None = None
        self._conn: Any = None
        self._broken: str | None = None  # why the last start or send failed (raised by result())

    @property
    def running(self) -> bool:
        return self._proc is not None

    def start(self) -> None:
        """Launch the child; :meth:`ready` waits for it (so that several lanes start at once)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.workdir / "backend", ignore_errors=True)  # a dead lane's states are gone
        parent, child = mp.Pipe()
        env = dict(os.environ)
        pkg_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join([pkg_root, *filter(None, [env.get("PYTHONPATH")])])
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen([sys.executable, "-m", self.child_module, str(child.fileno())],
                                          pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, env=env, cwd=str(self.workdir))
        child.close()
        self._conn = parent
        self.starts += 1
        try:
            parent.send((self.spec, str(self.workdir)))
        except (OSError, ConnectionError):
            pass  # it died at once: ready() says how

    def ready(self) -> None:
        reply = self._receive("start", START_TIMEOUT)
        if reply[0] != "ok":
            self.kill()
            raise LaneDied(f"lane {self.index} could not start: {reply[1]}")

    def submit(self, method: str, *args: Any) -> None:
        """Send a request; its answer is :meth:`result`'s. A lane that is down is started first."""
        self._broken = None
        try:
            if self._proc is None:
                self.start()
                self.ready()
            self._conn.send((method, args))
        except LaneDied as exc:
            self._broken = str(exc)
        except (OSError, ConnectionError):
            self._broken = f"lane {self.index} died before {method} ({self._exit()})"
            self.kill()

    def result(self) -> Any:
        if self._broken is not None:
            raise LaneDied(self._broken)
        return self.unwrap(self._receive("a batch", None))

    @staticmethod
    def wait(lanes: Sequence[ProcessLane], timeout: float) -> list[ProcessLane]:
        """The lanes of ``lanes`` whose answer (or death) is in, waiting up to ``timeout`` seconds for one."""
        broken = [lane for lane in lanes if lane._broken is not None or lane._conn is None]
        if broken:
            return broken
        conns = {id(lane._conn): lane for lane in lanes}
        ready = mp_connection.wait([lane._conn for lane in lanes], timeout)
        out = [conns[id(c)] for c in ready]
        if not out:  # a lane that died without closing its end (its children hold it) is ready too
            out = [lane for lane in lanes if lane._proc is not None and lane._proc.poll() is not None]
        return out

    def _receive(self, what: str, timeout: float | None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not self._conn.poll(1.0):
                if self._proc.poll() is not None and not self._conn.poll(0):
                    raise EOFError
                if deadline is not None and time.monotonic() >= deadline:
                    self.kill()
                    raise LaneDied(f"lane {self.index}: {what} took longer than {timeout:g} s (lane killed)")
            return self._conn.recv()
        except (EOFError, OSError, ConnectionError):
            message = f"lane {self.index} died during {what} ({self._exit()}; see {self.log_path})"
            self.kill()
            raise LaneDied(message) from None

    def _exit(self) -> str:
        if self._proc is None:
            return "not running"
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        return exit_text(code)

    def kill(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        end_child(proc, conn)

    def close(self) -> None:
        """Ask the lane to release its states and close its backend, then end it."""
        if self._proc is None:
            return
        try:
            self._conn.send(None)
            deadline = time.monotonic() + 120
            while self._conn.poll(max(0.0, deadline - time.monotonic())):
                if self._conn.recv() == ("ok", None):  # the close's answer (a job still running answers first)
                    break
        except (EOFError, OSError, ConnectionError):
            pass
        self.kill()


# -- the lanes of a campaign -----------------------------------------------------------------------------------
class LanePool:
    """A campaign's lanes, fed from one queue of jobs: :meth:`submit` queues a batch's jobs, :meth:`collect`
    gives their results back in job order once all are in; meanwhile the lanes go on with later batches' jobs.

    A free lane is handed the next job — among the first queued ones, preferably one whose parent's state that
    lane already holds (building a state is the dearest call of many backends), then one whose state no other
    lane holds and whose root seed hashes to it (:func:`home_lane`), then one on a checkpoint's state (each lane
    builds one once), else the first — so that jobs of unequal length (a state mutant's writes, a query
    mutant's single call) keep every lane busy. Which lane runs a job may thus depend on timing;
    what a job gives back does not (on a deterministic backend), and the campaign applies results in job order.
    The campaign's decisions about forks a lane holds (:meth:`decide`) travel with that lane's next request."""

    def __init__(self, lanes: Sequence[Lane], observer: Callable[..., None] | None = None) -> None:
        self.lanes: list[Lane] = list(lanes)
        self.observer = observer
        self.lost = 0  # jobs lost to lanes that died
        self._queue: list[int] = []  # tickets not sent yet, in order
        self._jobs: dict[int, LaneJob] = {}
        self._done: dict[int, tuple[int, LaneResult]] = {}
        self._busy: dict[int, int] = {}  # lane -> the ticket it runs
        self._tickets = 0
        self._keep: list[list[FuzzCase]] = [[] for _ in self.lanes]
        self._drop: list[list[str]] = [[] for _ in self.lanes]
        self._held: list[set[str]] = [set() for _ in self.lanes]  # state keys each lane was given work on
        # parent jobs' outcomes by (state key, query): None while running; False holds back (skips) their tasks
        self._gate: LRU[tuple[str, str], bool | None] = LRU(GATES)
        # parent jobs queued or running, by (state key, query): what _waiting asks, kept as counts (scanning the
        # queue for each job made feeding many lanes quadratic in the jobs queued)
        self._open_parents: Counter[tuple[str, str]] = Counter()

    def __len__(self) -> int:
        return len(self.lanes)

    def start(self) -> None:
        """Start every lane (at once); the first that cannot start ends the campaign's start."""
        try:
            for lane in self.lanes:
                lane.start()
            for lane in self.lanes:
                lane.ready()
        except BaseException:
            self.close()
            raise

    # -- the campaign's side ---------------------------------------------------------------------------------
    def submit(self, jobs: Sequence[LaneJob], *, first: bool = False) -> list[int]:
        """Queue ``jobs`` (at the front with ``first``); their tickets, for :meth:`collect`."""
        tickets = list(range(self._tickets, self._tickets + len(jobs)))
        self._tickets += len(jobs)
        self._jobs.update(zip(tickets, jobs, strict=True))
        for job in jobs:
            if job.task is None:
                self._open_parents[(job.parent.state_key, job.parent.query.text)] += 1
            if job.task is None and job.reference is not None:
                self._gate[(job.parent.state_key, job.parent.query.text)] = None
        self._queue = tickets + self._queue if first else self._queue + tickets
        self._feed()
        return tickets

    def collect(self, tickets: Sequence[int]) -> list[tuple[int, LaneResult]]:
        """(lane, result) of each ticket, in order, waiting for the ones not in yet (the lanes go on meanwhile
        with the jobs queued after them). A lane that fails loses its job (``LaneResult.lost``)."""
        while any(t not in self._done for t in tickets):
            self._pump()
        out = []
        for t in tickets:
            out.append(self._done.pop(t))
            del self._jobs[t]
        return out

    def run(self, jobs: Sequence[LaneJob]) -> list[tuple[int, LaneResult]]:
        return self.collect(self.submit(jobs))

    def execute(self, case: FuzzCase) -> LaneResult:
        """``case`` executed now, ahead of the queued jobs (the oracle asks for a seed's execution, or a control's):
        the whole job's result — its backend faults (a probe's, a release's) and LLM use with the execution, for the
        campaign to record as any job's (``Steps.run_now``)."""
        (_, res), = self.run_first(LaneJob(0, None, case, run_parent=True))
        return res

    def run_first(self, job: LaneJob) -> list[tuple[int, LaneResult]]:
        return self.collect(self.submit([job], first=True))

    def decide(self, lane: int, case: FuzzCase, keep: bool) -> None:
        """The mutant ``case``, whose fork ``lane`` holds, stays as a parent (its fork there becomes its state)
        or not (the fork is released)."""
        if keep:
            self._keep[lane].append(case)
            self._held[lane].add(case.state_key)
        else:
            self._drop[lane].append(case.id)

    # -- feeding the lanes -----------------------------------------------------------------------------------
    def _feed(self) -> None:
        for t in [t for t in self._queue if self._blocked(t) is False]:  # their parent is no use: skipped
            self._queue.remove(t)
            self._done[t] = (-1, LaneResult(skipped=True))
        for lane in range(len(self.lanes)):
            if lane not in self._busy and any(self._blocked(t) is None for t in self._queue):
                self._send(lane)

    def _blocked(self, t: int) -> bool | None:
        """None: the job may run; True: its parent's job is not in yet; False: it is, and no use (skip it)."""
        after = self._jobs[t].after
        if after is None or after not in self._gate:
            return None
        ok = self._gate.get(after)
        return True if ok is None and self._waiting(after) else (None if ok or ok is None else False)

    def _waiting(self, key: tuple[str, str]) -> bool:
        """Whether a parent job for ``key`` is queued or running."""
        return self._open_parents[key] > 0

    def _pick(self, lane: int) -> int:
        runnable = [t for t in self._queue if self._blocked(t) is None]
        window = runnable[:max(1, TASKS_PER_LANE * len(self.lanes))]
        held = self._held[lane]
        for t in window:
            if self._jobs[t].parent.state_key in held:
                return t
        held_elsewhere = set().union(*(h for i, h in enumerate(self._held) if i != lane))
        for t in window:  # a state no lane holds yet: its root seed's lane, then a checkpoint's (built once a lane)
            parent = self._jobs[t].parent
            if parent.state_key not in held_elsewhere and home_lane(parent.seed_id, len(self.lanes)) == lane:
                return t
        for t in window:
            if not self._jobs[t].parent.ops:
                return t
        return window[0]  # a mutated state another lane holds: rebuilt here from its recipe

    def _send(self, lane: int) -> None:
        t = self._pick(lane)
        self._queue.remove(t)
        job = self._jobs[t]
        self._held[lane].add(job.parent.state_key)
        keep, drop = self._keep[lane], self._drop[lane]
        self._keep[lane], self._drop[lane] = [], []
        self.lanes[lane].submit("run", [job], keep, drop)
        self._busy[lane] = t

    def _pump(self) -> None:
        """Wait for at least one busy lane's answer, take every answer in, and feed the lanes that are free."""
        busy = list(self._busy)
        if not busy:
            raise RuntimeError("no job is running and none is queued")  # collect() waits only for sent tickets
        for lane in self._ready(busy):
            t = self._busy.pop(lane)
            try:
                res = self.lanes[lane].result()[0]
            except LaneDied as exc:
                self._died(lane, str(exc))
                res = LaneResult(lost=str(exc))
                self.lost += 1
            self._done[t] = (lane, res)
            job = self._jobs[t]
            if job.task is None:
                key = (job.parent.state_key, job.parent.query.text)
                self._open_parents[key] -= 1
                if self._open_parents[key] <= 0:
                    del self._open_parents[key]
            if job.task is None and job.reference is not None:
                ok = res.lost is None and res.parent_ex is not None and res.parent_ex.error is None
                self._gate[(job.parent.state_key, job.parent.query.text)] = ok and res.testable is not False
        self._feed()

    def _ready(self, lanes: list[int]) -> list[int]:
        """Some of ``lanes`` whose answer is in (waits until at least one is)."""
        while True:
            ready = type(self.lanes[lanes[0]]).wait([self.lanes[i] for i in lanes], 1.0)
            if ready:
                return [i for i in lanes if any(self.lanes[i] is r for r in ready)]

    def _died(self, lane: int, message: str) -> None:
        self._keep[lane], self._drop[lane] = [], []
        self._held[lane] = set()
        if self.observer is not None:
            try:
                self.observer("lane_died", lane=lane, message=message)
            except Exception:  # noqa: BLE001 - an observer must not break the campaign
                pass

    def close(self) -> None:
        for lane in self.lanes:
            try:
                lane.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass


if __name__ == "__main__":  # run as the package's module, so that results pickle as ufuzz.engine.parallel.lanes classes
    from ufuzz.engine.parallel import lanes as _lanes

    _lanes.main()
