"""Which valid mutants are worth an execution: some check of theirs can fail on this backend (``could_fail``)."""

from __future__ import annotations

from ufuzz.model import FuzzCase, Obligation
from ufuzz.model.case import StateOp
from ufuzz.oracles.oracle import could_fail
from ufuzz.oracles.verdict import Context


def test_an_abstaining_question_on_an_inherited_deletion_is_not_executed_without_a_threshold(default_suite):
    """Without a relevance threshold or a responder an abstaining reference is judged only on whether a deleted
    memory comes back: a mutant with a state of its own is executed for it (its own delete, or its writes on top
    of an earlier one, which may bring the memory back); a new question on its parent's very state, whose deletion
    the parent's execution checked already (an unsupported question after a delete), tests little and is not."""
    seed = default_suite.seeds[0]
    ck = default_suite.checkpoints[seed.checkpoint_id]
    ref = default_suite.reference_of(seed)
    case = FuzzCase.from_seed(seed, ck)
    gone = StateOp("delete", ck.memories[0].id)
    deleted = case.child("d1", operator="delete", ops=(gone,), obligation=Obligation(seed.id, "delete", "all"))
    asked = deleted.child("q1", operator="unsupported", obligation=Obligation(seed.id, "unsupported", "entity=X"))
    abstain = ref.with_(abstain=True, answer=None, supporting=())
    plain = Context(visible=True, threshold=None)
    added = StateOp("add", None, ck.memories[1])
    written = deleted.child("a1", operator="unrelated_edit", ops=(added,),
                            obligation=Obligation(seed.id, "unrelated_edit", "add"))
    assert could_fail(deleted, abstain, False, plain)  # its own delete: executed
    assert could_fail(written, abstain, False, plain)  # its own writes on a deleted state: executed
    assert not could_fail(asked, abstain, False, plain, on_parent_state=True)  # the parent's state: not
    assert could_fail(asked, abstain, False, Context(visible=True, threshold=0.3), on_parent_state=True)  # a threshold judges it
    assert could_fail(asked, abstain, True, plain, on_parent_state=True)  # so does a responder
    assert could_fail(asked, ref, False, plain, on_parent_state=True) is (not ref.abstain)  # an answerable one always can
    assert not could_fail(asked, ref, False, Context(visible=False), on_parent_state=True)  # hidden retrieval, no responder
