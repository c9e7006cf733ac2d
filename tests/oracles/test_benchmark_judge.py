"""Judging by the benchmarks' own rules: an imported question's criterion reaches the LLM judge and decides.

The judge is the real :class:`ufuzz.llm.Judge` through the ``openai`` client to a local OpenAI-compatible
server (real HTTP on 127.0.0.1) whose rule-based model applies the criterion mechanically
(``tests/support/benchmark_judge.py``); the verdict tables are hand-made from the published criteria.
"""

from __future__ import annotations

import json

import pytest

from tests.oracles.benchmark_cases import LOCOMO, LONGMEMEVAL
from tests.support.llm_server import RuleBasedResponder, start_llm_server
from ufuzz.llm import CallCache, Judge, LLMClient, LLMConfig, LLMError
from ufuzz.model import Execution, Reference, Rubric
from ufuzz.oracles.expectations import response
from ufuzz.seeds.criteria import VERSION, benchmark_rubric, criteria_text, in_score


@pytest.fixture(scope="module")
def server():
    with start_llm_server(RuleBasedResponder()) as srv:
        yield srv


def _judge(srv, cache=None) -> Judge:
    return Judge(LLMClient(LLMConfig(base_url=srv.base_url, model="rule-model", api_key_env="UFUZZ_TEST_LLM_KEY"),
                           cache))


@pytest.mark.parametrize(("benchmark", "table"), [("longmemeval", LONGMEMEVAL), ("locomo", LOCOMO)])
def test_the_benchmark_rule_judge_agrees_with_the_hand_made_table(server, benchmark, table):
    assert len(table) >= 40
    judge = _judge(server)
    disagree = []
    for qtype, question, answer, resp, verdict in table:
        rubric = benchmark_rubric(benchmark, qtype, abstain=answer is None)
        assert rubric is not None, (benchmark, qtype)
        got = judge.judge(question, answer, resp, rubric.to_dict())
        if got.label != verdict:
            disagree.append((qtype, answer, resp, verdict, got.label))
    assert not disagree, disagree
    # every row went to the server with the criterion of its type
    prompts = [r.body["messages"][-1]["content"] for r in server.chat_requests[-len(table):]]
    for (qtype, _q, answer, _r, _v), prompt in zip(table, prompts):
        assert f"Benchmark: {benchmark}\nQuestion type: {qtype}\n" in prompt
        assert criteria_text(benchmark, qtype, answer is None) in prompt


def test_the_verdict_decides_the_response_level_through_the_reference(server):
    """The criterion travels on the reference to the oracle's response check: an off-by-one day count passes
    under LongMemEval's temporal criterion and fails under its general one."""
    judge = _judge(server)
    ex = Execution(case_id="c", state_key="s", query="How many days passed?", top_ids=["m1"],
                   response="15 days.", responder="backend:test")
    temporal = Reference(query_id="q", answer="14 days", supporting=("m1",),
                         rubric=benchmark_rubric("longmemeval", "temporal-reasoning", False))
    general = temporal.with_(rubric=benchmark_rubric("longmemeval", "multi-session", False))
    assert response(temporal, ex, judge.label).passed
    out = response(general, ex, judge.label)
    assert not out.passed and out.kind == "wrong_answer" and out.detail["judge"] == "Hallucination"


def test_criteria_prompt_construction():
    rubric = benchmark_rubric("longmemeval", "knowledge-update", False)
    [system, user] = Judge(None).messages("Where do I live now?", "Denver", "Denver.", rubric.to_dict())
    assert system["content"] == Judge.SYSTEM
    assert user["content"].splitlines() == [
        "Question: Where do I live now?", "Reference answer: Denver", "Response: Denver.",
        "Benchmark: longmemeval", "Question type: knowledge-update",
        f"Benchmark criteria (decide Correct by these): {rubric.criteria}"]
    assert "Rubric must_include" not in user["content"]  # no string checks: none listed
    # the string rubric of MemOps is written exactly as before (the same cache keys)
    [_, memops] = Judge(None).messages("Q?", "Globex", "Globex.", {"must_include": ["Globex"],
                                                                   "must_not_include": ["Acme"]})
    assert memops["content"].splitlines()[3:] == ["Rubric must_include: Globex", "Rubric must_not_include: Acme"]
    with pytest.raises(ValueError, match="unknown keys"):
        Judge(None).judge("Q?", "A", "A", {"criterion": "x"})


def test_each_type_has_its_own_criterion():
    lme = {t: criteria_text("longmemeval", t, False) for t in
           ("single-session-user", "single-session-assistant", "multi-session", "temporal-reasoning",
            "knowledge-update")}
    assert lme["single-session-user"] == lme["multi-session"]
    assert "off by one" in lme["temporal-reasoning"] and "off by one" not in lme["multi-session"]
    assert "latest value" in lme["knowledge-update"]
    abstention = criteria_text("longmemeval", "multi-session", True)
    assert abstention not in lme.values() and "cannot be answered" in abstention
    assert criteria_text("longmemeval", "single-session-preference", False) is None  # not imported: no rubric
    assert "another format" in criteria_text("locomo", "temporal", False)
    assert criteria_text("locomo", "adversarial", True) == criteria_text("locomo", "single-hop", True)
    assert criteria_text("halumem", "x", False) is None and benchmark_rubric("halumem", "x", False) is None
    assert not in_score("locomo", "adversarial") and in_score("locomo", "temporal")
    assert in_score("longmemeval", "knowledge-update")
    assert benchmark_rubric("locomo", "temporal", False).criteria_version == VERSION["locomo"]


def test_a_changed_criterion_is_another_cache_key(server, tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    judge = _judge(server, cache)
    rubric = benchmark_rubric("locomo", "single-hop", False)
    judge.judge("Q?", "pottery", "pottery", rubric.to_dict())
    judge.judge("Q?", "pottery", "pottery", rubric.to_dict())
    assert (judge.client.calls_made, judge.client.cache_hits) == (1, 1)
    edited = Rubric(**{**rubric.__dict__, "criteria": rubric.criteria + " Be strict."})
    judge.judge("Q?", "pottery", "pottery", edited.to_dict())
    assert judge.client.calls_made == 2


def test_verdict_parsing(server):
    """A fenced JSON verdict is read; a label outside the three, or prose, is an LLM error (an error record in a
    campaign, never a verdict)."""
    replies = iter(['```json\n{"label": "Omission", "reason": "declined"}\n```',
                    json.dumps({"label": "CORRECT", "reason": "x"}), "yes"])
    rubric = benchmark_rubric("longmemeval", "multi-session", False).to_dict()
    with start_llm_server(lambda request: next(replies)) as srv:
        judge = _judge(srv)
        assert judge.judge("Q?", "3", "no idea", rubric).label == "Omission"
        for _ in range(2):
            with pytest.raises(LLMError):
                judge.judge("Q?", "3", "no idea", rubric)


def test_rubric_round_trips_and_rejects_bad_criteria():
    rubric = benchmark_rubric("locomo", "temporal", False)
    assert bool(rubric) and Rubric.from_dict(rubric.to_dict()) == rubric
    assert Rubric(("x",)).to_dict() == {"must_include": ["x"], "must_not_include": []}  # as before
    with pytest.raises(ValueError, match="criteria must be a string"):
        Rubric.from_dict({"criteria": ["x"]})
