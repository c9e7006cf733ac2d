"""A question mutant that asks another seed's question is news only where that seed's question does not already
fail the same way on the unmutated state — also when the mutant's state carries its ancestors' operations (a
sibling question asked after an unrelated update is the sibling seed's baseline failure, reported once)."""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations

import pytest

from ufuzz.model import FuzzCase, Memory, Obligation
from ufuzz.model.case import StateOp
from ufuzz.model.execution import Execution
from ufuzz.oracles.oracle import Oracle


def _pair(suite):
    """Two answerable seeds of one checkpoint asking different facts with disjoint evidence, and a memory of
    the checkpoint that is evidence for neither (the ancestor's unrelated update)."""
    for a, b in combinations(suite.seeds, 2):
        ra, rb = suite.reference_of(a), suite.reference_of(b)
        if a.checkpoint_id != b.checkpoint_id or ra.abstain or rb.abstain or a.query.fields == b.query.fields:
            continue
        if not ra.supporting or not rb.supporting or set(ra.supporting) & set(rb.supporting):
            continue
        ck = suite.checkpoints[a.checkpoint_id]
        other = next((m for m in ck.memories if m.id not in set(ra.supporting) | set(rb.supporting)), None)
        if other is not None:
            return a, b, ck, other
    raise AssertionError("the default suite has two such seeds")


def _two_seeds(suite):
    """:func:`_pair`'s seeds as cases of an oracle that knows both, with their references and the failures sunk."""
    a, b, ck, other = _pair(suite)
    ra, rb = suite.reference_of(a), suite.reference_of(b)
    sunk: list = []
    oracle = Oracle(lambda f, _ref: sunk.append(f))
    seed_a, seed_b = FuzzCase.from_seed(a, ck), FuzzCase.from_seed(b, ck)
    oracle.add_seed(seed_a, ra)
    oracle.add_seed(seed_b, rb)
    return a, b, ck, other, ra, rb, sunk, oracle, seed_a, seed_b


def _run(case: FuzzCase, top: list[str]) -> Execution:
    return Execution(case_id=case.id, state_key=case.state_key, query=case.query.text, top_ids=top,
                     top_scores=[1.0 - i / 10 for i in range(len(top))])


@pytest.mark.parametrize("twin_fails", [True, False], ids=["twin-fails", "twin-passes"])
def test_a_sibling_question_after_an_ancestors_update_is_judged_against_the_sibling_seed(default_suite,
                                                                                         twin_fails):
    a, b, ck, other, ra, rb, sunk, oracle, seed_a, seed_b = _two_seeds(default_suite)
    edit = StateOp("update", other.id, Memory(other.id + "~u1", other.text + " Noted again.", other.timestamp))
    parent = seed_a.child("p1", operator="update", ops=(edit,), obligation=Obligation(a.id, "update", other.id))
    oracle.register(parent.id, ra)
    mutant = parent.child("m1", operator="target_change", query=b.query,
                          obligation=Obligation(a.id, "target_change", "question=" + b.query.text))
    oracle.register(mutant.id, rb.with_(query_id=mutant.id))
    assert mutant.ops == parent.ops and mutant.ops  # the mutation changed the question only, on a changed state

    parent_ex = _run(parent, list(ra.supporting))  # the parent finds its evidence
    mutant_ex = _run(mutant, [other.id])  # the sibling question misses its evidence
    twin_ex = _run(seed_b, [other.id] if twin_fails else list(rb.supporting))
    ran = []
    key = oracle.check(mutant, mutant_ex, parent, parent_ex, run_seed=lambda sid: ran.append(sid) or twin_ex)

    assert ran == [b.id], "the sibling seed's own execution decides"
    mutant_failures = [f for f in sunk if f.origin == "mutant"]
    if twin_fails:
        assert key is None and not mutant_failures
        assert [f.seed_id for f in sunk if f.origin == "baseline"] == [b.id]  # reported once, as the seed's
    else:
        assert key is not None and [f.operator for f in mutant_failures] == ["target_change"]
        # the question passes on the unmutated checkpoint: the failure says the inherited state change fails it
        assert mutant_failures[0].detail["control"] == {"seed": b.id, "query": b.query.text, "level": "selection",
                                                         "passed": True}
        # asked in other words of the seed's (its words inside an opening): the seed passing says nothing of this
        # wording, so the same words are asked on the checkpoint's own state — where they miss the evidence too, the
        # miss is the wording's (paraphrase's to find on that seed), where they find it, the state change's
        def reworded(case_id: str) -> FuzzCase:
            m = parent.child(case_id, operator="target_change",
                             query=replace(b.query, id=case_id, text="Put differently: " + b.query.text),
                             obligation=Obligation(a.id, "target_change", "question=other"))
            oracle.register(m.id, rb.with_(query_id=m.id))
            return m

        controls: list[str] = []

        def control(answer: list[str]):
            return lambda case: controls.append(case.query.text) or _run(case, answer)

        missed = reworded("m2")
        assert oracle.check(missed, _run(missed, [other.id]), parent, parent_ex, run_seed=lambda sid: twin_ex,
                            run_case=control([other.id])) is None
        assert controls == [missed.query.text] and not [f for f in sunk if f.case_id == "m2"]
        found = reworded("m3")
        assert oracle.check(found, _run(found, [other.id]), parent, parent_ex, run_seed=lambda sid: twin_ex,
                            run_case=control(list(rb.supporting)))
        assert [f for f in sunk if f.case_id == "m3"][0].detail["control"] == {
            "seed": b.id, "query": found.query.text, "level": "selection", "passed": True}
        unknown = reworded("m4")  # no control could run: whether the state change fails it cannot be told
        assert oracle.check(unknown, _run(unknown, [other.id]), parent, parent_ex, run_seed=lambda sid: twin_ex) is None


