"""An update on a conversation rewrites what the asked person said, never another speaker's echo of it, and
never writes back a value the fact had before (LongMemEval hand audit: "Wow, 20 dozen eggs is a lot!" rewritten
to 27 beside the user's own "20 dozen"; a gym time "updated" to the 7:00 pm an earlier session had stated)."""

from __future__ import annotations

from ufuzz.model import Checkpoint, Entity, Fact, FuzzCase, Memory, MutationDescriptor, Query, QueryFields
from ufuzz.model.provenance import Provenance
from ufuzz.operators.statewrite import own_voice, rewritable_evidence
from ufuzz.operators.update import Update

SPEAKERS = (Entity("user", "user"), Entity("assistant", "assistant"))


def _case(memories, facts, pool, entities=SPEAKERS, attribute="dozen eggs") -> FuzzCase:
    ck = Checkpoint("c1", tuple(memories), tuple(facts), entities)
    fields = QueryFields(entity=facts[-1].entity, attribute=attribute, scope="current", answerable=True)
    query = Query(id="q1", text="How many dozen eggs do I have?", fields=fields)
    return FuzzCase(id="s1", seed_id="s1", checkpoint_id="c1", query=query,
                    descriptor=MutationDescriptor(value_pool=tuple(pool)), provenance=Provenance.of(ck))


def _m(mid: str, text: str, day: int) -> Memory:
    return Memory(mid, text, f"2024-03-{day:02d}T10:00:00")


def test_the_persons_own_turn_is_rewritten_not_the_later_echo_of_it():
    mems = [_m("s:2", "User: we've got 20 dozen eggs in the fridge.", 1),
            _m("s:3", "Assistant: Wow, 20 dozen eggs is a lot!", 2)]
    fact = Fact("user", "dozen eggs", "20", ("s:2", "s:3"), value_type="number")
    case = _case(mems, [fact], ["21", "23"])
    assert rewritable_evidence(case.provenance, fact, None) == "s:2"  # the echo is the later one
    assert own_voice(case.provenance, fact, ["s:2", "s:3"], dict(case.provenance.memory_texts)) == ["s:2"]
    assert Update().targets(case) == ["value=21", "value=23"]


def test_a_fact_only_another_speaker_states_is_not_updated():
    mems = [_m("s:1", "User: guess what is in the fridge.", 1), _m("s:3", "Assistant: Wow, 20 dozen eggs!", 2)]
    fact = Fact("user", "dozen eggs", "20", ("s:3",), value_type="number")
    case = _case(mems, [fact], ["21"])
    assert rewritable_evidence(case.provenance, fact, None) is None and Update().targets(case) == []


def test_memories_that_are_no_ones_turn_are_all_candidates():
    mems = [_m("p:1", "Lena keeps 20 dozen eggs.", 1), _m("p:2", "Note: still 20 dozen eggs.", 2)]
    fact = Fact("Lena", "dozen eggs", "20", ("p:1", "p:2"), value_type="number")
    case = _case(mems, [fact], ["21"], entities=(Entity("Lena", "person"),))
    assert rewritable_evidence(case.provenance, fact, None) == "p:2"  # "Note" is no speaker of the checkpoint


def test_a_value_an_earlier_memory_of_the_fact_stated_is_never_the_new_one():
    mems = [_m("s1:4", "User: I usually go to the gym at 7:00 pm.", 1),
            _m("s2:4", "User: the gym, which is usually at 6:00 pm now.", 9)]
    old = Fact("user", "time: gym", "[value stated in s1:4]", ("s1:4",), valid=False, value_type="time",
               valid_from="2024-03-01T10:00:00")
    now = Fact("user", "time: gym", "6:00 pm", ("s2:4",), value_type="time", valid_from="2024-03-09T10:00:00")
    case = _case(mems, [old, now], ["7:00 pm", "8:00 pm", "6:00 pm"], attribute="time: gym")
    assert Update().targets(case) == ["value=8:00 pm"]


def test_a_turn_that_agrees_with_the_other_speakers_value_is_not_rewritten():
    """LoCoMo hand audit: Gina's favourite style is told only by agreeing with Jon ("me too!"); rewritten alone
    it read "Yeah, me too! Swing dance is so expressive", agreeing with nothing, and three updates of it were
    reported as failures."""
    people = (Entity("Jon", "person"), Entity("Gina", "person"))
    mems = [_m("D1:8", "Jon: I love all dances, but contemporary is my top pick. What's your fave?", 1),
            _m("D1:9", "Gina: Yeah, me too! Contemporary dance is so expressive and graceful.", 2)]
    fact = Fact("Gina", "favorite style of dance", "Contemporary", ("D1:9",), value_type="activity")
    case = _case(mems, [fact], ["Swing"], entities=people, attribute="favorite style of dance")
    assert rewritable_evidence(case.provenance, fact, None) is None and Update().targets(case) == []
    # the same turn after a question that does not name the value states it on its own: it may be rewritten
    asked = [_m("D1:8", "Jon: I love all dances. What's your fave?", 1), mems[1]]
    case = _case(asked, [fact], ["Swing"], entities=people, attribute="favorite style of dance")
    assert rewritable_evidence(case.provenance, fact, None) == "D1:9" and Update().targets(case) == ["value=Swing"]
