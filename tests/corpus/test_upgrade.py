"""A run database written by an earlier ufuzz (schema 3: the built-in signals' values in columns of their own) is
refused for reading with the way to upgrade it, upgraded in place by ``ufuzz corpus upgrade`` or by any write
(a new campaign on a shared database), every feedback record kept — all in one transaction."""

from __future__ import annotations

import sqlite3

from click.testing import CliRunner

from ufuzz.cli import main
from ufuzz.corpus.store import SCHEMA_VERSION, CorpusStore


def _schema_3(tmp_path):
    """A campaign directory whose corpus.sqlite has two feedback records, turned back into schema 3."""
    path = tmp_path / "run" / "corpus.sqlite"
    url = f"sqlite:///{path}"
    store = CorpusStore(url)
    cid = store.start_campaign("c1", config={"budget": 10}, backend={"name": "embedded"}, seed=1, budget=10)
    store.record_feedback(cid, "x1", {"coverage": 2, "novelty": True, "divergence": 0.25}, True, seq=3)
    store.record_feedback(cid, "x2", {"coverage": 0, "novelty": False, "divergence": None}, False, seq=4)
    store.close()
    con = sqlite3.connect(path)
    con.executescript("""
        ALTER TABLE feedback ADD COLUMN coverage_gain INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE feedback ADD COLUMN new_signature BOOLEAN NOT NULL DEFAULT 0;
        ALTER TABLE feedback ADD COLUMN new_response BOOLEAN NOT NULL DEFAULT 0;
        ALTER TABLE feedback ADD COLUMN divergence FLOAT;
        UPDATE feedback SET coverage_gain = 2, new_signature = 1, divergence = 0.25 WHERE case_id = 'x1';
        UPDATE feedback SET new_response = 1 WHERE case_id = 'x2';
        ALTER TABLE feedback DROP COLUMN signals;
        UPDATE ufuzz_meta SET value = '3' WHERE key = 'schema_version';
    """)
    con.commit()
    con.close()
    return path, url, cid


def test_an_earlier_run_database_is_refused_for_reading_and_upgraded_in_place(tmp_path):
    path, url, cid = _schema_3(tmp_path)
    got = CliRunner().invoke(main, ["status", str(path.parent)])
    assert got.exit_code != 0 and "schema version 3" in got.output and "ufuzz corpus upgrade" in got.output
    assert "Traceback" not in got.output
    up = CliRunner().invoke(main, ["corpus", "upgrade", str(path.parent)])
    assert up.exit_code == 0, up.output
    assert f"upgraded from schema version 3 to {SCHEMA_VERSION}" in up.output
    store = CorpusStore(url, readonly=True)
    rows = store.feedback(cid)
    store.close()
    assert [(r.case_id, r.signals, r.retained, r.seq) for r in rows] == [
        ("x1", {"coverage": 2, "novelty": True, "divergence": 0.25}, True, 3),
        ("x2", {"coverage": 0, "novelty": True, "divergence": None}, False, 4)]  # a new response: novelty
    again = CliRunner().invoke(main, ["corpus", "upgrade", str(path.parent)])
    assert again.exit_code == 0 and "already" in again.output


def test_writing_to_an_earlier_database_upgrades_it(tmp_path):
    _path, url, cid = _schema_3(tmp_path)
    store = CorpusStore(url)  # a new campaign on a shared database
    store.record_feedback(cid, "x3", {"coverage": 1}, True, seq=5)
    assert [r.signals["coverage"] for r in store.feedback(cid)] == [2, 0, 1]
    store.close()


def test_upgrading_nothing_is_refused_and_creates_nothing(tmp_path):
    got = CliRunner().invoke(main, ["corpus", "upgrade", str(tmp_path)])
    assert got.exit_code != 0 and "no corpus.sqlite" in got.output and "Traceback" not in got.output
    assert not (tmp_path / "corpus.sqlite").exists()
