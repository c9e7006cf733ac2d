"""Graphiti's native write mode (``write_mode=episode``): every memory goes through ``Graphiti.add_episode``
(graphiti-core 0.31.2 on Kuzu, real) and ``OpenAIGenericClient`` (real, json_schema structured output) to a
real OpenAI-compatible server on 127.0.0.1 whose replies come from the rule-based responder in
``tests/graphiti_llm.py`` (the stand-in for a language model; nothing of Graphiti or Kuzu is replaced)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("graphiti_core")
pytest.importorskip("kuzu")

from tests.support.graphiti_llm import GraphitiResponder, section  # noqa: E402
from tests.support.llm_server import RawReply, RecordedRequest, start_llm_server  # noqa: E402
from ufuzz.backends.adapters.graphiti import GraphitiBackend  # noqa: E402
from ufuzz.backends.conformance import tiny_checkpoint  # noqa: E402
from ufuzz.backends.protocol import BackendError  # noqa: E402
from ufuzz.engine.campaign import Campaign, CampaignConfig  # noqa: E402
from ufuzz.model import Memory  # noqa: E402
from ufuzz.seeds.io import load_suite  # noqa: E402

pytestmark = pytest.mark.integration

MODEL = "graphiti-rules"
SHIPPED = Path(__file__).resolve().parents[2] / "seeds" / "default.jsonl"
TS = "2024-02-01T10:00:00"


@dataclass
class LLM:
    server: Any
    responder: GraphitiResponder
    cache: str  # this module's LLM call cache: a prompt answered in an earlier run is not asked again

    def options(self, **extra: Any) -> dict[str, Any]:
        return {"write_mode": "episode", "llm_base_url": self.server.base_url, "llm_model": MODEL,
                "llm_cache": self.cache, **extra}


@dataclass
class Built:
    backend: GraphitiBackend
    base: str
    calls: dict[str, int]
    requests: list[RecordedRequest]
    contradictions: list[tuple[str, str]]
    seconds: float


@pytest.fixture(scope="module")
def llm(tmp_path_factory):
    responder = GraphitiResponder()
    with start_llm_server(responder, model=MODEL) as srv:
        yield LLM(srv, responder, str(tmp_path_factory.mktemp("graphiti-llm") / "calls.sqlite"))


@pytest.fixture(autouse=True)
def llm_replies_fit(llm):
    """Every prompt Graphiti sent during the test had a rule and got a schema-valid reply."""
    yield
    assert llm.responder.failures == [] and llm.server.errors == []


@pytest.fixture(scope="module")
def built(llm, tmp_path_factory):
    b = GraphitiBackend(tmp_path_factory.mktemp("episode"), llm.options())
    llm.responder.reset()
    before = llm.server.count
    t0 = time.perf_counter()
    base = b.build(tiny_checkpoint())
    seconds = time.perf_counter() - t0
    yield Built(b, base, dict(llm.responder.calls), llm.server.chat_requests[before:],
                list(llm.responder.contradictions), seconds)
    b.close()


def _ids(b: GraphitiBackend, s: str, q: str, k: int = 6) -> list[str]:
    return [r.id for r in b.retrieve(s, q, k)]


def test_build_sends_one_add_episode_per_memory(built):
    mems = sorted(tiny_checkpoint().memories, key=lambda m: m.timestamp)
    # per episode: one entity extraction and one fact extraction; dedupe prompts only where the graph
    # already holds candidates (edge dedupe/invalidation, node dedupe when names do not match exactly)
    assert built.calls["ExtractedEntities"] == len(mems)
    assert built.calls["ExtractedEdges"] == len(mems)
    assert built.calls.get("EdgeDuplicate", 0) >= 1, "later episodes are checked against the stored edges"
    assert set(built.calls) <= {"ExtractedEntities", "ExtractedEdges", "EdgeDuplicate", "NodeResolutions",
                                "EdgeTimestamps", "SummarizedEntities"}
    assert sum(built.calls.values()) == len(built.requests)
    for r in built.requests:
        assert r.body["model"] == MODEL
        fmt = r.body["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] in built.calls
        assert [m["role"] for m in r.body["messages"]] == ["system", "user"]
    entity_prompts = [r for r in built.requests if r.body["response_format"]["json_schema"]["name"]
                      == "ExtractedEntities"]
    sent = [section(r.body["messages"][1]["content"], "CURRENT MESSAGE") for r in entity_prompts]
    assert sent == [m.text for m in mems], "episodes are added one by one, oldest first, with the memory text"
    assert built.contradictions == [], "no seed memory contradicts another"


def test_list_and_get_report_memories_by_ufuzz_id(built):
    b, s = built.backend, built.base
    listed = b.list(s)
    want = {m.id: m for m in tiny_checkpoint().memories}
    assert [m.id for m in listed] == sorted(want, key=lambda i: (want[i].timestamp, i))
    for got in listed:
        assert got.active and got.text == want[got.id].text and got.timestamp == want[got.id].timestamp
        assert got.metadata["edges"] == [want[got.id].text]  # the one fact the episode asserted
    assert len({m.metadata["episode_uuid"] for m in listed}) == len(listed)
    m6 = b.get(s, "m6")
    assert m6 is not None and m6.text == "Pip's vet is Dr. Harrow." and m6.active
    assert b.get(s, "nope") is None


def test_retrieve_ranks_the_subject_memory_first(llm, built):
    b, s = built.backend, built.base
    calls = llm.server.count
    cases = {"Where does Lena live?": "m1", "Who is Pip's vet?": "m6", "Where does Omar live?": "m4",
             "What does Lena do for work?": "m2", "What day do I go to the gym?": "m5"}
    first = {}
    for q, want in cases.items():
        res = b.retrieve(s, q, 3)
        assert res and res[0].id == want, (q, [(r.id, r.score) for r in res])
        assert [r.score for r in res] == sorted((r.score for r in res), reverse=True)
        assert len({r.id for r in res}) == len(res) and {r.id for r in res} <= {f"m{i}" for i in range(1, 7)}
        first[q] = [(r.id, r.score) for r in res]
    assert llm.server.count == calls, "retrieval is Graphiti's search: no LLM call"
    fork = b.fork(s)
    assert {q: [(r.id, r.score) for r in b.retrieve(fork, q, 3)] for q in cases} == first
    assert {q: [(r.id, r.score) for r in b.retrieve(s, q, 3)] for q in cases} == first
    b.release(fork)


def test_update_is_graphitis_own_invalidation(llm, built):
    b, s = built.backend, built.base
    c = b.fork(s)
    llm.responder.reset()
    new = Memory("m1~u", "Update: Lena now lives in Brask.", TS)
    res = b.update(c, "m1", new)
    assert res.ok and res.written == ("m1~u",) and res.superseded == ("m1",) and not res.removed
    assert llm.responder.contradictions == [(new.text, "My sister Lena lives in Velmora.")]
    old, got = b.get(c, "m1"), b.get(c, "m1~u")
    assert old is not None and not old.active  # its only edge got invalid_at/expired_at from Graphiti
    assert got is not None and got.active and got.text == new.text and got.timestamp == TS
    assert got.metadata["edges"] == [new.text]  # its own fact, not the edge it invalidated
    ids = _ids(b, c, "Where does Lena live?")
    assert "m1~u" in ids and "m1" in ids  # Graphiti's default search keeps invalidated edges
    # the parent state is untouched
    assert b.get(s, "m1").active and b.get(s, "m1~u") is None
    # a later update of the new memory that contradicts nothing supersedes nothing (the adapter looks at
    # the edges m1~u asserted, not at the m1 edge it invalidated)
    res2 = b.update(c, "m1~u", Memory("m1~u2", "Lena's neighbour in Brask is called Tobin.", "2024-02-02T10:00:00"))
    assert res2.ok and res2.written == ("m1~u2",) and res2.superseded == ()
    assert "invalidated no edge" in res2.detail and b.get(c, "m1~u").active
    # deleting the update does not revive the memory it invalidated: remove_episode deletes the episode's
    # own edges and leaves the invalid_at it wrote on others (graphiti-core 0.31.2 Graphiti.remove_episode)
    llm.responder.reset()
    assert b.delete(c, "m1~u").removed == ("m1~u",)
    assert b.get(c, "m1~u") is None and not b.get(c, "m1").active
    assert llm.responder.calls.get("SummarizedEntities", 0) >= 1, "remove_episode rebuilds node summaries"
    b.release(c)


def test_update_that_graphiti_does_not_invalidate(llm, built):
    """Graphiti's LLM decides what an update invalidates; when it invalidates nothing the adapter reports no
    superseded memory (ufuzz's update validator then rejects the mutant as unexplained)."""
    b, s = built.backend, built.base
    c = b.fork(s)
    res = b.update(c, "m2", Memory("m2~u", "Lena started a pottery class at Brask Hall.", TS))
    assert res.ok and res.written == ("m2~u",) and res.superseded == () and not res.removed
    assert b.get(c, "m2").active and b.get(c, "m2~u").active
    assert not b.update(c, "missing", Memory("x", "Omar lives in Brask.", TS)).ok
    with pytest.raises(BackendError, match="update"):
        b.update(c, "m3", Memory("m2~u", "again", TS))
    with pytest.raises(BackendError, match="add"):
        b.add(c, Memory("m1", "duplicate id", TS))
    b.release(c)


def test_delete_is_remove_episode(llm, built):
    b, s = built.backend, built.base
    c = b.fork(s)
    assert "m4" in _ids(b, c, "Where does Omar live?")
    res = b.delete(c, "m4")
    assert res.ok and res.removed == ("m4",)
    assert b.get(c, "m4") is None and "m4" not in {m.id for m in b.list(c)}
    assert "m4" not in _ids(b, c, "Where does Omar live?")
    again = b.delete(c, "m4")
    assert not again.ok and "no memory" in again.detail
    assert b.get(s, "m4") is not None  # the parent keeps it
    b.release(c)


def test_a_shared_edge_outlives_one_of_its_episodes(llm, built):
    """A memory restating a stored fact is resolved by Graphiti to the existing edge (the episode is added
    to the edge's episodes); deleting the first memory keeps the edge, now retrieved as the second."""
    b, s = built.backend, built.base
    c = b.fork(s)
    res = b.add(c, Memory("m7", "Lena lives in Velmora.", TS))
    assert res.ok and res.written == ("m7",)
    assert b.get(c, "m7").metadata["edges"] == ["My sister Lena lives in Velmora."]
    assert _ids(b, c, "Where does Lena live?")[0] == "m1"  # the edge maps to its first episode
    b.delete(c, "m1")
    assert b.get(c, "m1") is None
    assert _ids(b, c, "Where does Lena live?")[0] == "m7"
    b.release(c)


def test_add_in_episode_mode_is_retrievable(built):
    b, s = built.backend, built.base
    c = b.fork(s)
    res = b.add(c, Memory("m7", "Omar adopted a cat named Sorrel.", TS))
    assert res.ok and res.detail == "add_episode"
    assert b.get(c, "m7").metadata["edges"] == ["Omar adopted a cat named Sorrel."]
    assert _ids(b, c, "What is the name of Omar's cat?")[0] == "m7"
    b.release(c)


def test_llm_failure_is_a_backend_error(tmp_path):
    def refuse(_request: dict[str, Any]) -> RawReply:
        return RawReply(400, '{"error": {"message": "model overloaded", "type": "invalid_request_error"}}')

    with start_llm_server(refuse, model=MODEL) as srv:
        b = GraphitiBackend(tmp_path, {"write_mode": "episode", "llm_base_url": srv.base_url, "llm_model": MODEL,
                                       "llm_cache": str(tmp_path / "calls.sqlite")})
        try:
            with pytest.raises(BackendError, match=r"graphiti build: LLMError: .*HTTP 400.*model overloaded"):
                b.build(tiny_checkpoint())
            assert srv.count == 1  # a 400 is not retried
            assert not any(b.root.iterdir()), "the half-built state is released"
        finally:
            b.close()


def test_short_campaign_in_episode_mode(llm, tmp_path):
    suite = load_suite(SHIPPED)  # the campaign: the shipped suite, budget 200 (about 1.5 min here)
    memories = min(len(ck.memories) for ck in suite.checkpoints.values())
    before = llm.server.count
    cfg = CampaignConfig(backend="graphiti", backend_options=llm.options(), budget=200, seed=2,
                         out=str(tmp_path / "graphiti-episode"))
    c = Campaign(cfg, suite=suite)  # default isolation: the adapter runs in a worker process
    s = c.run()
    assert s["status"] == "budget_spent"
    assert s["executions"] == 200
    assert s["errors"] == 0, c.store.errors(c.campaign_id)[:3]
    assert {k.split(":")[0] for k in s["failures_by_kind"]} <= {"selection"}  # nothing responds: selection only
    entity_prompts = [r for r in llm.server.chat_requests[before:]
                      if r.body["response_format"]["json_schema"]["name"] == "ExtractedEntities"]
    assert len(entity_prompts) >= memories, "the checkpoint was built through add_episode"
    valid = {m.operator for m in c.store.mutants(c.campaign_id, valid=True)}
    assert "paraphrase" in valid and valid & {"update", "delete"}, valid
    print(f"graphiti episode campaign: {s['unique_failures']} unique failures {s['failures_by_kind']}, "
          f"{llm.server.count - before} LLM requests")
    # a replay and a corpus check rebuild the same states from the same episodes: every prompt is the one the
    # campaign sent, answered from the call cache
    from ufuzz.triage.check import check_corpus
    from ufuzz.triage.corpusfile import export_campaign
    from ufuzz.triage.replay import replay_campaign

    assert s["unique_failures"] > 0, "nothing to replay"
    calls = llm.server.count
    out = tmp_path / "graphiti-episode"
    report = replay_campaign(out, keys=sorted(s["failures"])[:1])
    assert report.reproduced == report.total == 1, [r.reason for r in report.results]
    checked = check_corpus(export_campaign(out, tmp_path / "corpus.jsonl", max_records=1).path)
    assert checked.results and all(r.status != "error" for r in checked.results), checked.results
    assert llm.server.count == calls, "replay and corpus check made no new LLM call"
