"""Faults in every backend operation and in the corpus store: the campaign records them, ends truthfully (its
reason in the store, in summary.json and in its exit code; the committed corpus consistent) and resumes."""

from __future__ import annotations

import errno
import json
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from tests.support.faulty_backends import OPERATIONS, FaultyBackend, preflight_calls
from ufuzz.corpus import window as window_mod
from ufuzz.corpus.failures import FailureStore
from ufuzz.corpus.store import CorpusStore, default_url
from ufuzz.engine import ending
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.seeds.synth import synthesize

BUDGET = 60


@pytest.fixture(scope="module")
def suite():
    return synthesize(personas=2, seed=3)


def _config(out: Path, **kw) -> CampaignConfig:
    # step by step (--batch 1): a fault's error record and the stop after N in a row come at the step they
    # belong to (with batches the run of errors is checked between batches; test_end_states covers that)
    base = {"backend": "embedded", "backend_options": {"retrieval": "bm25"}, "budget": BUDGET, "seed": 4,
            "out": str(out), "batch": 1, "search": "walk"}  # every operation of every seed's obligations is met
    return CampaignConfig(**{**base, **kw})


def _faulty(tmp: Path, name: str, **opts) -> FaultyBackend:
    return FaultyBackend(tmp / f"backend-{name}", {"retrieval": "bm25", **opts})


def _recorded(out: Path) -> dict:
    """What the corpus holds: status, message, execution seqs, error operations, failure keys."""
    cid = json.loads((out / "campaign.json").read_text())["campaign"]
    with CorpusStore(default_url(out)) as s:
        rec = s.campaign(cid)
        seqs = [e.seq for e in s.executions(cid)]
        errors = s.errors(cid)
        mutants = s.mutants(cid)
    with FailureStore(default_url(out), cid) as f:
        failures = f.failures()
    return {"status": rec.status, "message": rec.message, "seqs": seqs, "errors": errors, "mutants": mutants,
            "failures": failures}


def _consistent(out: Path, summary: dict) -> dict:
    got = _recorded(out)
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["version"] == ending.SUMMARY_VERSION and on_disk["status"] == summary["status"]
    assert got["status"] == summary["status"] and got["message"] == summary["message"]
    assert got["seqs"] == list(range(1, len(got["seqs"]) + 1)) and len(got["seqs"]) == summary["executions"]
    assert len(got["errors"]) == summary["errors"]
    return got


# ---------------------------------------------------------------------------------------------- backend faults
@pytest.mark.parametrize("op", OPERATIONS)
def test_a_fault_in_any_backend_operation_is_an_error_record_then_the_campaign_resumes(tmp_path, suite, op):
    out = tmp_path / "c"
    # every call of ``op`` fails once the preflight's round trip is done
    backend = _faulty(tmp_path, "1", fail_op=op, fail_after=preflight_calls(tmp_path)[op])
    summary = Campaign(_config(out, max_consecutive_errors=4), suite=suite, backend=backend).run()
    assert backend.injected > 0
    got = _consistent(out, summary)
    assert summary["errors"] > 0 and any("injected fault" in e.message for e in got["errors"])
    assert summary["status"] in (ending.BUDGET_SPENT, ending.ERROR)
    if summary["status"] == ending.ERROR:  # the fault struck every step: stopped, with the last error
        assert "4 backend errors in a row" in summary["message"] and f"injected fault in {op}" in summary["message"]
        assert summary["executions"] < BUDGET
    # no fault is ever a failure
    assert not any("injected" in json.dumps(f.detail) for f in got["failures"])
    # the fault is gone: the campaign goes on to its budget (one more stretch when it had spent it)
    more = None if summary["status"] == ending.ERROR else BUDGET + 20
    again = Campaign.resume(out, backend=_faulty(tmp_path, "2"), budget=more).run()
    assert again["status"] == ending.BUDGET_SPENT and again["executions"] == (more or BUDGET)
    _consistent(out, again)


