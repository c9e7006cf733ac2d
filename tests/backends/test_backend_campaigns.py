"""A short real campaign on each third-party memory library (skipped where its extra is not installed).

CI installs every extra (``.ci/run``), so there these run against mem0, Graphiti on Kuzu and A-Mem for real.
"""

from __future__ import annotations

import importlib.util

import pytest

from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.seeds.synth import synthesize

BACKENDS = [("mem0", "mem0"), ("graphiti", "graphiti_core"), ("a-mem", "agentic_memory")]


@pytest.fixture(scope="module")
def small_suite():
    return synthesize(personas=1, seed=3, queries_per_persona=6)


@pytest.mark.integration
@pytest.mark.parametrize("backend, module", BACKENDS, ids=[b for b, _ in BACKENDS])
def test_short_campaign(backend, module, small_suite, tmp_path):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{backend} extra not installed")
    cfg = CampaignConfig(backend=backend, budget=60, seed=2, out=str(tmp_path / backend))
    c = Campaign(cfg, suite=small_suite)
    s = c.run()
    assert s["status"] == "budget_spent"
    assert s["executions"] == 60
    assert s["errors"] == 0, c.store.errors(c.campaign_id)[:3]
    ops = {m.operator for m in c.store.mutants(c.campaign_id, valid=True)}
    assert {"update", "delete", "paraphrase"} <= ops, "state and query mutants validate on the real library"
    print(f"{backend}: {s['unique_failures']} unique failures {s['failures_by_kind']}")
