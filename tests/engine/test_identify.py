"""Search results identified by content as well as by id (issue 23, item 1)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ufuzz.backends.protocol import Retrieved, StoredMemory
from ufuzz.engine.identify import distinct, identify
from ufuzz.model import Checkpoint, FuzzCase, Memory, Provenance, Query, QueryFields, Reference, StateOp
from ufuzz.model.execution import Execution
from ufuzz.model.query import MutationDescriptor
from ufuzz.oracles.expectations import selection

CP = Checkpoint(id="c", memories=(Memory("m1", "Lena lives in Oslo.", "2024-01-01T09:00:00"),
                                  Memory("m2", "Tarik works at Quandor.", "2024-01-02T09:00:00"),
                                  Memory("m3", "Ilsa likes chess.", "2024-01-03T09:00:00")), facts=())
NEW = Memory("m1~u1", "Lena lives in Rome.", "2024-02-01T09:00:00")


def _case(*ops: StateOp) -> FuzzCase:
    q = Query(id="q", text="Where does Lena live?", fields=QueryFields("Lena", "city", "current", True))
    return FuzzCase(id="x1", seed_id="s", checkpoint_id="c", query=q, descriptor=MutationDescriptor(),
                    provenance=Provenance.of(CP), ops=tuple(ops))


def _listed(*pairs: tuple[str, str]) -> list[StoredMemory]:
    return [StoredMemory(i, t, "") for i, t in pairs]


def _never():
    raise AssertionError("list() called although every result carries its own text")


def test_results_carrying_their_own_texts_need_no_listing():
    case = _case(StateOp("update", "m1", NEW))
    got = [Retrieved("m1~u1", NEW.text, 1.0), Retrieved("m2", "Tarik works at Quandor.", 0.9)]
    assert identify(case, got, CP, _never) is None
    # the updated memory's old text under its own id: what it is depends on what the product holds now
    appended = _listed(("m1", CP.memories[0].text), ("m1~u1", NEW.text))  # kept beside its replacement
    got = [Retrieved("m1~u1", NEW.text, 1.0), Retrieved("m1", "Lena lives in Oslo.", 0.9)]
    assert identify(case, got, CP, lambda: appended) is None


def test_old_text_under_the_memorys_own_id_after_an_in_place_rewrite_is_the_overwritten_version():
    """New-user walkthrough: a product that rewrites in place but still searches the old wording under the
    memory's live id — the stale text was taken for the memory itself, and the defect went unseen."""
    case = _case(StateOp("update", "m1", NEW))
    rewritten = _listed(("m1", NEW.text), ("m2", CP.memories[1].text), ("m3", CP.memories[2].text))
    got = [Retrieved("m1", "Lena lives in Oslo.", 2.0), Retrieved("m2", CP.memories[1].text, 1.0)]
    ids = identify(case, got, CP, lambda: rewritten)
    assert ids == ["m1@overwritten", "m2"]
    ex = Execution("x1", "k", "q", top_ids=ids, top_scores=[2.0, 1.0])
    out = selection(Reference("q", "Rome", supporting=("m1",)), ex)
    assert not out.passed and out.kind == "stale_ranked_above_valid"


def test_repeated_results_become_distinct_items():
    assert distinct(["m1@overwritten", "m2", "m1@overwritten", "m1@overwritten"]) == \
        ["m1@overwritten", "m2", "m1@overwritten#2", "m1@overwritten#3"]
    assert distinct(["a", "b"]) == ["a", "b"]


def test_old_text_under_an_unknown_id_after_an_in_place_rewrite_is_the_overwritten_version():
    case = _case(StateOp("update", "m1", NEW))
    listed = _listed(("m1", NEW.text), ("m2", CP.memories[1].text), ("m3", CP.memories[2].text))
    got = [Retrieved("mem-99", "lena lives in OSLO", 2.0), Retrieved("m1", NEW.text, 1.9)]
    ids = identify(case, got, CP, lambda: listed)
    assert ids == ["m1@overwritten", "m1"]
    # judged: the overwritten version of the supporting memory ranked above it is stale evidence above valid
    ex = Execution("x1", "k", "q", top_ids=ids, top_scores=[2.0, 1.9])
    out = selection(Reference("q", "Rome", supporting=("m1",)), ex)
    assert not out.passed and out.kind == "stale_ranked_above_valid" and out.offending == ("m1@overwritten",)


def test_superseded_text_under_an_unknown_id_is_the_superseded_memory():
    case = _case(StateOp("update", "m1", NEW))  # appended: m1 stays listed with its old text
    listed = _listed(("m1", CP.memories[0].text), ("m1~u1", NEW.text), ("m2", CP.memories[1].text))
    got = [Retrieved("p-7", "Lena lives in Oslo.", 2.0), Retrieved("m1~u1", NEW.text, 1.9)]
    assert identify(case, got, CP, lambda: listed) == ["m1", "m1~u1"]


