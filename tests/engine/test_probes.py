"""System probes (ufuzz.engine.probes): a short result list and a stored memory its own words do not find, seen on the
seeds' own states with no reference; never charged to a correct search, recorded once, replayed."""

from __future__ import annotations

import sqlite3
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ufuzz.backends import registry
from ufuzz.backends.adapters.embedded import EmbeddedBackend
from ufuzz.backends.protocol import OpResult, Retrieved
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.engine.probes import edges, short_list, unreachable
from ufuzz.model import Checkpoint, Memory
from ufuzz.oracles.classes import class_of
from ufuzz.triage.replay import replay_campaign

WORDS = ["mopsa", "has", "a", "the", "budgie", "pet", "dragon", "coffee", "park", "likes", "named", "fang", "dog",
         "snake", "corn", "Mopsa", "has."]
TEXTS = st.lists(st.sampled_from(WORDS), min_size=1, max_size=7).map(" ".join)


def _checkpoint(texts: list[str], times: list[int] | None = None) -> Checkpoint:
    days = times or list(range(len(texts)))
    return Checkpoint(id="c", facts=(), memories=tuple(Memory(f"m{j}", t, f"2024-01-{d % 28 + 1:02d}T{d // 28:02d}:00:00")
                                                       for j, (t, d) in enumerate(zip(texts, days, strict=True))))


class _ShortPage(EmbeddedBackend):
    """Planted: when more memories match than asked for, one result too few comes back (an off-by-one page)."""

    def _retrieve(self, state, query, k):
        hits = super()._retrieve(state, query, k + 1)
        return hits[:k - 1] if len(hits) > k else hits[:k]


