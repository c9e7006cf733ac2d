"""The MemOS adapter against the real MemoryOS 2.0.33 library: ``GeneralTextMemory`` on embedded Qdrant with the
packaged MiniLM. Direct writes make no LLM call; ``write_mode=extract`` runs MemOS's own LLM extraction through a
real OpenAI-compatible server on 127.0.0.1 whose replies come from a rule-based stand-in for a language model.

MemoryOS cannot share the main virtualenv (it pins transformers<5 and openai<2), so these tests run where the
``memos`` extra is installed (``UFUZZ_EXTRAS=memos bash scripts/install.sh`` into a venv of its own) and are
skipped elsewhere; the tests of what ``ufuzz backends`` says without it run everywhere.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ufuzz.backends import registry
from ufuzz.backends.adapters.memos import INSTALL_HINT, MemosBackend
from ufuzz.backends.conformance import CHECKS, tiny_checkpoint
from ufuzz.model import Checkpoint, Memory

REPO = Path(__file__).resolve().parents[2]
HAVE_MEMOS = importlib.util.find_spec("memos") is not None and importlib.util.find_spec("qdrant_client") is not None
needs_memos = pytest.mark.skipif(
    not HAVE_MEMOS,
    reason="MemOS is not installed: the 'memos' extra needs a virtualenv of its own (MemoryOS pins transformers<5 "
           "and openai<2, which the other extras exclude): UFUZZ_VENV=.venv-memos UFUZZ_EXTRAS=memos "
           "bash scripts/install.sh")
integration = [pytest.mark.integration, needs_memos]
TS = "2024-02-01T10:00:00"


# -- without MemOS (run everywhere) --------------------------------------------------------------------------
def test_registered_and_hint_when_missing(monkeypatch):
    assert registry.load("memos") is MemosBackend
    assert MemosBackend.isolate is True and MemosBackend.extra == "memos"
    monkeypatch.setitem(sys.modules, "memos", None)  # what Python does for a module that cannot be imported
    assert MemosBackend.dependencies_installed() == (False, INSTALL_HINT)
    from ufuzz.backends.protocol import BackendUnavailable

    with pytest.raises(BackendUnavailable, match="ufuzz\\[memos\\]"):
        registry.create("memos", Path("/nonexistent-unused"))


def test_backends_command_says_what_memos_needs(monkeypatch):
    from ufuzz.cli import main

    monkeypatch.setitem(sys.modules, "memos", None)
    out = CliRunner().invoke(main, ["backends"]).output
    block = out[out.index("memos "):]
    assert "missing" in block.splitlines()[0] and "virtualenv of its own" in block.splitlines()[0]
    assert "transformers<5" in block and "tree_text" in block and "Neo4j" in block
    assert "worker process" in block


def test_bad_options_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown option 'top_k'"):
        MemosBackend(tmp_path, {"top_k": 3})
    with pytest.raises(ValueError, match="write_mode"):
        MemosBackend(tmp_path, {"write_mode": "tree"})
    with pytest.raises(ValueError, match="needs options llm_base_url and llm_model"):
        MemosBackend(tmp_path, {"write_mode": "extract"})
    with pytest.raises(ValueError, match="llm_base_url"):
        MemosBackend(tmp_path, {"llm_base_url": "localhost:8000"})
    with pytest.raises(ValueError, match="storage"):
        MemosBackend(tmp_path, {"storage": "s3"})
    with pytest.raises(ValueError, match="abstain_threshold"):
        MemosBackend(tmp_path, {"abstain_threshold": "high"})


# -- direct mode on the real library ---------------------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    if not HAVE_MEMOS:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def backend(tmp_path):
    b = MemosBackend(tmp_path / "campaign")
    yield b
    b.close()


@pytest.fixture(params=["memory", "disk"])
def any_storage(request, tmp_path):
    b = MemosBackend(tmp_path / "campaign", {"storage": request.param})
    yield b
    b.close()


def _notes(n: int, cid: str = "ck-notes") -> Checkpoint:
    mems = tuple(Memory(f"n{i:03d}", f"Note {i}: Lena mentioned her trip number {i} to the city of Velmora.",
                        f"2024-03-{1 + i % 28:02d}T10:{i % 60:02d}:00", {"k": i}) for i in range(n))
    return Checkpoint(cid, mems, ())


@pytest.mark.integration
@needs_memos
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_conformance(check, any_storage):
    check(any_storage)


@pytest.mark.integration
@needs_memos
def test_capabilities_are_honest(backend):
    c = backend.capabilities
    assert c.visible_retrieval and c.copyable and c.native_update and c.native_delete and c.observable_state
    assert c.deterministic and not c.answers
    assert c.relevance_threshold is None and c.reader_threshold is None  # general_text search has no relevance threshold
    d = backend.describe()
    assert d["MemoryOS"] == "2.0.33" and d["memory"].startswith("general_text") and d["llm"].startswith("placeholder")
    assert d["storage"] == "memory"


@pytest.mark.integration
@needs_memos
def test_ids_timestamps_and_metadata_are_the_checkpoints(backend):
    ck = _notes(7)
    s = backend.build(ck)
    listed = backend.list(s)
    assert [m.id for m in listed] == sorted((m.id for m in ck.memories), key=lambda i: (
        next(x.timestamp for x in ck.memories if x.id == i), i))
    by_id = {m.id: m for m in ck.memories}
    for got in listed:
        assert got.text == by_id[got.id].text and got.timestamp == by_id[got.id].timestamp
        assert got.metadata["k"] == by_id[got.id].metadata["k"] and got.active
    hits = backend.retrieve(s, "Lena's trip to Velmora", 7)
    assert {h.id for h in hits} == set(by_id)
    # the MemOS items themselves: one per memory, MemOS's own updated_at set to the memory's timestamp
    items = backend._states[s].mem.get_all()
    assert len(items) == 7 and {it.metadata.info["ufuzz_id"] for it in items} == set(by_id)
    assert all(it.metadata.updated_at == by_id[it.metadata.info["ufuzz_id"]].timestamp for it in items)


@pytest.mark.integration
@needs_memos
def test_update_overwrites_in_place_and_refuses_unknown(backend):
    s = backend.build(tiny_checkpoint())
    before = backend.get(s, "m1").metadata["memos"]["ids"]
    res = backend.update(s, "m1", Memory("m1~u", "Update: Lena now lives in Brask.", TS, {"why": "moved"}))
    assert res.ok and res.written == ("m1",) and not res.superseded and not res.removed
    got = backend.get(s, "m1")
    assert got.text == "Update: Lena now lives in Brask." and got.timestamp == TS and got.metadata["why"] == "moved"
    assert got.metadata["memos"]["ids"] == before  # the same MemOS item, overwritten
    assert backend.get(s, "m1~u") is None and len(backend.list(s)) == 6
    assert all("Velmora" not in h.text for h in backend.retrieve(s, "Where does Lena live?", 6))
    bad = backend.update(s, "nope", Memory("nope~u", "Lena lives in Nowhere.", TS))
    assert not bad.ok and backend.get(s, "nope") is None and len(backend.list(s)) == 6


@pytest.mark.integration
@needs_memos
def test_memos_update_of_a_missing_id_creates_it(backend):
    """The library fact behind the adapter's existence check: GeneralTextMemory.update is an upsert."""
    s = backend.build(tiny_checkpoint())
    mem = backend._states[s].mem
    iid = MemosBackend._item_id("ghost")
    mem.update(iid, backend._item(Memory("ghost", "A ghost memory.", TS), "A ghost memory.", iid))
    assert backend.get(s, "ghost").text == "A ghost memory."


