"""The pool's feeding (:mod:`ufuzz.engine.parallel.pool`) with lanes the test answers by hand: which lane runs what
never changes a result, so the pool may choose freely — but it must run every job once, never a task before its
parent's job is in, never stall, and keep the longest jobs (states rebuilt from their recipe) off a batch's tail."""

from __future__ import annotations

from types import SimpleNamespace as NS

from hypothesis import given, settings
from hypothesis import strategies as st

from ufuzz.engine.parallel.core import LaneJob, LaneResult
from ufuzz.engine.parallel.lane import LaneDied
from ufuzz.engine.parallel.pool import TASKS_PER_LANE, LanePool


class _Lane:
    """A lane that answers when the test says so: ``done`` marks its job finished, ``evict`` the state keys its
    executor lets go with that answer, ``die`` loses the job."""

    def __init__(self, index: int, log: list) -> None:
        self.index, self.log = index, log
        self.job: LaneJob | None = None
        self.done = self.die = False
        self.evict: tuple[str, ...] = ()
        self.decisions: list[tuple[list[str], list[str]]] = []  # (kept, dropped) sent with each job

    def submit(self, method, jobs, keep, drop):
        assert self.job is None, "a lane is sent one job at a time"
        self.job = jobs[0]
        self.log.append((self.index, jobs[0]))
        self.decisions.append(([c.id for c in keep], list(drop)))

    def result(self):
        job, self.job, self.done = self.job, None, False
        if self.die:
            self.die = False
            raise LaneDied(f"lane {self.index} died")
        return [LaneResult(parent_ex=NS(error=None), testable=True, evicted=self.evict, seconds=float(job.counter))]

    @staticmethod
    def wait(lanes, timeout):
        return [lane for lane in lanes if lane.done or lane.die]

    def close(self):
        pass


def _case(state: str, ops: tuple = ()) -> NS:
    return NS(state_key=state, seed_id=f"seed-{state}", ops=ops, query=NS(text="q"), id=state)


def _parent(state: str, ops: tuple = ()) -> LaneJob:
    return LaneJob(0, None, _case(state, ops), run_parent=True, reference=object())


def _task(counter: int, state: str, ops: tuple = (), after: bool = False) -> LaneJob:
    return LaneJob(counter, NS(operator="op"), _case(state, ops), run_parent=False, reference=object(),
                   after=(state, "q") if after else None)


def _finish(pool: LanePool, *lanes: int) -> None:
    for i in lanes:
        pool.lanes[i].done = True
    pool._pump()


def _sent(log: list, lane: int) -> list[LaneJob]:
    return [job for i, job in log if i == lane]


def test_a_lane_waits_rather_than_rebuild_a_state_a_busy_lane_holds():
    log: list = []
    pool = LanePool([_Lane(i, log) for i in range(2)])
    pool.submit([_task(1, "S", ("w",))])  # a mutated state no lane holds: built where it runs, lane 0
    assert [job.counter for job in _sent(log, 0)] == [1]
    pool.submit([_task(2, "S", ("w",)), _task(3, "S", ("w",))])
    assert _sent(log, 1) == []  # lane 0 holds S and is busy: two jobs are not worth a rebuild on lane 1
    _finish(pool, 0)
    assert [job.counter for job in _sent(log, 0)] == [1, 2]
    # more jobs on S than its holder would soon run: lane 1 rebuilds it too
    pool.submit([_task(10 + i, "S", ("w",)) for i in range(TASKS_PER_LANE + 1)])
    assert [job.counter for job in _sent(log, 1)] == [3]


def test_the_longest_jobs_go_first():
    log: list = []
    pool = LanePool([_Lane(i, log) for i in range(1)])
    pool.submit([_task(1, "A", ("w",))])
    _finish(pool, 0)  # lane 0 holds A
    pool.submit([_task(2, "C"), _task(3, "A", ("w",)), _task(4, "B", ("w",))])
    # B's state no lane holds is built first, though queued last; then the state the lane holds
    assert [job.counter for job in _sent(log, 0)] == [1, 4]
    _finish(pool, 0)
    _finish(pool, 0)
    assert [job.counter for job in _sent(log, 0)] == [1, 4, 3, 2]


