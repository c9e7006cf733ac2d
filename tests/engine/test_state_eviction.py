"""Bounded live states: evicted mutated states are rebuilt from their recipe with no change in behaviour."""

from __future__ import annotations

from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.engine.executor import Executor
from ufuzz.seeds.synth import synthesize


def test_evicting_states_changes_nothing_but_memory(tmp_path, monkeypatch):
    suite = synthesize(personas=2, seed=5)
    made: list[Executor] = []  # the campaign's parent cache and its lane's executor (which runs the states)
    init = Executor.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(Executor, "__init__", recording)
    runs, executors = {}, {}
    for limit in (1, 1000):
        made.clear()
        c = Campaign(CampaignConfig(budget=500, seed=9, out=str(tmp_path / f"c{limit}"), max_live_states=limit),
                     suite=suite)
        s = c.run()
        runs[limit] = (c, s)
        executors[limit] = list(made)
    small, big = runs[1][0], runs[1000][0]

    def total(limit: int, counter: str) -> int:
        return sum(getattr(ex, counter) for ex in executors[limit])

    assert total(1, "evictions") > 0 and total(1000, "evictions") == 0
    assert total(1, "rebuilds") > total(1000, "rebuilds")
    assert runs[1][1]["failures"] == runs[1000][1]["failures"]
    assert runs[1][1]["retained"] == runs[1000][1]["retained"] > 0
    qa = [m.query.text for m in small.store.mutants(small.campaign_id)]
    qb = [m.query.text for m in big.store.mutants(big.campaign_id)]
    assert qa == qb


def test_an_executor_tells_which_states_it_let_go():
    """The pool keeps sending a lane the jobs on states it holds (:mod:`ufuzz.engine.parallel.pool`): a lane says
    which states its executor evicted, once each, and not a state that is live again."""
    import tempfile
    from dataclasses import replace

    from ufuzz.backends.adapters.embedded import EmbeddedBackend
    from ufuzz.model import Checkpoint, FuzzCase, Memory, StateOp

    suite = synthesize(personas=1, seed=5)
    seed = suite.seeds[0]
    cp: Checkpoint = suite.checkpoints[seed.checkpoint_id]
    base = FuzzCase.from_seed(seed, cp)
    cases = [replace(base, id=f"c{i}", ops=(StateOp("add", None, Memory(f"new{i}", f"Note {i}.", "2030-01-01")),))
             for i in range(3)]
    be = EmbeddedBackend(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
    ex = Executor(be, dict(suite.checkpoints), max_live_states=1)
    try:
        ex.state_of(cases[0])
        assert ex.take_evicted() == ()
        ex.state_of(cases[1])  # one mutated state at most: the first goes
        ex.state_of(cases[2])
        assert ex.take_evicted() == (cases[0].state_key, cases[1].state_key)
        assert ex.take_evicted() == ()
        ex.state_of(cases[0])  # evicts the third, and the first is live again before it is asked
        ex.state_of(cases[2])
        assert ex.take_evicted() == (cases[0].state_key,)
    finally:
        ex.close()
        be.close()


def test_a_lane_tells_the_pool_which_states_it_no_longer_holds(tmp_path):
    """A lane's answer carries the states its executor let go (``LaneResult.evicted``), so that the pool stops
    treating that lane as their holder."""
    import tempfile
    from dataclasses import replace

    from ufuzz.backends.adapters.embedded import EmbeddedBackend
    from ufuzz.engine.parallel.core import LaneCore, LaneJob, LaneSpec
    from ufuzz.model import FuzzCase, Memory, StateOp

    suite = synthesize(personas=1, seed=5)
    seed = suite.seeds[0]
    base = FuzzCase.from_seed(seed, suite.checkpoints[seed.checkpoint_id])
    cases = [replace(base, id=f"c{i}", ops=(StateOp("add", None, Memory(f"new{i}", f"Note {i}.", "2030-01-01")),))
             for i in range(2)]
    be = EmbeddedBackend(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
    cfg = CampaignConfig(out=str(tmp_path / "c"), max_live_states=1)
    core = LaneCore(LaneSpec.of(cfg, EmbeddedBackend, dict(suite.checkpoints)), tmp_path, backend=be)
    try:
        first, second = (core.run([LaneJob(0, None, case, run_parent=True)])[0] for case in cases)
        assert first.parent_ex.error is None and first.evicted == ()
        assert second.evicted == (cases[0].state_key,)
    finally:
        core.close()
        be.close()
