"""The campaign's lanes fed from one queue (:class:`LanePool`): a free lane takes a job on a mutated state no lane
holds first (rebuilding it is the longest job), then one on a state it holds, then one whose root seed hashes to it
(:func:`home_lane`), and waits rather than rebuild a state busy lanes hold. Which lane runs a job may depend on
timing; on a deterministic backend its result does not, so neither does the campaign. A task's job waits for its
parent's job and is skipped when that parent failed or cannot be tested.
"""

from __future__ import annotations

import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ufuzz._util.lru import LRU
from ufuzz.engine.parallel.batching import MAX_BATCH
from ufuzz.engine.parallel.core import LaneJob, LaneResult
from ufuzz.engine.parallel.lane import Lane, LaneDied
from ufuzz.model import FuzzCase

#: the lanes' dispatch window per lane: tasks a pool hands out ahead so that jobs of unequal length (a state
#: mutant's writes beside a query mutant's one call) even out; only how fast, never what a campaign does
TASKS_PER_LANE = 4


#: parent jobs' outcomes a pool remembers (their tasks come in the same or the next batch): room for two whole
#: batches of parent jobs, the most that can be in flight, so that no gate a waiting task needs is ever evicted
#: (with 4,096 a batch near --batch's maximum could evict a running parent's gate and let its task start first)
GATES = 2 * MAX_BATCH

#: how far into the queue a free lane looks for the longest jobs and for jobs on states it holds: the rest of the
#: batch in flight and the next at the default batch (a look through a whole queue of --batch 4096 per free lane
#: would cost more than it saves)
LOOKAHEAD = 512

#: the least time between two looks at the lanes from :meth:`LanePool.poll` (each look takes every busy lane's
#: lock): a job waits a few milliseconds at least, so a look per task applied would mostly find nothing new
POLL_SECONDS = 0.001


# -- a seed's lane ------------------------------------------------------------------------------------------
def home_lane(seed_id: str, lanes: int) -> int:
    """The lane a root seed's jobs prefer (a stable hash, the same in every process and run), so that a lane
    tends to keep working on the states it has built."""
    return zlib.crc32(seed_id.encode("utf-8")) % lanes



@dataclass
class _Feed:
    """What one feeding of the lanes knows of the queue: the runnable jobs per state key (lowered as jobs are
    sent), and — built only when a lane considers rebuilding a state — the queued jobs per lane on states it holds."""

    waiting: Counter[str]
    backlog: Counter[int] | None = None


