"""End states are whole: an outage that outlasts the budget is an error end even with
``--max-consecutive-errors 0``; a resumed campaign's ``plot_data.csv`` holds the committed prefix's curve (not
the rolled-back work); stray temporary files of an atomic write are cleaned when the campaign opens again."""

from __future__ import annotations

import pytest

from tests.support.faulty_backends import FaultyBackend
from ufuzz.engine import ending
from ufuzz.engine.campaign import OUTAGE_RUN, Campaign, CampaignConfig
from ufuzz.engine.plotdata import read_plot_data
from ufuzz.seeds.synth import synthesize


@pytest.fixture(scope="module")
def suite():
    return synthesize(personas=2, seed=3)


def _config(out, **kw) -> CampaignConfig:
    base = {"backend": "embedded", "backend_options": {"retrieval": "bm25"}, "budget": 80, "seed": 4,
            "out": str(out)}
    return CampaignConfig(**{**base, **kw})


def test_an_outage_to_the_end_of_the_budget_is_an_error_even_without_a_limit(tmp_path, suite):
    # every retrieval after the 30th fails: the rest of the budget is one outage
    backend = FaultyBackend(tmp_path / "b", {"retrieval": "bm25", "fail_op": "retrieve", "fail_after": 30})
    summary = Campaign(_config(tmp_path / "c", max_consecutive_errors=0), suite=suite, backend=backend).run()
    assert summary["executions"] == 80 and summary["errors"] >= OUTAGE_RUN
    assert summary["status"] == ending.ERROR and ending.EXIT_CODES[summary["status"]] != 0
    assert "the budget ran out in an outage" in summary["message"] and "injected fault" in summary["message"]


def test_a_few_errors_at_the_end_do_not_make_an_outage(tmp_path, suite):
    backend = FaultyBackend(tmp_path / "b", {"retrieval": "bm25", "fail_op": "retrieve", "fail_every": 7})
    summary = Campaign(_config(tmp_path / "c", max_consecutive_errors=0), suite=suite, backend=backend).run()
    assert summary["errors"] > 0 and summary["status"] == ending.BUDGET_SPENT


def test_plot_data_after_resume_is_the_committed_prefix_then_the_new_work(tmp_path, suite, monkeypatch):
    out = tmp_path / "c"
    first = Campaign(_config(out, budget=40), suite=suite).run()
    assert first["status"] == ending.BUDGET_SPENT
    rows = read_plot_data(out / "plot_data.csv")
    # rows of work a resume rolls back: as a kill after the snapshot would leave them
    with (out / "plot_data.csv").open("a", encoding="utf-8") as fh:
        fh.write("99.0,55,1,1,1,1,1,1,1,0,1\r\n")
    (out / ".summary.json.abc123.tmp").write_text("{")
    second = Campaign.resume(out, budget=60).run()
    assert second["status"] == ending.BUDGET_SPENT and second["executions"] == 60
    after = read_plot_data(out / "plot_data.csv")
    executions = [r["executions"] for r in after]
    assert executions == sorted(executions) and executions[-1] == 60  # never backwards
    assert not any(r["elapsed_s"] == 99.0 and r["executions"] == 55 for r in after)
    assert after[:len(rows)] == rows
    elapsed = [r["elapsed_s"] for r in after]
    assert elapsed == sorted(elapsed)  # the clock goes on; it does not restart at 0
    assert not list(out.glob(".summary.json.*.tmp"))


def test_resume_rebuilds_a_missing_summary_of_a_finished_campaign(tmp_path, suite):
    import json

    out = tmp_path / "c"
    first = Campaign(_config(out, budget=30), suite=suite).run()
    before = json.loads((out / "summary.json").read_text())
    (out / "summary.json").unlink()  # as a kill at its rename left it (with an older ufuzz)
    (out / ".summary.json.x1y2z3.tmp").write_text("{")
    again = Campaign.resume(out).run()  # nothing left to do: the end is recorded again, with its summary
    assert again["status"] == first["status"] == ending.BUDGET_SPENT
    rebuilt = json.loads((out / "summary.json").read_text())
    for key in ("executions", "unique_failures", "failures", "coverage", "retained", "errors"):
        assert rebuilt[key] == before[key], key
    assert not list(out.glob(".summary.json.*.tmp"))
    with pytest.raises(Exception, match="already spent its budget"):  # with its summary there, nothing to do
        Campaign.resume(out)
