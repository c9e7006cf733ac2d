"""Oracle by levels: selection whenever retrieval is visible, response only with a responder; caused failures;
keys and causes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ufuzz.model import (
    Execution,
    FuzzCase,
    MutationDescriptor,
    Obligation,
    Query,
    QueryFields,
    Reference,
    StateOp,
)
from ufuzz.model.provenance import Provenance
from ufuzz.oracles.expectations import Outcome, response, selection
from ufuzz.oracles.matching import contains_answer, is_abstention
from ufuzz.oracles.verdict import (
    Context,
    Tally,
    cause_key,
    caused,
    failure,
    failure_key,
    judge,
    normalise_id,
    root_id,
)


def ex(ids, resp=None, scores=None, responder="answerer:test"):
    return Execution(case_id="c", state_key="s", query="q", top_ids=list(ids),
                     top_scores=list(scores or [1.0] * len(ids)), top_texts=[f"text {i}" for i in ids],
                     response=resp, responder=responder if resp is not None else None)


REF = Reference("q", "Velmora", supporting=("m1",), invalidated=("m0",), stale_answers=("Brask",))
ABSTAIN = Reference("q", None, abstain=True, invalidated=("m1",), stale_answers=("Velmora",))


# ---------------------------------------------------------------- selection level
def test_selection_passes_when_support_is_ranked_first():
    assert selection(REF, ex(["m1", "m0"])).passed


def test_missing_evidence_and_stale_ranked_above_valid():
    o = selection(REF, ex(["m5", "m6"]))
    assert (o.passed, o.kind, o.level) == (False, "missing_evidence", "selection")
    o = selection(REF, ex(["m0", "m1"]))
    assert (o.kind, o.offending) == ("stale_ranked_above_valid", ("m0",))
    # the invalidated memory retrieved and the evidence beyond the top-k: it outranks the evidence all the same
    o = selection(REF, ex(["m5", "m0"]))
    assert (o.kind, o.offending) == ("stale_ranked_above_valid", ("m0",))


def test_deleted_evidence_retrieved_whatever_the_reference():
    o = selection(ABSTAIN, ex(["m3", "m1"]), deleted=("m1",))
    assert (o.kind, o.offending) == ("deleted_evidence_retrieved", ("m1",))


def test_abstention_is_judged_at_selection_only_against_the_backends_own_threshold():
    retrieved = ex(["m1", "m3"], scores=[0.7, 0.2])
    assert selection(ABSTAIN, retrieved).passed  # no declared threshold: nothing to judge
    o = selection(ABSTAIN, retrieved, threshold=0.5)
    assert (o.kind, o.offending) == ("unsupported_retrieved", ("m1",))
    assert selection(ABSTAIN, retrieved, threshold=0.8).passed  # the decoy is below the system's cut-off
    # a memory that is not a decoy (not invalidated) scored high is not a failure
    assert selection(ABSTAIN, ex(["m3"], scores=[0.9]), threshold=0.5).passed


def test_below_threshold_results_are_not_retrieved():
    o = selection(REF, ex(["m1", "m0"], scores=[0.3, 0.9]), threshold=0.5)
    assert o.kind == "stale_ranked_above_valid" and o.offending == ("m0",) and o.detail["selected"] == ["m0"]
    o = selection(REF, ex(["m1", "m5"], scores=[0.3, 0.9]), threshold=0.5)
    assert o.kind == "missing_evidence" and o.detail["selected"] == ["m5"]


# ---------------------------------------------------------------- response level
def test_no_responder_no_response_level():
    assert response(REF, ex(["m1"])) is None
    assert set(judge(REF, ex(["m1"]), (), Context())) == {"selection"}


def test_response_kinds():
    assert response(REF, ex(["m1"], "Lena lives in Velmora.")).passed
    assert response(REF, ex(["m1", "m0"], "Lena lives in Brask.")).kind == "stale_answer"
    assert response(REF, ex(["m1", "m9"], "Omar likes tea.")).kind == "wrong_answer"
    assert response(REF, ex(["m1"], "I don't know.")).kind == "false_abstention"
    assert response(ABSTAIN, ex(["m1"], "I don't know.")).passed
    assert response(ABSTAIN, ex(["m3"], "Omar works at Quill.")).kind == "unsupported_answer"


def test_a_stale_answer_names_the_memory_that_carries_the_value():
    e = Execution(case_id="c", state_key="s", query="q", top_ids=["m1", "m0"], top_scores=[1, 1],
                  top_texts=["Lena lives in Velmora.", "Lena lives in Brask."], response="Brask.",
                  responder="backend")
    o = response(REF, e)
    assert (o.kind, o.offending, o.detail["responder"]) == ("stale_answer", ("m0",), "backend")


def test_aliases_are_accepted_answers():
    ref = Reference("q", "Biscuit", aliases=("Pepper",), supporting=("m1", "m2"))
    assert response(ref, ex(["m2"], "Pepper, I think.")).passed


def test_hidden_retrieval_judges_the_response_only():
    out = judge(REF, ex([], "Omar likes tea."), (), Context(visible=False))
    assert set(out) == {"response"} and out["response"].kind == "wrong_answer"


def test_matching():
    assert contains_answer("She moved to Velmora!", "velmora")
    assert not contains_answer("She moved to Velmora Heights", "Velmora Height")
    assert not contains_answer("Velmoran food", "Velmora")
    assert is_abstention("I don't know.") and is_abstention(None) and not is_abstention("Velmora")


# ---------------------------------------------------------------- caused by the mutation
def out(level, passed, kind=None):
    return Outcome(passed, level, None if passed else kind or "missing_evidence")


def test_a_mutant_failure_counts_only_where_the_parent_passes_the_same_level():
    good = {"selection": out("selection", True), "response": out("response", True)}
    bad_sel = {"selection": out("selection", False), "response": out("response", True)}
    mutant = {"selection": out("selection", False), "response": out("response", False, "wrong_answer")}
    assert caused(good, mutant).level == "selection"
    # the parent fails selection too: only the response level can blame the mutation
    assert caused(bad_sel, mutant).level == "response"
    assert caused({"selection": out("selection", False)}, {"selection": out("selection", False)}) is None


levels = st.fixed_dictionaries({}, optional={
    "selection": st.booleans().map(lambda p: out("selection", p)),
    "response": st.booleans().map(lambda p: out("response", p, "wrong_answer"))})


@given(levels, levels)
def test_caused_never_blames_a_level_the_parent_fails_or_the_mutant_passes(parent, mutant):
    got = caused(parent, mutant)
    if got is None:
        assert not any(lv in parent and parent[lv].passed and not m.passed for lv, m in mutant.items())
        return
    assert not got.passed and parent[got.level].passed
    # the first such level: a selection failure is never passed over for a response one
    if got.level == "response" and "selection" in mutant and "selection" in parent:
        assert mutant["selection"].passed or not parent["selection"].passed


# ---------------------------------------------------------------- keys and causes
def test_failure_key_normalises_generated_ids_only():
    assert normalise_id("p1-m3~u1abcd") == normalise_id("p1-m3~u1ef01") == "p1-m3~u"
    assert normalise_id("p1-m3") == "p1-m3"
    a = failure_key("s", "update", "value=X", "stale_answer", "response", ("p1-m3~u1abcd",))
    b = failure_key("s", "update", "value=X", "stale_answer", "response", ("p1-m3~u2ffff",))
    c = failure_key("s", "update", "value=Y", "stale_answer", "response", ("p1-m3~u2ffff",))
    assert a == b != c


def _case(cid, seed, operator, target, entity="Lena", attribute="city"):
    q = Query(f"{cid}-q", "Where does Lena live?", QueryFields(entity, attribute))
    return FuzzCase(id=cid, seed_id=seed, checkpoint_id="c", query=q, descriptor=MutationDescriptor(),
                    provenance=Provenance((), (), frozenset()), parent_id="p", operator=operator,
                    obligation=Obligation(seed, operator, target))


def test_one_defect_is_one_cause_across_values_and_replacement_targets():
    o = ("p1-m3",)
    a = cause_key(_case("x1", "s1", "update", "value=Brask"), "stale_ranked_above_valid", "selection", o)
    b = cause_key(_case("x2", "s1", "update", "value=Quill"), "stale_ranked_above_valid", "selection", o)
    assert a == b  # the value the update wrote is not part of the cause
    t1 = cause_key(_case("x3", "s1", "target_change", "entity=Omar", "Omar"), "missing_evidence", "selection", ())
    t2 = cause_key(_case("x4", "s2", "target_change", "entity=Ines", "Ines"), "missing_evidence", "selection", ())
    assert t1 == t2  # the swapped entity is not part of the cause
    other = cause_key(_case("x5", "s1", "update", "value=Brask", attribute="employer"), "stale_ranked_above_valid",
                      "selection", o)
    assert other != a


def test_one_defect_is_one_cause_along_a_chain_of_updates():
    """An update of an update: the first version and the second both outrank the third, or only the second does;
    it is the same memory's old value outranking its replacement, on the same fact — one cause (the unique-failure
    keys stay apart: they are the paper's unit)."""
    assert root_id("p7-m22~u1a9a7~u2b3c4") == root_id("p7-m22~u1a9a7") == root_id("p7-m22") == "p7-m22"
    assert root_id("cp~b1abcd-3") == root_id("cp~a1b2c3") == "cp" and root_id("mem~x") == "mem~x"
    once = cause_key(_case("x1", "s1", "update", "value=Brask"), "stale_ranked_above_valid", "selection",
                     ("p1-m3",))
    chain = cause_key(_case("x2", "s1", "update", "value=Quill"), "stale_ranked_above_valid", "selection",
                      ("p1-m3", "p1-m3~u1abcd"))
    second = cause_key(_case("x3", "s1", "update", "value=Quill"), "stale_ranked_above_valid", "selection",
                       ("p1-m3~u1abcd",))
    assert once == chain == second
    other = cause_key(_case("x4", "s1", "update", "value=Quill"), "stale_ranked_above_valid", "selection",
                      ("p1-m4~u1abcd",))
    assert other != once  # another memory's version is another defect
    keys = {failure_key("s1", "update", "value=Quill", "stale_ranked_above_valid", "selection", o)
            for o in (("p1-m3",), ("p1-m3", "p1-m3~u1abcd"), ("p1-m3~u1abcd",))}
    assert len(keys) == 3