def test_deleted_text_under_any_id_is_the_deleted_memory():
    case = _case(StateOp("delete", "m2"))
    listed = _listed(("m1", CP.memories[0].text), ("m3", CP.memories[2].text))
    got = [Retrieved("ghost", "Tarik works at Quandor.", 1.0)]
    ids = identify(case, got, CP, lambda: listed)
    assert ids == ["m2"]
    out = selection(Reference("q", None, abstain=True), Execution("x1", "k", "q", top_ids=ids, top_scores=[1.0]),
                    deleted=("m2",))
    assert out.kind == "deleted_evidence_retrieved"


def test_unknown_text_keeps_the_products_id_and_ambiguity_never_guesses():
    case = _case()
    listed = _listed(("m1", "same"), ("m2", "same"), ("m3", CP.memories[2].text))
    got = [Retrieved("p-1", "Something nobody wrote.", 1.0), Retrieved("p-2", "Same.", 0.5)]
    assert identify(case, got, CP, lambda: listed) is None  # neither is any one memory of the case


def test_a_live_memory_wins_over_a_deleted_one_with_the_same_text():
    case = _case(StateOp("delete", "m3"), StateOp("add", None, Memory("n1", "Ilsa likes chess.", "2024-03-01")))
    listed = _listed(("m1", CP.memories[0].text), ("n1", "Ilsa likes chess."))
    assert identify(case, [Retrieved("p-5", "Ilsa likes chess!", 1.0)], CP, lambda: listed) == ["n1"]


_words = st.text(alphabet="abcdefgh ", min_size=1, max_size=12).filter(lambda t: t.strip())


@settings(max_examples=150, deadline=None)
@given(st.lists(_words, min_size=1, max_size=6, unique_by=lambda t: " ".join(t.split())), st.data())
def test_property_identification_never_invents_a_memory(texts, data):
    """A result is only ever identified as a memory whose text (normalised) it carries, or keeps its id."""
    cp = Checkpoint(id="c", memories=tuple(Memory(f"m{i}", t, "2024-01-01") for i, t in enumerate(texts)), facts=())
    case = FuzzCase(id="x", seed_id="s", checkpoint_id="c", query=_case().query, descriptor=MutationDescriptor(),
                    provenance=Provenance.of(cp))
    listed = [StoredMemory(m.id, m.text, "") for m in cp.memories]
    probe = data.draw(st.one_of(st.sampled_from(texts), _words))
    ids = identify(case, [Retrieved("p-x", probe, 1.0)], cp, lambda: listed)
    norm = " ".join(probe.split())
    if ids is not None:
        (mid,) = ids
        assert " ".join(dict((m.id, m.text) for m in cp.memories)[mid].split()) == norm


def test_failures_show_marks_unknown_and_overwritten_results():
    from types import SimpleNamespace

    from ufuzz.reports.failures import _execution_view

    ex = Execution("x1", "k", "q", top_ids=["m1@overwritten", "mem-99", "m1"], top_scores=[2.0, 1.5, 1.0],
                   top_texts=["Lena lives in Oslo.", "Nobody wrote this.", "Lena lives in Rome."],
                   native_ids=["mem-98", "mem-99", "mem-1"])
    view = _execution_view(SimpleNamespace(seq=1, execution=ex), Reference("q", "Rome", supporting=("m1",)), set(),
                           {"m1@overwritten"}, known={"m1", "m2", "m3"})
    marks = {t["id"]: t["marks"] for t in view["top"]}
    assert marks["m1@overwritten"] == ["offending", "overwritten"]
    assert marks["mem-99"] == ["unknown"] and marks["m1"] == ["supporting"]
    assert [t["native_id"] for t in view["top"]] == ["mem-98", "mem-99", "mem-1"]


def test_a_product_returning_one_memory_twice_is_executed_and_fed_back_without_a_crash(tmp_path):
    """New-user walkthrough: two old versions of one memory in one top-k made the ranking repeat
    'm@overwritten', and RBO refused it — the campaign ended in error, and resuming crashed again."""
    from tests.support.operator_kit import embedded
    from ufuzz.backends.adapters.embedded import EmbeddedBackend
    from ufuzz.engine.executor import Executor
    from ufuzz.engine.rbo import rbo_divergence

    class Twice(EmbeddedBackend):
        def retrieve(self, state, query, k):
            got = super().retrieve(state, query, k)
            return [got[0], got[0], *got[1:k - 1]]

    be = embedded(tmp_path, cls=Twice)
    try:
        ex = Executor(be, {"c": CP}, k=3).execute(_case(), be.build(CP))
    finally:
        be.close()
    assert ex.error is None and len(ex.top_ids) == 3 and len(set(ex.top_ids)) == 3
    assert ex.top_ids[1] == ex.top_ids[0] + "#2" and ex.native_ids[1] == ex.top_ids[0]
    assert 0.0 <= rbo_divergence(ex.top_ids, list(reversed(ex.top_ids)), 0.9) <= 1.0
