"""The mem0 adapter against the real mem0ai 2.2.1 library (qdrant local + packaged MiniLM, no LLM calls)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

# mem0 reads these at import time: no telemetry, and its config.json goes to a scratch directory, not ~/.mem0
os.environ["MEM0_TELEMETRY"] = "False"
if "mem0" not in sys.modules:
    os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="ufuzz-mem0-test-"))
pytest.importorskip("mem0")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ufuzz.backends import registry  # noqa: E402
from ufuzz.backends.adapters.mem0 import INSTALL_HINT, Mem0Backend  # noqa: E402
from ufuzz.backends.conformance import CHECKS, tiny_checkpoint  # noqa: E402
from ufuzz.backends.protocol import BackendError  # noqa: E402
from ufuzz.model import Checkpoint, Memory  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """Single-sentence MiniLM encodes run ~3x faster on one thread, and far faster on a busy machine (two
    spinning OpenMP threads per encode); restored afterwards so other modules keep the process default."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def backend(tmp_path):
    b = Mem0Backend(tmp_path / "campaign")
    yield b
    b.close()


def _notes(n: int, cid: str = "ck-notes") -> Checkpoint:
    """n memories that all concern Lena, so that every one clears mem0's semantic threshold."""
    mems = tuple(Memory(f"n{i:02d}", f"Note {i}: Lena mentioned her trip number {i} to the city of Velmora.",
                        f"2024-03-{1 + i % 28:02d}T10:{i:02d}:00") for i in range(n))
    return Checkpoint(cid, mems, ())


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_conformance(check, backend):
    check(backend)


def test_registry_knows_mem0(tmp_path):
    assert registry.load("mem0") is Mem0Backend
    assert Mem0Backend.dependencies_installed() == (True, "")
    b = registry.create("mem0", tmp_path)
    assert isinstance(b, Mem0Backend)
    b.close()


def test_dependencies_missing_gives_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "mem0", None)  # what Python does for a module that cannot be imported
    assert Mem0Backend.dependencies_installed() == (False, INSTALL_HINT)


def test_bad_options_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown option 'limit'"):
        Mem0Backend(tmp_path, {"limit": 3})
    with pytest.raises(ValueError, match="search_threshold"):
        Mem0Backend(tmp_path, {"search_threshold": 2})
    with pytest.raises(ValueError, match="llm_base_url"):
        Mem0Backend(tmp_path, {"llm_base_url": "localhost:8000"})


@pytest.fixture(scope="module")
def notes25(tmp_path_factory):
    """One state of 25 memories, shared by the read-only tests below."""
    b = Mem0Backend(tmp_path_factory.mktemp("notes"), {"search_threshold": 0.0})
    s = b.build(_notes(25))
    yield b, s
    b.close()


def test_search_uses_top_k_beyond_and_below_mem0_default(notes25):
    b, s = notes25
    q = "Where did Lena travel?"
    r22 = b.retrieve(s, q, 22)
    assert len(r22) == 22  # mem0's search default is 20
    assert len({r.id for r in r22}) == 22
    r5 = b.retrieve(s, q, 5)
    assert [r.id for r in r5] == [r.id for r in r22[:5]]
    assert b.retrieve(s, q, 0) == []
    # the library facts the adapter relies on: top_k is honoured, limit= is silently ignored
    mem = b._states[s].mem
    assert len(mem.search(q, top_k=3, filters={"user_id": "ufuzz"})["results"]) == 3
    assert len(mem.search(q, limit=3, filters={"user_id": "ufuzz"})["results"]) == 20


def test_list_is_not_capped_at_20(notes25):
    b, s = notes25
    listed = b.list(s)
    assert sorted(m.id for m in listed) == [f"n{i:02d}" for i in range(25)]
    assert [m.timestamp for m in listed] == sorted(m.timestamp for m in listed)
    # get_all's own default silently caps at 20: the reason list() passes top_k
    assert len(b._states[s].mem.get_all(filters={"user_id": "ufuzz"})["results"]) == 20


