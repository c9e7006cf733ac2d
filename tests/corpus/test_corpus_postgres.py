"""The corpus store on a real PostgreSQL server, against the same operations on SQLite.

``tests/pg_server.py`` starts a throwaway server for the session (skipped, with how to get one, when there
are no server binaries or no psycopg). Its default ``TimeZone`` is Asia/Kolkata (+05:30) on purpose: a team
server is seldom on UTC, and a datetime that comes back in the server's zone must still read as UTC.
Every test gets its own database, except the campaigns, which share one "team" database the way the
README's ``--db postgresql+psycopg://...`` suggests.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from tests.engine.test_separation import _walk
from tests.support.pg_server import find_bindir, running_postgres
from ufuzz.cli import main
from ufuzz.corpus.failures import FAILURE_TABLES, FailureStore
from ufuzz.corpus.store import CORPUS_TABLES, CorpusStore, default_url
from ufuzz.model import (
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

pytest.importorskip("psycopg", reason="the PostgreSQL driver is missing: pip install 'ufuzz[postgres]'")

SERVER_TZ = "Asia/Kolkata"
_names = itertools.count(1)


@pytest.fixture(scope="session")
def pg():
    bindir, why = find_bindir()
    if bindir is None:
        pytest.skip(why)
    with running_postgres({"timezone": SERVER_TZ}, bindir=bindir) as server:
        yield server


@pytest.fixture()
def pg_url(pg) -> str:
    """A fresh, empty database on the session's server."""
    return pg.create_database(f"t{next(_names)}")


@pytest.fixture()
def sqlite_url(tmp_path: Path) -> str:
    return default_url(tmp_path / "sqlite-campaign")


def _tables(url: str) -> set[str]:
    eng = create_engine(url)
    try:
        with eng.connect() as c:
            return set(c.execute(text("SELECT table_name FROM information_schema.tables "
                                      "WHERE table_schema = 'public'")).scalars())
    finally:
        eng.dispose()


# ---------------------------------------------------------------------------------------------------- the server
def test_the_server_is_a_real_postgres_run_unprivileged(pg, pg_url):
    eng = create_engine(pg_url)
    with eng.connect() as c:
        assert c.execute(text("SELECT current_setting('server_version_num')::int")).scalar_one() >= 100000
        assert c.execute(text("SELECT current_setting('TimeZone')")).scalar_one() == SERVER_TZ
        assert c.execute(text("SELECT inet_server_addr()::text")).scalar_one().startswith("127.0.0.1")
    eng.dispose()
    owner = pg.root.joinpath("data").stat().st_uid
    if os.geteuid() == 0:
        assert owner != 0  # initdb refuses root: the cluster belongs to an unprivileged account
    else:
        assert owner == os.geteuid()


def test_schema_on_the_server_has_the_portable_types(pg_url):
    CorpusStore(pg_url).close()
    # the scheduler-facing store creates its tables only: the oracle side's do not exist yet
    assert _tables(pg_url) == {t.name for t in CORPUS_TABLES}
    with CorpusStore(pg_url) as s:
        cid = s.start_campaign("c", config={}, backend={}, seed=1, budget=1)
    FailureStore(pg_url, cid).close()
    assert _tables(pg_url) == {t.name for t in CORPUS_TABLES} | {t.name for t in FAILURE_TABLES}
    eng = create_engine(pg_url)
    with eng.connect() as c:
        cols = {(r.table_name, r.column_name): (r.data_type, r.collation_name) for r in c.execute(text(
            "SELECT table_name, column_name, data_type, collation_name FROM information_schema.columns "
            "WHERE table_schema = 'public'"))}
    eng.dispose()
    assert cols[("campaigns", "started_at")][0] == "timestamp with time zone"
    assert cols[("campaigns", "seed")][0] == cols[("campaigns", "budget")][0] == "bigint"
    assert cols[("executions", "top_scores")][0] == "json"
    assert cols[("executions", "seconds")][0] == "double precision"
    assert cols[("executions", "abstained")][0] == "boolean"
    for key in [("campaigns", "id"), ("seeds", "seed_id"), ("mutants", "case_id"), ("failures", "failure_key")]:
        assert cols[key] == ("character varying", "C"), key


