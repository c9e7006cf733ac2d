"""Corpus store on real SQLite files: round trips, commit-per-record, upserts, summary, separation."""

from __future__ import annotations

import ast
import inspect
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.schema import CreateTable

from ufuzz.corpus import store as store_mod
from ufuzz.corpus.failures import FAILURE_TABLES, FailureStore
from ufuzz.corpus.store import CORPUS_TABLES, CorpusStore, ExecutionRow, default_url
from ufuzz.model import (
    CONTROL_SUFFIX,
    Checkpoint,
    Execution,
    Fact,
    FuzzCase,
    Memory,
    MutationDescriptor,
    Obligation,
    Provenance,
    Query,
    QueryFields,
    Reference,
    Seed,
    StateOp,
)

# ---------------------------------------------------------------- fixtures


def make_checkpoint(cid: str = "cp1", n: int = 4) -> Checkpoint:
    mems = tuple(Memory(f"{cid}-m{i}", f"memory {i} of {cid}", f"2024-02-{i + 1:02d}T10:00:00") for i in range(n))
    facts = (Fact("Ana", "city", "Lisbon", (mems[0].id,), value_type="city"),)
    return Checkpoint(id=cid, memories=mems, facts=facts)


def make_seed(sid: str = "s1", cid: str = "cp1") -> Seed:
    q = Query(id=f"q-{sid}", text="Where does Ana live?", fields=QueryFields("Ana", "city"))
    return Seed(id=sid, checkpoint_id=cid, query=q,
                descriptor=MutationDescriptor(replacement_targets={"entity": ("Bo",)}, value_pool=("Porto",)))


def make_mutant(mid: str, seed: Seed, cp: Checkpoint, *, op: str = "paraphrase", depth: int = 1) -> FuzzCase:
    q = Query(id=f"q-{mid}", text="In which city is Ana living?", fields=seed.query.fields, form="question")
    ops = (StateOp("update", cp.memories[0].id, Memory("new-1", "Ana moved to Porto", "2024-03-01T00:00:00")),)
    return FuzzCase(id=mid, seed_id=seed.id, checkpoint_id=cp.id, query=q, descriptor=seed.descriptor,
                    provenance=Provenance.of(cp), ops=ops, parent_id=seed.id, operator=op,
                    obligation=Obligation(seed.id, op, "entity"), depth=depth, detail="swap wording")


def make_exec(case_id: str, top: list[str], *, error: str | None = None, response: str | None = "Lisbon") -> Execution:
    return Execution(case_id=case_id, state_key="abc123", query="Where does Ana live?", top_ids=top,
                     top_scores=[0.9 - 0.1 * i for i in range(len(top))], top_texts=[f"t{i}" for i in top],
                     response=response, abstained=False, error=error, seconds=0.25)


@pytest.fixture()
def url(tmp_path: Path) -> str:
    return default_url(tmp_path / "campaign")


@pytest.fixture()
def store(url: str):
    s = CorpusStore(url)
    yield s
    s.close()


def new_campaign(store: CorpusStore, cid: str | None = "c1") -> str:
    return store.start_campaign(cid, config={"budget": 10, "k": 5}, backend={"name": "embedded", "k": 5},
                                seed=7, budget=10)


# ---------------------------------------------------------------- URLs and opening


def test_default_url_is_a_sqlite_file_in_the_campaign_dir(tmp_path: Path) -> None:
    url = default_url(tmp_path / "camp")
    assert url == f"sqlite:///{tmp_path / 'camp' / 'corpus.sqlite'}"
    with CorpusStore(url) as s:
        new_campaign(s)
    assert (tmp_path / "camp" / "corpus.sqlite").is_file()
    # A real SQLite file: readable with the stdlib driver, WAL mode so status readers never block the writer.
    con = sqlite3.connect(tmp_path / "camp" / "corpus.sqlite")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT id, seed, budget, status FROM campaigns").fetchall() == [("c1", 7, 10, "running")]
    con.close()


