"""A real small memory product with a REST API, for the tests of the generic HTTP backend.

``start_product_server(token)`` runs a stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (port 0: the OS picks a
free one) in a thread for a ``with`` block and yields a :class:`ProductServer`. The product keeps its own
in-process store of namespaces; every request needs ``Authorization: Bearer <token>``.

API (JSON in and out; the product assigns its own memory ids, ``mem-<n>``, so clients must map ids)::

    POST   /v1/ns/{ns}/memories            {"text", "timestamp", "external_id"?} -> 201 {"id", ...}
    GET    /v1/ns/{ns}/memories            -> {"memories": [{"id", "text", "timestamp", "active"}, ...]}
    GET    /v1/ns/{ns}/memories/{id}       -> {"memory": {...}} | 404
    PUT    /v1/ns/{ns}/memories/{id}       {"text", "timestamp"} -> {"id"} (rewritten in place) | 404
    DELETE /v1/ns/{ns}/memories/{id}       -> 204 | 404
    POST   /v1/ns/{ns}/search              {"query", "top_k"} -> {"results": [{"id", "text", "score"}]}
    POST   /v1/ns/{ns}/snapshot            {"target"} -> 201 (a deep copy of the namespace, same ids); without a
                                           target the product names the copy: 201 {"namespace": "sp-<n>"}
    POST   /v1/spaces                      -> 201 {"space": {"sid": "sp-<n>"}} (a namespace the product names)
    DELETE /v1/ns/{ns}                     -> 204

Search is BM25 over lower-cased word tokens with a crude suffix stemmer; only memories sharing a term with
the query are returned, best first, equal scores by the client's ``external_id`` (then by id). ``fail_next`` and ``delay`` inject faults for tests.

Planted defects (issue 23's five kinds; each flag off is the fixed build, and flags can be flipped on a running
server: a redeploy):

* ``shadow_update``: PUT rewrites a memory but its old text stays in the search index under a new internal id
  that list and get never show (and, being the older index entry, it wins ties);
* ``entity_blind``: search drops the names a question spells out (capitalised words not starting a sentence);
* ``answer_floor``: ``POST /v1/ns/{ns}/ask {"question"}`` answers with the text of its best search hit when that
  hit scores at least this much, else ``"No matching note."`` — the planted build sets it to 0 (it answers below
  any sensible relevance), the fixed one to a cut-off that separates the suite's supported questions;
* ``capacity``: an add past this many stored memories silently evicts the oldest (by timestamp) from the store;
* ``peers_oldest_first``: ``POST /v1/ns/{ns}/memories/{id}/revise {"text", "timestamp", "external_id"}`` stores
  a new version beside the old one (the old one inactive, both searchable); the fixed product ranks the current
  version first among near-tied versions and reports the first-stage (BM25) score of each; the planted one ranks
  near-tied versions oldest first.

``delete_bug`` plants the defect of the triage walkthrough: DELETE only hides a memory from list and get (a
soft-delete flag the search index never learns about), so search keeps returning deleted memories. Setting it
back to False is the fixed build (the flag can be flipped on a running server: a redeploy).

``stale_index`` plants a defect of a kind found on a held-out product: PUT stores the new text (list and get show
it) but the search index is not told — search scores the memory by the text it had before (and returns the text
it has now), so a question in the new text's words does not find it.

``short_page`` and ``window`` plant two kinds found on a held-out product, which no operator sees because they hit
a mutant and its parent alike (:mod:`ufuzz.engine.probes` does): search returns one result too few whenever more
memories match than were asked for; search looks only at the ``window`` memories written last (list and get show
every one).

``retime_neighbour`` plants a defect of a kind issue 23 did not name: PUT also stamps the memory stored just
before the one it rewrites with the new timestamp (a careless "touch" of the wrong row), so that memory now
claims a time it was never said at; its text and everything else stay as they were.
"""

from __future__ import annotations

import copy
import json
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.support.loopback import serve_on_loopback

K1, B = 1.2, 0.75
_WORD = re.compile(r"[a-z0-9]+")


def _stem(w: str) -> str:
    for suf in ("ing", "es", "s", "ed"):
        if len(w) > len(suf) + 2 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def tokens(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower())]


