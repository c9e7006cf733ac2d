"""Parallel campaigns (``--workers N``): lanes in child processes, each with its own backend, batches applied in
task order.

On the embedded backend (BM25, no model) over a small synthetic suite: the same seed and N give the same
campaign record by record; a parallel campaign's failures are real (each one reproduces on a fresh backend); a
planted defect is still found with two workers; a lane that dies is an error record and a restarted lane, never a
failure or a crash; a campaign killed between batches and resumed is the uninterrupted one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tests.engine.test_resume import _corpus
from tests.support import planted
from tests.support.faulty_backends import SegfaultingBackend
from ufuzz.backends import registry
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.engine.parallel.batching import DEFAULT_BATCH, SERIAL_BATCH
from ufuzz.engine.parallel.pool import home_lane

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 160
SEED = 5
OPTIONS = {"retrieval": "bm25"}


@pytest.fixture(scope="module")
def seeds_file(tmp_path_factory) -> Path:
    from ufuzz.seeds.io import write_suite
    from ufuzz.seeds.synth import synthesize

    return write_suite(synthesize(personas=3, seed=11), tmp_path_factory.mktemp("seeds") / "suite.jsonl")


def _run(out: Path, seeds: Path, workers: int = 1, **kw) -> dict:
    cfg = dict(backend="embedded", backend_options=OPTIONS, seeds=str(seeds), budget=BUDGET, seed=SEED,
               out=str(out), workers=workers, batch=DEFAULT_BATCH)  # one batch for any lanes: one campaign
    cfg.update(kw)
    return Campaign(CampaignConfig(**cfg)).run()


@pytest.fixture(scope="module")
def two(tmp_path_factory, seeds_file) -> Path:
    out = tmp_path_factory.mktemp("workers") / "two"
    summary = _run(out, seeds_file, workers=2)
    assert summary["status"] == "budget_spent" and summary["errors"] == 0, summary
    return out


def test_same_seed_and_workers_give_the_same_campaign(two, seeds_file, tmp_path):
    expected = _corpus(two)
    assert expected["summary"]["executions"] == BUDGET and expected["failures"]
    assert any(m[4] for m in expected["mutants"]) and any(m[8] for m in expected["mutants"])  # state mutants too
    again = tmp_path / "again"
    _run(again, seeds_file, 2)
    got = _corpus(again)
    for part in expected:
        assert got[part] == expected[part], part


def test_a_parallel_campaigns_failures_reproduce_on_a_fresh_backend(two):
    from ufuzz.triage.replay import replay_campaign

    report = replay_campaign(two)
    assert report.total >= 3
    assert report.reproduced == report.total, [r for r in report.results if not r.reproduced]


def test_any_lanes_give_the_campaign_of_one(two, seeds_file, tmp_path):
    """The batch, not the lanes, is part of the schedule: one lane, two process lanes and three thread lanes
    give the same campaign record by record (mutants, executions, feedback, failures) — a nightly run with many
    calls in flight finds what a developer's run at one finds."""
    expected = _corpus(two)
    for name, kw in (("one", {"workers": 1}), ("threads", {"workers": 1, "max_concurrency": 3})):
        _run(tmp_path / name, seeds_file, **kw)
        got = _corpus(tmp_path / name)
        for part in expected:
            assert got[part] == expected[part], (name, part)


def test_the_default_batch_is_step_by_step_with_one_lane_and_recorded(tmp_path):
    """Not given, the batch is 1 where one call runs at a time (the scheduler sees every result before it draws
    again) and 128 where lanes or concurrency could run beside a task; the value is the campaign's, recorded."""
    from ufuzz.engine.config import CampaignConfig as Config

    assert Config().batch == SERIAL_BATCH
    assert Config(workers=2).batch == Config(max_concurrency=3).batch == DEFAULT_BATCH
    assert Config(workers=2, batch=1).batch == 1 and Config(batch=64).batch == 64
    assert Config.from_dict(Config().to_dict()).batch == SERIAL_BATCH
    assert Config.from_dict({**Config(workers=1).to_dict(), "workers": 4}).batch == SERIAL_BATCH  # as recorded


def test_the_batch_is_part_of_the_schedule(seeds_file, tmp_path):
    """Another batch is another schedule (as another seed is), recorded with the campaign and kept on resume;
    a campaign recorded before --batch existed resumes with the batches its lanes made."""
    from ufuzz.corpus.store import CorpusStore, default_url
    from ufuzz.engine.config import CampaignConfig as Config

    one = _run(tmp_path / "b1", seeds_file, 1, batch=1)
    assert one["executions"] == BUDGET
    cid = json.loads((tmp_path / "b1" / "campaign.json").read_text())["campaign"]
    with CorpusStore(default_url(tmp_path / "b1")) as store:
        stored = dict(store.campaign(cid).config)
    assert stored["batch"] == 1
    legacy = {k: v for k, v in stored.items() if k != "batch"}
    assert Config.from_dict(legacy).batch == 1
    assert Config.from_dict({**legacy, "workers": 2}).batch == 8
    assert Config.from_dict({**legacy, "workers": 2, "max_concurrency": 4}).batch == 32


