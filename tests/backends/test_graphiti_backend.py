"""The Graphiti adapter against the real graphiti-core 0.31.2 on an embedded Kuzu file (MiniLM, no LLM)."""

from __future__ import annotations

import pytest

pytest.importorskip("graphiti_core")
pytest.importorskip("kuzu")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ufuzz.backends import registry  # noqa: E402
from ufuzz.backends.adapters.graphiti import INSTALL_HINT, GraphitiBackend  # noqa: E402
from ufuzz.backends.conformance import CHECKS, tiny_checkpoint  # noqa: E402
from ufuzz.backends.protocol import BackendError  # noqa: E402
from ufuzz.model import Checkpoint, Entity, Fact, Memory  # noqa: E402

pytestmark = pytest.mark.integration

QUERIES = ("Where does Lena live?", "Who is Pip's vet?", "Where does Omar live?", "What does Lena do for work?",
           "What day do I go to the gym?", "trip to the coast")


@pytest.fixture
def backend(tmp_path):
    b = GraphitiBackend(tmp_path / "campaign")
    yield b
    b.close()


def _bigger(n: int = 30) -> Checkpoint:
    """The tiny checkpoint plus n near-duplicate notes (many score ties and near-ties)."""
    base = tiny_checkpoint("ck-big")
    extra = tuple(Memory(f"n{i:02d}", f"Note {i % 7}: Lena talked about a trip to the coast near Velmora.",
                         f"2024-03-{1 + i % 28:02d}T10:{i:02d}:00") for i in range(n))
    facts = base.facts + (Fact("Lena", "trip", "coast", ("n00",), True, "text", "2024-03-01T10:00:00"),)
    return Checkpoint(base.id, base.memories + extra, facts, base.entities + (Entity("Velmora", "place"),))


def _ranking(b, s):
    return [[(r.id, r.score) for r in b.retrieve(s, q, 8)] for q in QUERIES]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_conformance(check, backend):
    check(backend)


def test_registered_and_installed():
    assert registry.available()["graphiti"] == "ufuzz.backends.adapters.graphiti:GraphitiBackend"
    assert registry.load("graphiti") is GraphitiBackend
    assert GraphitiBackend.dependencies_installed() == (True, "")
    assert INSTALL_HINT == "pip install 'ufuzz[graphiti]'"


def test_capabilities_and_describe(backend):
    cap = backend.capabilities
    assert cap.copyable and cap.deterministic and not cap.answers and cap.visible_retrieval
    assert cap.reader_threshold is not None and 0 < cap.reader_threshold < 1
    d = backend.describe()
    assert d["graphiti_core"] == "0.31.2" and d["write_mode"] == "direct" and d["filter_invalid"] is False


@pytest.mark.parametrize("opts, word", [({"write_mode": "llm"}, "write_mode"), ({"reranker": "x"}, "reranker"),
                                        ({"filter_invalid": "maybe"}, "filter_invalid"),
                                        ({"write_mode": "episode"}, "llm_base_url")])
def test_bad_options_name_the_option(tmp_path, opts, word):
    with pytest.raises(ValueError, match=word):
        GraphitiBackend(tmp_path, opts)


def test_errors_name_the_operation(backend):
    with pytest.raises(BackendError, match="retrieve"):
        backend.retrieve("nope", "q", 3)
    s = backend.build(tiny_checkpoint())
    with pytest.raises(BackendError, match="add"):
        backend.add(s, Memory("m1", "dup", "2024-05-01T00:00:00"))
    assert not backend.update(s, "missing", Memory("x", "y", "2024-05-01T00:00:00")).ok
    assert not backend.delete(s, "missing").ok


def test_snapshot_copies_rank_identically(backend):
    parent = backend.build(_bigger())
    before = _ranking(backend, parent)
    assert any(len(r) == 8 for r in before)
    child = backend.fork(parent)
    grandchild = backend.fork(child)
    assert _ranking(backend, child) == before
    assert _ranking(backend, grandchild) == before
    backend.release(parent)  # a copy does not depend on its source
    assert _ranking(backend, child) == before
    rebuilt = backend.build(_bigger())  # uuid5 ids and fixed timestamps: a rebuild is the same graph
    assert _ranking(backend, rebuilt) == before
    # and a copy of a mutated state reproduces the mutated ranking
    backend.update(child, "m1", Memory("m1~u", "Update: Lena now lives in Brask.", "2024-04-01T10:00:00"))
    mutated = _ranking(backend, child)
    assert mutated != before
    assert _ranking(backend, backend.fork(child)) == mutated


