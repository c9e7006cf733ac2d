"""mem0 as an agent uses it (``write_mode=infer``): the real mem0ai 2.2.1 ``add(infer=True)`` pipeline, its
LLM calls through ufuzz's client and cache to a local OpenAI-compatible server whose rule-based model answers
mem0's own extraction prompt (``tests/support/mem0_llm.py``: every sentence one memory, exact repeats of an
existing memory skipped). Nothing of mem0 or qdrant is replaced."""

from __future__ import annotations

import os
import sys
import tempfile

import pytest

os.environ["MEM0_TELEMETRY"] = "False"
if "mem0" not in sys.modules:
    os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="ufuzz-mem0-test-"))
pytest.importorskip("mem0")

from tests.support import mem0_llm  # noqa: E402
from tests.support.llm_server import start_llm_server  # noqa: E402
from ufuzz.backends.adapters.mem0 import Mem0Backend  # noqa: E402
from ufuzz.model import Checkpoint, Memory  # noqa: E402

pytestmark = pytest.mark.integration

CP = Checkpoint("ck-infer", (
    Memory("m1", "Lena moved to Velmora in 2021. She works at the Brask bakery.", "2024-03-01T10:00:00"),
    Memory("m2", "Omar adopted a cat named Pico.", "2024-03-02T10:00:00"),
    Memory("m3", "Lena moved to Velmora in 2021.", "2024-03-03T10:00:00"),  # says again what m1 said
), ())


@pytest.fixture(scope="module")
def llm():
    with start_llm_server(model="mem0-rules") as server:
        yield server


def extraction_requests(llm) -> list[dict]:
    return [r.body for r in llm.chat_requests if mem0_llm.is_extraction(r.body["messages"][0]["content"])]


def _backend(path, llm, **extra) -> Mem0Backend:
    return Mem0Backend(path, {"write_mode": "infer", "llm_base_url": llm.base_url, "llm_model": "mem0-rules",
                              "llm_cache": str(path.parent / "calls.sqlite"), **extra})


@pytest.fixture(scope="module")
def built(tmp_path_factory, llm):
    b = _backend(tmp_path_factory.mktemp("infer") / "b", llm)
    before = len(extraction_requests(llm))
    handle = b.build(CP)
    yield b, handle, extraction_requests(llm)[before:]
    b.close()


def test_each_message_is_one_add_with_infer_and_maps_to_what_mem0_added(built):
    b, s, sent = built
    assert len(sent) == 3, "one extraction call per checkpoint memory"
    assert all(r["response_format"] == {"type": "json_object"} and r["temperature"] == 0.0 for r in sent)
    assert "## New Messages\nuser: Lena moved to Velmora in 2021. She works at the Brask bakery." in \
        sent[0]["messages"][1]["content"]
    # the dates mem0 writes into its prompt are the message's, not the wall clock's
    assert "## Observation Date\n2024-03-02\n\n## Current Date\n2024-03-02" in sent[1]["messages"][1]["content"]
    m1 = b.get(s, "m1")
    assert m1.text == "Lena moved to Velmora in 2021.\nShe works at the Brask bakery."
    assert len(m1.metadata["mem0"]["ids"]) == 2 and m1.timestamp == "2024-03-01T10:00:00"
    assert b.get(s, "m2").text == "Omar adopted a cat named Pico."
    assert b.get(s, "m3") is None, "mem0 stored nothing new for a message it already holds"
    assert [m.id for m in b.list(s)] == ["m1", "m2"]
    assert b.describe()["write_mode"] == "infer" and b.describe()["extraction_prompt_sha256"]
    # an LLM decides what a write stores: no twin can be written to read it back beside (engine.readback)
    assert b.capabilities.verbatim_search is False


def test_retrieval_reports_checkpoint_ids_once_each(built):
    b, s, _ = built
    got = b.retrieve(s, "Where does Lena work?", 2)
    assert [r.id for r in got] == ["m1", "m2"]
    assert got[0].text in ("She works at the Brask bakery.", "Lena moved to Velmora in 2021.")


