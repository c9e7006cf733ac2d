"""A failure observed again — the same question, the same ranked memories, the same evidence, the same verdict —
by another chain of mutations is the failure already reported, not a new one (hand audit, LoCoMo dev: a reworded
question missed its evidence on the checkpoint; an update then put a rewritten copy of the evidence first, and a
delete of that copy brought the checkpoint's memories back — the same miss, which was reported a second time as
the delete's). Seen again by the *same* mutant's key, it is an occurrence of that failure, counted as before."""

from __future__ import annotations

from dataclasses import replace

from ufuzz.model import FuzzCase, Memory, Obligation
from ufuzz.model.case import StateOp
from ufuzz.model.execution import Execution
from ufuzz.oracles.oracle import Oracle


def _run(case: FuzzCase, top: list[str]) -> Execution:
    return Execution(case_id=case.id, state_key=case.state_key, query=case.query.text, top_ids=top,
                     top_scores=[1.0 - i / 10 for i in range(len(top))])


def _setup(default_suite):
    seed = next(s for s in default_suite.seeds if not default_suite.reference_of(s).abstain
                and default_suite.reference_of(s).supporting)
    ref = default_suite.reference_of(seed)
    ck = default_suite.checkpoints[seed.checkpoint_id]
    evidence = ref.supporting[0]
    others = [m.id for m in ck.memories if m.id not in set(ref.supporting)][:5]
    sunk = []
    oracle = Oracle(lambda f, _ref: sunk.append(f))
    root = FuzzCase.from_seed(seed, ck)
    oracle.add_seed(root, ref)
    return seed, ref, ck, evidence, others, sunk, oracle, root


def test_the_same_miss_reached_through_another_chain_is_reported_once(default_suite):
    seed, ref, ck, evidence, others, sunk, oracle, root = _setup(default_suite)
    reworded = replace(seed.query, id=seed.query.id + "~p", text="Quick question: " + seed.query.text)
    para = root.child("p1", operator="paraphrase", query=reworded, obligation=Obligation(seed.id, "paraphrase", "w"))
    oracle.register(para.id, ref.with_(query_id=para.id))
    first = oracle.check(para, _run(para, others), root, _run(root, [evidence, *others[:4]]))
    assert first is not None

    # update the evidence (a rewritten copy ranks first: the reworded question passes), then delete the copy
    text = ck.memory(evidence).text
    copy = Memory(evidence + "~u1", text + " Still so.", "2099-01-01T00:00:00")
    upd = para.child("p2", operator="update", ops=(StateOp("update", evidence, copy),),
                     obligation=Obligation(seed.id, "update", "value=x"))
    oracle.register(upd.id, ref.with_(query_id=upd.id, supporting=(copy.id,), invalidated=(evidence,)))
    dele = upd.child("p3", operator="delete", ops=(*upd.ops, StateOp("delete", copy.id)),
                     obligation=Obligation(seed.id, "delete", copy.id))
    oracle.register(dele.id, ref.with_(query_id=dele.id, invalidated=(copy.id,)))
    again = oracle.check(dele, _run(dele, others), upd, _run(upd, [copy.id, *others[:4]]))
    assert again is None
    assert [f.key for f in sunk if f.origin == "mutant"] == [first]

    # a different retrieval is another observation: reported (where the same words find the evidence on the
    # checkpoint's own state: the state change is to blame, see the test below)
    found = lambda case: _run(case, [evidence, *others[:4]])  # noqa: E731
    other_miss = oracle.check(dele, _run(dele, list(reversed(others))), upd, _run(upd, [copy.id, *others[:4]]),
                              run_case=found)
    assert other_miss is not None and other_miss != first