def test_invalidated_edge_still_ranks_unless_filtered(tmp_path):
    plain = GraphitiBackend(tmp_path / "a")
    filtered = GraphitiBackend(tmp_path / "b", {"filter_invalid": "true"})
    try:
        for b in (plain, filtered):
            s = b.build(tiny_checkpoint())
            res = b.update(s, "m1", Memory("m1~u", "Update: Lena now lives in Brask.", "2024-02-01T10:00:00"))
            assert res.ok and res.written == ("m1~u",) and res.superseded == ("m1",) and not res.removed
            old, new = b.get(s, "m1"), b.get(s, "m1~u")
            assert old is not None and not old.active and old.metadata["invalid_at"].startswith("2024-02-01")
            assert new is not None and new.active and "Brask" in new.text
            ids = [r.id for r in b.retrieve(s, "Where does Lena live?", 6)]
            assert "m1~u" in ids
            if b is plain:
                assert "m1" in ids  # Graphiti's default search does not drop invalidated edges
            else:
                assert "m1" not in ids
    finally:
        plain.close()
        filtered.close()


def test_rerankers_are_ordered_and_deterministic(tmp_path):
    for rr in ("rrf", "mmr"):
        b = GraphitiBackend(tmp_path / rr, {"reranker": rr})
        try:
            assert b.capabilities.reader_threshold is None  # rank-fusion scores are not similarities
            s = b.build(_bigger(6))
            r1 = _ranking(b, s)
            assert r1 == _ranking(b, b.fork(s))
            for r in r1:
                assert [x[1] for x in r] == sorted((x[1] for x in r), reverse=True)
            assert "m1" in [x[0] for x in r1[0]]
        finally:
            b.close()


_ops = st.lists(st.tuples(st.sampled_from(["add", "update", "delete"]), st.integers(0, 20)), max_size=6)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops)
def test_get_and_list_agree_with_writes(backend, ops):
    """Model: every write is visible through get/list, updates keep the old entry as inactive."""
    if not hasattr(backend, "_base"):
        backend._base = backend.build(tiny_checkpoint())
    s = backend.fork(backend._base)
    model = {m.id: (m.text, True) for m in tiny_checkpoint().memories}
    for j, (op, pick) in enumerate(ops):
        live = sorted(k for k, (_, a) in model.items() if a)
        mem = Memory(f"w{j}", f"Write {j}: Omar bought a kayak number {pick}.", f"2024-06-{1 + j:02d}T00:00:00")
        if op == "add":
            assert backend.add(s, mem).written == (mem.id,)
            model[mem.id] = (mem.text, True)
        elif live and op == "update":
            target = live[pick % len(live)]
            res = backend.update(s, target, mem)
            assert res.ok and res.superseded == (target,)
            model[target] = (model[target][0], False)
            model[mem.id] = (mem.text, True)
        elif live:
            target = live[pick % len(live)]
            assert backend.delete(s, target).removed == (target,)
            del model[target]
    listed = {m.id: (m.text, m.active) for m in backend.list(s)}
    assert listed == model
    for mid, (text, active) in model.items():
        got = backend.get(s, mid)
        assert got is not None and (got.text, got.active) == (text, active)
    backend.release(s)


# -- memory and disk: the live budget, scratch directories, cheap forks -------------------------------------
@pytest.fixture
def tight(tmp_path):
    """A live budget every process is over: after each open, every other database is closed."""
    b = GraphitiBackend(tmp_path / "tight", {"live_budget_mb": 1})
    yield b
    b.close()


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_conformance_with_states_closed_between_uses(check, tight):
    check(tight)