def test_update_overwrites_in_place(backend):
    s = backend.build(tiny_checkpoint())
    res = backend.update(s, "m1", Memory("m1~u", "Update: Lena now lives in Brask.", "2024-02-01T10:00:00",
                                         {"ufuzz_op": "update", "of": "m1"}))
    assert res.ok and res.written == ("m1",) and res.superseded == () and res.removed == ()
    got = backend.get(s, "m1")
    assert got.text == "Update: Lena now lives in Brask." and got.timestamp == "2024-02-01T10:00:00"
    assert got.metadata["ufuzz_op"] == "update" and got.metadata["of"] == "m1"
    native = got.metadata["mem0"]
    assert native["created_at"] == "2024-01-01T10:00:00"  # kept from the add
    assert native["updated_at"] > "2025" and native["updated_at"].endswith("+00:00")  # mem0's wall clock
    assert backend.get(s, "m1~u") is None
    assert len(backend.list(s)) == 6
    top = backend.retrieve(s, "Where does Lena live?", 1)[0]
    assert top.id == "m1" and "Brask" in top.text
    assert not backend.update(s, "nope", Memory("x", "x", "2024-02-01T10:00:00")).ok
    assert not backend.delete(s, "nope").ok
    assert not backend.add(s, Memory("m2", "dup", "2024-02-01T10:00:00")).ok


def test_score_ties_are_broken_by_id(backend):
    text = "Omar keeps a red kayak in the garage."
    mems = tuple(Memory(i, text, "2024-01-01T10:00:00") for i in ("t3", "t1", "t2"))
    s = backend.build(Checkpoint("ck-ties", (*tiny_checkpoint().memories, *mems), ()))
    for k in (1, 2, 3):
        got = backend.retrieve(s, "Where does Omar keep his kayak?", k)
        assert [r.id for r in got] == ["t1", "t2", "t3"][:k]
        assert len({r.score for r in got}) == 1


def test_fork_is_isolated_both_ways(backend):
    parent = backend.build(tiny_checkpoint())
    child = backend.fork(parent)
    # a faithful copy first: same stored memories, same ranking and (to float32 noise) the same scores
    assert backend.list(child) == backend.list(parent)
    for q in ("Where does Lena live?", "Who is Pip's vet?", "When do I go to the gym?"):
        got, want = backend.retrieve(child, q, 6), backend.retrieve(parent, q, 6)
        assert [r.id for r in got] == [r.id for r in want]
        assert [r.score for r in got] == pytest.approx([r.score for r in want], abs=2e-6)
    backend.add(parent, Memory("p1", "Lena bought a sailboat called Wren.", "2024-03-01T10:00:00"))
    backend.update(parent, "m4", Memory("m4~u", "Omar moved to Lisk.", "2024-03-02T10:00:00"))
    backend.delete(child, "m3")
    grandchild = backend.fork(child)
    backend.add(grandchild, Memory("g1", "Pip learned to fetch sticks.", "2024-03-03T10:00:00"))

    child_ids = {m.id for m in backend.list(child)}
    assert child_ids == {"m1", "m2", "m4", "m5", "m6"}
    assert backend.get(child, "m4").text == "My friend Omar lives in Tessaly Heights."
    assert all(r.id != "p1" for r in backend.retrieve(child, "What is Lena's sailboat called?", 6))
    assert {m.id for m in backend.list(parent)} == {"m1", "m2", "m3", "m4", "m5", "m6", "p1"}
    assert backend.get(parent, "m4").text == "Omar moved to Lisk."
    assert {m.id for m in backend.list(grandchild)} == child_ids | {"g1"}

    backend.release(parent)
    assert backend.retrieve(child, "Where does Omar live?", 1)[0].id == "m4"
    assert backend.retrieve(grandchild, "What did Pip learn?", 1)[0].id == "g1"
    with pytest.raises(BackendError, match="unknown state"):
        backend.list(parent)


def test_shared_embedder_matches_a_per_state_one(tmp_path):
    from mem0.embeddings.huggingface import HuggingFaceEmbedding

    shared, own = Mem0Backend(tmp_path / "a"), Mem0Backend(tmp_path / "b", {"share_embedder": False})
    try:
        s1, s2 = shared.build(tiny_checkpoint()), shared.fork(shared.build(tiny_checkpoint()))
        e1, e2 = shared._states[s1].mem.embedding_model, shared._states[s2].mem.embedding_model
        assert e1 is e2 and isinstance(e1, HuggingFaceEmbedding) and e1.config.huggingface_base_url is None
        o = own.build(tiny_checkpoint())
        assert own._states[o].mem.embedding_model is not e1
        for q in ("Where does Lena live?", "Who is Pip's vet?"):
            got, want = shared.retrieve(s1, q, 6), own.retrieve(o, q, 6)
            assert [r.id for r in got] == [r.id for r in want]
            assert [r.score for r in got] == pytest.approx([r.score for r in want], abs=2e-6)
    finally:
        shared.close()
        own.close()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(meta=st.dictionaries(
    st.sampled_from(["n", "data", "user_id", "role", "hash", "ufuzz_id", "tags", "nested"]),
    st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False)
                 | st.text(max_size=8), lambda c: st.lists(c, max_size=3)
                 | st.dictionaries(st.text(max_size=4), c, max_size=3), max_leaves=6),
    max_size=4))
