"""Validators reject wrong mutants (hand-built), accept only mutants whose text says what they claim, and never
look at retrieval. Real default suite; state validators on the real embedded backend."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.operator_kit import (
    NoRetrievalBackend,
    cases,
    embedded,
    operators,
    reference,
    rng,
    suite,
)
from ufuzz.backends.protocol import OpResult
from ufuzz.model import FuzzCase, Memory, Query, QueryFields, Reference, StateOp
from ufuzz.operators import Mutation, StateView
from ufuzz.seeds import wording

PARA, TC, UNS = operators()["paraphrase"], operators()["target_change"], operators()["unsupported"]
UPD, DEL, UNR = operators()["update"], operators()["delete"], operators()["unrelated_edit"]


def case(seed_id: str) -> FuzzCase:
    return next(c for c in cases() if c.id == seed_id)


def worded(c: FuzzCase, fields: QueryFields, template: str | None = None, context: str | None = None,
           form: str | None = None) -> str:
    q = c.query
    t = template or (q.template if fields.attribute == q.fields.attribute else
                     wording.template_ids(fields.attribute)[0])
    return wording.realize(fields, template=t, form=form or q.form,
                           context=q.context if context is None else context)


def para(c: FuzzCase, text: str, llm: bool = False, **kw) -> Mutation:
    q = replace(c.query, id=c.query.id + "~p", text=text, **kw)
    if llm:
        q = replace(q, template="llm", form="free")
    return Mutation(query=q, provenance=c.provenance, reference=reference(c), detail="llm:reword" if llm else "x")


def rejected(op, c, m, view=None, match: str = "") -> str:
    v = op.validate(c, m, view)
    assert not v.ok, f"{op.name} accepted a wrong mutant: {m.query.text!r} {m.detail}"
    assert v.reason, "a rejection must say why"
    if match:
        assert match.lower() in v.reason.lower(), v.reason
    return v.reason


# -- paraphrase --------------------------------------------------------------------------------------------
#: p1-s2: "I'm sorting out my notes. Tell me what Kaito's hobby is now." (Kaito, hobby, current)
P = "p1-s2"


def test_paraphrase_baseline_accepts_a_real_rewording():
    c = case(P)
    other = [t for t in wording.template_ids("hobby") if t != c.query.template][0]
    good = para(c, worded(c, c.query.fields, template=other), template=other)
    assert PARA.validate(c, good).ok
    assert PARA.validate(c, para(c, worded(c, c.query.fields, context=""), context="")).ok  # shorten


@pytest.mark.parametrize("llm", [False, True])
def test_paraphrase_changing_a_field_in_the_text_is_rejected(llm):
    c = case(P)
    f = c.query.fields
    other_entity = next(e for e in c.provenance.entity_names() if e != f.entity
                        and c.provenance.entity_type(e) == "person")
    texts = {
        "entity": c.query.text.replace(f.entity, other_entity),
        "attribute": worded(c, replace(f, attribute="job")),
        "scope": worded(c, replace(f, scope="previous")),
    }
    for what, text in texts.items():
        rejected(PARA, c, para(c, text, llm=llm), match=what if what != "entity" else "")


def test_paraphrase_that_declares_other_fields_is_rejected():
    c = case(P)
    for f in (replace(c.query.fields, entity="Greta"), replace(c.query.fields, scope="any"),
              replace(c.query.fields, attribute="job")):
        rejected(PARA, c, para(c, worded(c, f), fields=f), match="fields changed")


@pytest.mark.parametrize("llm", [False, True])
@pytest.mark.parametrize("addition", [
    " and Greta's",  # another known entity
    " with Dario",  # a person name that is a value of the state (Kaito's partner), not an entity
    " with Bob",  # a name nobody knows
    " at Halcyra Health",  # a value of the state
    " in 2021",  # a date
    " last summer",  # a time expression
    " on Saturdays",  # a time of the week
    " since the move",  # a time bound
    " apart from painting",  # an exclusion
    " in the past",  # a second scope marker
    " at the gym",  # a second attribute
])
def test_paraphrase_adding_a_restrictive_condition_is_rejected(llm, addition):
    c = case(P)
    text = c.query.text[:-1] + addition + "."
    rejected(PARA, c, para(c, text, llm=llm))


def test_paraphrase_adding_words_outside_the_templates_is_rejected():
    c = case(P)
    rejected(PARA, c, para(c, c.query.text[:-1] + " in the garden."), match="wording")
    rejected(PARA, c, para(c, "Hmm. " + c.query.text, context="Hmm."), match="context")


@pytest.mark.parametrize("llm", [False, True])
def test_paraphrase_dropping_the_entity_is_rejected(llm):
    c = case(P)
    for text in (c.query.text.replace("Kaito's", "their"), c.query.text.replace("Kaito's", "the"),
                 "I'm sorting out my notes. Tell me what the hobby is now."):
        rejected(PARA, c, para(c, text, llm=llm))


def test_paraphrase_unchanged_text_and_restrictive_context_are_rejected():
    c = case(P)
    rejected(PARA, c, para(c, c.query.text), match="unchanged")
    rejected(PARA, c, para(c, "Greta asked me. " + c.query.text, llm=True))


def test_free_text_paraphrase_must_keep_the_content_words():
    c0 = case(P)
    q = Query(id="free-q", text="What's Kaito's hobby these days?", fields=c0.query.fields, form="free")
    c = replace(c0, query=q)
    ok = Mutation(query=replace(q, id="free-q~p", text="What is Kaito's hobby these days?"),
                  provenance=c.provenance, reference=reference(c0), detail="reword")
    assert PARA.validate(c, ok).ok
    for text in ("What's Kaito's main hobby these days?", "What's Kaito's hobby these days in town?",
                 "Quick question: what's Kaito's new hobby these days?"):
        bad = Mutation(query=replace(q, id="free-q~p", text=text), provenance=c.provenance,
                       reference=reference(c0), detail="reword")
        rejected(PARA, c, bad)


# -- target change -----------------------------------------------------------------------------------------
def _tc(c: FuzzCase, fields: QueryFields, text: str | None = None, ref: Reference | None = None) -> Mutation:
    qid = c.query.id + "~t"
    q = replace(c.query, id=qid, fields=fields, text=text if text is not None else worded(c, fields))
    return Mutation(query=q, provenance=c.provenance,
                    reference=ref or c.provenance.reference_for(qid, fields), detail="x")


def test_target_change_baseline_and_wrong_mutants():
    c = next(x for x in cases() if any(t.startswith("entity=") for t in TC.targets(x)))
    target = next(t for t in TC.targets(c) if t.startswith("entity="))
    new = replace(c.query.fields, entity=target.partition("=")[2], answerable=True)
    assert TC.validate(c, _tc(c, new)).ok
    # the text still expresses the old entity
    rejected(TC, c, _tc(c, new, text=c.query.text))
    # both entities in the text
    rejected(TC, c, _tc(c, new, text=worded(c, new)[:-1] + f" or {c.query.fields.entity}'s?"))
    # the reference is not the provenance-derived one
    good = c.provenance.reference_for(c.query.id + "~t", new)
    for wrong in (reference(c).with_(query_id=good.query_id), good.with_(supporting=reference(c).supporting),
                  good.with_(stale_answers=(good.answer,)), good.with_(invalidated=good.supporting)):
        rejected(TC, c, _tc(c, new, ref=wrong), match="reference")
    # two fields changed at once
    two = replace(new, scope="previous" if new.scope != "previous" else "current")
    rejected(TC, c, _tc(c, two), match="exactly one")


def test_target_change_to_an_unsupported_target_is_rejected():
    c = case(P)  # nobody's hobby is recorded in p1
    others = [e for e in c.provenance.entity_names() if e != c.query.fields.entity
              and not c.provenance.facts_for(e, "hobby") and c.provenance.entity_type(e) == "person"]
    assert others
    for e in others:
        ref = Reference(query_id="x", answer="painting")  # a made-up answer
        rejected(TC, c, _tc(c, replace(c.query.fields, entity=e), ref=ref), match="no supported value")
    absent = replace(c.query.fields, entity="Zofia")
    rejected(TC, c, _tc(c, absent, ref=Reference(query_id="x", answer="chess")))


def test_target_change_to_an_entity_of_another_type_is_rejected():
    c = case("p11-s5")  # Mufflin (pet), favourite_food, previous
    person = next(e for e in c.provenance.entity_names() if c.provenance.entity_type(e) == "person"
                  and c.provenance.previous(e, "favourite_food"))
    rejected(TC, c, _tc(c, replace(c.query.fields, entity=person)), match="type")


# -- unsupported -------------------------------------------------------------------------------------------
def _uns(c: FuzzCase, fields: QueryFields, ref: Reference | None = None) -> Mutation:
    qid = c.query.id + "~u"
    q = replace(c.query, id=qid, fields=fields, text=worded(c, fields))
    return Mutation(query=q, provenance=c.provenance,
                    reference=ref or Reference(query_id=qid, answer=None, abstain=True), detail="x")


def test_unsupported_baseline_and_wrong_mutants():
    c = cases()[0]  # p1-s1: Kaito, employer, any
    f = c.query.fields
    assert UNS.validate(c, _uns(c, replace(f, entity="Zofia", answerable=False))).ok
    # the "absent" entity is mentioned by a memory (a distractor name without provenance facts)
    assert c.provenance.text_mentions("Dario") and "Dario" not in c.provenance.entity_names()
    rejected(UNS, c, _uns(c, replace(f, entity="Dario", answerable=False)))  # unknown name: not even read
    absent = dict(c.descriptor.absent_targets, entity=("Dario",))
    listed = replace(c, descriptor=replace(c.descriptor, absent_targets=absent))
    rejected(UNS, listed, _uns(listed, replace(f, entity="Dario", answerable=False)), match="appears in the memory")
    # the "absent" entity is a known entity of the state
    rejected(UNS, c, _uns(c, replace(f, entity="Greta", answerable=False)))
    # the "absent" attribute is recorded for the entity
    recorded = next(a for a in c.provenance.attributes_of(f.entity) if a != f.attribute)
    rejected(UNS, c, _uns(c, replace(f, attribute=recorded, answerable=False)), match="records")
    # the reference does not abstain
    rejected(UNS, c, _uns(c, replace(f, entity="Zofia"), ref=Reference(query_id="x", answer="Halcyra Health")),
             match="abstention")
    # the attribute does not apply to the entity's type
    species = replace(f, attribute="species", answerable=False)
    q = replace(c.query, id="u", fields=species,
                text=wording.realize(species, template="species.species", form="question"))
    rejected(UNS, c, Mutation(query=q, provenance=c.provenance,
                              reference=Reference(query_id="u", answer=None, abstain=True)), match="type")


# -- state validators ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module", params=["append", "rewrite"])
def backend(request, tmp_path_factory):
    be = embedded(tmp_path_factory.mktemp("validators"), update_policy=request.param, delete="tombstone")
    built = {cid: be.build(cp) for cid, cp in suite().checkpoints.items()}
    yield be, built
    be.close()


def _fork(backend, c: FuzzCase) -> StateView:
    be, built = backend
    return StateView(be, be.fork(built[c.checkpoint_id]))


UC = "p1-s1"  # Kaito's employer: Halcyra Health (p1-m2)


def _update_mutation(c: FuzzCase, view: StateView, value: str, text: str, ts: str) -> Mutation:
    f = c.query.fields
    fact = c.provenance.active(f.entity, f.attribute)
    old_id = fact.evidence[0]
    new = Memory(id=old_id + "~bad", text=text, timestamp=ts)
    res = view.update(old_id, new)
    prov = c.provenance.with_update(f.entity, f.attribute, value, res.written or (new.id,), ts,
                                    removed_ids=res.removed)
    ref = prov.reference_for(c.query.id, f)
    return Mutation(query=c.query, provenance=prov, reference=ref, ops=(StateOp("update", old_id, new),),
                    results=(res,), detail="hand-made")


def test_update_baseline_is_accepted(backend):
    c = case(UC)
    view = _fork(backend, c)
    m = _update_mutation(c, view, "Tellaris Bank", "My flatmate Kaito has been with Tellaris Bank for ages.",
                         "2030-01-01T00:00:00")
    assert UPD.validate(c, m, view).ok


def test_update_whose_memory_lacks_the_new_value_is_rejected(backend):
    c = case(UC)
    view = _fork(backend, c)
    m = _update_mutation(c, view, "Tellaris Bank", "My flatmate Kaito has a new job.", "2030-01-01T00:00:00")
    rejected(UPD, c, m, view, match="does not carry the new value")


def test_update_that_is_not_the_latest_is_rejected(backend):
    c = case(UC)
    view = _fork(backend, c)  # written with a timestamp older than other memories of the state
    m = _update_mutation(c, view, "Tellaris Bank", "Kaito joined Tellaris Bank.", "2000-01-01T00:00:00")
    rejected(UPD, c, m, view, match="not the latest")
    view2 = _fork(backend, c)  # the latest when written, then something later arrives
    m2 = _update_mutation(c, view2, "Tellaris Bank", "Kaito joined Tellaris Bank.", "2030-01-01T00:00:00")
    assert UPD.validate(c, m2, view2).ok
    view2.add(Memory(id="later", text="I cleaned the windows.", timestamp="2031-01-01T00:00:00"))
    rejected(UPD, c, m2, view2, match="not the latest")


def test_update_that_keeps_the_weekday_asked_is_no_new_value(backend):
    """Hand audit: "Friday mornings" updated to "Friday at dawn" left the stale memory answering the gym day
    asked right, and its rank above the new one was reported as a failure."""
    c = case("p4-s8")  # "… on what weekday Anselm trains currently": Friday mornings
    assert c.provenance.active("Anselm", "gym_day").value == "Friday mornings"
    same_day = replace(c, descriptor=replace(c.descriptor, value_pool=("Friday at dawn", "Tuesday nights")))
    assert UPD.targets(same_day) == ["value=Tuesday nights"]
    view = _fork(backend, c)
    m = _update_mutation(c, view, "Friday at dawn", "Anselm goes to the gym on Friday at dawn.",
                         "2030-01-01T00:00:00")
    rejected(UPD, same_day, m, view, match="old one still answers")
    view2 = _fork(backend, c)
    m2 = _update_mutation(c, view2, "Tuesday nights", "Anselm goes to the gym on Tuesday nights.",
                          "2030-01-01T00:00:00")
    assert UPD.validate(same_day, m2, view2).ok


def test_update_the_backend_refused_is_rejected(backend):
    c = case(UC)
    view = _fork(backend, c)
    refused = view.update("no-such-memory", Memory(id="n~u", text="Kaito joined Tellaris Bank.",
                                                   timestamp="2030-01-01T00:00:00"))
    assert not refused.ok
    good = _update_mutation(c, view, "Tellaris Bank", "Kaito joined Tellaris Bank.", "2030-01-01T00:00:00")
    rejected(UPD, c, replace(good, results=(refused,)), view, match="successful update")
    rejected(UPD, c, replace(good, results=()), view)
    fake = OpResult("update", True, good.ops[0].target, written=("never-written",))
    rejected(UPD, c, replace(good, results=(fake,)), view)  # reported, but not stored


def test_update_with_a_reference_not_of_the_written_value_is_rejected(backend):
    c = case(UC)
    view = _fork(backend, c)
    m = _update_mutation(c, view, "Tellaris Bank", "Kaito joined Tellaris Bank.", "2030-01-01T00:00:00")
    rejected(UPD, c, replace(m, reference=reference(c)), view)  # the parent's (old) reference
    rejected(UPD, c, replace(m, reference=m.reference.with_(supporting=("p1-m1",))), view)
    rejected(UPD, c, replace(m, reference=m.reference.with_(supporting=())), view)


def test_delete_validated_against_a_state_where_nothing_was_deleted_is_rejected(backend):
    c = case(UC)
    done, untouched = _fork(backend, c), _fork(backend, c)
    m = DEL.mutate(c, reference(c), "all", rng("d"), done)
    assert DEL.validate(c, m, done).ok
    rejected(DEL, c, m, untouched, match="still")


def test_delete_that_also_removes_another_memory_is_rejected(backend):
    c = case(UC)
    view = _fork(backend, c)
    m = DEL.mutate(c, reference(c), "all", rng("d2"), view)
    other = next(mid for mid in sorted(c.provenance.memory_ids) if mid not in {o.target for o in m.ops})
    assert view.delete(other).ok  # collateral damage (tombstoned: still listed, inactive)
    rejected(DEL, c, m, view, match="other memories")


def test_delete_with_a_reference_supported_by_deleted_memory_is_rejected(backend):
    c = case(UC)
    view = _fork(backend, c)
    m = DEL.mutate(c, reference(c), "all", rng("d3"), view)
    rejected(DEL, c, replace(m, reference=reference(c)), view, match="deleted memory")


def _unrelated(c: FuzzCase, op: StateOp, res: OpResult) -> Mutation:
    return Mutation(query=c.query, provenance=c.provenance, reference=reference(c), ops=(op,), results=(res,))


def test_unrelated_edit_touching_query_relevant_memory_is_rejected(backend):
    c = case(UC)
    relevant = sorted(c.provenance.relevant_ids("Kaito", "employer"))[0]
    view = _fork(backend, c)
    new = Memory(id=relevant + "~e", text="My flatmate Kaito has been with Tellaris Bank for ages.",
                 timestamp="2030-01-01T00:00:00")
    rejected(UNR, c, _unrelated(c, StateOp("update", relevant, new), view.update(relevant, new)), view)
    view = _fork(backend, c)
    rejected(UNR, c, _unrelated(c, StateOp("delete", relevant), view.delete(relevant)), view)
    # the op claims an unrelated delete, but the state lost (tombstoned) the relevant memory
    view = _fork(backend, c)
    unrelated = sorted(UNR._unrelated_memories(c))[0]
    res = view.delete(unrelated)
    view.delete(relevant)
    rejected(UNR, c, _unrelated(c, StateOp("delete", unrelated), res), view, match="relevant")


def test_unrelated_edit_writing_about_the_queried_entity_is_rejected(backend):
    c = case(UC)
    view = _fork(backend, c)
    for i, text in enumerate(("Kaito went hiking.", "Halcyra Health opened a new office.")):
        mem = Memory(id=f"u{i}", text=text, timestamp="2030-01-01T00:00:00")
        rejected(UNR, c, _unrelated(c, StateOp("add", None, mem), view.add(mem)), view, match="mentions")


# -- properties --------------------------------------------------------------------------------------------
def _known(c: FuzzCase) -> list[str]:
    d = c.descriptor
    return sorted(set(c.provenance.entity_names()) | set(d.replacement_targets.get("entity", ()))
                  | set(d.absent_targets.get("entity", ())))


def _norm(f: QueryFields) -> QueryFields:
    return replace(f, answerable=True)


@settings(max_examples=150, deadline=None)
@given(c=st.sampled_from(cases()), data=st.data(), r=st.integers(0, 2**32 - 1))
def test_accepted_paraphrases_re_extract_to_the_parents_fields(c, data, r):
    t = data.draw(st.sampled_from(PARA.targets(c)))
    m = PARA.mutate(c, reference(c), t, rng(r))
    if PARA.validate(c, m).ok:
        got = wording.fields_of(m.query.text, _known(c))
        assert got is not None and got == _norm(c.query.fields), (m.query.text, got)
        assert m.reference == reference(c)


@settings(max_examples=150, deadline=None)
@given(c=st.sampled_from([c for c in cases() if TC.targets(c)]), data=st.data(), r=st.integers(0, 2**32 - 1))
def test_accepted_target_changes_re_extract_to_the_new_fields(c, data, r):
    t = data.draw(st.sampled_from(TC.targets(c)))
    m = TC.mutate(c, reference(c), t, rng(r))
    if TC.validate(c, m).ok:
        field, _, value = t.partition("=")
        new = replace(c.query.fields, **{field: value})
        got = wording.fields_of(m.query.text, _known(c))
        assert got is not None and got == _norm(new), (m.query.text, got)
        assert m.reference == c.provenance.reference_for(m.query.id, m.query.fields)


@pytest.fixture(scope="module")
def no_retrieval(tmp_path_factory):
    be = embedded(tmp_path_factory.mktemp("noretrieval"), "append", "tombstone", cls=NoRetrievalBackend)
    built = {cid: be.build(cp) for cid, cp in suite().checkpoints.items()}
    yield be, built
    be.close()


def test_no_retrieval_backend_really_forbids_retrieval(no_retrieval):
    be, built = no_retrieval
    with pytest.raises(AssertionError):
        be.retrieve(next(iter(built.values())), "anything", 3)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=st.sampled_from(cases()), name=st.sampled_from(sorted(operators())), data=st.data(),
       r=st.integers(0, 2**16))
def test_operators_and_validators_never_retrieve(no_retrieval, c, name, data, r):
    be, built = no_retrieval
    op = operators()[name]
    targets = op.targets(c)
    if not targets:
        return
    t = data.draw(st.sampled_from(targets))
    handle = be.fork(built[c.checkpoint_id])
    try:
        view = StateView(be, handle)  # query operators are handed a view too: they must not use it either
        m = op.mutate(c, reference(c), t, rng(r), view)
        assert op.validate(c, m, view).ok
    finally:
        be.release(handle)


def test_an_updated_value_takes_the_article_it_needs():
    from ufuzz.operators.statewrite import substitute

    assert substitute("Mopsa is a duck, in case you wondered.", "duck", "alpaca") == \
        "Mopsa is an alpaca, in case you wondered."
    assert substitute("An urban planner is what Farid is.", "urban planner", "farrier") == "A farrier is what Farid is."
    assert substitute("Ana lives in Porto.", "Porto", "Oslo") == "Ana lives in Oslo."
    assert substitute("Ana lives in Porto.", "Lisbon", "Oslo") is None
