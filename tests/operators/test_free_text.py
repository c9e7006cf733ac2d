"""Operators on free-text (imported) questions: paraphrase by the rewrite table only, update that never invents
text, delete of every memory carrying the value, whole-word mentions, the unrelated edit's index, and which
rejections are final."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.operator_kit import cases, embedded, operators
from ufuzz.model import Fact, FuzzCase, Provenance, Query, QueryFields, Reference
from ufuzz.operators import Mutation, Rejected, StateView
from ufuzz.operators.delete import carriers
from ufuzz.operators.unrelated_edit import UnrelatedEdit
from ufuzz.seeds.importers import import_file
from ufuzz.seeds.importers._common import UNSTATED

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "importers"


def _locomo():
    return import_file("locomo", FIX / "locomo_annotated.json").suite


def _case(s, text: str) -> tuple[FuzzCase, Reference]:
    [seed] = [x for x in s.seeds if x.query.text == text]
    return FuzzCase.from_seed(seed, s.checkpoint_of(seed)), s.reference_of(seed)


def _para(c: FuzzCase, ref: Reference, text: str, detail: str = "reword") -> Mutation:
    return Mutation(query=replace(c.query, id=c.query.id + "~p", text=text), provenance=c.provenance,
                    reference=ref, detail=detail)


def test_free_text_paraphrase_targets_and_acceptance():
    s = _locomo()
    op = operators()["paraphrase"]
    c, ref = _case(s, "Where did Ben go hiking last weekend?")
    assert op.targets(c) == ["reword", "add_context", "change_form"]
    seen = set()
    for t in op.targets(c):
        for r in range(6):
            m = op.mutate(c, ref, t, random.Random(r))
            assert op.validate(c, m).ok, (t, m.query.text)
            seen.add(m.query.text)
    assert "In what place did Ben go hiking last weekend?" in seen
    assert any(x.startswith("Quick question: where did Ben") or x.startswith("Please tell me: where did Ben")
               or x.startswith("I'd like to know: where did Ben") for x in seen)
    # a wrapped question offers no second wrapper; a question no rewrite fits offers no reword
    wrapped = replace(c, query=replace(c.query, text="Quick question: where did Ben go hiking last weekend?"))
    assert "change_form" not in op.targets(wrapped)
    odd = replace(c, query=replace(c.query, text="Ben went hiking where last weekend?"))
    assert "reword" not in op.targets(odd)


@pytest.mark.parametrize("text", [
    "Where did Ben go hiking this weekend?",  # a changed word
    "Where exactly did Ben go hiking last weekend?",  # a word the table does not add here
    "In which place did Ben go hiking last weekend?",  # not a rewrite of the table
    "Where did Ben go hiking last weekend? Quick question.",  # context after the question
    "Quick question: Where did Ben go hiking last weekend?",  # the wrapper changed the case
])
def test_free_text_paraphrase_outside_the_table_is_rejected(text):
    s = _locomo()
    c, ref = _case(s, "Where did Ben go hiking last weekend?")
    assert not operators()["paraphrase"].validate(c, _para(c, ref, text)).ok


def test_free_text_paraphrase_keeps_another_named_entity_of_the_parent():
    s = _locomo()
    c, ref = _case(s, "What did Ben sell at the flea market?")
    c2 = replace(c, query=replace(c.query, text="What did Ben sell to Ana at the flea market?"))
    op = operators()["paraphrase"]
    assert op.validate(c2, _para(c2, ref, "What exactly did Ben sell to Ana at the flea market?")).ok


def test_update_never_invents_text(tmp_path):
    s = _locomo()
    op = operators()["update"]
    c, ref = _case(s, "How many dogs does Ben have?")
    assert op.targets(c)  # "2" is written in D1:2
    # the same state where the turn writes "two": the value is not written, so no update is offered, and a
    # forced one is rejected rather than writing "Update: Ben's number of dogs is now 3."
    cp = s.checkpoint_of(s.seeds[0])
    mems = tuple(replace(m, text=m.text.replace(" 2 ", " two ")) for m in cp.memories)
    cp2 = replace(cp, memories=mems)
    unwritten = replace(c, provenance=Provenance.of(cp2))
    assert op.targets(unwritten) == []
    backend = embedded(tmp_path)
    try:
        view = StateView(backend, backend.fork(backend.build(cp2)))
        with pytest.raises(Rejected, match="not written"):
            op.mutate(unwritten, ref, "value=3", random.Random(0), view)
    finally:
        backend.close()


def test_delete_carriers_and_abstractive_values():
    prov = Provenance(facts=(Fact("Mel", "number of kids", "3", ("m1",)), Fact("Mel", "city", "Rome", ("m3",))),
                      entities=(), memory_ids=frozenset({"m1", "m2", "m3", "m4"}),
                      memory_texts=(("m1", "Mel: I have 3 kids."), ("m2", "Mel: all three kids love it"),
                                    ("m3", "Mel: we live near the coast"), ("m4", "Mel: 33 degrees today")))
    # the evidence and every memory writing the value, digits or word; not "33"
    assert carriers(prov, [prov.facts[0]]) == {"m1", "m2"}
    # "Rome" is not written in its evidence: that evidence says it in other words and is carried; so is any
    # memory writing it; a value of no key word to look for has no carriers
    assert carriers(prov, [prov.facts[1]]) == {"m3"}
    rome = replace(prov, memory_ids=prov.memory_ids | {"m5"},
                   memory_texts=(*prov.memory_texts, ("m5", "Mel: Rome is lovely in May")))
    assert carriers(rome, [prov.facts[1]]) == {"m3", "m5"}
    unstated = Fact("Mel", "city", "Not mentioned in the conversation", ("m3",), value_type=UNSTATED)
    assert carriers(prov, [unstated]) is None
    s = _locomo()
    op = operators()["delete"]
    abstractive, _ = _case(s, "When did Ben get his second dog?")  # "May 2023", told as "last month"
    extractive, _ = _case(s, "What did Ana paint for her mother?")
    assert op.targets(abstractive) == ["all"] and op.targets(extractive) == ["all"]
    f = abstractive.query.fields
    dated = abstractive.provenance.active(f.entity, f.attribute)
    assert "D1:2" in carriers(abstractive.provenance, [dated])  # the turn telling it by "last month"


def test_text_mentions_is_whole_word():
    prov = Provenance(facts=(), entities=(), memory_ids=frozenset({"a", "b"}),
                      memory_texts=(("a", "I went home."), ("b", "Wen said hi")))
    assert prov.text_mentions("Wen") == ["b"]
    assert prov.text_mentions("went") == ["a"] and prov.text_mentions("") == []


def _naive_update_candidates(op: UnrelatedEdit, case: FuzzCase):
    """The unrelated edit's update candidates as the operator first computed them (per fact, no index)."""
    from ufuzz.operators.statewrite import latest_evidence, mentions_value, substitute
    from ufuzz.seeds.importers.fields import text_class, value_pool

    f = case.query.fields
    texts = dict(case.provenance.memory_texts)
    out = []
    for fact in case.provenance.facts:
        if not fact.valid or fact.entity == f.entity or not fact.evidence or fact.value_type in ("observation", "event"):
            continue
        mid = latest_evidence(None, fact.evidence)
        if mid not in texts or not op._unrelated(case, mid, texts[mid]):
            continue
        if fact.value_type == "text":  # free text: only words of its own class (no other answer's sentence)
            same = set(value_pool(fact.value, "text", set(), ())) if text_class(fact.value) else set()
        else:
            same = case.provenance.values_of_type(fact.value_type) - {fact.value}
        alts = sorted(same - op._protected_values(case))
        alts = [a for a in alts if not mentions_value(texts[mid], a)]
        if alts and substitute(texts[mid], fact.value, alts[0]) is not None:
            out.append((fact, mid, alts))
    return out