def test_one_or_two_out_of_date_memories_above_the_current_one_are_one_cause():
    """Hand audit (LongMemEval): an update's rewritten memory alone above its replacement, or with an echo of the old
    value beside it, is one defect of one fact: one cause (two unique failures). For an update the cause is the
    memory it rewrote; for any other operator the highest-ranked out-of-date memory."""
    from dataclasses import replace

    from ufuzz.model import Memory, StateOp

    upd = (StateOp("update", "p1-m3", Memory("p1-m3~u1abcd", "Lena lives in Quill.", "2024-02-01T00:00:00")),)
    m = replace(_case("x1", "s1", "update", "value=Quill"), ops=upd)
    alone = cause_key(m, "stale_ranked_above_valid", "selection", ("p1-m3",))
    echo_first = cause_key(m, "stale_ranked_above_valid", "selection", ("p1-m9", "p1-m3"))
    echo_only = cause_key(m, "stale_ranked_above_valid", "selection", ("p1-m9",))
    assert alone == echo_first == echo_only
    assert len({failure_key("s1", "update", "value=Quill", "stale_ranked_above_valid", "selection", o)
                for o in (("p1-m3",), ("p1-m9", "p1-m3"))}) == 2
    t = _case("x2", "s1", "target_change", "scope=current")
    first = cause_key(t, "stale_ranked_above_valid", "selection", ("p1-m3",))
    assert cause_key(t, "stale_ranked_above_valid", "selection", ("p1-m3", "p1-m9")) == first
    assert cause_key(t, "stale_ranked_above_valid", "selection", ("p1-m9", "p1-m3")) != first


