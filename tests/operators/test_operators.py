"""The six operators on the real default suite and the real embedded backend: targets, acceptance, references.

Acceptance rates are printed per operator (``pytest -s``); every mutant of every target must be accepted by
its own validator, and each derived reference must be what the operator's contract says.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from tests.support.operator_kit import case_of, cases, embedded, operators, reference, rng, snapshot, suite
from ufuzz.model import FuzzCase, MutationDescriptor
from ufuzz.operators import Rejected, StateView
from ufuzz.operators.delete import carriers

QUERY_OPS = ("paraphrase", "target_change", "unsupported")
STATE_OPS = ("update", "delete", "unrelated_edit")
#: state operators run on every third seed (a spread over all 12 checkpoints), two rng seeds per target
STATE_SAMPLE = 3


def _suitable(name: str, case: FuzzCase) -> bool:
    d, f, prov = case.descriptor, case.query.fields, case.provenance
    if name == "paraphrase":
        return True
    if name == "target_change":
        return any(v != getattr(f, k) for k, vs in d.replacement_targets.items() for v in vs)
    if name == "unsupported":
        return any(v != getattr(f, k) for k in ("entity", "attribute") for v in d.absent_targets.get(k, ()))
    if name == "update":
        act = prov.active(f.entity, f.attribute)
        return d.allows("update") and act is not None and any(v != act.value for v in d.value_pool)
    if name == "delete":
        return d.allows("delete") and bool(prov.facts_for(f.entity, f.attribute))
    return d.allows("unrelated_edit")


@pytest.mark.parametrize("name", [*QUERY_OPS, *STATE_OPS])
def test_targets_non_empty_and_deterministic_on_suitable_seeds(name):
    op = operators()[name]
    suitable = [c for c in cases() if _suitable(name, c)]
    assert len(suitable) >= len(cases()) // 2, f"{name}: only {len(suitable)} suitable seeds"
    for c in suitable:
        got = op.targets(c)
        assert got, f"{name} has no target on suitable seed {c.id}"
        assert got == op.targets(c) and len(set(got)) == len(got)


def test_targets_empty_when_the_descriptor_forbids_them():
    c = cases()[0]
    bare = FuzzCase(id=c.id, seed_id=c.id, checkpoint_id=c.checkpoint_id, query=c.query,
                    descriptor=MutationDescriptor(memory_ops=()), provenance=c.provenance)
    ops = operators()
    for name in ("target_change", "unsupported", *STATE_OPS):
        assert ops[name].targets(bare) == [], name
    assert ops["paraphrase"].targets(bare)  # paraphrase needs nothing from the descriptor


# -- query operators ----------------------------------------------------------------------------------------
def test_query_operators_accept_every_target_of_every_seed():
    ops = operators()
    tried, accepted, bad = Counter(), Counter(), []
    for c in cases():
        ref = reference(c)
        for name in QUERY_OPS:
            op = ops[name]
            for t in op.targets(c):
                for r in range(3):
                    tried[name] += 1
                    m = op.mutate(c, ref, t, rng(c.id, name, t, r))
                    v = op.validate(c, m)
                    if v.ok:
                        accepted[name] += 1
                    else:
                        bad.append((c.id, name, t, m.query.text, v.reason))
                    _check_query_reference(c, ref, name, t, m)
    for name in QUERY_OPS:
        print(f"acceptance {name}: {accepted[name]}/{tried[name]}")
        assert tried[name] >= 100
    assert not bad, bad[:5]


def _check_query_reference(c: FuzzCase, ref, name: str, target: str, m) -> None:
    prov = c.provenance
    assert m.provenance is prov  # a query operator never changes the state
    assert m.query.id != c.query.id and m.reference.query_id in (m.query.id, ref.query_id)
    if name == "paraphrase":
        assert m.reference == ref and m.query.fields == c.query.fields
        return
    field, _, value = target.partition("=")
    assert getattr(m.query.fields, field) == value
    if name == "target_change":
        expected = prov.reference_for(m.query.id, m.query.fields)
        assert m.reference == expected
        assert not m.reference.abstain
        if field == "entity":
            parent_fact = prov.active(c.query.fields.entity, c.query.fields.attribute) \
                if c.query.fields.scope != "previous" else prov.previous(c.query.fields.entity,
                                                                         c.query.fields.attribute)
            assert set(m.reference.supporting).isdisjoint(ref.supporting), "new entity, same evidence"
            if parent_fact is None or parent_fact.value != m.reference.answer:
                assert m.reference.answer != ref.answer
            else:  # both entities really have the same value: provenance says so, not the parent reference
                assert ref.answer == parent_fact.value
    else:  # unsupported
        assert m.reference.abstain and m.reference.answer is None
        assert m.reference.invalidated == ref.supporting
        assert not prov.facts_for(m.query.fields.entity, m.query.fields.attribute)


def test_target_change_entity_swaps_change_the_answer_on_most_seeds():
    """The answer differs from the parent's whenever the new entity's value differs (counted here)."""
    op, changed, same = operators()["target_change"], 0, 0
    for c in cases():
        for t in op.targets(c):
            if t.startswith("entity="):
                m = op.mutate(c, reference(c), t, rng(c.id, t))
                if m.reference.answer != reference(c).answer:
                    changed += 1
                else:
                    same += 1
    print(f"target_change entity swaps: answer changed {changed}, same value {same}")
    assert changed > 0 and changed >= 4 * same


def test_unknown_or_malformed_targets_are_rejected_not_crashes():
    ops, c = operators(), cases()[0]
    for name, bad in (("paraphrase", "translate"), ("target_change", "colour=red"), ("target_change", "entity"),
                      ("unsupported", "entity="), ("target_change", "entity=Nobody-in-this-state")):
        with pytest.raises(Rejected):
            ops[name].mutate(c, reference(c), bad, rng(name, bad))


def test_target_of_an_inapplicable_attribute_is_rejected():
    """An absent attribute that does not apply to the entity's type cannot be worded: Rejected, not a crash."""
    c = next(x for x in cases() if x.provenance.entity_type(x.query.fields.entity) == "person")
    d = MutationDescriptor(absent_targets={"attribute": ("species",)}, memory_ops=())
    case = FuzzCase(id=c.id, seed_id=c.id, checkpoint_id=c.checkpoint_id, query=c.query, descriptor=d,
                    provenance=c.provenance)
    with pytest.raises(Rejected, match="species"):
        operators()["unsupported"].mutate(case, reference(c), "attribute=species", rng(1))