def test_a_state_change_is_not_blamed_for_what_its_words_miss_on_the_checkpoint(default_suite):
    """The same chain seen first (no rewording's failure reported before it): the delete's miss is checked against
    its words on the checkpoint's own state — missed there too, it is the wording's, not reported as the delete's;
    found there, the state change did it; no control run, no blame (precision first)."""
    seed, ref, ck, evidence, others, sunk, oracle, root = _setup(default_suite)
    reworded = replace(seed.query, id=seed.query.id + "~p", text="Quick question: " + seed.query.text)
    text = ck.memory(evidence).text
    copy = Memory(evidence + "~u1", text + " Still so.", "2099-01-01T00:00:00")
    upd = root.child("p2", operator="update", ops=(StateOp("update", evidence, copy),), query=reworded,
                     obligation=Obligation(seed.id, "update", "value=x"))
    oracle.register(upd.id, ref.with_(query_id=upd.id, supporting=(copy.id,), invalidated=(evidence,)))
    dele = upd.child("p3", operator="delete", ops=(*upd.ops, StateOp("delete", copy.id)),
                     obligation=Obligation(seed.id, "delete", copy.id))
    oracle.register(dele.id, ref.with_(query_id=dele.id, invalidated=(copy.id,)))
    asked: list[tuple[str, str, tuple]] = []

    def control(top):
        def run(case):
            asked.append((case.query.text, case.state_key, case.ops))
            return _run(case, top)
        return run

    parent_ex = _run(upd, [copy.id, *others[:4]])
    assert oracle.check(dele, _run(dele, others), upd, parent_ex, run_case=control(others[1:])) is None
    assert asked == [(reworded.text, root.state_key, ())]  # its own words, on the checkpoint's own state
    assert oracle.check(dele, _run(dele, others), upd, parent_ex) is None
    assert not [f for f in sunk if f.origin == "mutant"]
    key = oracle.check(dele, _run(dele, others), upd, parent_ex, run_case=control([evidence, *others[:4]]))
    assert key is not None and [f.operator for f in sunk if f.origin == "mutant"] == ["delete"]

    # the seed's own words: no control is asked (its passing execution on the checkpoint is what made it a parent)
    plain = root.child("p4", operator="delete", ops=(StateOp("delete", others[0]),),
                       obligation=Obligation(seed.id, "delete", others[0]))
    oracle.register(plain.id, ref.with_(query_id=plain.id))
    asked.clear()
    assert oracle.check(plain, _run(plain, others[1:]), root, _run(root, [evidence, *others[:4]]),
                        run_case=control(others)) is not None
    assert asked == []


def test_the_same_mutant_seen_again_is_an_occurrence_of_its_failure(default_suite):
    seed, ref, ck, evidence, others, sunk, oracle, root = _setup(default_suite)
    reworded = replace(seed.query, id=seed.query.id + "~p", text="Quick question: " + seed.query.text)
    para = root.child("p1", operator="paraphrase", query=reworded, obligation=Obligation(seed.id, "paraphrase", "w"))
    oracle.register(para.id, ref.with_(query_id=para.id))
    keys = [oracle.check(para, _run(para, others), root, _run(root, [evidence, *others[:4]])) for _ in range(2)]
    assert keys[0] is not None and keys == [keys[0]] * 2
    assert len([f for f in sunk if f.origin == "mutant"]) == 2  # both sightings reach the store (its "seen")


def test_the_observations_survive_a_snapshot(default_suite):
    seed, ref, ck, evidence, others, sunk, oracle, root = _setup(default_suite)
    reworded = replace(seed.query, id=seed.query.id + "~p", text="Quick question: " + seed.query.text)
    para = root.child("p1", operator="paraphrase", query=reworded, obligation=Obligation(seed.id, "paraphrase", "w"))
    oracle.register(para.id, ref.with_(query_id=para.id))
    oracle.check(para, _run(para, others), root, _run(root, [evidence, *others[:4]]))
    resumed = Oracle(lambda f, _ref: sunk.append(f))
    resumed.restore(oracle.snapshot())
    twin = root.child("p9", operator="paraphrase", query=reworded, obligation=Obligation(seed.id, "paraphrase", "v"))
    resumed.register(twin.id, ref.with_(query_id=twin.id))
    assert resumed.check(twin, _run(twin, others), root, _run(root, [evidence, *others[:4]])) is None


def test_a_question_re_asked_after_an_abstaining_parent_is_its_own_seeds_baseline_once(default_suite):
    """Hand audit, LoCoMo dev: a target change from an abstaining question onto another seed's question, failing
    exactly as that seed fails on its checkpoint, was listed as a second baseline failure of the same cause."""
    answerable = next(s for s in default_suite.seeds if not default_suite.reference_of(s).abstain
                      and default_suite.reference_of(s).supporting)
    abstaining = next(s for s in default_suite.seeds if s.checkpoint_id == answerable.checkpoint_id
                      and default_suite.reference_of(s).abstain)
    ck = default_suite.checkpoints[answerable.checkpoint_id]
    ref = default_suite.reference_of(answerable)
    others = [m.id for m in ck.memories if m.id not in set(ref.supporting)][:5]
    sunk = []
    oracle = Oracle(lambda f, _ref: sunk.append(f))
    twin, parent = FuzzCase.from_seed(answerable, ck), FuzzCase.from_seed(abstaining, ck)
    oracle.add_seed(twin, ref)
    oracle.add_seed(parent, default_suite.reference_of(abstaining))
    asked = replace(answerable.query, id=abstaining.query.id + "~t", text="Quick question: " + answerable.query.text)
    mutant = parent.child("t1", operator="target_change", query=asked,
                          obligation=Obligation(abstaining.id, "target_change", "entity=x"))
    oracle.register(mutant.id, ref.with_(query_id=mutant.id))
    missed = _run(twin, others)  # the seed misses its evidence on its own checkpoint
    assert oracle.check(mutant, _run(mutant, others), parent, _run(parent, others),
                        run_seed=lambda sid: missed) is None
    assert [(f.origin, f.case_id) for f in sunk] == [("baseline", twin.id)]


