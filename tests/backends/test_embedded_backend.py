"""The embedded reference backend, on the real MiniLM model (one shared Embedder for the module)."""

from __future__ import annotations

import itertools
import sqlite3

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from ufuzz.backends import registry
from ufuzz.backends.adapters.embedded import ABSTAIN, RRF_DEPTH, RRF_K, EmbeddedBackend
from ufuzz.backends.conformance import CHECKS, tiny_checkpoint
from ufuzz.backends.embedding import MODEL_NAME, Embedder
from ufuzz.backends.protocol import BackendError
from ufuzz.model import Checkpoint, Memory

COMBOS = list(itertools.product(("dense", "bm25", "hybrid"), ("append", "rewrite"), ("hard", "tombstone")))


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    return Embedder(tmp_path_factory.mktemp("embcache") / "embeddings.sqlite")


@pytest.fixture
def make(embedder, tmp_path):
    made = []

    def _make(**opts):
        opts.setdefault("db", "memory")
        b = EmbeddedBackend(tmp_path / f"b{len(made)}", {k: v for k, v in opts.items()}, embedder=embedder)
        made.append(b)
        return b

    yield _make
    for b in made:
        b.close()


@pytest.mark.parametrize("combo", COMBOS, ids=lambda c: "-".join(c))
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_conformance(check, combo, make):
    retrieval, policy, delete = combo
    check(make(retrieval=retrieval, update_policy=policy, delete=delete))


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_conformance_file_db_defaults(check, embedder, tmp_path):
    b = EmbeddedBackend(tmp_path, {}, embedder=embedder)
    try:
        check(b)
    finally:
        b.close()


LENA_NEW = Memory("m1~u", "Update: Lena now lives in Brask.", "2024-02-01T10:00:00")


@pytest.mark.parametrize("retrieval", ["dense", "hybrid"])
def test_append_keeps_old_item_retrievable(make, retrieval):
    b = make(retrieval=retrieval, update_policy="append")
    s = b.build(tiny_checkpoint())
    res = b.update(s, "m1", LENA_NEW)
    assert res.ok and res.written == ("m1~u",) and res.superseded == ("m1",) and res.removed == ()
    ids = [x.id for x in b.retrieve(s, "Where does Lena live?", 6)]
    assert "m1" in ids and "m1~u" in ids
    old, new = b.get(s, "m1"), b.get(s, "m1~u")
    assert old.active and old.text == "My sister Lena lives in Velmora." and old.metadata["superseded_by"] == "m1~u"
    assert new.active and new.timestamp == "2024-02-01T10:00:00" and new.metadata["supersedes"] == "m1"
    assert len([m for m in b.list(s) if m.active]) == 7
    # the new id must be fresh, and different from the old one
    assert not b.update(s, "m2", Memory("m1~u", "x", "2024-03-01")).ok
    assert not b.update(s, "m2", Memory("m2", "x", "2024-03-01")).ok


@pytest.mark.parametrize("retrieval", ["dense", "bm25"])
def test_rewrite_replaces_in_place(make, retrieval):
    b = make(retrieval=retrieval, update_policy="rewrite")
    s = b.build(tiny_checkpoint())
    res = b.update(s, "m1", LENA_NEW)
    assert res.ok and res.written == ("m1",) and res.removed == () and res.superseded == ()
    got = b.get(s, "m1")
    assert got.text == LENA_NEW.text and got.timestamp == LENA_NEW.timestamp and got.active
    assert b.get(s, "m1~u") is None
    hits = b.retrieve(s, "Where does Lena live?", 6)
    assert "m1~u" not in [x.id for x in hits]
    assert all("Velmora" not in x.text for x in hits)
    assert {x.text for x in hits if x.id == "m1"} == {LENA_NEW.text}
    assert len(b.list(s)) == 6


def test_tombstone_keeps_row_inactive(make):
    b = make(delete="tombstone")
    s = b.build(tiny_checkpoint())
    res = b.delete(s, "m4")
    assert res.ok and res.removed == ("m4",)
    got = b.get(s, "m4")
    assert got is not None and got.active is False and "Omar" in got.text
    listed = {m.id: m.active for m in b.list(s)}
    assert listed["m4"] is False and sum(listed.values()) == 5
    assert "m4" not in [x.id for x in b.retrieve(s, "Where does Omar live?", 6)]
    assert not b.delete(s, "m4").ok
    assert not b.update(s, "m4", Memory("m4~u", "Omar moved.", "2024-03-01")).ok
    assert not b.add(s, Memory("m4", "Omar again.", "2024-03-01")).ok


