"""LLM paths end to end in a campaign, against a local OpenAI-compatible server on 127.0.0.1.

The server answers with a deterministic rule-based responder (a stand-in model); the memory system under
test is the real embedded backend. A second identical campaign must make zero calls (persistent cache).
"""

from __future__ import annotations

from tests.support.llm_server import start_llm_server
from ufuzz.engine.campaign import Campaign, CampaignConfig


def _run(out, server, cache, uses=("paraphrase", "answer", "judge")):
    cfg = CampaignConfig(budget=80, seed=5, out=str(out), llm_base_url=server.base_url, llm_model="rule-model",
                         llm_uses=uses, llm_cache=str(cache))
    c = Campaign(cfg)
    return c, c.run()


def test_llm_uses_run_and_replays_hit_the_cache(tmp_path):
    cache = tmp_path / "calls.sqlite"
    with start_llm_server() as server:
        c1, s1 = _run(tmp_path / "a", server, cache)
        calls_first = server.count
        assert calls_first > 0 and s1["llm"]["calls_made"] == calls_first
        llm_paraphrases = [m for m in c1.store.mutants(c1.campaign_id) if m.operator == "paraphrase"]
        assert llm_paraphrases and all(m.detail.startswith("llm:") for m in llm_paraphrases)
        assert any(m.valid for m in llm_paraphrases), "the validator accepts some LLM wordings"
        responses = [e.execution.response for e in c1.store.executions(c1.campaign_id)]
        assert all(r is not None for r in responses)
        c2, s2 = _run(tmp_path / "b", server, cache)
        assert server.count == calls_first, "an identical re-run makes zero LLM calls"
        assert s2["llm"]["calls_made"] == 0 and s2["llm"]["cache_hits"] > 0
        assert s2["failures"] == s1["failures"]


def test_unreachable_llm_is_an_error_record_not_a_crash(tmp_path):
    import pytest

    from ufuzz.engine.preflight import PreflightError

    cfg = CampaignConfig(budget=20, seed=1, out=str(tmp_path / "c"), llm_base_url="http://127.0.0.1:9/v1",
                         llm_model="m", llm_uses=("answer",), llm_cache=str(tmp_path / "x.sqlite"), llm_retries=0)
    with pytest.raises(PreflightError, match="reaching the LLM endpoint"):  # by default it fails at once
        Campaign(cfg).run()
    assert not (tmp_path / "c").exists()
    cfg.preflight = False  # without the preflight, every call that fails is an error record
    s = Campaign(cfg).run()
    assert s["errors"] > 0 and s["unique_failures"] == 0
    assert s["llm"]["errors"] == s["llm"]["calls_made"] > 0
