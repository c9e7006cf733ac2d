"""The corpus store: campaigns, seeds, checkpoints, mutants, executions, feedback and backend errors.

Any SQLAlchemy URL works; the default is one SQLite file per campaign directory
(:func:`default_url` → ``sqlite:///<campaign>/corpus.sqlite``), and a team can point several campaigns at
one PostgreSQL database. Column types are the portable ones (``JSON``, ``Text``, ``String``, ``Float``,
``Integer``, ``BigInteger``, ``Boolean``, ``DateTime``), and the store behaves the same on SQLite and
PostgreSQL (tested against a real server in ``tests/corpus/test_corpus_postgres.py``):

* ids sort bytewise (``COLLATE "C"`` on PostgreSQL, like SQLite's ``BINARY``) whatever locale the
  database was created with, and are unbounded there (``String(255)`` elsewhere, for MySQL's indexes);
* datetimes come back in UTC whatever the server's ``TimeZone``;
* JSON is standard JSON on every database: a non-finite float (a backend's NaN score) is stored as the
  string ``"NaN"``/``"Infinity"``/``"-Infinity"`` (PostgreSQL's ``json`` rejects the bare tokens), and
  execution scores are read back as floats;
* PostgreSQL text cannot hold NUL characters: in text columns (queries, responses, error messages) they are
  stored as U+FFFD there, rather than failing the write;
* campaign seeds and budgets are 64-bit.

Durability. Outside a campaign every ``record_*`` call commits before it returns. A campaign attaches a
:class:`~ufuzz.corpus.window.WriteWindow` (:meth:`CorpusStore.attach`): its records are then written in
batches, one transaction per at most 256 records or 1 second, each holding only complete steps and, every few
windows, the campaign's resume snapshot. **After a kill at most the last window is lost**; what is committed
is always a prefix of the campaign, and ``ufuzz run --resume DIR`` continues from it (records committed after
the last snapshot are rolled back and redone: :meth:`CorpusStore.rollback`). ``ufuzz status`` (another
process) sees progress window by window. SQLite files run in WAL mode so that such a reader never blocks the
writer. One writer per campaign is assumed (sequence numbers are allocated in-process).

A campaign row also says how the campaign ended (``status``: running, budget_spent, exhausted, interrupted,
time_limit or error, with the error's ``message``) and who runs it (``pid``, ``host``, ``heartbeat_at``), so that
``ufuzz status`` tells a campaign whose process died from one that is running.

Failures and references are the oracle side's: their tables are written and read only through
:class:`ufuzz.corpus.failures.FailureStore`. :class:`CorpusStore`, which the campaign's engine writes, has no
way to read them — no method touches those tables and its database engine is private.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Connection,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from ufuzz.corpus.summary import CampaignSummary
from ufuzz.model import (
    CONTROL_SUFFIX,
    Checkpoint,
    Execution,
    FuzzCase,
    MutationDescriptor,
    Obligation,
    Query,
    Seed,
    StateOp,
)

# 2: failures carry cause_key, responder and origin (mutant | baseline)
# 3: campaigns' end reasons, messages and heartbeats; records carry their step; resume snapshots
SCHEMA_VERSION = 4
# Ids: bounded where a database needs it to index them (MySQL); on PostgreSQL unbounded like SQLite, and
# compared bytewise (COLLATE "C", like SQLite's BINARY) so that ordered reads are the same whatever locale
# the team database was created with.
ID = String(255).with_variant(String(collation="C"), "postgresql")

__all__ = [
    "SCHEMA_VERSION", "Base", "SqlStore", "CorpusStore", "CorpusDatabaseError", "CampaignRecord", "MutantRecord",
    "ExecutionRecord", "FeedbackRecord", "ErrorRecord", "SnapshotRecord", "SnapshotRow", "default_url", "open_engine",
    "check_database", "database_errors",
]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _utc(dt: datetime | None) -> datetime | None:
    # SQLite hands DateTime back naive (everything we write is UTC); PostgreSQL hands it back in the
    # session's TimeZone, which is the server's default unless the client sets one.
    if dt is None:
        return None
    if dt.tzinfo is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by its name as a string (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _json_dumps(value: Any) -> str:
    """The JSON columns' serializer on every database: standard JSON (no bare NaN/Infinity tokens)."""
    try:
        return json.dumps(value, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), allow_nan=False)