# -- the lanes of a campaign -----------------------------------------------------------------------------------
class LanePool:
    """A campaign's lanes, fed from one queue of jobs: :meth:`submit` queues a batch's jobs, :meth:`collect`
    gives their results back in job order once all are in; meanwhile the lanes go on with later batches' jobs.

    A free lane is handed a job by :meth:`_pick` — building a state is the dearest call of many backends, so it
    prefers the jobs that must build one anyway, then the states it holds, and leaves jobs on states other lanes
    hold to them — so that jobs of unequal length (a state mutant's writes, a query mutant's single call) keep
    every lane busy and no rebuild is left to a batch's end. Which lane runs a job may thus depend on timing;
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
        self._holders: Counter[str] = Counter()  # how many lanes hold each state key (see _hold)
        # parent jobs' outcomes by (state key, query): None while running; False holds back (skips) their tasks
        self._gate: LRU[tuple[str, str], bool | None] = LRU(GATES)
        # parent jobs queued or running, by (state key, query): what _waiting asks, kept as counts (scanning the
        # queue for each job made feeding many lanes quadratic in the jobs queued)
        self._open_parents: Counter[tuple[str, str]] = Counter()
        # whether the lanes work apart from the campaign's thread (poll has anything to take in)
        self._apart = all(getattr(lane, "apart", True) for lane in self.lanes)
        self._urgent: set[int] = set()  # tickets queued with first=True (the oracle waits for them): sent first
        self._polled = 0.0

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
        if first:
            self._urgent.update(tickets)
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
            self._hold(lane, case.state_key)
        else:
            self._drop[lane].append(case.id)

    # -- feeding the lanes -----------------------------------------------------------------------------------
    def _feed(self) -> None:
        # each queued job's gate read once: sending a job changes none (a scan of the queue per free lane made feeding
        # many lanes quadratic in the jobs queued)
        gates = [(t, self._blocked(t)) for t in self._queue]
        skipped = [t for t, g in gates if g is False]  # their parent is no use
        if skipped:
            for t in skipped:
                self._done[t] = (-1, LaneResult(skipped=True))
            self._queue = [t for t, g in gates if g is not False]
        free = [lane for lane in range(len(self.lanes)) if lane not in self._busy]
        if not free:
            return
        runnable = [t for t, g in gates if g is None]
        feed = _Feed(Counter(self._jobs[t].parent.state_key for t in runnable))
        for lane in free:
            if not runnable:
                break
            t = self._pick(lane, runnable, feed)
            if t is None:
                continue
            runnable.remove(t)
            feed.waiting[self._jobs[t].parent.state_key] -= 1
            self._send(lane, t)

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

    def _pick(self, lane: int, runnable: list[int], feed: _Feed) -> int | None:
        """The job ``lane`` takes next, or None: it waits rather than rebuild a state another lane holds.

        Rebuilding a mutated state replays its checkpoint and operations: on a product over HTTP a second or more,
        against a few tens of milliseconds for a question on a state a lane holds. Such rebuilds were the longest
        job of most batches, and the campaign cannot apply a batch before its longest job is in; so a job queued
        with ``first`` (the oracle waits for it) goes first, then a job on a mutated state no lane holds (it is
        built wherever it runs), then the jobs on states this lane holds, wherever they are queued; a job on a
        state only busy lanes hold waits for them, unless more jobs wait on that state than its holders would
        soon run or every holder has more than its share of other jobs queued (:meth:`_worth_rebuilding`)."""
        jobs, held = self._jobs, self._held[lane]
        if runnable[0] in self._urgent:
            return runnable[0]
        ahead = runnable[:max(LOOKAHEAD, TASKS_PER_LANE * len(self.lanes))]
        for t in ahead:  # the longest first
            parent = jobs[t].parent
            if parent.ops and not self._holders[parent.state_key]:
                return t
        for t in ahead:
            if jobs[t].parent.state_key in held:
                return t
        window = runnable[:max(1, TASKS_PER_LANE * len(self.lanes))]
        for t in window:  # a state no lane holds yet: its root seed's lane, then a checkpoint's (built once a lane)
            parent = jobs[t].parent  # (not this lane's: the loop above would have taken it)
            if not self._holders[parent.state_key] and home_lane(parent.seed_id, len(self.lanes)) == lane:
                return t
        for t in window:
            if not jobs[t].parent.ops:
                return t
        for t in window:  # a mutated state other lanes hold: rebuilt here from its recipe, if worth it
            if self._worth_rebuilding(jobs[t].parent.state_key, ahead, feed):
                return t
        return None

    def _worth_rebuilding(self, key: str, ahead: list[int], feed: _Feed) -> bool:
        """Whether a free lane should rebuild the state ``key`` that other lanes hold: none of them is free (a free
        holder takes the job itself), and either more jobs wait on ``key`` than its holders would soon run, or
        each holder has more than its share of jobs queued on the states it holds (a lane holding many states
        would otherwise run all their jobs while the others wait)."""
        holders = [other for other in range(len(self.lanes)) if key in self._held[other]]
        if any(other not in self._busy for other in holders):
            return False
        if feed.waiting[key] > TASKS_PER_LANE * len(holders):
            return True
        if feed.backlog is None:  # once per feed, and only when asked: the queued jobs each lane holds the state of
            feed.backlog = Counter()
            for t in ahead:
                k = self._jobs[t].parent.state_key
                feed.backlog.update(other for other in range(len(self.lanes)) if k in self._held[other])
        return all(feed.backlog[other] > 2 * TASKS_PER_LANE for other in holders)

    def _hold(self, lane: int, key: str) -> None:
        """``lane`` holds the state ``key`` from now on (counted once per lane in ``_holders``)."""
        if key not in self._held[lane]:
            self._held[lane].add(key)
            self._holders[key] += 1

    def _let_go(self, lane: int, keys: Sequence[str]) -> None:
        """``lane`` no longer holds the states ``keys`` (its executor evicted them, or never kept them: a job on one
        there rebuilds it)."""
        for key in keys:
            if key in self._held[lane]:
                self._held[lane].discard(key)
                self._holders[key] -= 1
                if self._holders[key] <= 0:
                    del self._holders[key]

    def _send(self, lane: int, t: int) -> None:
        self._queue.remove(t)
        self._urgent.discard(t)
        job = self._jobs[t]
        self._hold(lane, job.parent.state_key)
        keep, drop = self._keep[lane], self._drop[lane]
        self._keep[lane], self._drop[lane] = [], []
        self.lanes[lane].submit("run", [job], keep, drop)
        self._busy[lane] = t

    def poll(self) -> None:
        """Take in the answers already in and feed the lanes that are free, without waiting. The campaign calls it
        between pieces of its own work (applying a batch, drawing the next): the lanes are fed only when it does,
        and a lane whose job ended while the campaign applied a batch sat idle until the campaign next waited
        (16 thread lanes against a product over HTTP were idle about 30% of the time). Lanes that run only when
        their answer is asked for (:class:`~ufuzz.engine.parallel.lane.InProcessLane`) are never polled."""
        if not self._apart or not self._busy:
            return
        now = time.perf_counter()
        if now - self._polled < POLL_SECONDS:
            return
        self._polled = now
        busy = list(self._busy)
        ready = type(self.lanes[busy[0]]).wait([self.lanes[i] for i in busy], 0)
        if ready:
            self._take([i for i in busy if any(self.lanes[i] is r for r in ready)])
            self._feed()

    def _pump(self) -> None:
        """Wait for at least one busy lane's answer, take every answer in, and feed the lanes that are free."""
        busy = list(self._busy)
        if not busy:
            raise RuntimeError("no job is running and none is queued")  # collect() waits only for sent tickets
        self._take(self._ready(busy))
        self._feed()

    def _take(self, ready: list[int]) -> None:
        """The answers of the lanes ``ready`` (each busy, its answer in), taken in: results, parents' gates."""
        for lane in ready:
            t = self._busy.pop(lane)
            try:
                res = self.lanes[lane].result()[0]
            except LaneDied as exc:
                self._died(lane, str(exc))
                res = LaneResult(lost=str(exc))
                self.lost += 1
            self._done[t] = (lane, res)
            self._let_go(lane, res.evicted)
            job = self._jobs[t]
            if job.task is None:
                key = (job.parent.state_key, job.parent.query.text)
                self._open_parents[key] -= 1
                if self._open_parents[key] <= 0:
                    del self._open_parents[key]
            if job.task is None and job.reference is not None:
                ok = res.lost is None and res.parent_ex is not None and res.parent_ex.error is None
                self._gate[(job.parent.state_key, job.parent.query.text)] = ok and res.testable is not False

    def _ready(self, lanes: list[int]) -> list[int]:
        """Some of ``lanes`` whose answer is in (waits until at least one is)."""
        while True:
            ready = type(self.lanes[lanes[0]]).wait([self.lanes[i] for i in lanes], 1.0)
            if ready:
                return [i for i in lanes if any(self.lanes[i] is r for r in ready)]

    def _died(self, lane: int, message: str) -> None:
        self._keep[lane], self._drop[lane] = [], []
        self._holders.subtract(self._held[lane])
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