# ---------------------------------------------------------------------------------------------------- same results as SQLite
def _checkpoint(cid: str = "cp1", n: int = 4) -> Checkpoint:
    mems = tuple(Memory(f"{cid}-m{i}", f"memory {i} of {cid}", f"2024-02-{i + 1:02d}T10:00:00") for i in range(n))
    return Checkpoint(id=cid, memories=mems, facts=(Fact("Ana", "city", "Lisbon", (mems[0].id,), value_type="city"),))


def _seed(sid: str, cid: str = "cp1") -> Seed:
    q = Query(id=f"q-{sid}", text="Where does Ana live?", fields=QueryFields("Ana", "city"))
    return Seed(id=sid, checkpoint_id=cid, query=q,
                descriptor=MutationDescriptor(replacement_targets={"entity": ("Bo",)}, value_pool=("Porto",)))


def _mutant(mid: str, seed: Seed, cp: Checkpoint) -> FuzzCase:
    q = Query(id=f"q-{mid}", text="In which city is Ana living?", fields=seed.query.fields, form="question")
    ops = (StateOp("update", cp.memories[0].id, Memory("new-1", "Ana moved to Porto", "2024-03-01T00:00:00")),)
    return FuzzCase(id=mid, seed_id=seed.id, checkpoint_id=cp.id, query=q, descriptor=seed.descriptor,
                    provenance=Provenance.of(cp), ops=ops, parent_id=seed.id, operator="update",
                    obligation=Obligation(seed.id, "update", "entity"), depth=1, detail="moved")


def _exec(case_id: str, top: list[str], *, scores: list[float] | None = None, error: str | None = None,
          response: str | None = "Lisbon", query: str = "Where does Ana live?") -> Execution:
    return Execution(case_id=case_id, state_key="abc123", query=query, top_ids=top,
                     top_scores=scores if scores is not None else [0.9 - 0.1 * i for i in range(len(top))],
                     top_texts=[f"t {i}" for i in top], response=response, abstained=False, error=error,
                     seconds=0.123456789)


