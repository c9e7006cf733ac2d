"""MemOps judge rubrics reach the LLM judge: imported, written and loaded as a seed file, carried on the
reference into the oracle, and sent in the judge request to the local OpenAI-compatible server
(``tests/llm_server.py``, real HTTP on 127.0.0.1). The offline matching path ignores them.

The memory system is the real embedded backend (BM25 retrieval, so no embedding model is loaded).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.llm_server import RuleBasedResponder, start_llm_server
from ufuzz.backends.responders import TopEvidenceReader
from ufuzz.corpus.campaign import case_of
from ufuzz.engine.executor import Executor
from ufuzz.llm import Judge, LLMClient, LLMConfig
from ufuzz.model import Execution
from ufuzz.oracles.expectations import response
from ufuzz.oracles.oracle import Oracle
from ufuzz.oracles.verdict import Context
from ufuzz.seeds.importers import import_file
from ufuzz.seeds.io import load_suite, write_suite
from ufuzz.triage.replay import fresh_backend

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "memops_evidence.json"
WORK_NOW = "Where does Dana work now?"  # rubric: must include Globex, must not include Acme, Initech
BLOOD_TYPE = "What is Dana's blood type?"  # empty rubric in the benchmark: none kept


@pytest.fixture(scope="module")
def memops(tmp_path_factory):
    path = write_suite(import_file("memops", FIX).suite, tmp_path_factory.mktemp("memops") / "memops.jsonl")
    return load_suite(path)


@pytest.fixture()
def server():
    with start_llm_server(RuleBasedResponder()) as srv:
        yield srv


def _judge(srv) -> Judge:
    return Judge(LLMClient(LLMConfig(base_url=srv.base_url, model="rule-model", api_key_env="UFUZZ_TEST_LLM_KEY")))


def _seed(suite, text):
    [seed] = [s for s in suite.seeds if s.query.text == text]
    return seed


def _judge_prompts(srv) -> list[str]:
    return [r.body["messages"][-1]["content"] for r in srv.chat_requests
            if r.body["messages"][0]["content"] == Judge.SYSTEM]


def test_rubric_is_in_the_judge_request_of_a_real_execution(memops, server, tmp_path):
    judge = _judge(server)
    oracle = Oracle(sink=lambda failure, ref: None, context=Context(judge=judge.label))
    seeds = {s.id: s for s in memops.seeds}
    with fresh_backend("embedded", {"retrieval": "bm25"}, tmp_path) as backend:
        # any responder will do: what is tested is the rubric's way to the judge
        executor = Executor(backend, memops.checkpoints, k=3, responder=TopEvidenceReader(None))
        try:
            prompts = {}
            for text in (WORK_NOW, BLOOD_TYPE):
                seed = _seed(memops, text)
                case = case_of(seed.id, memops.checkpoints, seeds, {})
                oracle.register(case.id, memops.reference_of(seed))
                ex = executor.execute(case, executor.state_of(case))
                assert ex.error is None and ex.response
                out = oracle.levels_of(case, ex)["response"]
                assert out.detail["judge"] in ("Correct", "Hallucination", "Omission")
                prompts[text] = _judge_prompts(server)[-1]
        finally:
            executor.close()
    assert len(_judge_prompts(server)) == 2
    assert "Rubric must_include: Globex\nRubric must_not_include: Acme; Initech" in prompts[WORK_NOW]
    assert "Rubric" not in prompts[BLOOD_TYPE]


def test_rubric_decides_the_verdict_only_with_the_llm_judge(memops, server):
    ref = memops.reference_of(_seed(memops, WORK_NOW))
    assert ref.rubric is not None and ref.supporting == ("t3",)
    # names the right employer, but also the superseded one the rubric forbids
    ex = Execution(case_id="c", state_key="s", query=WORK_NOW, top_ids=["t3"],
                   response="Dana left Acme and works at Globex now.", responder="answerer:test")
    judge = _judge(server)

    offline = response(ref, ex)
    assert offline.passed and offline.detail["judge"] is None
    assert response(ref.with_(rubric=None), ex) == offline  # the offline path ignores the rubric

    without = response(ref.with_(rubric=None), ex, judge.label)
    assert without.passed and without.detail["judge"] == "Correct"  # the stand-in model: answer contained
    with_rubric = response(ref, ex, judge.label)
    assert not with_rubric.passed and with_rubric.detail["judge"] == "Hallucination"
    assert "Rubric must_not_include: Acme; Initech" in _judge_prompts(server)[-1]


def test_a_judge_without_a_rubric_parameter_is_called_as_before(memops):
    ref = memops.reference_of(_seed(memops, WORK_NOW))
    ex = Execution(case_id="c", state_key="s", query=WORK_NOW, top_ids=["t3"], response="Globex.",
                   responder="answerer:test")
    calls = []

    def three_argument_judge(question: str, answer: str | None, response: str) -> str:
        calls.append((question, answer, response))
        return "Correct"

    assert response(ref, ex, three_argument_judge).passed
    assert calls == [(WORK_NOW, "Globex", "Globex.")]