class SafeText(TypeDecorator):
    """``Text`` that PostgreSQL accepts whatever it holds: NUL characters become U+FFFD there (PostgreSQL
    text cannot store them; SQLite keeps them)."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        if isinstance(value, str) and "\x00" in value and dialect.name == "postgresql":
            return value.replace("\x00", "\ufffd")
        return value


# ====================================================================== ORM models


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class MetaRow(Base):
    __tablename__ = "ufuzz_meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(SafeText)


class CampaignRow(Base):
    __tablename__ = "campaigns"
    id: Mapped[str] = mapped_column(ID, primary_key=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    backend: Mapped[dict[str, Any]] = mapped_column(JSON)
    seed: Mapped[int] = mapped_column(BigInteger)
    budget: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # running | budget_spent | exhausted | interrupted | time_limit | error (see ufuzz.engine.ending)
    status: Mapped[str] = mapped_column(String(32))
    message: Mapped[str | None] = mapped_column(SafeText, nullable=True)  # why it ended in error
    pid: Mapped[int | None] = mapped_column(Integer, nullable=True)  # the process running it, on ``host``
    host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    resumes: Mapped[int] = mapped_column(Integer, default=0)


def _campaign_fk() -> Any:
    return mapped_column(ID, ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True)


class SeedRow(Base):
    __tablename__ = "seeds"
    campaign_id: Mapped[str] = _campaign_fk()
    seed_id: Mapped[str] = mapped_column(ID, primary_key=True)
    checkpoint_id: Mapped[str] = mapped_column(ID)
    query: Mapped[dict[str, Any]] = mapped_column(JSON)
    descriptor: Mapped[dict[str, Any]] = mapped_column(JSON)


class CheckpointRow(Base):
    __tablename__ = "checkpoints"
    campaign_id: Mapped[str] = _campaign_fk()
    id: Mapped[str] = mapped_column(ID, primary_key=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    memory_count: Mapped[int] = mapped_column(Integer)


class MutantRow(Base):
    __tablename__ = "mutants"
    campaign_id: Mapped[str] = _campaign_fk()
    case_id: Mapped[str] = mapped_column(ID, primary_key=True)
    parent_id: Mapped[str | None] = mapped_column(ID, nullable=True)
    seed_id: Mapped[str] = mapped_column(ID)
    checkpoint_id: Mapped[str | None] = mapped_column(ID, nullable=True)
    operator: Mapped[str | None] = mapped_column(String(64), nullable=True)
    obligation_key: Mapped[str | None] = mapped_column(SafeText, nullable=True)
    target: Mapped[str | None] = mapped_column(SafeText, nullable=True)
    query: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)  # None: no mutant was produced
    ops: Mapped[list[Any]] = mapped_column(JSON)
    depth: Mapped[int] = mapped_column(Integer)
    valid: Mapped[bool] = mapped_column(Boolean)
    rejection_reason: Mapped[str | None] = mapped_column(SafeText, nullable=True)
    created_seq: Mapped[int] = mapped_column(Integer)
    detail: Mapped[str] = mapped_column(SafeText, default="")
    step: Mapped[int | None] = mapped_column(Integer, nullable=True)  # the campaign step that wrote it


class ExecutionRow(Base):
    __tablename__ = "executions"
    __table_args__ = (UniqueConstraint("campaign_id", "seq", name="uq_executions_campaign_seq"),
                      Index("ix_executions_campaign_case", "campaign_id", "case_id"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    campaign_id: Mapped[str] = mapped_column(ID, ForeignKey("campaigns.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    case_id: Mapped[str] = mapped_column(ID)
    checkpoint_id: Mapped[str | None] = mapped_column(ID, nullable=True)
    state_key: Mapped[str] = mapped_column(String(64))
    query: Mapped[str] = mapped_column(SafeText)
    top_ids: Mapped[list[Any]] = mapped_column(JSON)
    top_scores: Mapped[list[Any]] = mapped_column(JSON)
    top_texts: Mapped[list[Any]] = mapped_column(JSON)
    response: Mapped[str | None] = mapped_column(SafeText, nullable=True)
    abstained: Mapped[bool] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(SafeText, nullable=True)
    seconds: Mapped[float] = mapped_column(Float)
    is_parent: Mapped[bool] = mapped_column(Boolean)
    step: Mapped[int | None] = mapped_column(Integer, nullable=True)  # the campaign step that wrote it


class NativeIdsRow(Base):
    """The system's own ids of one execution's top-k, for backends that map ids (a REST product that assigns
    its own). A table of its own, written only for such executions: nothing is added for the others."""

    __tablename__ = "native_ids"
    campaign_id: Mapped[str] = mapped_column(ID, ForeignKey("campaigns.id", ondelete="CASCADE"),
                                             primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    ids: Mapped[list[Any]] = mapped_column(JSON)


class FeedbackRow(Base):
    __tablename__ = "feedback"
    __table_args__ = (Index("ix_feedback_campaign_case", "campaign_id", "case_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    campaign_id: Mapped[str] = mapped_column(ID, ForeignKey("campaigns.id", ondelete="CASCADE"))
    case_id: Mapped[str] = mapped_column(ID)
    seq: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: what each feedback signal made of the execution, by the signal's name (a new signal needs no new column)
    signals: Mapped[dict[str, Any]] = mapped_column(JSON)
    retained: Mapped[bool] = mapped_column(Boolean)
    step: Mapped[int | None] = mapped_column(Integer, nullable=True)  # the campaign step that wrote it


class ErrorRow(Base):
    __tablename__ = "errors"
    __table_args__ = (Index("ix_errors_campaign", "campaign_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    campaign_id: Mapped[str] = mapped_column(ID, ForeignKey("campaigns.id", ondelete="CASCADE"))
    seq: Mapped[int | None] = mapped_column(Integer, nullable=True)
    case_id: Mapped[str | None] = mapped_column(ID, nullable=True)
    operation: Mapped[str] = mapped_column(String(64))
    message: Mapped[str] = mapped_column(SafeText)
    step: Mapped[int | None] = mapped_column(Integer, nullable=True)  # the campaign step that wrote it


class SnapshotRow(Base):
    """The engine's resume snapshot of one campaign (the latest only): scheduler, feedback, cases, caches and
    progress after step ``step`` (``seq`` executions), pickled by :mod:`ufuzz.engine.snapshot`. The oracle's
    half lives in the oracle side's own table."""

    __tablename__ = "snapshots"
    campaign_id: Mapped[str] = _campaign_fk()
    step: Mapped[int] = mapped_column(Integer)
    seq: Mapped[int] = mapped_column(Integer)
    taken_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    data: Mapped[bytes] = mapped_column(LargeBinary)


#: The tables the engine-facing store creates and touches (never failures/references).
CORPUS_TABLES = [MetaRow.__table__, CampaignRow.__table__, SeedRow.__table__, CheckpointRow.__table__,
                 MutantRow.__table__, ExecutionRow.__table__, NativeIdsRow.__table__, FeedbackRow.__table__,
                 ErrorRow.__table__, SnapshotRow.__table__]


# ====================================================================== engine / URL handling


def default_url(campaign_dir: str | Path) -> str:
    """``sqlite:///<campaign_dir>/corpus.sqlite`` (the directory is created when the store opens)."""
    return f"sqlite:///{Path(campaign_dir) / 'corpus.sqlite'}"


def _scheme_of(url: str) -> str:
    return url.split("://", 1)[0] if "://" in url else "(none)"


#: how long an SQLite write waits for another writer's lock before it fails ("database is locked")
BUSY_TIMEOUT_MS = 10_000


def _on_sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    try:
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_MS)}")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
    finally:
        cur.close()


