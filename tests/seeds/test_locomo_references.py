"""LoCoMo references right on real data (issue 21, item 2): the false classes a hand audit found, each on a small
conversation of our own — benchmark evidence the relatedness filter drops is still recognised, a turn elsewhere
that states the answer counts as support, support comes from the speaker asked about, inferential answers are
no seeds, and added neighbouring support carries the answer."""

from __future__ import annotations

import json
from pathlib import Path

from ufuzz.model import Execution, Memory, SeedSuite
from ufuzz.oracles.expectations import selection
from ufuzz.seeds.importers import import_file
from ufuzz.seeds.importers.locomo import asked_speaker, speculative, states, stating_turns, subject_speaker

_TURNS = [
    # session 1
    ("Ana", "I got new shoes this week, look at them!"),                                 # D1:1
    ("Ben", "Love that purple color! For walking or running?"),                          # D1:2
    ("Ana", "These are for running. It clears my mind."),                               # D1:3
    ("Ben", "My grandma is from Norway, she knits a lot."),                              # D1:4
    ("Ana", "Check this out!"),                                                          # D1:5 (+ image)
    ("Ben", "Wow, what a board."),                                                       # D1:6
    ("Ana", "I moved here from Sweden four years ago."),                                  # D1:7
    ("Ben", "That is a big move."),                                                      # D1:8
    ("Ana", "The meteor shower was amazing, it felt awe-inspiring."),                    # D1:9
    ("Ana", "We drove back the next morning with the kids."),                            # D1:10
    ("Ana", "I was in awe of the universe watching the meteor shower."),                 # D1:11
    # session 2
    ("Ana", "I still miss Sweden, I moved away when I was young and my whole family is there."),  # D2:1
    ("Ben", "Sweden sounds lovely, I moved there once for work."),                       # D2:2
    ("Ana", "My favourite food is Sweden-style meatballs, no move needed."),             # D2:3
    ("Ana", "Yes, I painted that lake sunrise myself last year."),                        # D2:4
]


def _conv() -> dict:
    sessions: dict[str, list[dict]] = {"session_1": [], "session_2": []}
    for i, (who, text) in enumerate(_TURNS):
        s, t = (1, i + 1) if i < 11 else (2, i - 10)
        turn = {"speaker": who, "dia_id": f"D{s}:{t}", "text": text}
        if (s, t) == (1, 5):
            turn["blip_caption"] = "a photo of a surfboard on a beach"
        sessions[f"session_{s}"].append(turn)
    return {"speaker_a": "Ana", "speaker_b": "Ben", "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_2_date_time": "2:00 pm on 9 June, 2023", **sessions}


_QA = [
    {"question": "What are the new shoes that Ana got used for?", "answer": "Running", "evidence": ["D1:2"],
     "category": 4},
    {"question": "Where is Ana's grandma from?", "answer": "Norway", "evidence": ["D1:4"], "category": 4},
    {"question": "What does Ana knit?", "answer": "Norway", "evidence": ["D1:4"], "category": 4},
    {"question": "Has Ana tried surfing?", "answer": "Yes", "evidence": ["D1:5", "D1:6"], "category": 4},
    {"question": "Where did Ana move from?", "answer": "Sweden", "evidence": ["D1:7"], "category": 4},
    {"question": "How did Ana feel watching the meteor shower?", "answer": "in awe of the universe",
     "evidence": ["D1:11"], "category": 4},
    {"question": "Would Ana likely enjoy a trip to Norway?", "answer": "Yes, she likes the north",
     "evidence": ["D1:4"], "category": 4},
    {"question": "What would Ana's favourite season likely be?", "answer": "Winter", "evidence": ["D1:9"],
     "category": 3},
    {"question": "When did Ana paint a sunrise?", "answer": "2022", "evidence": ["D2:4"], "category": 2},
]


def _import(tmp_path: Path, qa: list[dict] | None = None):
    path = tmp_path / "conv.json"
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": _conv(), "qa": qa or _QA}]))
    return import_file("locomo", path)


def _ref(s: SeedSuite, question: str):
    [seed] = [x for x in s.seeds if x.query.text == question]
    return seed, s.reference_of(seed)


def _passes(ref, top_ids: list[str]) -> bool:
    return selection(ref, Execution("c", "k", "q", top_ids=top_ids, top_scores=[1.0] * len(top_ids),
                                    top_texts=[""] * len(top_ids))).passed


def test_support_comes_from_the_speaker_asked_about(tmp_path):
    res = _import(tmp_path)
    # the marked turn is Ben's question; Ana's reply right after it, which carries the answer, is the evidence
    _, ref = _ref(res.suite, "What are the new shoes that Ana got used for?")
    assert ref.supporting == ("D1:3",)
    assert not _passes(ref, ["D1:2", "D1:1"]) and _passes(ref, ["D1:1", "D1:3"])
    # Ben's knitting grandma, told by Ben: nothing of Ana's carries it, so no seed rests on the mis-attribution
    assert not [x for x in res.suite.seeds if x.query.text == "What does Ana knit?"]
    # a question about a speaker's relation: either speaker may tell of her
    assert _ref(res.suite, "Where is Ana's grandma from?")[1].supporting == ("D1:4",)
    assert res.dropped["evidence_other_speaker"] == 1 and res.warnings["evidence_speaker_repaired"] == 1


