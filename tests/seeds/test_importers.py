"""Seed importers: each format on its fixture (seeds, quirk warnings, drops), the real LongMemEval subset,
reference agreement with provenance, JSONL round trip and clear errors for malformed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.operator_kit import state_moves
from ufuzz.model import Provenance, Rubric, SeedSuite
from ufuzz.seeds.importers import SeedImportError, import_file, importers
from ufuzz.seeds.importers.fields import (
    date_of,
    detect_scope,
    find_entity,
    head_attribute,
    heuristic_fields,
    mentions_word,
    stated_forms,
    value_forms,
)
from ufuzz.seeds.io import SeedFileError, load_suite, write_suite

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
REPO = Path(__file__).resolve().parents[2]
SHARED = next((p / "shared" for p in (REPO.parent, REPO.parent.parent) if (p / "shared").is_dir()), REPO / "shared")
LME_SUBSET = SHARED / "datasets" / "longmemeval" / "longmemeval_oracle_subset.json"


def assert_references_agree(suite: SeedSuite) -> None:
    """Every stored reference is exactly what provenance derives for the seed's fields, plus what the
    benchmark says and provenance cannot know: its judging rubric, the answer form, decoy evidence (more
    invalidated ids) and answers it calls wrong (more stale answers)."""
    assert suite.seeds
    for seed in suite.seeds:
        cp = suite.checkpoint_of(seed)
        derived = Provenance.of(cp).reference_for(seed.query.id, seed.query.fields)
        ref = suite.reference_of(seed)
        assert set(derived.invalidated) <= set(ref.invalidated), seed.id
        assert set(derived.stale_answers) <= set(ref.stale_answers), seed.id
        bare = ref.with_(rubric=None, answer_form=None, invalidated=derived.invalidated,
                         stale_answers=derived.stale_answers)
        assert bare == derived, seed.id
        assert seed.query.template is None and seed.query.form == "free"


def roundtrip(suite: SeedSuite, tmp_path: Path) -> SeedSuite:
    back = load_suite(write_suite(suite, tmp_path / "suite.jsonl"))
    assert [s.to_dict() for s in back.seeds] == [s.to_dict() for s in suite.seeds]
    assert {k: v.to_dict() for k, v in back.checkpoints.items()} == {k: v.to_dict() for k, v in suite.checkpoints.items()}
    assert back.references == suite.references
    return back


def by_text(suite: SeedSuite, text: str):
    [seed] = [s for s in suite.seeds if s.query.text == text]
    return seed, suite.reference_of(seed)


# -- LoCoMo ---------------------------------------------------------------------------------------------
def test_locomo_fixture_counts_quirks_and_drops(tmp_path):
    res = import_file("locomo", FIX / "locomo_sample.json")
    s = res.suite
    assert len(s.checkpoints) == 2 and len(s.seeds) == 7
    assert res.warnings == {"evidence_split": 1, "evidence_malformed": 1, "evidence_repaired": 1,
                            "evidence_unknown_id": 1, "evidence_in_missing_session": 1, "date_without_session": 1,
                            "session_date_missing": 1,
                            "duplicate_dia_id": 1, "turn_malformed": 1}
    # conflicting answer for "identity", a question naming no speaker, evidence only to a missing turn (in a
    # session the file does not hold: one such id is a slip, not a truncated file), and an inference ("Would
    # Caroline likely pursue writing …? Likely no; …": no failure may rest on it)
    assert res.dropped == {"field_conflict": 1, "no_fields": 1, "no_evidence": 1, "speculative_answer": 1}
    assert_references_agree(s)
    roundtrip(s, tmp_path)


def test_locomo_references_match_the_benchmark():
    s = import_file("locomo", FIX / "locomo_sample.json").suite
    raw = json.loads((FIX / "locomo_sample.json").read_text())
    cp = s.checkpoints["locomo-cp:conv-1"]
    assert len(cp.memories) == 15
    d15 = cp.memory("D1:5")
    assert d15.text.startswith("Caroline: The transgender") and "[image: a photo of a rainbow flag" in d15.text
    assert d15.timestamp == "2023-05-08T13:56:04"
    seed, ref = by_text(s, "What activities does Melanie partake in?")
    assert ref.answer == raw[0]["qa"][2]["answer"]
    assert set(ref.supporting) == {"D1:8", "D2:1", "D2:4"}  # "D1:8; D2:1" split
    seed, ref = by_text(s, "How many children does Melanie have?")
    assert (ref.answer, ref.supporting) == ("3", ("D2:3",))  # int answer, bare "D" dropped
    assert seed.query.fields.entity == "Melanie" and seed.query.fields.attribute == "number of children"
    # "three" in the turn: no update (it would have to rewrite "3"), but a delete finds every carrier; the seed names
    # no operator (each decides from the seed: one added later applies too)
    assert ref.answer_form == "abstractive" and seed.descriptor.memory_ops is None
    assert not seed.descriptor.value_pool and state_moves(seed, s) == {"delete", "unrelated_edit"}
    assert not [x for x in s.seeds if x.query.text.startswith("Would Caroline likely")]  # speculative: dropped
    seed, ref = by_text(s, "What did Melanie realize after the charity race?")
    assert ref.abstain and not seed.query.fields.answerable and seed.descriptor.memory_ops is None
    assert state_moves(seed, s) == {"unrelated_edit"}  # nothing to update or delete: no answer in the state
    # adversarial: its evidence is a decoy and its answer no stale one (it is Caroline's, not out of date); asked
    # of Caroline (who said it) it has that answer
    assert (ref.invalidated, ref.stale_answers) == (("D2:5",), ())
    assert seed.descriptor.replacement_targets["entity"] == ("Caroline",)
    assert seed.metadata == {"category": 5, "category_name": "adversarial"}
    seed, ref = by_text(s, "What is Caroline's identity?")
    assert ref.answer == "Transgender woman"  # the first of the two conflicting items wins
    assert ref.answer_form == "extractive" and seed.descriptor.memory_ops is None
    assert state_moves(seed, s) == {"delete", "unrelated_edit"}  # "Transgender woman" is in no class: no new value
    # Melanie has no identity: no target change to her, but asking her is a misattribution
    assert "entity" not in seed.descriptor.replacement_targets
    assert seed.descriptor.replacement_targets["speaker"] == ("Melanie",)
    for name in seed.descriptor.absent_targets["entity"]:
        assert not any(name.lower() in m.text.lower() for m in cp.memories)
    seed, ref = by_text(s, "When did Caroline go to the LGBTQ support group?")
    # a date the turn tells as "yesterday": an update dates it anew (never after the conversation's end), a delete
    # removes every turn telling it in other words (key-word carriers): every state move
    assert ref.answer_form == "abstractive" and seed.descriptor.memory_ops is None
    assert state_moves(seed, s) == {"update", "delete", "unrelated_edit"}
    end = max(m.timestamp for m in cp.memories)[:10]
    assert seed.descriptor.value_pool and all(date_of(v).isoformat() <= end for v in seed.descriptor.value_pool)
    # conv-2: session 2 has no date; it is placed after session 1 rather than dropped
    cp2 = s.checkpoints["locomo-cp:conv-2"]
    assert cp2.memory("D2:1").timestamp > cp2.memory("D1:3").timestamp
    assert cp2.memory("D1:3").text == "Jon: I'm going to open my own dance studio."  # duplicate skipped


# -- LongMemEval -------------------------------------------------------------------------------------------
def _lme_record(qid="q1", qtype="single-session-user", question="What is the name of my cat?",
                answer="Luna", has_answer=True, answer_sessions=("s1",)):
    return {"question_id": qid, "question_type": qtype, "question": question, "answer": answer,
            "question_date": "2023/05/30 (Tue) 10:00",
            "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 09:00"],
            "haystack_session_ids": ["s1", "s2"],
            "haystack_sessions": [
                [{"role": "user", "content": "My cat Luna loves boxes.", "has_answer": has_answer},
                 {"role": "assistant", "content": "Cats do love boxes!"}],
                [{"role": "user", "content": "Any tips for a tidy desk?"}]],
            "answer_session_ids": list(answer_sessions)}


def test_longmemeval_fixture_memories_fallback_and_drops(tmp_path):
    recs = [_lme_record(), _lme_record("q2", has_answer=False), _lme_record("q3_abs", answer="You did not say."),
            _lme_record("q4", qtype="single-session-preference", question="Any tips?"),
            _lme_record("q5", question="Which event happened first, the parade or the meeting?")]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(recs))
    res = import_file("longmemeval", path)
    s = res.suite
    assert len(s.seeds) == 3
    assert res.warnings == {"supporting_from_answer_sessions": 1}
    assert res.dropped == {"preference_rubric": 1, "no_fields": 1}
    cp = s.checkpoints["lme-cp:q1"]
    assert [m.id for m in cp.memories] == ["s1:0", "s1:1", "s2:0"]
    assert cp.memory("s1:0").timestamp == "2023-05-20T02:21:00" and cp.memory("s1:0").text.startswith("User: ")
    assert all("has_answer" not in m.metadata for m in cp.memories)  # the reference does not leak
    ref = s.references["lme:q1"]
    assert (ref.answer, ref.supporting) == ("Luna", ("s1:0",))
    assert s.seeds[0].query.fields.entity == "user" and s.seeds[0].query.fields.attribute == "name: cat"
    assert {seed.query.asked_at for seed in s.seeds} == {"2023-05-30T10:00:00"}  # the question date, kept
    assert set(s.references["lme:q2"].supporting) == {"s1:0", "s1:1"}  # all turns of the answer session
    assert s.references["lme:q3_abs"].abstain
    assert_references_agree(s)
    roundtrip(s, tmp_path)


def test_longmemeval_support_is_completed_with_the_answer_as_the_marked_turn_writes_it(tmp_path):
    """Hand audit: "18" is told "on my 18th birthday" in the marked turn; a later turn of the session saying the
    same ("the silver necklace my grandma gave me on my 18th birthday") answers "how old was I" as well, and
    was not counted as support because only the bare "18" was looked for."""
    rec = _lme_record(question="How old was I when my grandma gave me the silver necklace?", answer="18")
    rec["haystack_sessions"][0] = [
        {"role": "user", "content": "My grandma gave me a silver necklace on my 18th birthday.", "has_answer": True},
        {"role": "assistant", "content": "What a lovely gift!"},
        {"role": "user", "content": "I'll list the silver necklace my grandma gave me on my 18th birthday first."},
        {"role": "user", "content": "I was 18 floors up in the hotel."}]  # the bare number: not how it was told
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([rec]))
    res = import_file("longmemeval", path)
    assert res.suite.references["lme:q1"].supporting == ("s1:0", "s1:2")
    assert res.warnings.get("supporting_completed") == 1
    assert stated_forms("18") == ("18", "eighteen", "18th", "eighteenth")
    assert stated_forms("two") == ("two", "2", "2nd", "second") and stated_forms("Luna") == ("Luna",)
    assert value_forms("18") == ("18", "eighteen")  # rewriting a value never takes an ordinal for it


def test_longmemeval_support_is_completed_whatever_quotation_marks_the_turn_uses(tmp_path):
    """Hand audit: the answer "the 'Walk for Hunger' charity event" is echoed by a turn that writes the name in
    double quotes; it states the answer as well and counts as support."""
    rec = _lme_record(question="What charity event did I take part in?",
                      answer="the 'Walk for Hunger' charity event")
    rec["haystack_sessions"][0] = [
        {"role": "user", "content": "I took part in the 'Walk for Hunger' charity event.", "has_answer": True},
        {"role": "assistant", "content": "Congratulations on completing the \u201cWalk for Hunger\u201d charity "
                                         "event!"},
        {"role": "user", "content": "I also walked to the shop."}]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([rec]))
    res = import_file("longmemeval", path)
    assert res.suite.references["lme:q1"].supporting == ("s1:0", "s1:1")
    assert mentions_word(['he said "Walk for Hunger"'], "'walk for hunger'")
    assert not mentions_word(["Walk for Hungerford"], "Walk for Hunger")


def test_longmemeval_previous_value_support_is_completed_in_its_own_session_after_it_was_told(tmp_path):
    """Hand audit: "What was my previous status?" — the assistant's "Congratulations on … Premier Silver status!"
    right after the user told it says the previous value again and counts; an assistant turn listing "e.g.,
    Premier Silver, Premier Gold" before the user told anything does not (it was counted for an "18th birthday"
    answer too)."""
    rec = _lme_record(qtype="knowledge-update", answer="Premier Silver", answer_sessions=("s1", "s2"),
                      question="What was my previous frequent flyer status before the current one?")
    rec["haystack_sessions"] = [
        [{"role": "user", "content": "What is my frequent flyer status?"},
         {"role": "assistant", "content": "Your status shows there (e.g., Premier Silver, Premier Gold)."},
         {"role": "user", "content": "I just reached Premier Silver status!", "has_answer": True},
         {"role": "assistant", "content": "Congratulations on earning Premier Silver status!"}],
        [{"role": "user", "content": "Now I have Premier Gold status, by the way.", "has_answer": True}]]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([rec]))
    res = import_file("longmemeval", path)
    ref = res.suite.references["lme:q1"]
    assert res.suite.seeds[0].query.fields.scope == "previous"
    assert ref.supporting == ("s1:2", "s1:3") and res.warnings.get("supporting_completed") == 1


def test_longmemeval_real_subset_imports_and_roundtrips(tmp_path):
    if not LME_SUBSET.exists():
        pytest.skip(f"LongMemEval subset not present at {LME_SUBSET}")
    raw = json.loads(LME_SUBSET.read_text())
    res = import_file("longmemeval", LME_SUBSET)
    s = res.suite
    n_pref = sum(r["question_type"] == "single-session-preference" for r in raw)
    assert res.dropped["preference_rubric"] == n_pref
    assert len(s.seeds) + sum(res.dropped.values()) == len(raw)
    assert len(s.seeds) >= 0.8 * (len(raw) - n_pref)
    assert_references_agree(s)
    raw_by = {f"lme:{r['question_id']}": r for r in raw}
    for seed in s.seeds:
        r, ref = raw_by[seed.query.id], s.reference_of(seed)
        assert seed.query.text == r["question"]
        if r["question_id"].endswith("_abs"):
            assert ref.abstain and not seed.query.fields.answerable
            continue
        assert ref.answer == str(r["answer"])
        marked = {f"{sid}:{t}" for sid, sess in zip(r["haystack_session_ids"], r["haystack_sessions"], strict=True)
                  for t, turn in enumerate(sess) if turn.get("has_answer")}
        # the has_answer turns, plus the other turns of the answer's sessions that write the answer verbatim
        # (the assistant repeating it); knowledge updates split them by session date: the asked value supports,
        # a current question's older value is a decoy (invalidated), a previous question's newer value history
        texts = {m.id: m.text for m in s.checkpoint_of(seed).memories}
        extra = set(ref.supporting) - marked
        def q(t: str) -> str:  # any quotation mark for any other ("the 'Walk for Hunger'" / the "Walk for Hunger")
            return t.lower().translate(str.maketrans({c: '"' for c in "'\u2018\u2019\u201c\u201d`"}))
        assert all(q(ref.answer) in q(texts[m]) and m.rsplit(":", 1)[0] in
                   {x.rsplit(":", 1)[0] for x in ref.supporting if x in marked} for m in extra)
        if r["question_type"] == "knowledge-update" and seed.query.fields.scope == "previous":
            assert set(ref.supporting) - extra < marked and not ref.invalidated
        elif r["question_type"] == "knowledge-update":
            assert (set(ref.supporting) - extra) | set(ref.invalidated) == marked
            assert ref.invalidated and seed.query.fields.scope == "current"
        else:
            assert set(ref.supporting) - extra == marked
    prev = s.references["lme:50635ada"]  # "What was my previous frequent flyer status ..."
    assert prev.answer == "Premier Silver" and all(i.startswith("answer_dcd74827_1:") for i in prev.supporting)
    back = roundtrip(s, tmp_path)
    assert len(back.seeds) == len(s.seeds)


# -- MemOps ------------------------------------------------------------------------------------------------
def test_memops_updates_traps_and_deletes(tmp_path):
    res = import_file("memops", FIX / "memops_evidence.json")
    s = res.suite
    assert len(s.seeds) == 5
    assert res.warnings == {"operation_unknown_type": 1, "evidence_unknown_id": 1, "operation_no_evidence": 1}
    # no entity in the weather question; an answer ("data analyst") no operation states
    assert res.dropped == {"no_fields": 1, "reference_mismatch": 1}
    seed, ref = by_text(s, "Where does Dana work now?")
    assert (ref.answer, ref.supporting, ref.invalidated) == ("Globex", ("t3",), ("t1",))
    # an employer is in no class of values: no new one to write; its evidence can be deleted
    assert seed.descriptor.memory_ops is None and state_moves(seed, s) == {"delete", "unrelated_edit"}
    assert seed.descriptor.replacement_targets["recency_trap"] == ("Initech",)
    facts = s.checkpoint_of(seed).facts
    assert [f.value for f in facts if f.attribute == "employer"] == ["Acme", "Globex"]  # history, no Initech
    seed, ref = by_text(s, "Which city does Dana live in?")
    assert (ref.answer, ref.invalidated) == ("Boston", ("t4",))  # the retracted value's memory
    assert "previous" not in seed.descriptor.replacement_targets.get("scope", ())  # Denver never held
    seed, ref = by_text(s, "Where did Dana work before Globex?")
    assert seed.query.fields.scope == "previous" and (ref.answer, ref.invalidated) == ("Acme", ())  # current is no decoy
    seed, ref = by_text(s, "Does Dana still have a pet?")
    assert ref.abstain and ref.invalidated == ("t7",)  # deleted value
    seed, ref = by_text(s, "What is Dana's blood type?")
    assert ref.abstain and seed.query.fields.attribute == "blood type"
    assert_references_agree(s)
    roundtrip(s, tmp_path)


def test_memops_judge_rubrics_survive_write_and_load(tmp_path):
    s = import_file("memops", FIX / "memops_evidence.json").suite
    back = roundtrip(s, tmp_path)
    rubrics = {seed.query.text: back.reference_of(seed).rubric for seed in back.seeds}
    assert rubrics == {
        "Where does Dana work now?": Rubric(("Globex",), ("Acme", "Initech")),
        "Which city does Dana live in?": Rubric(("Boston",), ("Denver",)),
        "Where did Dana work before Globex?": Rubric(("Acme",), ("Globex",)),
        "Does Dana still have a pet?": Rubric((), ("Rufus",)),
        "What is Dana's blood type?": None,  # an empty rubric checks nothing: not kept
    }
    lines = [json.loads(x) for x in (tmp_path / "suite.jsonl").read_text(encoding="utf-8").splitlines()]
    refs = {r["query_id"]: r for r in lines if r["kind"] == "reference"}
    assert refs["memops:ep-1:q4"]["rubric"] == {"must_include": [], "must_not_include": ["Rufus"]}
    assert "rubric" not in refs["memops:ep-1:q5"]  # optional field: absent, as in files written before it


@pytest.mark.parametrize("rubric, field, needle", [
    ("must include Globex", "rubric", "expected an object, got string"),
    ({"must_have": ["Globex"]}, "rubric.must_have", "unknown field"),
    ({"must_include": "Globex"}, "rubric.must_include", "expected an array, got string 'Globex'"),
    ({"must_not_include": [1]}, "rubric.must_not_include[0]", "expected a string, got integer 1"),
])
def test_malformed_rubric_names_file_line_and_field(tmp_path, rubric, field, needle):
    path = write_suite(import_file("memops", FIX / "memops_evidence.json").suite, tmp_path / "suite.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    i = next(i for i, x in enumerate(lines) if json.loads(x)["kind"] == "reference")
    lines[i] = json.dumps({**json.loads(lines[i]), "rubric": rubric})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SeedFileError) as err:
        load_suite(path)
    assert str(err.value).startswith(f"{path}:{i + 1}: {needle}") and err.value.field == field


# -- HaluMem -----------------------------------------------------------------------------------------------
def test_halumem_prefix_checkpoints_and_updates(tmp_path):
    res = import_file("halumem", FIX / "halumem_users.jsonl")
    s = res.suite
    assert len(s.checkpoints) == 2 and len(s.seeds) == 4
    assert res.warnings == {"original_memory_unmatched": 1, "timestamp_unparseable": 1, "evidence_unmatched": 1,
                            "interference_point_excluded": 1}
    assert res.dropped == {"no_evidence": 1, "no_fields": 1}
    first = s.checkpoints["halumem-cp:u-001:s0"]
    # only what was known when the session-0 question was asked, without the planted (interference) point
    assert [m.id for m in first.memories] == ["s0:m1", "s0:m2", "s0:m3"]
    seed, ref = by_text(s, "Where does Martin work?")
    assert seed.query.fields.entity == "Martin Mark" and ref.answer == "Huaxin Consulting"
    seed, ref = by_text(s, "Where does Martin work now?")
    assert (ref.answer, ref.supporting, ref.invalidated) == ("Green Health Foundation", ("s1:m1",), ("s0:m1",))
    seed, ref = by_text(s, "What is the name of Martin's dog?")
    assert ref.abstain
    assert_references_agree(s)
    roundtrip(s, tmp_path)


# -- extractor -----------------------------------------------------------------------------------------------
class TableExtractor:
    """A deterministic extractor: fields from a lookup table, None for anything else."""

    def __init__(self, table):
        self.table, self.calls = table, []

    def extract(self, question, context_snippets):
        self.calls.append((question, list(context_snippets)))
        return self.table.get(question)


def test_extractor_fields_win_and_unknown_falls_back(tmp_path):
    ext = TableExtractor({"What did the kids enjoy?": {"entity": "Melanie", "attribute": "kids' favourite activity",
                                                        "scope": "any", "answerable": True},
                          "What is Caroline's identity?": {"entity": "", "attribute": "x"}})
    res = import_file("locomo", FIX / "locomo_sample.json", extractor=ext)
    seed, ref = by_text(res.suite, "What did the kids enjoy?")  # no speaker named: only the extractor knows
    assert (seed.query.fields.entity, seed.query.fields.attribute) == ("Melanie", "kids' favourite activity")
    # D2:4 ("I also went swimming ...", two turns on, same speaker) shares half the key terms: accepted too
    assert ref.answer == "swimming in the lake" and ref.supporting == ("D2:3", "D2:4")
    assert res.dropped["no_fields"] == 0
    assert res.warnings["extractor_invalid"] == 1 and res.warnings["extractor_no_fields"] >= 1
    asked = dict(ext.calls)
    assert any("All three of them loved it" in c for c in asked["What did the kids enjoy?"])
    assert_references_agree(res.suite)


def test_extractor_cannot_override_abstention_or_invent_history():
    class Liar:
        def extract(self, question, context_snippets):
            if "realize" not in question:
                return None
            return {"entity": "Melanie", "attribute": "realisation", "scope": "previous", "answerable": True}

    res = import_file("locomo", FIX / "locomo_sample.json", extractor=Liar())
    seed, ref = by_text(res.suite, "What did Melanie realize after the charity race?")
    assert ref.abstain and not seed.query.fields.answerable and seed.query.fields.scope == "any"
    assert res.warnings["extractor_answerable_overridden"] >= 1
    assert res.warnings["extractor_scope_without_history"] >= 1


# -- heuristics ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("question, attribute", [
    ("What type of rice is my favorite?", "type of rice: favorite"),
    ("How many bikes do I currently own?", "number of bikes: currently own"),
    ("How long have I been collecting vintage films?", "duration: collecting vintage films"),
    ("Where did I buy my new bookshelf from?", "place: buy new bookshelf"),
    ("How often do I see Dr. Johnson?", "frequency: see dr johnson"),
    ("Can you remind me of the name of the last venue you recommended?", "name of the last venue: recommended"),
])
def test_head_attribute(question, attribute):
    assert head_attribute(question) == attribute


def test_entity_and_scope_rules():
    assert find_entity("What is Caroline's identity?", ["Caroline", "Melanie"]) == "Caroline"
    assert find_entity("What do Caroline and Melanie both like?", ["Caroline", "Melanie"]) == "Caroline and Melanie"
    assert find_entity("How many bikes do I own?", [], user_centred=True) == "user"
    assert find_entity("Which restaurant had you recommended?", [], user_centred=True) == "assistant"
    assert find_entity("Who became a parent first, Tom or Alex?", [], user_centred=True) is None
    assert detect_scope("What was my previous status?", has_history=True) == "previous"
    assert detect_scope("How many bikes do I own?", has_history=True) == "current"
    assert detect_scope("When did I book the Airbnb?", has_history=False) == "any"
    assert heuristic_fields("Any tips?", user_centred=True) is None


# -- errors ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt, content, needle", [
    ("locomo", '[{"sample_id": "a", "conversation": {}, "qa": []}, {"sample_id": "b", "qa": []}]',
     "record 1 (b): missing required field 'conversation'"),
    ("locomo", '[{"sample_id": "a", "conversation": {"session_1": "oops"}, "qa": []}]', "record 0 (a)"),
    ("longmemeval", '[{"question_id": "x", "question_type": "t", "question": "q?"}]', "record 0 (x)"),
    ("longmemeval", '[{"question_id": 1,', "invalid JSON"),
    ("memops", '{"episodes": [{"episode_id": "e", "turns": 3, "operations": [], "questions": []}]}',
     "record 0 (e): field 'turns' must be list"),
    ("meme", '[{"episode_id": "e", "sessions": [{"timestamp": "2023/03/01 (Wed) 09:00", "turns": []}]}]',
     "record 0 (e): missing required field 'sessions[0].conversation'"),
    ("halumem", '{"uuid": "u", "sessions": [{"memory_points": "x"}]}\n{"uuid": "v"', ":2: invalid JSON line"),
    ("halumem", '', "empty file"),
])
def test_malformed_files_raise_clear_errors(tmp_path, fmt, content, needle):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(SeedImportError) as info:
        import_file(fmt, path)
    assert str(path) in str(info.value) and needle in str(info.value)


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(SeedImportError, match="known formats: halumem, locomo"):
        import_file("nope", tmp_path / "x.json")
    with pytest.raises(SeedImportError, match="no such file"):
        import_file("locomo", tmp_path / "missing.json")
    assert set(importers()) == {"locomo", "longmemeval", "memops", "meme", "halumem"}


def _outside_load(path, *, extractor=None, name=None):
    """An importer of another package (here: a synthetic suite, whatever the file)."""
    from ufuzz.seeds.importers._common import ImportResult
    from ufuzz.seeds.synth import synthesize

    return ImportResult(suite=synthesize(personas=1, seed=3))


def test_an_importer_of_another_package_comes_through_its_entry_point(tmp_path, monkeypatch):
    """A format is one module here, or one entry point (group ufuzz.importers) of another package."""
    from importlib.metadata import EntryPoint

    from ufuzz import plugins

    ep = EntryPoint("outside", f"{__name__}:_outside_load", "ufuzz.importers")
    monkeypatch.setattr(plugins, "entry_points", lambda group: [ep] if group == "ufuzz.importers" else [])
    assert importers()["outside"] == f"{__name__}:_outside_load" and "locomo" in importers()
    (tmp_path / "x.txt").write_text("anything\n")
    res = import_file("outside", tmp_path / "x.txt")
    assert res.suite.seeds


@pytest.mark.parametrize(("fmt", "name"), [
    ("locomo", "locomo_sample.json"), ("locomo", "locomo_annotated.json"), ("memops", "memops_evidence.json"),
    ("meme", "meme_walkthrough_sample.json"), ("halumem", "halumem_long_sample.jsonl"),
    ("halumem", "halumem_users.jsonl"),
])
def test_imported_seeds_name_no_operator(fmt, name):
    """An importer says what a seed is (its fields, facts, new values), never which operators may act on it: each
    operator decides from the seed, so a state operator added later is offered imported seeds like the built-ins.
    Every state move an importer used to rule out by name is still ruled out, by the operator itself."""
    s = import_file(fmt, FIX / name).suite
    assert s.seeds and all(seed.descriptor.memory_ops is None for seed in s.seeds)
    for seed in s.seeds:
        moves = state_moves(seed, s)
        if not seed.query.fields.answerable:
            assert moves <= {"unrelated_edit"}  # no answer in the state: nothing to update or delete
        if "update" in moves:
            assert seed.descriptor.value_pool  # a new value only where the evidence's words can carry one