def _scrub(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


class CorpusDatabaseError(ValueError):
    """The corpus database URL cannot be used: a bad URL, a driver that is not installed, a server that cannot
    be reached, a file that is not a (ufuzz) database. The message names the URL (password hidden) and what
    is wrong; the command line blames ``--db`` (or the campaign directory's ``corpus.sqlite``) for it.

    ``environment`` is True when the database itself is fine but cannot be used now (locked by another
    writer, a server that does not answer): the command line exits 3 for it, 2 for the rest (bad input)."""

    def __init__(self, message: str, *, environment: bool = False) -> None:
        super().__init__(message)
        self.environment = environment


def _environmental(e: Exception, what: str) -> bool:
    """Whether a driver error says the database cannot be used now rather than that it is the wrong thing."""
    from sqlalchemy.exc import OperationalError

    damaged = any(w in what for w in ("not a database", "malformed", "no such table", "file is not"))
    return isinstance(e, OperationalError) and not damaged


def _sqlite_path(u: Any) -> Path | None:
    """The file of an SQLite URL (None for in-memory and ``file:`` URI databases)."""
    if u.get_backend_name() != "sqlite" or not u.database or u.database == ":memory:" \
            or u.database.startswith("file:"):
        return None
    return Path(u.database)


def _readonly_creator(path: Path) -> Any:
    """Connections that cannot write ``path``: ``mode=ro``, and ``immutable`` when no writer has the database
    open (no ``-wal`` file), because a read-only connection would otherwise leave ``-wal``/``-shm`` files
    behind it."""
    import sqlite3
    import urllib.parse

    def connect() -> Any:
        live = Path(f"{path}-wal").exists()
        uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro" + ("" if live else "&immutable=1")
        return sqlite3.connect(uri, uri=True, check_same_thread=False)

    return connect


def _first_line(e: Exception, secret: str | None) -> str:
    orig = getattr(e, "orig", None)
    lines = _scrub(str(orig) if orig is not None else str(e), secret).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def open_engine(url: str, tables: list[Any], *, echo: bool = False, readonly: bool = False) -> Engine:
    """Create an engine for ``url`` and (idempotently) the given tables.

    ``readonly`` creates nothing: the database must already be a ufuzz corpus (an SQLite file is opened so
    that it cannot be written). An SQLite file that holds other tables but no ufuzz corpus is refused rather
    than written into. Raises :class:`CorpusDatabaseError` (a ``ValueError``) naming the URL's scheme and
    what is wrong when the database cannot be used; the password never appears in the message.
    """
    engine = _open(url, tables, echo=echo, mode="read" if readonly else "write")
    assert engine is not None
    return engine


def check_database(url: str) -> None:
    """Raise :class:`CorpusDatabaseError` if a campaign could not keep its corpus at ``url``, creating and
    writing nothing: the URL parses, its driver is installed, a server answers (one connection), an
    existing SQLite file is empty or a ufuzz corpus of this version, a new one's folder can be written."""
    engine = _open(url, CORPUS_TABLES, mode="check")
    if engine is not None:
        engine.dispose()


def _writable_folder(path: Path) -> str | None:
    """Why no file can be created at ``path`` (its nearest existing folder is not a writable directory)."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is not a directory"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable"
    return None


def _open(url: str, tables: list[Any], *, echo: bool = False, mode: str = "write") -> Engine | None:
    """The engine of :func:`open_engine` (``mode`` write/read) or :func:`check_database` (``check``: None when
    there is nothing to open yet, e.g. an SQLite file still to be created)."""
    if not isinstance(url, str) or not url.strip():
        raise CorpusDatabaseError("corpus database URL is empty; expected e.g. sqlite:///campaign/corpus.sqlite")
    try:
        u = make_url(url)
    except ArgumentError:
        raise CorpusDatabaseError(
            f"corpus database URL with scheme {_scheme_of(url)!r} is not a valid SQLAlchemy URL; expected "
            "e.g. sqlite:///campaign/corpus.sqlite or postgresql+psycopg://user@host/dbname") from None
    scheme = u.drivername
    safe = u.render_as_string(hide_password=True)
    secret = u.password if u.password else None
    file = _sqlite_path(u)
    if file is not None and mode != "write":
        if file.is_dir():
            raise CorpusDatabaseError(f"corpus database {safe}: {file} is a directory, not a database file")
        if not file.exists():
            if mode == "read":
                raise CorpusDatabaseError(f"corpus database file {file} does not exist")
            why = _writable_folder(file)
            if why:
                raise CorpusDatabaseError(f"cannot create SQLite corpus database {safe}: {why}")
            return None
        if mode == "check" and file.stat().st_size == 0:
            return None  # an empty file becomes a corpus
    if file is not None and mode == "write":
        folder = file.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CorpusDatabaseError(f"cannot create the folder {str(folder)!r} of SQLite corpus database {safe} "
                                      f"(scheme {scheme!r}): {e.strerror or type(e).__name__}") from None
    kw: dict[str, Any] = {"echo": echo}
    if mode == "check" and u.get_backend_name() == "postgresql" and "connect_timeout" not in u.query:
        kw["connect_args"] = {"connect_timeout": 10}  # a check must not hang on a host that drops packets
    if file is not None and mode != "write":
        kw["creator"] = _readonly_creator(file)
        u = make_url("sqlite://")
    try:
        try:
            engine = create_engine(u, json_serializer=_json_dumps, **kw)
        except TypeError:  # a dialect without JSON support takes no serializer
            engine = create_engine(u, **kw)
    except NoSuchModuleError:
        raise CorpusDatabaseError(f"corpus database URL scheme {scheme!r} names no database/driver SQLAlchemy "
                                  "knows (try sqlite:///PATH or postgresql+psycopg://...)") from None
    except ImportError as e:
        raise CorpusDatabaseError(f"the database driver for URL scheme {scheme!r} is not installed "
                                  f"({type(e).__name__}: {_scrub(str(e), secret)})") from None
    except ArgumentError as e:
        raise CorpusDatabaseError(f"corpus database URL with scheme {scheme!r} was refused: "
                                  f"{_scrub(str(e), secret)}") from None
    if engine.dialect.name == "sqlite" and mode == "write":
        event.listen(engine, "connect", _on_sqlite_connect)
    try:
        _check_corpus(engine, tables, mode, file)
    except _Older as e:
        engine.dispose()
        raise OlderSchema(f"corpus database {safe}: {e}", e.version) from None
    except ValueError as e:
        engine.dispose()
        raise CorpusDatabaseError(f"corpus database {safe}: {e}") from None
    except SQLAlchemyError as e:
        engine.dispose()
        what = _first_line(e, secret)
        if file is not None and ("not a database" in what or "malformed" in what):
            what += " (not an SQLite database, or a damaged or truncated one)"
        raise CorpusDatabaseError(f"cannot open corpus database {safe} (scheme {scheme!r}): {what}",
                                  environment=_environmental(e, what)) from None
    return engine


@contextmanager
def database_errors(url: str) -> Iterator[None]:
    """Turn a database fault while reading or writing ``url`` (a damaged page, a server gone) into a
    :class:`CorpusDatabaseError` naming the URL (password hidden), for commands that report it to a user."""
    try:
        yield
    except SQLAlchemyError as e:
        try:
            u = make_url(url)
            safe, secret = u.render_as_string(hide_password=True), u.password
        except ArgumentError:
            safe, secret = "(unparseable URL)", None
        what = _first_line(e, secret)
        environment = _environmental(e, what)
        if "malformed" in what or "not a database" in what:
            what += " (a damaged or truncated database)"
        raise CorpusDatabaseError(f"cannot read corpus database {safe}: {what}", environment=environment) from None


def _check_corpus(engine: Engine, tables: list[Any], mode: str, file: Path | None) -> None:
    """Refuse a database that is not a ufuzz corpus (or not this version of one); create ``tables`` in mode
    ``write``. An SQLite file that holds other tables is refused even for writing (it is someone else's
    file); a server database may hold other applications' tables beside the corpus."""
    from sqlalchemy import inspect

    present = set(inspect(engine).get_table_names())
    listing = f"{', '.join(sorted(present)[:5])}{' …' if len(present) > 5 else ''}"
    if MetaRow.__tablename__ not in present:
        if mode == "read":
            if not present:
                size = f" ({file.stat().st_size} bytes)" if file is not None else ""
                raise ValueError(f"empty database{size}: it holds no ufuzz corpus")
            raise ValueError(f"not a ufuzz corpus database (no {MetaRow.__tablename__} table; it holds {listing})")
        if present and file is not None:  # a server database may well be shared with other applications
            raise ValueError(f"not a ufuzz corpus database: it already holds other tables ({listing}); use an "
                             "empty database or a ufuzz one")
        if mode == "check":
            return
    if mode == "read":
        missing = sorted(t.name for t in tables if t.name not in present)
        if missing:
            raise ValueError(f"incomplete ufuzz corpus database: no table(s) {', '.join(missing)}")
    elif mode == "write":
        Base.metadata.create_all(engine, tables=tables, checkfirst=True)
    _check_schema(engine, readonly=mode != "write")


def _check_schema(engine: Engine, readonly: bool = False) -> None:
    with Session(engine) as s, s.begin():
        row = s.get(MetaRow, "schema_version")
        if row is None:
            if readonly:
                raise ValueError("not a ufuzz corpus database (no schema version recorded)")
            s.add(MetaRow(key="schema_version", value=str(SCHEMA_VERSION)))
        elif row.value in UPGRADES and not readonly:
            UPGRADES[row.value](s)  # in this transaction: the database is upgraded whole or not at all
            row.value = str(SCHEMA_VERSION)
        elif row.value in UPGRADES:
            raise _Older(row.value)
        elif row.value != str(SCHEMA_VERSION):
            raise ValueError(f"corpus database has schema version {row.value}, this ufuzz writes "
                             f"version {SCHEMA_VERSION}")


def _upgrade_3(s: Session) -> None:
    """Schema 3 kept the built-in feedback signals' values in four columns of their own; 4 keeps every signal's by
    name in one JSON column (``signals``): the values move there (a new ranking or a new response is novelty), the
    columns go. Executions judged before kept no record of an unexpected selection: that signal is absent."""
    from sqlalchemy import text

    conn = s.connection()
    conn.execute(text("ALTER TABLE feedback ADD COLUMN signals JSON"))
    rows = conn.execute(text("SELECT id, coverage_gain, new_signature, new_response, divergence FROM feedback")).all()
    value = "CAST(:v AS JSON)" if conn.dialect.name == "postgresql" else ":v"
    if rows:
        conn.execute(text(f"UPDATE feedback SET signals = {value} WHERE id = :id"), [
            {"id": r[0], "v": _json_dumps({"coverage": int(r[1] or 0), "novelty": bool(r[2]) or bool(r[3]),
                                           "divergence": r[4]})} for r in rows])
    for column in ("coverage_gain", "new_signature", "new_response", "divergence"):
        conn.execute(text(f"ALTER TABLE feedback DROP COLUMN {column}"))


#: how a database of an earlier schema version is brought up to this one (version -> upgrade, in one transaction)
UPGRADES = {"3": _upgrade_3}


class _Older(ValueError):
    """A corpus database of an earlier schema version that this ufuzz can upgrade (opened to read only)."""

    def __init__(self, version: str) -> None:
        super().__init__(f"corpus database has schema version {version}, this ufuzz reads version {SCHEMA_VERSION}: "
                         "`ufuzz corpus upgrade CAMPAIGN_DIR` (or `--db URL`) upgrades it in place, keeping every "
                         "record")
        self.version = version


class OlderSchema(CorpusDatabaseError):
    """:class:`_Older`, named by its URL (``version``: the schema version the database has)."""

    def __init__(self, message: str, version: str) -> None:
        super().__init__(message)
        self.version = version


def upgrade_database(url: str) -> str | None:
    """Bring the corpus database at ``url`` (an existing one: nothing is created) up to this schema version, in
    place; the version it had, None when it was this one already."""
    try:
        _open(url, CORPUS_TABLES, mode="read").dispose()
        return None
    except OlderSchema as exc:
        open_engine(url, CORPUS_TABLES).dispose()  # writing upgrades it (_check_schema)
        return exc.version


# ====================================================================== records handed back


@dataclass(frozen=True)
class CampaignRecord:
    id: str
    started_at: datetime
    finished_at: datetime | None
    config: dict[str, Any]
    backend: dict[str, Any]
    seed: int
    budget: int | None
    status: str
    message: str | None = None
    pid: int | None = None
    host: str | None = None
    heartbeat_at: datetime | None = None
    resumes: int = 0


@dataclass(frozen=True)
class SnapshotRecord:
    step: int
    seq: int
    taken_at: datetime
    data: bytes


@dataclass(frozen=True)
class MutantRecord:
    case_id: str
    parent_id: str | None
    seed_id: str
    checkpoint_id: str | None
    operator: str | None
    obligation_key: str | None
    target: str | None
    query: Query | None  # None when the operator produced nothing (rejected before a mutant existed)
    ops: tuple[StateOp, ...]
    depth: int
    valid: bool
    rejection_reason: str | None
    created_seq: int
    detail: str


@dataclass(frozen=True)
class ExecutionRecord:
    seq: int
    execution: Execution
    checkpoint_id: str | None
    is_parent: bool


@dataclass(frozen=True)
class FeedbackRecord:
    case_id: str
    seq: int | None
    signals: dict[str, Any]  # signal name -> its value (:mod:`ufuzz.engine.signals`)
    retained: bool


@dataclass(frozen=True)
class ErrorRecord:
    seq: int | None
    case_id: str | None
    operation: str
    message: str


def _execution_record(r: ExecutionRow) -> ExecutionRecord:
    return ExecutionRecord(seq=r.seq, checkpoint_id=r.checkpoint_id, is_parent=r.is_parent,
                           execution=Execution(case_id=r.case_id, state_key=r.state_key, query=r.query,
                                               top_ids=list(r.top_ids), top_scores=[float(x) for x in r.top_scores],
                                               top_texts=list(r.top_texts or []), response=r.response,
                                               abstained=r.abstained, error=r.error, seconds=r.seconds))


def _campaign_record(r: CampaignRow) -> CampaignRecord:
    return CampaignRecord(id=r.id, started_at=_utc(r.started_at), finished_at=_utc(r.finished_at),
                          config=dict(r.config or {}), backend=dict(r.backend or {}), seed=r.seed,
                          budget=r.budget, status=r.status, message=r.message, pid=r.pid, host=r.host,
                          heartbeat_at=_utc(r.heartbeat_at), resumes=r.resumes or 0)


# ====================================================================== the store


_Store = TypeVar("_Store", bound="SqlStore")


def _insert(table: Any) -> Any:
    """A window writer that bulk-inserts row dicts into ``table`` (one executemany)."""
    def write(conn: Connection, rows: list[dict[str, Any]]) -> None:
        conn.execute(insert(table), rows)
    write.__qualname__ = f"insert_{table.name}"
    return write


def _replace(table: Any, key: str) -> Any:
    """A window writer that replaces rows of ``table`` by (campaign_id, ``key``): re-recording an id replaces
    it, as the ORM's merge did, in two bulk statements."""
    col = table.c[key]

    def write(conn: Connection, rows: list[dict[str, Any]]) -> None:
        latest = {(r["campaign_id"], r[key]): r for r in rows}  # the last recording of an id wins
        by_campaign: dict[str, list[str]] = {}
        for cid, rid in latest:
            by_campaign.setdefault(cid, []).append(rid)
        for cid, ids in by_campaign.items():
            for i in range(0, len(ids), 500):
                conn.execute(delete(table).where(table.c.campaign_id == cid, col.in_(ids[i:i + 500])))
        conn.execute(insert(table), list(latest.values()))
    write.__qualname__ = f"replace_{table.name}"
    return write


_WRITE_EXECUTIONS = _insert(ExecutionRow.__table__)
_WRITE_NATIVE_IDS = _insert(NativeIdsRow.__table__)
_WRITE_FEEDBACK = _insert(FeedbackRow.__table__)
_WRITE_ERRORS = _insert(ErrorRow.__table__)
_WRITE_MUTANTS = _replace(MutantRow.__table__, "case_id")
_WRITE_SEEDS = _replace(SeedRow.__table__, "seed_id")
_WRITE_CHECKPOINTS = _replace(CheckpointRow.__table__, "id")


def _write_snapshot(conn: Connection, payloads: list[dict[str, Any]]) -> None:
    t = SnapshotRow.__table__
    for row in payloads:
        conn.execute(delete(t).where(t.c.campaign_id == row["campaign_id"]))
        conn.execute(insert(t), [row])


def _write_heartbeat(conn: Connection, payloads: list[tuple[str, datetime]]) -> None:
    t = CampaignRow.__table__
    for cid, at in payloads:
        conn.execute(update(t).where(t.c.id == cid).values(heartbeat_at=at))


class SqlStore:
    """What every store over the corpus database shares: its own private engine on ``url`` (creating
    ``tables``), sessions, :meth:`_tx` for a committed write, ``close`` and use as a context manager.
    ``url`` is kept with the password hidden, for messages.

    Writes go through :meth:`_write`: committed at once, or buffered in an attached
    :class:`~ufuzz.corpus.window.WriteWindow` (see the module docstring on durability)."""

    def __init__(self, url: str, tables: list[Any], *, echo: bool = False, readonly: bool = False) -> None:
        self._engine = open_engine(url, tables, echo=echo, readonly=readonly)
        self.readonly = readonly
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)
        self.url = make_url(url).render_as_string(hide_password=True)
        self.window: Any = None  # a WriteWindow while a campaign batches its writes

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self: _Store) -> _Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[Session]:
        """One transaction, committed on exit: every public write is one of these."""
        with self._sessions() as s, s.begin():
            yield s

    def open_window(self, **limits: Any) -> Any:
        """A write window on this store's database (``max_records``, ``max_seconds``); attach it to every store
        whose writes it should batch (:meth:`attach`)."""
        from ufuzz.corpus.window import WriteWindow

        return WriteWindow(self._engine, **limits)

    def attach(self, window: Any) -> None:
        """Buffer this store's writes in ``window`` (None: commit each write at once again)."""
        self.window = window

    def _write(self, writer: Any, payload: Any) -> None:
        if self.window is not None:
            self.window.add(writer, payload)
            return
        with self._engine.begin() as conn:
            writer(conn, [payload])