@pytest.mark.integration
@needs_memos
def test_delete_is_hard_and_add_refuses_duplicates(backend):
    s = backend.build(tiny_checkpoint())
    res = backend.delete(s, "m4")
    assert res.ok and res.removed == ("m4",)
    assert backend.get(s, "m4") is None and "m4" not in {m.id for m in backend.list(s)}
    assert "m4" not in {h.id for h in backend.retrieve(s, "Where does Omar live?", 10)}
    assert not backend.delete(s, "m4").ok
    assert not backend.add(s, Memory("m1", "Duplicate id.", TS)).ok
    assert backend.add(s, Memory("m4", "Omar moved to Pell.", TS)).ok  # a deleted id can be added again
    assert backend.get(s, "m4").text == "Omar moved to Pell."


@pytest.mark.integration
@needs_memos
def test_fork_is_a_copy_with_the_same_rankings(any_storage):
    backend = any_storage
    parent = backend.build(_notes(12))
    q = "Which trip did Lena take to Velmora?"
    child = backend.fork(parent)
    assert backend.retrieve(child, q, 12) == backend.retrieve(parent, q, 12)
    grandchild = backend.fork(child)
    backend.delete(child, "n003")
    backend.update(grandchild, "n005", Memory("n005~u", "Lena cancelled trip 5.", TS))
    assert "n003" in {m.id for m in backend.list(parent)} and "n003" in {m.id for m in backend.list(grandchild)}
    assert backend.get(parent, "n005").text.startswith("Note 5:") and backend.get(child, "n005").text.startswith("Note")
    backend.release(child)
    assert backend.get(grandchild, "n005").text == "Lena cancelled trip 5."
    assert len(backend.list(parent)) == 12


