"""HTTP requests over kept-alive connections: one open connection per thread and origin.

A product over HTTP is called thousands of times a campaign, from many threads at once (``--max-concurrency``).
Opening a connection per request (what ``urllib.request.urlopen`` does: it sends ``Connection: close``) costs a
TCP handshake each time — and against a product behind TLS, a TLS handshake too, two or three round trips before
the request is even sent. :class:`Transport` keeps each thread's connection to an origin open between requests,
as HTTP/1.1 allows, and opens a new one when the product closes it. A request the product never answered because
it had closed the idle connection is sent once more on a new connection (the request cannot have been read).

A kept connection has one trap: a server that writes its headers and body apart with Nagle's algorithm on
(Python's ``http.server`` does, unless told otherwise) holds the body until the headers are acknowledged, and a
client that delays its acknowledgements stalls 40 ms per request — the test suite's own answer-only agent went
from 1.5 s to 22 s. So the answer's first segment is acknowledged at once (Linux ``TCP_QUICKACK``), and where
that cannot be done, connections are not kept (:data:`KEEP_ALIVE`).

What a plain ``http.client`` connection does not do is left to ``urllib``: requests through a proxy (the
``*_proxy`` environment variables) and redirects (a 3xx answer is asked again through urllib, which follows it).
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["KEEP_ALIVE", "Answer", "Transport"]

#: connections are kept only where the answer's first segment can be acknowledged at once (Linux
#: ``TCP_QUICKACK``, :func:`_ack_at_once`); elsewhere every request asks the product to close its connection, as
#: urllib does, rather than risk a 40 ms stall per request against a server with Nagle's algorithm on
KEEP_ALIVE = hasattr(socket, "TCP_QUICKACK")

#: errors that say an idle kept-alive connection had been closed by the other side before this request was read
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


@dataclass(frozen=True)
class Answer:
    """A response: its status, headers (case-insensitive ``get``) and whole body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class _Headers(dict):
    """Response headers by lower-cased name, looked up in any case."""

    @classmethod
    def of(cls, items: Iterable[tuple[str, str]]) -> _Headers:
        return cls((k.lower(), v) for k, v in items)

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(key.lower(), default)


class Transport:
    """Sends requests, reusing each thread's connection to an origin. Raises what the socket layer raises
    (``TimeoutError``, ``OSError``, ``http.client.HTTPException``) and ``ValueError`` for a URL it cannot use;
    an HTTP error status is an :class:`Answer` like any other."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: list[http.client.HTTPConnection] = []  # every connection made, for close()
        self._ssl: ssl.SSLContext | None = None
        self.opened = 0  # connections opened (benchmarks, tests: how many requests went over one)
        self.keep_alive = KEEP_ALIVE
        #: origin -> whether the environment routes it through a proxy: read once per origin, not per request
        #: (urllib's environment scan took ~6% of a 16-lane HTTP campaign's interpreter time)
        self._proxied: dict[tuple[str, str], bool] = {}
        self._opener: urllib.request.OpenerDirector | None = None  # urllib's, for proxies and redirects

    def send(self, method: str, url: str, body: bytes | None, headers: Mapping[str, str],
             timeout: float) -> Answer:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"unknown url type: {url!r}")
        origin = (parts.scheme, parts.netloc)
        proxied = self._proxied.get(origin)
        if proxied is None:
            proxied = self._proxied[origin] = _proxied(parts)
        if proxied:
            return _via_urllib(self._urllib(), method, url, body, headers, timeout)
        target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        sent = dict(headers) if self.keep_alive else {**headers, "Connection": "close"}
        for fresh in (False, True):
            conn, reused = self._connection(parts, timeout, fresh)
            try:
                conn.request(method, target, body=body, headers=sent)
                _ack_at_once(conn)
                resp = conn.getresponse()
                answer = Answer(resp.status, _Headers.of(resp.getheaders()), resp.read())
            except _STALE:
                conn.close()
                if reused and not fresh:
                    continue  # the product closed the idle connection: this request was never read
                raise
            except BaseException:
                conn.close()  # mid-request (a timeout): what is left on the connection is unknown
                raise
            if 300 <= answer.status < 400 and answer.headers.get("location"):
                return _via_urllib(self._urllib(), method, url, body, headers, timeout)
            return answer
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _urllib(self) -> urllib.request.OpenerDirector:
        """This transport's urllib opener: its proxies read from the environment when this transport first needs
        them, as its own routing decisions are (urllib's global opener keeps the proxies of its first use)."""
        if self._opener is None:
            self._opener = urllib.request.build_opener()
        return self._opener

    def _connection(self, parts: urllib.parse.SplitResult, timeout: float,
                    fresh: bool) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection to ``parts``' origin, and whether it served a request before."""
        conns: dict[tuple[str, str, int | None, float], http.client.HTTPConnection] = \
            self._local.__dict__.setdefault("conns", {})
        key = (parts.scheme, parts.hostname or "", parts.port, timeout)
        conn = conns.get(key)
        if conn is not None and not fresh:
            return conn, conn.sock is not None
        if conn is not None:
            conn.close()
        if parts.scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout, context=self._ssl)
        else:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        conns[key] = conn
        with self._lock:
            self._open.append(conn)
            self.opened += 1
        return conn, False

    def close(self) -> None:
        """Close every connection any thread opened."""
        with self._lock:
            conns, self._open = self._open, []
        for conn in conns:
            try:
                conn.close()
            except OSError:
                pass


def _ack_at_once(conn: http.client.HTTPConnection) -> None:
    """Acknowledge the answer's first segment at once (Linux ``TCP_QUICKACK``). A server that writes its headers
    and its body apart, with Nagle's algorithm on (Python's ``http.server`` does), holds the body back until the
    headers are acknowledged, and a client that delays its acknowledgement (40 ms) stalls every request on a kept
    connection — a new connection starts in quick-ack mode, which is why closing each one hid it."""
    sock = conn.sock
    quickack = getattr(socket, "TCP_QUICKACK", None)
    if sock is None or quickack is None:
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
    except OSError:
        pass


def _proxied(parts: urllib.parse.SplitResult) -> bool:
    """Whether the environment routes this origin through a proxy (urllib then sends the request)."""
    proxies = urllib.request.getproxies()
    return parts.scheme in proxies and not urllib.request.proxy_bypass(parts.netloc)


def _via_urllib(opener: urllib.request.OpenerDirector, method: str, url: str, body: bytes | None,
                headers: Mapping[str, str], timeout: float) -> Answer:
    """One request by urllib (proxies, redirects), its error statuses as answers."""
    req = urllib.request.Request(url, data=body, headers=dict(headers), method=method)
    try:
        with opener.open(req, timeout=timeout) as resp:
            return Answer(resp.status, _Headers.of(resp.getheaders()), resp.read())
    except urllib.error.HTTPError as exc:
        try:
            data = exc.read() if exc.fp else b""
        finally:
            exc.close()
        hdrs = exc.headers.items() if exc.headers is not None else ()
        return Answer(exc.code, _Headers.of(hdrs), data)
    except urllib.error.URLError as exc:
        reason = exc.reason
        raise (reason if isinstance(reason, BaseException) else OSError(str(reason))) from None