def test_a_state_a_lane_evicted_is_no_longer_held_there():
    log: list = []
    pool = LanePool([_Lane(i, log) for i in range(2)])
    pool.submit([_task(1, "A", ("w",))])
    pool.submit([_task(2, "cp")])
    assert [job.counter for job in _sent(log, 1)] == [2]
    pool.lanes[0].evict = ("A",)  # lane 0's executor let A go with this answer
    _finish(pool, 0)
    pool.submit([_task(3, "cp")])  # lane 0 busy again
    pool.submit([_task(4, "A", ("w",))])
    _finish(pool, 1)
    # lane 1 takes the job on A: lane 0 no longer holds it (else lane 1 would wait for lane 0)
    assert [job.counter for job in _sent(log, 1)] == [2, 4]


def test_a_lane_holding_many_states_does_not_keep_all_their_jobs():
    """Second read: one busy lane holding 8 states with 4 jobs queued on each kept all 32 while the others waited
    (no single state had more than its share waiting). Each holder with more than its share of jobs queued on its
    states: a free lane rebuilds instead."""
    log: list = []
    pool = LanePool([_Lane(i, log) for i in range(2)])
    states = [f"S{i}" for i in range(8)]
    for k, name in enumerate(states):  # lane 0 builds and holds every state, one after another
        pool.submit([_task(k + 1, name, ("w",))])
        _finish(pool, 0)
    pool.submit([_task(100, "cp2")])  # lane 0 busy
    assert [job.counter for job in _sent(log, 0)][-1] == 100
    pool.submit([_task(200 + i, name, ("w",)) for name in states for i in range(TASKS_PER_LANE)])
    assert len(_sent(log, 1)) == 1  # lane 1 did not wait for lane 0's backlog


def test_a_job_the_oracle_waits_for_goes_first():
    """Second read: ``execute`` (a seed's or a control's run, queued first) waited behind hundreds of queued
    rebuilds; it is sent before any of them."""
    log: list = []
    pool = LanePool([_Lane(i, log) for i in range(1)])
    pool.submit([_task(1, "cp")])
    pool.submit([_task(10 + i, f"R{i}", ("w",)) for i in range(5)])
    pool.submit([_parent("seed-state")], first=True)
    _finish(pool, 0)
    assert _sent(log, 0)[1].task is None  # the parent's job queued first, not a rebuild queued before it


def test_the_campaigns_decisions_travel_with_the_holding_lanes_next_job():
    """A kept mutant's fork becomes its state in the lane that made it (and that lane then holds the state); a
    dropped one is released there — each with that lane's next request, never another lane's."""
    log: list = []
    pool = LanePool([_Lane(i, log) for i in range(2)])
    pool.submit([_task(1, "cp"), _task(2, "cp")])
    _finish(pool, 0, 1)
    kept = _case("K", ("w",))
    pool.decide(1, kept, keep=True)
    pool.decide(0, _case("D", ("w",)), keep=False)
    pool.submit([_task(3, "cp"), _task(4, "K", ("w",))])
    assert [job.counter for job in _sent(log, 1)] == [2, 4]  # lane 1 holds K now: K's job is its own
    assert pool.lanes[1].decisions[-1] == (["K"], [])
    assert pool.lanes[0].decisions[-1] == ([], ["D"])


def test_a_dead_lane_holds_nothing():
    log: list = []
    pool = LanePool([_Lane(i, log) for i in range(2)])
    pool.submit([_task(1, "A", ("w",))])
    pool.lanes[0].die = True
    pool._pump()  # lane 0 died with its job: it holds nothing now
    pool.submit([_task(2, "cp")])  # lane 0 (restarted) busy again
    pool.submit([_task(3, "A", ("w",))])
    assert [job.counter for job in _sent(log, 1)] == [3]  # no lane holds A: lane 1 builds it at once