def test_memories_drawn_by_an_unsupported_question_are_not_its_cause():
    """Hand count (mem0, LoCoMo dev): one question about an absent person drew one of Melanie's memories above the
    threshold worded with one absent name and another with another name. Which memories a threshold lets through
    is the wording's doing: one cause per question (its fact), the unique failures stay apart; another question's
    fact is another cause, and a delete's cause is still the memory it deleted."""
    from dataclasses import replace

    from ufuzz.model import StateOp

    farid = _case("x1", "s1", "unsupported", "entity=Farid", "Farid")
    ingrid = _case("x2", "s1", "unsupported", "entity=Ingrid", "Ingrid")
    a = cause_key(farid, "unsupported_retrieved", "selection", ("p1-m3",))
    b = cause_key(ingrid, "unsupported_retrieved", "selection", ("p1-m7", "p1-m9"))
    assert a == b
    assert len({failure_key("s1", "unsupported", t, "unsupported_retrieved", "selection", o)
                for t, o in (("entity=Farid", ("p1-m3",)), ("entity=Ingrid", ("p1-m7", "p1-m9")))}) == 2
    other = _case("x3", "s2", "unsupported", "entity=Farid", "Farid", attribute="employer")
    assert cause_key(other, "unsupported_retrieved", "selection", ("p1-m3",)) != a
    # the missing-evidence causes of one question still differ by the memory at fault
    assert cause_key(farid, "missing_evidence", "selection", ("p1-m3",)) != \
        cause_key(farid, "missing_evidence", "selection", ("p1-m7",))
    # a delete: the memory it deleted, whatever the memories returned after it
    d1 = replace(_case("x4", "s1", "delete", "p1-m3"), ops=(StateOp("delete", "p1-m3"),))
    d2 = replace(_case("x5", "s1", "delete", "p1-m4"), ops=(StateOp("delete", "p1-m4"),))
    assert cause_key(d1, "unsupported_retrieved", "selection", ("p1-m5",)) == \
        cause_key(d1, "unsupported_retrieved", "selection", ("p1-m6",))
    assert cause_key(d1, "unsupported_retrieved", "selection", ("p1-m5",)) != \
        cause_key(d2, "unsupported_retrieved", "selection", ("p1-m5",))


