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