# -- state operators ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("update_policy,delete", [("append", "hard"), ("rewrite", "tombstone")])
def test_state_operators_accept_and_derive_references(tmp_path, update_policy, delete):
    s = suite()
    be = embedded(tmp_path, update_policy, delete)
    built = {cid: be.build(cp) for cid, cp in s.checkpoints.items()}
    ops = operators()
    tried, accepted, bad = Counter(), Counter(), []
    for c in cases()[::STATE_SAMPLE]:
        ref = reference(c)
        for name in STATE_OPS:
            op = ops[name]
            for t in op.targets(c):
                for r in range(2):
                    handle = be.fork(built[c.checkpoint_id])
                    view = StateView(be, handle)
                    tried[name] += 1
                    try:
                        m = op.mutate(c, ref, t, rng(c.id, name, t, r), view)
                    except Rejected as exc:
                        # an in-place rewrite of the current value leaves "what was it before?" without a
                        # right answer: no test may be built on it
                        assert (name, c.query.fields.scope, update_policy) == ("update", "previous", "rewrite"), exc
                        be.release(handle)
                        continue
                    v = op.validate(c, m, view)
                    if v.ok:
                        accepted[name] += 1
                        _check_state_reference(c, ref, name, t, m, view, update_policy)
                    else:
                        bad.append((c.id, name, t, m.detail, v.reason))
                    be.release(handle)
    # the base states were never written
    for cid, h in built.items():
        assert snapshot(StateView(be, h)) == sorted((m.id, m.text, m.timestamp, True)
                                                     for m in s.checkpoints[cid].memories)
    for name in STATE_OPS:
        print(f"acceptance {name} ({update_policy}/{delete}): {accepted[name]}/{tried[name]}")
        assert tried[name] >= 20
    assert not bad, bad[:5]
    be.close()


