"""The committed regression corpus and `ufuzz corpus export/check` (real embedded campaigns, real backend)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ufuzz.cli import main
from ufuzz.corpus.failures import FailureStore
from ufuzz.oracles.expectations import KINDS
from ufuzz.triage.check import check_corpus
from ufuzz.triage.corpusfile import (
    CorpusFileError,
    export_campaign,
    load_corpus,
    select_records,
    write_corpus,
)
from ufuzz.triage.corpusformat import content_hash

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "corpus" / "embedded-dense.jsonl"


# ---------------------------------------------------------------------------------------------------- helpers
def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _rehash(rec: dict) -> dict:
    """``rec`` with its content hash recomputed: an edit made on purpose (what a re-export would write)."""
    rec["sha256"] = content_hash(rec)
    return rec


def _write_lines(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def _failure_lines(recs: list[dict]) -> list[int]:
    return [i for i, r in enumerate(recs) if r["kind"] == "failure"]


def _copy_campaign(src: Path, dest: Path) -> Path:
    """A consistent copy of a campaign's corpus database (SQLite backup API, WAL content included)."""
    dest.mkdir(parents=True)
    shutil.copy(src / "summary.json", dest / "summary.json")
    a, b = sqlite3.connect(src / "corpus.sqlite"), sqlite3.connect(dest / "corpus.sqlite")
    with b:
        a.backup(b)
    a.close()
    b.close()
    return dest


@pytest.fixture(scope="module")
def committed():
    return load_corpus(COMMITTED)


@pytest.fixture(scope="module")
def committed_report(committed):
    return check_corpus(committed)


# ---------------------------------------------------------------------------------------------------- the committed corpus
def test_committed_corpus_is_the_embedded_dense_default(committed):
    h = committed.header
    assert h["backend"] == "embedded" and h["k"] == 5 and h["backend_options"] == {}
    assert h["backend_info"]["retrieval"] == "dense" and h["backend_info"]["update_policy"] == "append"
    assert h["source"]["seeds"] == "default" and h["source"]["budget"] == 2000 and h["source"]["seed"] == 1
    assert len(committed.records) == h["records"] >= 40
    assert len({r.failure_key for r in committed.records}) == len(committed.records)
    # every record is a full, self-contained pair on a checkpoint of the file
    for r in committed.records:
        assert r.checkpoint_id in committed.checkpoints and r.seed_id in committed.descriptors
        assert r.mutant.operator and r.kind in KINDS and r.parent.id != r.mutant.id
        assert r.parent.reference.query_id and r.mutant.reference.query_id
    # discovery order, and one record at least for each of several operators
    seqs = [r.first_seq for r in committed.records]
    assert seqs == sorted(seqs)
    assert len(committed.by_operator()) >= 3
    assert COMMITTED.stat().st_size < 300 * 1024


def test_every_committed_record_still_reproduces_on_embedded_dense(committed, committed_report):
    """The regression test: an engine, backend or oracle change that alters a known failure fails here."""
    rep = committed_report
    assert rep.backend == "embedded"
    assert rep.notes == [], rep.notes  # the fresh backend is configured exactly as the recorded one
    assert len(rep.results) == len(committed.records)
    bad = [r for r in rep.results if r.status != "reproduced"]
    assert not bad, bad[:5]
    assert rep.ok and rep.exit_code == 0
    for res, rec in zip(rep.results, committed.records):
        assert (res.failure_key, res.line) == (rec.failure_key, rec.line)
        assert (res.got_kind, res.got_stage) == (rec.kind, rec.stage)