def test_unrelated_edit_index_gives_what_a_scan_per_fact_gives():
    op = UnrelatedEdit()
    s = _locomo()
    all_cases = list(cases()) + [FuzzCase.from_seed(x, s.checkpoint_of(x)) for x in s.seeds]
    for c in all_cases:
        assert op._update_candidates(c) == _naive_update_candidates(op, c), c.id
        naive = sorted(mid for mid, text in c.provenance.memory_texts if op._unrelated(c, mid, text))
        assert op._unrelated_memories(c) == naive


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(range(len(cases()))), st.sampled_from(["Dario", "Lisbon", "the", "2"]))
def test_unrelated_edit_index_follows_the_state(i, word):
    """A state with one more memory (the index is cached per state) gets its own answer."""
    op = UnrelatedEdit()
    c = cases()[i]
    grown = replace(c, provenance=c.provenance.with_memory("extra", f"Something about {word}."))
    assert op._unrelated_memories(grown) == sorted(
        mid for mid, text in grown.provenance.memory_texts if op._unrelated(grown, mid, text))


def test_which_rejections_may_go_otherwise():
    ops = operators()
    c = cases()[0]
    assert not ops["target_change"].varies(c, "entity=x") and not ops["delete"].varies(c, "all")
    assert ops["unrelated_edit"].varies(c, "add")
    assert ops["paraphrase"].varies(c, "add_context") and not ops["paraphrase"].varies(c, "shorten")
    one = Query("q", "Why did Ana leave?", QueryFields("Ana", "reason"), form="free", template=None)
    free = FuzzCase("q", "q", "cp", one, c.descriptor, c.provenance)
    assert not ops["paraphrase"].varies(free, "reword")  # one rewrite only: a rejection is final