def _workload(url: str) -> dict[str, Any]:
    """One campaign's worth of every record kind, written and read back; returns what was read."""
    cp1, cp2 = _checkpoint("cp1", 4), _checkpoint("cp2", 6)
    # ids that sort differently bytewise and under a linguistic collation (case, digits, hyphens)
    seeds = [_seed(s, "cp1" if i % 2 else "cp2") for i, s in enumerate(["p10-s1", "p1-s10", "P3-s1", "p1-s2",
                                                                        "p2-s1", "p1_s3"])]
    with CorpusStore(url) as s:
        cid = s.start_campaign("team-c1", config={"budget": 10, "p": 0.9, "opts": {"retrieval": "bm25"}},
                               backend={"backend": "embedded", "k": 5}, seed=2**40 + 3, budget=10)
        other = s.start_campaign("team-c2", config={}, backend={}, seed=0, budget=None)
        for cp in (cp1, cp2):
            s.record_checkpoint(cid, cp)
        for sd in seeds:
            s.record_seed(cid, sd)
        s.record_seed(cid, seeds[0])  # idempotent
        s.record_execution(cid, _exec("p10-s1", ["cp2-m0", "cp2-m1"]), is_parent=True)
        s.record_execution(cid, _exec("p1-s10", ["cp1-m0"]), is_parent=True)
        s.record_mutant(cid, _mutant("x000002", seeds[1], cp1), valid=True)
        s.record_mutant(cid, _mutant("x000001", seeds[1], cp1), valid=True)  # same created_seq: by case id
        s.record_mutant(cid, None, case_id="x000003", seed_id="P3-s1", operator="unsupported", target="attr",
                        obligation="P3-s1|unsupported|attr", valid=False, reason="no absent target")
        s.record_execution(cid, _exec("x000001", ["new-1", "cp1-m2", "cp1-m0"],
                                      scores=[math.inf, 0.5, -math.inf]))
        s.record_execution(cid, _exec("x000002", ["cp1-m3"], scores=[math.nan], response=None))
        s.record_execution(cid, _exec("x000002", [], error="BackendError: timeout"), seq=9)
        s.record_error(cid, operation="execute", message="BackendError: timeout", case_id="x000002", seq=9)
        s.record_feedback(cid, "x000001", {"coverage": 2, "novelty": True, "divergence": 0.25}, True, seq=3)
        s.record_feedback(cid, "x000002", {"coverage": 0, "novelty": True, "divergence": None}, False)
        s.record_execution(other, _exec("p1-s10", ["cp1-m1"]))  # another campaign, same database
        seq_after = s.next_seq(cid)
        first = s.campaign(cid)
        done = s.finish_campaign(cid, status="interrupted")
    with FailureStore(url, cid) as fs, FailureStore(url, other) as fo:
        ref = Reference("q-x000001", "Porto", supporting=("new-1",), invalidated=("cp1-m0",))
        fs.record_reference("x000001", ref)
        fs.record_reference("x000001", ref)  # replaced, not duplicated
        for key, op, kind, stage, seq in [("k2", "update", "stale_answer", "post-selection", 4),
                                          ("k1", "update", "stale_answer", "post-selection", 3),
                                          ("k2", "update", "stale_answer", "post-selection", 2),
                                          ("k3", "delete", "deleted_evidence_retrieved", "selection", 5)]:
            fs.record_failure(key, case_id="x000001", seed_id="p1-s10", operator=op, kind=kind, stage=stage,
                              detail={"ids": ("a", "b"), "score": math.nan}, seq=seq)
        fo.record_failure("k1", case_id="c", seed_id="s", operator="delete", kind="wrong_answer", stage="response")
        oracle = {"failures": fs.failures(), "groups": fs.unique_failures(), "count": fs.unique_failure_count(),
                  "references": fs.references(), "other_count": fo.unique_failure_count()}
    with CorpusStore(url) as s:  # a second process reading it back
        rec = s.resume_campaign(cid)
        execs = s.executions(cid)
        return {
            "campaigns": [(c.id, c.seed, c.budget, c.config, c.backend) for c in s.campaigns()],
            "started_utc": (first.started_at.utcoffset(), done.finished_at.utcoffset(), rec.started_at.utcoffset()),
            "ordered": done.finished_at >= first.started_at and rec.started_at == first.started_at,
            "status": (done.status, rec.status, rec.finished_at),
            "seq_after": seq_after, "next_seq": s.next_seq(cid),
            "seeds": s.seeds(cid), "checkpoints": list(s.checkpoints(cid).items()),
            "mutants": s.mutants(cid), "valid": [m.case_id for m in s.mutants(cid, valid=True)],
            # NaN != NaN: compare scores by their repr
            "executions": [(e.seq, e.is_parent, e.checkpoint_id, repr(e.execution)) for e in execs],
            "scores": [[repr(x) for x in e.execution.top_scores] for e in execs],
            "seconds": [e.execution.seconds for e in execs],
            "x2_runs": [e.seq for e in s.executions(cid, case_id="x000002", is_parent=False)],
            "feedback": s.feedback(cid), "retained": s.retained_case_ids(cid), "errors": s.errors(cid),
            "summary": s.summary(cid), "other_summary": s.summary(other),
            **oracle,
        }


def test_every_record_kind_reads_back_as_on_sqlite(pg_url, sqlite_url):
    on_pg, on_sqlite = _workload(pg_url), _workload(sqlite_url)
    assert on_pg == on_sqlite
    # and what both read back is right, not merely equal
    got = on_pg
    assert got["campaigns"][0][:3] == ("team-c1", 2**40 + 3, 10)
    assert got["started_utc"] == (timedelta(0),) * 3
    assert got["ordered"] and got["status"] == ("interrupted", "running", None)
    assert got["seq_after"] == 10 and got["next_seq"] == 10
    assert [s.id for s in got["seeds"]] == sorted(s.id for s in got["seeds"])  # bytewise: "P3-s1" first
    assert [s.id for s in got["seeds"]][:2] == ["P3-s1", "p1-s10"]
    assert [m.case_id for m in got["mutants"]] == ["x000001", "x000002", "x000003"]
    assert got["valid"] == ["x000001", "x000002"] and got["mutants"][2].checkpoint_id == "cp2"  # P3-s1 is on cp2
    assert got["scores"][2] == ["inf", "0.5", "-inf"] and got["scores"][3] == ["nan"]
    assert set(got["seconds"]) == {0.123456789}  # double precision
    assert [r[0] for r in got["executions"]] == [1, 2, 3, 4, 9] and got["x2_runs"] == [4, 9]
    assert got["retained"] == ["x000001"] and [e.seq for e in got["errors"]] == [9]
    assert got["summary"]["executions"] == 5 and got["summary"]["coverage"]["reached"] == 5
    assert got["summary"]["coverage"]["extra"] == 1 and got["summary"]["failed_executions"] == 1
    assert got["other_summary"]["executions"] == 1
    assert [(f.failure_key, f.count, f.first_seq) for f in got["failures"]] == [("k2", 2, 2), ("k1", 1, 3),
                                                                              ("k3", 1, 5)]
    assert got["failures"][0].detail == {"ids": ["a", "b"], "score": "NaN"}
    assert got["count"] == 3 and got["other_count"] == 1 and list(got["references"]) == ["x000001"]


