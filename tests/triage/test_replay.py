"""Failure replay (`ufuzz replay`) on a real embedded campaign, including tampered corpora."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufuzz.cli import main
from ufuzz.corpus.failures import FailureStore
from ufuzz.corpus.store import CorpusStore
from ufuzz.reports.replay import render_replay
from ufuzz.triage.replay import replay_campaign

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def campaign_dir(tmp_path_factory):
    """A real 300-execution campaign on six seeds of the shipped suite, so that retained mutants become
    parents (phase 2) within the budget; the embedded backend's own directory is removed afterwards."""
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.model import SeedSuite
    from ufuzz.seeds.io import load_suite

    full = load_suite(ROOT / "seeds" / "default.jsonl")
    seeds = sorted(full.seeds, key=lambda s: s.id)[:6]
    suite = SeedSuite(name="six", checkpoints={s.checkpoint_id: full.checkpoints[s.checkpoint_id] for s in seeds},
                      seeds=seeds, references={s.query.id: full.references[s.query.id] for s in seeds})
    out = tmp_path_factory.mktemp("replay") / "camp"
    summary = Campaign(CampaignConfig(backend="embedded", budget=300, seed=1, out=str(out)), suite=suite).run()
    assert summary["status"] == "budget_spent" and summary["executions"] == 300
    # phase 2 covers moves of its own; the summary counts only the seeds' obligations
    assert 0 < summary["obligations_covered"] <= summary["obligations"]
    shutil.rmtree(out / "backend")  # the replay must not need the campaign's backend state
    return out


def _copy(campaign_dir: Path, dest: Path) -> Path:
    """A consistent copy of a campaign directory (SQLite backup API, so the WAL content comes along)."""
    dest.mkdir(parents=True)
    shutil.copy(campaign_dir / "summary.json", dest / "summary.json")
    src = sqlite3.connect(campaign_dir / "corpus.sqlite")
    dst = sqlite3.connect(dest / "corpus.sqlite")
    with dst:
        src.backup(dst)
    src.close()
    dst.close()
    return dest


def _ids(campaign_dir: Path) -> tuple[str, str]:
    cid = json.loads((campaign_dir / "summary.json").read_text())["campaign"]
    return cid, f"sqlite:///{campaign_dir / 'corpus.sqlite'}"


def test_every_failure_reproduces_on_a_fresh_backend(campaign_dir):
    cid, url = _ids(campaign_dir)
    with FailureStore(url, cid) as fs:
        recorded = fs.failures()
    summary = json.loads((campaign_dir / "summary.json").read_text())
    report = replay_campaign(campaign_dir)
    assert report.campaign_id == cid and report.backend == "embedded"
    assert report.total == len(recorded)
    assert summary["unique_failures"] == sum(1 for f in recorded if f.origin == "mutant" and f.counts)
    assert report.total >= 10
    # deterministic backend: every failure comes back, with the very same key (offending ids included)
    assert report.reproduced == report.total, [r for r in report.results if not r.reproduced]
    assert all(r.same_key for r in report.results)
    assert {r.failure_key for r in report.results} == {f.failure_key for f in recorded}
    for r in report.results:
        assert (r.got_kind, r.got_stage) == (r.kind, r.stage)
    text = render_replay(report)
    assert text.splitlines()[-1] == f"{report.total}/{report.total} reproduced"


def test_mutants_of_mutants_are_rebuilt_from_their_full_recipe(campaign_dir):
    cid, url = _ids(campaign_dir)
    store = CorpusStore(url)
    mutants = {m.case_id: m for m in store.mutants(cid)}
    store.close()
    report = replay_campaign(campaign_dir)
    deep = [r for r in report.results if r.parent_id in mutants]
    assert deep, "the fixture campaign should have failures whose parent is a retained mutant"
    assert all(r.reproduced for r in deep)
    # some of them carry state operations inherited from the parent's recipe
    assert any(mutants[r.parent_id].ops for r in deep) or any(mutants[r.case_id].ops for r in deep)


def test_a_tampered_mutant_reference_no_longer_reproduces(campaign_dir, tmp_path):
    copy = _copy(campaign_dir, tmp_path / "tampered")
    cid, url = _ids(copy)
    base = replay_campaign(copy)
    victim = next(r for r in base.results  # a mutant failure (baseline failures have no parent)
                  if r.parent_id is not None and r.kind not in ("missing_evidence", "deleted_evidence_retrieved"))
    with FailureStore(url, cid) as fs:
        ref = fs.reference(victim.case_id)
        # now the mutant is expected to find a memory that does not exist: it fails, but differently
        fs.record_reference(victim.case_id, ref.with_(abstain=False, answer=ref.answer or "x",
                                                      supporting=("no-such-memory",), invalidated=()))
    report = replay_campaign(copy)
    by_key = {r.failure_key: r for r in report.results}
    bad = by_key[victim.failure_key]
    assert not bad.reproduced
    assert bad.reason == "mutant fails differently (selection:missing_evidence)"
    assert report.reproduced == report.total - 1
    assert f"{report.total - 1}/{report.total} reproduced" in render_replay(report)