def _apply(op, c, ref, target, tmp_path, cp):
    backend = embedded(tmp_path)
    try:
        view = StateView(backend, backend.fork(backend.build(cp)))
        m = op.mutate(c, ref, target, random.Random(0), view)
        return m, op.validate(c, m, view)
    finally:
        backend.close()


def test_update_dates_an_event_told_by_a_relative_time(tmp_path):
    """"we got the second one last month" answers "May 2023": the update tells the event at another date where
    "last month" stands, in the speaker's own sentence, in a memory later than everything stored."""
    s = _locomo()
    op = operators()["update"]
    c, ref = _case(s, "When did Ben get his second dog?")
    targets = op.targets(c)
    assert targets and all(t.startswith("value=") for t in targets)
    m, v = _apply(op, c, ref, targets[0], tmp_path, s.checkpoint_of(s.seeds[0]))
    new = targets[0].partition("=")[2]
    assert v.ok, v.reason
    assert m.ops[0].memory.text == f"Ben: Lovely! I have 2 dogs now, we got the second one in {new}."
    # "when did …" asks of one past event: the new date corrects the old one, whose turn no longer supports it
    assert m.reference.answer == new and m.reference.supporting == (m.ops[0].memory.id,)
    assert m.ops[0].target in m.reference.invalidated
    # a date after the time the event was told is refused (a past event stays past), not written
    with pytest.raises(Rejected, match="not on the side of the time"):
        _apply(op, c, ref, "value=May 2031", tmp_path, s.checkpoint_of(s.seeds[0]))


@pytest.mark.parametrize("text,value,new,want", [
    ("Ana: I went there yesterday.", "7 May 2023", "10 May 2023", "Ana: I went there on 10 May 2023."),
    ("Ana: Yesterday I went there.", "7 May 2023", "10 May 2023", "Ana: On 10 May 2023 I went there."),
    ("Ana: I painted it last year.", "2022", "2021", "Ana: I painted it in 2021."),
    ("Ana: We go next month!", "July 2023", "June 2023", "Ana: We go in June 2023!"),
    ("Ana: I went yesterday and last week.", "7 May 2023", "10 May 2023", None),  # which one is the date?
    ("Ana: I went there.", "7 May 2023", "10 May 2023", None),  # no relative time: nothing to rewrite
])
def test_rewrite_value_of_a_relative_time(text, value, new, want):
    from ufuzz.operators.statewrite import rewrite_value

    fact = Fact("Ana", "time: trip", value, ("m1",), value_type="year" if value.isdigit() else "date")
    assert rewrite_value(text, fact, new) == want


def test_a_class_word_is_updated_to_one_of_its_class_and_never_garbled():
    from ufuzz.operators.statewrite import rewrite_value
    from ufuzz.seeds.importers.fields import text_class, value_pool

    assert text_class("Sweden") == "country" and text_class("a guinea pig") == "pet"
    assert text_class("hip-hop") is None  # a dance and a genre: which kind is meant cannot be told
    assert text_class("Becoming Nicole") is None
    pool = value_pool("Horseback riding", "text", {"Swimming"}, ())
    assert pool and "Swimming" not in pool and all(text_class(v) == "activity" for v in pool)
    assert all(v[0].isupper() for v in pool)  # written as the answer is
    assert value_pool("Becoming Nicole", "text", set(), ()) == ()  # no class: no type-compatible value
    fact = Fact("Ana", "new shoes: used", "Running", ("m1",))
    # the turn writes the word twice, once as a verb: rewriting both would garble the sentence
    assert rewrite_value("Ana: These are for running. Been running longer.", fact, "Swimming") is None
    assert rewrite_value("Ana: These are for running.", fact, "Swimming") == "Ana: These are for swimming."