class _NewestWindow(EmbeddedBackend):
    """Planted: search looks only at the 4 memories written last (a window over the order of writes, as a product
    that stamps memories with its own clock); get/list show every one."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._seq: dict[str, int] = {}

    def _build(self, checkpoint):
        for m in checkpoint.memories:
            self._seq.setdefault(m.id, len(self._seq))
        return super()._build(checkpoint)

    def _add(self, state, memory):
        self._seq.setdefault(memory.id, len(self._seq))
        return super()._add(state, memory)

    def _retrieve(self, state, query, k):
        ids = sorted((m.id for m in self._list(state) if m.active), key=lambda i: self._seq.get(i, -1))
        newest = set(ids[-4:])
        return [r for r in super()._retrieve(state, query, 10_000) if r.id in newest][:k]


class _WindowRefusesTwins(_NewestWindow):
    """The window, and a second memory of a text already stored is refused (an HTTP product's 409)."""

    def _add(self, state, memory):
        if any(m.active and m.text == memory.text for m in self._list(state)):
            return OpResult("add", False, memory.id, detail="a memory with this text exists")
        return super()._add(state, memory)


class _TimeWindow(EmbeddedBackend):
    """Search looks only at the 4 memories of the latest *stored* times: a fresh copy of the oldest memory, stored
    with its time, is not searched either — the probe cannot compare and says so (never charged)."""

    def _retrieve(self, state, query, k):
        newest = {m.id for m in [m for m in self._list(state) if m.active][-4:]}  # listed by time
        return [r for r in super()._retrieve(state, query, 10_000) if r.id in newest][:k]


@pytest.fixture(scope="module", params=[("bm25", None), ("dense", None), ("hybrid", None), ("bm25", 0.5),
                                        ("dense", 0.3)])
def correct(request):
    retrieval, threshold = request.param
    opts = {"db": "memory", "retrieval": retrieval}
    if threshold is not None:
        opts["relevance_threshold"] = threshold
    return EmbeddedBackend(tempfile.mkdtemp(), opts)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(texts=st.lists(TEXTS, min_size=1, max_size=12), query=TEXTS, k=st.integers(1, 6),
       times=st.lists(st.integers(0, 200), min_size=12, max_size=12))
def test_a_correct_search_is_never_charged(correct, texts, query, k, times):
    """Any state (duplicates, repeated words, a relevance cut-off, memories out of time order), any question and
    any k: a correct search returns min(k, matching) results and finds every memory by its own words."""
    h = correct.build(_checkpoint(texts, times[:len(texts)]))
    try:
        got = correct.retrieve(h, query, k)
        assert short_list(correct, h, query, k, got) is None
        found, seen = unreachable(correct, h, _checkpoint(texts, times[:len(texts)]), k)
        assert found == [] and "unreachable" not in seen.values()
        assert len(correct.list(h)) == len(texts)  # the twins went to copies
    finally:
        correct.release(h)


STATE = ["Mopsa has a budgie.", "Mopsa likes tea.", "Mopsa lives in Oslo.", "Mopsa walks in the park.",
         "Mopsa drinks coffee.", "Mufflin is a corn snake.", "Mopsa has a dragon named Fang."]


def test_a_short_page_is_found_and_only_when_more_match():
    be = _ShortPage(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
    h = be.build(_checkpoint(STATE))
    got = be.retrieve(h, "Mopsa", 5)
    assert len(got) == 4
    short = short_list(be, h, "Mopsa", 5, got)
    assert short is not None and (short["returned"], short["returned_more"]) == (4, 6)  # six mention Mopsa
    assert "asked for 5" in short["reason"]
    few = be.retrieve(h, "Mufflin snake", 5)  # one memory matches: all of it comes back
    assert short_list(be, h, "Mufflin snake", 5, few) is None


def test_a_recency_window_is_found_at_the_oldest_memory():
    cp = _checkpoint(STATE)
    assert edges(cp) == {"m0": "oldest", "m6": "newest"}
    be = _NewestWindow(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
    h = be.build(cp)
    found, _ = unreachable(be, h, cp, 5)
    assert [(f["memory"], f["edge"]) for f in found] == [("m0", "oldest")]
    assert "oldest" in found[0]["reason"] and found[0]["change"]["rank"] is None
    assert len(be.list(h)) == len(STATE)
    by_time = _TimeWindow(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
    found, seen = unreachable(by_time, by_time.build(cp), cp, 5)
    assert found == [] and seen["m0"].startswith("inconclusive")


class _WriteOrderBoost(_NewestWindow):
    """Correct: no window, but a recency boost by the order of writes (the product's own clock): the oldest memory
    ranks below a fresh copy of itself, and below newer memories sharing a word — yet a search finds it."""

    def _retrieve(self, state, query, k):
        ids = {m.id for m in self._list(state) if m.active}
        top = max((self._seq.get(i, 0) for i in ids), default=1) or 1
        hits = EmbeddedBackend._retrieve(self, state, query, 10_000)
        boosted = [Retrieved(r.id, r.text, r.score + 2.0 * self._seq.get(r.id, 0) / top) for r in hits]
        return sorted(boosted, key=lambda r: -r.score)[:k]


class _Duplicates(EmbeddedBackend):
    """Correct: every memory comes back once per stored copy of its text, collapsed after the cut."""

    def _retrieve(self, state, query, k):
        seen, out = set(), []
        for r in super()._retrieve(state, query, k):
            if r.text not in seen:
                seen.add(r.text)
                out.append(r)
        return out


class _Varies(EmbeddedBackend):
    """An index whose results vary between calls: one call in three drops its last result. A short list is
    charged only when asking for k again gives the very same results, so this one never is (one that came up
    short the same way twice running would be: the probe lowers the odds for a varying search, it cannot
    remove them)."""

    calls = 0

    def _retrieve(self, state, query, k):
        type(self).calls += 1
        hits = super()._retrieve(state, query, k)
        return hits[:-1] if type(self).calls % 3 == 0 else hits


def test_what_a_correct_product_may_do_is_never_charged():
    cp = _checkpoint(STATE)
    boost = _WriteOrderBoost(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
    found, seen = unreachable(boost, boost.build(cp), cp, 2)
    assert found == [] and seen["m0"].startswith("inconclusive"), seen
    dup = _Duplicates(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
    h = dup.build(_checkpoint([*STATE, STATE[0]]))
    q = "Mopsa has a budgie"  # both copies of the first text rank first: one is collapsed away
    got = dup.retrieve(h, q, 5)
    assert len(got) == 4 and len(dup.retrieve(h, q, 6)) == 5
    assert short_list(dup, h, q, 5, got, listing=lambda: dup.list(h)) is None
    var = _Varies(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
    h = var.build(cp)
    for _ in range(6):
        got = var.retrieve(h, "Mopsa", 5)
        assert short_list(var, h, "Mopsa", 5, got) is None


class _ProbeCrashes(EmbeddedBackend):
    """A search for one result more than asked raises something other than a BackendError (an adapter's bug)."""

    def _retrieve(self, state, query, k):
        if k == 6:
            raise KeyError("results")
        hits = super()._retrieve(state, query, k)
        return hits[:-1] if len(hits) == k else hits


def test_a_probe_fault_is_an_error_record_never_a_crash(tmp_path):
    """Every seed's execution meets the probe's fault (each result list is short), so every seed executed has an
    error record of it — also a seed the oracle had executed ahead of the queued jobs (to attribute a failure or to
    control a rewording), whose job's faults were once dropped."""
    registry.register("test-probe-crashes", _ProbeCrashes)
    c = Campaign(CampaignConfig(backend="test-probe-crashes", backend_options={"db": "memory", "retrieval": "bm25"},
                                budget=300, seed=1, out=str(tmp_path / "c"), max_consecutive_errors=0))
    summary = c.run()
    assert summary["status"] == "budget_spent" and summary["executions"] == 300 and summary["errors"] > 0
    con = sqlite3.connect(tmp_path / "c" / "corpus.sqlite")
    try:
        executed = {r[0] for r in con.execute(
            "SELECT DISTINCT case_id FROM executions WHERE error IS NULL AND case_id IN (SELECT seed_id FROM seeds)")}
        recorded = {r[0] for r in con.execute("SELECT DISTINCT case_id FROM errors WHERE operation = 'probe'")}
    finally:
        con.close()
    assert executed and executed <= recorded, sorted(executed - recorded)


@pytest.mark.parametrize("name,cls,kind,klass", [
    ("test-short-page", _ShortPage, "short_result_list", "short-result-list"),
    ("test-newest-window", _NewestWindow, "memory_unreachable", "stored-memory-unreachable")])
def test_a_campaign_records_each_finding_once_apart_from_mutant_failures_and_replays_it(tmp_path, name, cls, kind,
                                                                                       klass):
    registry.register(name, cls)
    runs = {}
    for backend in (name, "embedded"):
        c = Campaign(CampaignConfig(backend=backend, backend_options={"db": "memory", "retrieval": "bm25"},
                                    budget=150, seed=1, out=str(tmp_path / backend)))
        summary = c.run()
        assert summary["status"] == "budget_spent"
        assert all(f.kind != kind for _, f in c.failure_log)  # never a mutant failure (UF@B), never scheduled
        con = sqlite3.connect(tmp_path / backend / "corpus.sqlite")
        try:
            runs[backend] = con.execute("SELECT failure_key, origin, operator, stage, cause_key, count FROM failures "
                                        "WHERE kind = ?", (kind,)).fetchall()
        finally:
            con.close()
    probed, clean = runs[name], runs["embedded"]
    assert probed and not clean  # the correct build of the same backend: nothing
    assert all(origin == "baseline" and not op and count == 1 for _, origin, op, _, _, count in probed)
    assert len({r[4] for r in probed}) <= 2 and class_of("", probed[0][3], kind).id == klass
    again = replay_campaign(tmp_path / name, keys=[r[0] for r in probed])
    assert {r.status for r in again.results} == {"reproduced"}
    if kind == "memory_unreachable":  # a build that now refuses a second memory of a text: nothing can be said
        registry.register(name, _WindowRefusesTwins)
        again = replay_campaign(tmp_path / name, keys=[r[0] for r in probed])
        assert {r.status for r in again.results} == {"inconclusive"}
        assert all("refused" in r.reason for r in again.results)
