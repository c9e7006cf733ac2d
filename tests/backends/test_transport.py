"""The HTTP adapter keeps each thread's connection to the product open between requests (no TCP — or TLS —
handshake per call), opens a new one when the product closed the old, and leaves proxies and redirects to urllib."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest

from tests.support.loopback import serve_on_loopback
from ufuzz.backends.transport import Transport


def _handler(close_after: int | None = None, redirect: bool = False, silent: bool = False):
    served = {"n": 0, "conns": set()}

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802 - stdlib name
            served["n"] += 1
            served["conns"].add(self.client_address)
            if redirect and self.path == "/old":
                self.send_response(301)
                self.send_header("Location", "/new")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = json.dumps({"path": self.path, "n": served["n"]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            if close_after is not None and served["n"] % close_after == 0:
                if not silent:  # silent: dropped after answering, as an idle timeout does, unannounced
                    self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(data)

    return H, served


def test_one_connection_serves_a_threads_requests():
    handler, served = _handler()
    with serve_on_loopback(handler) as port:
        t = Transport()
        for i in range(20):
            a = t.send("GET", f"http://127.0.0.1:{port}/x?i={i}", None, {}, 5)
            assert a.status == 200 and json.loads(a.body)["path"] == f"/x?i={i}"
        t.close()
    assert served["n"] == 20 and t.opened == 1 and len(served["conns"]) == 1


@pytest.mark.parametrize("silent", [False, True], ids=["announced", "unannounced"])
def test_a_connection_the_product_closes_is_opened_again(silent):
    handler, served = _handler(close_after=3, silent=silent)
    with serve_on_loopback(handler) as port:
        t = Transport()
        bodies = []
        for _ in range(7):
            bodies.append(json.loads(t.send("GET", f"http://127.0.0.1:{port}/y", None, {}, 5).body)["n"])
            if silent:
                time.sleep(0.05)  # the server's close has landed before the next request is sent
        t.close()
    assert bodies == list(range(1, 8))  # every request answered once, none lost or sent twice
    assert len(served["conns"]) == 3


def test_threads_have_connections_of_their_own():
    handler, served = _handler()
    with serve_on_loopback(handler) as port:
        t = Transport()
        errors: list[BaseException] = []

        def work():
            try:
                for _ in range(10):
                    assert t.send("GET", f"http://127.0.0.1:{port}/z", None, {}, 5).status == 200
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        t.close()
    assert not errors and served["n"] == 40 and t.opened == 4


def test_a_redirect_is_followed_and_an_error_status_is_an_answer():
    handler, served = _handler(redirect=True)
    with serve_on_loopback(handler) as port:
        t = Transport()
        a = t.send("GET", f"http://127.0.0.1:{port}/old", None, {}, 5)
        assert a.status == 200 and json.loads(a.body)["path"] == "/new"
        t.close()


def test_a_refused_connection_and_a_bad_url_raise():
    with serve_on_loopback(_handler()[0]) as port:
        pass  # the port is free again
    t = Transport()
    with pytest.raises(ConnectionRefusedError):
        t.send("GET", f"http://127.0.0.1:{port}/", None, {}, 2)
    with pytest.raises(ValueError, match="unknown url type"):
        t.send("GET", "ftp://example.invalid/x", None, {}, 2)


def test_where_answers_cannot_be_acknowledged_at_once_no_connection_is_kept(monkeypatch):
    """Without TCP_QUICKACK a kept connection may stall 40 ms a request against a server with Nagle's algorithm
    on; there every request asks the product to close the connection, as urllib did."""
    handler, served = _handler()
    with serve_on_loopback(handler) as port:
        t = Transport()
        t.keep_alive = False
        for _ in range(3):
            assert t.send("GET", f"http://127.0.0.1:{port}/c", None, {}, 5).status == 200
        t.close()
    assert served["n"] == 3 and len(served["conns"]) == 3


def test_a_server_with_nagles_algorithm_on_is_answered_on_a_kept_connection():
    """The stdlib server writes headers and body apart and leaves Nagle's algorithm on: on a kept connection the
    body waits for the headers' acknowledgement, which the transport sends at once (every answer arrives whole;
    how fast is benchmarks' business, not a test's)."""
    class Slowpoke(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, disable_nagle_algorithm left False

        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802 - stdlib name
            data = b'{"ok": true}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()  # the headers go out
            self.wfile.write(data)  # then the body, apart

    with serve_on_loopback(Slowpoke) as port:
        t = Transport()
        bodies = [t.send("GET", f"http://127.0.0.1:{port}/n", None, {}, 5).body for _ in range(5)]
        t.close()
    assert bodies == [b'{"ok": true}'] * 5 and t.opened == 1


def test_an_origin_the_environment_proxies_goes_through_the_proxy_and_others_go_direct(monkeypatch):
    """The ``*_proxy`` variables are read once per origin, and every request then takes that route."""
    proxy, via_proxy = _handler()
    product, direct = _handler()
    with serve_on_loopback(proxy) as pport, serve_on_loopback(product) as port:
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{pport}")
        monkeypatch.setenv("no_proxy", "127.0.0.1")
        for name in ("HTTP_PROXY", "NO_PROXY", "all_proxy", "ALL_PROXY"):
            monkeypatch.delenv(name, raising=False)
        t = Transport()
        for i in range(3):
            a = t.send("GET", f"http://product.invalid/x?i={i}", None, {}, 5)
            assert json.loads(a.body)["path"] == f"http://product.invalid/x?i={i}"  # a proxy sees the whole URL
            b = t.send("GET", f"http://127.0.0.1:{port}/y?i={i}", None, {}, 5)
            assert json.loads(b.body)["path"] == f"/y?i={i}"
        t.close()
    assert via_proxy["n"] == 3 and direct["n"] == 3 and t.opened == 1