def test_for_campaign_dir(tmp_path: Path) -> None:
    with CorpusStore.for_campaign_dir(tmp_path / "d") as s:
        new_campaign(s)
    assert (tmp_path / "d" / "corpus.sqlite").exists()


@pytest.mark.parametrize("bad, scheme", [
    ("nosuchdb://user:hunter2@db.example/x", "nosuchdb"),
    ("not a url at all", "(none)"),
    ("mssql+nosuchdriver://sa:hunter2@localhost/db", "mssql+nosuchdriver"),
])
def test_bad_url_names_scheme_and_hides_password(bad: str, scheme: str) -> None:
    with pytest.raises(ValueError) as e:
        CorpusStore(bad)
    msg = str(e.value)
    assert repr(scheme) in msg
    assert "hunter2" not in msg
    assert e.value.__cause__ is None and e.value.__suppress_context__


def test_unreachable_server_hides_password() -> None:
    # Port 1 on loopback refuses at once; whether the driver is installed or not, the password stays hidden.
    with pytest.raises(ValueError) as e:
        CorpusStore("postgresql://fuzzer:hunter2@127.0.0.1:1/corpus")
    assert "'postgresql" in str(e.value) and "hunter2" not in str(e.value)


def test_unopenable_sqlite_file_is_a_value_error(tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    with pytest.raises(ValueError, match=r"cannot open corpus database sqlite:///.*\(scheme 'sqlite'\)"):
        CorpusStore(f"sqlite:///{tmp_path / 'adir'}")  # a directory is no database file
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValueError, match="cannot create the folder"):
        CorpusStore(f"sqlite:///{tmp_path / 'afile' / 'sub' / 'corpus.sqlite'}")


def test_empty_url_is_rejected() -> None:
    with pytest.raises(ValueError, match="empty"):
        CorpusStore("  ")


def test_reopening_resumes_cleanly(url: str) -> None:
    s1 = CorpusStore(url)
    cid = new_campaign(s1)
    cp, seed = make_checkpoint(), make_seed()
    s1.record_checkpoint(cid, cp)
    s1.record_seed(cid, seed)
    assert s1.record_execution(cid, make_exec("s1", ["cp1-m0"]), is_parent=True) == 1
    assert s1.record_execution(cid, make_exec("s1", ["cp1-m1"]), is_parent=True) == 2
    s1.close()  # the campaign process dies here

    s2 = CorpusStore(url)  # create_all on an existing file is a no-op
    with pytest.raises(ValueError, match="already exists"):
        new_campaign(s2)
    rec = s2.resume_campaign(cid)
    assert rec.status == "running" and rec.config == {"budget": 10, "k": 5} and rec.seed == 7
    assert s2.next_seq(cid) == 3  # sequence numbers continue after the last one recorded
    assert s2.seeds(cid) == [seed]
    assert s2.checkpoints(cid) == {"cp1": cp}
    assert [r.seq for r in s2.executions(cid)] == [1, 2]
    s2.close()


