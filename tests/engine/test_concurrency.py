"""Concurrent campaigns (``--max-concurrency M``, alone and with ``--workers N``): thread lanes over one backend,
batches of N × M lanes applied in task order.

On the embedded backend (BM25): N processes of M thread lanes give the campaign of N × M thread lanes in one
process, record by record; a concurrent campaign's failures reproduce on a fresh backend; a process lane of
thread lanes that dies is an error record per lost job and a restarted lane, never a failure or a crash.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.test_resume import _corpus
from tests.support.faulty_backends import SegfaultingBackend
from ufuzz.backends import registry
from ufuzz.engine.campaign import Campaign, CampaignConfig

BUDGET = 160
SEED = 5
OPTIONS = {"retrieval": "bm25"}


@pytest.fixture(scope="module")
def seeds_file(tmp_path_factory) -> Path:
    from ufuzz.seeds.io import write_suite
    from ufuzz.seeds.synth import synthesize

    return write_suite(synthesize(personas=3, seed=11), tmp_path_factory.mktemp("seeds") / "suite.jsonl")


def _run(out: Path, seeds: Path, **kw) -> dict:
    cfg = dict(backend="embedded", backend_options=OPTIONS, seeds=str(seeds), budget=BUDGET, seed=SEED, out=str(out))
    cfg.update(kw)
    return Campaign(CampaignConfig(**cfg)).run()


@pytest.fixture(scope="module")
def four(tmp_path_factory, seeds_file) -> Path:
    out = tmp_path_factory.mktemp("concurrency") / "four"
    summary = _run(out, seeds_file, max_concurrency=4)
    assert summary["status"] == "budget_spent" and summary["errors"] == 0, summary
    return out


def test_processes_of_thread_lanes_give_the_campaign_of_as_many_thread_lanes(four, seeds_file, tmp_path):
    expected = _corpus(four)
    assert expected["summary"]["executions"] == BUDGET and expected["failures"]
    assert any(m[8] for m in expected["mutants"])  # state mutants too (forks held in the lanes)
    _run(tmp_path / "two-by-two", seeds_file, workers=2, max_concurrency=2)
    got = _corpus(tmp_path / "two-by-two")
    for part in expected:
        assert got[part] == expected[part], part


def test_a_concurrent_campaigns_failures_reproduce_on_a_fresh_backend(four):
    from ufuzz.triage.replay import replay_campaign

    report = replay_campaign(four)
    assert report.total >= 3
    assert report.reproduced == report.total, [r for r in report.results if not r.reproduced]


def test_a_process_of_thread_lanes_that_dies_is_an_error_record_and_the_campaign_goes_on(tmp_path, seeds_file):
    registry.register("segfaulting", SegfaultingBackend)
    out = tmp_path / "dying"
    c = Campaign(CampaignConfig(backend="segfaulting", backend_options={**OPTIONS, "crash_every": 40},
                                seeds=str(seeds_file), budget=120, seed=SEED, out=str(out), workers=2,
                                max_concurrency=2, isolation="none", preflight=False))
    summary = c.run()
    assert summary["status"] == "budget_spent", summary
    assert summary["executions"] == 120 and summary["errors"] >= 1 and summary["lanes_lost_jobs"] >= 1
    from ufuzz.corpus.store import CorpusStore, default_url

    with CorpusStore(default_url(out)) as s:
        errors = s.errors(c.campaign_id)
        executed = {r.execution.case_id for r in s.executions(c.campaign_id) if r.execution.error is None}
    lane_errors = [e for e in errors if e.operation == "lane"]
    assert lane_errors and all("died" in e.message for e in lane_errors)
    assert {f.case_id for _, f in c.failure_log} <= executed  # every failure is of an execution that happened


def test_killed_and_resumed_with_thread_lanes_is_the_uninterrupted_campaign(tmp_path, seeds_file):
    import json

    from tests.engine.test_workers import _child

    ref = tmp_path / "ref"
    _run(ref, seeds_file, max_concurrency=4, window_records=24)
    expected = _corpus(ref)
    out = tmp_path / "killed"
    run = _child(out, seeds_file, 4, max_concurrency=4)
    assert run.returncode == -9, run.stderr[-3000:]
    resumed = _child(out, seeds_file, 0)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads(resumed.stdout.split("RESULT ", 1)[1])["status"] == "budget_spent"
    got = _corpus(out)
    for part in expected:
        assert got[part] == expected[part], part