def test_ids_sort_bytewise_in_a_database_with_a_linguistic_collation(pg, sqlite_url):
    try:
        url = pg.create_database(f"icu{next(_names)}", icu_locale="en-US")
    except Exception as e:  # a server built without ICU
        pytest.skip(f"this PostgreSQL cannot create an ICU database: {type(e).__name__}: {e}")
    eng = create_engine(url)
    with eng.connect() as c:  # the database itself orders these linguistically...
        ling = c.execute(text("SELECT x FROM (VALUES ('p1-s10'), ('P3-s1'), ('p10-s1')) v(x) ORDER BY x")).scalars()
        assert list(ling) != sorted(["p1-s10", "P3-s1", "p10-s1"])
    eng.dispose()
    ids = ["p10-s1", "p1-s10", "P3-s1", "p1-s2", "p2-s1", "p1_s3", "Z9"]
    out = {}
    for name, u in (("pg", url), ("sqlite", sqlite_url)):
        with CorpusStore(u) as s:  # ... the store orders them bytewise, like SQLite
            cid = s.start_campaign("c", config={}, backend={}, seed=0, budget=None)
            for i in ids:
                s.record_seed(cid, _seed(i))
                s.record_checkpoint(cid, _checkpoint(i, 1))
            out[name] = ([x.id for x in s.seeds(cid)], list(s.checkpoints(cid)))
    assert out["pg"] == out["sqlite"] == (sorted(ids), sorted(ids))


def test_values_postgres_text_cannot_hold_are_stored_not_fatal(pg_url):
    with CorpusStore(pg_url) as s:
        cid = s.start_campaign("c", config={}, backend={}, seed=0, budget=None)
        long_id = "lme-" + "q" * 400  # no length limit on the server either (SQLite has none)
        s.record_execution(cid, _exec(long_id, ["m\x001"], query="who\x00?", response="A\x00B",
                                      error="BackendError: b'\\x00\x00'"))
        s.record_error(cid, operation="execute", message="bad\x00byte")
        [r] = s.executions(cid)
        assert r.execution.case_id == long_id
        assert (r.execution.query, r.execution.response) == ("who\ufffd?", "A\ufffdB")
        assert r.execution.error == "BackendError: b'\\x00\ufffd'"
        assert r.execution.top_ids == ["m\x001"]  # JSON escapes it: kept as is
        assert [e.message for e in s.errors(cid)] == ["bad\ufffdbyte"]


# ---------------------------------------------------------------------------------------------------- concurrency
def test_each_record_is_visible_to_another_connection_at_once(pg_url):
    writer = CorpusStore(pg_url)
    cid = writer.start_campaign("c", config={}, backend={}, seed=0, budget=None)
    reader = create_engine(pg_url)
    try:
        for i in range(1, 4):
            writer.record_execution(cid, _exec("s1", [f"m{i}"]), is_parent=True)
            with reader.connect() as c:
                assert c.execute(text("SELECT count(*) FROM executions")).scalar_one() == i
    finally:
        reader.dispose()
        writer.close()


