"""Serve a stdlib HTTP handler on 127.0.0.1 (free port) in a background thread, for test servers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    # the stdlib's listen backlog of 5 resets connections when a campaign has dozens of requests in flight
    # (--max-concurrency 64); a real endpoint accepts far more
    request_queue_size = 256


@contextmanager
def serve_on_loopback(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """Yield the port a ThreadingHTTPServer with ``handler`` listens on; shut it down afterwards."""
    httpd = _Server(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield int(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