def test_closed_states_reopen_with_identical_results(backend, tight):
    ck = _bigger()
    a, b = backend.build(ck), tight.build(ck)
    ta = backend.build(tiny_checkpoint("other"))
    tb = tight.build(tiny_checkpoint("other"))  # closes b's database
    assert tight._states[b].driver is None and tight.spills >= 1
    new = Memory("zz", "Lena moved to Brask in spring.", "2024-05-01T00:00:00")
    fa, fb = backend.fork(a), tight.fork(b)  # a closed source is copied without being opened
    for x, fx in ((backend, fa), (tight, fb)):
        assert x.add(fx, new).ok
        assert x.update(fx, "m1", Memory("zz2", "Lena lives in Quarn now.", "2024-06-01T00:00:00")).ok
    assert _ranking(tight, fb) == _ranking(backend, fa)
    assert _ranking(tight, b) == _ranking(backend, a)  # reopened; the fork's writes never reached it
    assert tight.list(tb) == backend.list(ta)
    assert [m.id for m in tight.list(b)] == [m.id for m in backend.list(a)]


def test_state_files_in_ram_scratch_are_removed_on_close(tmp_path):
    b = GraphitiBackend(tmp_path / "c", {"state_dir": str(tmp_path / "ram")})
    s = b.build(tiny_checkpoint())
    link = tmp_path / "c" / "graphiti"
    assert link.is_symlink() and b.root.parent == tmp_path / "ram"
    assert b.stored_files(s)[0].is_relative_to(b.root)
    b.release(b.fork(s))
    assert [p.name for p in b.root.iterdir()] == [s]  # a released fork leaves nothing
    root = b.root
    b.close()
    assert not root.exists() and not link.exists()


def test_state_dir_disk_keeps_states_in_the_workdir(tmp_path):
    b = GraphitiBackend(tmp_path / "c", {"state_dir": "disk"})
    try:
        s = b.build(tiny_checkpoint())
        assert b.root == tmp_path / "c" / "graphiti" and not b.root.is_symlink()
        assert b.stored_files(s)[0].parent.parent == b.root
    finally:
        b.close()


def test_bad_state_dir_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="state_dir"):
        GraphitiBackend(tmp_path / "c", {"state_dir": str(tmp_path / "file" / "sub")})


def test_connection_renewed_without_changing_results(backend):
    s = backend.build(_bigger())
    first = _ranking(backend, s)
    client = backend._states[s].driver.client
    for _ in range(8):  # 6 queries each: past the renewal interval
        assert _ranking(backend, s) == first
    assert backend._states[s].driver.client is not client


def _fts_indexes(b, s) -> set[str]:
    import kuzu

    conn = kuzu.Connection(b._states[s].driver.db)
    try:
        return {row[1] for row in conn.execute("CALL SHOW_INDEXES() RETURN *") if row[2] == "FTS"}
    finally:
        conn.close()


def test_direct_mode_builds_the_edge_fts_index_its_bm25_search_uses(tmp_path):
    # cosine can contribute nothing at sim_min_score 0.999: what ranks comes from BM25 over the edge FTS index
    # (and Graphiti's BFS from what BM25 found); a missing index would make every search a backend error
    b = GraphitiBackend(tmp_path / "c", {"sim_min_score": 0.999})
    try:
        s = b.build(tiny_checkpoint())
        assert _fts_indexes(b, s) == {"edge_name_and_fact"}  # only the index direct-mode searches query
        f = b.fork(s)
        assert _fts_indexes(b, f) == {"edge_name_and_fact"}
        assert b.add(f, Memory("zz", "Lena bought a zanzibarite lamp.", "2024-05-01T00:00:00")).ok
        assert b.retrieve(f, "zanzibarite", 3)[0].id == "zz"  # a word only BM25 can match, in a fork's write
        assert "zz" not in [r.id for r in b.retrieve(s, "zanzibarite", 3)]
    finally:
        b.close()