def test_a_rewording_that_tips_an_updates_old_version_above_its_new_one_is_the_updates_defect(default_suite):
    """Hand audit, LongMemEval: on a state where an update kept the old version searchable beside the new one, a
    rewording tipped their near tie (0.003) and was reported as a new cause and class of the rewording's; it is
    the update's defect (superseded versions kept and ranked by their words), which the update operator reports.
    An out-of-date memory no update of the chain superseded is still the rewording's finding."""
    seed, ref, ck, evidence, others, sunk, oracle, root = _setup(default_suite)
    new = Memory(evidence + "~u1", ck.memory(evidence).text + " Since this year.", "2099-01-01T00:00:00")
    upd = root.child("u1", operator="update", ops=(StateOp("update", evidence, new),),
                     obligation=Obligation(seed.id, "update", "value=x"))
    updated_ref = ref.with_(query_id=upd.id, supporting=(new.id,), invalidated=(evidence,))
    oracle.register(upd.id, updated_ref)
    reworded = replace(seed.query, id=seed.query.id + "~p", text="Quick question: " + seed.query.text)
    para = upd.child("p1", operator="paraphrase", query=reworded, obligation=Obligation(seed.id, "paraphrase", "w"))
    oracle.register(para.id, updated_ref.with_(query_id=para.id))
    parent_ex = _run(upd, [new.id, evidence, *others[:3]])  # the new version first: the update mutant passes
    assert oracle.check(para, _run(para, [evidence, new.id, *others[:3]]), upd, parent_ex) is None
    assert not [f for f in sunk if f.origin == "mutant"]

    # out of date by the reference, not by an update of this chain: the rewording's own finding
    para2 = upd.child("p2", operator="paraphrase", query=reworded, obligation=Obligation(seed.id, "paraphrase", "v"))
    oracle.register(para2.id, updated_ref.with_(query_id=para2.id, invalidated=(evidence, others[0])))
    key = oracle.check(para2, _run(para2, [others[0], new.id, *others[1:4]]), upd,
                       _run(upd, [new.id, others[0], *others[1:4]]))
    assert key is not None and [f.kind for f in sunk if f.origin == "mutant"] == ["stale_ranked_above_valid"]
    # ... and so is a tie tipped where a memory of the checkpoint's own is out of date beside the replaced one
    para3 = upd.child("p3", operator="paraphrase", query=reworded, obligation=Obligation(seed.id, "paraphrase", "u"))
    oracle.register(para3.id, updated_ref.with_(query_id=para3.id, invalidated=(evidence, others[0])))
    key = oracle.check(para3, _run(para3, [evidence, others[0], new.id, *others[1:3]]), upd,
                       _run(upd, [new.id, evidence, others[0], *others[1:3]]))
    assert key is not None


def test_a_question_about_the_value_before_an_update_ranking_the_new_value_first_is_still_reported(default_suite):
    """The rule above takes only the versions the chain's updates replaced: asked about the value *before* the
    update, the new memory (an id descending from the old one's, as updates write them) ranked above the old one
    is a defect of its own (the time scope ignored)."""
    seed, ref, ck, evidence, others, sunk, oracle, root = _setup(default_suite)
    new = Memory(evidence + "~u1a2b3", ck.memory(evidence).text + " Since this year.", "2099-01-01T00:00:00")
    upd = root.child("u1", operator="update", ops=(StateOp("update", evidence, new),),
                     obligation=Obligation(seed.id, "update", "value=x"))
    oracle.register(upd.id, ref.with_(query_id=upd.id, supporting=(new.id,), invalidated=(evidence,)))
    before = replace(seed.query, id=seed.query.id + "~b", text="Before that, " + seed.query.text)
    asked = upd.child("t1", operator="target_change", query=before,
                      obligation=Obligation(seed.id, "target_change", "scope=before"))
    oracle.register(asked.id, ref.with_(query_id=asked.id, supporting=(evidence,), invalidated=(new.id,)))
    key = oracle.check(asked, _run(asked, [new.id, evidence, *others[:3]]), upd,
                       _run(upd, [new.id, evidence, *others[:3]]))
    assert key is not None and [f.kind for f in sunk if f.origin == "mutant"] == ["stale_ranked_above_valid"]
