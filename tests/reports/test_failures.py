"""`ufuzz failures list/show` on a real campaign (embedded backend): what triage shows is what was recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufuzz.cli import main
from ufuzz.corpus.campaign import load_campaign
from ufuzz.corpus.store import CorpusStore
from ufuzz.oracles.classes import class_of
from ufuzz.reports.failures import failure_rows, failure_views, group_by_cause, group_by_class


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def camp(small_campaign):
    return Path(small_campaign.config.out)


@pytest.fixture(scope="module")
def data(camp):
    return load_campaign(camp)


def test_list_by_key_is_the_systems_failures_in_discovery_order(camp, data):
    rows = json.loads(invoke("failures", "list", camp, "--json").output)
    mine = [f for f in data.failures if f.origin == "mutant" and f.counts]
    assert [r["key"] for r in rows] == [f.failure_key for f in mine]
    assert all(r["cause"] == f.cause_key for r, f in zip(rows, mine))
    text = invoke("failures", "list", camp, "--by", "key").output
    assert text.splitlines()[-1] == f"{len(rows)} unique failures, {len({r['cause'] for r in rows})} causes"
    # a person reads causes first: the table's default is one row per cause, each with an example to show
    table = invoke("failures", "list", camp).output.splitlines()
    assert table[-1] == f"{len({r['cause'] for r in rows})} causes, {len(rows)} unique failures"
    assert table[0].split()[:2] == ["cause", "operator"] and len(table) == len({r["cause"] for r in rows}) + 3
    every = json.loads(invoke("failures", "list", camp, "--json", "--all").output)
    assert len(every) == len(data.failures) >= len(rows)
    assert {r["origin"] for r in every} - {"mutant"} <= {"baseline", "reader"}


def test_list_by_cause_groups_every_failure_once(camp, data):
    rows = failure_rows(data)
    groups = json.loads(invoke("failures", "list", camp, "--by", "cause", "--json").output)
    assert sum(g["unique"] for g in groups) == len(rows)
    assert sorted(k for g in groups for k in g["keys"]) == sorted(r["key"] for r in rows)
    assert [g["unique"] for g in groups] == sorted((g["unique"] for g in groups), reverse=True)
    for g in groups:
        members = [r for r in rows if r["key"] in g["keys"]]
        assert {(r["operator"], r["kind"], r["stage"], r["cause"]) for r in members} == \
            {(g["operator"], g["kind"], g["stage"], g["cause"])}
    assert group_by_cause(rows) == groups


def test_list_by_class_groups_causes_into_behaviours(camp, data):
    rows = failure_rows(data)
    classes = json.loads(invoke("failures", "list", camp, "--by", "class", "--json").output)
    assert classes == group_by_class(rows) and classes
    assert sum(c["unique"] for c in classes) == len(rows)
    # every cause in exactly one class, and the class is the one its operator, level and kind give
    assert sorted(x for c in classes for x in c["causes"]) == sorted({r["cause"] for r in rows})
    for r in rows:
        assert r["class"] == class_of(r["operator"], r["stage"], r["kind"]).id
    assert [len(c["causes"]) for c in classes] == sorted((len(c["causes"]) for c in classes), reverse=True)
    text = invoke("failures", "list", camp, "--by", "class").output.splitlines()
    assert text[0].split()[:4] == ["class", "causes", "unique", "seen"]
    assert text[-1] == (f"{len(classes)} behaviour classes, {len({r['cause'] for r in rows})} causes, "
                        f"{len(rows)} unique failures")
    status = json.loads(invoke("status", camp, "--json").output)
    assert status["classes"] == len(classes)
    assert {c["class"]: (c["causes"], c["unique"]) for c in status["behaviour_classes"]} == \
        {c["class"]: (len(c["causes"]), c["unique"]) for c in classes}
    shown = invoke("status", camp).output
    assert f"({status['causes']} causes, {len(classes)} behaviour classes)" in shown
    assert all(c["title"] in shown for c in classes)


def test_list_filters(camp, data):
    rows = failure_rows(data)
    op = rows[0]["operator"]
    got = json.loads(invoke("failures", "list", camp, "--operator", op, "--json").output)
    assert got == [r for r in json.loads(invoke("failures", "list", camp, "--json").output) if r["operator"] == op]
    kind = rows[0]["kind"]
    assert {r["kind"] for r in json.loads(invoke("failures", "list", camp, "--kind", kind, "--json").output)} == {kind}
    assert not {r["stage"] for r in rows} & {"post-selection"}
    none = json.loads(invoke("failures", "list", camp, "--level", "post-selection", "--json").output)
    assert none == []  # a level no failure of this campaign has: an empty list
    typo = CliRunner().invoke(main, ["failures", "list", str(camp), "--level", "no-such-level"])
    assert typo.exit_code == 2 and "--level" in typo.output  # a level no failure can have: bad input


def test_a_recorded_operator_filters_where_its_plugin_is_not_installed(camp, data, monkeypatch):
    """A campaign opened where an operator plugin of its is missing (or broken): what it recorded still filters."""
    from ufuzz.operators import registry

    def broken(*a, **kw):
        raise ImportError("a broken operator plugin")

    monkeypatch.setattr(registry, "names", broken)
    op = failure_rows(data)[0]["operator"]
    got = CliRunner().invoke(main, ["failures", "list", str(camp), "--operator", op, "--json"])
    assert got.exit_code == 0 and {r["operator"] for r in json.loads(got.output)} == {op}
    typo = CliRunner().invoke(main, ["failures", "list", str(camp), "--operator", "nosuchop"])
    assert typo.exit_code == 2 and op in typo.output


def test_show_is_what_the_store_recorded(camp, data):
    f = next(f for f in data.failures if f.origin == "mutant" and f.counts)
    view = json.loads(invoke("failures", "show", camp, f.failure_key[:8], "--json").output)
    assert (view["key"], view["kind"], view["stage"], view["operator"]) == (f.failure_key, f.kind, f.stage, f.operator)
    store = CorpusStore(data.url)
    try:
        recs = store.executions(data.campaign_id, case_id=f.case_id)
    finally:
        store.close()
    ex = next(r for r in recs if r.seq == view["mutant"]["execution"]["seq"]).execution
    top = view["mutant"]["execution"]["top"]
    assert [t["id"] for t in top] == ex.top_ids and [t["text"] for t in top] == ex.top_texts
    assert all(t["native_id"] is None for t in top)  # the embedded backend has no ids of its own
    assert {t["id"] for t in top if "offending" in t["marks"]} <= set(view["offending"])
    ref = data.references[f.case_id]
    assert view["mutant"]["reference"] == ref.to_dict()
    assert {t["id"] for t in top if "supporting" in t["marks"]} == set(ex.top_ids) & set(ref.supporting)
    mutant = data.mutants[f.case_id]
    assert view["parent"]["id"] == mutant.parent_id and view["mutant"]["query"] == mutant.query.text
    own = mutant.ops[len(data.mutants[mutant.parent_id].ops):] if mutant.parent_id in data.mutants else mutant.ops
    assert [o["op"] for o in view["state_change"]] == [o.op for o in own]
    text = invoke("failures", "show", camp, f.failure_key[:8]).output
    for needle in (f.failure_key, f"{f.stage}:{f.kind}", mutant.query.text, f"ufuzz replay {camp} --key",
                   "ufuzz minimise"):
        assert needle in text


def test_every_view_builds(data, camp):
    views = failure_views(data, campaign_dir=camp)
    assert len(views) == len(data.failures)
    assert all(v["mutant"]["execution"] is not None for v in views if v["origin"] == "mutant")


def test_show_bad_input(camp):
    r = invoke("failures", "show", camp, "zzzz")
    assert r.exit_code == 2 and "no failure with key 'zzzz'" in r.output
    key = json.loads(invoke("failures", "list", camp, "--json").output)[0]["key"]
    r = invoke("failures", "show", camp, key, "--reproducer", "x.py")
    assert r.exit_code == 2 and "needs an HTTP backend" in r.output
    r = invoke("failures", "list", Path(camp) / "nope")
    assert r.exit_code == 2 and "no such campaign directory" in r.output


def test_evidence_says_where_the_supporting_memories_stood(data, camp):
    """Triage: each side's best supporting memory (rank, score, lead over the last retrieved) and, for a stale
    ranking, the offending memory above it — read off the same recorded top-k the page lists."""
    views = failure_views(data, campaign_dir=camp)
    seen_stale = seen_missing = False
    for v in views:
        for side in ("parent", "mutant"):
            ex, e = v[side].get("execution") if v[side].get("id") else None, v["evidence"][side]
            if v[side].get("id") is None:
                assert e is None
                continue
            if not ex or not ex["top"] or not (v[side]["reference"] or {}).get("supporting"):
                assert e["status"] != "ok" and e["rank"] is None
                continue
            top = ex["top"]
            sup = [t for t in top if "supporting" in t["marks"]]
            assert e["status"] == "ok" and e["retrieved"] == len(top)
            if not sup:
                assert e["rank"] is None and e["lead"] is None
                continue
            assert (e["rank"], e["score"]) == (sup[0]["rank"], sup[0]["score"])
            assert e["lead"] == pytest.approx(sup[0]["score"] - top[-1]["score"]) and e["lead"] >= 0
            above = [t for t in top[:sup[0]["rank"] - 1] if "offending" in t["marks"]]
            assert e["offending"] == (above[0]["id"] if above else None)
        if v["origin"] == "mutant" and v["kind"] == "stale_ranked_above_valid" and v["evidence"]["mutant"]["rank"]:
            seen_stale = True
            assert v["evidence"]["mutant"]["offending_by"] >= 0
            assert f"the offending {v['evidence']['mutant']['offending']}" in \
                invoke("failures", "show", camp, v["key"][:12]).output
        if v["origin"] == "mutant" and v["kind"] == "missing_evidence" and v["evidence"]["parent"]:
            seen_missing = True
            assert v["evidence"]["mutant"]["rank"] is None  # the mutant lost it: not among those retrieved
            assert f"rank {v['evidence']['parent']['rank']} of" in invoke("failures", "show", camp, v["key"][:12]).output
    assert seen_stale and seen_missing


def test_evidence_never_reads_as_lost_where_there_was_none_to_find():
    """An abstaining reference (nothing supports it), a backend error and hidden retrieval each say so, rather
    than "not among those retrieved" — which would read as evidence lost."""
    from ufuzz.reports.failures import _evidence_at, _evidence_words

    top = [{"rank": 1, "id": "m1", "score": 0.9, "marks": ["offending"]},
           {"rank": 2, "id": "m2", "score": 0.5, "marks": []}]
    abstains = {"id": "x1", "reference": {"abstain": True, "supporting": []}, "execution": {"top": top}}
    lost = {"id": "x2", "reference": {"supporting": ["m9"]}, "execution": {"top": top}}
    error = {"id": "x3", "reference": {"supporting": ["m1"]}, "execution": {"top": [], "error": "boom"}}
    hidden = {"id": "x4", "reference": {"supporting": ["m1"]}, "execution": {"top": []}}
    assert _evidence_at(abstains)["status"] == "no_supporting"
    assert "names no supporting memory" in _evidence_words(_evidence_at(abstains))
    assert _evidence_words(_evidence_at(lost)) == "supporting memories not among the 2 retrieved"
    assert "backend failed" in _evidence_words(_evidence_at(error))
    assert "nothing retrieved" in _evidence_words(_evidence_at(hidden))
    assert _evidence_at({"id": None}) is None


def test_a_tie_with_the_offending_memory_says_why_it_fails():
    """A superseded version 0.0002 above its replacement reads as a tie, and says why a tie fails (recency must
    decide it); a clear lead reads as a margin."""
    from ufuzz.reports.failures import _evidence_at, _evidence_words

    def case(stale: float) -> dict:
        top = [{"rank": 1, "id": "old", "score": stale, "marks": ["offending"]},
               {"rank": 2, "id": "new", "score": 0.6342, "marks": ["supporting"]},
               {"rank": 3, "id": "x", "score": 0.5, "marks": []}]
        return {"id": "x1", "reference": {"supporting": ["new"]}, "execution": {"top": top}}

    tied = _evidence_words(_evidence_at(case(0.6344)))
    assert "tied with the offending old (0.0002 above" in tied and "newer" in tied
    assert _evidence_words(_evidence_at(case(0.65))).endswith("0.016 below the offending old")


def test_memories_an_update_wrote_are_not_marked_unknown(data, camp):
    """A memory the case's own recipe wrote (an update's new version) is a memory of the case, not text the
    product returned under an id nobody wrote: only a stranger is marked unknown."""
    views = failure_views(data, campaign_dir=camp)
    written = 0
    for v in views:
        for side in ("parent", "mutant"):
            ex = (v.get(side) or {}).get("execution")
            for item in (ex or {}).get("top", []):
                if "~u" in item["id"]:  # an updated version, written by a recipe
                    written += 1
                assert "unknown" not in item["marks"], (v["key"], side, item)
    assert written > 0  # the shared campaign's update failures retrieve updated versions


def test_a_parent_served_another_cases_execution_of_its_question_is_still_shown(camp, tmp_path):
    """A parent asking what another case already asked on the same state is served that case's cached execution,
    and nothing is recorded under its own id: `failures show` said "(no recorded execution)" and no evidence line
    for a Graphiti failure on LoCoMo whose seed question a sibling target change had asked first."""
    import shutil
    import sqlite3

    copy = tmp_path / "c"
    shutil.copytree(camp, copy)
    rows = json.loads(invoke("failures", "list", str(copy), "--json").output)
    [view] = failure_views(load_campaign(copy), [rows[0]["key"]], campaign_dir=copy)
    parent = view["parent"]
    assert parent["id"] is not None and parent["execution"] is not None
    with sqlite3.connect(copy / "corpus.sqlite") as db:  # the parent's question, recorded under another case
        db.execute("UPDATE executions SET case_id = 'x-some-other-case' WHERE case_id = ?", (parent["id"],))
    [again] = failure_views(load_campaign(copy), [rows[0]["key"]], campaign_dir=copy)
    assert again["parent"]["execution"] is not None
    assert [t["id"] for t in again["parent"]["execution"]["top"]] == [t["id"] for t in parent["execution"]["top"]]
    assert again["evidence"] == view["evidence"]