@pytest.mark.integration
@needs_memos
def test_ties_are_cut_by_id_at_any_k(backend):
    mems = tuple(Memory(f"t{i}", "Omar keeps bees on the roof.", f"2024-01-0{1 + i}T00:00:00") for i in (3, 1, 4, 0, 2))
    s = backend.build(Checkpoint("ck-ties", mems + (Memory("z", "Lena sings.", TS),), ()))
    full = backend.retrieve(s, "Who keeps bees?", 6)
    assert [h.id for h in full[:5]] == ["t0", "t1", "t2", "t3", "t4"] and full[5].id == "z"
    assert len({h.score for h in full[:5]}) == 1
    for k in range(1, 6):
        assert backend.retrieve(s, "Who keeps bees?", k) == full[:k]
    assert backend.retrieve(s, "Who keeps bees?", 0) == []


@pytest.mark.integration
@needs_memos
def test_large_state_lists_completely(backend):
    s = backend.build(_notes(130))  # get_all pages through Qdrant's scroll 100 at a time
    assert len(backend.list(s)) == 130
    assert len(backend.retrieve(s, "Lena's trip", 120)) == 120


@pytest.mark.integration
@needs_memos
def test_import_leaves_logging_and_cwd_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    b = MemosBackend(tmp_path / "w")
    try:
        b.build(tiny_checkpoint())
        assert list(root.handlers) == handlers and root.level == level
        assert logging.getLogger("memos").level == logging.WARNING
        assert not (tmp_path / ".memos").exists()
    finally:
        b.close()


@pytest.mark.integration
@needs_memos
def test_short_cli_campaign_runs_clean(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "ufuzz", "run", "--backend", "memos", "--budget", "30", "--seed", "1",
                           "--out", str(out)], capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["status"] == "budget_spent" and s["executions"] == 30 and s["errors"] == 0
    assert "backend worker: 1 start(s)" in proc.stdout  # ran isolated, in the worker process


# -- write_mode=extract: MemOS's LLM extraction through a local OpenAI-compatible server ---------------------------
_CONV = re.compile(r"\nConversation:\s*\n(.*?)\n\s*Your Output:\s*$", re.S)


class ExtractionResponder:
    """Stands in for the language model behind ``GeneralTextMemory.extract`` (MemOS's SIMPLE_STRUCT_MEM_READER
    prompt): one memory item per sentence of the user's message, none for a message that says 'nothing'."""

    def __init__(self) -> None:
        self.unknown: list[str] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, Any] | str:
        prompt = request["messages"][-1]["content"]
        m = _CONV.search(prompt[prompt.rfind("\nConversation:"):])  # the prompt's own example has one too
        if "memory extraction expert" not in prompt or m is None:
            self.unknown.append(prompt[:200])
            return "not a MemOS extraction prompt"
        text = m.group(1).strip().removeprefix("user:").strip()
        sentences = [x.strip().rstrip(".") + "." for x in re.split(r"(?<=\.)\s+", text) if x.strip()]
        if "nothing" in text.lower():
            sentences = []
        return {"memory list": [{"key": " ".join(s.split()[:3]), "memory_type": "UserMemory", "value": s,
                                 "tags": [w.lower() for w in s.split() if w[:1].isupper()][:3]} for s in sentences],
                "summary": text}


@pytest.fixture(scope="module")
def llm():
    if not HAVE_MEMOS:
        pytest.skip("MemOS is not installed")
    from tests.support.llm_server import start_llm_server

    responder = ExtractionResponder()
    with start_llm_server(responder, model="memos-rules") as srv:
        yield srv, responder
    assert responder.unknown == []


@pytest.fixture
def extractor(llm, tmp_path):
    srv, _ = llm
    b = MemosBackend(tmp_path / "x", {"write_mode": "extract", "llm_base_url": srv.base_url,
                                      "llm_model": "memos-rules", "llm_cache": str(tmp_path / "calls.sqlite")})
    yield b
    b.close()


