"""Read your writes (ufuzz.engine.readback): a written memory must stand above a fresh twin of itself, or next to it,
in a search for its own text, where an untouched memory stands next to its own twin. A correct backend is never
charged, whatever its scorer, tie order, deduplication or diversification; an index that keeps an updated
memory's old words, or never learns of an add, is; the failure sits beside a valid mutant and replays."""

from __future__ import annotations

import hashlib
import re
import sqlite3
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ufuzz.backends import registry
from ufuzz.backends.adapters import planted
from ufuzz.backends.adapters.embedded import EmbeddedBackend
from ufuzz.backends.protocol import BackendError, OpResult, Retrieved, StoredMemory
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.engine.readback import apart, below, readback
from ufuzz.model import Checkpoint, Memory, StateOp
from ufuzz.triage.check import check_corpus
from ufuzz.triage.corpusfile import export_campaign
from ufuzz.triage.replay import replay_campaign

WORDS = ["mopsa", "has", "a", "the", "budgie", "pet", "dragon", "coffee", "park", "likes", "named", "fang", "dog",
         "snake", "corn", "Mopsa", "has."]
TEXTS = st.lists(st.sampled_from(WORDS), min_size=1, max_size=7).map(" ".join)


def _checkpoint(texts: list[str]) -> Checkpoint:
    return Checkpoint(id="c", facts=(), memories=tuple(Memory(f"m{j}", t, f"2024-01-{j + 1:02d}T00:00:00")
                                                       for j, t in enumerate(texts)))


def _update(be, h, i: int, new: str, policy: str = "rewrite"):
    nid = f"m{i}" if policy == "rewrite" else f"m{i}~u1abcd"
    op = StateOp("update", f"m{i}", Memory(nid, new, "2024-02-01T00:00:00"))
    return op, be.update(h, f"m{i}", op.memory)


class _HashedTies(EmbeddedBackend):
    """Correct: equal scores ordered by a hash of the id (a uuid order), not by the id: a case, punctuation or
    stop-word variant of the written text tied with it may stand between a memory and its twin (review)."""

    def _retrieve(self, state, query, k):
        hits = super()._retrieve(state, query, 3 * k + 3)
        return sorted(hits, key=lambda r: (-r.score, hashlib.sha1(f"salt7:{r.id}".encode()).hexdigest()))[:k]


@pytest.fixture(scope="module", params=[(EmbeddedBackend, "bm25", "append"), (EmbeddedBackend, "bm25", "rewrite"),
                                        (EmbeddedBackend, "hybrid", "rewrite"), (_HashedTies, "bm25", "rewrite"),
                                        (_HashedTies, "dense", "append")])
def correct(request):
    cls, retrieval, policy = request.param
    return cls(tempfile.mkdtemp(), {"db": "memory", "retrieval": retrieval, "update_policy": policy}), policy


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(texts=st.lists(TEXTS, min_size=11, max_size=14), i=st.integers(0, 13), perm=st.permutations(range(7)),
       add=st.booleans())
def test_a_correct_backend_is_never_charged(correct, texts, i, perm, add):
    """Eleven memories and more (ids m1 < m10 < m1~twin: a tie may put another memory between a memory and its
    twin), bag-of-words duplicates (another memory with the new text's words in another order, case or
    punctuation), repeated terms and stop words: never charged."""
    be, policy = correct
    i %= len(texts)
    words = texts[i].split()
    new = " ".join(words[j] for j in perm if j < len(words)) or "mopsa"
    texts = [*texts, " ".join(reversed(new.split()))]  # its words in another order, stored too
    h = be.build(_checkpoint(texts))
    try:
        if add:
            op = StateOp("add", None, Memory("m1x", new, "2024-02-01T00:00:00"))
            res = be.add(h, op.memory)
        else:
            op, res = _update(be, h, i, new, policy)
        assert res.ok
        before = sorted(m.id for m in be.list(h))
        assert readback(be, h, (op,), (res,), 5).finding is None
        assert sorted(m.id for m in be.list(h)) == before  # the twins went to a copy
    finally:
        be.release(h)


STALE = ["Mopsa has a budgie.", "Mufflin is a corn snake, in case you wondered.", "Mopsa likes tea.",
         "Mopsa lives in Oslo.", "Mopsa walks in the park."]


