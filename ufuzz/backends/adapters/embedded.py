"""The embedded reference memory backend (``--backend embedded``).

Memory items live in SQLite (through SQLAlchemy 2 Core), vectors in numpy, embeddings come from the real
all-MiniLM-L6-v2 model (:mod:`ufuzz.backends.embedding`). Retrieval is dense cosine, BM25
(:mod:`ufuzz.backends.bm25`) or their reciprocal-rank fusion.

Copy-on-write states
--------------------
Storage is a tree of *nodes*: ``states(id, parent_id)``; ``items`` rows belong to one node and override
the rows of the same memory id in its ancestors (a ``whiteout`` row hides an inherited id after a hard
delete). A handle ("s12") names one node. ``fork(h)`` creates one empty child node for the new handle, so it
costs O(1) whatever the number of memories. A node with children is never written again: a write through
a handle whose node has children (or whose node already owns ``split_rows`` rows) first moves that handle
to a fresh empty child node. Hence writes in a fork never reach its parent or siblings, writes in the
parent never reach its forks, and releasing a handle only frees nodes no other handle depends on.

Materialized views (per node, cached): the parent's view (shared, not copied) with the rows this node
overrides masked out, plus one small block for the node's own rows. A write invalidates only the written
node's view, which by construction has no dependants.

Every write goes to SQLite; each live node's own rows are also kept in memory, so reads (get, list, the
rows a view is derived from) never query SQLite again, and the hot statements are plain driver SQL (no
SQLAlchemy compilation per call). With ``retrieval=bm25`` nothing is embedded: no vector is ever read.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import (
    Boolean,
    Column,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
)
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import StaticPool

from ufuzz.backends import bm25
from ufuzz.backends.embedding import DIM, MODEL_NAME, Embedder, default_embedder, model_version
from ufuzz.backends.options import Option
from ufuzz.backends.protocol import (
    BackendError,
    Capabilities,
    MemoryBackend,
    OpResult,
    Retrieved,
    StateHandle,
    StoredMemory,
)
from ufuzz.backends.states import StateTable
from ufuzz.model import Checkpoint, Memory

RRF_K = 60
#: candidates taken from each ranking before fusion (``max(RRF_DEPTH, k)``); fixed so that the fused
#: scores, and so the top-k order, do not depend on k for k <= RRF_DEPTH.
RRF_DEPTH = 100

# Abstention thresholds of the opt-in top-evidence reader (--reader top-evidence), per retrieval mode: a top score below it means "nothing relevant".
# Chosen by scoring 15 answerable questions and 10 unanswerable ones against a 16-memory personal checkpoint
# (the conformance checkpoint plus 10 memories; tests/backends/test_embedded_backend.py::test_abstain_threshold_*
# keeps the choice honest):
# - dense (cosine of normalized MiniLM vectors): the answering memory scored 0.45-0.85; the best memory for a
#   question about nothing stored ("capital of France", "pizza topping", "breakfast") scored 0.15-0.26, and
#   0.36-0.38 when the question shared only a name or a word. 0.40 sits in that gap. Questions about a
#   stored entity but an unstored attribute ("Which bank does Lena use?") score 0.5-0.6: no cosine threshold
#   separates those, which is a failure mode the fuzzer is meant to find, not to hide.
# - bm25: with one query term in common a memory of about average length scores ~ its IDF
#   ln(1 + (N - df + 0.5)/(df + 0.5)); 0.8 is the IDF of a term found in ~45% of the memories, so the
#   threshold reads "shares at least one term that is not in about half of everything" whatever N is. Measured:
#   answering memories scored 1.06 ("Where does Lena live?" in the 6-memory conformance checkpoint, only
#   "lena" in common, no stemming) to 6.5; questions about nothing stored matched no term (0). Questions that
#   share only a pronoun ("i", "my") with some memory score 1.1-1.6 in a 16-memory checkpoint and pass: BM25
#   cannot tell those apart, the dense mode can.
# - hybrid (RRF, k=60): scores carry ranks only (max 2/61 = 0.0328), so no threshold measures relevance. A
#   document at rank 1 in one list only scores 1/61 = 0.0164; 1/61 + 1/(60+RRF_DEPTH) ~ 0.0226 asks for
#   agreement: near the top of one ranking AND present in the other, so a question with no term in common
#   with any memory abstains.
ABSTAIN = {"dense": 0.40, "bm25": 0.8, "hybrid": round(1 / (RRF_K + 1) + 1 / (RRF_K + RRF_DEPTH), 4)}

_meta = MetaData()
states_t = Table("states", _meta, Column("id", Integer, primary_key=True, autoincrement=False),
                 Column("parent_id", Integer, nullable=True))
handles_t = Table("handles", _meta, Column("handle", String, primary_key=True),
                  Column("state_id", Integer, nullable=False))
items_t = Table("items", _meta,
                Column("state_id", Integer, primary_key=True),
                Column("mem_id", String, primary_key=True),
                Column("text", Text, nullable=False),
                Column("timestamp", String, nullable=False),
                Column("active", Boolean, nullable=False),
                Column("whiteout", Boolean, nullable=False),
                Column("metadata", Text, nullable=False))


@dataclass
class _Row:
    mem_id: str
    text: str
    timestamp: str
    active: bool
    whiteout: bool
    metadata: dict[str, Any]

    def stored(self) -> StoredMemory:
        return StoredMemory(self.mem_id, self.text, self.timestamp, self.active, dict(self.metadata))

    def values(self, state_id: int) -> dict[str, Any]:
        return {"state_id": state_id, "mem_id": self.mem_id, "text": self.text, "timestamp": self.timestamp,
                "active": self.active, "whiteout": self.whiteout,
                "metadata": json.dumps(self.metadata, sort_keys=True)}


class _Block:
    """Immutable retrievable rows of one node: ids, texts, vectors, and (lazily) a BM25 index."""

    def __init__(self, ids: list[str], texts: list[str], vecs: np.ndarray | None) -> None:
        self.ids = ids
        self.texts = texts
        self.vecs = vecs
        self.index = {m: i for i, m in enumerate(ids)}
        self._bm25: bm25.BM25Index | None = None

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def bm25(self) -> bm25.BM25Index:
        if self._bm25 is None:
            self._bm25 = bm25.BM25Index(self.texts)
        return self._bm25


@dataclass
class _View:
    """The retrievable contents of a node: blocks with masks of still-visible rows (None = all)."""

    parts: list[tuple[_Block, np.ndarray | None]]
    _bm25_stats: tuple[int, float] | None = field(default=None)

    @property
    def size(self) -> int:
        return sum(b.n if m is None else int(np.count_nonzero(m)) for b, m in self.parts)

    def bm25_stats(self) -> tuple[int, float]:
        if self._bm25_stats is None:
            self._bm25_stats = bm25.collection_stats([(b.bm25, m) for b, m in self.parts])
        return self._bm25_stats


def _top(cands: list[tuple[_Block, np.ndarray, np.ndarray]], k: int) -> list[tuple[float, str, str]]:
    """Best k of (block, scores, eligible-rows) parts, ordered by (-score, id)."""
    picked: list[tuple[float, str, str]] = []
    for block, scores, ok in cands:
        rows = np.flatnonzero(ok)
        if rows.size > k:
            vals = scores[rows]
            kth = np.partition(vals, vals.size - k)[vals.size - k]
            rows = rows[vals >= kth]  # keeps every tie at the boundary; the id order decides below
        picked.extend((float(scores[r]), block.ids[r], block.texts[r]) for r in rows)
    picked.sort(key=lambda t: (-t[0], t[1]))
    return picked[:k]


class EmbeddedBackend(MemoryBackend):
    name = "embedded"
    extra = None
    #: a node owning this many rows is not written again (writes go to a fresh child node), so that a large
    #: built state keeps its cached view when written through its own handle
    split_rows = 512
    options_spec = (
        Option("retrieval", choices=("dense", "bm25", "hybrid"), default="dense",
               help="dense MiniLM cosine, BM25, or their reciprocal-rank fusion"),
        Option("update_policy", choices=("append", "rewrite"), default="append",
               help="append: a new item, the old one stays stored as superseded; rewrite: in place"),
        Option("delete", choices=("hard", "tombstone"), default="hard",
               help="hard: the item is gone; tombstone: kept with active=False"),
        Option("db", choices=("file", "memory"), default="file",
               help="SQLite file in the working directory, or in memory"),
        Option("embedding_cache", path=True, help="path of a persistent embedding cache file"),
        Option("relevance_threshold", float, help="results scored below it are not returned (the system's own "
                                                  "relevance cut-off: the selection level judges abstention "
                                                  "against it)"),
    )

    def __init__(self, workdir: Path, options: dict[str, Any] | None = None, *,
                 embedder: Embedder | None = None) -> None:
        super().__init__(workdir, options)
        self.retrieval = self.settings["retrieval"]
        self.update_policy = self.settings["update_policy"]
        self.delete_mode = self.settings["delete"]
        self.relevance_threshold = self.settings["relevance_threshold"]
        self.embedder = embedder or default_embedder(self.settings["embedding_cache"])
        self._lock = threading.RLock()
        self._parent: dict[int, int | None] = {}
        self._children: dict[int, int] = {}
        self._own: dict[int, int] = {}
        self._handles: StateTable[int] = StateTable("embedded backend")  # handle -> its node
        self._node_handle: dict[int, str] = {}
        self._views: dict[int, _View] = {}
        self._node_rows: dict[int, dict[str, _Row]] = {}  # each live node's own rows (as stored in SQLite)
        self._next_node = 1
        self._engine = self._make_engine()
        self._conn = self._engine.connect()

    # -- configuration ---------------------------------------------------------------------------------
    def _make_engine(self) -> Any:
        if self.settings["db"] == "memory":
            engine = create_engine("sqlite://", poolclass=StaticPool,
                                   connect_args={"check_same_thread": False})
        else:
            self.workdir.mkdir(parents=True, exist_ok=True)
            path = self.workdir / "embedded.sqlite"
            for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                stale.unlink(missing_ok=True)  # a backend instance owns its file; handles do not outlive it
            engine = create_engine(f"sqlite:///{path}", connect_args={"check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=OFF")  # scratch state of a campaign: speed over durability
            cur.close()

        _meta.create_all(engine)
        return engine

    @classmethod
    def static_capabilities(cls) -> Capabilities:
        """Capabilities with default options, for ``ufuzz backends``."""
        return Capabilities(reader_threshold=ABSTAIN["dense"], cheap_fork=True,
                            notes="options retrieval=dense|bm25|hybrid, update_policy=append|rewrite, "
                                  "delete=hard|tombstone, relevance_threshold=SCORE; copy-on-write forks")

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(visible_retrieval=True, copyable=True, native_update=True, native_delete=True,
                            observable_state=True, answers=False, deterministic=True, cheap_fork=True,
                            verbatim_search=True, reader_threshold=ABSTAIN[self.retrieval], relevance_threshold=self.relevance_threshold,
                            notes=f"{self.retrieval} retrieval, update_policy={self.update_policy}, "
                                  f"delete={self.delete_mode}"
                                  + (f", relevance threshold {self.relevance_threshold}"
                                     if self.relevance_threshold is not None else "")
                                  + "; copy-on-write forks")

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "retrieval": self.retrieval, "update_policy": self.update_policy,
                "delete": self.delete_mode, "db": self.settings["db"], "model": MODEL_NAME,
                "model_package_version": model_version(), "embedding_dim": DIM,
                "bm25": {"k1": bm25.K1, "b": bm25.B}, "rrf_k": RRF_K, "rrf_depth": RRF_DEPTH}

    # -- plumbing --------------------------------------------------------------------------------------
    def _run(self, what: str, fn: Any, *args: Any) -> Any:
        with self._lock:
            try:
                return fn(*args)
            except (BackendError, ValueError):
                self._rollback()
                raise
            except SQLAlchemyError as exc:
                self._rollback()
                raise BackendError(f"embedded backend: {what} failed in SQLite: {exc}") from exc
            except Exception as exc:  # any other fault inside the backend is a backend fault
                self._rollback()
                raise BackendError(f"embedded backend: {what} failed: {type(exc).__name__}: {exc}") from exc

    def _rollback(self) -> None:
        """Undo an operation that failed half-way: SQLite rolls back, and the rows kept in memory are read
        back from it (they may hold the half of the operation that SQLite no longer has)."""
        try:
            self._conn.rollback()
            fresh: dict[int, dict[str, _Row]] = {n: {} for n in self._node_rows}
            for r in self._conn.exec_driver_sql(
                    "SELECT state_id, mem_id, text, timestamp, active, whiteout, metadata FROM items"):
                if r[0] in fresh:
                    fresh[r[0]][r[1]] = _Row(r[1], r[2], r[3], bool(r[4]), bool(r[5]), json.loads(r[6]))
            self._node_rows = fresh
            self._own = {n: len(rows) for n, rows in fresh.items()}
            self._views.clear()
        except SQLAlchemyError:
            pass

    def _node(self, state: StateHandle) -> int:
        return self._handles.get(state)

    def _chain(self, node: int) -> list[int]:
        chain = []
        cur: int | None = node
        while cur is not None:
            chain.append(cur)
            cur = self._parent[cur]
        return chain

    def _new_node(self, parent: int | None) -> int:
        node = self._next_node
        self._next_node += 1
        # hot path (every fork): plain driver SQL skips SQLAlchemy's statement compilation and cache keys
        self._conn.exec_driver_sql("INSERT INTO states (id, parent_id) VALUES (?, ?)", (node, parent))
        self._parent[node] = parent
        self._children[node] = 0
        self._own[node] = 0
        self._node_rows[node] = {}
        if parent is not None:
            self._children[parent] += 1
        return node

    def _attach(self, handle: str, node: int, *, new: bool) -> None:
        old = self._handles.find(handle)
        if old is not None:
            self._node_handle.pop(old, None)
        self._handles.put(handle, node)
        self._node_handle[node] = handle
        if new:
            self._conn.exec_driver_sql("INSERT INTO handles (handle, state_id) VALUES (?, ?)", (handle, node))
        else:
            self._conn.exec_driver_sql("UPDATE handles SET state_id = ? WHERE handle = ?", (node, handle))

    def _writable(self, state: StateHandle) -> int:
        """The node that a write through ``state`` goes to (a fresh child if the current one is shared)."""
        node = self._node(state)
        if self._children[node] > 0 or self._own[node] >= self.split_rows:
            node_new = self._new_node(node)
            self._attach(state, node_new, new=False)
            return node_new
        return node

    def _resolve(self, node: int | None, mem_id: str) -> _Row | None:
        """The row of ``mem_id`` visible from ``node`` (None if absent or whited out)."""
        while node is not None:
            row = self._node_rows[node].get(mem_id)
            if row is not None:
                return None if row.whiteout else row
            node = self._parent[node]
        return None

    def _visible(self, node: int) -> dict[str, _Row]:
        out: dict[str, _Row] = {}
        for n in reversed(self._chain(node)):  # root first, the node's own rows last (they win)
            out.update(self._node_rows[n])
        return {m: row for m, row in out.items() if not row.whiteout}

    def _put(self, node: int, row: _Row) -> None:
        own = self._node_rows[node]
        v = row.values(node)
        if row.mem_id in own:
            self._conn.exec_driver_sql(
                "UPDATE items SET text = ?, timestamp = ?, active = ?, whiteout = ?, metadata = ? "
                "WHERE state_id = ? AND mem_id = ?",
                (v["text"], v["timestamp"], v["active"], v["whiteout"], v["metadata"], node, row.mem_id))
        else:
            self._conn.exec_driver_sql(
                "INSERT INTO items (state_id, mem_id, text, timestamp, active, whiteout, metadata) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (node, row.mem_id, v["text"], v["timestamp"], v["active"], v["whiteout"], v["metadata"]))
            self._own[node] += 1
        own[row.mem_id] = row
        self._views.pop(node, None)

    def _drop(self, node: int, mem_id: str) -> None:
        if self._node_rows[node].pop(mem_id, None) is not None:
            self._conn.exec_driver_sql("DELETE FROM items WHERE state_id = ? AND mem_id = ?", (node, mem_id))
            self._own[node] -= 1
        self._views.pop(node, None)

    # -- materialized views ------------------------------------------------------------------------------
    def _view(self, node: int) -> _View:
        view = self._views.get(node)
        if view is not None:
            return view
        pending = []
        cur: int | None = node
        while cur is not None and cur not in self._views:
            pending.append(cur)
            cur = self._parent[cur]
        base = self._views[cur] if cur is not None else _View([])
        for n in reversed(pending):
            base = self._views[n] = self._derive(n, base)
        return base

    def _derive(self, node: int, parent: _View) -> _View:
        rows = sorted(self._node_rows[node].values(), key=lambda r: r.mem_id)
        overridden = [r.mem_id for r in rows]
        parts: list[tuple[_Block, np.ndarray | None]] = []
        for block, mask in parent.parts:
            hit = [block.index[m] for m in overridden if m in block.index]
            if hit:
                mask = np.ones(block.n, dtype=bool) if mask is None else mask.copy()
                mask[hit] = False
                if not mask.any():
                    continue
            parts.append((block, mask))
        own = [r for r in rows if r.active and not r.whiteout]
        if own:
            texts = [r.text for r in own]
            parts.append((_Block([r.mem_id for r in own], texts, self._vectors(texts)), None))
        return _View(parts)

    def _vectors(self, texts: list[str]) -> np.ndarray | None:
        """The texts' embeddings, or None with BM25 retrieval (which never reads a vector)."""
        return None if self.retrieval == "bm25" else self.embedder.encode(texts)

    # -- states ----------------------------------------------------------------------------------------
    def build(self, checkpoint: Checkpoint) -> StateHandle:
        return self._run("build", self._build, checkpoint)

    def _build(self, checkpoint: Checkpoint) -> StateHandle:
        seen: set[str] = set()
        for m in checkpoint.memories:
            if m.id in seen:
                raise BackendError(f"embedded backend: checkpoint {checkpoint.id!r} has duplicate memory id "
                                   f"{m.id!r}")
            seen.add(m.id)
        self._vectors([m.text for m in checkpoint.memories])  # one batch; fills the cache
        node = self._new_node(None)
        rows = [_Row(m.id, m.text, m.timestamp, True, False, dict(m.metadata)) for m in checkpoint.memories]
        if rows:
            self._conn.exec_driver_sql(
                "INSERT INTO items (state_id, mem_id, text, timestamp, active, whiteout, metadata) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(node, r.mem_id, r.text, r.timestamp, True, False, json.dumps(r.metadata, sort_keys=True))
                 for r in rows])
        self._node_rows[node] = {r.mem_id: r for r in rows}
        self._own[node] = len(rows)
        handle = self._handles.mint()
        self._attach(handle, node, new=True)
        self._conn.commit()
        return handle

    def fork(self, state: StateHandle) -> StateHandle:
        return self._run("fork", self._fork, state)

    def _fork(self, state: StateHandle) -> StateHandle:
        node = self._new_node(self._node(state))
        handle = self._handles.mint()
        self._attach(handle, node, new=True)
        self._conn.commit()
        return handle

    def release(self, state: StateHandle) -> None:
        self._run("release", self._release, state)

    def _release(self, state: StateHandle) -> None:
        node: int | None = self._node(state)
        self._handles.pop(state)
        self._node_handle.pop(node, None)
        self._conn.exec_driver_sql("DELETE FROM handles WHERE handle = ?", (state,))
        while node is not None and node not in self._node_handle and self._children[node] == 0:
            parent = self._parent.pop(node)
            if self._own[node]:
                self._conn.exec_driver_sql("DELETE FROM items WHERE state_id = ?", (node,))
            self._conn.exec_driver_sql("DELETE FROM states WHERE id = ?", (node,))
            for d in (self._children, self._own, self._views, self._node_rows):
                d.pop(node, None)
            if parent is not None:
                self._children[parent] -= 1
            node = parent
        self._conn.commit()

    def states(self) -> list[StateHandle]:
        """Live handles (for diagnostics and tests)."""
        with self._lock:
            return sorted(self._handles, key=lambda h: int(h[1:]))

    def node_count(self) -> int:
        """Live copy-on-write nodes (for diagnostics and tests)."""
        with self._lock:
            return len(self._parent)

    # -- retrieval -------------------------------------------------------------------------------------
    def retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        return self._run("retrieve", self._retrieve, state, query, int(k))

    def _retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        view = self._view(self._node(state))
        if k <= 0 or not view.parts:
            return []
        if self.retrieval == "dense":
            top = _top(self._dense(view, query), k)
        elif self.retrieval == "bm25":
            top = _top(self._bm25(view, query), k)
        else:
            top = self._hybrid(view, query, k)
        thr = self.relevance_threshold
        return [Retrieved(mid, text, score) for score, mid, text in top if thr is None or score >= thr]

    def _dense(self, view: _View, query: str) -> list[tuple[_Block, np.ndarray, np.ndarray]]:
        q = self.embedder.encode([query])[0]
        out = []
        for block, mask in view.parts:
            # einsum, not BLAS gemv: single-threaded (multi-threaded OpenBLAS gemv is several times slower
            # on a busy 2-core machine) and the same per-row summation whatever the block's size; rounded
            # so that equal texts score exactly equal in any block
            scores = np.round(np.einsum("ij,j->i", block.vecs, q).astype(np.float64), 6)
            out.append((block, scores, np.ones(block.n, dtype=bool) if mask is None else mask))
        return out

    def _bm25(self, view: _View, query: str) -> list[tuple[_Block, np.ndarray, np.ndarray]]:
        terms = bm25.query_terms(query)
        n_docs, avgdl = view.bm25_stats()
        df = {t: sum(b.bm25.document_frequency(t, m) for b, m in view.parts) for t in terms}
        out = []
        for block, mask in view.parts:
            scores = np.round(block.bm25.scores(terms, n_docs, avgdl, df), 6)
            ok = scores > 0
            if mask is not None:
                ok &= mask
            out.append((block, scores, ok))
        return out

    def _hybrid(self, view: _View, query: str, k: int) -> list[tuple[float, str, str]]:
        depth = max(RRF_DEPTH, k)
        fused: dict[str, float] = {}
        texts: dict[str, str] = {}
        for ranking in (_top(self._dense(view, query), depth), _top(self._bm25(view, query), depth)):
            rank, prev = 0, None
            for pos, (score, mid, text) in enumerate(ranking, start=1):
                if score != prev:  # competition ranking: equal scores share a rank (so equal texts tie)
                    rank, prev = pos, score
                fused[mid] = fused.get(mid, 0.0) + 1.0 / (RRF_K + rank)
                texts[mid] = text
        top = sorted(((round(s, 10), mid) for mid, s in fused.items()), key=lambda t: (-t[0], t[1]))[:k]
        return [(s, mid, texts[mid]) for s, mid in top]

    # -- native operations ---------------------------------------------------------------------------------
    def add(self, state: StateHandle, memory: Memory) -> OpResult:
        return self._run("add", self._add, state, memory)

    def _add(self, state: StateHandle, memory: Memory) -> OpResult:
        existing = self._resolve(self._node(state), memory.id)
        if existing is not None:
            how = "" if existing.active else " (tombstoned)"
            return OpResult("add", False, memory.id, detail=f"memory id {memory.id!r} already exists{how}")
        self._vectors([memory.text])
        node = self._writable(state)
        self._put(node, _Row(memory.id, memory.text, memory.timestamp, True, False, dict(memory.metadata)))
        self._conn.commit()
        return OpResult("add", True, memory.id, written=(memory.id,))

    def update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        return self._run("update", self._update, state, memory_id, new)

    def _update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        node = self._node(state)
        old = self._resolve(node, memory_id)
        if old is None:
            return OpResult("update", False, memory_id, detail=f"unknown memory id {memory_id!r}")
        if not old.active:
            return OpResult("update", False, memory_id, detail=f"memory {memory_id!r} is deleted (tombstoned)")
        if self.update_policy == "rewrite":
            self._vectors([new.text])
            row = _Row(memory_id, new.text, new.timestamp, True, False, {**old.metadata, **new.metadata})
            self._put(self._writable(state), row)
            self._conn.commit()
            return OpResult("update", True, memory_id, written=(memory_id,), detail="rewritten in place")
        if new.id == memory_id:
            return OpResult("update", False, memory_id,
                            detail=f"update_policy=append stores a new item: new.id must differ from {memory_id!r}")
        if self._resolve(node, new.id) is not None:
            return OpResult("update", False, memory_id, detail=f"new memory id {new.id!r} already exists")
        self._vectors([new.text])
        target = self._writable(state)
        self._put(target, _Row(new.id, new.text, new.timestamp, True, False,
                               {**new.metadata, "supersedes": memory_id}))
        self._put(target, _Row(old.mem_id, old.text, old.timestamp, True, False,
                               {**old.metadata, "superseded_by": new.id}))
        self._conn.commit()
        return OpResult("update", True, memory_id, written=(new.id,), superseded=(memory_id,),
                        detail="appended; the old item stays stored and retrievable")

    def delete(self, state: StateHandle, memory_id: str) -> OpResult:
        return self._run("delete", self._delete, state, memory_id)

    def _delete(self, state: StateHandle, memory_id: str) -> OpResult:
        old = self._resolve(self._node(state), memory_id)
        if old is None:
            return OpResult("delete", False, memory_id, detail=f"unknown memory id {memory_id!r}")
        if not old.active:
            return OpResult("delete", False, memory_id, detail=f"memory {memory_id!r} is already deleted")
        node = self._writable(state)
        if self.delete_mode == "tombstone":
            self._put(node, _Row(old.mem_id, old.text, old.timestamp, False, False, dict(old.metadata)))
            detail = "tombstoned (kept with active=False)"
        elif self._resolve(self._parent[node], memory_id) is not None:
            self._put(node, _Row(memory_id, "", "", False, True, {}))  # whiteout hides the inherited row
            detail = "deleted"
        else:
            self._drop(node, memory_id)
            detail = "deleted"
        self._conn.commit()
        return OpResult("delete", True, memory_id, removed=(memory_id,), detail=detail)

    # -- observation ---------------------------------------------------------------------------------------
    def get(self, state: StateHandle, memory_id: str) -> StoredMemory | None:
        return self._run("get", self._get, state, memory_id)

    def _get(self, state: StateHandle, memory_id: str) -> StoredMemory | None:
        row = self._resolve(self._node(state), memory_id)
        return row.stored() if row is not None else None

    def list(self, state: StateHandle) -> list[StoredMemory]:
        return self._run("list", self._list, state)

    def _list(self, state: StateHandle) -> list[StoredMemory]:
        rows = self._visible(self._node(state)).values()
        return [r.stored() for r in sorted(rows, key=lambda r: (r.timestamp, r.mem_id))]

    def close(self) -> None:
        with self._lock:
            try:
                self._conn.close()
                self._engine.dispose()
            except SQLAlchemyError as exc:
                raise BackendError(f"embedded backend: close failed: {exc}") from exc
            self._views.clear()
            self._node_rows.clear()