def test_cli_check_of_the_committed_corpus_exits_0():
    result = CliRunner().invoke(main, ["corpus", "check", str(COMMITTED), "--changed-only"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1].endswith("OK: every record still reproduces")
    n = len(load_corpus(COMMITTED).records)
    assert f"{n} records: {n} known failures reproduce" in result.output.splitlines()[-1]


# ---------------------------------------------------------------------------------------------------- export → check round trip
@pytest.fixture(scope="module")
def exported(small_campaign, tmp_path_factory):
    """Export the shared small real campaign from a copy of its database; the copy is deleted afterwards,
    so the check cannot lean on it."""
    tmp = tmp_path_factory.mktemp("export")
    src = _copy_campaign(Path(small_campaign.config.out), tmp / "camp")
    cid = json.loads((src / "summary.json").read_text())["campaign"]
    with FailureStore(f"sqlite:///{src / 'corpus.sqlite'}", cid) as fs:
        failures = [f for f in fs.failures() if f.origin == "mutant" and f.counts]  # baseline ones: no pair
    out = tmp / "corpus" / "small.jsonl"
    result = CliRunner().invoke(main, ["corpus", "export", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.output
    shutil.rmtree(src)
    return out, failures, result.output


def test_export_holds_every_unique_failure_in_discovery_order(exported):
    out, failures, output = exported
    rc = load_corpus(out)
    assert len(failures) >= 10
    assert [r.failure_key for r in rc.records] == [f.failure_key for f in failures]
    assert [(r.operator, r.kind, r.stage) for r in rc.records] == [(f.operator, f.kind, f.stage) for f in failures]
    assert f"wrote {len(failures)} of {len(failures)} unique failures" in output
    recs = _lines(out)
    assert recs[0]["kind"] == "header" and recs[0]["schema"] == 2 and recs[0]["source_campaign"]
    assert all(r["sha256"] == content_hash(r) for r in recs[1:])
    # checkpoints and seeds once each, before the failures that use them
    cps = [r["id"] for r in recs if r["kind"] == "checkpoint"]
    assert len(cps) == len(set(cps)) == len({r.checkpoint_id for r in rc.records})
    assert max(i for i, r in enumerate(recs) if r["kind"] != "failure") < min(_failure_lines(recs))
    assert not list(out.parent.glob(".*"))  # no temporary file left behind


def test_exported_corpus_checks_clean_without_the_campaign(exported, tmp_path):
    out, failures, _ = exported
    result = CliRunner().invoke(main, ["corpus", "check", str(out), "--json"])
    assert result.exit_code == 0, result.output
    rep = json.loads(result.output)
    assert rep["ok"] and rep["total"] == len(failures)
    assert rep["counts"]["reproduced"] == len(failures)
    assert {r["status"] for r in rep["results"]} == {"reproduced"}


def test_max_keeps_the_first_n_plus_one_per_operator_and_kind(exported, small_campaign, tmp_path):
    _, failures, _ = exported
    src = _copy_campaign(Path(small_campaign.config.out), tmp_path / "camp")
    res = export_campaign(src, tmp_path / "few.jsonl", max_records=3)
    keys = [r.failure_key for r in res.records]
    assert keys[:3] == [f.failure_key for f in failures[:3]]
    groups = {(f.operator, f.kind) for f in failures}
    assert {(r.operator, r.kind) for r in res.records} == groups
    # exactly the groups the prefix missed were added, each with its first failure
    first_of = {}
    for f in failures:
        first_of.setdefault((f.operator, f.kind), f.failure_key)
    missed = groups - {(f.operator, f.kind) for f in failures[:3]}
    assert set(keys[3:]) == {first_of[g] for g in missed}
    assert len(res.records) < len(failures)
    rc = load_corpus(res.path)
    assert rc.header["records"] == len(rc.records) == len(res.records)
    assert check_corpus(rc).ok


@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("xy")), max_size=30),
       st.one_of(st.none(), st.integers(min_value=0, max_value=35)))
def test_select_records_property(items, n):
    chosen = select_records(items, lambda t: t, n)
    idx = [i for i, _ in enumerate(items)]
    kept = select_records(idx, lambda i: items[i], n)
    assert [items[i] for i in kept] == chosen and kept == sorted(kept)  # original order, no duplicates
    assert set(chosen) == set(items)  # every group present
    if n is None or n >= len(items):
        assert chosen == items
    else:
        assert kept[:n] == list(range(n))  # the prefix is kept whole
        assert len(kept) == n + len(set(items) - set(items[:n]))  # one extra per missing group, no more


# ---------------------------------------------------------------------------------------------------- tampering
def _tampered(tmp_path: Path, edit) -> tuple[Path, dict]:
    recs = _lines(COMMITTED)
    victim = recs[_failure_lines(recs)[3]]
    edit(victim, recs)
    _rehash(victim)
    return _write_lines(tmp_path / "tampered.jsonl", recs), victim