def _check_state_reference(c: FuzzCase, ref, name: str, target: str, m, view: StateView, policy: str) -> None:
    f = c.query.fields
    assert m.query == c.query and m.ops and len(m.ops) == len(m.results)
    if name == "update":
        old = c.provenance.active(f.entity, f.attribute)
        value = target.partition("=")[2]
        (res,), (op,) = m.results, m.ops
        assert op.op == "update" and op.target in old.evidence
        if policy == "append":
            assert res.written == (op.memory.id,) and op.target in res.superseded
        else:
            assert res.written == (op.target,)
        assert m.provenance.active(f.entity, f.attribute).value == value
        derived = m.provenance.reference_for(c.query.id, f)
        assert m.reference == derived
        if f.scope == "previous":  # "what was it before?" now asks for the value that was just replaced
            assert policy == "append" and m.reference.answer == old.value and op.target in m.reference.supporting
            assert not set(res.written) & set(m.reference.supporting)
            assert not m.reference.invalidated and not m.reference.stale_answers  # nothing was deleted
        elif f.scope == "any":  # every value still stored is an accepted answer
            assert value in (m.reference.answer, *m.reference.aliases)
            assert set(res.written) <= set(m.reference.supporting)
        else:
            assert m.reference.answer == value and not m.reference.abstain
            assert set(m.reference.supporting) == set(res.written)
            assert old.value in m.reference.stale_answers
            if policy == "append":
                assert op.target in m.reference.invalidated
        assert value in view.get(res.written[0]).text
    elif name == "delete":
        deleted = {op.target for op in m.ops}
        assert all(op.op == "delete" for op in m.ops)
        # the deleted evidence is invalid (the other deleted carriers are gone: the delete itself is judged)
        evidence = {e for x in c.provenance.facts_for(f.entity, f.attribute) for e in x.evidence}
        assert deleted & evidence <= set(m.reference.invalidated)
        assert deleted.isdisjoint(m.reference.supporting)
        if target == "all":
            assert m.reference.abstain and m.reference.answer is None
            # the evidence and every other memory writing a value (else the value would still be in memory)
            facts = c.provenance.facts_for(f.entity, f.attribute)
            assert deleted == c.provenance.relevant_ids(f.entity, f.attribute) | carriers(c.provenance, facts)
            assert {x.value for x in c.provenance.facts_for(f.entity, f.attribute)} <= \
                set(m.reference.stale_answers)
        for mid in deleted:
            got = view.get(mid)
            assert got is None or not got.active
    else:  # unrelated edit: the parent's reference, the query-relevant evidence untouched
        assert m.reference is ref
        for mid in c.provenance.relevant_ids(f.entity, f.attribute):
            assert view.get(mid).text == dict(c.provenance.memory_texts)[mid]


def test_state_operators_need_a_state():
    c = cases()[0]
    for name in STATE_OPS:
        op = operators()[name]
        with pytest.raises(Rejected):
            op.mutate(c, reference(c), op.targets(c)[0], rng(name), None)
        assert not op.validate(c, op_mutation_stub(c), None).ok


def op_mutation_stub(c: FuzzCase):
    from ufuzz.operators import Mutation

    return Mutation(query=c.query, provenance=c.provenance, reference=reference(c))


def test_case_of_matches_campaign_construction():
    seed = sorted(suite().seeds, key=lambda x: x.id)[0]
    c = case_of(seed)
    assert (c.id, c.seed_id, c.checkpoint_id, c.ops, c.depth) == (seed.id, seed.id, seed.checkpoint_id, (), 0)


def test_an_update_after_a_target_change_writes_a_value_of_the_new_attribute(tmp_path):
    """A hand audit found "Mireille lives in calligraphy": the seed's value pool (hobbies) used for an update of
    a question re-targeted to the home town. The attribute change brings the values provenance records for the
    new attribute, and the update validator refuses a value outside the case's pool."""
    from tests.support.operator_kit import child_of

    ops, be = operators(), embedded(tmp_path)
    tc, up = ops["target_change"], ops["update"]
    tried = refused = 0
    for c in cases():
        for t in (t for t in tc.targets(c) if t.startswith("attribute=")):
            m = tc.mutate(c, reference(c), t, rng(c.id, t))
            if not tc.validate(c, m).ok:
                continue
            child = child_of(c, m, tc, f"{c.id}-t")
            attr = child.query.fields.attribute
            recorded = {f.value for f in c.provenance.facts if f.attribute == attr}
            assert child.descriptor.value_pool and set(child.descriptor.value_pool) <= recorded
            for ut in up.targets(child):
                handle = be.build(suite().checkpoints[c.checkpoint_id])
                view = StateView(be, handle)
                mu = up.mutate(child, m.reference, ut, rng(ut), view)
                assert up.validate(child, mu, view).ok
                # the same mutation judged as if the pool were still the seed's: refused
                stale_pool = replace(child, descriptor=c.descriptor)
                if ut.partition("=")[2] not in c.descriptor.value_pool:
                    assert "type-compatible" in up.validate(stale_pool, mu, view).reason
                    refused += 1
                be.release(handle)
                tried += 1
                break
        if tried >= 6:
            break
    assert tried >= 6 and refused >= 1