def test_no_update_of_what_a_person_gathers_rather_than_swaps(tmp_path):
    """A new pet is one more pet: "What pet does Caroline have?" gets no update (the guinea pig she told of stays
    true, so its turn is no stale evidence), while a question for the one — favourite, current — still does."""
    from ufuzz.seeds.importers.fields import accumulates

    assert accumulates("guinea pig", "What pet does Caroline have?")
    assert accumulates("a necklace", "What was grandma's gift to Caroline?")
    assert not accumulates("guinea pig", "Which pet does Eamon keep currently?")
    assert not accumulates("violin", "What is Jon's favourite instrument?")
    assert not accumulates("Sweden", "Where did Caroline move from?")  # a country is no possession
    data = {"sample_id": "s", "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben", "session_1_date_time": "1:00 pm on 1 May, 2023",
        "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "My pet is a hamster called Bo."},
                      {"speaker": "Ben", "dia_id": "D1:2", "text": "My favourite pet is a rabbit, I have one."}]},
        "qa": [{"question": "What pet does Ana have?", "answer": "hamster", "evidence": ["D1:1"], "category": 4},
               {"question": "What is Ben's favourite pet?", "answer": "rabbit", "evidence": ["D1:2"],
                "category": 4}]}
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([data]))
    suite = import_file("locomo", path).suite
    pools = {s.query.text: s.descriptor.value_pool for s in suite.seeds}
    assert pools["What pet does Ana have?"] == ()
    assert pools["What is Ben's favourite pet?"]


def test_unrelated_edit_restates_a_near_miss_turn_of_the_other_speaker(tmp_path):
    """A near-miss addition: another speaker's turn on the question's topic, said again later, verbatim — not
    invented text; never a turn naming the queried speaker, addressing anyone, or carrying a word of the answer."""
    s = _locomo()
    op = UnrelatedEdit()
    c, ref = _case(s, "What did Ben sell at the flea market?")  # topic: sell, flea, market
    texts = dict(c.provenance.memory_texts)
    near = list(op._iter_near(c))
    assert near == []  # no turn of Ana's is on the flea market
    c, ref = _case(s, "How many dogs does Ben have?")  # Ana's D1:5 walks her dog
    assert [m for m, _ in op._iter_near(c)] == ["D1:5"]
    assert "near" in op.targets(c)
    m, v = _apply(op, c, ref, "near", tmp_path, s.checkpoint_of(s.seeds[0]))
    assert v.ok, v.reason
    assert m.ops[0].memory.text == texts["D1:5"] and m.reference == ref
    # a forged restatement (not the turn's text) is rejected
    backend = embedded(tmp_path)
    try:
        view = StateView(backend, backend.fork(backend.build(s.checkpoint_of(s.seeds[0]))))
        forged_m = op.mutate(c, ref, "near", random.Random(0), view)
        forged_m = replace(forged_m, ops=(replace(forged_m.ops[0], memory=replace(forged_m.ops[0].memory,
                                                                                   text="Ana: I walk my cat.")),))
        assert not op.validate(c, forged_m, view).ok
    finally:
        backend.close()


def test_unrelated_edit_update_of_free_text_stays_in_its_class():
    """Audited garble: another fact's free-text value ("a safe and inviting place …") written over a value
    ("Bach and Mozart"). Free text now changes only to a word of its own class."""
    from ufuzz.operators.unrelated_edit import _alternatives, _StateIndex

    prov = Provenance(facts=(Fact("Ana", "home country", "Sweden", ("m1",)),
                             Fact("Ana", "dream", "a safe and inviting place", ("m2",))),
                      entities=(), memory_ids=frozenset({"m1", "m2"}),
                      memory_texts=(("m1", "Ana: I'm from Sweden."), ("m2", "Ana: I want a safe and inviting place.")))
    index = _StateIndex(prov)
    alts = _alternatives(index, prov.facts[0])
    assert alts and "a safe and inviting place" not in alts and "Norway" in alts
    assert _alternatives(index, prov.facts[1]) == set()


_RELATIVE = ("yesterday", "last week", "last Friday", "two weeks ago", "this month", "next month", "last year")


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_RELATIVE), st.sampled_from(("7 May 2023", "May 2023", "2022", "19 January, 2023")),
       st.text(alphabet="abcdefgh ", min_size=0, max_size=20), st.booleans())