def test_a_question_about_a_speakers_relation_keeps_the_other_speakers_turns():
    assert asked_speaker("When did Ana's friend adopt a child?", ["Ana", "Ben"]) is None
    assert asked_speaker("When did Ana's best friend adopt a child?", ["Ana", "Ben"]) is None
    assert asked_speaker("What did Ana adopt?", ["Ana", "Ben"]) == "Ana"
    assert asked_speaker("What do Ana and Ben share?", ["Ana", "Ben"]) is None


def test_marked_evidence_the_relatedness_filter_drops_is_still_recognised(tmp_path):
    # the photo turn shares no word with "surfing" ("surfboard" is another word) and Ben's turn is the wrong
    # speaker's: with no turn its words can find, the question is no seed
    res = _import(tmp_path)
    assert not [x for x in res.suite.seeds if x.query.text == "Has Ana tried surfing?"]
    # beside a findable marked turn, the photo turn is evidence too: retrieving it is no miss
    qa = [{"question": "Has Ana tried running or surfing?", "answer": "Yes", "evidence": ["D1:5", "D1:3"],
           "category": 4}]
    res = _import(tmp_path, qa)
    _, ref = _ref(res.suite, "Has Ana tried running or surfing?")
    assert set(ref.supporting) == {"D1:3", "D1:5"} and res.warnings["evidence_unrelated_kept"] == 1
    assert _passes(ref, ["D1:1", "D1:5"]) and not _passes(ref, ["D1:1", "D1:6"])


def test_a_turn_elsewhere_stating_the_answer_supports_it(tmp_path):
    _, ref = _ref(_import(tmp_path).suite, "Where did Ana move from?")
    # Ana's D2:1 writes "Sweden" and says she moved; Ben's D2:2 is the wrong speaker's; D2:3 writes the word in
    # a turn about food (it shares "move" but the rule needs the question's key terms, all of them here: one)
    assert "D2:1" in ref.supporting and "D2:2" not in ref.supporting
    assert _passes(ref, ["D2:1"])


def test_a_phrase_the_marked_turn_does_not_write_is_supported_where_the_person_writes_it():
    # hand audit: "What is Caroline's identity?" ("Transgender woman") is marked on a turn that does not write it;
    # her turn that does supports it, though it shares no key term of the question; the other speaker's does not,
    # and neither does a one-word answer written elsewhere, nor any turn once a marked one writes the phrase
    def turn(mid: str, who: str, text: str) -> Memory:
        return Memory(mid, f"{who}: {text}", "2023-05-08T13:56:00", {"speaker": who})

    turns = [turn("D1:5", "Cara", "The transgender stories were so inspiring!"),
             turn("D9:2", "Cara", "It shows my own journey as a transgender woman."),
             turn("D9:3", "Mel", "As a transgender woman's friend I am proud of you."),
             turn("D9:4", "Cara", "I moved from Sweden when I was ten.")]
    speakers = ["Cara", "Mel"]
    assert stating_turns("Transgender woman", "What is Cara's identity?", "Cara", turns, speakers,
                         ["D1:5"]) == ("D9:2",)
    assert stating_turns("Transgender woman", "What is Cara's identity?", "Cara", turns, speakers,
                         ["D9:2"]) == ()
    assert stating_turns("Sweden", "What is Cara's home country?", "Cara", turns, speakers, ["D1:5"]) == ()


def test_neighbouring_support_carries_the_answer(tmp_path):
    res = _import(tmp_path)
    _, ref = _ref(res.suite, "How did Ana feel watching the meteor shower?")
    # D1:9 says it felt awe-inspiring (half the answer's key terms); D1:10, the drive back, carries nothing of it
    assert set(ref.supporting) == {"D1:11", "D1:9"}
    assert not _passes(ref, ["D1:10"])
    assert states("it felt awe-inspiring", "in awe of the universe", ["Ana"])
    assert not states("We drove back the next morning", "in awe of the universe", ["Ana"])
    # a yes and a date are carried by the claim or event the question names
    assert states("I painted that lake sunrise last year", "2022", ["Ana"], "When did Ana paint a sunrise?")
    assert not states("We drove back the next morning", "2022", ["Ana"], "When did Ana paint a sunrise?")
    assert not states("anything at all", "Yes", ["Ana"])


def test_inferential_answers_are_no_seeds(tmp_path):
    res = _import(tmp_path)
    texts = {x.query.text for x in res.suite.seeds}
    assert "Would Ana likely enjoy a trip to Norway?" not in texts
    assert "What would Ana's favourite season likely be?" not in texts
    assert res.dropped["speculative_answer"] == 2
    assert speculative("Would Ana go back?", "No", 4) and speculative("Where does Ana live?", "Likely Oslo", 4)
    assert speculative("Where does Ana live?", "Oslo", 3)  # open-domain: the benchmark's inference category
    assert not speculative("Where does Ana live?", "Oslo", 4)