def test_a_failure_with_a_passing_control_says_so_in_failures_show():
    from ufuzz.reports.failures import control_note, render_show

    note = control_note({"seed": "s7", "query": "Where does Ana live?", "level": "selection", "passed": True})
    assert "passes on the unmutated checkpoint" in note and "s7" in note
    view = {"key": "k", "cause": "c", "operator": "target_change", "kind": "missing_evidence", "stage": "selection",
            "origin": "mutant", "responder": None, "seed": "s1", "case": "m1", "occurrences": 1, "first_seq": 3,
            "offending": [], "reason": None, "mutation": "question", "baseline": None, "backend": "embedded",
            "backend_info": {}, "checkpoint": "c", "checkpoint_memories": 3, "unbuildable": None,
            "inherited_ops": [{"op": "update", "target": "m2", "memory": None, "text_before": None, "id": None,
                               "text": None, "timestamp": None}],
            "control": {"seed": "s7", "query": "Where does Ana live?", "level": "selection", "passed": True},
            "state_change": [], "side_effects": [], "parent": {"id": None}, "mutant": {"id": None},
            "commands": {}, "evidence": {"parent": None, "mutant": None}}
    assert f"  {note}" in render_show(view, 100).splitlines()


def test_a_state_mutant_is_never_judged_against_a_twin(default_suite):
    """A mutation that changes the state (its ops are not its parent's) is judged against its parent alone."""
    a, b, ck, other = _pair(default_suite)
    ra = default_suite.reference_of(a)
    oracle = Oracle(lambda f, _ref: None)
    seed_a = FuzzCase.from_seed(a, ck)
    oracle.add_seed(seed_a, ra)
    oracle.add_seed(FuzzCase.from_seed(b, ck), default_suite.reference_of(b))
    edit = StateOp("update", other.id, Memory(other.id + "~u1", other.text + " Noted again.", other.timestamp))
    mutant = seed_a.child("m1", operator="update", ops=(edit,), obligation=Obligation(a.id, "update", other.id))
    oracle.register(mutant.id, ra.with_(query_id=mutant.id))
    key = oracle.check(mutant, _run(mutant, [other.id]), seed_a, _run(seed_a, list(ra.supporting)),
                       run_seed=lambda sid: pytest.fail(f"asked for seed {sid}'s execution"))
    assert key is not None


