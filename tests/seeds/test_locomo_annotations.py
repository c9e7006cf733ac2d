"""LoCoMo beyond turns and answers: observations, events, pronouns, categories, adversarial questions, the
speaker swap and the swap back — and that every move an importer offers is one an operator carries out."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.support.operator_kit import state_moves
from ufuzz.model import FuzzCase, SeedSuite
from ufuzz.operators import all_operators
from ufuzz.operators.base import Rejected
from ufuzz.seeds.importers import import_file
from ufuzz.seeds.io import load_suite, write_suite

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
REPO = Path(__file__).resolve().parents[2]
#: the shared datasets next to the checkout (a worktree is one level deeper)
SHARED = next((p / "shared" for p in (REPO.parent, REPO.parent.parent) if (p / "shared").is_dir()), REPO / "shared")
LOCOMO_DEV = SHARED / "datasets" / "locomo" / "locomo_dev2.json"
QUERY_OPS = ("paraphrase", "target_change", "unsupported", "speaker_swap")


def _suite() -> SeedSuite:
    return import_file("locomo", FIX / "locomo_annotated.json").suite


def _seed(s: SeedSuite, text: str):
    [seed] = [x for x in s.seeds if x.query.text == text]
    return seed, s.reference_of(seed), FuzzCase.from_seed(seed, s.checkpoint_of(seed))


def test_observations_events_pronouns_and_categories():
    res = import_file("locomo", FIX / "locomo_annotated.json")
    assert res.warnings == {"evidence_unknown_id": 1, "evidence_in_missing_session": 1, "observation_malformed": 1, "observation_without_turn": 1}
    cp = res.suite.checkpoints["locomo-cp:conv-a"]
    obs = {(f.entity, f.value): f.evidence for f in cp.facts if f.value_type == "observation"}
    assert obs[("Ben", "Ben fixes old bicycles in his garage.")] == ("D1:4", "D2:1")  # a list of turns
    assert obs[("Ana", "Ana thinks Ben should sell his bicycles.")] == ("D1:4",)  # owned by whom it describes
    assert ("Ana", "A note with no turn.") not in obs
    events = [(f.entity, f.value, f.evidence) for f in cp.facts if f.value_type == "event"]
    assert ("Ben", "Ben sells bicycles at a flea market.", ()) in events and len(events) == 3
    # "his" in Ana's observation about Ben is not counted for Ana
    assert {e.name: e.pronoun for e in cp.entities} == {"Ana": "she", "Ben": "he"}
    cats = {x.query.text: x.metadata["category"] for x in res.suite.seeds}
    assert cats["What hobbies does Ana have?"] == 1 and cats["Where did Ben go hiking last weekend?"] == 5


def test_answer_forms_and_the_state_moves_they_allow():
    s = _suite()
    seed, ref, _ = _seed(s, "What did Ana paint for her mother?")
    assert ref.answer_form == "extractive" and seed.descriptor.memory_ops is None
    seed, ref, _ = _seed(s, "How many dogs does Ben have?")
    assert ref.answer_form == "extractive" and seed.descriptor.value_pool and "update" in state_moves(seed, s)
    seed, ref, _ = _seed(s, "When did Ben get his second dog?")  # "last month" in the turn: a computed date
    assert ref.answer_form == "abstractive"
    # an update dates the event anew where "last month" stands; a delete removes every turn telling it in other
    # words (the operator's key-word carriers): every state move
    assert seed.descriptor.memory_ops is None and seed.descriptor.value_pool


def test_adversarial_question_decoys_stale_answer_and_swap_back():
    s = _suite()
    ops = all_operators()
    seed, ref, case = _seed(s, "Where did Ben go hiking last weekend?")
    # Ana's answer is true of Ana, not out of date: no stale answer (answering with it is unsupported)
    assert ref.abstain and ref.invalidated == ("D1:3",) and ref.stale_answers == ()
    assert seed.descriptor.replacement_targets == {"entity": ("Ana",)}
    m = ops["target_change"].mutate(case, ref, "entity=Ana", random.Random(0))
    assert ops["target_change"].validate(case, m).ok
    assert m.query.text == "Where did Ana go hiking last weekend?"
    assert (m.reference.answer, m.reference.supporting) == ("Mount Tam", ("D1:3",))  # the benchmark's own
    # its twin is a question of the benchmark: the swap back would only repeat that seed, so it is not offered
    seed, ref, _ = _seed(s, "What did Ben paint for his mother?")
    assert ref.abstain and ref.invalidated == ("D1:1",) and "entity" not in seed.descriptor.replacement_targets


def test_speaker_swap_offered_only_where_nothing_of_the_other_speaker_supports_it():
    s = _suite()
    targets = {x.query.text: x.descriptor.replacement_targets.get("speaker") for x in s.seeds}
    assert targets["What did Ana paint for her mother?"] is None  # the benchmark asks it of Ben (adversarial)
    assert targets["When did Ben get his second dog?"] is None  # Ana walks her dog
    assert targets["How many dogs does Ben have?"] is None  # likewise
    assert targets["What hobbies does Ana have?"] is None  # a multi-hop list anyone may have
    assert targets["What did Ben sell at the flea market?"] == ("Ana",)


def test_speaker_swap_mutant_and_its_validator():
    s = _suite()
    op = all_operators()["speaker_swap"]
    seed, ref, case = _seed(s, "What did Ben sell at the flea market?")
    assert op.targets(case) == ["speaker=Ana"]
    m = op.mutate(case, ref, "speaker=Ana", random.Random(0))
    assert m.query.text == "What did Ana sell at the flea market?" and not m.query.fields.answerable
    assert m.reference.abstain and set(ref.supporting) <= set(m.reference.invalidated)
    assert m.reference.stale_answers == ()  # Ben's answer is not out of date: it is someone else's
    assert op.validate(case, m).ok


def test_speaker_swap_rewrites_pronouns_and_rejects_what_it_cannot_word(tmp_path):
    s = _suite()
    op = all_operators()["speaker_swap"]
    seed, ref, case = _seed(s, "What did Ben sell at the flea market?")
    from dataclasses import replace

    worded = replace(case, query=replace(case.query, text="What did Ben sell at the flea market with his son?"))
    m = op.mutate(worded, ref, "speaker=Ana", random.Random(0))
    assert m.query.text == "What did Ana sell at the flea market with her son?"
    # unknown pronouns: a gendered pronoun cannot be worded about the other speaker
    ents = tuple(replace(e, pronoun=None) for e in case.provenance.entities)
    blind = replace(worded, provenance=replace(worded.provenance, entities=ents))
    with pytest.raises(Rejected, match="pronouns"):
        op.mutate(blind, ref, "speaker=Ana", random.Random(0))
    # an answering reference, or the other speaker having the fact, is rejected by the validator
    m = op.mutate(case, ref, "speaker=Ana", random.Random(0))
    assert not op.validate(case, replace(m, reference=ref.with_(query_id=m.query.id))).ok
    from ufuzz.model import Fact

    fact = Fact("Ana", case.query.fields.attribute, "a lamp", ("D1:5",))
    known = replace(case, provenance=replace(case.provenance, facts=case.provenance.facts + (fact,)))
    assert "records" in op.validate(known, m).reason
    # an observation of the other speaker that supports the question
    note = Fact("Ana", "observation 99", "Ana sold jam at the flea market.", ("D2:2",), value_type="observation")
    noted = replace(case, provenance=replace(case.provenance, facts=case.provenance.facts + (note,)))
    assert "support" in op.validate(noted, m).reason


def _every_offered_move_is_carried_out(s: SeedSuite) -> tuple[int, list]:
    ops = all_operators()
    tried, bad = 0, []
    for seed in s.seeds:
        case, ref = FuzzCase.from_seed(seed, s.checkpoint_of(seed)), s.reference_of(seed)
        for name in QUERY_OPS:
            for t in ops[name].targets(case):
                tried += 1
                try:
                    m = ops[name].mutate(case, ref, t, random.Random(f"{seed.id}{t}"))
                    v = ops[name].validate(case, m)
                    if not v.ok:
                        bad.append((seed.query.text, name, t, m.query.text, v.reason))
                except Rejected as exc:
                    bad.append((seed.query.text, name, t, str(exc)))
    return tried, bad


def test_every_query_move_offered_on_the_fixture_is_carried_out():
    tried, bad = _every_offered_move_is_carried_out(_suite())
    assert tried >= 20 and bad == []


def test_every_query_move_offered_on_real_locomo_is_carried_out():
    if not LOCOMO_DEV.exists():
        pytest.skip(f"LoCoMo dev conversations not present at {LOCOMO_DEV}")
    tried, bad = _every_offered_move_is_carried_out(import_file("locomo", LOCOMO_DEV).suite)
    assert tried >= 1000
    assert bad == []


def test_new_fields_are_optional_on_disk(tmp_path):
    s = _suite()
    path = write_suite(s, tmp_path / "suite.jsonl")
    back = load_suite(path)
    assert [x.metadata for x in back.seeds] == [x.metadata for x in s.seeds]
    assert back.references == s.references
    assert {e.name: e.pronoun for cp in back.checkpoints.values() for e in cp.entities} == {"Ana": "she", "Ben": "he"}
    # a file written before these fields existed (none of them present) loads, with them unset
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for rec in lines:
        rec.pop("metadata", None)
        rec.pop("answer_form", None)
        for e in rec.get("entities", []):
            e.pop("pronoun", None)
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    legacy = load_suite(old)
    assert all(x.metadata == {} for x in legacy.seeds)
    assert all(r.answer_form is None for r in legacy.references.values())
    # and unset fields are not written
    again = [json.loads(x) for x in write_suite(legacy, tmp_path / "again.jsonl").read_text().splitlines()]
    assert not any("metadata" in r for r in again if r["kind"] == "seed")
    assert not any("answer_form" in r for r in again if r["kind"] == "reference")
    assert not any("pronoun" in e for r in again if r["kind"] == "checkpoint" for e in r["entities"])


def test_neighbouring_turns_that_repeat_the_evidence_support_it_too():
    """LoCoMo marks one turn where the speaker says the same thing twice; a nearby turn of the same speaker holding
    half the key terms of question and answer (and no question itself) is accepted as evidence too."""
    from ufuzz.seeds.importers.locomo import neighbours

    text_of = {"D10:14": "Ana: Did you see it too?", "D10:15": "Ben: We drove up the hill at night.",
               "D10:16": "Ana: The meteor shower was amazing, it felt awe-inspiring.",
               "D10:17": "Ana: What meteor shower will you watch next?",
               "D10:18": "Ana: I was in awe of the universe.", "D10:19": "Ana: Anyway, how is work?",
               "D11:16": "Ana: Another meteor shower, awe again."}
    speaker_of = {k: v.split(":")[0] for k, v in text_of.items()}
    got = neighbours(["D10:18"], text_of, speaker_of, "How did Ana feel watching the meteor shower?",
                     "in awe of the universe", ["Ana", "Ben"])
    # not Ben's turn, not a question, not another session, not a turn sharing too little
    assert got == ("D10:16",)


def test_turns_writing_an_item_of_a_list_answer_support_it_and_counts_over_turns_are_not_seeds():
    from ufuzz.model import Memory
    from ufuzz.seeds.importers.locomo import COUNT, carriers

    mems = [Memory("D5:13", "Ana: I'm going to a transgender conference this month.", "2023-01-01", {"speaker": "Ana"}),
            Memory("D6:2", "Ben: The transgender conference was packed.", "2023-01-02", {"speaker": "Ben"}),
            Memory("D7:1", "Ana: The conference room was cold.", "2023-01-03", {"speaker": "Ana"})]
    q = "What transgender-specific events has Ana attended?"
    # Ana's turn naming "conference" with the question's "transgender"; not Ben's, not one without a key term
    assert carriers("Poetry reading, conference", q, "Ana", mems, ["Ana", "Ben"]) == ("D5:13",)
    assert carriers("conference", q, "Ana", mems, ["Ana", "Ben"]) == ()  # a single answer: its marked turns
    assert COUNT.match("How many times has Ana gone to the beach?") and not COUNT.match("What did Ana count?")


def test_a_phrase_or_a_sentence_is_no_list_its_words_bring_no_carriers():
    """Audited false class: "a safe and inviting place for people to grow" was split at "and", and turns about
    "a safe place" for a poetry reading and "a safe and loving home" became its evidence."""
    from ufuzz.model import Memory
    from ufuzz.seeds.importers.locomo import carriers

    def mem(mid, text):
        return Memory(mid, f"Ana: {text}", "2023-01-01", {"speaker": "Ana"})

    mems = [mem("D4:5", "My hand-painted bowl reminds me of art and self-expression."),
            mem("D11:11", "Your art is amazing, it reminds me of my bowl."),
            mem("D4:15", "I want to create a safe, inviting place for people to grow."),
            mem("D19:5", "My dream is to create a safe and loving home for kids."),
            mem("D13:9", "I love the horse's grace and strength in your painting."),
            mem("D9:16", "I painted this after I visited an LGBTQ center."),
            mem("D2:1", "We went camping at the beach."), mem("D3:4", "Camping in the mountains was great.")]
    speakers = ["Ana", "Ben"]
    q = "What is Ana's hand-painted bowl a reminder of?"
    assert carriers("art and self-expression", q, "Ana", mems, speakers) == ("D4:5", "D11:11")  # split alone
    assert carriers("art and self-expression", q, "Ana", mems, speakers, ["D4:5"]) == ()  # one turn writes it whole
    # a phrase and a sentence: "a safe" and "strength" are no list items
    assert carriers("a safe and inviting place for people to grow", "What kind of place does Ana want to create?",
                    "Ana", mems, speakers) == ()
    assert carriers("visiting an LGBTQ center and wanting to capture unity and strength",
                    "What inspired Ana's painting?", "Ana", mems, speakers, ["D9:16"]) == ()
    # a real list spread over turns keeps its carriers
    assert carriers("beach, mountains", "Where has Ana gone camping?", "Ana", mems, speakers, ["D2:1"]) == \
        ("D2:1", "D3:4")


def test_a_span_between_marked_turns_is_no_seed_and_one_told_in_a_turn_is(tmp_path):
    """Hand audit: "How long did it take for Jon to open his studio?" is marked on the turn he started and the one he
    opened — either alone is no answer, so "any marked turn in the top-k" cannot judge it (dropped, counted, as a
    count over turns is); "How long has Ana had her friends?" told in one turn stays."""
    from tests.support.locomo_kit import conversation, import_locomo

    conv = conversation(("1:00 pm on 8 January, 2023", [("Ana", "I just started planning my own pottery studio!"),
                                                        ("Ana", "My friends, I've had them for 4 years now.")]),
                        ("2:00 pm on 11 July, 2023", [("Ana", "My pottery studio opened today!"),
                                                      ("Ben", "Congrats on the studio!")]))
    qa = [{"question": "How long did it take for Ana to open her pottery studio?", "answer": "six months",
           "evidence": ["D1:1", "D2:1"], "category": 2},
          {"question": "How long has Ana had her friends?", "answer": "4 years", "evidence": ["D1:2"], "category": 1}]
    got = import_locomo(tmp_path, conv, qa)
    assert [s.query.text for s in got.suite.seeds] == ["How long has Ana had her friends?"]
    assert got.dropped["span_over_turns"] == 1
