"""The oracle side of the corpus database: failures and references.

These tables live in the same database as the corpus (:mod:`ufuzz.corpus.store`) but only this
module's :class:`FailureStore` writes or reads them (with the oracle's half of a campaign's resume snapshot,
which holds references). During a campaign its writes are buffered in the campaign's write window and
committed in the same transactions as the corpus records (:mod:`ufuzz.corpus.window`). The engine records its progress through a
:class:`~ufuzz.corpus.store.CorpusStore`, which cannot reach either table, and the scheduler holds no store at
all, so nothing that schedules or mutates can see an expected answer or which cases failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Connection,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from ufuzz.corpus.store import ID, Base, CampaignRow, MetaRow, SqlStore, _replace, utcnow
from ufuzz.model import Reference

__all__ = ["FailureStore", "FailureRecord", "FailureRow", "ReferenceRow", "OracleSnapshotRow"]


class FailureRow(Base):
    __tablename__ = "failures"
    __table_args__ = (Index("ix_failures_campaign_operator", "campaign_id", "operator"),
                      Index("ix_failures_campaign_cause", "campaign_id", "cause_key"))
    campaign_id: Mapped[str] = mapped_column(ID, ForeignKey("campaigns.id", ondelete="CASCADE"),
                                             primary_key=True)
    failure_key: Mapped[str] = mapped_column(ID, primary_key=True)
    case_id: Mapped[str] = mapped_column(ID)
    seed_id: Mapped[str] = mapped_column(ID)
    operator: Mapped[str | None] = mapped_column(String(64), nullable=True)
    kind: Mapped[str] = mapped_column(String(64))
    stage: Mapped[str] = mapped_column(String(64))  # the level: selection | response
    detail: Mapped[dict[str, Any]] = mapped_column(JSON)
    first_seq: Mapped[int | None] = mapped_column(Integer, nullable=True)
    count: Mapped[int] = mapped_column(Integer)
    cause_key: Mapped[str] = mapped_column(ID, default="")
    responder: Mapped[str | None] = mapped_column(String(128), nullable=True)  # None at selection level
    origin: Mapped[str] = mapped_column(String(16), default="mutant")  # mutant | baseline


class ReferenceRow(Base):
    __tablename__ = "references"  # a reserved word: SQLAlchemy quotes it on every dialect
    campaign_id: Mapped[str] = mapped_column(ID, ForeignKey("campaigns.id", ondelete="CASCADE"),
                                             primary_key=True)
    case_id: Mapped[str] = mapped_column(ID, primary_key=True)
    reference: Mapped[dict[str, Any]] = mapped_column(JSON)
    note: Mapped[str] = mapped_column(Text, default="")


class OracleSnapshotRow(Base):
    """The oracle's half of a campaign's resume snapshot (references, parents' verdicts, failure tallies and
    counts after step ``step``), committed with the engine's half (:class:`ufuzz.corpus.store.SnapshotRow`)."""

    __tablename__ = "oracle_snapshots"
    campaign_id: Mapped[str] = mapped_column(ID, ForeignKey("campaigns.id", ondelete="CASCADE"),
                                             primary_key=True)
    step: Mapped[int] = mapped_column(Integer)
    taken_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    data: Mapped[bytes] = mapped_column(LargeBinary)


FAILURE_TABLES = [MetaRow.__table__, CampaignRow.__table__, FailureRow.__table__, ReferenceRow.__table__,
                  OracleSnapshotRow.__table__]

_WRITE_REFERENCES = _replace(ReferenceRow.__table__, "case_id")


def _write_failures(conn: Connection, events: list[dict[str, Any]]) -> None:
    """Buffered failure occurrences: one insert per new key, one count increment per known key."""
    t = FailureRow.__table__
    first: dict[tuple[str, str], dict[str, Any]] = {}
    seen: dict[tuple[str, str], int] = {}
    low: dict[tuple[str, str], int | None] = {}
    for ev in events:
        k = (ev["campaign_id"], ev["failure_key"])
        first.setdefault(k, ev)
        seen[k] = seen.get(k, 0) + 1
        if ev["first_seq"] is not None and (low.get(k) is None or ev["first_seq"] < low[k]):
            low[k] = ev["first_seq"]
    for k, n in seen.items():
        where = (t.c.campaign_id == k[0], t.c.failure_key == k[1])
        if conn.execute(update(t).where(*where).values(count=t.c.count + n)).rowcount:
            if low.get(k) is not None:
                conn.execute(update(t).where(*where, t.c.first_seq.is_(None) | (t.c.first_seq > low[k]))
                             .values(first_seq=low[k]))
            continue
        conn.execute(insert(t), [{**first[k], "count": n, "first_seq": low.get(k)}])


def _write_oracle_snapshot(conn: Connection, payloads: list[dict[str, Any]]) -> None:
    t = OracleSnapshotRow.__table__
    for row in payloads:
        conn.execute(delete(t).where(t.c.campaign_id == row["campaign_id"]))
        conn.execute(insert(t), [row])