def test_schema_version_mismatch_is_a_clear_error(url: str) -> None:
    CorpusStore(url).close()
    path = url.removeprefix("sqlite:///")
    con = sqlite3.connect(path)
    con.execute("UPDATE ufuzz_meta SET value = '999' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with pytest.raises(ValueError, match="schema version 999"):
        CorpusStore(url)


def test_generated_campaign_ids_are_unique(store: CorpusStore) -> None:
    a, b = new_campaign(store, None), new_campaign(store, None)
    assert a != b and {c.id for c in store.campaigns()} == {a, b}


# ---------------------------------------------------------------- round trips


def test_campaign_round_trip_and_finish(store: CorpusStore) -> None:
    cid = new_campaign(store)
    rec = store.campaign(cid)
    assert rec is not None and rec.backend == {"name": "embedded", "k": 5} and rec.budget == 10
    assert rec.started_at.tzinfo is not None and rec.finished_at is None
    done = store.finish_campaign(cid, status="interrupted")
    assert done.status == "interrupted" and done.finished_at is not None
    assert done.finished_at >= rec.started_at
    assert store.campaign("nope") is None


def test_unknown_campaign_is_refused(store: CorpusStore) -> None:
    with pytest.raises(KeyError, match="unknown campaign 'ghost'"):
        store.record_execution("ghost", make_exec("s1", []))
    with pytest.raises(KeyError):
        store.summary("ghost")


def test_seed_checkpoint_mutant_round_trip(store: CorpusStore) -> None:
    cid = new_campaign(store)
    cp, seed = make_checkpoint(), make_seed()
    store.record_checkpoint(cid, cp)
    store.record_seed(cid, seed)
    store.record_seed(cid, seed)  # idempotent on resume
    assert store.seeds(cid) == [seed]
    assert store.checkpoint(cid, "cp1") == cp and store.checkpoint(cid, "zz") is None

    m = make_mutant("x000001", seed, cp)
    store.record_execution(cid, make_exec("s1", ["cp1-m0"]), is_parent=True)
    store.record_mutant(cid, m, valid=True, reason="")
    store.record_mutant(cid, None, case_id="x000002", parent_id="s1", seed_id="s1", operator="unsupported",
                        target="attribute", obligation="s1|unsupported|attribute", valid=False,
                        reason="no absent target")
    [good] = store.mutants(cid, valid=True)
    assert (good.case_id, good.parent_id, good.seed_id, good.checkpoint_id) == ("x000001", "s1", "s1", "cp1")
    assert good.operator == "paraphrase" and good.obligation_key == "s1|paraphrase|entity"
    assert good.target == "entity" and good.depth == 1 and good.valid and good.rejection_reason is None
    assert good.query == m.query and good.ops == m.ops and good.detail == "swap wording"
    assert good.created_seq == 1
    [bad] = store.mutants(cid, valid=False)
    assert bad.query is None and bad.ops == () and bad.rejection_reason == "no absent target"
    assert bad.checkpoint_id == "cp1"  # resolved from the seed
    assert len(store.mutants(cid)) == 2


def test_execution_round_trip_attributes_checkpoint(store: CorpusStore) -> None:
    cid = new_campaign(store)
    cp, seed = make_checkpoint(), make_seed()
    store.record_checkpoint(cid, cp)
    store.record_seed(cid, seed)
    parent = make_exec("s1", ["cp1-m0", "cp1-m1"])
    store.record_execution(cid, parent, is_parent=True)
    store.record_mutant(cid, make_mutant("x1", seed, cp), valid=True)
    child = make_exec("x1", ["new-1", "cp1-m1"], response=None)
    seq = store.record_execution(cid, child)
    failed = make_exec("x1", [], error="BackendError: timeout")
    store.record_execution(cid, failed, seq=10)
    assert store.next_seq(cid) == 11  # explicit seqs move the high-water mark
    recs = store.executions(cid)
    assert [(r.seq, r.is_parent, r.checkpoint_id) for r in recs] == [(1, True, "cp1"), (seq, False, "cp1"),
                                                                      (10, False, "cp1")]
    assert recs[0].execution == parent and recs[1].execution == child and recs[2].execution == failed
    assert [r.seq for r in store.executions(cid, case_id="x1", is_parent=False)] == [2, 10]
    with pytest.raises(Exception, match="UNIQUE|unique"):
        store.record_execution(cid, parent, seq=1)


def test_feedback_and_errors_round_trip(store: CorpusStore) -> None:
    cid = new_campaign(store)
    store.record_feedback(cid, "x1", {"coverage": 2, "novelty": True, "divergence": 0.25}, True, seq=3)
    store.record_feedback(cid, "x2", {"coverage": 0, "novelty": False, "divergence": None}, False)
    store.record_feedback(cid, "x1", {"coverage": 0, "novelty": True, "divergence": 0.5}, True)
    fbs = store.feedback(cid)
    assert [(f.case_id, f.signals["coverage"], f.signals["divergence"], f.retained, f.seq) for f in fbs] == [
        ("x1", 2, 0.25, True, 3), ("x2", 0, None, False, None), ("x1", 0, 0.5, True, None)]
    assert store.retained_case_ids(cid) == ["x1"]
    store.record_error(cid, operation="execute", message="BackendError: boom", case_id="x3", seq=4)
    store.record_error(cid, operation="fork", message="BackendError: disk")
    assert [(e.operation, e.case_id, e.seq) for e in store.errors(cid)] == [("execute", "x3", 4), ("fork", None, None)]


def test_campaigns_are_kept_apart(store: CorpusStore) -> None:
    a, b = new_campaign(store, "a"), new_campaign(store, "b")
    store.record_checkpoint(a, make_checkpoint())
    store.record_execution(a, make_exec("s1", ["cp1-m0"]), checkpoint_id="cp1")
    store.record_execution(b, make_exec("s1", ["cp1-m0"]))
    assert store.record_execution(b, make_exec("s1", [])) == 2  # seqs are per campaign
    assert store.summary(a)["executions"] == 1 and store.summary(b)["executions"] == 2
    assert store.checkpoints(b) == {}


# ---------------------------------------------------------------- commit per record


def test_each_record_is_visible_to_a_second_connection_mid_campaign(url: str) -> None:
    writer = CorpusStore(url)
    cid = new_campaign(writer)
    writer.record_checkpoint(cid, make_checkpoint())
    writer.record_seed(cid, make_seed())
    reader = create_engine(url)  # another engine, as `ufuzz status` in another process would have

    def count(table: str) -> int:
        with reader.connect() as c:
            return c.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one()

    for i in range(1, 4):
        writer.record_execution(cid, make_exec("s1", [f"cp1-m{i}"]), is_parent=True)
        assert count("executions") == i
    writer.record_mutant(cid, make_mutant("x1", make_seed(), make_checkpoint()), valid=True)
    assert count("mutants") == 1
    writer.record_feedback(cid, "x1", {"coverage": 1, "novelty": True, "divergence": None}, True)
    assert count("feedback") == 1
    writer.record_error(cid, operation="execute", message="m")
    assert count("errors") == 1
    with reader.connect() as c:
        top = c.execute(select(ExecutionRow.top_ids).where(ExecutionRow.seq == 3)).scalar_one()
        assert top == ["cp1-m3"]
        assert c.execute(select(func.max(ExecutionRow.seq))).scalar_one() == 3
    reader.dispose()
    writer.close()


# ---------------------------------------------------------------- summary


def test_summary_numbers(store: CorpusStore) -> None:
    cid = new_campaign(store)
    cp1, cp2 = make_checkpoint("cp1", 4), make_checkpoint("cp2", 6)
    s1, s2 = make_seed("s1", "cp1"), make_seed("s2", "cp2")
    for cp in (cp1, cp2):
        store.record_checkpoint(cid, cp)
    for s in (s1, s2):
        store.record_seed(cid, s)
    store.record_execution(cid, make_exec("s1", ["cp1-m0", "cp1-m1"]), is_parent=True)
    store.record_execution(cid, make_exec("s2", ["cp2-m0"]), is_parent=True)
    store.record_mutant(cid, make_mutant("x1", s1, cp1), valid=True)
    store.record_mutant(cid, make_mutant("x2", s2, cp2), valid=True)
    store.record_mutant(cid, None, case_id="x3", seed_id="s1", valid=False, reason="r")
    # x1 reaches a memory it added (not in any checkpoint) and one more of cp1
    store.record_execution(cid, make_exec("x1", ["new-1", "cp1-m2", "cp1-m0"]))
    # an errored execution reaches nothing, whatever it claims
    store.record_execution(cid, make_exec("x2", ["cp2-m5"], error="BackendError: x"))
    store.record_error(cid, operation="execute", message="BackendError: x", case_id="x2")
    store.record_feedback(cid, "x1", {"coverage": 2, "novelty": True, "divergence": 0.4}, True)
    # a control (the oracle's: a mutant's question on the checkpoint's own state) is counted apart from parents,
    # and what it retrieved is no coverage of the search's
    store.record_execution(cid, make_exec("x1" + CONTROL_SUFFIX, ["cp1-m7"]), is_parent=True)
    summ = store.summary(cid)
    assert summ == {
        "campaign": cid, "status": "running",
        "executions": 5, "parent_executions": 2, "control_executions": 1, "mutant_executions": 2,
        "failed_executions": 1,
        "mutants": {"valid": 2, "rejected": 1, "total": 3},
        "retained": 1,
        "coverage": {"reached": 4, "total": 10, "ratio": 0.4, "extra": 1},
        "errors": 1,
    }
    json.dumps(summ)  # `ufuzz status --json` can print it as is


def test_summary_of_empty_campaign(store: CorpusStore) -> None:
    cid = new_campaign(store)
    s = store.summary(cid)
    assert s["executions"] == 0 and s["coverage"] == {"reached": 0, "total": 0, "ratio": 0.0, "extra": 0}


# ---------------------------------------------------------------- failures and references (oracle side)


@dataclass(frozen=True)
class FakeOracleFailure:
    """Shaped like ufuzz.oracles.expectations.Failure (the store reads attributes only)."""

    key: str
    case_id: str
    seed_id: str
    operator: str
    target: str
    kind: str
    stage: str
    offending: tuple[str, ...] = ()
    detail: dict[str, Any] = field(default_factory=dict)


def test_failure_upsert_counts_and_keeps_first(store: CorpusStore, url: str) -> None:
    cid = new_campaign(store)
    fs = FailureStore(url, cid)
    assert fs.record_failure("k1", case_id="x5", seed_id="s1", operator="paraphrase", kind="wrong_answer",
                             stage="post-selection", detail={"response": "Porto"}, seq=5) == 1
    assert fs.record_failure("k1", case_id="x9", seed_id="s1", operator="paraphrase", kind="wrong_answer",
                             stage="post-selection", detail={"response": "Faro"}, seq=9) == 2
    assert fs.record_failure("k1", case_id="x3", seed_id="s1", operator="paraphrase", kind="wrong_answer",
                             stage="post-selection", seq=3) == 3
    [f] = fs.failures()
    assert (f.count, f.case_id, f.detail, f.first_seq) == (3, "x5", {"response": "Porto"}, 3)
    fs.close()


def test_failure_record_from_oracle_failure_and_reference(store: CorpusStore, url: str) -> None:
    cid = new_campaign(store)
    fs = FailureStore(url, cid)
    ref = Reference("q-x1", "Porto", supporting=("new-1",), invalidated=("cp1-m0",))
    fail = FakeOracleFailure("k9", "x1", "s1", "update", "city", "stale_answer", "post-selection",
                             offending=("cp1-m0",), detail={"response": "Lisbon", "ids": ("a", "b")})
    assert fs.record(fail, ref, seq=7) == 1
    assert fs.record(fail, ref, seq=8) == 2
    [f] = fs.failures()
    assert f.detail == {"response": "Lisbon", "ids": ["a", "b"], "target": "city", "offending": ["cp1-m0"]}
    assert fs.reference("x1") == ref and fs.references() == {"x1": ref}
    fs.record_reference("x2", Reference("q-x2", None, abstain=True))
    assert fs.reference("x2").abstain and fs.reference("nope") is None
    fs.close()


def test_unique_failures_grouped_by_operator_kind_stage(store: CorpusStore, url: str) -> None:
    cid = new_campaign(store)
    other = new_campaign(store, "other")
    fs, fs_other = FailureStore(url, cid), FailureStore(url, other)
    rows = [("k1", "paraphrase", "missing_evidence", "selection"),
            ("k2", "paraphrase", "missing_evidence", "selection"),
            ("k1", "paraphrase", "missing_evidence", "selection"),  # repeat of k1
            ("k3", "paraphrase", "wrong_answer", "post-selection"),
            ("k4", "delete", "deleted_evidence_retrieved", "selection")]
    for key, op, kind, stage in rows:
        fs.record_failure(key, case_id="c", seed_id="s", operator=op, kind=kind, stage=stage)
    fs_other.record_failure("k1", case_id="c", seed_id="s", operator="delete", kind="wrong_answer",
                            stage="response")
    assert fs.unique_failures() == [
        {"operator": "delete", "kind": "deleted_evidence_retrieved", "stage": "selection", "unique": 1,
         "causes": 1, "occurrences": 1},
        {"operator": "paraphrase", "kind": "missing_evidence", "stage": "selection", "unique": 2, "causes": 1,
         "occurrences": 3},
        {"operator": "paraphrase", "kind": "wrong_answer", "stage": "post-selection", "unique": 1, "causes": 1,
         "occurrences": 1},
    ]
    assert fs.unique_failure_count() == 4 and fs_other.unique_failure_count() == 1
    fs.close()
    fs_other.close()


def test_failure_store_needs_an_existing_campaign(url: str) -> None:
    CorpusStore(url).close()
    with pytest.raises(KeyError, match="unknown campaign"):
        FailureStore(url, "ghost")


def test_references_table_name_is_quoted_and_usable(store: CorpusStore, url: str) -> None:
    cid = new_campaign(store)
    with FailureStore(url, cid) as fs:
        fs.record_reference("x1", Reference("q", "Porto"))
    con = sqlite3.connect(url.removeprefix("sqlite:///"))
    assert con.execute('SELECT case_id FROM "references"').fetchall() == [("x1",)]
    con.close()


# ---------------------------------------------------------------- separation


def test_corpus_store_has_no_way_to_read_failures_or_references() -> None:
    public = [n for n in dir(CorpusStore) if not n.startswith("_")]
    assert not [n for n in public if "fail" in n.lower() or "ref" in n.lower()]
    # No method (public or private) touches the oracle-side tables or their models.
    for name, member in inspect.getmembers(CorpusStore, inspect.isfunction):
        src = inspect.getsource(member)
        for forbidden in ("FailureRow", "ReferenceRow", "failures", "references", "FailureStore"):
            assert forbidden not in src, f"CorpusStore.{name} mentions {forbidden}"
    # The tables the scheduler-facing store creates exclude them; the oracle side's include them.
    assert {t.name for t in CORPUS_TABLES}.isdisjoint({"failures", "references"})
    assert {"failures", "references"} <= {t.name for t in FAILURE_TABLES}
    # store.py does not import the oracle-side module at module level.
    tree = ast.parse(inspect.getsource(store_mod))
    top_imports = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
    assert "ufuzz.corpus.failures" not in top_imports and "ufuzz.corpus.store" not in top_imports


def test_corpus_store_instance_exposes_no_engine_or_session(store: CorpusStore) -> None:
    from sqlalchemy.engine import Engine
    from sqlalchemy.orm import Session, sessionmaker

    for name in dir(store):
        if name.startswith("_"):
            continue
        value = getattr(store, name)
        assert not isinstance(value, (Engine, Session, sessionmaker)), name
    assert isinstance(store.url, str)


# ---------------------------------------------------------------- portability


@pytest.mark.parametrize("dialect", [postgresql.dialect(), mysql.dialect()], ids=["postgresql", "mysql"])
def test_ddl_compiles_for_server_databases(dialect: Any) -> None:
    for table in {*CORPUS_TABLES, *FAILURE_TABLES}:
        ddl = str(CreateTable(table).compile(dialect=dialect))
        assert "CREATE TABLE" in ddl
        if table.name == "references":
            assert '"references"' in ddl or "`references`" in ddl  # reserved word, quoted
