"""Importers on files in the formats the benchmarks publish: MEME (the Hugging Face episode files and the
project page's walkthrough file), HaluMem (Halu-Medium/Halu-Long JSONL). What each file's updates, deletions
and cascades become in provenance and references, malformed records naming file/record/field, and a short
campaign on an imported suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.operator_kit import state_moves
from ufuzz.cli import main
from ufuzz.model import Provenance, SeedSuite
from ufuzz.seeds.importers import SeedImportError, import_file
from ufuzz.seeds.io import load_suite, write_suite

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
MEME = FIX / "meme_filler_sample.json"
MEME_WALK = FIX / "meme_walkthrough_sample.json"
HALU_LONG = FIX / "halumem_long_sample.jsonl"


def agree(suite: SeedSuite) -> None:
    assert suite.seeds
    for seed in suite.seeds:
        derived = Provenance.of(suite.checkpoint_of(seed)).reference_for(seed.query.id, seed.query.fields)
        assert suite.reference_of(seed).with_(rubric=None) == derived, seed.id


def seed_ref(suite: SeedSuite, qid: str):
    [seed] = [s for s in suite.seeds if s.query.id == qid]
    return seed, suite.reference_of(seed)


# -- MEME: the dataset files ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def meme():
    return import_file("meme", MEME)


def test_meme_probes_get_their_own_checkpoints(meme):
    s = meme.suite
    assert sorted(s.checkpoints) == ["meme-cp:pl_902:after", "meme-cp:sw_901:after", "meme-cp:sw_901:before"]
    before, after = s.checkpoints["meme-cp:sw_901:before"], s.checkpoints["meme-cp:sw_901:after"]
    # before_questions.position_after_session = 5: sessions 0..5 (filler included), the rest later
    assert {m.id.split(":")[0] for m in before.memories} == {f"s{i}" for i in range(6)}
    assert len(before.memories) == 27 and len(after.memories) == 34
    m = after.memory("s3:1")
    assert m.text == "User: Update: our build tool is Zentrix Build now. How do we migrate the configs?"
    assert m.timestamp == "2023-04-06T16:30:01"  # session timestamp + turn index in seconds
    assert after.memory("s0:0").metadata["session_type"] == "filler"
    assert all(set(x.metadata) <= {"source", "episode", "session", "session_type", "session_id"}
               for x in after.memories)  # no gold fact, answer or task leaks into what the backend stores


def test_meme_history_becomes_provenance(meme):
    after = {(f.attribute, f.value): f for f in meme.suite.checkpoints["meme-cp:sw_901:after"].facts}
    # Tracking: the earlier build tool is superseded history, even though its list question is not a seed
    assert not after[("build tool", "Quarnel Make")].valid and after[("build tool", "Zentrix Build")].valid
    # Deletion: the value is invalid without successor; the deletion request evidences it too
    assert after[("metrics channel", "#orvex-metrics")].evidence == ("s3:3", "s6:3")
    assert not after[("metrics channel", "#orvex-metrics")].valid
    # Cascade: the pre-declared value holds once the team lead changed, evidenced by both turns
    assert after[("pager recipient", "Ravi Anand")].evidence == ("s4:5", "s6:1")
    assert after[("pager recipient", "Ravi Anand")].valid and not after[("pager recipient", "Ines Moreau")].valid
    # Absence: a dependent without a pre-declared value is no longer trustworthy
    assert not after[("release approver", "Tomas Vik")].valid
    before = {(f.attribute, f.value) for f in meme.suite.checkpoints["meme-cp:sw_901:before"].facts}
    assert ("pager recipient", "Ravi Anand") not in before  # a conditional is no fact before its trigger


def test_meme_references_per_task(meme):
    s = meme.suite
    seed, ref = seed_ref(s, "meme:sw_901:before:0")  # Cas, before the team lead changes
    assert (ref.answer, ref.supporting) == ("Ines Moreau", ("s4:3",))
    assert seed.descriptor.replacement_targets["cascade"] == ("user/team lead",)
    seed, ref = seed_ref(s, "meme:sw_901:after:1")  # Cas after: the cascaded value, the old one stale
    assert (ref.answer, ref.supporting, ref.invalidated) == ("Ravi Anand", ("s4:5", "s6:1"), ("s4:3",))
    assert ref.stale_answers == ("Ines Moreau",)
    # its latest evidence turn does not state the value: no new value to write, no update
    assert not seed.descriptor.value_pool and "update" not in state_moves(seed, s)
    seed, ref = seed_ref(s, "meme:sw_901:after:2")  # Abs: "Uncertain — previously 'Tomas Vik' …"
    assert ref.abstain and ref.invalidated == ("s4:1",) and ref.stale_answers == ("Tomas Vik",)
    assert not seed.query.fields.answerable and seed.descriptor.memory_ops is None
    assert state_moves(seed, s) == {"unrelated_edit"}
    seed, ref = seed_ref(s, "meme:sw_901:after:3")  # Del: "No — explicitly removed"
    assert ref.abstain and ref.invalidated == ("s3:3", "s6:3") and ref.stale_answers == ("#orvex-metrics",)
    seed, ref = seed_ref(s, "meme:sw_901:before:2")  # Del before the deletion: the value, updatable
    assert (ref.answer, ref.supporting) == ("#orvex-metrics", ("s3:3",))
    assert seed.descriptor.memory_ops is None
    seed, ref = seed_ref(s, "meme:sw_901:after:5")  # ER
    assert (ref.answer, ref.supporting) == ("ZX-44-alpha-9", ("s4:7",))
    assert (seed.query.fields.entity, seed.query.fields.attribute) == ("user", "deploy token")
    agree(s)


def test_meme_counts_what_it_cannot_use(meme):
    assert meme.dropped == {"history_list_question": 1, "multi_fact_question": 1, "reference_mismatch": 1,
                            "unknown_task_type": 1, "probe_position_missing": 1}
    assert meme.warnings == {"dependency_edge_malformed": 1, "gold_fact_malformed": 1, "gold_fact_turn_repaired": 1,
                             "gold_fact_unknown_turn": 1, "probe_position_missing": 1, "question_malformed": 1,
                             "session_timestamp_unparseable": 1, "turn_malformed": 1}
    cp = meme.suite.checkpoints["meme-cp:pl_902:after"]
    # conveyed_in_turn 9 is out of range: the one user turn stating the value is taken (counted as repaired)
    assert [f.evidence for f in cp.facts if f.attribute == "dentist"] == [("s0:3",)]
    assert cp.memory("s1:0").timestamp == "2023-05-01T11:00:00"  # unparseable date: an hour after the last
    assert {s.query.id for s in meme.suite.seeds if s.checkpoint_id == cp.id} == {"meme:pl_902:after:1"}


def test_meme_suite_roundtrips(meme, tmp_path):
    back = load_suite(write_suite(meme.suite, tmp_path / "meme.jsonl"))
    assert back.references == meme.suite.references
    assert [x.to_dict() for x in back.seeds] == [x.to_dict() for x in meme.suite.seeds]


# -- MEME: the walkthrough file --------------------------------------------------------------------------
def test_meme_walkthrough_file_gives_the_same_suite(meme):
    walk = import_file("meme", MEME_WALK)
    assert walk.dropped == {"history_list_question": 1, "multi_fact_question": 1}
    assert not walk.warnings
    mine = {k: v for k, v in meme.suite.checkpoints.items() if k.startswith("meme-cp:sw_901")}
    assert walk.suite.checkpoints.keys() == mine.keys()
    for k, cp in walk.suite.checkpoints.items():  # metadata differ: the walkthrough has no session_id
        assert [(m.id, m.text, m.timestamp) for m in cp.memories] == \
            [(m.id, m.text, m.timestamp) for m in mine[k].memories]
        assert cp.facts == mine[k].facts
    refs = {k: v for k, v in meme.suite.references.items() if k.startswith("meme:sw_901")}
    assert walk.suite.references == refs  # questions de-duplicated over systems; their answers never read
    agree(walk.suite)


# -- HaluMem ---------------------------------------------------------------------------------------------------
def test_halumem_long_sessions_interference_and_updates():
    res = import_file("halumem", HALU_LONG)
    s = res.suite
    assert res.warnings == {"generated_qa_session_skipped": 1, "interference_point_excluded": 1,
                            "abstractive_answer": 1}
    assert not res.dropped
    cp = s.checkpoints["halumem-cp:u-long-7:s2"]
    assert [m.id for m in cp.memories] == ["s0:m1", "s0:m3", "s2:m1"]  # no planted point, no QA filler
    seed, ref = seed_ref(s, "halumem:u-long-7:s2:q0")  # Dynamic Update citing old and new point
    assert (ref.answer, ref.supporting, ref.invalidated) == ("Ruiz Vet Care", ("s2:m1",), ("s0:m1",))
    assert seed.query.fields.entity == "Ana Ruiz" and seed.descriptor.memory_ops is None
    seed, ref = seed_ref(s, "halumem:u-long-7:s2:q1")  # Memory Conflict: an answer written anew
    assert ref.answer == "She drinks green tea, not coffee." and "update" not in state_moves(seed, s)
    seed, ref = seed_ref(s, "halumem:u-long-7:s2:q2")  # Memory Boundary
    assert ref.abstain and not seed.query.fields.answerable
    agree(s)


# -- malformed records ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt, content, needle", [
    ("meme", [{"episode_id": "sw_1", "sessions": "none"}], "record 0 (sw_1): field 'sessions' must be list, got str"),
    ("meme", [{"episode_id": "sw_1", "sessions": [{"timestamp": "2023/03/01 (Wed) 09:00"}]}],
     "record 0 (sw_1): missing required field 'sessions[0].conversation'"),
    ("meme", [{"episode_id": "sw_1", "sessions": [{"conversation": []}], "after_questions": []}],
     "record 0 (sw_1): field 'after_questions' must be object, got list"),
    ("meme", [{"episode_id": "sw_1", "sessions": [{"conversation": []}],
               "after_questions": {"position_after_session": 4, "questions": []}}],
     "record 0 (sw_1): field 'after_questions.position_after_session' is 4, but the episode has sessions 0..0"),
    ("meme", [{"episode_id": "sw_1", "sessions": [{"conversation": [], "gold_facts": {"entity": "x"}}]}],
     "record 0 (sw_1): field 'sessions[0].gold_facts' must be list, got dict"),
    ("meme", {"episode": {"tag": "sw_1"}, "sessions": [], "results": {"bm25": {"after": "n/a"}}},
     "record 0: field 'results.bm25.after' must be list, got str"),
    ("meme", {"episode": {"root": "team_lead"}, "sessions": [], "results": {}},
     "record 0: missing required field 'episode.tag' (or 'episode.id')"),
    ("halumem", {"uuid": "u1", "sessions": [{"memory_points": [], "questions": {"q": 1}}]},
     "record 0 (u1): field 'sessions[0].questions' must be list, got dict"),
    ("halumem", {"uuid": "u1", "sessions": [{"questions": []}]},
     "record 0 (u1): missing required field 'sessions[0].memory_points'"),
    ("memops", {"episodes": [{"episode_id": "e", "turns": [], "operations": {}, "questions": []}]},
     "record 0 (e): field 'operations' must be list, got dict"),
])
def test_malformed_records_name_file_record_and_field(tmp_path, fmt, content, needle):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(SeedImportError) as info:
        import_file(fmt, path)
    assert str(info.value) == f"{path}: {needle}"


def test_cli_rejects_a_malformed_meme_file_without_traceback(tmp_path):
    bad = tmp_path / "episodes.json"
    bad.write_text(json.dumps([{"episode_id": "pl_1", "sessions": [{"conversation": "hi"}]}]), encoding="utf-8")
    out = tmp_path / "seeds.jsonl"
    r = CliRunner().invoke(main, ["seeds", "import", "meme", str(bad), "-o", str(out)])
    assert r.exit_code != 0
    assert f"{bad}: record 0 (pl_1): field 'sessions[0].conversation' must be list, got str" in r.output
    assert "Traceback" not in r.output and not out.exists()


# -- a campaign on an imported suite ---------------------------------------------------------------------
def test_short_campaign_on_imported_meme_suite(tmp_path):
    seeds, out = tmp_path / "meme.jsonl", tmp_path / "camp"
    runner = CliRunner()
    r = runner.invoke(main, ["seeds", "import", "meme", str(MEME), "-o", str(seeds)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["run", "--seeds", str(seeds), "--budget", "80", "--seed", "3", "--out", str(out),
                             "--quiet", "--opt", "retrieval=bm25"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "budget_spent" and summary["executions"] == 80
    assert summary["errors"] == 0
    assert summary["mutants_valid"] > 0


# -- property: the MEME replay agrees with a plain model of the benchmark's rules ---------------------------
_VALUES = ("Ada Park", "Bo Lind", "Cy Moss")
_EVENT = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(["team_lead", "reviewer"]), st.sampled_from(_VALUES)),
    st.tuples(st.just("delete"), st.sampled_from(["team_lead", "reviewer"]), st.sampled_from(_VALUES)),
    st.tuples(st.just("cond"), st.just("reviewer"), st.sampled_from(_VALUES)))


def _model(events):
    """The rules as MEME states them: a new value supersedes, a delete request of the current value removes
    it, a change of the team lead hands the reviewer slot its pre-declared value or leaves it unknown."""
    cur, pending = {}, {}
    for kind, slot, value in events:
        if kind == "cond":
            pending[slot] = value
        elif kind == "delete":
            if cur.get(slot) == value:
                del cur[slot]
        elif cur.get(slot) != value:
            changed = slot in cur
            cur[slot] = value
            if changed and slot == "team_lead":
                if "reviewer" in pending:
                    cur["reviewer"] = pending.pop("reviewer")
                else:
                    cur.pop("reviewer", None)
    return cur


def _episode_file(events):
    text = {"set": "The {s} is {v}.", "delete": "The {s} is {v}. Please delete that from your memory.",
            "cond": "If the team lead changes, the {s} will be {v}."}
    sessions = []
    for i, (kind, slot, value) in enumerate(events):
        line = text[kind].format(s=slot.replace("_", " "), v=value)
        sessions.append({"session_id": f"e{i}", "type": "evidence", "timestamp": f"2023/01/{i + 1:02d} (Sun) 10:00",
                         "conversation": [{"role": "user", "content": line}, {"role": "assistant", "content": "Noted."}],
                         "gold_facts": [{"entity": slot, "value": value, "fact_text": line, "conveyed_in_turn": 0,
                                         "notes": "Cascade-D: future value pre-declaration" if kind == "cond" else None}]})
    questions = [{"task_type": tag, "question": f"Who is the {slot.replace('_', ' ')}? ({tag})", "gold_answer": gold,
                  "entity": [slot]} for slot in ("team_lead", "reviewer") for tag, gold in
                 [("ER", v) for v in _VALUES] + [("Del", "No — explicitly removed"), ("Abs", "Uncertain")]]
    return [{"episode_id": "p", "root": "team_lead", "sessions": sessions,
             "dependency_edges_used": [{"source": "team_lead", "target": "reviewer", "hop": 1}],
             "after_questions": {"position_after_session": len(sessions) - 1, "questions": questions}}]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_EVENT, min_size=1, max_size=8))
def test_meme_replay_agrees_with_the_rules(tmp_path, events):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_episode_file(events)), encoding="utf-8")
    suite = import_file("meme", path).suite
    expected = _model(events)
    got = {}
    for seed in suite.seeds:
        ref = suite.reference_of(seed)
        slot = seed.query.fields.attribute.replace(" ", "_")
        if not ref.abstain:
            assert got.setdefault(slot, ref.answer) == ref.answer
        else:
            assert slot not in expected and ref.invalidated  # only a value the history removed abstains
    for slot in ("team_lead", "reviewer"):
        assert got.get(slot) == expected.get(slot), (slot, events)
    if suite.seeds:
        agree(suite)