def test_failure_records_carry_level_cause_and_responder():
    m = _case("x1", "s1", "update", "value=Brask")
    e = ex(["m0", "m1"], "Brask", responder="reader:top-evidence")
    f = failure(m, response(REF, e), e, ex(["m1"]))
    assert (f.level, f.kind, f.responder, f.origin) == ("response", "stale_answer", "reader:top-evidence", "mutant")
    tally = Tally()
    assert not tally.add(f) and f.key in tally.reader and not tally.unique  # the reader's, never the system's
    g = failure(m, selection(REF, e), e, ex(["m1"]))
    assert g.responder is None and tally.add(g) and tally.causes == {g.cause}


def test_a_question_made_answerable_from_an_abstaining_parent_is_a_baseline_failure_of_that_question():
    """The parent abstained (nothing of finding evidence was tested); its re-asked question fails to retrieve
    its evidence on the same state: that is the new question's baseline failure, not a mutant failure."""
    from ufuzz.model import Execution, FuzzCase, MutationDescriptor, Provenance, Query, QueryFields, Reference
    from ufuzz.oracles.oracle import Oracle
    from ufuzz.oracles.verdict import BASELINE, Context

    got = []
    oracle = Oracle(lambda f, r: got.append(f), Context(visible=True, threshold=None))
    prov = Provenance(facts=(), entities=(), memory_ids=frozenset({"m1", "m2"}), memory_texts=())
    parent = FuzzCase(id="s1", seed_id="s1", checkpoint_id="c", descriptor=MutationDescriptor(), provenance=prov,
                      query=Query(id="s1", text="Where did Ben hike?", fields=QueryFields("Ben", "hike", "current",
                                                                                         False)))
    oracle.add_seed(parent, Reference(query_id="s1", answer=None, abstain=True, invalidated=("m1",)))
    child = parent.child("x1", operator="target_change",
                         query=Query(id="x1", text="Where did Ana hike?", fields=QueryFields("Ana", "hike", "current")))
    oracle.register("x1", Reference(query_id="x1", answer="Mount Tam", supporting=("m1",)))

    def ex(case):
        return Execution(case_id=case.id, query=case.query.text, top_ids=["m2"], top_scores=[0.5],
                         state_key=case.state_key)

    assert oracle.check(child, ex(child), parent, ex(parent)) is None
    assert [(f.origin, f.case_id, f.kind) for f in got] == [(BASELINE, "x1", "missing_evidence")]

    # on a state an ancestor changed (a delete of evidence the new question shares) it is no question's baseline —
    # it may pass on the checkpoint's own state — and whether the change or the question fails it cannot be told
    deleted = parent.child("d1", operator="delete", ops=(StateOp("delete", "m3"),))
    oracle.register("d1", Reference(query_id="s1", answer=None, abstain=True, invalidated=("m1",)))
    child2 = deleted.child("x2", operator="target_change",
                           query=Query(id="x2", text="Where did Ana hike?", fields=QueryFields("Ana", "hike", "current")))
    oracle.register("x2", Reference(query_id="x2", answer="Mount Tam", supporting=("m1",)))
    assert oracle.check(child2, ex(child2), deleted, ex(deleted)) is None
    assert len(got) == 1