@dataclass(frozen=True)
class FailureRecord:
    failure_key: str
    case_id: str
    seed_id: str
    operator: str | None
    kind: str
    stage: str
    detail: dict[str, Any]
    first_seq: int | None
    count: int
    cause_key: str = ""
    responder: str | None = None
    origin: str = "mutant"

    @property
    def counts(self) -> bool:
        """A failure of the memory system under test, not of the opt-in top-evidence reader."""
        return self.responder is None or not self.responder.startswith("reader:")


class FailureStore(SqlStore):
    """Oracle-facing store of one campaign: references by case id, failures de-duplicated by key."""

    def __init__(self, url: str, campaign_id: str, *, echo: bool = False, readonly: bool = False) -> None:
        super().__init__(url, FAILURE_TABLES, echo=echo, readonly=readonly)
        self.campaign_id = campaign_id
        self._counts: dict[str, int] | None = None  # occurrences per key, as recorded (loaded on first use)
        with self._sessions() as s:
            if s.get(CampaignRow, campaign_id) is None:
                self.close()
                raise KeyError(f"unknown campaign {campaign_id!r} in {self.url}")

    # ------------------------------------------------------------------ references

    def record_reference(self, case_id: str, reference: Reference) -> None:
        """Store (or replace) the reference of a case (committed at once, or with the window)."""
        self._write(_WRITE_REFERENCES, {"campaign_id": self.campaign_id, "case_id": case_id,
                                        "reference": reference.to_dict(), "note": ""})

    def reference(self, case_id: str) -> Reference | None:
        with self._sessions() as s:
            row = s.get(ReferenceRow, (self.campaign_id, case_id))
            return None if row is None else Reference.from_dict(row.reference)

    def references(self) -> dict[str, Reference]:
        with self._sessions() as s:
            rows = s.scalars(select(ReferenceRow).where(ReferenceRow.campaign_id == self.campaign_id)).all()
            return {r.case_id: Reference.from_dict(r.reference) for r in rows}

    # ------------------------------------------------------------------ failures

    def record(self, failure: Any, reference: Reference | None = None, *, seq: int | None = None) -> int:
        """Record an oracle ``Failure`` (key, case_id, seed_id, operator, target, kind, stage, offending,
        detail) and, if given, the reference it was judged against. Returns the key's count after."""
        if reference is not None:
            self.record_reference(failure.case_id, reference)
        detail = dict(getattr(failure, "detail", None) or {})
        if getattr(failure, "target", None) is not None:
            detail.setdefault("target", failure.target)
        if getattr(failure, "offending", None):
            detail.setdefault("offending", list(failure.offending))
        return self.record_failure(failure.key, case_id=failure.case_id, seed_id=failure.seed_id,
                                   operator=failure.operator or None, kind=failure.kind, stage=failure.stage,
                                   detail=detail, seq=seq, cause_key=getattr(failure, "cause", ""),
                                   responder=getattr(failure, "responder", None),
                                   origin=getattr(failure, "origin", "mutant"))

    def record_failure(self, failure_key: str, *, case_id: str, seed_id: str, operator: str | None,
                       kind: str, stage: str, detail: dict[str, Any] | None = None,
                       seq: int | None = None, cause_key: str = "", responder: str | None = None,
                       origin: str = "mutant") -> int:
        """Insert a failure or, if its key was seen, increment its count; commit. Returns the count after.

        The first occurrence's case and detail are kept; ``first_seq`` is the earliest sequence number
        reported for the key.
        """
        cid = self.campaign_id
        if self.window is not None:
            counts = self._count_map()
            counts[failure_key] = counts.get(failure_key, 0) + 1
            self.window.add(_write_failures, {
                "campaign_id": cid, "failure_key": failure_key, "case_id": case_id, "seed_id": seed_id,
                "operator": operator, "kind": kind, "stage": stage, "detail": _jsonable(detail or {}),
                "first_seq": seq, "cause_key": cause_key, "responder": responder, "origin": origin})
            return counts[failure_key]
        self._counts = None  # committed directly: re-read when next asked
        for _attempt in range(3):
            try:
                with self._tx() as s:
                    row = s.get(FailureRow, (cid, failure_key), with_for_update=True)
                    if row is None:
                        s.add(FailureRow(campaign_id=cid, failure_key=failure_key, case_id=case_id,
                                         seed_id=seed_id, operator=operator, kind=kind, stage=stage,
                                         detail=_jsonable(detail or {}), first_seq=seq, count=1,
                                         cause_key=cause_key, responder=responder, origin=origin))
                        return 1
                    # count + 1 in SQL, so concurrent writers never lose an increment
                    s.execute(update(FailureRow)
                              .where(FailureRow.campaign_id == cid, FailureRow.failure_key == failure_key)
                              .values(count=FailureRow.count + 1))
                    if seq is not None:
                        s.execute(update(FailureRow)
                                  .where(FailureRow.campaign_id == cid, FailureRow.failure_key == failure_key,
                                         (FailureRow.first_seq.is_(None)) | (FailureRow.first_seq > seq))
                                  .values(first_seq=seq))
                    return int(s.scalar(select(FailureRow.count).where(
                        FailureRow.campaign_id == cid, FailureRow.failure_key == failure_key)))
            except IntegrityError:
                # Another writer inserted the same key between our read and insert: count it as a repeat.
                continue
        raise RuntimeError(f"could not record failure {failure_key!r} after concurrent inserts")

    def _count_map(self) -> dict[str, int]:
        if self._counts is None:
            with self._sessions() as s:
                self._counts = dict(s.execute(select(FailureRow.failure_key, FailureRow.count)
                                              .where(FailureRow.campaign_id == self.campaign_id)).all())
        return self._counts

    def counts(self) -> dict[str, int]:
        """Occurrences per failure key as recorded so far (buffered ones included)."""
        return dict(self._count_map())

    # ------------------------------------------------------------------ resume snapshots

    def snapshot_write(self, *, step: int, data: bytes) -> tuple[Any, Any]:
        """The (writer, payload) of the oracle's snapshot half, for the window's flush."""
        return _write_oracle_snapshot, {"campaign_id": self.campaign_id, "step": int(step), "taken_at": utcnow(),
                                        "data": bytes(data)}

    def snapshot(self) -> tuple[int, bytes] | None:
        """(step, data) of the latest committed oracle snapshot."""
        with self._sessions() as s:
            row = s.get(OracleSnapshotRow, self.campaign_id)
            return None if row is None else (row.step, bytes(row.data))

    def rollback(self, counts: dict[str, int], removed_cases: list[str]) -> None:
        """Back to a snapshot: failures as ``counts`` says (keys it does not know are removed), and no
        reference for the mutants the corpus side removed (:meth:`CorpusStore.rollback`)."""
        t, r = FailureRow.__table__, ReferenceRow.__table__
        cid = self.campaign_id
        with self._engine.begin() as conn:
            now = dict(conn.execute(select(t.c.failure_key, t.c.count).where(t.c.campaign_id == cid)).all())
            for key, n in now.items():
                if key not in counts:
                    conn.execute(delete(t).where(t.c.campaign_id == cid, t.c.failure_key == key))
                elif counts[key] != n:
                    conn.execute(update(t).where(t.c.campaign_id == cid, t.c.failure_key == key)
                                 .values(count=counts[key]))
            for i in range(0, len(removed_cases), 500):
                conn.execute(delete(r).where(r.c.campaign_id == cid, r.c.case_id.in_(removed_cases[i:i + 500])))
        self._counts = {k: v for k, v in counts.items() if k in now}

    def reset(self) -> None:
        """Remove every failure, reference and snapshot of the campaign (a resume that starts over)."""
        with self._engine.begin() as conn:
            for t in (FailureRow.__table__, ReferenceRow.__table__, OracleSnapshotRow.__table__):
                conn.execute(delete(t).where(t.c.campaign_id == self.campaign_id))
        self._counts = {}

    def failures(self) -> list[FailureRecord]:
        with self._sessions() as s:
            rows = s.scalars(select(FailureRow).where(FailureRow.campaign_id == self.campaign_id)
                             .order_by(FailureRow.first_seq, FailureRow.failure_key)).all()
            return [FailureRecord(failure_key=r.failure_key, case_id=r.case_id, seed_id=r.seed_id,
                                  operator=r.operator, kind=r.kind, stage=r.stage, detail=dict(r.detail or {}),
                                  first_seq=r.first_seq, count=r.count, cause_key=r.cause_key or "",
                                  responder=r.responder, origin=r.origin or "mutant") for r in rows]

    def _system_mutant(self) -> Any:
        """The rows UF@B counts: mutant failures of the memory system (not baseline, not the reader's)."""
        return (FailureRow.campaign_id == self.campaign_id, FailureRow.origin == "mutant",
                (FailureRow.responder.is_(None)) | (~FailureRow.responder.startswith("reader:")))

    def unique_failures(self) -> list[dict[str, Any]]:
        """The system's mutant failures grouped by operator, kind and level, each with its number of
        distinct keys (``unique``), of causes and of occurrences; sorted by operator, kind, level."""
        with self._sessions() as s:
            rows = s.execute(
                select(FailureRow.operator, FailureRow.kind, FailureRow.stage,
                       func.count().label("unique"), func.count(FailureRow.cause_key.distinct()).label("causes"),
                       func.sum(FailureRow.count).label("occurrences"))
                .where(*self._system_mutant())
                .group_by(FailureRow.operator, FailureRow.kind, FailureRow.stage)).all()
        out = [{"operator": op, "kind": kind, "stage": stage, "unique": int(u), "causes": int(c),
                "occurrences": int(o or 0)} for op, kind, stage, u, c, o in rows]
        out.sort(key=lambda d: (d["operator"] or "", d["kind"], d["stage"]))
        return out

    def unique_failure_count(self) -> int:
        with self._sessions() as s:
            return int(s.scalar(select(func.count()).select_from(FailureRow).where(*self._system_mutant())) or 0)

    def cause_count(self) -> int:
        with self._sessions() as s:
            return int(s.scalar(select(func.count(FailureRow.cause_key.distinct()))
                                .where(*self._system_mutant())) or 0)


def _jsonable(value: Any) -> Any:
    """Detail dicts come from oracles and may hold tuples or sets; JSON columns need lists."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
