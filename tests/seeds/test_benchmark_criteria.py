"""Imported LongMemEval and LoCoMo questions carry their benchmark's judging criterion on the reference, and
it survives writing and loading the seed file."""

from __future__ import annotations

import json
from pathlib import Path

from ufuzz.seeds.criteria import VERSION, criteria_text
from ufuzz.seeds.importers import import_file
from ufuzz.seeds.io import load_suite, write_suite

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "importers"


def _lme(qid: str, qtype: str, answer: str) -> dict:
    return {"question_id": qid, "question_type": qtype, "question": "What is the name of my cat?",
            "answer": answer, "question_date": "2023/05/30 (Tue) 10:00",
            "haystack_dates": ["2023/05/20 (Sat) 02:21"], "haystack_session_ids": ["s1"],
            "haystack_sessions": [[{"role": "user", "content": "My cat is named Luna.", "has_answer": True},
                                   {"role": "assistant", "content": "Luna is a lovely name."}]],
            "answer_session_ids": ["s1"]}


def _check(suite, benchmark: str, type_of, tmp_path: Path) -> None:
    back = load_suite(write_suite(suite, tmp_path / f"{benchmark}.jsonl"))
    assert back.seeds
    for seed in back.seeds:
        ref, qtype = back.reference_of(seed), type_of(seed)
        assert ref.rubric is not None, seed.id
        assert (ref.rubric.benchmark, ref.rubric.question_type) == (benchmark, qtype)
        assert ref.rubric.criteria == criteria_text(benchmark, qtype, ref.abstain)
        assert ref.rubric.criteria_version == VERSION[benchmark]
        assert not ref.rubric.must_include and not ref.rubric.must_not_include


def test_longmemeval_questions_carry_the_criterion_of_their_type(tmp_path):
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([_lme("q1", "single-session-user", "Luna"), _lme("q2_abs", "multi-session", "x")]))
    suite = import_file("longmemeval", path).suite
    assert {s.id for s in suite.seeds} == {"lme:q1", "lme:q2_abs"}
    assert "cannot be answered" in suite.references["lme:q2_abs"].rubric.criteria
    _check(suite, "longmemeval", lambda seed: seed.metadata["question_type"], tmp_path)


def test_locomo_questions_carry_the_j_criterion_of_their_category(tmp_path):
    suite = import_file("locomo", FIX / "locomo_sample.json").suite
    assert {s.metadata["category_name"] for s in suite.seeds} >= {"adversarial", "temporal"}
    _check(suite, "locomo", lambda seed: seed.metadata["category_name"], tmp_path)
