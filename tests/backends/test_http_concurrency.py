"""The HTTP adapter's transport under load: calls from several threads overlap (``--max-concurrency``), and a
product's 429/503 with Retry-After is waited out rather than reported.

A proxy in front of the test product counts requests in flight and answers 429 on purpose; nothing is timed.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler

import pytest

from tests.backends.test_http_backend import EXAMPLE, TOKEN, token_env  # noqa: F401 - the fixture
from tests.support.http_product_server import start_product_server
from tests.support.loopback import serve_on_loopback
from ufuzz.backends.adapters.http import HttpBackend
from ufuzz.backends.conformance import tiny_checkpoint


class Proxy:
    """Forwards to ``upstream``; the first ``storm`` searches get 429 (Retry-After 0.01); each request waits
    ``delay`` s; ``peak`` is the most requests it held at once."""

    def __init__(self, upstream: str, storm: int = 0, delay: float = 0.0, status: int = 429) -> None:
        self.upstream, self.storm, self.delay, self.status = upstream, storm, delay, status
        self.in_flight = self.peak = self.limited = 0
        self.lock = threading.Lock()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format, *args):  # noqa: A002
                pass

            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                with proxy.lock:
                    proxy.in_flight += 1
                    proxy.peak = max(proxy.peak, proxy.in_flight)
                    limit = "/search" in self.path and proxy.limited < proxy.storm
                    proxy.limited += limit
                try:
                    time.sleep(proxy.delay)
                    if limit:
                        status, data, extra = proxy.status, b'{"error": "slow down"}', [("Retry-After", "0.01")]
                    else:
                        status, data, extra = self._forward(body)
                finally:
                    with proxy.lock:
                        proxy.in_flight -= 1
                self.send_response(status)
                for k, v in extra:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _forward(self, body):
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
                req = urllib.request.Request(proxy.upstream + self.path, data=body, headers=headers,
                                             method=self.command)
                try:
                    with urllib.request.urlopen(req, timeout=10) as resp:
                        return resp.status, resp.read(), [("Content-Type", "application/json")]
                except urllib.error.HTTPError as exc:
                    return exc.code, exc.read(), [("Content-Type", "application/json")]

            do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815

        return _H


@pytest.fixture(scope="module")
def product():
    with start_product_server(TOKEN) as srv:
        yield srv


def _backend(tmp_path, url: str) -> HttpBackend:
    return HttpBackend(tmp_path, {"config": str(EXAMPLE), "base_url": url})


def test_a_429_with_retry_after_is_waited_out_without_retries(tmp_path, product, token_env):  # noqa: F811
    proxy = Proxy(product.base_url, storm=3)
    with serve_on_loopback(proxy.handler()) as port:
        b = _backend(tmp_path, f"http://127.0.0.1:{port}")  # retries: 0, the example's default
        s = b.build(tiny_checkpoint())
        assert [r.id for r in b.retrieve(s, "Where does Lena live?", 1)] == ["m1"]
        b.close()
    assert proxy.limited == 3


def test_calls_from_several_threads_overlap(tmp_path, product, token_env):  # noqa: F811
    proxy = Proxy(product.base_url, delay=0.2)
    with serve_on_loopback(proxy.handler()) as port:
        b = _backend(tmp_path, f"http://127.0.0.1:{port}")
        assert b.concurrent_calls
        states = [b.build(tiny_checkpoint()) for _ in range(4)]
        proxy.peak = 0
        got: list[list[str]] = [[] for _ in states]

        def search(i: int) -> None:
            got[i] = [r.id for r in b.retrieve(states[i], "Where does Lena live?", 1)]

        threads = [threading.Thread(target=search, args=(i,)) for i in range(len(states))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        b.close()
    assert got == [["m1"]] * 4
    assert proxy.peak >= 2  # the adapter's lock is not held while a request waits


def test_a_503_storm_is_ridden_out_too(tmp_path, product, token_env):  # noqa: F811
    proxy = Proxy(product.base_url, storm=5, status=503)
    with serve_on_loopback(proxy.handler()) as port:
        b = _backend(tmp_path, f"http://127.0.0.1:{port}")
        s = b.build(tiny_checkpoint())
        assert b.retrieve(s, "Where does Lena live?", 1)[0].id == "m1"
        b.close()
    assert proxy.limited == 5