def _line_of(path: Path, key: str) -> int:
    for i, raw in enumerate(path.read_text().splitlines(), start=1):
        if key in raw and '"kind": "failure"' in raw:
            return i
    raise AssertionError(key)


def test_a_changed_expected_kind_is_reported_changed_with_exit_1(tmp_path):
    def edit(v, _recs):
        v["expected"]["kind"] = next(k for k in KINDS if k != v["expected"]["kind"])

    path, victim = _tampered(tmp_path, edit)
    key = victim["expected"]["failure_key"]
    result = CliRunner().invoke(main, ["corpus", "check", str(path)])
    assert result.exit_code == 1, result.output
    row = next(x for x in result.output.splitlines() if key[:12] in x)
    assert row.startswith(str(_line_of(path, key))) and "CHANGED" in row and "mutant fails differently" in row
    assert "1 changed" in result.output.splitlines()[-1]
    assert "REGRESSION: 1 of" in result.output.splitlines()[-1]
    rep = json.loads(CliRunner().invoke(main, ["corpus", "check", str(path), "--json"]).output)
    changed = [r for r in rep["results"] if r["status"] != "reproduced"]
    assert [(r["failure_key"], r["status"]) for r in changed] == [(key, "changed")]


def test_a_mutant_that_now_passes_is_fixed_good_news_and_exit_0(tmp_path):
    def edit(v, _recs):  # the "mutant" is now the parent itself: nothing is mutated, so it passes
        v["mutant"].update(query=v["parent"]["query"], ops=v["parent"]["ops"], reference=v["parent"]["reference"])

    path, victim = _tampered(tmp_path, edit)
    rep = check_corpus(path)
    assert rep.exit_code == 0 and not rep.ok  # nothing regressed, but not every record is as recorded
    res = next(r for r in rep.results if r.failure_key == victim["expected"]["failure_key"])
    assert (res.status, res.outcome, res.reason, res.got_kind) == ("fixed", "fixed", "mutant passes", None)
    assert rep.counts()["fixed"] == 1 and rep.counts()["reproduced"] == len(rep.results) - 1
    result = CliRunner().invoke(main, ["corpus", "check", str(path), "--changed-only"])
    assert result.exit_code == 0, result.output
    assert "FIXED" in result.output and "good news" in result.output


def test_a_fixed_guard_that_fails_again_is_a_regression(tmp_path):
    """A record accepted as fixed must keep passing: the same failure coming back exits 1."""
    def edit(v, _recs):
        v["expected"]["status"] = "fixed"

    path, victim = _tampered(tmp_path, edit)
    rep = check_corpus(path)
    res = next(r for r in rep.results if r.failure_key == victim["expected"]["failure_key"])
    assert (res.status, res.outcome) == ("reproduced", "regressed") and res.reason.startswith("fixed before")
    assert rep.exit_code == 1 and [r.failure_key for r in rep.regressions] == [res.failure_key]


def test_a_parent_that_no_longer_passes_is_parent_broken(tmp_path):
    def edit(v, recs):  # the parent's evidence is now the checkpoint memory least like its query
        cp = next(r for r in recs if r["kind"] == "checkpoint" and r["id"] == v["checkpoint_id"])
        words = set(v["parent"]["query"]["text"].lower().split())
        far = min(cp["memories"], key=lambda m: (len(words & set(m["text"].lower().split())), m["id"]))
        v["parent"]["reference"].update(supporting=[far["id"]], invalidated=[])

    path, victim = _tampered(tmp_path, edit)
    rep = check_corpus(path)
    res = next(r for r in rep.results if r.failure_key == victim["expected"]["failure_key"])
    assert res.status == "parent_broken" and res.reason.startswith(f"parent {victim['parent']['id']} no longer")
    assert rep.exit_code == 1


