"""Oracle expectations: selection vs post-selection failures, abstention, stale answers, failure keys."""

from __future__ import annotations

from ufuzz.model import Execution, Reference
from ufuzz.oracles.expectations import evaluate, failure_key, normalise_id
from ufuzz.oracles.matching import contains_answer, is_abstention


def ex(ids, response):
    return Execution(case_id="c", state_key="s", query="q", top_ids=list(ids), response=response)


REF = Reference("q", "Velmora", supporting=("m1",), invalidated=("m0",), stale_answers=("Brask",))
ABSTAIN = Reference("q", None, abstain=True, invalidated=("m1",), stale_answers=("Velmora",))


def test_pass_when_support_ranked_and_answer_right():
    assert evaluate(REF, ex(["m1", "m0"], "Lena lives in Velmora.")).passed


def test_missing_evidence_is_selection():
    o = evaluate(REF, ex(["m5", "m6"], "Lena lives in Velmora."))
    assert (o.passed, o.kind, o.stage) == (False, "missing_evidence", "selection")


def test_stale_above_valid_is_selection():
    o = evaluate(REF, ex(["m0", "m1"], "Lena lives in Brask."))
    assert (o.kind, o.stage, o.offending) == ("stale_ranked_above_valid", "selection", ("m0",))


def test_stale_answer_post_selection():
    o = evaluate(REF, ex(["m1", "m0"], "Lena lives in Brask."))
    assert (o.kind, o.stage) == ("stale_answer", "post-selection")


def test_wrong_answer_and_false_abstention():
    assert evaluate(REF, ex(["m1", "m9"], "Omar likes tea.")).kind == "wrong_answer"
    assert evaluate(REF, ex(["m1"], "I don't know.")).kind == "false_abstention"


def test_abstain_reference():
    assert evaluate(ABSTAIN, ex(["m1"], "I don't know.")).passed
    assert evaluate(ABSTAIN, ex(["m1"], "Lena lives in Velmora.")).kind == "stale_answer"
    o = evaluate(ABSTAIN, ex(["m3"], "Omar works at Quill."))
    assert (o.kind, o.stage) == ("unsupported_answer", "post-selection")


def test_deleted_evidence_retrieved():
    o = evaluate(ABSTAIN, ex(["m3", "m1"], "I don't know."), deleted=("m1",))
    assert (o.kind, o.stage, o.offending) == ("deleted_evidence_retrieved", "selection", ("m1",))


def test_hidden_retrieval_judges_response_only():
    o = evaluate(REF, ex([], "Omar likes tea."), hidden=True)
    assert (o.kind, o.stage) == ("wrong_answer", "response")


def test_matching():
    assert contains_answer("She moved to Velmora!", "velmora")
    assert not contains_answer("She moved to Velmora Heights", "Velmora Height")
    assert not contains_answer("Velmoran food", "Velmora")
    assert is_abstention("I don't know.") and is_abstention(None) and not is_abstention("Velmora")


def test_failure_key_normalises_generated_ids_only():
    assert normalise_id("p1-m3~u1abcd") == normalise_id("p1-m3~u1ef01") == "p1-m3~u"
    assert normalise_id("p1-m3") == "p1-m3"
    a = failure_key("s", "update", "value=X", "stale_answer", "post-selection", ("p1-m3~u1abcd",))
    b = failure_key("s", "update", "value=X", "stale_answer", "post-selection", ("p1-m3~u2ffff",))
    c = failure_key("s", "update", "value=Y", "stale_answer", "post-selection", ("p1-m3~u2ffff",))
    assert a == b != c