def test_intermittent_faults_in_every_operation_still_spend_the_budget(tmp_path, suite):
    after = preflight_calls(tmp_path)
    for op in OPERATIONS:
        out = tmp_path / op
        # build is called once per checkpoint (two here) after the preflight's call: every second call fails
        backend = _faulty(tmp_path, op, fail_op=op, fail_every=2 if op == "build" else 3, fail_after=after[op])
        summary = Campaign(_config(out), suite=suite, backend=backend).run()
        assert summary["status"] == ending.BUDGET_SPENT and summary["executions"] == BUDGET, op
        got = _consistent(out, summary)
        assert backend.injected > 0, op  # each operation is called often enough for a fault to land
        assert any(f"injected fault in {op}" in e.message for e in got["errors"]), op


# ---------------------------------------------------------------------------------------------- store faults
def _reference(tmp_path: Path, suite) -> dict:
    out = tmp_path / "reference"
    Campaign(_config(out), suite=suite).run()
    return _comparable(out)


def _comparable(out: Path) -> dict:
    got = _recorded(out)
    cid = json.loads((out / "campaign.json").read_text())["campaign"]
    with CorpusStore(default_url(out)) as s:
        execs = [(e.seq, e.execution.case_id, e.execution.top_ids) for e in s.executions(cid)]
    return {"execs": execs, "mutants": [(m.case_id, m.operator, m.target, m.valid) for m in got["mutants"]],
            "failures": sorted((f.failure_key, f.count, f.first_seq) for f in got["failures"])}


def _flush_fails(monkeypatch, exc: BaseException, at: int, until: int | None = None) -> list[int]:
    """The window's commit raises ``exc`` from its ``at``-th call (to its ``until``-th; None: for good)."""
    calls = [0]
    original = window_mod.WriteWindow.flush

    def flush(self, extra=None):
        calls[0] += 1
        if calls[0] >= at and (until is None or calls[0] <= until):
            raise exc
        return original(self, extra)

    monkeypatch.setattr(window_mod.WriteWindow, "flush", flush)
    return calls


def test_a_full_disk_ends_the_campaign_as_an_error_and_resume_redoes_what_was_lost(tmp_path, suite, monkeypatch):
    expected = _reference(tmp_path, suite)
    out = tmp_path / "c"
    _flush_fails(monkeypatch, OSError(errno.ENOSPC, "No space left on device"), at=3)
    summary = Campaign(_config(out, window_records=16), suite=suite).run()
    assert summary["status"] == ending.ERROR and "No space left on device" in summary["message"]
    assert summary["exit_code"] == 3
    assert any("could not be written either" in w for w in summary["warnings"])
    got = _consistent(out, summary)  # the summary reports what was committed, not what was lost
    assert 0 < len(got["seqs"]) < BUDGET
    monkeypatch.undo()
    again = Campaign.resume(out).run()
    assert again["status"] == ending.BUDGET_SPENT
    assert _comparable(out) == expected


def test_a_database_error_once_ends_as_error_and_commits_the_steps_that_were_complete(tmp_path, suite,
                                                                                      monkeypatch):
    expected = _reference(tmp_path, suite)
    out = tmp_path / "c"
    locked = OperationalError("INSERT ...", {}, sqlite3.OperationalError("database is locked"))
    _flush_fails(monkeypatch, locked, at=2, until=2)
    summary = Campaign(_config(out, window_records=16), suite=suite).run()
    assert summary["status"] == ending.ERROR and summary["message"] == "OperationalError: database is locked"
    assert not summary["warnings"]  # the closing commit went through: nothing was lost
    _consistent(out, summary)
    monkeypatch.undo()
    assert Campaign.resume(out).run()["status"] == ending.BUDGET_SPENT
    assert _comparable(out) == expected