def test_an_index_that_keeps_the_old_words_is_found():
    bad, good = planted.PAIRS["stale-index"]
    for cls, charged in ((bad, True), (good, False)):
        be = cls(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
        h = be.build(_checkpoint(STALE))
        op, res = _update(be, h, 0, "Mopsa has a corn snake.")
        assert res.ok and be.get(h, "m0").text == "Mopsa has a corn snake."  # what get/list verify
        read = readback(be, h, (op,), (res,), 5)
        assert (read.finding is not None) is charged and read.inconclusive is None, cls.__name__
        if charged:
            f, c = read.finding, read.finding.changes[0]
            assert f.kind == "write_not_found" and f.memories == ("m0",)
            assert c["twin_rank"] == 1 and c["rank"] == 3 and c["top_ids"][1] == "m1"  # the snake in between
            assert "m0" in f.reason and "rank 3" in f.reason


class _Unindexed(EmbeddedBackend):
    """Planted: search never returns memory n1 (an add that never reached the index)."""

    def _retrieve(self, state, query, k):
        return [r for r in super()._retrieve(state, query, k + 1) if r.id != "n1"][:k]


def test_an_add_search_never_sees_is_found_on_a_copy():
    be = _Unindexed(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
    h = be.build(_checkpoint(STALE))
    op = StateOp("add", None, Memory("n1", "Mopsa adopted a hedgehog.", "2024-02-01T00:00:00"))
    res = be.add(h, op.memory)
    read = readback(be, h, (op,), (res,), 5)
    assert read.finding is not None and read.finding.changes[0]["rank"] is None and "not at all" in read.finding.reason
    assert "n1~twin" not in {m.id for m in be.list(h)}
    assert readback(be, h, (StateOp("delete", "m1"),), (be.delete(h, "m1"),), 5).inconclusive  # nothing written


# -- correct designs the premise does not hold for: never charged, the read-back says why ---------------------

def _toks(t: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", t.lower()))


class _DedupResults(EmbeddedBackend):
    """Correct: identical texts collapsed in the results, the newest kept."""

    def _retrieve(self, state, query, k):
        hits = sorted(super()._retrieve(state, query, 3 * k), key=lambda r: (-r.score, "~twin" not in r.id))
        seen, out = set(), []
        for r in hits:
            if r.text.strip() not in seen:
                seen.add(r.text.strip())
                out.append(r)
        return out[:k]


class _MMR(EmbeddedBackend):
    """Correct: maximal marginal relevance, near-duplicates of a picked result pushed down."""

    def _retrieve(self, state, query, k):
        cand = super()._retrieve(state, query, max(4 * k, 20))
        top, picked = max((r.score for r in cand), default=1.0) or 1.0, []
        while cand and len(picked) < k:
            def mmr(r):
                red = max((len(_toks(r.text) & _toks(p.text)) / max(1, len(_toks(r.text) | _toks(p.text)))
                           for p in picked), default=0.0)
                return 0.5 * r.score / top - 0.5 * red
            best = max(cand, key=mmr)
            cand.remove(best)
            picked.append(best)
        return picked


class _DedupOnWrite(EmbeddedBackend):
    """Correct: an add of a text already stored replaces the older memory."""

    def _add(self, state, memory):
        for m in self._list(state):
            if m.active and m.text.strip() == memory.text.strip():
                self._delete(state, m.id)
        return super()._add(state, memory)


@pytest.mark.parametrize(("cls", "why"), [(_DedupResults, "does not stand next to"), (_MMR, None),
                                          (_DedupOnWrite, "merges duplicates")])
def test_a_correct_system_that_does_not_rank_twins_together_is_never_charged(cls, why):
    """Each was charged before the calibration (review): the written memory collapsed into its twin, pushed
    below it by diversification, or replaced by it."""
    be = cls(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25", "update_policy": "rewrite"})
    h = be.build(_checkpoint([*STALE, "Bob has a cat.", "Bob likes coffee.", "Carol reads books."]))
    for i, new in ((0, "Mopsa has a budgie and a dog."), (3, "Mopsa lives in Rome."), (5, "Bob has a dog.")):
        op, res = _update(be, h, i, new)
        read = readback(be, h, (op,), (res,), 5)
        assert read.finding is None, (cls.__name__, read.finding.reason)
        assert why is None or why in (read.inconclusive or ""), (cls.__name__, read)


class _NoTimes:
    """A backend whose get/list report no time and whose add refuses a memory without one (review: the twin was
    then written without a time)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def get(self, state, memory_id):
        got = self.inner.get(state, memory_id)
        return None if got is None else StoredMemory(got.id, got.text, "", got.active, got.metadata)

    def list(self, state):
        return [StoredMemory(m.id, m.text, "", m.active, m.metadata) for m in self.inner.list(state)]

    def add(self, state, memory):
        if not memory.timestamp:
            return OpResult("add", False, memory.id, detail="a time is required")
        return self.inner.add(state, memory)


def test_a_twin_takes_the_time_ufuzz_wrote_where_get_reports_none():
    bad = planted.PAIRS["stale-index"][0](tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25"})
    be = _NoTimes(bad)
    cp = _checkpoint(STALE)
    h = bad.build(cp)
    op, res = _update(bad, h, 0, "Mopsa has a corn snake.")
    blind = readback(be, h, (op,), (res,), 5, times={m.id: m.timestamp for m in cp.memories})
    assert blind.finding is not None and blind.finding.memories == ("m0",)
    assert readback(be, h, (op,), (res,), 5, times={}).inconclusive  # the calibration memory's time: unknown


def test_a_memory_ranked_above_its_twin_was_found_by_its_words():
    """Ties ordered by id put m10 ("Mopsa has the budgie": the same bag of words) between m1 and m1~twin; m1 is
    first: found (review: it was charged before)."""
    be = EmbeddedBackend(tempfile.mkdtemp(), {"db": "memory", "retrieval": "bm25", "update_policy": "rewrite"})
    texts = ["Mopsa likes tea.", "Mopsa has a dog.", *(f"Filler {n} walks." for n in range(8)), "Mopsa has the budgie"]
    h = be.build(_checkpoint(texts))
    op, res = _update(be, h, 1, "Mopsa has a budgie.")
    assert readback(be, h, (op,), (res,), 5).finding is None
    hits = [Retrieved("m1", "t", 1.0), Retrieved("m10", "u", 0.95), Retrieved("m1~twin", "t", 0.9)]
    assert apart(hits, "m1", "m1~twin", "t") == 1 and not below(hits, "m1", "m1~twin", "t")
    assert below(list(reversed(hits)), "m1", "m1~twin", "t")


def _r(i: str, text: str = "x", score: float = 0.5) -> Retrieved:
    return Retrieved(i, text, score)


def test_apart_counts_only_other_texts_at_other_scores_and_first_places():
    t = "The text."
    assert apart([_r("w~twin", t, 1), _r("w", t)], "w", "w~twin", t) == 0
    assert apart([_r("w~twin", t, 1), _r("d", t), _r("w", t)], "w", "w~twin", t) == 0  # a duplicate between
    assert apart([_r("w~twin", t, 1), _r("d", "the TEXT!"), _r("w", t)], "w", "w~twin", t) == 0  # its variant
    assert apart([_r("w~twin", t, 1), _r("o", "x", 1), _r("w", t)], "w", "w~twin", t) == 0  # tied with the twin
    assert apart([_r("w~twin", t, 1), _r("o"), _r("w", t)], "w", "w~twin", t) == 1
    assert apart([_r("w~twin", t, 1), _r("w", t), _r("o"), _r("w", "old")], "w", "w~twin", t) == 0  # returned twice
    assert apart([_r("w~twin", t, 1), _r("o")], "w", "w~twin", t) == 1  # missing, below another text
    assert apart([_r("w~twin", t, 1), _r("d", t), _r("e", "the text")], "w", "w~twin", t) == 0  # beyond the cut
    assert apart([_r("w~twin", t, 1)], "w", "w~twin", t) == 0  # the twin last: the memory may be next
    assert apart([_r("w", t), _r("o")], "w", "w~twin", t) is None


# -- in a campaign ---------------------------------------------------------------------------------------------

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
    status = {r.failure_key: (r.status, r.reason) for r in report.results}
    assert {status[k][0] for k in keys} == {"fixed"}
    assert all("finds it now" in status[k][1] for k in keys)
    # a system the premise does not hold for (results deduplicated) says nothing: inconclusive — never fixed, never
    # a regression of a guard (review: "changed" turned a fixed guard red)
    registry.register("test-dedup-results", _DedupResults)
    report = check_corpus(tmp_path / "c.jsonl", backend="test-dedup-results",
                          options={"db": "memory", "retrieval": "bm25", "update_policy": "rewrite"})
    status = {r.failure_key: (r.status, r.outcome, r.reason) for r in report.results}
    assert {status[k][:2] for k in keys} == {("inconclusive", "inconclusive")}
    assert all("says nothing" in status[k][2] for k in keys) and report.exit_code in (0, 1)
    assert not [r for r in report.results if r.failure_key in keys and r.bad]


class _RefusesDuplicates(EmbeddedBackend):
    """Correct: a second memory of a text already stored is refused (as the HTTP adapter reports a 409 Conflict)."""

    def _add(self, state, memory):
        if any(m.active and m.text.strip() == memory.text.strip() for m in self._list(state)):
            return OpResult("add", False, memory.id, detail="returned HTTP 409: a memory with this text exists")
        return super()._add(state, memory)


class _SearchFailsOnStoredText(EmbeddedBackend):
    """A search for a stored memory's exact text fails (only the read-back asks one): a backend fault."""

    def _retrieve(self, state, query, k):
        if any(m.text == query for m in self._list(state)):
            raise BackendError("HTTP 500: search failed")
        return super()._retrieve(state, query, k)


def _campaigns(tmp_path, backend: str, **cfg) -> dict[bool, tuple]:
    got = {}
    for rb in (True, False):
        c = Campaign(CampaignConfig(backend=backend, backend_options={"db": "memory"}, budget=150, seed=1,
                                    out=str(tmp_path / f"{backend}-{rb}"), readback=rb, **cfg))
        s = c.run()
        got[rb] = (s["status"], s["mutants_valid"], sorted(f.key for _, f in c.failure_log), s["errors"])
    return got


def test_a_product_that_refuses_a_duplicate_is_not_an_error(tmp_path):
    """A refusal is a refusal: the read-back says nothing, and nothing is an error (review: over HTTP a 409 was an
    error record for every verified write, feeding --max-consecutive-errors; the adapter reports it as refused)."""
    registry.register("test-refuses-duplicates", _RefusesDuplicates)
    got = _campaigns(tmp_path, "test-refuses-duplicates")
    assert got[True] == got[False] and got[True][0] == "budget_spent" and got[True][3] == 0


def test_a_backend_fault_in_the_read_back_costs_no_mutant(tmp_path):
    """The read-back's fault is an error record; the verified mutant is executed and judged as without it. (Faults
    count towards --max-consecutive-errors like any backend fault: off here, so that the two campaigns compare.)"""
    registry.register("test-search-fails-on-stored-text", _SearchFailsOnStoredText)
    got = _campaigns(tmp_path, "test-search-fails-on-stored-text", max_consecutive_errors=0)
    assert got[True][1:3] == got[False][1:3] and got[False][3] == 0 and got[True][3] > 0


def test_the_failure_is_shown_ticketed_and_minimised(tmp_path):
    """What a developer gets: the steps (the write, the twin, the search), the class, one cause per memory written
    whatever value, and a minimised record that still reproduces (with --opt passed through)."""
    from click.testing import CliRunner

    from ufuzz.cli import main
    from ufuzz.oracles.classes import class_of

    planted.register_all()
    out = tmp_path / "c"
    c = Campaign(CampaignConfig(backend="planted-stale-index", backend_options={"db": "memory", "retrieval": "bm25"},
                                budget=300, seed=1, out=str(out)))
    c.run()
    f = next(f for _, f in c.failure_log if f.kind == "write_not_found")
    assert class_of(f.operator, f.stage, f.kind).id == "write-not-found-by-its-words"
    run = CliRunner()
    shown = run.invoke(main, ["failures", "show", str(out), f.key[:12]])
    assert shown.exit_code == 0 and "read back right after the operation, beside a fresh copy" in shown.output
    md = run.invoke(main, ["failures", "show", str(out), f.key[:12], "--format", "md"]).output
    assert "Add a second memory with exactly the text and time" in md and "**state:write_not_found**" in md
    assert "listed under *Evidence*" not in md
    listed = run.invoke(main, ["status", str(out)]).output
    assert "writes read back" in listed
    mini = run.invoke(main, ["minimise", str(out), f.key[:12], "-o", str(tmp_path / "m.jsonl"),
                             "--opt", "retrieval=bm25"])
    assert mini.exit_code == 0, mini.output
    before, after = re.search(r"memories (\d+) -> (\d+)", mini.output).groups()
    assert int(after) < int(before)
    checked = run.invoke(main, ["corpus", "check", str(tmp_path / "m.jsonl")])
    assert checked.exit_code == 0 and "1 known failures reproduce" in checked.output, checked.output


def test_one_cause_per_memory_written_whatever_its_new_value():
    from ufuzz.model import FuzzCase, MutationDescriptor, Obligation, Provenance, Query, QueryFields
    from ufuzz.operators.sideeffects import Finding
    from ufuzz.oracles.verdict import state_failure

    def case(cid: str, value: str, written: str) -> FuzzCase:
        q = Query("q", "Where does Lena live?", QueryFields("Lena", "city"))
        op = StateOp("update", "p1-m3", Memory(written, f"Lena lives in {value}.", "2024-02-01T00:00:00"))
        return FuzzCase(id=cid, seed_id="s1", checkpoint_id="c", query=q, descriptor=MutationDescriptor(),
                        provenance=Provenance((), (), frozenset()), parent_id="p", operator="update",
                        obligation=Obligation("s1", "update", f"value={value}"), ops=(op,))

    def unread(wid: str) -> Finding:
        return Finding("write_not_found", (wid,), ({"memory": wid, "change": "not_found"},), "r")

    a = state_failure(case("x1", "Brask", "p1-m3~u1abcd"), case("p", "", "p1-m3"), unread("p1-m3~u1abcd"))
    b = state_failure(case("x2", "Quill", "p1-m3~u19f00"), case("p", "", "p1-m3"), unread("p1-m3~u19f00"))
    c = state_failure(case("x3", "Quill", "p1-m4~u19f00"), case("p", "", "p1-m4"), unread("p1-m4~u19f00"))
    assert a.cause == b.cause != c.cause and a.key != b.key


def test_no_readback_is_said_by_status(tmp_path):
    from click.testing import CliRunner

    from ufuzz.cli import main

    run = CliRunner()
    for flag, said in (("--no-readback", "writes not read back"), ("--readback", "writes read back")):
        out = tmp_path / flag.strip("-")
        r = run.invoke(main, ["run", "--budget", "20", "--quiet", "--out", str(out), "--opt", "db=memory", flag])
        assert r.exit_code == 0, r.output
        assert said in run.invoke(main, ["status", str(out)]).output


def test_an_inconclusive_record_is_said_in_the_check_and_its_junit():
    from ufuzz.reports.junit import check_to_junit
    from ufuzz.reports.regression import render_check
    from ufuzz.triage.check import CheckReport, CheckResult, _outcome

    assert _outcome("inconclusive", "fixed") == _outcome("inconclusive", "failing") == "inconclusive"
    why = "the read-back says nothing now: the system refused a second memory of the written text"
    res = CheckResult(line=2, failure_key="a" * 20, case_id="x1", parent_id="s1", operator="update",
                      kind="write_not_found", stage="state", status="inconclusive", reason=why,
                      expected_status="fixed", outcome="inconclusive")
    report = CheckReport(path="c.jsonl", backend="http", backend_options={}, results=[res])
    assert report.exit_code == 0 and not report.regressions and not report.ok  # not as recorded: said
    text = render_check(report)
    assert "INCONCLUSIVE" in text and "1 records inconclusive" in text and "REGRESS" not in text
    xml = check_to_junit(report).getroot()
    skipped = xml.find(".//skipped")
    assert skipped is not None and skipped.get("message").startswith("inconclusive: the read-back says nothing")
    assert xml.find(".//failure") is None and xml.find(".//error") is None


def test_status_counts_read_backs_and_says_when_they_said_nothing(tmp_path):
    """On a correct system the premise does not hold for (identical results collapsed), every read-back is
    inconclusive: status says so, never a bare "writes read back"."""
    from click.testing import CliRunner

    from ufuzz.cli import main

    registry.register("test-dedup-results", _DedupResults)
    for backend, inconclusive in (("test-dedup-results", True), ("embedded", False)):
        out = tmp_path / backend
        s = Campaign(CampaignConfig(backend=backend, backend_options={"db": "memory", "retrieval": "bm25"},
                                    budget=120, seed=1, out=str(out))).run()
        read = s["readbacks"]
        assert read["read"] > 0 and (read["inconclusive"] > 0) is inconclusive, (backend, read)
        assert read["read"] <= s["mutants_valid"]
        line = next(x for x in CliRunner().invoke(main, ["status", str(out)]).output.splitlines()
                    if x.startswith("judging"))
        assert f"writes read back ({read['read']}" in line
        assert ("comparison said nothing" in line) is inconclusive, line