def test_hard_delete_removes_row_and_allows_readd(make):
    b = make(delete="hard")
    s = b.build(tiny_checkpoint())
    child = b.fork(s)
    assert b.delete(child, "m4").ok
    assert b.get(child, "m4") is None and "m4" not in {m.id for m in b.list(child)}
    assert b.add(child, Memory("m4", "Omar moved to Brask.", "2024-03-01")).ok
    assert b.get(child, "m4").text == "Omar moved to Brask."
    assert b.get(s, "m4").text == "My friend Omar lives in Tessaly Heights."


def test_unknown_ids_and_duplicates_are_op_failures(make):
    b = make()
    s = b.build(tiny_checkpoint())
    for res in (b.update(s, "zz", Memory("zz~u", "x", "2024-03-01")), b.delete(s, "zz"),
                b.add(s, Memory("m2", "dup", "2024-03-01"))):
        assert res.ok is False and res.detail
    with pytest.raises(BackendError):
        b.build(Checkpoint("dup", (Memory("a", "x", "t"), Memory("a", "y", "t")), ()))


def test_unknown_and_released_state_raise_backend_error(make):
    b = make()
    s = b.build(tiny_checkpoint())
    with pytest.raises(BackendError):
        b.retrieve("s999", "q", 3)
    b.release(s)
    for call in (lambda: b.get(s, "m1"), lambda: b.fork(s), lambda: b.release(s)):
        with pytest.raises(BackendError):
            call()
    assert b.node_count() == 0


def test_bm25_ranks_exact_term_first(make):
    mems = tiny_checkpoint().memories + (
        Memory("m7", "The storage locker code is QX4471.", "2024-02-01"),
        Memory("m8", "I stored the winter tyres in the garage.", "2024-02-02"),
        Memory("m9", "My locker at the gym is number twelve.", "2024-02-03"))
    b = make(retrieval="bm25")
    s = b.build(Checkpoint("ck", mems, ()))
    hits = b.retrieve(s, "what was QX4471 again", 3)
    assert hits[0].id == "m7" and hits[0].score > 0
    assert [x.id for x in hits] == ["m7"]  # bm25 returns only documents sharing a term
    assert b.retrieve(s, "capital of France", 3) == []


def test_hybrid_is_deterministic_rrf_of_dense_and_bm25(make):
    ck = tiny_checkpoint()
    b1, b2 = make(retrieval="hybrid"), make(retrieval="hybrid")
    dense, sparse = make(retrieval="dense"), make(retrieval="bm25")
    s1, s2, sd, sb = b1.build(ck), b2.build(ck), dense.build(ck), sparse.build(ck)
    for q in ["Where does Lena live?", "Who is Pip's vet?", "gym Thursdays", "What is the capital of France?"]:
        r1 = b1.retrieve(s1, q, 4)
        assert r1 == b1.retrieve(s1, q, 4) == b2.retrieve(s2, q, 4)
        assert [(x.score, x.id) for x in r1] == sorted(((x.score, x.id) for x in r1), key=lambda t: (-t[0], t[1]))
        fused: dict[str, float] = {}
        for ranking in (dense.retrieve(sd, q, RRF_DEPTH), sparse.retrieve(sb, q, RRF_DEPTH)):
            for hit in ranking:
                rank = 1 + sum(other.score > hit.score for other in ranking)
                fused[hit.id] = fused.get(hit.id, 0.0) + 1 / (RRF_K + rank)
        expect = sorted(fused.items(), key=lambda t: (-round(t[1], 10), t[0]))[:4]
        assert [x.id for x in r1] == [i for i, _ in expect]
        assert [x.score for x in r1] == pytest.approx([v for _, v in expect])


@pytest.mark.parametrize("retrieval", ["dense", "bm25", "hybrid"])
def test_ties_broken_by_id(make, retrieval):
    text = "Lena keeps bees in Velmora."
    b = make(retrieval=retrieval)
    s = b.build(Checkpoint("ties", (Memory("c3", text, "t"), Memory("a1", text, "t"), Memory("b2", text, "t"),
                                    Memory("z9", "Our dog Pip loves the beach.", "t")), ()))
    hits = b.retrieve(s, "Where does Lena keep bees?", 3)
    assert [x.id for x in hits] == ["a1", "b2", "c3"]
    assert len({x.score for x in hits}) == 1
    child = b.fork(s)
    b.update(child, "b2", Memory("b2~u", text, "t2"))  # a copy of b2 now lives in the child's own block
    assert [x.id for x in b.retrieve(child, "Where does Lena keep bees?", 3)][:2] == ["a1", "b2"]


