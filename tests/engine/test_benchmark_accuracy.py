"""The benchmark's own accuracy on the seeds, beside the fuzzing findings: a campaign on imported LoCoMo
questions, answered and judged through a local OpenAI-compatible server (the judge applies LoCoMo's J
criterion mechanically), counts each seed's unmutated verdict once; ``status`` and the report show it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.benchmark_judge import judge_by_benchmark
from tests.support.llm_server import start_llm_server
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.oracles.accuracy import benchmark_accuracy
from ufuzz.reports.html import _accuracy as _accuracy_html
from ufuzz.reports.html import build_report
from ufuzz.reports.status import accuracy_lines, campaign_status, render_status
from ufuzz.seeds.importers import import_file

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "locomo_sample.json"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    suite = import_file("locomo", FIX).suite
    out = tmp_path_factory.mktemp("acc") / "c"
    with start_llm_server() as llm:
        c = Campaign(CampaignConfig(backend="embedded", backend_options={"retrieval": "bm25"}, budget=60, seed=1,
                                    out=str(out), llm_base_url=llm.base_url, llm_model="rule-model",
                                    llm_uses=("answer", "judge"), llm_cache=str(out.parent / "calls.sqlite")),
                     suite=suite)
        summary = c.run()
    return suite, c, summary, out


def test_each_judged_seed_counts_once_by_its_benchmark_verdict(run):
    suite, c, summary, _ = run
    assert summary["errors"] == 0
    acc = summary["benchmark_accuracy"]["locomo"]
    seeds = {s.id: s for s in suite.seeds}
    parents = {e.execution.case_id: e.execution for e in c.store.executions(c.campaign_id, is_parent=True)
               if e.execution.case_id in seeds}
    assert acc["seeds"] == len(suite.seeds) and acc["judged"] + acc["by_type"].get("adversarial", {}).get(
        "judged", 0) == len(parents) > 0
    # what the stand-in's mechanical reading of the criterion says of each stored seed response
    expected = []
    for sid, ex in parents.items():
        ref = suite.references[sid]
        ans = "(none: abstain)" if ref.abstain else ref.answer
        label = judge_by_benchmark("locomo", ref.rubric.question_type, ans, ex.response)["label"]
        expected.append({"benchmark": "locomo", "question_type": ref.rubric.question_type,
                         "abstain": ref.abstain, "correct": label == "Correct"})
    assert summary["benchmark_accuracy"] == benchmark_accuracy(expected, llm_judge=True,
                                                               seeds={"locomo": len(suite.seeds)})
    assert acc["judge"] == "llm (benchmark criteria)"
    if "adversarial" in acc["by_type"]:
        assert acc["by_type"]["adversarial"]["in_score"] is False


def test_status_and_report_show_it_beside_the_findings(run):
    _, _, summary, out = run
    st = campaign_status(out)
    assert st["benchmark_accuracy"] == summary["benchmark_accuracy"]
    text = render_status(st)
    acc = summary["benchmark_accuracy"]["locomo"]
    assert "benchmark accuracy (the benchmark's own judging of the unmutated seeds" in text
    assert f"{acc['correct']}/{acc['judged']}" in text and f"of {acc['seeds']} seeds judged, by llm" in text
    assert text.index("unique failures") < text.index("benchmark accuracy")
    html, _ = build_report(out)
    assert "Benchmark accuracy on the seeds" in html


def test_accuracy_counts_types_and_leaves_unscored_types_out():
    rows = [{"benchmark": "locomo", "question_type": "temporal", "abstain": False, "correct": True},
            {"benchmark": "locomo", "question_type": "temporal", "abstain": False, "correct": False},
            {"benchmark": "locomo", "question_type": "adversarial", "abstain": True, "correct": True},
            {"benchmark": "longmemeval", "question_type": "multi-session", "abstain": True, "correct": True}]
    acc = benchmark_accuracy(rows, llm_judge=False, seeds={"locomo": 5, "longmemeval": 1})
    assert (acc["locomo"]["correct"], acc["locomo"]["judged"], acc["locomo"]["accuracy"]) == (1, 2, 0.5)
    assert acc["locomo"]["by_type"]["adversarial"] == {"correct": 1, "judged": 1, "accuracy": 1.0,
                                                       "in_score": False}
    assert acc["locomo"]["seeds"] == 5 and "text matching" in acc["locomo"]["judge"]
    assert list(acc["longmemeval"]["by_type"]) == ["multi-session (abstention)"]
    assert benchmark_accuracy([], llm_judge=True) == {}


def test_a_campaign_without_response_level_says_not_judged_not_zero():
    """Selection-only campaigns judge no seed's response: "0/0" beside published accuracies would read as a
    measured zero."""
    acc = benchmark_accuracy([], llm_judge=False, seeds={"locomo": 264})
    text = "\n".join(accuracy_lines(acc))
    assert "0/0" not in text and "locomo" in text and "not judged" in text and "264 seeds" in text
    html = _accuracy_html(acc)
    assert "none judged (no response level)" in html
