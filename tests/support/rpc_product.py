"""A memory product with a JSON-RPC API, for the HTTP adapter's tests: one endpoint, everything in the body.

Not REST in any way the example config assumes: every call is ``POST /rpc`` with ``{"method": ..., "params":
...}``; the tenant travels in an ``X-Tenant`` header; answers are ``{"result": ...}`` or, at HTTP 200 still,
``{"error": {"code": ..., "message": ...}}`` (``-32004`` for a memory that does not exist); a delete is soft (the
memory stays, flagged ``deleted``, and is never searched); ``memory.list`` pages by an offset sent in the body;
``tenant.snapshot`` copies a tenant under a name the product mints, keeping the memory ids. Search scores the
query's words found in a memory over the square root of its length (newest first on a tie). With
``search_deleted`` (a planted bug) a soft-deleted memory is still searched.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.loopback import serve_on_loopback

PAGE = 3  # memories per listing page: a tiny checkpoint already takes several

TOML = """\
base_url = "{base_url}"
name = "rpc-product"
error_when = "$.error"
headers = {{ "X-Tenant" = "{{namespace}}" }}

[create]
method = "POST"
path = "/rpc"
body = {{ method = "tenant.create", params = {{}} }}
id = "$.result.tenant"

[add]
method = "POST"
path = "/rpc"
body = {{ method = "memory.add", params = {{ text = "{{text}}", at_ms = "{{timestamp_ms}}" }} }}
id = "$.result.id"

[get]
method = "POST"
path = "/rpc"
body = {{ method = "memory.get", params = {{ id = "{{id}}" }} }}
text = "$.result.text"
timestamp = "$.result.at_ms"
active = "!$.result.deleted"
not_found_when = "$.error.code"
not_found_values = [-32004]

[list]
method = "POST"
path = "/rpc"
body = {{ method = "memory.list", params = {{ offset = "{{cursor}}", limit = {page} }} }}
ids = "$.result.items[*].id"
texts = "$.result.items[*].text"
timestamps = "$.result.items[*].at_ms"
actives = "!$.result.items[*].deleted"
cursor = "$.result.next_offset"

[search]
method = "POST"
path = "/rpc"
body = {{ method = "memory.search", params = {{ q = "{{query}}", k = "{{k}}" }} }}
ids = "$.result.hits[*].id"
texts = "$.result.hits[*].text"
scores = "$.result.hits[*].score"

[update]
method = "POST"
path = "/rpc"
body = {{ method = "memory.update", params = {{ id = "{{id}}", text = "{{text}}", at_ms = "{{timestamp_ms}}" }} }}
not_found_when = "$.error.code"
not_found_values = [-32004]

[delete]
method = "POST"
path = "/rpc"
body = {{ method = "memory.delete", params = {{ id = "{{id}}" }} }}
not_found_when = "$.error.code"
not_found_values = [-32004]

[snapshot]
method = "POST"
path = "/rpc"
body = {{ method = "tenant.snapshot", params = {{}} }}
id = "$.result.tenant"

[drop]
method = "POST"
path = "/rpc"
body = {{ method = "tenant.drop", params = {{}} }}
"""


@dataclass
class RpcProduct:
    tenants: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    port: int = 0
    search_deleted: bool = False  # the planted bug: a soft-deleted memory is still searched
    failing: str | None = None  # a method that answers an internal error (-32603) at HTTP 200

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self) -> str:
        return TOML.format(base_url=self.base_url, page=PAGE)

    def call(self, tenant: str | None, method: str, params: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            if method == "tenant.create":
                name = f"tn{next(self.ids)}"
                self.tenants[name] = {}
                return {"result": {"tenant": name}}
            mems = self.tenants.get(tenant or "")
            if mems is None:
                return {"error": {"code": -32001, "message": f"no tenant {tenant!r}"}}
            return self._memory_call(tenant or "", mems, method, params)

    def _memory_call(self, tenant: str, mems: dict[str, dict[str, Any]], method: str,
                     params: dict[str, Any]) -> dict[str, Any]:
        if method == self.failing:
            return {"error": {"code": -32603, "message": "internal error"}}
        if method == "tenant.snapshot":
            name = f"tn{next(self.ids)}"
            self.tenants[name] = {k: dict(v) for k, v in mems.items()}
            return {"result": {"tenant": name}}
        if method == "tenant.drop":
            del self.tenants[tenant]
            return {"result": {}}
        if method == "memory.add":
            mid = f"m{next(self.ids)}"
            mems[mid] = {"id": mid, "text": params["text"], "at_ms": params["at_ms"], "deleted": False,
                         "seq": next(self.ids)}
            return {"result": {"id": mid}}
        if method == "memory.list":
            items = sorted(mems.values(), key=lambda m: m["seq"])
            start = int(params.get("offset") or 0)
            page = items[start:start + int(params["limit"])]
            more = start + len(page) < len(items)
            return {"result": {"items": [_shown(m) for m in page], "next_offset": start + len(page) if more else None}}
        if method == "memory.search":
            return {"result": {"hits": _search(mems, str(params["q"]), int(params["k"]), self.search_deleted)}}
        memory = mems.get(str(params.get("id")))
        if memory is None:
            return {"error": {"code": -32004, "message": "memory not found"}}
        if method == "memory.get":
            return {"result": _shown(memory)}
        if method == "memory.update":
            memory.update(text=params["text"], at_ms=params["at_ms"], seq=next(self.ids))
            return {"result": {"id": memory["id"]}}
        if method == "memory.delete":
            memory["deleted"] = True
            return {"result": {}}
        return {"error": {"code": -32601, "message": f"no method {method!r}"}}


def _shown(m: dict[str, Any]) -> dict[str, Any]:
    return {k: m[k] for k in ("id", "text", "at_ms", "deleted")}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _search(mems: dict[str, dict[str, Any]], query: str, k: int, with_deleted: bool) -> list[dict[str, Any]]:
    q = _words(query)
    scored = []
    for m in mems.values():
        words = re.findall(r"[a-z0-9]+", m["text"].lower())
        score = len(q & set(words)) / math.sqrt(len(words) or 1)
        if (with_deleted or not m["deleted"]) and score > 0:
            scored.append((-score, -m["seq"], m))
    return [{"id": m["id"], "text": m["text"], "score": -s} for s, _, m in sorted(scored, key=lambda t: t[:2])[:k]]


def _handler(product: RpcProduct) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            n = int(self.headers.get("Content-Length") or 0)
            req = json.loads(self.rfile.read(n) or b"{}")
            if self.path != "/rpc":
                out, status = {"error": {"code": -32600, "message": "not here"}}, 404
            else:
                out, status = product.call(self.headers.get("X-Tenant"), req.get("method", ""),
                                           req.get("params") or {}), 200
            data = json.dumps(out).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return H


@contextmanager
def start_rpc_product(search_deleted: bool = False) -> Iterator[RpcProduct]:
    product = RpcProduct(search_deleted=search_deleted)
    with serve_on_loopback(_handler(product)) as port:
        product.port = port
        yield product
