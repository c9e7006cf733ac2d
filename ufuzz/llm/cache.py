"""A persistent cache of LLM calls, so that a re-run or a replay makes zero calls.

Each entry is keyed on the sha256 of the canonical JSON of ``(model, messages, parameters)``, where the
parameters are everything sent with the request that can change the answer (``temperature``,
``response_format`` …). The base URL and the API key are never part of the key and never stored.

The store is one SQLite file (stdlib ``sqlite3``) in write-ahead-log mode; each process keeps one connection
(threads take turns on it), so several processes and threads may share one file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CACHE_FILENAME = "llm_calls.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_calls (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0
)
"""


def default_cache_path() -> Path:
    """``$UFUZZ_CACHE_DIR/llm_calls.sqlite``, else ``~/.cache/ufuzz/llm_calls.sqlite``."""
    base = os.environ.get("UFUZZ_CACHE_DIR")
    root = Path(base).expanduser() if base else Path.home() / ".cache" / "ufuzz"
    return root / CACHE_FILENAME


def canonical_request(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """Canonical JSON of one request: sorted keys, no whitespace, ``None``-valued params dropped."""
    clean = {k: v for k, v in params.items() if v is not None}
    return json.dumps({"model": model, "messages": list(messages), "params": clean},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def cache_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """sha256 hex digest of :func:`canonical_request`."""
    return hashlib.sha256(canonical_request(model, messages, params).encode("utf-8")).hexdigest()


class CallCache:
    """Persistent SQLite cache of LLM responses keyed by :func:`cache_key`."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else default_cache_path()
        self._lock = threading.Lock()
        self._ready = False
        self._conn: sqlite3.Connection | None = None
        self._conn_pid = 0

    def __repr__(self) -> str:
        return f"CallCache({str(self.path)!r})"

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """This process's connection (opened once, kept: opening and closing one per operation makes SQLite
        checkpoint and fsync its log every time, ~25 ms a call), one transaction per operation. Callers hold
        ``self._lock``."""
        conn = self._conn if self._conn_pid == os.getpid() else None
        if conn is None:
            if not self._ready:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
            except sqlite3.Error as exc:
                raise OSError(f"cannot open LLM call cache {self.path}: {exc}") from exc
            try:
                # write-ahead log, no fsync per commit: many threads of a campaign (--max-concurrency) store
                # replies at once, and an entry lost to a power cut is only a call made again
                conn.execute("PRAGMA synchronous=NORMAL")
                if not self._ready:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute(_SCHEMA)
                    conn.commit()
                    self._ready = True
            except sqlite3.DatabaseError as exc:
                conn.close()
                raise OSError(f"LLM call cache {self.path} is unusable: {exc}") from exc
            self._conn, self._conn_pid = conn, os.getpid()
        try:
            with conn:  # one transaction per operation
                yield conn
        except sqlite3.DatabaseError as exc:
            raise OSError(f"LLM call cache {self.path} is unusable: {exc}") from exc

    def close(self) -> None:
        """Close this process's connection (the next operation opens another)."""
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None and self._conn_pid == os.getpid():
                conn.close()

    # -- by key ---------------------------------------------------------------------------------------
    def get(self, key: str) -> str | None:
        """The cached response for ``key`` (counting a hit), or ``None``."""
        with self._lock, self._connect() as conn:
            row = conn.execute("SELECT response FROM llm_calls WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            conn.execute("UPDATE llm_calls SET hits = hits + 1 WHERE key = ?", (key,))
            return str(row[0])

    def put(self, key: str, model: str, request: str, response: str) -> None:
        """Store ``response`` under ``key`` (replacing an existing entry, hit count reset)."""
        with self._lock, self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO llm_calls (key, model, request, response, created, hits) "
                "VALUES (?, ?, ?, ?, ?, 0)", (key, model, request, response, time.time()))

    # -- by request -----------------------------------------------------------------------------------
    def lookup(self, model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str | None:
        return self.get(cache_key(model, messages, params))

    def store(self, model: str, messages: list[dict[str, Any]], params: dict[str, Any],
              response: str) -> str:
        """Store a response for a request; returns its key."""
        key = cache_key(model, messages, params)
        self.put(key, model, canonical_request(model, messages, params), response)
        return key

    def entry(self, key: str) -> dict[str, Any] | None:
        """The stored row for ``key`` (no hit counted): model, request, response, created, hits."""
        with self._lock, self._connect() as conn:
            row = conn.execute("SELECT model, request, response, created, hits FROM llm_calls WHERE key = ?",
                               (key,)).fetchone()
        if row is None:
            return None
        return {"key": key, "model": row[0], "request": json.loads(row[1]), "response": row[2],
                "created": row[3], "hits": row[4]}

    # -- maintenance ----------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """``{"path", "entries", "hits", "size_bytes", "models": {model: entries}}``."""
        with self._lock, self._connect() as conn:
            entries, hits = conn.execute("SELECT COUNT(*), COALESCE(SUM(hits), 0) FROM llm_calls").fetchone()
            models = dict(conn.execute(
                "SELECT model, COUNT(*) FROM llm_calls GROUP BY model ORDER BY model").fetchall())
        return {"path": str(self.path), "entries": int(entries), "hits": int(hits),
                "size_bytes": _size(self.path), "models": {str(k): int(v) for k, v in models.items()}}

    def clear(self) -> int:
        """Remove every entry; returns how many were removed."""
        with self._lock, self._connect() as conn:
            n = conn.execute("DELETE FROM llm_calls").rowcount
        with self._lock:
            conn = sqlite3.connect(str(self.path), timeout=30)
            try:
                conn.execute("VACUUM")
            finally:
                conn.close()
        return int(n)


def _size(path: Path) -> int:
    total = 0
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-journal")):
        try:
            total += p.stat().st_size
        except OSError:
            pass
    return total


def cache_stats(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Stats of the cache at ``path`` (default :func:`default_cache_path`) without creating it."""
    p = Path(path).expanduser() if path is not None else default_cache_path()
    if not p.exists():
        return {"path": str(p), "entries": 0, "hits": 0, "size_bytes": 0, "models": {}}
    return _readonly_stats(p)


def _readonly_stats(p: Path) -> dict[str, Any]:
    """:meth:`CallCache.stats` through a read-only connection: reading stats never creates the schema in a
    file that is not a cache, nor switches its journal. Raises ``ValueError`` naming the file when it is not
    an LLM call cache (a directory, garbage, another database)."""
    import urllib.parse

    if p.is_dir():
        raise ValueError(f"{p} is a directory, not an LLM call cache")
    try:
        conn = sqlite3.connect(f"file:{urllib.parse.quote(str(p.resolve()))}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error as exc:
        raise ValueError(f"cannot open LLM call cache {p}: {exc}") from None
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "llm_calls" not in tables:
            what = f"it holds {', '.join(sorted(tables)[:5])}" if tables else "it is empty"
            raise ValueError(f"{p} is not an LLM call cache (no llm_calls table; {what})")
        entries, hits = conn.execute("SELECT COUNT(*), COALESCE(SUM(hits), 0) FROM llm_calls").fetchone()
        models = dict(conn.execute("SELECT model, COUNT(*) FROM llm_calls GROUP BY model ORDER BY model").fetchall())
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{p} is not an LLM call cache ({exc})") from None
    finally:
        conn.close()
    return {"path": str(p), "entries": int(entries), "hits": int(hits), "size_bytes": _size(p),
            "models": {str(k): int(v) for k, v in models.items()}}


def cache_clear(path: str | os.PathLike[str] | None = None) -> int:
    """Remove every entry of the cache at ``path`` (default :func:`default_cache_path`); returns the count."""
    p = Path(path).expanduser() if path is not None else default_cache_path()
    if not p.exists():
        return 0
    return CallCache(p).clear()