def test_a_planted_defect_is_found_with_two_workers(tmp_path):
    names = planted.register_all()
    bad, good = names["delete-hides"]
    cls = planted.CLASSES["delete-hides"]
    found = {}
    for name in (bad, good):
        c = Campaign(CampaignConfig(backend=name, backend_options={"db": "memory", "retrieval": "bm25"}, budget=200,
                                    seed=1, out=str(tmp_path / name), workers=2))
        summary = c.run()
        assert summary["status"] == "budget_spent" and summary["errors"] == 0
        found[name] = [f for _, f in c.failure_log]
    assert [f for f in found[bad] if cls.holds(f)], "the planted delete defect was not found with --workers 2"
    assert not [f for f in found[good] if cls.holds(f)]


def test_a_lane_that_dies_is_an_error_record_and_the_campaign_goes_on(tmp_path, seeds_file):
    """The backend segfaults in the lane's own process (isolation none) on every 25th retrieval: each death
    loses that lane's jobs of the batch (error records naming the lane), the lane is restarted, the campaign
    spends its budget and reports no failure from a lost job."""
    registry.register("segfaulting", SegfaultingBackend)
    out = tmp_path / "dying"
    c = Campaign(CampaignConfig(backend="segfaulting", backend_options={**OPTIONS, "crash_every": 25},
                                seeds=str(seeds_file), budget=120, seed=SEED, out=str(out), workers=2,
                                isolation="none", preflight=False))
    summary = c.run()
    assert summary["status"] == "budget_spent", summary
    assert summary["executions"] == 120 and summary["errors"] >= 2 and summary["lanes_lost_jobs"] >= 2
    from ufuzz.corpus.store import CorpusStore, default_url

    with CorpusStore(default_url(out)) as s:
        errors = s.errors(c.campaign_id)
        executed = {r.execution.case_id for r in s.executions(c.campaign_id) if r.execution.error is None}
    lane_errors = [e for e in errors if e.operation == "lane"]
    assert lane_errors and all("died" in e.message and "SIGSEGV" in e.message for e in lane_errors)
    assert {f.case_id for _, f in c.failure_log} <= executed  # every failure is of an execution that happened
    assert "lane_died" in (out / "campaign.log").read_text()


_CHILD = r"""
import json, os, signal, sys
from ufuzz.corpus import window as W
from ufuzz.engine import campaign as C, journal as J

out, seeds, budget, seed, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
lanes = json.loads(sys.argv[6])  # --workers / --max-concurrency
flushes = [0]
original = W.WriteWindow.flush


def flush(self, extra=None):  # SIGKILL right after the kill_at-th commit (a snapshot is not due at every one)
    done = original(self, extra)
    flushes[0] += 1
    if flushes[0] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    return done


W.WriteWindow.flush = flush
J.Journal.snapshot_due = lambda self: flushes[0] % 2 == 1
if kill_at:
    config = C.CampaignConfig(backend="embedded", backend_options={"retrieval": "bm25"}, seeds=seeds, budget=budget,
                              seed=seed, out=out, window_records=24, **lanes)
    summary = C.Campaign(config).run()
else:
    summary = C.Campaign.resume(out).run()
print("RESULT " + json.dumps({"status": summary["status"], "executions": summary["executions"]}))
"""


def _child(out: Path, seeds: Path, kill_at: int, **lanes: int) -> subprocess.CompletedProcess:
    """The campaign of ``lanes`` (``workers=2`` unless given) in a child process, SIGKILLed right after its
    ``kill_at``-th commit; ``kill_at`` 0 resumes it instead."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", _CHILD, str(out), str(seeds), str(BUDGET), str(SEED), str(kill_at),
                           json.dumps(lanes or {"workers": 2})], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_killed_and_resumed_with_workers_is_the_uninterrupted_campaign(tmp_path, seeds_file):
    ref = tmp_path / "ref"
    _run(ref, seeds_file, 2, window_records=24)
    expected = _corpus(ref)
    out = tmp_path / "killed"
    run = _child(out, seeds_file, kill_at=4)
    assert run.returncode == -9, run.stderr[-3000:]
    resumed = _child(out, seeds_file, kill_at=0)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads(resumed.stdout.split("RESULT ", 1)[1])["status"] == "budget_spent"
    got = _corpus(out)
    for part in expected:
        assert got[part] == expected[part], part


def test_a_seeds_home_lane_is_stable_and_in_range():
    ids = [f"p{i}-q{j}" for i in range(6) for j in range(4)]
    for n in (1, 2, 3, 5):
        lanes = [home_lane(sid, n) for sid in ids]
        assert all(0 <= x < n for x in lanes) and lanes == [zlib.crc32(s.encode()) % n for s in ids]
    assert len({home_lane(sid, 3) for sid in ids}) == 3  # the seeds spread over the lanes