def test_rewrite_time_writes_the_date_where_the_one_relative_time_stood(rel, value, filler, lead):
    """Property: with exactly one relative time in the turn, the rewrite holds the new date once, no relative
    time any more, and everything else of the turn unchanged; with two, there is no rewrite."""
    from ufuzz.seeds.importers.fields import RELATIVE_TIME, rewrite_time

    filler = RELATIVE_TIME.sub("", filler)
    text = f"Ana: {rel.capitalize()} I went{filler}." if lead else f"Ana: I went{filler} {rel}."
    out = rewrite_time(text, value)
    assert out is not None and out.count(value) == 1 and not RELATIVE_TIME.search(out)
    before, _, after = text.partition(rel.capitalize() if lead else rel)
    assert out.startswith(before) and out.endswith(after)
    assert rewrite_time(f"{text} And {rel} again.", value) is None


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted({m for ms in __import__("ufuzz.seeds.importers.fields", fromlist=["x"])
                               .TEXT_CLASSES.values() for m in ms})), st.booleans())
def test_a_class_pool_holds_other_members_of_the_same_class(member, capital):
    """Property: every value of a word's pool is another word of its class, never the word itself."""
    from ufuzz.seeds.importers.fields import text_class, value_pool

    word = member[0].upper() + member[1:] if capital else member
    cls = text_class(word)
    pool = value_pool(word, "text", set(), ())
    if cls is None:  # in two classes: no type-compatible value can be told
        assert pool == ()
    else:
        assert pool and all(text_class(v) == cls and v.lower() != word.lower() for v in pool)


def _locomo_with_sibling(tmp_path):
    """The fixture with a second "What did Ben …?" question: a sibling of "What did Ben sell at the flea market?"."""
    data = json.loads((FIX / "locomo_annotated.json").read_text())
    data[0]["qa"].append({"question": "What did Ben fix in his garage?", "answer": "old bicycles",
                          "evidence": ["D1:4"], "category": 4})
    path = tmp_path / "locomo_sibling.json"
    path.write_text(json.dumps(data))
    return import_file("locomo", path).suite


def test_target_change_to_a_sibling_question_of_the_same_person(tmp_path):
    s = _locomo_with_sibling(tmp_path)
    op = operators()["target_change"]
    c, ref = _case(s, "What did Ben sell at the flea market?")
    assert "question=What did Ben fix in his garage?" in op.targets(c)
    m = op.mutate(c, ref, "question=What did Ben fix in his garage?", random.Random(0))
    assert m.query.text == "What did Ben fix in his garage?"
    assert m.reference.answer == "old bicycles" and "D1:4" in m.reference.supporting
    assert op.validate(c, m).ok
    # the parent's opening and wrapper are kept when the parent was reworded
    c2 = replace(c, query=replace(c.query, text="Quick question: what did Ben sell at the flea market?"))
    m2 = op.mutate(c2, ref, "question=What did Ben fix in his garage?", random.Random(0))
    assert m2.query.text == "Quick question: what did Ben fix in his garage?" and op.validate(c2, m2).ok
    # another text, another reference, a question the seed does not offer: rejected
    for bad in (replace(m, query=replace(m.query, text="What did Ben fix in his kitchen?")),
                replace(m, reference=ref.with_(query_id=m.query.id)),
                replace(m, detail="question=What did Ben paint for his mother?")):
        assert not op.validate(c, bad).ok
    # a sibling the state does not support is no move
    with pytest.raises(Rejected):
        op.mutate(c, ref, "question=What did Ben paint for his mother?", random.Random(0))


def test_update_is_not_offered_where_evidence_does_not_state_the_value():
    from ufuzz.operators.statewrite import uncarried_evidence
    texts = (("m1", "Mel: I'm excited about the trip"), ("m2", "Mel: Can't wait!"),
             ("m3", "Mel: we went camping last week"))
    prov = Provenance(facts=(), entities=(), memory_ids=frozenset({"m1", "m2", "m3"}), memory_texts=texts)
    assert uncarried_evidence(prov, Fact("Mel", "feeling", "excited", ("m1", "m2"))) == ["m2"]
    assert uncarried_evidence(prov, Fact("Mel", "feeling", "excited", ("m1",))) == []
    # a date the turn tells by a relative time is carried by it
    camping = Fact("Mel", "time: camping", "2 June 2023", ("m3",), value_type="date")
    assert uncarried_evidence(prov, camping) == []
