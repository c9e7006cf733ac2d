"""Bounded live states: evicted mutated states are rebuilt from their recipe with no change in behaviour."""

from __future__ import annotations

from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.seeds.synth import synthesize


def test_evicting_states_changes_nothing_but_memory(tmp_path):
    suite = synthesize(personas=2, seed=5)
    runs = {}
    for limit in (1, 1000):
        c = Campaign(CampaignConfig(budget=500, seed=9, out=str(tmp_path / f"c{limit}"), max_live_states=limit),
                     suite=suite)
        s = c.run()
        runs[limit] = (c, s)
    small, big = runs[1][0], runs[1000][0]
    assert small.executor.evictions > 0 and big.executor.evictions == 0
    assert small.executor.rebuilds > big.executor.rebuilds
    assert runs[1][1]["failures"] == runs[1000][1]["failures"]
    assert runs[1][1]["retained"] == runs[1000][1]["retained"] > 0
    qa = [m.query.text for m in small.store.mutants(small.campaign_id)]
    qb = [m.query.text for m in big.store.mutants(big.campaign_id)]
    assert qa == qb