def test_metadata_round_trips(backend, meta):
    if not backend._states:
        backend.build(Checkpoint("ck-empty", (), ()))
    s = next(iter(backend._states))
    mid = f"x{len(backend._states[s].ids)}"
    assert backend.add(s, Memory(mid, "Lena collects postcards.", "2024-05-01T10:00:00", meta)).ok
    got = backend.get(s, mid)
    assert got.id == mid and got.text == "Lena collects postcards."
    assert {k: v for k, v in got.metadata.items() if k != "mem0"} == meta


def test_mem0_faults_become_backend_errors(backend):
    s = backend.build(tiny_checkpoint())
    with pytest.raises(BackendError, match="unknown state"):
        backend.retrieve("s999", "Where does Lena live?", 3)
    backend._states[s].mem.vector_store.client.close()  # a real fault inside qdrant, not a stand-in
    with pytest.raises(BackendError, match="mem0 search failed"):
        backend.retrieve(s, "Where does Lena live?", 3)
    with pytest.raises(BackendError, match=r"mem0 add \(m9\) failed"):
        backend.add(s, Memory("m9", "Omar plays chess.", "2024-02-02T10:00:00"))


def test_a_build_cut_short_leaves_no_state_behind(backend):
    """A build stopped halfway — a fault, or a Ctrl-C, which no adapter turns into a BackendError — releases
    what it made (as MemOS's does): its directory and its open store."""
    calls = []
    real = backend._add

    def add(st, m, op):
        calls.append(m.id)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(st, m, op)

    backend._add = add
    states = backend.workdir / "states"
    before = set(os.listdir(states)) if states.exists() else set()
    with pytest.raises(KeyboardInterrupt):
        backend.build(tiny_checkpoint())
    assert len(calls) == 2 and len(backend._states) == 0
    assert (set(os.listdir(states)) if states.exists() else set()) == before
    backend._add = real
    assert backend.retrieve(backend.build(tiny_checkpoint()), "Where does Lena live?", 3)


def test_configured_endpoint_key_is_used_but_never_shown(tmp_path, monkeypatch, caplog):
    secret = "sk-test-not-a-real-key-41c7"
    monkeypatch.setenv("UFUZZ_MEM0_TEST_KEY", secret)
    b = Mem0Backend(tmp_path, {"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "local-model",
                               "llm_api_key_env": "UFUZZ_MEM0_TEST_KEY"})
    try:
        with caplog.at_level("DEBUG"):
            s = b.build(tiny_checkpoint())
            b.retrieve(s, "Where does Lena live?", 2)
        llm = b._states[s].mem.llm
        assert llm.client.api_key == secret and str(llm.client.base_url).startswith("http://127.0.0.1:9/v1")
        assert llm.config.model == "local-model"
        described = json.dumps(b.describe())
        assert secret not in described and b.describe()["llm_key_from_env"] is True
        assert secret not in caplog.text
        assert b.capabilities.answers is False and b.answer(s, "q", []) is None
    finally:
        b.close()


NO_NETWORK = textwrap.dedent("""
    import socket, sys
    events = []
    def hook(name, args):
        if name in ("socket.connect", "socket.getaddrinfo", "socket.sendto"):
            events.append((name, repr(args)[:120]))
    sys.addaudithook(hook)
    from pathlib import Path
    from ufuzz.backends.conformance import tiny_checkpoint
    from ufuzz.backends.adapters.mem0 import Mem0Backend
    from ufuzz.model import Memory
    b = Mem0Backend(Path(sys.argv[1]), {"llm_base_url": "http://127.0.0.1:9/v1"})
    s = b.build(tiny_checkpoint())
    f = b.fork(s)
    b.update(f, "m1", Memory("m1~u", "Update: Lena now lives in Brask.", "2024-02-01T10:00:00"))
    b.delete(f, "m4")
    b.add(f, Memory("m7", "Omar adopted a cat named Sorrel.", "2024-02-02T10:00:00"))
    assert b.retrieve(f, "Where does Lena live?", 3)[0].id == "m1"
    assert len(b.list(f)) == 6 and b.get(s, "m4") is not None
    b.close()
    print("EVENTS", len(events), events[:5])
""")


def test_no_network_call_is_attempted(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MEM0_DIR", "OPENROUTER_API_KEY")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", NO_NETWORK, str(tmp_path / "campaign")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "EVENTS 0 []" in proc.stdout, proc.stdout
    assert (tmp_path / "campaign" / "config.json").exists()  # mem0's MEM0_DIR is the campaign directory