def test_concurrent_failure_writers_never_lose_a_count(pg_url):
    with CorpusStore(pg_url) as s:
        cid = s.start_campaign("c", config={}, backend={}, seed=0, budget=None)
    stores = [FailureStore(pg_url, cid) for _ in range(4)]
    start = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def write(fs: FailureStore, base: int) -> None:
        try:
            start.wait()
            for i in range(15):
                fs.record_failure(f"k{i % 3}", case_id=f"x{base}-{i}", seed_id="s", operator="update",
                                  kind="stale_answer", stage="post-selection", seq=base + i)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(fs, 100 * (n + 1))) for n, fs in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    try:
        assert not errors, errors
        got = {f.failure_key: (f.count, f.first_seq) for f in stores[0].failures()}
        assert got == {"k0": (20, 100), "k1": (20, 101), "k2": (20, 102)}
    finally:
        for fs in stores:
            fs.close()


# ---------------------------------------------------------------------------------------------------- real campaigns
def _run(out: Path, db: str | None, seed: int):
    from ufuzz.engine.campaign import Campaign, CampaignConfig

    c = Campaign(CampaignConfig(backend="embedded", backend_options={"retrieval": "bm25"}, budget=60, seed=seed,
                                db=db, out=str(out)))
    c.run()
    c.store.close()  # the campaign leaves its stores open; on a server that is two idle connections each
    c.failures.close()
    return c


def _status(out: Path, db: str | None = None) -> dict[str, Any]:
    args = ["status", str(out), "--json"] + (["--db", db] if db else [])
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def _figures(st: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in st.items()
            if k not in ("campaign", "started_at", "finished_at", "heartbeat_at", "pid", "host",
                         "execution_seconds")}  # times of day and of the system: not figures of the campaign


@pytest.fixture(scope="module")
def campaigns(pg, tmp_path_factory):
    """Campaign A (seed 0) and B (seed 1), each once on SQLite and once in one shared PostgreSQL database,
    A first. A's ``ufuzz status`` on the server is taken before B exists there."""
    tmp = tmp_path_factory.mktemp("pg-campaigns")
    team = pg.create_database("team")
    runs = {"a_sqlite": _run(tmp / "a-sqlite", None, 0), "a_pg": _run(tmp / "a-pg", team, 0)}
    first_status = _status(tmp / "a-pg", team)
    runs |= {"b_pg": _run(tmp / "b-pg", team, 1), "b_sqlite": _run(tmp / "b-sqlite", None, 1)}
    return {"team": team, "tmp": tmp, "a_pg_status": first_status, **runs}


def test_campaign_status_on_postgres_equals_sqlite(campaigns):
    on_sqlite = _status(Path(campaigns["a_sqlite"].config.out))
    on_pg = campaigns["a_pg_status"]
    assert on_pg["campaign"] == campaigns["a_pg"].campaign_id
    assert _figures(on_pg) == _figures(on_sqlite)
    assert on_pg["executions"] == 60 and on_pg["unique_failures"] > 0 and on_pg["retained"] > 0
    assert on_pg["coverage"]["reached"] > 0 and on_pg["errors"] == 0
    # datetimes read back from a +05:30 server are UTC, as SQLite's are
    assert on_pg["started_at"].endswith("+00:00") and on_sqlite["started_at"].endswith("+00:00")
    # the in-process summary agrees with what the store says
    summary = campaigns["a_pg"].summary()
    assert (summary["executions"], summary["unique_failures"]) == (on_pg["executions"], on_pg["unique_failures"])


def test_two_campaigns_in_one_database_are_kept_apart(campaigns):
    from ufuzz.reports.status import campaign_status

    team = campaigns["team"]
    a, b = campaigns["a_pg"], campaigns["b_pg"]
    with CorpusStore(team) as s:
        assert [c.id for c in s.campaigns()] == [a.campaign_id, b.campaign_id]
        assert [e.seq for e in s.executions(a.campaign_id)] == list(range(1, 61))
        assert [e.seq for e in s.executions(b.campaign_id)] == list(range(1, 61))
    for mine, twin in (("a_pg", "a_sqlite"), ("b_pg", "b_sqlite")):
        c, ref = campaigns[mine], campaigns[twin]
        st = campaign_status(Path(c.config.out), team, campaign_id=c.campaign_id)
        st_ref = campaign_status(Path(ref.config.out), campaign_id=ref.campaign_id)
        assert _figures(st) == _figures(st_ref), mine
        with FailureStore(team, c.campaign_id) as fs, \
                FailureStore(default_url(ref.config.out), ref.campaign_id) as fr:
            assert [(f.failure_key, f.count, f.first_seq) for f in fs.failures()] == \
                [(f.failure_key, f.count, f.first_seq) for f in fr.failures()]
            assert fs.references() == fr.references()
    # A's figures did not move when B was added to the database
    assert _figures(campaign_status(Path(a.config.out), team, campaign_id=a.campaign_id)) == \
        _figures(campaigns["a_pg_status"])