def test_a_rewording_of_an_update_mutant_has_its_parent_as_control_not_its_seed(default_suite):
    """A paraphrase of an update mutant asks its seed's fields about other evidence (the new value): the seed
    failing on the unmutated state says nothing of it — the parent, same state and fields, passed."""
    b = next(s for s in default_suite.seeds
             if not default_suite.reference_of(s).abstain and len(default_suite.reference_of(s).supporting) == 1)
    rb = default_suite.reference_of(b)
    ck = default_suite.checkpoints[b.checkpoint_id]
    ev = next(m for m in ck.memories if m.id == rb.supporting[0])
    sunk = []
    oracle = Oracle(lambda f, _ref: sunk.append(f))
    seed = FuzzCase.from_seed(b, ck)
    oracle.add_seed(seed, rb)
    new = Memory(ev.id + "~u1", ev.text + " Changed since.", ev.timestamp)
    parent = seed.child("p1", operator="update", ops=(StateOp("update", ev.id, new),),
                        obligation=Obligation(b.id, "update", ev.id))
    updated = rb.with_(query_id="p1", supporting=(new.id,), invalidated=(ev.id,))
    oracle.register(parent.id, updated)
    reworded = replace(b.query, id=b.query.id + "~p1", text="Put differently: " + b.query.text)
    mutant = parent.child("m1", operator="paraphrase", query=reworded, obligation=Obligation(b.id, "paraphrase", "x"))
    oracle.register(mutant.id, updated.with_(query_id="m1"))
    others = [m.id for m in ck.memories if m.id not in (ev.id, new.id)][:2]
    key = oracle.check(mutant, _run(mutant, others), parent, _run(parent, [new.id]),
                       run_seed=lambda sid: _run(seed, others))  # the seed misses its own (old) evidence too
    assert key is not None and [f.operator for f in sunk if f.origin == "mutant"] == ["paraphrase"]


def test_a_target_change_onto_a_seeds_question_with_its_parents_filler_is_the_fillers_miss_not_the_targets(
        default_suite):
    """Hand audit, LoCoMo: a target change from a reworded parent landed on another seed's question with the
    parent's "Quick question:" kept, on the checkpoint's own state; that seed as worded passes there, so the miss is
    the filler's — a paraphrase's finding on that seed, not the target change's (it was reported under both). The
    new target in words of its own is still the target change's test."""
    a, b, ck, other, ra, rb, sunk, oracle, seed_a, seed_b = _two_seeds(default_suite)
    passing = _run(seed_b, list(rb.supporting))
    parent_ex = _run(seed_a, list(ra.supporting))

    def target_change(case_id: str, text: str) -> FuzzCase:
        m = seed_a.child(case_id, operator="target_change", query=replace(b.query, id=case_id, text=text),
                         obligation=Obligation(a.id, "target_change", "question=" + case_id))
        oracle.register(m.id, rb.with_(query_id=m.id))
        return m

    filler = target_change("t1", "Quick question: " + b.query.text[0].lower() + b.query.text[1:])
    assert oracle.check(filler, _run(filler, [other.id]), seed_a, parent_ex, run_seed=lambda sid: passing) is None
    assert not [f for f in sunk if f.origin == "mutant"]
    # a target change onto that very question (a sibling question), which words it anew: the seed as worded passes,
    # so these words are what miss (hand audit, LoCoMo: "At what point in time did ..." for "When did ...")
    sibling = target_change("t3", "At what point in time: " + " ".join(reversed(b.query.text.rstrip("?").split())))
    sibling = replace(sibling, obligation=Obligation(a.id, "target_change", "question=" + b.query.text))
    assert oracle.check(sibling, _run(sibling, [other.id]), seed_a, parent_ex, run_seed=lambda sid: passing) is None
    assert not [f for f in sunk if f.origin == "mutant"]
    # the new target in words of the parent's (its name swapped into them) stays the target change's test
    own_words = target_change("t2", "Tell me about " + " ".join(reversed(b.query.text.rstrip("?").split())) + "?")
    assert oracle.check(own_words, _run(own_words, [other.id]), seed_a, parent_ex, run_seed=lambda sid: passing)
    assert [f.operator for f in sunk if f.origin == "mutant"] == ["target_change"]
