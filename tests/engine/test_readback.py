"""Read your writes (ufuzz.engine.readback): a written memory must stand next to a fresh twin of itself in a search
for its own text. A correct backend is never charged, whatever its scorer; an index that keeps an updated
memory's old words, or never learns of an add, is; the failure sits beside a valid mutant and replays."""

from __future__ import annotations

import sqlite3
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ufuzz.backends import planted
from ufuzz.backends.embedded import EmbeddedBackend
from ufuzz.backends.protocol import Retrieved
from ufuzz.corpus.regression import export_campaign
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.engine.readback import apart, readback
from ufuzz.engine.regression import check_corpus
from ufuzz.engine.replay import replay_campaign
from ufuzz.model import Checkpoint, Memory, StateOp

WORDS = ["mopsa", "has", "a", "pet", "dragon", "bearded", "tarantula", "coffee", "park", "walks", "likes", "rome",
         "the", "named", "fang", "dog", "budgie", "snake", "corn"]
TEXTS = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)


def _checkpoint(texts: list[str]) -> Checkpoint:
    return Checkpoint(id="c", facts=(), memories=tuple(Memory(f"m{j}", t, f"2024-01-{j + 1:02d}T00:00:00")
                                                       for j, t in enumerate(texts)))


def _write(be, h, texts: list[str], i: int, new: str, add: bool, policy: str):
    if add:
        op = StateOp("add", None, Memory("n1", new, "2024-02-01T00:00:00"))
        return op, be.add(h, op.memory)
    nid = f"m{i}" if policy == "rewrite" else f"m{i}~u1abcd"
    op = StateOp("update", f"m{i}", Memory(nid, new, "2024-02-01T00:00:00"))
    return op, be.update(h, f"m{i}", op.memory)


@pytest.fixture(scope="module", params=[("bm25", "append"), ("bm25", "rewrite"), ("hybrid", "append")])
def correct(request):
    retrieval, policy = request.param
    return EmbeddedBackend(tempfile.mkdtemp(), {"db": "memory", "retrieval": retrieval,
                                                "update_policy": policy}), policy


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(texts=st.lists(TEXTS, min_size=2, max_size=9), i=st.integers(0, 8), word=st.sampled_from(WORDS),
       pos=st.integers(0, 7), add=st.booleans())
def test_a_correct_backend_is_never_charged(correct, texts, i, word, pos, add):
    """Repeated terms, stop words, duplicates, short texts: BM25 may rank another memory above a text's own, but
    never apart from a memory of the same text and time."""
    be, policy = correct
    i %= len(texts)
    words = texts[i].split()
    words[pos % len(words)] = word
    h = be.build(_checkpoint(texts))
    try:
        op, res = _write(be, h, texts, i, " ".join(words), add, policy)
        assert res.ok
        before = sorted(m.id for m in be.list(h))
        assert readback(be, h, (op,), (res,), 5) is None
        assert sorted(m.id for m in be.list(h)) == before  # the twin went to a copy
    finally:
        be.release(h)


STALE = ["Mopsa has a budgie.", "Mufflin is a corn snake, in case you wondered.", "Mopsa likes tea.",
         "Mopsa lives in Oslo.", "Mopsa walks in the park."]


