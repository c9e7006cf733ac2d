"""Library backends as agents: an LLM answerer (``--llm-uses answer``) over the backend's retrieval, fuzzed with
retrieval visible (selection and response judged) and hidden (``--retrieval-visibility hidden``: responses only),
on the same seeds. The answerer is a local OpenAI-compatible server on 127.0.0.1 (tests/support/llm_server.py)
whose rule-based model answers from the memories in the prompt.
"""

from __future__ import annotations

import importlib.util

import pytest

from tests.support.llm_server import start_llm_server
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.oracles.judging import Judging
from ufuzz.seeds.synth import synthesize
from ufuzz.triage.replay import replay_campaign


@pytest.fixture(scope="module")
def suite():
    return synthesize(personas=2, seed=3, queries_per_persona=6)


@pytest.fixture(scope="module")
def llm():
    with start_llm_server() as server:
        yield server


def campaign(tmp_path, suite, llm, retrieval, backend="embedded", budget=150, **cfg):
    c = Campaign(CampaignConfig(backend=backend, budget=budget, seed=2, out=str(tmp_path / f"{backend}-{retrieval}"),
                                llm_base_url=llm.base_url, llm_model="rule-model", llm_uses=("answer",),
                                llm_cache=str(tmp_path / "calls.sqlite"), retrieval=retrieval, **cfg), suite=suite)
    return c, c.run()


def seed_responses(c) -> dict[str, str]:
    seeds = {s.id for s in c.suite.seeds}
    return {e.execution.case_id: e.execution.response for e in c.store.executions(c.campaign_id, is_parent=True)
            if e.execution.case_id in seeds}


def check_pair(visible, hidden) -> None:
    (cv, sv), (ch, sh) = visible, hidden
    for s in (sv, sh):
        assert s["status"] == "budget_spent" and s["errors"] == 0
    assert sv["judging"]["selection"] and sv["judging"]["retrieval"] == "visible"
    assert not sh["judging"]["selection"] and sh["judging"]["retrieval"] == "hidden by the campaign"
    assert sv["judging"]["responder"] == sh["judging"]["responder"] == "answerer:rule-model"
    assert any(e.execution.top_ids for e in cv.store.executions(cv.campaign_id))
    assert not any(e.execution.top_ids for e in ch.store.executions(ch.campaign_id))
    assert {f.level for _, f in ch.failure_log} <= {"response"}
    kept = [f for f in ch.store.feedback(ch.campaign_id) if f.retained]
    assert all(f.signals["novelty"] and f.signals["divergence"] is None and f.signals["coverage"] == 0 for f in kept)
    # hiding retrieval changes what the fuzzer sees, not what the system answers
    both = seed_responses(cv).keys() & seed_responses(ch).keys()
    assert both and all(seed_responses(cv)[i] == seed_responses(ch)[i] for i in both)


def test_embedded_as_an_agent_visible_and_hidden_on_the_same_seeds(tmp_path, suite, llm):
    visible = campaign(tmp_path, suite, llm, "auto")
    hidden = campaign(tmp_path, suite, llm, "hidden")
    check_pair(visible, hidden)
    assert visible[1]["unique_failures"] and hidden[1]["unique_failures"]
    assert "selection" in {f.level for _, f in visible[0].failure_log}  # both levels where retrieval is seen
    calls = llm.count
    report = replay_campaign(tmp_path / "embedded-hidden")
    assert report.total and report.reproduced == report.total, \
        [r.reason for r in report.results if not r.reproduced][:3]
    assert llm.count == calls, "the replay answers from the campaign's call cache"


def test_a_hidden_campaign_needs_something_that_responds(tmp_path, suite):
    out = tmp_path / "c"
    with pytest.raises(ValueError, match="retrieval is hidden on backend 'embedded' and nothing responds"):
        Campaign(CampaignConfig(budget=10, out=str(out), retrieval="hidden"), suite=suite).run()
    assert not out.exists(), "nothing half-written"
    with pytest.raises(ValueError, match="--retrieval-visibility hidden with --reader"):
        CampaignConfig(retrieval="hidden", reader="top-evidence")
    with pytest.raises(ValueError, match="--retrieval-visibility must be one of auto, visible, hidden"):
        CampaignConfig(retrieval="secret")


def test_judging_keeps_the_visibility_for_replay_and_corpus_check():
    j = Judging.of(CampaignConfig(retrieval="hidden", llm_base_url="http://127.0.0.1:1/v1", llm_uses=("answer",)))
    assert j.retrieval == "hidden" and Judging.from_dict(j.to_dict()) == j
    assert Judging.of({"llm_uses": []}).retrieval == "auto"  # a campaign stored before the option


LIBRARIES = [("mem0", "mem0"), ("graphiti", "graphiti_core"), ("a-mem", "agentic_memory")]


@pytest.mark.integration
@pytest.mark.parametrize("backend, module", LIBRARIES, ids=[b for b, _ in LIBRARIES])
def test_library_as_an_agent_visible_and_hidden(backend, module, tmp_path, llm):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{backend} extra not installed")
    small = synthesize(personas=1, seed=3, queries_per_persona=6)
    check_pair(campaign(tmp_path, small, llm, "auto", backend=backend, budget=24),
               campaign(tmp_path, small, llm, "hidden", backend=backend, budget=24))