def test_a_question_re_asked_after_an_abstaining_parent_on_a_changed_state_is_the_change_s_where_a_seed_tells():
    """The seed asking that very question passes on the checkpoint's own state: the state its ancestors changed is
    what fails it — a failure of the mutant's, with the control that says so (not dropped, not a baseline)."""
    from ufuzz.model import Execution, FuzzCase, MutationDescriptor, Provenance, Query, QueryFields, Reference
    from ufuzz.oracles.oracle import Oracle
    from ufuzz.oracles.verdict import Context

    got = []
    oracle = Oracle(lambda f, r: got.append(f), Context(visible=True, threshold=None))
    prov = Provenance(facts=(), entities=(), memory_ids=frozenset({"m1", "m2", "m3"}), memory_texts=())
    ana = QueryFields("Ana", "hike", "current")

    def seed(sid, text, fields, ref):
        case = FuzzCase(id=sid, seed_id=sid, checkpoint_id="c", descriptor=MutationDescriptor(), provenance=prov,
                        query=Query(id=sid, text=text, fields=fields))
        oracle.add_seed(case, ref)
        return case

    ben = seed("s1", "Where did Ben hike?", QueryFields("Ben", "hike", "current", False),
               Reference(query_id="s1", answer=None, abstain=True, invalidated=("m1",)))
    twin = seed("s2", "Where did Ana hike?", ana, Reference(query_id="s2", answer="Mount Tam", supporting=("m1",)))
    deleted = ben.child("d1", operator="delete", ops=(StateOp("delete", "m3"),))
    oracle.register("d1", Reference(query_id="s1", answer=None, abstain=True, invalidated=("m1",)))
    child = deleted.child("x1", operator="target_change", query=Query(id="x1", text="Where did Ana hike?", fields=ana))
    oracle.register("x1", Reference(query_id="x1", answer="Mount Tam", supporting=("m1",)))

    def ex(case, top):
        return Execution(case_id=case.id, query=case.query.text, top_ids=top, top_scores=[0.5] * len(top),
                         state_key=case.state_key)

    key = oracle.check(child, ex(child, ["m2"]), deleted, ex(deleted, ["m2"]),
                       run_seed=lambda sid: ex(twin, ["m1"]))
    assert key is not None and [(f.origin, f.case_id) for f in got] == [("mutant", "x1")]
    assert got[0].detail["control"]["passed"] and got[0].detail["control"]["seed"] == "s2"