def test_an_index_that_keeps_the_old_words_is_found():
    bad, good = planted.PAIRS["stale-index"]
    for cls, charged in ((bad, True), (good, False)):
        be = cls(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
        h = be.build(_checkpoint(STALE))
        op = StateOp("update", "m0", Memory("m0", "Mopsa has a corn snake.", "2024-02-01T00:00:00"))
        res = be.update(h, "m0", op.memory)
        assert res.ok and be.get(h, "m0").text == "Mopsa has a corn snake."  # what get/list verify
        found = readback(be, h, (op,), (res,), 5)
        assert (found is not None) is charged, cls.__name__
        if charged:
            c = found.changes[0]
            assert found.kind == "write_not_found" and found.memories == ("m0",)
            assert c["twin_rank"] == 1 and c["rank"] == 3 and c["top_ids"][1] == "m1"  # the snake in between
            assert "m0" in found.reason and "rank 3" in found.reason


class _Unindexed:
    """A backend whose search never returns one memory (an add that never reached the index)."""

    def __init__(self, inner, hidden: str) -> None:
        self.inner, self.hidden = inner, hidden
        self.forks = self.releases = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def fork(self, state):
        self.forks += 1
        return self.inner.fork(state)

    def release(self, state):
        self.releases += 1
        return self.inner.release(state)

    def retrieve(self, state, query, k):
        return [r for r in self.inner.retrieve(state, query, k + 1) if r.id != self.hidden][:k]


def test_an_add_search_never_sees_is_found_on_a_copy():
    inner = EmbeddedBackend(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
    be = _Unindexed(inner, "n1")
    h = inner.build(_checkpoint(STALE))
    op = StateOp("add", None, Memory("n1", "Mopsa adopted a hedgehog.", "2024-02-01T00:00:00"))
    res = inner.add(h, op.memory)
    found = readback(be, h, (op,), (res,), 5)
    assert found is not None and found.changes[0]["rank"] is None and "not returned" in found.reason
    assert (be.forks, be.releases) == (1, 1)
    assert "n1~twin" not in {m.id for m in inner.list(h)}
    # nothing written, a delete, a refused write: nothing to read back
    assert readback(be, h, (StateOp("delete", "m1"),), (inner.delete(h, "m1"),), 5) is None


def _r(i: str, text: str = "x") -> Retrieved:
    return Retrieved(i, text, 1.0)


def test_apart_counts_only_other_texts_and_first_places():
    t = "the text"
    assert apart([_r("w~twin", t), _r("w", t)], "w", "w~twin", t) == 0
    assert apart([_r("w", t), _r("w~twin", t)], "w", "w~twin", t) == 0
    assert apart([_r("w~twin", t), _r("d", t), _r("w", t)], "w", "w~twin", t) == 0  # a duplicate between
    assert apart([_r("w~twin", t), _r("o"), _r("w", t)], "w", "w~twin", t) == 1
    assert apart([_r("w~twin", t), _r("w", t), _r("o"), _r("w", "old")], "w", "w~twin", t) == 0  # returned twice
    assert apart([_r("w~twin", t), _r("o")], "w", "w~twin", t) == 2
    assert apart([_r("w", t), _r("o")], "w", "w~twin", t) is None


def test_the_failure_sits_beside_a_valid_mutant_and_replays(tmp_path):
    planted.register_all()
    out = tmp_path / "c"
    c = Campaign(CampaignConfig(backend="planted-stale-index", backend_options={"db": "memory", "retrieval": "bm25"},
                                budget=300, seed=1, out=str(out)))
    assert c.run()["status"] == "budget_spent"
    unread = [f for _, f in c.failure_log if f.kind == "write_not_found"]
    assert unread and all(f.stage == "state" for f in unread)
    con = sqlite3.connect(out / "corpus.sqlite")
    try:
        valid = dict(con.execute("SELECT case_id, valid FROM mutants").fetchall())
        executed = {r[0] for r in con.execute("SELECT case_id FROM executions")}
    finally:
        con.close()
    assert all(valid[f.case_id] == 1 for f in unread)
    assert any(f.case_id in executed for f in unread)  # still a test of its own (where a check of it could fail)
    keys = [f.key for f in unread]
    again = replay_campaign(out, keys=keys)
    assert [r.status for r in again.results] == ["reproduced"] * len(keys)
    # the clean build of the same backend reads every such write back next to its twin: fixed
    export_campaign(out, tmp_path / "c.jsonl")
    report = check_corpus(tmp_path / "c.jsonl", backend="clean-stale-index",
                          options={"db": "memory", "retrieval": "bm25"})
    status = {r.failure_key: r.status for r in report.results}
    assert {status[k] for k in keys} == {"fixed"}