def test_a_tampered_parent_reference_no_longer_reproduces(campaign_dir, tmp_path):
    copy = _copy(campaign_dir, tmp_path / "tampered-parent")
    cid, url = _ids(copy)
    base = replay_campaign(copy)
    victim = next(r for r in base.results if r.parent_id is not None)  # a mutant failure
    with FailureStore(url, cid) as fs:
        ref = fs.reference(victim.parent_id)
        fs.record_reference(victim.parent_id, ref.with_(abstain=False, answer=ref.answer or "x",
                                                        supporting=("no-such-memory",), invalidated=()))
    report = replay_campaign(copy)
    hit = [r for r in report.results if r.parent_id == victim.parent_id]
    assert hit and all(not r.reproduced and r.reason.startswith(f"parent {victim.parent_id} no longer passes")
                       for r in hit)
    assert report.reproduced == report.total - len(hit)


def test_a_missing_reference_is_reported(campaign_dir, tmp_path):
    copy = _copy(campaign_dir, tmp_path / "noref")
    cid, _ = _ids(copy)
    victim = replay_campaign(copy).results[-1]
    con = sqlite3.connect(copy / "corpus.sqlite")
    with con:
        con.execute('DELETE FROM "references" WHERE campaign_id = ? AND case_id = ?', (cid, victim.case_id))
    con.close()
    bad = {r.failure_key: r for r in replay_campaign(copy).results}[victim.failure_key]
    assert not bad.reproduced and bad.reason == f"no stored reference for case {victim.case_id}"


def test_cli_replay_prints_a_table_and_the_count(campaign_dir):
    res = CliRunner().invoke(main, ["replay", str(campaign_dir)])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    n = len(replay_campaign(campaign_dir).results)
    assert lines[-1] == f"{n}/{n} reproduced"
    assert lines[1].split()[:3] == ["failure", "case", "parent"]
    assert len(lines) == n + 4


def test_cli_replay_json_and_db_option(campaign_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _, url = _ids(campaign_dir)
    res = CliRunner().invoke(main, ["replay", str(elsewhere), "--db", url, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["reproduced"] == data["total"] == len(data["results"]) > 0


def test_cli_replay_bad_input(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["replay", str(tmp_path / "nope")])
    assert res.exit_code != 0 and "no such campaign directory" in res.output
    empty = tmp_path / "empty"
    empty.mkdir()
    res = runner.invoke(main, ["replay", str(empty)])
    assert res.exit_code != 0 and "no corpus.sqlite" in res.output and "--db" in res.output
    res = runner.invoke(main, ["replay", str(empty), "--db", f"sqlite:///{tmp_path / 'missing.sqlite'}"])
    assert res.exit_code != 0 and "missing.sqlite does not exist" in res.output
    assert not (tmp_path / "missing.sqlite").exists()
    res = runner.invoke(main, ["replay", str(empty), "--db", "nosuchdb://x"])
    assert res.exit_code != 0 and "nosuchdb" in res.output


def test_summary_counts_only_seed_obligations_as_covered(tmp_path):
    """Phase 2 runs moves that are no seed's obligation (targets of mutated states); the summary's covered count
    stays within the seeds' obligations however long phase 2 runs."""
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.model import SeedSuite
    from ufuzz.seeds.io import load_suite

    full = load_suite(ROOT / "seeds" / "default.jsonl")
    # a seed that passes its own reference (a failing one is retired after its first execution: no phase 2)
    seeds = [s for s in full.seeds if s.id == "p1-s1"]
    suite = SeedSuite(name="one", checkpoints={s.checkpoint_id: full.checkpoints[s.checkpoint_id] for s in seeds},
                      seeds=seeds, references={s.query.id: full.references[s.query.id] for s in seeds})
    c = Campaign(CampaignConfig(backend="embedded", backend_options={"retrieval": "bm25"}, budget=150, seed=2,
                                out=str(tmp_path / "c")), suite=suite)
    summary = c.run()
    assert c.scheduler.covered - c.scheduler.obligations  # the situation this is about: moves beyond them ran
    # the summary counts the seed obligations covered, not the phase-2 moves beyond them
    covered = len(c.scheduler.covered & c.scheduler.obligations)
    assert summary["obligations_covered"] == covered <= summary["obligations"]
    assert covered < len(c.scheduler.covered)