@pytest.mark.parametrize("side, field", [("parent", "supporting"), ("mutant", "invalidated")])
def test_an_unknown_memory_id_is_bad_input_not_a_regression(tmp_path, side, field):
    """A reference naming a memory its checkpoint and ops do not have is a broken record (exit 2, named), not
    a parent that broke or a mutant that changed (exit 1)."""
    def edit(v, _recs):
        v[side]["reference"][field] = ["no-such-memory"]
        v[side]["reference"]["supporting" if field == "invalidated" else "invalidated"] = []

    path, victim = _tampered(tmp_path, edit)
    line = _line_of(path, victim["expected"]["failure_key"])
    result = CliRunner().invoke(main, ["corpus", "check", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}: memory id 'no-such-memory' is neither in checkpoint" in result.output
    assert f"(field '{side}.reference.{field}[0]')" in result.output


def test_an_edited_memory_text_is_detected_by_the_content_hash(tmp_path):
    recs = _lines(COMMITTED)
    i = next(i for i, r in enumerate(recs) if r["kind"] == "checkpoint")
    recs[i]["memories"][0]["text"] += " (edited)"
    path = _write_lines(tmp_path / "edited.jsonl", recs)
    result = CliRunner().invoke(main, ["corpus", "check", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:{i + 1}: the record does not match its content hash" in result.output
    assert "(field 'sha256')" in result.output
    # the same in an op's memory inside a failure record
    recs = _lines(COMMITTED)
    j = next(j for j in _failure_lines(recs) if any(o.get("memory") for o in recs[j]["mutant"]["ops"]))
    op = next(o for o in recs[j]["mutant"]["ops"] if o.get("memory"))
    op["memory"]["text"] = op["memory"]["text"].upper()
    path = _write_lines(tmp_path / "edited-op.jsonl", recs)
    with pytest.raises(CorpusFileError) as info:
        load_corpus(path)
    assert info.value.line == j + 1 and info.value.field == "sha256"


def test_schema_1_files_without_hashes_still_load(tmp_path):
    recs = _lines(COMMITTED)
    recs[0]["schema"] = 1
    for r in recs[1:]:
        del r["sha256"]
    rc = load_corpus(_write_lines(tmp_path / "old.jsonl", recs))
    assert len(rc.records) == recs[0]["records"]
    recs[0]["schema"] = 2  # ... but a schema-2 record without its hash is refused
    with pytest.raises(CorpusFileError, match="missing content hash"):
        load_corpus(_write_lines(tmp_path / "new.jsonl", recs))


def test_same_kind_on_other_memories_is_changed(tmp_path):
    def edit(v, _recs):
        v["expected"]["failure_key"] = "0" * 20

    path, _ = _tampered(tmp_path, edit)
    rep = check_corpus(path)
    res = next(r for r in rep.results if r.failure_key == "0" * 20)
    assert res.status == "changed" and "failure key differs" in res.reason
    assert (res.got_kind, res.got_stage) == (res.kind, res.stage)


# ---------------------------------------------------------------------------------------------------- bad input
def _malformed(recs: list[dict], case: str) -> list[str]:
    """Return raw lines with one defect; the defect is on line 5 (1-based) unless said otherwise."""
    lines = [json.dumps(r) for r in recs]
    fl = _failure_lines(recs)[0]

    def dump(rec: dict) -> str:  # an edited failure record, rehashed: the defect itself is what is reported
        return json.dumps(_rehash(rec))
    if case == "json":
        lines[4] = lines[4][:-7]
    elif case == "kind":
        lines[4] = json.dumps({**recs[4], "kind": "sed"})
    elif case == "no-kind":  # the field renamed (walkthrough: "unknown kind None")
        rec = {("kindx" if k == "kind" else k): v for k, v in recs[4].items()}
        lines[4] = json.dumps(rec)
    elif case == "missing":
        bad = json.loads(lines[fl])
        del bad["mutant"]["ops"]
        lines[fl] = json.dumps(bad)
    elif case == "op":
        bad = json.loads(lines[fl])
        bad["mutant"]["ops"] = [{"op": "rename", "target": "m1"}]
        lines[fl] = json.dumps(bad)
    elif case == "verdict":
        bad = json.loads(lines[fl])
        bad["expected"]["kind"] = "catastrophe"
        lines[fl] = dump(bad)
    elif case == "checkpoint":
        bad = json.loads(lines[fl])
        bad["checkpoint_id"] = "nowhere"
        lines[fl] = dump(bad)
    elif case == "duplicate":
        lines.insert(fl + 1, lines[fl])
        head = json.loads(lines[0])
        head["records"] += 1
        lines[0] = json.dumps(head)
    elif case == "count":
        del lines[-1]
    elif case == "schema":
        lines[0] = json.dumps({**recs[0], "schema": 3})
    return lines


@pytest.mark.parametrize("case, line, needle", [
    ("json", 5, "invalid JSON"),
    ("kind", 5, "unknown kind 'sed'"),
    ("no-kind", 5, "no 'kind' field; every line has one of"),
    ("missing", None, "field 'mutant.ops'"),
    ("op", None, "must be 'add', 'update' or 'delete', got 'rename' (field 'mutant.ops[0].op')"),
    ("verdict", None, "unknown failure kind 'catastrophe'"),
    ("checkpoint", None, "unknown checkpoint 'nowhere'"),
    ("duplicate", None, "duplicate failure key"),
    ("count", 1, "the header declares"),
    ("schema", 1, "unsupported schema version 3"),
])
def test_malformed_file_exits_2_naming_file_and_line(tmp_path, case, line, needle):
    recs = _lines(COMMITTED)
    lines = _malformed(recs, case)
    if line is None:  # the first failure record (or its duplicate)
        line = _failure_lines(recs)[0] + 1 + (1 if case == "duplicate" else 0)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["corpus", "check", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}:" in result.output and needle in result.output
    with pytest.raises(CorpusFileError) as info:
        load_corpus(path)
    assert info.value.line == line


def test_other_bad_input_exits_2(tmp_path):
    runner = CliRunner()
    seeds = runner.invoke(main, ["corpus", "check", str(ROOT / "seeds" / "default.jsonl")])
    assert seeds.exit_code == 2 and "default.jsonl:1: missing required field (field 'backend')" in seeds.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    r = runner.invoke(main, ["corpus", "check", str(empty)])
    assert r.exit_code == 2 and "no header" in r.output
    r = runner.invoke(main, ["corpus", "check", str(tmp_path / "nope.jsonl")])
    assert r.exit_code == 2 and "no such regression corpus file" in r.output
    r = runner.invoke(main, ["corpus", "check", str(COMMITTED), "--backend", "no-such-backend"])
    assert r.exit_code == 2 and "unknown backend 'no-such-backend'" in r.output
    r = runner.invoke(main, ["corpus", "check", str(COMMITTED), "--opt", "retrieval=sideways"])
    assert r.exit_code == 2 and "option 'retrieval': must be one of dense, bm25, hybrid (got 'sideways')" in r.output
    r = runner.invoke(main, ["corpus", "check", str(COMMITTED), "--opt", "novalue"])
    assert r.exit_code == 2 and "--opt" in r.output


def test_another_retrieval_mode_changes_records_and_says_so():
    rep = check_corpus(COMMITTED, options={"retrieval": "bm25"})
    assert rep.backend_options == {"retrieval": "bm25"}
    assert any('retrieval: recorded "dense", now "bm25"' in n for n in rep.notes)
    assert rep.exit_code == 1 and rep.counts()["reproduced"] < len(rep.results)


def test_export_bad_input_and_atomic_write(tmp_path):
    runner = CliRunner()
    r = runner.invoke(main, ["corpus", "export", str(tmp_path / "nope"), "-o", str(tmp_path / "x.jsonl")])
    assert r.exit_code == 2 and "no such campaign directory" in r.output
    (tmp_path / "empty").mkdir()
    r = runner.invoke(main, ["corpus", "export", str(tmp_path / "empty"), "-o", str(tmp_path / "x.jsonl")])
    assert r.exit_code == 2 and "no corpus.sqlite" in r.output
    assert not (tmp_path / "x.jsonl").exists()

    # a write that dies half-way leaves the previous file as it was and no temporary file
    rc = load_corpus(COMMITTED)
    target = tmp_path / "out" / "c.jsonl"
    target.parent.mkdir()
    target.write_text("previous\n")

    def records():
        yield rc.records[0]
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        write_corpus(target, rc.header, rc.checkpoints.values(), [], records())
    assert target.read_text() == "previous\n"
    assert [p.name for p in target.parent.iterdir()] == ["c.jsonl"]


def test_export_of_a_campaign_without_failures_is_refused(tmp_path):
    from ufuzz.engine.campaign import Campaign, CampaignConfig

    out = tmp_path / "tiny"
    Campaign(CampaignConfig(backend="embedded", budget=1, seed=0, out=str(out))).run()
    r = CliRunner().invoke(main, ["corpus", "export", str(out), "-o", str(tmp_path / "t.jsonl")])
    assert r.exit_code == 2 and "has no failure to export" in r.output
    assert not (tmp_path / "t.jsonl").exists()


# ---------------------------------------------------------------------------------------------------- accept
def test_accept_records_what_changed_records_do_now_and_drops_broken_parents(tmp_path):
    def edit(v, recs):
        v["expected"]["kind"] = next(k for k in KINDS if k != v["expected"]["kind"])  # "changed" on check
        other = recs[_failure_lines(recs)[5]]  # "parent_broken" on check: its evidence is far from its query
        cp = next(r for r in recs if r["kind"] == "checkpoint" and r["id"] == other["checkpoint_id"])
        words = set(other["parent"]["query"]["text"].lower().split())
        far = min(cp["memories"], key=lambda m: (len(words & set(m["text"].lower().split())), m["id"]))
        other["parent"]["reference"].update(supporting=[far["id"]], invalidated=[])
        _rehash(other)

    path, victim = _tampered(tmp_path, edit)
    before = load_corpus(path)
    report_json = tmp_path / "check.json"
    r = CliRunner().invoke(main, ["corpus", "check", str(path), "--json", str(report_json), "--changed-only"])
    assert r.exit_code == 1 and report_json.is_file() and "REGRESSION" in r.output  # text still printed
    r = CliRunner().invoke(main, ["corpus", "accept", str(path)])  # runs the check itself
    assert r.exit_code == 0, r.output
    assert "1 updated to what they do now" in r.output and "1 dropped (parent broken)" in r.output
    after = load_corpus(path)
    assert len(after.records) == len(before.records) - 1 and after.header["records"] == len(after.records)
    upd = next(x for x in after.records if x.line and x.parent.id == victim["parent"]["id"]
               and x.mutant.id == victim["mutant"]["id"])
    original = next(x for x in load_corpus(COMMITTED).records if x.mutant.id == victim["mutant"]["id"])
    assert (upd.kind, upd.failure_key) == (original.kind, original.failure_key)  # back to what it really does
    rep = check_corpus(after)
    assert rep.ok and rep.exit_code == 0


def test_accept_refuses_results_of_another_corpus(tmp_path):
    fake = tmp_path / "check.json"
    fake.write_text(json.dumps({"results": [{"failure_key": "f" * 20, "outcome": "fixed"}]}))
    r = CliRunner().invoke(main, ["corpus", "accept", str(COMMITTED), "--from", str(fake), "-o",
                                  str(tmp_path / "o.jsonl")])
    assert r.exit_code == 2 and "another corpus file" in r.output and not (tmp_path / "o.jsonl").exists()


def test_every_file_option_of_the_backend_is_written_relative_to_the_corpus_and_read_back(tmp_path):
    """The options that name files are the backend's own (``Option(path=True)``), not a hand-kept list: an
    embedding cache recorded whole is exported relative to the corpus file, and resolved against it again."""
    from ufuzz.triage.corpusfile import path_options, portable_options, resolve_options

    assert {"embedding_cache"} <= set(path_options("embedded")) and "config" in path_options("http")
    assert path_options("no-such-backend") == ()
    cache = tmp_path / "ci" / "cache.sqlite"
    corpus = tmp_path / "ci" / "corpus.jsonl"
    out = portable_options({"embedding_cache": str(cache), "retrieval": "dense"}, corpus, "embedded")
    assert out == {"embedding_cache": "cache.sqlite", "retrieval": "dense"}
    moved = tmp_path / "elsewhere" / "ci"
    moved.mkdir(parents=True)
    (moved / "cache.sqlite").write_text("")
    back = resolve_options(out, moved / "corpus.jsonl", "embedded")
    assert back["embedding_cache"] == str((moved / "cache.sqlite").resolve())