def test_graphiti_embeds_through_the_shared_model_on_one_torch_thread(tmp_path):
    # Graphiti's embedder client encodes through the process-wide model of ufuzz.backends.embedding, one text
    # per call; one torch thread (UFUZZ_TORCH_THREADS unset): two spinning threads made every single-text encode
    # many times slower on a busy 2-core machine. A fresh process: the model and the thread count are per process.
    import os
    import subprocess
    import sys

    code = ("import sys, torch\n"
            "from pathlib import Path\n"
            "from ufuzz.backends import embedding\n"
            "from ufuzz.backends.adapters import graphiti\n"
            "from ufuzz.backends.adapters.graphiti import clients\n"
            "from ufuzz.backends.conformance import tiny_checkpoint\n"
            "model, seen = embedding.load_model(), []\n"
            "encode = model.encode\n"
            "model.encode = lambda texts, **kw: (seen.append(list(texts)), encode(texts, **kw))[1]\n"
            "b = graphiti.GraphitiBackend(Path(sys.argv[1]))\n"
            "b.retrieve(b.build(tiny_checkpoint()), 'Where does Lena live?', 3)\n"
            "assert seen and all(len(batch) == 1 for batch in seen), seen\n"
            "assert ['Where does Lena live?'] in seen and ['Pip\\'s vet is Dr. Harrow.'] in seen, seen\n"
            "seen.clear()\n"
            "clients.encode(['a zanzibarite lamp', 'a second text'])\n"
            "assert seen == [['a zanzibarite lamp'], ['a second text']], seen\n"
            "print(torch.get_num_threads())\n"
            "b.close()\n")
    env = {k: v for k, v in os.environ.items() if k != "UFUZZ_TORCH_THREADS"}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "c")], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "1"


def test_rebuild_copies_a_pristine_twin_and_never_a_written_one(backend, tmp_path):
    ck = _bigger()
    fresh = GraphitiBackend(tmp_path / "fresh")  # builds every state from scratch: the reference
    try:
        ref = fresh.build(ck)
        first = backend.build(ck)
        again = backend.build(ck)  # a copy of ``first`` (never written)
        assert backend._states[again].pristine == backend._states[first].pristine is not None
        assert _ranking(backend, again) == _ranking(fresh, ref)
        # written states are no longer twins: a build after writes to every live copy holds the checkpoint only
        assert backend.add(first, Memory("zz", "Lena moved to Brask in spring.", "2024-05-01T00:00:00")).ok
        assert backend.update(again, "m1", Memory("zz2", "Lena lives in Quarn now.", "2024-06-01T00:00:00")).ok
        assert backend._states[first].pristine is None and backend._states[again].pristine is None
        third = backend.build(ck)
        assert [m.id for m in backend.list(third)] == [m.id for m in fresh.list(ref)]
        assert backend.list(third) == fresh.list(ref)
        assert _ranking(backend, third) == _ranking(fresh, ref)
        # a deletion too; a different checkpoint with the same id is not a twin
        fourth = backend.build(ck)
        assert backend.delete(third, "m2").ok
        assert backend.list(backend.build(ck)) == fresh.list(ref)
        other = Checkpoint(ck.id, ck.memories[:3], (), ())
        assert [m.id for m in backend.list(backend.build(other))] == sorted(m.id for m in ck.memories[:3])
        assert backend._states[fourth].pristine is not None
    finally:
        fresh.close()


def test_a_search_that_does_not_fit_the_buffer_pool_reopens_the_database_with_a_larger_one(tmp_path):
    """A 400-turn LoCoMo conversation's searches did not fit the 64 MB buffer pool the shipped suite runs in: every
    execution of a campaign on it was an error. Here 16 MB holds the tiny checkpoint but not its search."""
    b = GraphitiBackend(tmp_path, {"buffer_pool_mb": 16})
    try:
        s = b.build(tiny_checkpoint())
        assert "m1" in [r.id for r in b.retrieve(s, "Where does Lena live?", 3)]
        assert b.pool_growths >= 1 and b._states.get(s, "test").pool_mb >= 32
        copy = b.fork(s)
        assert b._states.get(copy, "test").pool_mb == b._states.get(s, "test").pool_mb  # what its source needed
        grown = b.pool_growths
        assert "m1" in [r.id for r in b.retrieve(copy, "Where does Lena live?", 3)] and b.pool_growths == grown
        assert sorted(m.id for m in b.list(copy)) == sorted(m.id for m in b.list(s))
    finally:
        b.close()