@pytest.mark.integration
@needs_memos
def test_extract_mode_calls_the_llm_and_maps_items_back(llm, extractor):
    srv, _ = llm
    before = srv.count
    ck = Checkpoint("ck-x", (Memory("a", "Lena lives in Velmora. Lena works at Quillstone Works.", TS),
                             Memory("b", "Omar keeps bees.", TS), Memory("c", "Nothing worth keeping.", TS)), ())
    s = extractor.build(ck)
    assert srv.count - before == 3 and extractor.llm_calls == 3
    body = srv.chat_requests[-1].body
    assert body["model"] == "memos-rules" and "memory extraction expert" in body["messages"][0]["content"]
    a = extractor.get(s, "a")
    assert a.text == "Lena lives in Velmora. Lena works at Quillstone Works." and len(a.metadata["memos"]["ids"]) == 2
    assert a.metadata["memos"]["keys"] == ["Lena lives in", "Lena works at"]
    assert extractor.get(s, "c") is None  # MemOS extracted nothing: nothing is stored
    assert [m.id for m in extractor.list(s)] == ["a", "b"]
    hits = extractor.retrieve(s, "Where does Lena work?", 2)
    assert [h.id for h in hits] == ["a", "b"] and hits[0].text == "Lena works at Quillstone Works."
    assert not extractor.capabilities.deterministic


@pytest.mark.integration
@needs_memos
def test_extract_mode_update_delete_and_fork(extractor):
    s = extractor.build(Checkpoint("ck-x", (Memory("a", "Lena lives in Velmora. Lena works at Quillstone.", TS),
                                            Memory("b", "Omar keeps bees.", TS)), ()))
    child = extractor.fork(s)
    ids = extractor.get(child, "a").metadata["memos"]["ids"]
    res = extractor.update(child, "a", Memory("a~u", "Lena now lives in Brask.", "2024-03-01T00:00:00"))
    assert res.ok and res.written == ("a",)
    got = extractor.get(child, "a")
    assert got.text == "Lena now lives in Brask." and got.metadata["memos"]["ids"] == ids[:1]
    assert got.timestamp == "2024-03-01T00:00:00"
    assert len(extractor._states[child].mem.get_all()) == 2  # the surplus old item was deleted
    assert extractor.get(s, "a").text.startswith("Lena lives in Velmora.")  # the parent is untouched
    gone = extractor.update(child, "b", Memory("b~u", "Nothing about bees.", TS))
    assert gone.ok and gone.removed == ("b",) and not gone.written and extractor.get(child, "b") is None
    assert extractor.delete(s, "b").ok and extractor.get(s, "b") is None and not extractor.delete(s, "b").ok
    assert extractor.add(s, Memory("d", "Pip sees Dr. Harrow.", TS)).written == ("d",)


@pytest.mark.integration
@needs_memos
def test_a_short_campaign_in_extract_mode_replays_and_checks_from_the_cache(tmp_path, llm):
    """CI's campaign in this LLM mode (where MemOS's venv exists): the shipped suite, budget 200, 0 errors; a
    replay of a failure and a ``corpus check`` of the exported corpus answer every extraction from the campaign's
    call cache (MemOS's extractor LLM goes through ufuzz's client)."""
    import json

    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.triage.check import check_corpus
    from ufuzz.triage.corpusfile import export_campaign
    from ufuzz.triage.replay import replay_campaign

    srv, _ = llm
    out = tmp_path / "c"
    opts = {"write_mode": "extract", "llm_base_url": srv.base_url, "llm_model": "memos-rules",
            "llm_cache": str(tmp_path / "calls.sqlite")}
    s = Campaign(CampaignConfig(backend="memos", budget=200, seed=1, out=str(out), backend_options=opts)).run()
    assert s["status"] == "budget_spent" and s["executions"] == 200 and s["errors"] == 0
    assert s["mutants_valid"] > 0 and s["unique_failures"] > 0
    assert {k.split(":")[0] for k in s["failures_by_kind"]} == {"selection"}  # nothing responds: selection only
    rec = json.loads((out / "campaign.json").read_text())["llm"]["backend"]
    assert rec["write_mode"] == "extract" and rec["llm_model"] == "memos-rules" and rec["endpoint_kind"] == "loopback"
    assert len(rec["extraction_prompt_sha256"]) == 16 and rec["llm_sampling"]["temperature"] == 0.0
    calls = srv.count
    report = replay_campaign(out, keys=sorted(s["failures"])[:1])
    assert report.total == 1 and report.reproduced == 1, [r.reason for r in report.results]
    checked = check_corpus(export_campaign(out, tmp_path / "corpus.jsonl", max_records=1).path)
    assert checked.results and all(r.status != "error" for r in checked.results), checked.results
    assert srv.count == calls, "replay and corpus check made no new LLM call"
