"""A campaign whose set-up fails leaves nothing behind; read-only commands write nothing, even while a
campaign is running."""

from __future__ import annotations

import errno
import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufuzz.cli import main
from ufuzz.corpus.store import CorpusStore
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.engine.startup import StartError, check_start, directory_problem


def _full_disk(*_a, **_k):
    raise OSError(errno.ENOSPC, "No space left on device")


def _cfg(out: Path, **kw) -> CampaignConfig:
    return CampaignConfig(backend="embedded", budget=3, seed=0, out=str(out),
                          backend_options={"retrieval": "bm25"}, **kw)


def test_a_start_that_fails_late_removes_what_it_created(tmp_path, monkeypatch):
    """The disk fills after the backend and the SQLite store were created: both go again, and so do the
    folders the start created on the way."""
    monkeypatch.setattr("ufuzz.corpus.failures.FailureStore.__init__", _full_disk)
    out = tmp_path / "a" / "b" / "camp"
    with pytest.raises(OSError, match="No space left"):
        Campaign(_cfg(out)).run()
    assert list(tmp_path.iterdir()) == []


def test_a_failed_start_in_an_existing_directory_keeps_what_was_there(tmp_path, monkeypatch):
    out = tmp_path / "camp"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    monkeypatch.setattr("ufuzz.corpus.failures.FailureStore.__init__", _full_disk)
    with pytest.raises(OSError):
        Campaign(_cfg(out)).run()
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_a_failed_start_on_a_shared_database_is_recorded_as_error_there(tmp_path, monkeypatch):
    db = f"sqlite:///{tmp_path / 'team.sqlite'}"
    monkeypatch.setattr("ufuzz.corpus.failures.FailureStore.__init__", _full_disk)
    with pytest.raises(OSError):
        Campaign(_cfg(tmp_path / "camp", db=db)).run()
    assert not (tmp_path / "camp").exists()
    with CorpusStore(db, readonly=True) as s:
        assert [c.status for c in s.campaigns()] == ["error"]


def test_check_start_names_the_option_and_creates_nothing(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(StartError) as e:
        check_start(tmp_path / "file" / "camp", None)
    assert e.value.option == "--out"
    with pytest.raises(StartError) as e:
        check_start(tmp_path / "camp", "sqlite:///" + str(tmp_path / "file" / "x.sqlite"))
    assert e.value.option == "--db"
    check_start(tmp_path / "new" / "camp", f"sqlite:///{tmp_path / 'new.sqlite'}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    assert directory_problem(tmp_path / "new" / "camp") is None


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_read_commands_leave_a_finished_campaign_byte_identical(tmp_path):
    out = tmp_path / "camp"
    r = CliRunner().invoke(main, ["run", "--budget", "10", "--seed", "2", "--out", str(out), "--quiet",
                                  "--opt", "retrieval=bm25"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    before = _tree(out)
    for argv in (["status", str(out)], ["status", str(out), "--json"], ["replay", str(out)],
                 ["corpus", "export", str(out), "-o", str(tmp_path / "c.jsonl")]):
        res = CliRunner().invoke(main, argv, catch_exceptions=False)
        assert res.exit_code in (0, 1, 2), res.output  # export of a campaign without failures is refused (2)
        assert _tree(out) == before, f"{argv[0]} wrote into the campaign directory"


def test_status_reads_a_campaign_that_is_still_being_written(tmp_path):
    """A writer holds the database open (WAL mode): status reads it read-only and the writer carries on."""
    out = tmp_path / "camp"
    CliRunner().invoke(main, ["run", "--budget", "6", "--out", str(out), "--quiet", "--opt", "retrieval=bm25"],
                       catch_exceptions=False)
    cid = json.loads((out / "campaign.json").read_text())["campaign"]
    writer = CorpusStore(f"sqlite:///{out / 'corpus.sqlite'}")
    try:
        writer.resume_campaign(cid)
        assert (out / "corpus.sqlite-wal").exists()
        st = CliRunner().invoke(main, ["status", str(out), "--json"], catch_exceptions=False)
        assert st.exit_code == 0, st.output
        assert json.loads(st.output)["status"] == "running"
        writer.finish_campaign(cid, "finished")  # the reader did not get in the writer's way
    finally:
        writer.close()


def test_large_checkpoints_are_announced_and_oversized_ones_refused():
    from types import SimpleNamespace

    from ufuzz.engine.startup import LARGE_CHECKPOINT, MAX_CHECKPOINT, StartError, size_notes

    def cps(*sizes):
        return {f"c{i}": SimpleNamespace(memories=[None] * n) for i, n in enumerate(sizes)}

    assert size_notes(cps(10, LARGE_CHECKPOINT - 1)) == []
    (note,) = size_notes(cps(10, LARGE_CHECKPOINT))
    assert f"the largest 'c1' {LARGE_CHECKPOINT:,}" in note and "may take minutes" in note
    with pytest.raises(StartError, match=f"at most {MAX_CHECKPOINT:,}") as ei:
        size_notes(cps(MAX_CHECKPOINT + 1))
    assert ei.value.option == "--seeds"


def test_a_large_suite_prints_its_set_up_phases(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from ufuzz.cli import main
    from ufuzz.engine import startup

    monkeypatch.setattr(startup, "LARGE_CHECKPOINT", 5)  # the shipped suite's checkpoints count as large
    r = CliRunner().invoke(main, ["run", "--budget", "3", "--out", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    assert "note: large checkpoints" in r.output
    phases = [line for line in r.output.splitlines() if line.startswith("[ufuzz] set-up")]
    assert [p.split("s  ", 1)[1].split(" ")[0] for p in phases] == ["starting", "preflight", "recording", "first"]
    quiet = CliRunner().invoke(main, ["run", "--budget", "3", "--out", str(tmp_path / "q"), "--quiet"])
    assert quiet.exit_code == 0 and "set-up" not in quiet.output
