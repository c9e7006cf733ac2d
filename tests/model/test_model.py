"""The model layer: serialisation round trips, recipes, obligations, and the provenance derivations the state
operators rely on (each asserted on what the rest of ufuzz reads, not on internals)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ufuzz.model import (
    Checkpoint,
    Entity,
    Execution,
    Fact,
    FuzzCase,
    Memory,
    MutationDescriptor,
    Obligation,
    Provenance,
    Query,
    QueryFields,
    Reference,
    Rubric,
    Seed,
    SeedSuite,
    StateOp,
    state_key,
)

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
texts = st.text(min_size=1, max_size=40)
stamps = st.builds(lambda d, h: f"2024-01-{d:02d}T{h:02d}:00:00", st.integers(1, 28), st.integers(0, 23))
memories = st.builds(Memory, id=names, text=texts, timestamp=stamps,
                     metadata=st.dictionaries(names, st.one_of(st.integers(), texts), max_size=2))
facts = st.builds(Fact, entity=names, attribute=names, value=texts, evidence=st.lists(names, max_size=3).map(tuple),
                  valid=st.booleans(), value_type=st.sampled_from(["text", "city", "date"]),
                  valid_from=st.one_of(st.none(), stamps), deleted=st.booleans())
fields = st.builds(QueryFields, entity=names, attribute=names, scope=st.sampled_from(["current", "previous", "any"]),
                   answerable=st.booleans())
queries = st.builds(Query, id=names, text=texts, fields=fields, context=st.just(""),
                    form=st.sampled_from(["question", "imperative", "indirect", "free"]),
                    template=st.one_of(st.none(), names))
descriptors = st.builds(MutationDescriptor,
                        replacement_targets=st.dictionaries(st.sampled_from(["entity", "attribute", "scope"]),
                                                            st.lists(texts, max_size=3).map(tuple), max_size=2),
                        absent_targets=st.dictionaries(st.sampled_from(["entity", "attribute"]),
                                                       st.lists(texts, max_size=3).map(tuple), max_size=2),
                        memory_ops=st.one_of(st.none(), st.lists(st.sampled_from(["update", "delete"]),
                                                                 max_size=2).map(tuple)),
                        value_pool=st.lists(texts, max_size=3).map(tuple))


def _keys(d) -> set[str]:
    """Every key at any depth of a JSON-like value."""
    if isinstance(d, dict):
        return set(d) | {k for v in d.values() for k in _keys(v)}
    if isinstance(d, list):
        return {k for v in d for k in _keys(v)}
    return set()


def _json(d):
    """Through JSON and back, as a seed file or the corpus store would carry it."""
    return json.loads(json.dumps(d))


@settings(max_examples=40, deadline=None)
@given(st.lists(memories, min_size=1, max_size=4, unique_by=lambda m: m.id), st.lists(facts, max_size=4),
       st.lists(st.builds(Entity, name=names, type=names, pronoun=st.sampled_from([None, "she", "they"])),
                max_size=3))
def test_checkpoint_round_trips_through_json(mems, fs, ents):
    ck = Checkpoint("ck", tuple(mems), tuple(fs), tuple(ents))
    assert Checkpoint.from_dict(_json(ck.to_dict())) == ck
    for m in mems:
        assert ck.memory(m.id) == m
    assert ck.memory("no-such-id" + mems[0].id) is None


@settings(max_examples=40, deadline=None)
@given(queries, descriptors, st.dictionaries(names, st.one_of(st.integers(), names), max_size=2))
def test_seed_round_trips_and_descriptor_allows_exactly_its_ops(q, desc, meta):
    seed = Seed("s1", "ck", q, desc, metadata=meta)
    back = Seed.from_dict(_json(seed.to_dict()))
    assert back == seed and back.metadata == meta
    for op in ("update", "delete", "unrelated_edit"):
        assert desc.allows(op) == (desc.memory_ops is None or op in desc.memory_ops)
    assert "answer" not in _keys(seed.to_dict())  # a seed never carries the answer


def test_descriptor_refuses_op_names_that_are_not_names():
    with pytest.raises(ValueError, match="lower-case operator names"):
        MutationDescriptor.from_dict({"memory_ops": ["Update!"]})
    with pytest.raises(ValueError, match="scope must be one of"):
        QueryFields.from_dict({"entity": "Ana", "attribute": "city", "scope": "yesterday"})


@settings(max_examples=40, deadline=None)
@given(st.booleans(), texts, st.lists(names, max_size=3), st.lists(names, max_size=3),
       st.one_of(st.none(), st.builds(Rubric, must_include=st.lists(texts, max_size=2).map(tuple),
                                      must_not_include=st.lists(texts, max_size=2).map(tuple))),
       st.sampled_from([None, "extractive", "abstractive"]))
def test_reference_round_trips_and_is_an_answer_or_an_abstention(abstain, answer, sup, inv, rubric, form):
    ref = Reference("q1", None if abstain else answer, abstain=abstain, supporting=tuple(sup),
                    invalidated=tuple(inv), rubric=rubric, answer_form=form)
    assert Reference.from_dict(_json(ref.to_dict())) == ref
    with pytest.raises(ValueError):
        Reference("q1", answer, abstain=True)
    with pytest.raises(ValueError):
        Reference("q1", None, abstain=False)
    with pytest.raises(ValueError):
        Reference("q1", answer, answer_form="guessed")


def test_rubric_refuses_what_is_not_a_rubric():
    assert not Rubric() and Rubric(must_include=("Oslo",))
    for bad, needle in (([], "must be an object"), ({"must": []}, "unknown rubric key"),
                        ({"must_include": "Oslo"}, "list of strings")):
        with pytest.raises(ValueError, match=needle):
            Rubric.from_dict(bad)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.builds(StateOp, op=st.sampled_from(["add", "update", "delete"]), target=st.one_of(st.none(), names),
                          memory=st.one_of(st.none(), memories)), max_size=4))
def test_state_key_names_the_recipe(ops):
    ops = tuple(ops)
    assert tuple(StateOp.from_dict(_json(o.to_dict())) for o in ops) == ops
    assert state_key("ck", ops) == state_key("ck", tuple(StateOp.from_dict(o.to_dict()) for o in ops))
    assert state_key("ck", ops) != state_key("other", ops)
    extra = StateOp("delete", target="m-extra")
    assert state_key("ck", ops) != state_key("ck", ops + (extra,))
    if len(ops) >= 2 and ops[0] != ops[1]:
        assert state_key("ck", ops) != state_key("ck", (ops[1], ops[0], *ops[2:]))  # order is part of it


def _checkpoint() -> Checkpoint:
    mems = (Memory("m1", "Ana lives in Porto.", "2024-01-01T00:00:00"),
            Memory("m2", "Ana moved to Lisbon.", "2024-02-01T00:00:00"),
            Memory("m3", "Ana's dog is called Pip.", "2024-01-05T00:00:00"))
    fs = (Fact("Ana", "city", "Porto", ("m1",), valid=False, valid_from="2024-01-01T00:00:00"),
          Fact("Ana", "city", "Lisbon", ("m2",), valid_from="2024-02-01T00:00:00"),
          Fact("Ana", "pet", "Pip", ("m3",), valid_from="2024-01-05T00:00:00"))
    return Checkpoint("ck", mems, fs, (Entity("Ana", "person", "she"),))


def test_a_seed_case_and_its_mutants_carry_the_recipe_from_the_checkpoint():
    ck = _checkpoint()
    q = Query("q1", "Where does Ana live?", QueryFields("Ana", "city"))
    seed = Seed("s1", "ck", q, MutationDescriptor())
    case = FuzzCase.from_seed(seed, ck)
    assert case.ops == () and case.depth == 0 and case.parent_id is None and case.provenance == Provenance.of(ck)
    assert case.state_key == state_key("ck", ())
    op = StateOp("delete", target="m2")
    ob = Obligation("s1", "delete", "m2")
    child = case.child("x1", operator="delete", ops=(op,), obligation=ob)
    grandchild = child.child("x2", operator="delete", ops=(StateOp("delete", target="m1"),))
    assert child.ops == (op,) and grandchild.ops == (op, StateOp("delete", target="m1"))
    assert (child.depth, grandchild.depth) == (1, 2) and grandchild.parent_id == "x1" and grandchild.seed_id == "s1"
    assert child.query == q and child.state_key != case.state_key != grandchild.state_key
    assert ob.key == "s1|delete|m2"
    with pytest.raises(ValueError, match="is on checkpoint"):
        FuzzCase.from_seed(Seed("s2", "other", q, MutationDescriptor()), ck)


def test_provenance_graph_links_entities_values_and_evidence():
    prov = Provenance.of(_checkpoint())
    g = prov.graph()
    assert g.has_edge(("entity", "Ana"), ("attr", "Ana", "city"))
    assert g.has_edge(("attr", "Ana", "city"), ("value", "Ana", "city", "Lisbon"))
    assert g.has_edge(("value", "Ana", "city", "Lisbon"), ("memory", "m2"))
    assert g.nodes[("value", "Ana", "city", "Porto")]["valid"] is False
    assert prov.active("Ana", "city").value == "Lisbon" and prov.previous("Ana", "city").value == "Porto"
    assert prov.relevant_ids("Ana", "city") == {"m1", "m2"} and prov.mentions("m3") == {("Ana", "pet")}
    assert prov.text_mentions("pip") == ["m3"] and prov.text_mentions("Ana") == ["m1", "m2", "m3"]
    assert prov.text_mentions("Lis") == []  # whole words only


def test_update_then_delete_derive_the_references_the_operators_rely_on():
    prov = Provenance.of(_checkpoint())
    current = QueryFields("Ana", "city")
    ref = prov.reference_for("q", current)
    assert (ref.answer, ref.supporting, ref.invalidated, ref.stale_answers) == ("Lisbon", ("m2",), ("m1",), ("Porto",))
    up = prov.with_update("Ana", "city", "Faro", ["m9"], "2024-03-01T00:00:00")
    ref = up.reference_for("q", current)
    assert (ref.answer, ref.supporting) == ("Faro", ("m9",)) and set(ref.invalidated) == {"m1", "m2"}
    assert up.reference_for("q", QueryFields("Ana", "city", "previous")).answer == "Lisbon"
    gone = up.with_deletion(["m9"])
    assert not gone.defines(current)  # the current value deleted, earlier ones left: no right answer
    all_gone = prov.with_deletion(["m1", "m2"])
    ref = all_gone.reference_for("q", current)
    assert ref.abstain and ref.stale_answers == ("Lisbon", "Porto") and "m2" not in all_gone.memory_ids
    added = prov.with_memory("m7", "Ana likes tea.")
    assert "m7" in added.memory_ids and added.text_mentions("tea") == ["m7"]
    assert added.reference_for("q", current) == prov.reference_for("q", current)  # unrelated: no change


def test_execution_and_suite_defaults():
    e = Execution(case_id="c", state_key="k", query="q?")
    assert e.top_ids == [] and e.response is None and not e.abstained
    suite = SeedSuite("s", {"ck": _checkpoint()})
    seed = Seed("s1", "ck", Query("q1", "Where?", QueryFields("Ana", "city")), MutationDescriptor())
    suite.seeds.append(seed)
    suite.references["q1"] = Reference("q1", "Lisbon", supporting=("m2",))
    assert suite.checkpoint_of(seed).id == "ck" and suite.reference_of(seed).answer == "Lisbon"