def test_options_are_validated(embedder, tmp_path):
    with pytest.raises(ValueError, match="retrieval.*dense, bm25, hybrid"):
        EmbeddedBackend(tmp_path, {"retrieval": "sparse"}, embedder=embedder)
    with pytest.raises(ValueError, match="update_policy.*append, rewrite"):
        EmbeddedBackend(tmp_path, {"update_policy": "merge"}, embedder=embedder)
    with pytest.raises(ValueError, match="delete.*hard, tombstone"):
        EmbeddedBackend(tmp_path, {"delete": "soft"}, embedder=embedder)
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        EmbeddedBackend(tmp_path, {"colour": "red"}, embedder=embedder)
    b = EmbeddedBackend(tmp_path, {"retrieval": "BM25", "db": "memory"}, embedder=embedder)
    assert b.retrieval == "bm25" and not (tmp_path / "embedded.sqlite").exists()


def test_describe_and_capabilities(make):
    for mode in ("dense", "bm25", "hybrid"):
        b = make(retrieval=mode, update_policy="rewrite", delete="tombstone")
        d = b.describe()
        assert (d["backend"], d["retrieval"], d["update_policy"], d["delete"], d["model"]) == \
            ("embedded", mode, "rewrite", "tombstone", MODEL_NAME)
        c = b.capabilities
        assert c.copyable and c.visible_retrieval and c.deterministic and not c.answers
        assert c.reader_threshold == ABSTAIN[mode]


def test_registry_creates_embedded(tmp_path, embedder):
    b = registry.create("embedded", tmp_path, {"db": "memory", "embedding_cache": str(embedder.cache_path)})
    assert isinstance(b, EmbeddedBackend) and b.name == "embedded"
    b.close()


def test_fork_is_copy_on_write_in_sqlite(embedder, tmp_path):
    b = EmbeddedBackend(tmp_path, {}, embedder=embedder)
    s = b.build(tiny_checkpoint())
    db = tmp_path / "embedded.sqlite"

    def count(table):
        with sqlite3.connect(db) as c:
            return c.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]

    assert count("items") == 6
    forks = [b.fork(s) for _ in range(5)]
    assert count("items") == 6 and count("states") == 6  # a fork copies no memory row
    b.add(forks[0], Memory("m7", "Omar adopted a cat named Sorrel.", "2024-02-02"))
    assert count("items") == 7
    for f in forks:
        b.release(f)
    assert count("states") == 1 and count("items") == 6
    b.close()


def test_parent_released_before_child(make):
    b = make()
    s = b.build(tiny_checkpoint())
    child = b.fork(s)
    b.release(s)
    assert {m.id for m in b.list(child)} == {"m1", "m2", "m3", "m4", "m5", "m6"}
    assert b.add(child, Memory("m7", "x y z", "2024-02-02")).ok
    b.release(child)
    assert b.node_count() == 0


def test_write_to_parent_after_fork_does_not_reach_fork(make):
    b = make(retrieval="hybrid", update_policy="rewrite")
    s = b.build(tiny_checkpoint())
    child = b.fork(s)
    assert b.update(s, "m1", LENA_NEW).ok and b.delete(s, "m2").ok
    assert b.get(child, "m1").text == "My sister Lena lives in Velmora." and b.get(child, "m2") is not None
    assert all("Brask" not in x.text for x in b.retrieve(child, "Where does Lena live?", 6))
    assert "Brask" in b.retrieve(s, "Where does Lena live?", 1)[0].text


# --- abstention thresholds ----------------------------------------------------------------------------------
ANSWERABLE = [("Where does Lena live?", "m1"), ("Who is Pip's vet?", "m6"), ("Which day do I go to the gym?", "m5"),
              ("Where does Lena work?", "m2")]
NOTHING_STORED = ["What is the capital of France?", "What is the best pizza topping?"]


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_abstain_threshold_separates(make, mode):
    b = make(retrieval=mode)
    s = b.build(tiny_checkpoint())
    thr = b.capabilities.reader_threshold
    for q, mid in ANSWERABLE:
        hits = {x.id: x.score for x in b.retrieve(s, q, 2)}
        assert hits.get(mid, -1.0) >= thr, (q, hits)
    for q in NOTHING_STORED:
        top = b.retrieve(s, q, 1)
        assert not top or top[0].score < thr, (q, top)


# --- fork chains: a stateful property test against a plain dict model ----------------------------------------
POOL_IDS = ["a", "b", "c", "d", "e", "f"]
POOL_TEXTS = ["Lena lives in Velmora.", "Omar works at the bakery.", "Pip the dog loves the beach.",
              "The gym opens at seven.", "Mira teaches piano in Dunmore.", "Tomas drives a red Volvo.",
              "Lena moved to Brask.", "The bakery closes at six."]
QUERY = "Where does Lena live and who works at the bakery?"


