"""The lane interface (:mod:`ufuzz.engine.parallel.lane`): every kind of lane is a ``Lane``, and the pool drives the
in-process one as it drives the others — an answer in task order, a job that raises is lost (never the
campaign), a lane that raised goes on."""

from __future__ import annotations

import sys
import threading

import pytest

from ufuzz.engine.parallel.lane import InProcessLane, Lane, LaneDied
from ufuzz.engine.parallel.pool import LanePool
from ufuzz.engine.parallel.process import ProcessLane
from ufuzz.engine.parallel.raylanes import RayLane
from ufuzz.engine.parallel.threadlanes import ProcessSlot, SlotProcess, ThreadLane


class _Core:
    """A lane core that echoes its arguments, and raises for ``boom``."""

    def __init__(self) -> None:
        self.closed = False

    def echo(self, *args):
        return args

    def boom(self):
        raise ValueError("broken adapter")

    def close(self) -> None:
        self.closed = True


def test_every_lane_kind_is_a_lane(tmp_path):
    proc = SlotProcess(0, None, tmp_path, slots=2)
    lanes = [InProcessLane(0, _Core()), ThreadLane(0, _Core, threading.Condition()),
             ProcessLane(0, None, tmp_path), ProcessSlot(proc, 0, 0), RayLane(0, None, None)]
    for lane in lanes:
        assert isinstance(lane, Lane), type(lane).__name__


def test_an_in_process_lane_answers_when_asked_and_a_raising_job_is_lost():
    core = _Core()
    lane = InProcessLane(3, core)
    assert InProcessLane.wait([lane], 0) == []  # nothing submitted: nothing to wait for
    lane.submit("echo", 1, 2)
    assert InProcessLane.wait([lane], 0) == [lane]
    assert lane.result() == (1, 2)
    with pytest.raises(LaneDied, match="lane 3: ValueError: broken adapter"):
        lane.call("boom")
    assert lane.call("echo", "again") == ("again",)  # the lane goes on after a lost job
    LanePool([lane]).close()
    assert core.closed


def test_thread_and_in_process_lanes_answer_alike():
    signal = threading.Condition()
    thread, here = ThreadLane(0, _Core, signal), InProcessLane(0, _Core())
    pool = LanePool([thread])
    pool.start()
    try:
        for lane in (thread, here):
            assert lane.call("echo", "x") == ("x",)
            with pytest.raises(LaneDied, match="lane 0: ValueError: broken adapter"):
                lane.call("boom")
    finally:
        pool.close()
        here.close()


def test_thread_lanes_shorten_the_switch_interval_while_they_run_and_set_it_back():
    """A lane woken by its answer waits for the GIL at most the switch interval: shorter while lanes run."""
    from ufuzz.engine.parallel.threadlanes import LANE_SWITCH_INTERVAL

    before = 0.005
    sys.setswitchinterval(before)  # whatever an earlier test left
    signal = threading.Condition()
    lanes = [ThreadLane(i, _Core, signal) for i in range(3)]
    for lane in lanes:
        lane.start()
    lanes[0].start()  # starting a running lane again changes nothing
    assert sys.getswitchinterval() <= LANE_SWITCH_INTERVAL < before
    lanes[0].close()
    assert sys.getswitchinterval() <= LANE_SWITCH_INTERVAL  # two lanes still run
    for lane in lanes[1:]:
        lane.close()
        lane.close()  # a second close changes nothing
    assert sys.getswitchinterval() == before

    class _Broken(_Core):
        def close(self) -> None:
            raise RuntimeError("close failed")

    lane = ThreadLane(9, _Broken, signal)
    lane.start()
    assert sys.getswitchinterval() <= LANE_SWITCH_INTERVAL
    with pytest.raises(RuntimeError, match="close failed"):
        lane.close()
    assert sys.getswitchinterval() == before  # set back although the lane's close raised
