"""The opt-in stress edit (issue 23, item 3): unrelated edits aimed at capacity, recency and ordering."""

from __future__ import annotations

import random

import pytest

from tests.support.http_product_server import start_product_server
from tests.support.planted_world import PATH as WORLD
from ufuzz.backends.adapters.embedded import EmbeddedBackend
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.engine.strategies import apply_strategy
from ufuzz.model import FuzzCase
from ufuzz.operators import create_all, names
from ufuzz.operators.base import StateView
from ufuzz.operators.stress_edit import StressEdit
from ufuzz.seeds.io import load_suite


def _seed_case(n: int = 1, j: int = 1):
    suite = load_suite(WORLD)
    seed = next(s for s in suite.seeds if s.id == f"w{n}-s{j}")
    cp = suite.checkpoints[seed.checkpoint_id]
    return FuzzCase.from_seed(seed, cp), cp, suite.references[seed.query.id]


def test_opt_in_not_in_the_default_campaign_but_in_the_stress_strategy():
    assert "stress_edit" not in names() and "stress_edit" not in create_all()
    assert "stress_edit" in names(opt_in=True)
    cfg = apply_strategy(CampaignConfig(backend="embedded"), "stress")
    assert cfg.operators[-1] == "stress_edit" and set(names()) < set(cfg.operators)


def test_targets_and_their_edits(tmp_path):
    case, cp, ref = _seed_case()
    op = StressEdit()
    assert op.targets(case) == ["add-burst", "update-oldest", "update-newest", "delete-oldest", "delete-newest"]
    b = EmbeddedBackend(tmp_path, {"db": "memory", "retrieval": "bm25"})
    stamps = {m.id: m.timestamp for m in cp.memories}
    relevant = case.provenance.relevant_ids(case.query.fields.entity, case.query.fields.attribute)
    unrelated = sorted((i for i in stamps if i not in relevant), key=stamps.get)
    for target, expect in (("delete-oldest", unrelated[0]), ("delete-newest", unrelated[-1]),
                           ("update-oldest", unrelated[0]), ("update-newest", unrelated[-1])):
        view = StateView(b, b.build(cp))
        m = op.mutate(case, ref, target, random.Random(1), view)
        assert m.ops[0].target == expect, target
        assert op.validate(case, m, view).ok
    view = StateView(b, b.build(cp))
    m = op.mutate(case, ref, "add-burst", random.Random(1), view)
    assert len(m.ops) == len(cp.memories) and all(o.op == "add" for o in m.ops)
    assert len({o.memory.id for o in m.ops}) == len(m.ops)
    assert len(view.list()) == 2 * len(cp.memories) and op.validate(case, m, view).ok
    assert m.reference == ref  # meaning-preserving: the parent's reference


def _campaign(tmp_path, monkeypatch, capacity, strategy):
    from tests.oracles.test_http_ground_truth import TOKEN, _config

    monkeypatch.setenv("PRODUCT_API_TOKEN", TOKEN)
    out = tmp_path / strategy
    out.mkdir()
    with start_product_server(TOKEN, capacity=capacity) as srv:
        cfg = apply_strategy(CampaignConfig(backend="http", backend_options={"config": str(_config(out, srv.base_url,
                                                                                                     ""))},
                                            seeds=str(WORLD), budget=300, seed=1, out=str(out / "c")), strategy)
        c = Campaign(cfg)
        c.run()
    return [f for _, f in c.failure_log]


@pytest.mark.parametrize("capacity", [8])
def test_a_capacity_beyond_one_add_is_reached_by_the_burst_only(tmp_path, monkeypatch, capacity):
    """The product holds 8 memories (its checkpoints 5): one unrelated add stays within it, so the default
    campaign cannot see the eviction; the stress strategy's burst goes past it and records the side effect."""
    full = _campaign(tmp_path, monkeypatch, capacity, "full")
    assert not [f for f in full if f.stage == "state"]
    stress = _campaign(tmp_path, monkeypatch, capacity, "stress")
    hits = [f for f in stress if f.stage == "state"]
    assert hits and {(f.operator, f.target, f.kind) for f in hits} == {("stress_edit", "add-burst",
                                                                       "collateral_removal")}