class CorpusStore(SqlStore):
    """Scheduler-facing store of one database (any number of campaigns in it)."""

    def __init__(self, url: str, *, echo: bool = False, readonly: bool = False) -> None:
        super().__init__(url, CORPUS_TABLES, echo=echo, readonly=readonly)
        self._lock = threading.Lock()
        self._seq: dict[str, int] = {}
        self._known: set[str] = set()

    @classmethod
    def for_campaign_dir(cls, campaign_dir: str | Path) -> CorpusStore:
        return cls(default_url(campaign_dir))

    def _require(self, s: Session, campaign_id: str) -> None:
        if campaign_id in self._known:
            return
        if s.get(CampaignRow, campaign_id) is None:
            raise KeyError(f"unknown campaign {campaign_id!r} in {self.url}")
        self._known.add(campaign_id)

    def _known_campaign(self, campaign_id: str) -> None:
        if campaign_id not in self._known:
            with self._sessions() as s:
                self._require(s, campaign_id)

    # ------------------------------------------------------------------ campaigns

    def start_campaign(self, campaign_id: str | None = None, *, config: dict[str, Any],
                       backend: dict[str, Any], seed: int, budget: int | None, status: str = "running",
                       pid: int | None = None, host: str | None = None) -> str:
        """Create a campaign and return its id (a fresh time-stamped one when ``campaign_id`` is None).
        ``pid``/``host`` name the process that runs it (``ufuzz status`` checks it is alive).

        Raises ``ValueError`` if the campaign exists (use :meth:`resume_campaign`).
        """
        if campaign_id is None:
            campaign_id = f"{utcnow():%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
        with self._tx() as s:
            if s.get(CampaignRow, campaign_id) is not None:
                raise ValueError(f"campaign {campaign_id!r} already exists in {self.url}; resume it instead")
            now = utcnow()
            row = CampaignRow(id=campaign_id, started_at=now, finished_at=None, config=dict(config),
                              backend=dict(backend), seed=int(seed), budget=budget, status=status, pid=pid,
                              host=host, heartbeat_at=now, resumes=0)
            s.add(row)
        self._known.add(campaign_id)
        return campaign_id

    def resume_campaign(self, campaign_id: str, *, pid: int | None = None, host: str | None = None,
                        budget: int | None = None) -> CampaignRecord:
        """Mark an existing campaign running again (in process ``pid`` on ``host``; with a new ``budget`` when
        given); sequence numbers continue after the last one."""
        with self._tx() as s:
            row = s.get(CampaignRow, campaign_id)
            if row is None:
                raise KeyError(f"unknown campaign {campaign_id!r} in {self.url}")
            row.status = "running"
            row.finished_at = None
            row.message = None
            row.pid, row.host, row.heartbeat_at = pid, host, utcnow()
            row.resumes = (row.resumes or 0) + 1
            if budget is not None:
                row.budget = budget
        self._known.add(campaign_id)
        with self._lock:
            self._seq.pop(campaign_id, None)  # re-read the high-water mark
        return _campaign_record(row)

    def finish_campaign(self, campaign_id: str, status: str = "budget_spent",
                        message: str | None = None) -> CampaignRecord:
        """Record how the campaign ended (its exit reason, and the error's message) and commit."""
        with self._tx() as s:
            row = s.get(CampaignRow, campaign_id)
            if row is None:
                raise KeyError(f"unknown campaign {campaign_id!r} in {self.url}")
            row.status = status
            row.message = message
            row.finished_at = utcnow()
        return _campaign_record(row)

    def set_status(self, campaign_id: str, status: str) -> None:
        with self._tx() as s:
            row = s.get(CampaignRow, campaign_id)
            if row is None:
                raise KeyError(f"unknown campaign {campaign_id!r} in {self.url}")
            row.status = status

    def heartbeat(self, campaign_id: str) -> None:
        """The campaign's process is alive: with the next window when one is open, else at once."""
        self._write(_write_heartbeat, (campaign_id, utcnow()))

    def heartbeat_now(self, campaign_id: str) -> None:
        """Commit a heartbeat at once, whatever window is open (from a timer, between windows)."""
        with self._engine.begin() as conn:
            _write_heartbeat(conn, [(campaign_id, utcnow())])

    def campaign(self, campaign_id: str) -> CampaignRecord | None:
        with self._sessions() as s:
            row = s.get(CampaignRow, campaign_id)
            return None if row is None else _campaign_record(row)

    def campaigns(self) -> list[CampaignRecord]:
        with self._sessions() as s:
            rows = s.scalars(select(CampaignRow).order_by(CampaignRow.started_at, CampaignRow.id)).all()
            return [_campaign_record(r) for r in rows]

    # ------------------------------------------------------------------ resume snapshots

    def snapshot_write(self, campaign_id: str, *, step: int, seq: int, data: bytes) -> tuple[Any, Any]:
        """The (writer, payload) of a snapshot, for :meth:`WriteWindow.flush`'s ``extra``: the snapshot is
        committed in the same transaction as the window it describes."""
        return _write_snapshot, {"campaign_id": campaign_id, "step": int(step), "seq": int(seq),
                                 "taken_at": utcnow(), "data": bytes(data)}

    def heartbeat_write(self, campaign_id: str) -> tuple[Any, Any]:
        return _write_heartbeat, (campaign_id, utcnow())

    def snapshot(self, campaign_id: str) -> SnapshotRecord | None:
        """The latest resume snapshot of the campaign, if one was committed."""
        with self._sessions() as s:
            row = s.get(SnapshotRow, campaign_id)
            if row is None:
                return None
            return SnapshotRecord(step=row.step, seq=row.seq, taken_at=_utc(row.taken_at), data=bytes(row.data))

    def rollback(self, campaign_id: str, *, step: int, seq: int) -> list[str]:
        """Remove what the campaign committed after step ``step`` (``seq`` executions): the records a resume
        redoes from its snapshot. ``step`` < 0 removes every record of the campaign but the campaign row.
        Returns the case ids of the removed mutants (the oracle side forgets what it holds about them)."""
        m, e, f, r = MutantRow.__table__, ExecutionRow.__table__, FeedbackRow.__table__, ErrorRow.__table__
        def after(t: Any) -> Any:
            return (t.c.step > step) | t.c.step.is_(None) if step < 0 else t.c.step > step

        with self._engine.begin() as conn:
            gone = [row[0] for row in conn.execute(select(m.c.case_id).where(m.c.campaign_id == campaign_id,
                                                                             after(m)))]
            for t in (m, f, r):
                conn.execute(delete(t).where(t.c.campaign_id == campaign_id, after(t)))
            for t in (e, NativeIdsRow.__table__):
                conn.execute(delete(t).where(t.c.campaign_id == campaign_id, t.c.seq > seq))
            if step < 0:
                for t in (SeedRow.__table__, CheckpointRow.__table__, SnapshotRow.__table__):
                    conn.execute(delete(t).where(t.c.campaign_id == campaign_id))
        with self._lock:
            self._seq.pop(campaign_id, None)
        return gone

    # ------------------------------------------------------------------ sequence numbers

    def next_seq(self, campaign_id: str) -> int:
        """Allocate the next execution sequence number of the campaign (1, 2, ...)."""
        with self._lock:
            if campaign_id not in self._seq:
                self._seq[campaign_id] = self._max_seq(campaign_id)
            self._seq[campaign_id] += 1
            return self._seq[campaign_id]

    def last_seq(self, campaign_id: str) -> int:
        with self._lock:
            if campaign_id not in self._seq:
                self._seq[campaign_id] = self._max_seq(campaign_id)
            return self._seq[campaign_id]

    def _max_seq(self, campaign_id: str) -> int:
        with self._sessions() as s:
            seqs = [s.scalar(select(func.max(ExecutionRow.seq)).where(ExecutionRow.campaign_id == campaign_id)),
                    s.scalar(select(func.max(MutantRow.created_seq)).where(MutantRow.campaign_id == campaign_id))]
            return max([x for x in seqs if x is not None], default=0)

    # ------------------------------------------------------------------ seeds and checkpoints

    def record_checkpoint(self, campaign_id: str, checkpoint: Checkpoint) -> None:
        self._known_campaign(campaign_id)
        self._write(_WRITE_CHECKPOINTS, {"campaign_id": campaign_id, "id": checkpoint.id,
                                         "data": checkpoint.to_dict(), "memory_count": len(checkpoint.memories)})

    def record_seed(self, campaign_id: str, seed: Seed) -> None:
        self._known_campaign(campaign_id)
        self._write(_WRITE_SEEDS, {"campaign_id": campaign_id, "seed_id": seed.id,
                                   "checkpoint_id": seed.checkpoint_id, "query": seed.query.to_dict(),
                                   "descriptor": seed.descriptor.to_dict()})

    def checkpoints(self, campaign_id: str) -> dict[str, Checkpoint]:
        with self._sessions() as s:
            rows = s.scalars(select(CheckpointRow).where(CheckpointRow.campaign_id == campaign_id)
                             .order_by(CheckpointRow.id)).all()
            return {r.id: Checkpoint.from_dict(r.data) for r in rows}

    def checkpoint(self, campaign_id: str, checkpoint_id: str) -> Checkpoint | None:
        with self._sessions() as s:
            row = s.get(CheckpointRow, (campaign_id, checkpoint_id))
            return None if row is None else Checkpoint.from_dict(row.data)

    def seeds(self, campaign_id: str) -> list[Seed]:
        with self._sessions() as s:
            rows = s.scalars(select(SeedRow).where(SeedRow.campaign_id == campaign_id)
                             .order_by(SeedRow.seed_id)).all()
            return [Seed(id=r.seed_id, checkpoint_id=r.checkpoint_id, query=Query.from_dict(r.query),
                         descriptor=MutationDescriptor.from_dict(r.descriptor)) for r in rows]

    # ------------------------------------------------------------------ mutants

    def record_mutant(self, campaign_id: str, case: FuzzCase | None = None, *, valid: bool,
                      case_id: str | None = None, parent_id: str | None = None, seed_id: str | None = None,
                      checkpoint_id: str | None = None, operator: str | None = None, target: str | None = None,
                      obligation: Obligation | str | None = None, depth: int | None = None,
                      reason: str | None = None, rejection_reason: str | None = None,
                      created_seq: int | None = None, step: int | None = None) -> None:
        """Record a generated mutant, valid or rejected (committed at once, or with the window). Re-recording
        a case id replaces it.

        ``case`` is the mutant when the operator produced one; when it produced nothing (rejected early)
        pass ``case=None`` with ``case_id``, ``seed_id`` and whatever else is known. Explicit keywords win
        over the case's own fields. ``reason`` is an alias of ``rejection_reason``.
        """
        cid = case_id or (case.id if case is not None else None)
        sid = seed_id or (case.seed_id if case is not None else None)
        if not cid or not sid:
            raise ValueError("record_mutant needs a case id and a seed id (pass case= or case_id=/seed_id=)")
        self._known_campaign(campaign_id)
        ob = obligation if obligation is not None else (case.obligation if case is not None else None)
        ob_key = ob.key if isinstance(ob, Obligation) else ob
        if target is None and isinstance(ob, Obligation):
            target = ob.target
        why = rejection_reason if rejection_reason is not None else reason
        if created_seq is None:
            created_seq = self.last_seq(campaign_id)
        cp = checkpoint_id or (case.checkpoint_id if case is not None else None)
        if cp is None:
            with self._sessions() as s:
                cp = s.scalar(select(SeedRow.checkpoint_id).where(SeedRow.campaign_id == campaign_id,
                                                                  SeedRow.seed_id == sid))
        self._write(_WRITE_MUTANTS, {
            "campaign_id": campaign_id, "case_id": cid,
            "parent_id": parent_id or (case.parent_id if case is not None else None), "seed_id": sid,
            "checkpoint_id": cp, "operator": operator or (case.operator if case is not None else None),
            "obligation_key": ob_key, "target": target,
            "query": case.query.to_dict() if case is not None else None,
            "ops": [o.to_dict() for o in case.ops] if case is not None else [],
            "depth": depth if depth is not None else (case.depth if case is not None else 0),
            "valid": bool(valid), "rejection_reason": why or None, "created_seq": int(created_seq),
            "detail": (case.detail if case is not None else "") or "", "step": step})

    def mutants(self, campaign_id: str, *, valid: bool | None = None) -> list[MutantRecord]:
        q = select(MutantRow).where(MutantRow.campaign_id == campaign_id)
        if valid is not None:
            q = q.where(MutantRow.valid == valid)
        with self._sessions() as s:
            rows = s.scalars(q.order_by(MutantRow.created_seq, MutantRow.case_id)).all()
            return [MutantRecord(
                case_id=r.case_id, parent_id=r.parent_id, seed_id=r.seed_id, checkpoint_id=r.checkpoint_id,
                operator=r.operator, obligation_key=r.obligation_key, target=r.target,
                query=Query.from_dict(r.query) if r.query else None, ops=tuple(StateOp.from_dict(o) for o in r.ops),
                depth=r.depth, valid=r.valid, rejection_reason=r.rejection_reason, created_seq=r.created_seq,
                detail=r.detail or "") for r in rows]

    # ------------------------------------------------------------------ executions

    def _checkpoint_of_case(self, s: Session, campaign_id: str, case_id: str) -> str | None:
        cp = s.scalar(select(MutantRow.checkpoint_id).where(MutantRow.campaign_id == campaign_id,
                                                            MutantRow.case_id == case_id))
        if cp is None:
            cp = s.scalar(select(SeedRow.checkpoint_id).where(SeedRow.campaign_id == campaign_id,
                                                              SeedRow.seed_id == case_id))
        return cp

    def record_execution(self, campaign_id: str, execution: Execution, *, is_parent: bool = False,
                         checkpoint_id: str | None = None, seq: int | None = None, step: int | None = None) -> int:
        """Record one execution (committed at once, or with the window); returns its sequence number.

        ``checkpoint_id`` attributes the retrieved ids for coverage; when omitted it is looked up from the
        recorded mutant or seed with the execution's case id.
        """
        self._known_campaign(campaign_id)
        if seq is None:
            seq = self.next_seq(campaign_id)
        else:
            with self._lock:
                if campaign_id not in self._seq:
                    self._seq[campaign_id] = self._max_seq(campaign_id)
                self._seq[campaign_id] = max(self._seq[campaign_id], seq)
        if checkpoint_id is None:
            with self._sessions() as s:
                checkpoint_id = self._checkpoint_of_case(s, campaign_id, execution.case_id)
        self._write(_WRITE_EXECUTIONS, {
            "campaign_id": campaign_id, "seq": seq, "case_id": execution.case_id, "checkpoint_id": checkpoint_id,
            "state_key": execution.state_key, "query": execution.query, "top_ids": list(execution.top_ids),
            "top_scores": [float(x) for x in execution.top_scores], "top_texts": list(execution.top_texts),
            "response": execution.response, "abstained": bool(execution.abstained), "error": execution.error,
            "seconds": float(execution.seconds), "is_parent": bool(is_parent), "step": step})
        if execution.native_ids is not None:
            self._write(_WRITE_NATIVE_IDS, {"campaign_id": campaign_id, "seq": seq,
                                            "ids": [str(x) for x in execution.native_ids]})
        return seq

    def executions(self, campaign_id: str, *, case_id: str | None = None,
                   is_parent: bool | None = None) -> list[ExecutionRecord]:
        q = select(ExecutionRow).where(ExecutionRow.campaign_id == campaign_id)
        if case_id is not None:
            q = q.where(ExecutionRow.case_id == case_id)
        if is_parent is not None:
            q = q.where(ExecutionRow.is_parent == is_parent)
        with self._sessions() as s:
            rows = s.scalars(q.order_by(ExecutionRow.seq)).all()
            return [_execution_record(r) for r in rows]

    def executions_of(self, campaign_id: str, case_ids: Iterable[str]) -> dict[str, list[ExecutionRecord]]:
        """Every execution of each case in ``case_ids``, in sequence order, with the system's own top-k ids
        where recorded (``Execution.native_ids``): what triage shows of a failure and its parent."""
        wanted = sorted(set(case_ids))
        out: dict[str, list[ExecutionRecord]] = {c: [] for c in wanted}
        with self._sessions() as s:
            for i in range(0, len(wanted), 500):
                rows = s.scalars(select(ExecutionRow).where(ExecutionRow.campaign_id == campaign_id,
                                                            ExecutionRow.case_id.in_(wanted[i:i + 500]))
                                 .order_by(ExecutionRow.seq)).all()
                for r in rows:
                    out[r.case_id].append(_execution_record(r))
        return self._with_native_ids(campaign_id, out)

    def executions_asking(self, campaign_id: str, asked: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[
            ExecutionRecord]]:
        """Every execution of each (state key, question) in ``asked``, whichever case it was recorded under: a
        parent asking what another case already asked on the same state is served that case's execution (the
        executor caches per state and question), so nothing is recorded under the parent's own id."""
        wanted = set(asked)
        out: dict[tuple[str, str], list[ExecutionRecord]] = {a: [] for a in wanted}
        with self._sessions() as s:
            for state_key in sorted({k for k, _q in wanted}):
                rows = s.scalars(select(ExecutionRow).where(ExecutionRow.campaign_id == campaign_id,
                                                            ExecutionRow.state_key == state_key)
                                 .order_by(ExecutionRow.seq)).all()
                for r in rows:
                    if (state_key, r.query) in out:
                        out[(state_key, r.query)].append(_execution_record(r))
        return self._with_native_ids(campaign_id, out)

    def _with_native_ids(self, campaign_id: str, out: dict[Any, list[ExecutionRecord]]) -> dict[Any, list[
            ExecutionRecord]]:
        """``out`` with each execution's system-own top-k ids set where the backend reported them."""
        natives = self.native_ids(campaign_id, [e.seq for recs in out.values() for e in recs])
        for recs in out.values():
            for e in recs:
                if e.seq in natives:
                    e.execution.native_ids = natives[e.seq]
        return out

    def native_ids(self, campaign_id: str, seqs: Iterable[int]) -> dict[int, list[str]]:
        """The system's own top-k ids of the executions numbered ``seqs``, where the backend reported them."""
        wanted = sorted({int(x) for x in seqs})
        if not wanted:
            return {}
        with self._sessions() as s:
            rows = s.scalars(select(NativeIdsRow).where(NativeIdsRow.campaign_id == campaign_id,
                                                        NativeIdsRow.seq.in_(wanted))).all()
            return {r.seq: [str(x) for x in r.ids] for r in rows}

    # ------------------------------------------------------------------ feedback and errors

    def record_feedback(self, campaign_id: str, case_id: str, signals: dict[str, Any], retained: bool, *,
                        seq: int | None = None, step: int | None = None) -> None:
        """Record what the feedback signals made of a mutant's execution (name -> a JSON value) and whether it was
        kept."""
        self._known_campaign(campaign_id)
        self._write(_WRITE_FEEDBACK, {"campaign_id": campaign_id, "case_id": case_id, "seq": seq,
                                      "signals": dict(signals), "retained": bool(retained), "step": step})

    def feedback(self, campaign_id: str, *, case_id: str | None = None) -> list[FeedbackRecord]:
        q = select(FeedbackRow).where(FeedbackRow.campaign_id == campaign_id)
        if case_id is not None:
            q = q.where(FeedbackRow.case_id == case_id)
        with self._sessions() as s:
            rows = s.scalars(q.order_by(FeedbackRow.id)).all()
            return [FeedbackRecord(case_id=r.case_id, seq=r.seq, signals=dict(r.signals or {}), retained=r.retained)
                    for r in rows]

    def retained_case_ids(self, campaign_id: str) -> list[str]:
        """Case ids with retaining feedback, in the order they were retained."""
        with self._sessions() as s:
            rows = s.execute(select(FeedbackRow.case_id).where(FeedbackRow.campaign_id == campaign_id,
                                                               FeedbackRow.retained.is_(True))
                             .order_by(FeedbackRow.id)).scalars().all()
        seen: dict[str, None] = {}
        for r in rows:
            seen.setdefault(r, None)
        return list(seen)

    def record_error(self, campaign_id: str, *, operation: str, message: str, case_id: str | None = None,
                     seq: int | None = None, step: int | None = None) -> None:
        """Record a backend fault (a ``BackendError`` the engine caught)."""
        self._known_campaign(campaign_id)
        self._write(_WRITE_ERRORS, {"campaign_id": campaign_id, "seq": seq, "case_id": case_id,
                                    "operation": operation, "message": message, "step": step})

    def errors(self, campaign_id: str) -> list[ErrorRecord]:
        with self._sessions() as s:
            rows = s.scalars(select(ErrorRow).where(ErrorRow.campaign_id == campaign_id)
                             .order_by(ErrorRow.id)).all()
            return [ErrorRecord(seq=r.seq, case_id=r.case_id, operation=r.operation, message=r.message)
                    for r in rows]

    # ------------------------------------------------------------------ summary

    def summary(self, campaign_id: str) -> dict[str, Any]:
        """Counts for ``ufuzz status``: :meth:`counted` in the store's shape (:meth:`CampaignSummary.counts`)."""
        return self.counted(campaign_id).counts()

    def execution_seconds(self, campaign_id: str) -> float | None:
        """The mean time of an execution that did not fail — the system's own time per question (its retrieval and
        answer calls) — or None before any."""
        with self._sessions() as s:
            mean = s.scalar(select(func.avg(ExecutionRow.seconds))
                            .where(ExecutionRow.campaign_id == campaign_id, ExecutionRow.error.is_(None)))
        return None if mean is None else float(mean)

    def result_counts(self, campaign_id: str) -> dict[int, int]:
        """How many memories the executions that did not fail were given back (length of the top-k -> executions)."""
        with self._sessions() as s:
            rows = s.scalars(select(ExecutionRow.top_ids).where(ExecutionRow.campaign_id == campaign_id,
                                                               ExecutionRow.error.is_(None))).all()
        out: dict[int, int] = {}
        for ids in rows:
            out[len(ids or [])] = out.get(len(ids or []), 0) + 1
        return out

    def executions_by_operator(self, campaign_id: str) -> dict[str, int]:
        """Mutant executions per operator (where the budget went), most first."""
        with self._sessions() as s:
            rows = s.execute(select(MutantRow.operator, func.count())
                             .select_from(ExecutionRow)
                             .join(MutantRow, (MutantRow.campaign_id == ExecutionRow.campaign_id)
                                   & (MutantRow.case_id == ExecutionRow.case_id))
                             .where(ExecutionRow.campaign_id == campaign_id, ExecutionRow.is_parent.is_(False))
                             .group_by(MutantRow.operator)).all()
        return dict(sorted(((str(op or "?"), int(n)) for op, n in rows), key=lambda kv: (-kv[1], kv[0])))

    def counted(self, campaign_id: str) -> CampaignSummary:
        """The campaign's summary as its records count it. Coverage is distinct checkpoint memories reached in
        any top-k of a non-failed execution over all memories of the campaign's checkpoints; ids reached that
        no checkpoint has (memories added by state mutants) are counted in ``coverage_extra``."""
        with self._sessions() as s:
            camp = s.get(CampaignRow, campaign_id)
            if camp is None:
                raise KeyError(f"unknown campaign {campaign_id!r} in {self.url}")

            def count(model: Any, *conds: Any) -> int:
                return int(s.scalar(select(func.count()).select_from(model)
                                    .where(model.campaign_id == campaign_id, *conds)) or 0)

            executions = count(ExecutionRow)
            parents = count(ExecutionRow, ExecutionRow.is_parent.is_(True))
            control = ExecutionRow.case_id.like("%" + CONTROL_SUFFIX)  # the oracle's executions, not the search's
            controls = count(ExecutionRow, ExecutionRow.is_parent.is_(True), control)
            failed = count(ExecutionRow, ExecutionRow.error.is_not(None))
            valid = count(MutantRow, MutantRow.valid.is_(True))
            rejected = count(MutantRow, MutantRow.valid.is_(False))
            retained = count(FeedbackRow, FeedbackRow.retained.is_(True))
            errors = count(ErrorRow)

            members: dict[str, set[str]] = {}
            for cid, data in s.execute(select(CheckpointRow.id, CheckpointRow.data)
                                       .where(CheckpointRow.campaign_id == campaign_id)):
                members[cid] = {str(m["id"]) for m in data.get("memories", [])}
            reached: set[tuple[str, str]] = set()
            extra: set[tuple[str, str]] = set()
            # (a control is the oracle's question, not the search's: the campaign's coverage leaves it out too)
            for cid, top in s.execute(select(ExecutionRow.checkpoint_id, ExecutionRow.top_ids)
                                      .where(ExecutionRow.campaign_id == campaign_id,
                                             ExecutionRow.error.is_(None), ~control)):
                if cid is None:
                    continue
                own = members.get(cid, set())
                for m in top or ():
                    (reached if m in own else extra).add((cid, m))
        return CampaignSummary(campaign=campaign_id, status=camp.status, executions=executions, mutants_valid=valid,
                               mutants_rejected=rejected, retained=retained, coverage=len(reached),
                               coverage_total=sum(len(v) for v in members.values()), errors=errors,
                               parent_executions=parents, control_executions=controls, failed_executions=failed,
                               coverage_extra=len(extra))