def bm25(query: str, docs: dict[str, str]) -> list[tuple[str, float]]:
    """(id, score) for docs sharing a term with the query, best first, ties in the order the docs were stored
    (not by id: ids come from one counter over all namespaces, so they depend on everything stored before, and a
    product declared deterministic ranks a namespace the same whatever else it holds)."""
    toks = {i: tokens(t) for i, t in docs.items()}
    n = len(toks)
    if not n:
        return []
    avg = sum(len(t) for t in toks.values()) / n or 1.0
    df: Counter[str] = Counter()
    for t in toks.values():
        df.update(set(t))
    q = set(tokens(query))
    out = []
    for i, t in toks.items():
        tf = Counter(t)
        s = 0.0
        for term in q & set(tf):
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            s += idf * tf[term] * (K1 + 1) / (tf[term] + K1 * (1 - B + B * len(t) / avg))
        if s > 0:
            out.append((i, round(s, 6)))
    return sorted(out, key=lambda x: -x[1])  # stable: ties keep the docs' order


@dataclass
class Fault:
    status: int
    path_contains: str
    body: str


@dataclass
class ProductServer:
    token: str
    host: str = "127.0.0.1"
    port: int = 0
    namespaces: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    next_id: int = 1
    delay: float = 0.0  # seconds every request waits before answering (timeout tests)
    faults: list[Fault] = field(default_factory=list)
    delete_bug: bool = False  # the planted defect: delete hides from list/get, search still finds it
    shadow_update: bool = False
    entity_blind: bool = False
    answer_floor: float = 0.0
    capacity: int | None = None
    peers_oldest_first: bool = False
    retime_neighbour: bool = False
    stale_index: bool = False
    #: a snapshot that stores the copy's memories under ids it mints anew (a correct copy, but not one ufuzz can use:
    #: it addresses memories by id on every copy)
    snapshot_new_ids: bool = False
    short_page: bool = False
    window: int | None = None
    #: list pagination: pages of this many memories, linked by ``next`` (a path) or by an opaque ``cursor``
    page_size: int | None = None
    page_style: str = "next"
    #: replaces the product's ranking: (query, the namespace's memories by id) -> [(id, reported score)] in the
    #: order the product returns them (a product that reranks after a first-stage score)
    rank: Any = None
    seen_auth: list[str | None] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    next_space: int = 0
    lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def fail_next(self, status: int = 500, path_contains: str = "", body: str = "internal error") -> None:
        """The next request whose path contains ``path_contains`` gets ``status`` (once)."""
        with self.lock:
            self.faults.append(Fault(status, path_contains, body))

    # -- the product's logic ---------------------------------------------------------------------------
    def handle(self, method: str, path: str, auth: str | None, body: Any) -> tuple[int, Any]:
        with self.lock:
            self.seen_auth.append(auth)
            self.requests.append((method, path))
            for f in self.faults:
                if f.path_contains in path:
                    self.faults.remove(f)
                    return f.status, {"error": f.body}
        if auth != f"Bearer {self.token}":
            # a careless product that echoes what it got: the client must not repeat it
            return 401, {"error": f"invalid credentials {auth!r}"}
        parts = [unquote(p) for p in urlsplit(path).path.strip("/").split("/")]
        if parts == ["v1", "spaces"] and method == "POST":
            with self.lock:
                sid = self._new_space()
                self.namespaces[sid] = {}
            return 201, {"space": {"sid": sid}}
        if len(parts) < 3 or parts[:2] != ["v1", "ns"]:
            return 404, {"error": "no such route"}
        ns, rest = parts[2], parts[3:]
        with self.lock:
            if not rest and method == "DELETE":
                return (204, None) if self.namespaces.pop(ns, None) is not None else (404, {"error": "no ns"})
            store = self.namespaces.setdefault(ns, {})
            if rest == ["memories"] and method == "POST":
                if not isinstance(body, dict) or not isinstance(body.get("text"), str):
                    return 400, {"error": "body needs a string 'text'"}
                mid = self._new_id()
                store[mid] = {"id": mid, "text": body["text"], "timestamp": str(body.get("timestamp", "")),
                              "active": True, "external_id": body.get("external_id"), "seq": mid}
                self._evict(store, keep=mid)
                return 201, {"id": mid, "status": "created"}
            if len(rest) == 3 and rest[0] == "memories" and rest[2] == "revise" and method == "POST":
                old = store.get(rest[1])
                if old is None or old.get("deleted"):
                    return 404, {"error": f"no memory {rest[1]}"}
                if not isinstance(body, dict) or not isinstance(body.get("text"), str):
                    return 400, {"error": "body needs a string 'text'"}
                mid = self._new_id()
                old["active"] = False
                store[mid] = {"id": mid, "text": body["text"], "timestamp": str(body.get("timestamp", "")),
                              "active": True, "external_id": body.get("external_id"), "revises": old["id"],
                              "seq": mid}
                return 201, {"id": mid, "status": "revised"}
            if rest == ["ask"] and method == "POST":
                if not isinstance(body, dict) or not isinstance(body.get("question"), str):
                    return 400, {"error": "body needs a string 'question'"}
                hits = self._search(store, body["question"], 1)
                if not hits or hits[0][1] < self.answer_floor:
                    return 200, {"answer": "No matching note.", "cited": []}
                return 200, {"answer": store[hits[0][0]]["text"], "cited": [hits[0][0]]}
            if rest == ["memories"] and method == "GET":
                shown = [dict(m) for m in store.values() if not m.get("deleted")]  # in the order stored
                if self.page_size is None:
                    return 200, {"memories": shown, "count": len(shown)}
                query = parse_qs(urlsplit(path).query)
                at = int((query.get("cursor") or query.get("from") or ["0"])[0].removeprefix("c"))
                page = shown[at:at + self.page_size]
                more = at + self.page_size < len(shown)
                if self.page_style == "cursor":
                    return 200, {"memories": page, "cursor": f"c{at + self.page_size}" if more else None}
                nxt = f"{self.base_url}{urlsplit(path).path}?from={at + self.page_size}" if more else None
                return 200, {"memories": page, "links": {"next": nxt}}
            if len(rest) == 2 and rest[0] == "memories":
                m = store.get(rest[1])
                if m is None or m.get("deleted"):
                    return 404, {"error": f"no memory {rest[1]}"}
                if method == "GET":
                    return 200, {"memory": dict(m)}
                if method == "PUT":
                    if not isinstance(body, dict) or not isinstance(body.get("text"), str):
                        return 400, {"error": "body needs a string 'text'"}
                    if self.shadow_update:  # the old index entry is never dropped: a hidden copy stays searchable
                        sid = self._new_id()
                        store[sid] = {**m, "id": sid, "deleted": True, "shadow": True}
                    if self.stale_index:  # the index keeps what it had: the first text it was told
                        m.setdefault("indexed", m["text"])
                    m["text"] = body["text"]
                    m["timestamp"] = str(body.get("timestamp", m["timestamp"]))
                    if self.retime_neighbour:
                        self._retime_previous(store, m)
                    return 200, {"id": m["id"], "status": "updated"}
                if method == "DELETE":
                    if self.delete_bug:
                        m["deleted"] = True  # hidden from list and get; the search index is not told
                    else:
                        del store[rest[1]]
                    return 204, None
            if rest == ["search"] and method == "POST":
                if not isinstance(body, dict) or not isinstance(body.get("query"), str):
                    return 400, {"error": "body needs a string 'query'"}
                k = body.get("top_k", 10)
                if not isinstance(k, int) or k < 1:
                    return 400, {"error": "top_k must be a positive integer"}
                hits = self._search(store, body["query"], k)
                if self.rank is not None:
                    hits = list(self.rank(body["query"], store))[:k]
                return 200, {"results": [{"id": i, "text": store[i]["text"], "score": s} for i, s in hits]}
            if rest == ["snapshot"] and method == "POST":
                target = body.get("target") if isinstance(body, dict) else None
                if isinstance(body, dict) and "target" not in body:
                    target = self._new_space()  # the product names the copy
                if not isinstance(target, str) or not target:
                    return 400, {"error": "body needs a 'target' namespace"}
                if self.namespaces.get(target):
                    return 409, {"error": f"namespace {target} exists"}
                self.namespaces[target] = copy.deepcopy(store)
                if self.snapshot_new_ids:
                    fresh = {}
                    for m in self.namespaces[target].values():
                        nid = self._new_id()
                        fresh[nid] = {**m, "id": nid}
                    self.namespaces[target] = fresh
                return 201, {"namespace": target, "count": len(store)}
        return 405, {"error": f"{method} not allowed on {path}"}


    def _new_space(self) -> str:
        self.next_space += 1
        return f"sp-{self.next_space}"

    def _new_id(self) -> str:
        mid = f"mem-{self.next_id}"
        self.next_id += 1
        return mid

    def _evict(self, store: dict[str, dict[str, Any]], keep: str) -> None:
        """The planted capacity: past it, the oldest stored memory (by timestamp) is dropped, silently."""
        if self.capacity is None:
            return
        shown = [m for m in store.values() if not m.get("deleted")]
        while len(shown) > self.capacity:
            victim = min((m for m in shown if m["id"] != keep), key=lambda m: (m["timestamp"], _num(m["id"])))
            del store[victim["id"]]
            shown.remove(victim)

    def _retime_previous(self, store: dict[str, dict[str, Any]], m: dict[str, Any]) -> None:
        """The planted retime: the memory stored just before ``m`` takes ``m``'s new timestamp."""
        shown = [x for x in store.values() if not x.get("deleted")]
        at = next(n for n, x in enumerate(shown) if x is m)
        if at:
            shown[at - 1]["timestamp"] = m["timestamp"]

    def _search(self, store: dict[str, dict[str, Any]], query: str, k: int) -> list[tuple[str, float]]:
        """(id, score) best first, the product's order (see the module docstring for the planted variants)."""
        if self.entity_blind:
            query = _scrub_names(query)
        # equal scores by the client's own id where it gave one: product ids count across namespaces, so
        # ordering by them would make a campaign's results depend on what ran on the server before it; a shadow
        # (the older index entry) first
        order = {i: (m.get("external_id") or "", not m.get("shadow"), _num(m.get("seq") or i))
                 for i, m in store.items()}
        docs = {i: m.get("indexed", m["text"]) for i, m in store.items()}
        if self.window is not None:  # planted: only the memories written last are searched
            docs = {i: docs[i] for i in sorted(docs, key=lambda i: _num(store[i].get("seq") or i))[-self.window:]}
        ranked = bm25(query, docs)
        hits = sorted(ranked, key=lambda x: (-x[1], order[x[0]]))
        if any("revises" in m for m in store.values()):
            hits = self._order_versions(store, hits)
        if self.short_page and len(hits) > k:  # planted: one result too few whenever more match
            return hits[:k - 1]
        return hits[:k]

    def _order_versions(self, store: dict[str, dict[str, Any]], hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
        """Versions of one memory within 10% of the best version's score are near-tied: the fixed product puts
        the newest first (at the best version's place), the planted one the oldest; scores stay as BM25 gave
        them."""
        root: dict[str, str] = {}
        for i in store:
            r = i
            while "revises" in store[r] and store[r]["revises"] in store:
                r = store[r]["revises"]
            root[i] = r
        pos = {i: n for n, (i, _s) in enumerate(hits)}
        score = dict(hits)
        keys: dict[str, tuple[int, int]] = {}
        for i, _s in hits:
            group = [j for j in score if root[j] == root[i]]
            best = max(score[j] for j in group)
            tied = [j for j in group if best - score[j] <= 0.10 * abs(best)]
            if i not in tied:
                keys[i] = (pos[i], 0)
                continue
            age = sorted(tied, key=lambda j: _num(store[j]["seq"]))  # oldest first
            if not self.peers_oldest_first:
                age.reverse()
            keys[i] = (min(pos[j] for j in tied), age.index(i))
        return sorted(hits, key=lambda h: keys[h[0]])


def _num(mid: str) -> int:
    return int(mid.rsplit("-", 1)[-1]) if mid.rsplit("-", 1)[-1].isdigit() else 0


_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w-]*(?:['\u2019]s)?\b")


def _scrub_names(query: str) -> str:
    return " ".join(_NAME.sub(" ", query).split())


def _make_handler(server: ProductServer) -> type[BaseHTTPRequestHandler]:
    class _H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out at once (no 40 ms delayed-ACK stall)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def _serve(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                status, payload = 400, {"error": "body is not JSON"}
            else:
                if server.delay:
                    time.sleep(server.delay)
                status, payload = server.handle(self.command, self.path, self.headers.get("Authorization"), body)
            data = b"" if payload is None else json.dumps(payload).encode()
            try:
                self.send_response(status)
                if data:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                pass

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve  # noqa: N815 - stdlib names

    return _H


@contextmanager
def start_product_server(token: str, *, delete_bug: bool = False, **planted: Any) -> Iterator[ProductServer]:
    state = ProductServer(token=token, delete_bug=delete_bug, **planted)
    with serve_on_loopback(_make_handler(state)) as port:
        state.port = port
        yield state