def test_a_corpus_locked_by_another_writer_ends_truthfully_without_a_second_error(tmp_path, suite, monkeypatch):
    from ufuzz.corpus import store as store_mod
    from ufuzz.reports.status import campaign_status

    expected = _reference(tmp_path, suite)
    monkeypatch.setattr(store_mod, "BUSY_TIMEOUT_MS", 200)
    out = tmp_path / "c"
    holder: list[sqlite3.Connection] = []

    def lock_it(progress) -> None:  # another writer takes the database and keeps it
        if progress.executions >= 20 and not holder:
            conn = sqlite3.connect(out / "corpus.sqlite", isolation_level=None, timeout=10)
            conn.execute("BEGIN IMMEDIATE")
            holder.append(conn)

    summary = Campaign(_config(out, window_records=8), suite=suite).run(on_progress=lock_it)
    assert summary["status"] == ending.ERROR and "database is locked" in summary["message"]
    assert any("could not record the end in the corpus database" in w for w in summary["warnings"])
    assert json.loads((out / "summary.json").read_text())["status"] == ending.ERROR
    holder[0].rollback()
    holder[0].close()
    # the store could not be told; once the process is gone, status tells the truth from summary.json
    monkeypatch.setattr(ending, "process_alive", lambda pid, host: False)
    st = campaign_status(out)
    assert st["status"] == ending.ERROR and "database is locked" in st["message"]
    assert "could not be recorded" in st["recorded_status"]
    again = Campaign.resume(out).run()
    assert again["status"] == ending.BUDGET_SPENT
    assert _comparable(out) == expected


# ---------------------------------------------------------------------------------------------- ufuzz's own faults
def test_a_crash_inside_the_fuzzer_ends_as_error_with_its_message(tmp_path, suite, monkeypatch):
    from ufuzz.oracles import oracle as oracle_mod

    calls = [0]
    original = oracle_mod.judge_case

    def judge_case(*args, **kw):
        calls[0] += 1
        if calls[0] == 12:
            raise TypeError("must be real number, not str")
        return original(*args, **kw)

    monkeypatch.setattr(oracle_mod, "judge_case", judge_case)
    out = tmp_path / "c"
    summary = Campaign(_config(out), suite=suite).run()
    assert summary["status"] == ending.ERROR and summary["message"] == \
        "internal error (a bug in ufuzz, not the system under test): TypeError: must be real number, not str"
    # its own exit code: a nightly job must not read ufuzz's bug as "the product is down" (3)
    assert summary["exit_code"] == ending.INTERNAL_ERROR == 70
    _consistent(out, summary)
    log = [json.loads(line) for line in (out / "campaign.log").read_text().splitlines()]
    crash = next(e for e in log if e["event"] == "crashed")
    assert "Traceback" in crash["traceback"]  # the traceback goes to the log, not to the user
    assert log[-1]["event"] == "finished" and log[-1]["status"] == ending.ERROR
    monkeypatch.undo()
    assert Campaign.resume(out).run()["status"] == ending.BUDGET_SPENT


def test_a_full_disk_under_the_log_ends_as_error_and_leaves_no_half_line(tmp_path, suite, monkeypatch):
    from ufuzz.engine import monitor as monitor_mod

    writes = [0]
    original = monitor_mod.LogFile._emit

    def emit(self, data):  # the disk fills up: half a line reaches it, then the write fails
        writes[0] += 1
        if writes[0] >= 8:
            original(self, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        original(self, data)

    monkeypatch.setattr(monitor_mod.LogFile, "_emit", emit)
    out = tmp_path / "c"
    summary = Campaign(_config(out), suite=suite).run()
    assert summary["status"] == ending.ERROR and "No space left on device" in summary["message"]
    assert summary["exit_code"] == 3 and "internal" not in summary["message"]  # the environment's
    _consistent(out, summary)
    for line in (out / "campaign.log").read_text().splitlines():
        json.loads(line)  # every line whole


def test_time_limit_and_exhausted_are_their_own_reasons(tmp_path, suite, monkeypatch):
    s = Campaign(_config(tmp_path / "t", max_time=1e-9), suite=suite).run()
    assert s["status"] == ending.TIME_LIMIT and s["exit_code"] == 5 and s["executions"] == 0
    from ufuzz.engine import scheduler as scheduler_mod

    original = scheduler_mod.Scheduler.next
    handed = [0]

    def next_task(self):  # nothing left after ten tasks
        handed[0] += 1
        return original(self) if handed[0] <= 10 else None

    monkeypatch.setattr(scheduler_mod.Scheduler, "next", next_task)
    s = Campaign(_config(tmp_path / "e"), suite=suite).run()
    assert s["status"] == ending.EXHAUSTED and s["exit_code"] == 4 and 0 < s["executions"] < BUDGET
    _consistent(tmp_path / "e", s)