def test_poll_feeds_free_lanes_without_waiting():
    log: list = []
    pool = LanePool([_Lane(i, log) for i in range(2)])
    tickets = pool.submit([_task(i, "cp") for i in range(1, 5)])
    assert len(log) == 2
    pool.poll()  # nothing is in: nothing changes, nothing waits
    assert len(log) == 2
    pool.lanes[1].done = True
    pool._polled = 0.0
    pool.poll()
    assert [job.counter for job in _sent(log, 1)] == [2, 3]
    pool.lanes[0].done = True
    assert [(lane, res.seconds) for lane, res in pool.collect(tickets[:2])] == [(0, 1.0), (1, 2.0)]


def _open(log: list, state: str) -> bool:
    """Whether a parent's job on ``state`` was submitted and its answer not taken in yet (a batch plans a parent's
    job only when none is queued or running: :meth:`ufuzz.engine.step.Steps.draw`)."""
    jobs = {id(job): who for who, job in log if who in ("submit", "in") and job.task is None
            and job.parent.state_key == state}
    return "submit" in jobs.values()


_ACTIONS = st.lists(st.tuples(st.sampled_from(["batch", "finish", "die", "keep", "evict", "poll"]),
                              st.integers(0, 1 << 30)), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None)
@given(lanes=st.integers(1, 5), states=st.integers(1, 6), actions=_ACTIONS)
def test_every_job_runs_once_after_its_parent_and_the_pool_never_stalls(lanes, states, actions):
    """Random batches (parents and their tasks, on checkpoint and mutated states), answers in any order, lanes
    that die, kept forks and evicted states: each job is sent once; a task is never sent before the answer of a
    parent's job for its state and question submitted with it or before it; and collecting every ticket ends
    (no lane is left idle for good while a job waits)."""
    log: list = []  # (lane, job) as sent, ("submit", job) as submitted, ("in", job) as its answer is taken in
    pool = LanePool([_Lane(i, log) for i in range(lanes)])
    take = pool._take

    def taking(ready):
        log.extend(("in", pool._jobs[pool._busy[i]]) for i in ready)
        take(ready)

    pool._take = taking
    names = [f"S{i}" for i in range(states)]
    tickets: list[int] = []
    counter = 0
    for act, r in actions:
        if act == "batch":
            jobs = []
            for j in range(1 + r % 7):
                name, ops = names[(r >> (3 * j)) % states], (("w",) if (r >> j) & 1 else ())
                counter += 1
                planned = any(job.task is None and job.parent.state_key == name for job in jobs)
                if (r >> (j + 5)) % 3 == 0 and not planned and not _open(log, name):  # one at a time, as drawn
                    jobs.append(_parent(name, ops))
                else:
                    jobs.append(_task(counter, name, ops, after=bool((r >> (j + 9)) & 1)))
            log.extend(("submit", job) for job in jobs)
            tickets += pool.submit(jobs)
        elif act in ("finish", "die") and pool._busy:
            busy = sorted(pool._busy)
            lane = pool.lanes[busy[r % len(busy)]]
            lane.done, lane.die = act == "finish", act == "die"
            pool._pump()
        elif act == "keep":
            pool.decide(r % lanes, _case(names[r % states], ("w",)), keep=True)
        elif act == "evict":
            pool.lanes[r % lanes].evict = (names[r % states],)
        else:
            pool._polled = 0.0
            pool.poll()
    while any(t not in pool._done for t in tickets):
        for i in list(pool._busy):
            pool.lanes[i].done = True
        pool._pump()  # raises when nothing runs while jobs wait: a stall
    assert len(pool.collect(tickets)) == len(tickets)
    sent = [job for who, job in log if isinstance(who, int)]
    assert len(sent) == len({id(job) for job in sent})  # no job sent twice
    parents: list[LaneJob] = []  # parents' jobs submitted so far (a batch's all at once, before any is sent)
    answered: set[int] = set()
    for who, job in log:
        if who == "submit" and job.task is None:
            parents.append(job)
        elif who == "in":
            answered.add(id(job))
        elif isinstance(who, int) and job.after is not None:
            waited = [p for p in parents if (p.parent.state_key, p.parent.query.text) == job.after]
            assert all(id(p) in answered for p in waited), "a task was sent before its parent's job was in"