def test_a_question_mutant_s_cause_is_its_question_s_whatever_operations_its_ancestors_made():
    """Hand audit, LoCoMo: the same rewording missing the same evidence on the checkpoint and on a state where an
    ancestor deleted another fact's evidence counted as two causes (the ancestor's last delete in the key)."""
    from ufuzz.model import Execution, FuzzCase, MutationDescriptor, Provenance, Query, QueryFields, Reference
    from ufuzz.oracles.verdict import failure

    prov = Provenance(facts=(), entities=(), memory_ids=frozenset({"m1", "m2", "m3"}), memory_texts=())
    fields = QueryFields("Mel", "time: park", "any")
    seed = FuzzCase(id="s1", seed_id="s1", checkpoint_id="c", descriptor=MutationDescriptor(), provenance=prov,
                    query=Query(id="s1", text="When did Mel go to the park?", fields=fields))
    ref = Reference(query_id="s1", answer="May", supporting=("m1",))
    deleted = seed.child("d1", operator="delete", ops=(StateOp("delete", "m3"),))

    def ex(case):
        return Execution(case_id=case.id, query=case.query.text, top_ids=["m2"], top_scores=[0.5],
                         state_key=case.state_key)

    def cause(parent, text, operator="paraphrase"):
        m = parent.child("p" + parent.id, operator=operator, query=Query(id="q", text=text, fields=fields))
        out = selection(ref, ex(m))
        return failure(m, out, ex(m), ex(parent)).cause

    assert cause(seed, "Quick question: when did Mel go to the park?") == \
        cause(deleted, "I'd like to know: when did Mel go to the park?")
    # a state operation's own failure is about the operation: another delete, another cause
    def delete_cause(target):
        d = seed.child("d-" + target, operator="delete", ops=(StateOp("delete", target),))
        return failure(d, selection(ref, ex(d)), ex(d), ex(seed)).cause

    assert delete_cause("m2") != delete_cause("m3")


# -- abstention phrases per responder (issue 23, item 5) -----------------------------------------------------

def test_abstention_phrases_are_the_responders_own():
    from ufuzz.oracles.matching import ABSTAIN_PATTERNS, Abstention, is_abstention

    assert ABSTAIN_PATTERNS  # the documented defaults
    assert not is_abstention("No matching note.")  # a product's own wording is an answer by default
    product = Abstention(("No matching note.",))
    assert is_abstention("No matching note.", product) and is_abstention("no matching NOTE", product)
    assert not is_abstention("No matching notebook was found in Oslo.", product)  # whole words only
    assert is_abstention("The band is unknown to me.")  # the built-in "unknown" ...
    strict = Abstention(("No matching note.",), defaults=False)
    assert not is_abstention("Unknown Pleasures is Lena's favourite album.", strict)  # ... off for this product
    assert is_abstention("", strict) and is_abstention(None, strict)  # an empty response always abstains


def test_the_response_verdict_uses_the_contexts_abstention():
    from ufuzz.model import Execution, Reference
    from ufuzz.oracles.matching import Abstention
    from ufuzz.oracles.verdict import Context, judge

    ex = Execution("x", "k", "Who is Thea's employer?", response="No matching note.", responder="backend")
    ref = Reference("q", None, abstain=True)
    assert judge(ref, ex, (), Context(visible=False))["response"].kind == "unsupported_answer"
    ctx = Context(visible=False, abstention=Abstention(("No matching note.",)))
    assert judge(ref, ex, (), ctx)["response"].passed


def test_judging_carries_the_answerers_phrases_and_keeps_old_headers_alike():
    from ufuzz.oracles.judging import Judging

    assert "abstain_phrases" not in Judging().to_dict()  # a corpus header of the default reads as before
    j = Judging(abstain_phrases=["Nothing found"], abstain_defaults=False)
    assert j.abstain_phrases == ("Nothing found",)
    assert Judging.from_dict(j.to_dict()) == j
    assert Judging.of({"abstain_phrases": ["Nothing found"], "abstain_defaults": False}) == j
    with pytest.raises(ValueError, match="no words"):
        Judging(abstain_phrases=("...",))