def test_update_is_mem0s_own_update_of_the_changed_line(built):
    b, s, _ = built
    c = b.fork(s)
    ids = b.get(c, "m1").metadata["mem0"]["ids"]
    res = b.update(c, "m1", Memory("m1~u", "Lena moved to Velmora in 2021.\nShe works at the Orsk mill.",
                                   "2024-04-01T10:00:00", {"ufuzz_op": "update"}))
    assert res.ok and res.written == ("m1",) and "1 of the 2" in res.detail
    got = b.get(c, "m1")
    assert got.text.endswith("She works at the Orsk mill.") and got.metadata["mem0"]["ids"] == ids
    assert got.timestamp == "2024-04-01T10:00:00"
    assert b.get(s, "m1").text.endswith("Brask bakery."), "the parent state keeps its memory"
    assert not b.update(c, "m1", Memory("x", got.text, "2024-04-02T10:00:00")).ok  # changes nothing
    assert "line" in b.update(c, "m1", Memory("x", "one line only", "2024-04-02T10:00:00")).detail
    assert not b.update(c, "m3", Memory("x", "Lena moved away.", "2024-04-02T10:00:00")).ok  # holds nothing
    b.release(c)


def test_delete_removes_every_memory_the_message_produced(built):
    b, s, _ = built
    c = b.fork(s)
    res = b.delete(c, "m1")
    assert res.ok and res.removed == ("m1",)
    assert b.get(c, "m1") is None and [m.id for m in b.list(c)] == ["m2"]
    assert "m1" not in [r.id for r in b.retrieve(c, "Where does Lena work?", 3)]
    assert not b.delete(c, "m1").ok
    b.release(c)


def test_an_add_mem0_extracts_nothing_from_is_refused(built):
    b, s, _ = built
    c = b.fork(s)
    res = b.add(c, Memory("m9", "Omar adopted a cat named Pico.", "2024-05-01T10:00:00"))
    assert not res.ok and "extracted no memory" in res.detail
    ok = b.add(c, Memory("m10", "Omar plays the oboe.", "2024-05-01T10:00:00"))
    assert ok.ok and b.get(c, "m10").text == "Omar plays the oboe."
    b.release(c)


def test_a_rebuild_answers_from_the_call_cache(tmp_path, llm, built):
    b0, _, _ = built
    b = Mem0Backend(tmp_path / "again", {**b0.settings})
    before = len(extraction_requests(llm))
    try:
        handle = b.build(CP)
        assert b.get(handle, "m1").text == b0.get(built[1], "m1").text
    finally:
        b.close()
    assert len(extraction_requests(llm)) == before, "the same checkpoint makes no new LLM call"


def test_infer_needs_an_endpoint(tmp_path):
    with pytest.raises(ValueError, match="write_mode=infer needs options llm_base_url and llm_model"):
        Mem0Backend.check_options({"write_mode": "infer"})


def test_a_short_campaign_in_infer_mode_replays_and_checks_from_the_cache(tmp_path, llm):
    """CI's campaign in this LLM mode: the shipped suite, budget 200, 0 errors; a replay of its failures and a
    ``corpus check`` of its exported corpus answer every extraction from the campaign's call cache."""
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.triage.check import check_corpus
    from ufuzz.triage.corpusfile import export_campaign
    from ufuzz.triage.replay import replay_campaign

    out = tmp_path / "c"
    opts = {"write_mode": "infer", "llm_base_url": llm.base_url, "llm_model": "mem0-rules",
            "llm_cache": str(tmp_path / "calls.sqlite")}
    s = Campaign(CampaignConfig(backend="mem0", budget=200, seed=1, out=str(out), backend_options=opts)).run()
    assert s["status"] == "budget_spent" and s["executions"] == 200 and s["errors"] == 0
    assert s["mutants_valid"] > 0 and s["unique_failures"] > 0
    assert {k.split(":")[0] for k in s["failures_by_kind"]} == {"selection"}  # nothing responds: selection only
    import json

    rec = json.loads((out / "campaign.json").read_text())["llm"]["backend"]
    assert rec["write_mode"] == "infer" and rec["llm_model"] == "mem0-rules" and rec["endpoint_kind"] == "loopback"
    assert len(rec["extraction_prompt_sha256"]) == 16 and rec["llm_sampling"]["temperature"] == 0.0
    calls = llm.count
    keys = sorted(s["failures"])[:1]
    report = replay_campaign(out, keys=keys)
    assert report.total == 1 and report.reproduced == 1, [r.reason for r in report.results]
    corpus = export_campaign(out, tmp_path / "corpus.jsonl", max_records=1).path
    checked = check_corpus(corpus, records=None)
    assert checked.results and all(r.status != "error" for r in checked.results), checked.results
    assert llm.count == calls, "replay and corpus check made no new LLM call"