class ForkChains(RuleBasedStateMachine):
    embedder: Embedder | None = None

    @initialize(retrieval=st.sampled_from(["dense", "bm25", "hybrid"]),
                policy=st.sampled_from(["append", "rewrite"]), delete=st.sampled_from(["hard", "tombstone"]),
                split=st.sampled_from([1, 3, 512]))
    def start(self, retrieval, policy, delete, split):
        self.b = EmbeddedBackend(".", {"retrieval": retrieval, "update_policy": policy, "delete": delete,
                                       "db": "memory"}, embedder=self.embedder)
        self.b.split_rows = split
        mems = tuple(Memory(i, POOL_TEXTS[n], f"2024-01-0{n + 1}") for n, i in enumerate(POOL_IDS[:3]))
        h = self.b.build(Checkpoint("ck", mems, ()))
        self.model: dict[str, dict[str, tuple[str, bool]]] = {h: {m.id: (m.text, True) for m in mems}}
        self.new_ids = itertools.count()

    def _pick(self, data):
        return data.draw(st.sampled_from(sorted(self.model)))

    @rule(data=st.data())
    def fork(self, data):
        h = self._pick(data)
        self.model[self.b.fork(h)] = dict(self.model[h])

    @rule(data=st.data(), mid=st.sampled_from(POOL_IDS), text=st.sampled_from(POOL_TEXTS))
    def add(self, data, mid, text):
        h = self._pick(data)
        res = self.b.add(h, Memory(mid, text, "2024-05-01"))
        assert res.ok == (mid not in self.model[h])
        if res.ok:
            self.model[h][mid] = (text, True)

    @rule(data=st.data(), mid=st.sampled_from(POOL_IDS), text=st.sampled_from(POOL_TEXTS))
    def update(self, data, mid, text):
        h = self._pick(data)
        new_id = f"u{next(self.new_ids)}"
        res = self.b.update(h, mid, Memory(new_id, text, "2024-06-01"))
        live = mid in self.model[h] and self.model[h][mid][1]
        assert res.ok == live
        if res.ok:
            self.model[h][new_id if self.b.update_policy == "append" else mid] = (text, True)

    @rule(data=st.data(), mid=st.sampled_from(POOL_IDS))
    def delete(self, data, mid):
        h = self._pick(data)
        res = self.b.delete(h, mid)
        assert res.ok == (mid in self.model[h] and self.model[h][mid][1])
        if res.ok:
            if self.b.delete_mode == "hard":
                del self.model[h][mid]
            else:
                self.model[h][mid] = (self.model[h][mid][0], False)

    @rule(data=st.data())
    def release(self, data):
        if len(self.model) > 1:
            h = self._pick(data)
            self.b.release(h)
            del self.model[h]

    @invariant()
    def every_state_matches_its_model(self):
        for h, expect in self.model.items():
            assert {m.id: (m.text, m.active) for m in self.b.list(h)} == expect
            for mid in sorted({*POOL_IDS, *expect, "u0", "u1"}):
                got = self.b.get(h, mid)
                if mid in expect:
                    assert got is not None and (got.text, got.active) == expect[mid]
                else:
                    assert got is None
            active = {i: t for i, (t, a) in expect.items() if a}
            hits = self.b.retrieve(h, QUERY, 50)
            assert len({x.id for x in hits}) == len(hits)
            assert all(active.get(x.id) == x.text for x in hits)
            if self.b.retrieval != "bm25":
                assert {x.id for x in hits} == set(active)

    def teardown(self):
        if hasattr(self, "b"):
            for h in list(self.model):
                self.b.release(h)
            assert self.b.node_count() == 0
            self.b.close()


def test_fork_chains_keep_every_level_isolated(embedder):
    embedder.encode([*POOL_TEXTS, QUERY])
    ForkChains.embedder = embedder
    run_state_machine_as_test(ForkChains, settings=settings(
        max_examples=40, stateful_step_count=30, deadline=None, suppress_health_check=list(HealthCheck)))


def test_relevance_threshold_option_is_the_backends_own_cut_off(tmp_path):
    """With relevance_threshold the embedded backend returns only what scores at or above it, and declares
    it, so the selection level judges abstention against it; without it nothing is declared."""
    from ufuzz.backends.conformance import tiny_checkpoint

    plain = EmbeddedBackend(tmp_path / "a", {"retrieval": "bm25", "db": "memory"})
    assert plain.capabilities.relevance_threshold is None
    cut = EmbeddedBackend(tmp_path / "b", {"retrieval": "bm25", "db": "memory", "relevance_threshold": "1.0"})
    assert cut.capabilities.relevance_threshold == 1.0
    cp = tiny_checkpoint()
    q = "Who lives in Velmora?"
    everything = plain.retrieve(plain.build(cp), q, 5)
    kept = cut.retrieve(cut.build(cp), q, 5)
    assert kept == [r for r in everything if r.score >= 1.0] and len(kept) < len(everything)
    with pytest.raises(ValueError, match="relevance_threshold"):
        EmbeddedBackend(tmp_path / "c", {"relevance_threshold": "high"})
    plain.close()
    cut.close()