def test_failures_live_apart_and_never_reach_the_scheduler(campaigns):
    team, c = campaigns["team"], campaigns["a_pg"]
    with FailureStore(team, c.campaign_id) as fs:
        recorded = fs.failures()
        keys = [f.failure_key for f in recorded]
        refs = fs.references()
    assert keys and sum(f.origin == "mutant" for f in recorded) == c.summary()["unique_failures"] and refs
    # nothing the scheduler-facing store can read back names a failure
    with CorpusStore(team) as s:
        cid = c.campaign_id
        readable = repr([s.campaigns(), s.seeds(cid), s.checkpoints(cid), s.mutants(cid), s.executions(cid),
                         s.feedback(cid), s.retained_case_ids(cid), s.errors(cid), s.summary(cid)])
    assert not [k for k in keys if k in readable]
    # and the scheduler's state after the campaign holds no reference or failure (tests/test_separation.py)
    found: list = []
    _walk(c.scheduler, set(), found)
    assert found == []


def test_corpus_export_from_postgres_equals_export_from_sqlite(campaigns):
    tmp = campaigns["tmp"]
    files = {}
    for name, args in (("sqlite", [str(campaigns["a_sqlite"].config.out)]),
                       ("pg", [str(campaigns["a_pg"].config.out), "--db", campaigns["team"]])):
        out = tmp / f"export-{name}.jsonl"
        res = CliRunner().invoke(main, ["corpus", "export", *args, "-o", str(out)])
        assert res.exit_code == 0, res.output
        files[name] = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    pg_lines, sqlite_lines = files["pg"], files["sqlite"]
    # the source campaign's id carries its start time; everything else is the same file
    assert pg_lines[0].pop("source_campaign") == campaigns["a_pg"].campaign_id
    assert sqlite_lines[0].pop("source_campaign") == campaigns["a_sqlite"].campaign_id
    assert pg_lines == sqlite_lines
    failures = [r for r in pg_lines if r["kind"] == "failure"]
    assert failures and len(failures) == campaigns["a_pg"].summary()["unique_failures"]


def test_a_schema_3_database_on_the_server_is_upgraded_in_place(pg_url):
    """A team database written by an earlier ufuzz: the signals' columns become one JSON column, in one
    transaction, every record kept."""
    from sqlalchemy import create_engine, text

    from ufuzz.corpus.store import CorpusStore, OlderSchema, upgrade_database

    s = CorpusStore(pg_url)
    cid = s.start_campaign("c1", config={"budget": 10}, backend={"name": "embedded"}, seed=1, budget=10)
    s.record_feedback(cid, "x1", {"coverage": 2, "novelty": True, "divergence": 0.25}, True, seq=3)
    s.close()
    engine = create_engine(pg_url)
    with engine.begin() as conn:
        for stmt in ("ALTER TABLE feedback ADD COLUMN coverage_gain INTEGER NOT NULL DEFAULT 2",
                     "ALTER TABLE feedback ADD COLUMN new_signature BOOLEAN NOT NULL DEFAULT TRUE",
                     "ALTER TABLE feedback ADD COLUMN new_response BOOLEAN NOT NULL DEFAULT FALSE",
                     "ALTER TABLE feedback ADD COLUMN divergence FLOAT DEFAULT 0.25",
                     "ALTER TABLE feedback DROP COLUMN signals",
                     "UPDATE ufuzz_meta SET value = '3' WHERE key = 'schema_version'"):
            conn.execute(text(stmt))
    engine.dispose()
    with pytest.raises(OlderSchema, match="ufuzz corpus upgrade"):
        CorpusStore(pg_url, readonly=True)
    assert upgrade_database(pg_url) == "3" and upgrade_database(pg_url) is None
    s = CorpusStore(pg_url, readonly=True)
    assert [(r.case_id, r.signals, r.retained) for r in s.feedback(cid)] == [
        ("x1", {"coverage": 2, "novelty": True, "divergence": 0.25}, True)]
    s.close()
