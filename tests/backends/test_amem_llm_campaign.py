"""A-Mem with its LLM (note construction and evolution on) in a campaign, as CI runs every LLM mode: the real
A-Mem and ChromaDB, its prompts answered by the rule-based stand-in (``tests/support/amem_llm.py``) through
ufuzz's LLM client and cache; a replay and a ``corpus check`` make no new LLM call."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("agentic_memory")

from tests.support import amem_llm  # noqa: E402
from tests.support.llm_server import start_llm_server  # noqa: E402
from ufuzz.backends.adapters.amem import AMemBackend  # noqa: E402
from ufuzz.backends.conformance import tiny_checkpoint  # noqa: E402
from ufuzz.model import Checkpoint  # noqa: E402

pytestmark = pytest.mark.integration


def test_note_ids_and_prompts_are_stable_so_a_rebuild_is_served_from_the_cache(tmp_path):
    with start_llm_server(model="amem-rules") as llm:
        opts = {"llm_base_url": llm.base_url, "llm_model": "amem-rules", "llm_cache": str(tmp_path / "c.sqlite")}
        cp = Checkpoint("ck", tiny_checkpoint().memories[:3], ())
        first = AMemBackend(tmp_path / "a", opts)
        s = first.build(cp)
        sent = [r.body for r in llm.chat_requests]
        assert len(sent) == 5 and all(amem_llm.handles(b["messages"][0]["content"], b["messages"][1]["content"])
                                      for b in sent)
        assert {b["temperature"] for b in sent} == {1.0}, "A-Mem's own sampling"
        m2 = first.get(s, "m2")
        assert m2.metadata["links"] == ["m1"] and m2.metadata["tags"] == ["personal", "note", "linked"]
        d = first.describe()
        assert d["write_mode"] == "llm" and d["llm_prompts_sha256"] and d["llm"]["failures"] == 0
        again = AMemBackend(tmp_path / "b", opts)
        s2 = again.build(cp)
        assert len(llm.chat_requests) == 5, "the same checkpoint asks the same prompts: all from the cache"
        assert again.get(s2, "m2").metadata == m2.metadata
        first.close()
        again.close()


def test_a_short_campaign_with_the_llm_replays_and_checks_from_the_cache(tmp_path):
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.triage.check import check_corpus
    from ufuzz.triage.corpusfile import export_campaign
    from ufuzz.triage.replay import replay_campaign

    out = tmp_path / "c"
    with start_llm_server(model="amem-rules") as llm:
        opts = {"llm_base_url": llm.base_url, "llm_model": "amem-rules", "llm_cache": str(tmp_path / "calls.sqlite")}
        # the budget on the shipped suite (about 45 s since A-Mem embeds through ufuzz's shared MiniLM;
        # a budget-200 run had taken 13 min before)
        s = Campaign(CampaignConfig(backend="a-mem", budget=200, seed=1, out=str(out), backend_options=opts)).run()
        assert s["status"] == "budget_spent" and s["executions"] == 200 and s["errors"] == 0
        assert s["mutants_valid"] > 0 and s["unique_failures"] > 0, "nothing to replay"
        assert {k.split(":")[0] for k in s["failures_by_kind"]} == {"selection"}  # nothing responds: selection only
        rec = json.loads((out / "campaign.json").read_text())["llm"]["backend"]
        assert rec["llm_model"] == "amem-rules" and rec["endpoint_kind"] == "loopback"
        calls = llm.count
        report = replay_campaign(out, keys=sorted(s["failures"])[:1])
        assert report.reproduced == report.total == 1, [r.reason for r in report.results]
        corpus = export_campaign(out, tmp_path / "corpus.jsonl", max_records=1).path
        checked = check_corpus(corpus)
        assert checked.results and all(r.status != "error" for r in checked.results)
        assert llm.count == calls, "replay and corpus check made no new LLM call"


def test_every_native_operation_with_the_llm_on_passes_the_conformance_kit(tmp_path):
    """Issue 26 review: with its LLM on, only building a state was tested outside campaigns. Every conformance
    check — add, update, delete, get, list, fork isolation, retrieval — on A-Mem with note construction and
    evolution on (its prompts answered by the stand-in, every reply one A-Mem parses)."""
    from ufuzz.backends.conformance import CHECKS, Skip

    with start_llm_server(model="amem-rules") as llm:
        opts = {"llm_base_url": llm.base_url, "llm_model": "amem-rules", "llm_cache": str(tmp_path / "c.sqlite")}
        b = AMemBackend(tmp_path / "a", opts)
        try:
            skipped = []
            for check in CHECKS:
                try:
                    check(b)
                except Skip:
                    skipped.append(check.name)
            assert not skipped, skipped  # A-Mem copies states and retrieves: every check applies
            assert b.describe()["llm"]["failures"] == 0 and llm.count > 0
            assert all(amem_llm.handles(r.body["messages"][0]["content"], r.body["messages"][1]["content"])
                       for r in llm.chat_requests)
        finally:
            b.close()