def test_a_one_word_answer_is_carried_by_the_event_a_number_only_where_written():
    q = "How does Ana feel about the opening night of her studio?"
    assert states("The official opening night is tomorrow, can't wait!", "excited", ["Ana"], q)
    assert not states("The weather is nice today.", "excited", ["Ana"], q)
    assert not states("My kids are loud", "3", ["Ana"], "How many kids does Ana have?")
    assert states("I have three kids", "3", ["Ana"], "How many kids does Ana have?")


def test_type_compatible_values_of_quantities_clock_times_and_word_classes():
    from ufuzz.seeds.importers.fields import TEXT_CLASSES, value_pool, value_type_of

    assert value_type_of("10 pounds") == "quantity" and value_pool("10 pounds", "quantity", set(), ()) == \
        ("11 pounds", "13 pounds", "17 pounds")
    assert value_type_of("6:00 pm") == "time_of_day"
    assert value_pool("6:00 pm", "time_of_day", {"8:00 pm"}, ()) == ("7:00 pm", "9:00 pm")
    assert value_pool("11 PM", "time_of_day", set(), ()) == ("12 AM", "1 AM", "2 AM")
    assert value_type_of("10 reasons") == "text"  # not a unit: no number of it is type-compatible
    # classes hold single words or phrases of one grammatical kind, each in one class only where it matters
    for name, members in TEXT_CLASSES.items():
        assert len(set(m.lower() for m in members)) == len(members), name


def test_a_question_naming_both_speakers_needs_evidence_of_its_subject(tmp_path):
    """Audited false class: "What advice does Gina give to Jon?" marked only with Jon's advice to Gina (the
    benchmark swapped the roles): no reference rests on it. Evidence of the subject, or of a shared subject,
    stays."""
    assert subject_speaker("What advice does Ana give to Ben?", ["Ana", "Ben"]) == "Ana"
    assert subject_speaker("What did Ben tell Ana about Norway?", ["Ana", "Ben"]) == "Ben"
    assert subject_speaker("What do Ana and Ben share?", ["Ana", "Ben"]) is None
    assert subject_speaker("When did Ana move?", ["Ana", "Ben"]) is None  # one speaker: asked_speaker's case
    qa = [{"question": "What did Ana tell Ben about her grandma?", "answer": "She is from Norway",
           "evidence": ["D1:4"], "category": 4},
          {"question": "Where did Ben say Ana's shoes are for?", "answer": "Running", "evidence": ["D1:3"],
           "category": 4},
          {"question": "What did Ana tell Ben about her move?", "answer": "Moved from Sweden",
           "evidence": ["D1:7"], "category": 4}]
    res = _import(tmp_path, qa)
    asked = {x.query.text for x in res.suite.seeds}
    assert "What did Ana tell Ben about her grandma?" not in asked  # only Ben's turn: the roles are swapped
    assert "Where did Ben say Ana's shoes are for?" not in asked  # only Ana's turn
    assert "What did Ana tell Ben about her move?" in asked  # Ana's own turn


def test_adversarial_yes_no_questions_and_the_asked_persons_denials(tmp_path):
    """Hand audit (mem0, LoCoMo dev): "Did Caroline make the bowl?" is answered "No" by the other speaker's "Yeah, I
    made this bowl", so it is no abstention and that turn no decoy; the asked person's own "Nope, never been to
    something like that", marked for "the poetry reading Melanie attended", says the question has no answer — it is
    no decoy either. A decoy the asked person said without denying anything stays one."""
    qa = [*_QA,
          {"question": "Did Ben paint the lake sunrise?", "answer": "No", "adversarial_answer": "Yes",
           "evidence": ["D2:4"], "category": 5},
          {"question": "What meteor shower did Ben watch?", "adversarial_answer": "a meteor shower",
           "evidence": ["D1:9"], "category": 5},
          {"question": "Which country did Ben grow up in?", "adversarial_answer": "Sweden",
           "evidence": ["D2:2"], "category": 5}]
    turns = list(_TURNS)
    _TURNS[8] = ("Ben", "Nope, never seen a meteor shower. Was it good?")  # D1:9 is now Ben's denial
    try:
        res = _import(tmp_path, qa)
    finally:
        _TURNS[:] = turns
    assert not [x for x in res.suite.seeds if x.query.text == "Did Ben paint the lake sunrise?"]
    assert res.dropped["adversarial_yes_no"] == 1
    seed, ref = _ref(res.suite, "What meteor shower did Ben watch?")
    assert ref.abstain and "D1:9" not in ref.invalidated
    assert res.warnings["adversarial_denial_not_decoy"] == 1
    assert _ref(res.suite, "Which country did Ben grow up in?")[1].invalidated == ("D2:2",)  # no denial: a decoy
