"""A generic adapter for a memory product's REST API (``--backend http --config product.toml``).

Everything product-specific lives in a TOML file (``options["config"]``); see ``examples/product.toml``.

Top level: ``base_url`` (required), ``name``, ``timeout`` (seconds, default 10), ``retries`` (default 0:
a failed request is reported at once; retrying a non-idempotent POST may duplicate a memory),
``retry_backoff`` (seconds), ``deterministic`` (default true), ``abstain_threshold`` (the product's own
relevance cut-off: search results it scores below this are not relevant to it; declaring it makes the
selection level judge abstention, a decoy memory scored at or above it being a failure), ``headers`` (a table
of extra headers; values may use placeholders).

``[auth]``: ``header`` (e.g. ``Authorization``), ``env`` (the environment variable holding the secret) and
``scheme`` (``Bearer`` by default; ``""`` sends the secret alone). The secret is read once, sent only in that
header and masked (``***``) in every error message; ``describe()`` names the header and variable only.

``[namespace]``: ``prefix`` of the namespace names the adapter invents for its states (one namespace per
state handle); use ``{namespace}`` in paths, bodies or headers to send it.

One table per operation: ``[add]``, ``[get]``, ``[list]`` (required), ``[search]`` and/or ``[answer]`` (at
least one), ``[update]``, ``[delete]`` (optional: the capability turns off without them), ``[snapshot]`` (optional: copies one
namespace into ``{target}``; with it ``fork`` is native and ``copyable`` is true), ``[create]`` and ``[drop]``
(optional: called when a state is built or released). Each has ``method`` (default GET, or POST for add,
search and snapshot), ``path`` (a template, e.g. ``/v1/{namespace}/memories/{id}``, values URL-quoted), an
optional ``body`` (a TOML value sent as JSON; a string that is exactly one placeholder, such as ``"{k}"``,
is replaced by the typed value) and JSON paths to the response fields:

* add: ``id`` (the product's id of the new memory; without it the ufuzz id is the product id)
* search: ``ids`` (required), ``texts``, ``scores`` (all wildcard paths, e.g. ``$.results[*].id``); the
  results are judged in the order the product returns them (its first k), never re-sorted by score;
  ``verbatim`` (default true: results are the stored memories themselves, so every verified write is read back
  beside a twin, :mod:`ufuzz.engine.readback`; false for a product whose search returns derived facts or chunks)
* answer: ``text`` (required: the product's response to the question ``{query}``), ``cited`` (a wildcard
  path to the product ids of the memories the response cites, if it says); ``abstain_phrases`` (what the
  product says when it has no answer, e.g. ``["No matching note."]``: matched as whole words) and
  ``abstain_defaults`` (default true: the built-in phrases of :mod:`ufuzz.oracles.matching` count too; false
  for a product whose real answers may say "unknown")
* get: ``text`` (required), ``timestamp``, ``active``; ``not_found`` statuses (default ``[404]``) mean None
* list: ``ids``, ``texts`` (required), ``timestamps``, ``actives``; pagination: ``next`` (a one-value path to
  the next page's path or URL on ``base_url``) or ``cursor`` (a one-value path to an opaque cursor, sent back as
  ``?{cursor_param}=...``, default ``cursor``), ``max_pages`` (default 1000); a null or empty link ends it
* update: ``policy`` = ``rewrite`` (in place, the default) or ``append`` (``{new_id}`` holds the new
  version, the old one stays as superseded), ``id`` (the product's id of the written memory)

A product with ``[answer]`` answers on its own: its response is judged (the response level). Without
``[search]`` it is *answer-only*: retrieval is hidden, so only responses are observed — a campaign keeps mutants
that give previously unseen (normalised) responses and judges responses only; memory operations are still
checked through ``[get]``/``[list]`` (the management API), never through a response. Cited ids are recorded
with executions and failures to help localise a failure, never judged. With both, both levels are judged
(``--retrieval-visibility hidden`` hides the search).

Placeholders: ``namespace``, ``id`` (product id), ``uid`` (ufuzz id), ``text``, ``timestamp`` (ISO-8601),
``timestamp_s`` / ``timestamp_ms`` (the same time as epoch seconds / milliseconds, a number; a time without a zone
is read as UTC), ``query``, ``k``, ``new_id``, ``target``. A product's own timestamps (``[get] timestamp``,
``[list] timestamps``) may be ISO-8601 or epoch seconds or milliseconds (numbers or digit strings): they are read
as ISO-8601 times in UTC. JSON paths are RFC 9535 JSONPath (evaluated by the ``python-jsonpath`` library):
``$``, ``.name``, ``['name']``, ``[3]``, ``[-1]``, ``[*]``, and also ``..name``, slices and filters
(``$.results[?@.score > 0]``); a path must start at ``$``. Paths of ``search`` and ``list`` must select a list
(not be an RFC "singular query").

Malformed configuration raises ``ValueError`` naming the file and key (``product.toml: [search] missing
'path'``); HTTP errors, timeouts and unreadable responses raise ``BackendError`` naming the operation and
the status.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import string
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

import tomllib
from jsonpath import JSONPath, JSONPathEnvironment, JSONPathError
from jsonpath.segments import JSONPathChildSegment
from jsonpath.selectors import IndexSelector, NameSelector, WildcardSelector
from pydantic import Field, StringConstraints, ValidationError

from ufuzz.backends.options import Option
from ufuzz.backends.protocol import (
    Answer,
    BackendError,
    BackendMismatch,
    BackendUnreachable,
    Capabilities,
    MemoryBackend,
    OpResult,
    Retrieved,
    StateHandle,
    StoredMemory,
)
from ufuzz.backends.states import StateTable
from ufuzz.backends.transport import Transport
from ufuzz.model import Checkpoint, Memory
from ufuzz.model.memory import utc_time
from ufuzz.strict import StrictModel, Text, field_path, first_error

# -- JSON paths (RFC 9535, through python-jsonpath) --------------------------------------------------------

#: strict = RFC 9535 as written: no unions or other extensions, so a config means the same in any JSONPath tool
_JSONPATH = JSONPathEnvironment(strict=True)


def _reason(exc: JSONPathError) -> str:
    """python-jsonpath's one-line reason and where it is (its ``str()`` draws a multi-line caret picture)."""
    msg = str(exc.args[0]) if exc.args else type(exc).__name__
    token = getattr(exc, "token", None)
    if token is None:
        return msg
    return f"{msg} at the end" if token.index < 0 else f"{msg} at position {token.index}"


@dataclass(frozen=True)
class JsonPath:
    """A JSONPath to a response field (``$.results[*].id``, ``$['memory']['text']``, ``$.hits[?@.score > 0]``).

    Parsing is python-jsonpath's RFC 9535 implementation, and so is evaluation of anything beyond plain
    ``.name``/``[n]``/``[*]`` steps; this class adds what the config needs: the path must start at the root
    ``$``, ``multi`` tells a list-valued path (one that is not an RFC "singular query") from a one-value path,
    and :meth:`prefix_found` tells a misconfigured path from an empty result.

    A path of plain steps only (what product configs use: ``$.results[*].id``) is evaluated by a direct walk
    over the library's parsed steps: python-jsonpath builds a match object with a normalized path string for
    every node it visits, about 50x the cost of the walk (``benchmarks/bench_http.py``), which would dominate
    ``list()`` of a large state. The walk follows the RFC as the library does (tested equal on generated
    documents and paths, tests/backends/test_http_backend.py).
    """

    text: str
    compiled: JSONPath
    steps: tuple[tuple[str, Any], ...] | None = None  # the plain steps, when the path has nothing else
    head: int = 0  # segments in the longest one-value prefix

    @property
    def multi(self) -> bool:
        return not self.compiled.singular_query()

    @classmethod
    def parse(cls, text: Any) -> JsonPath:
        if not isinstance(text, str) or not text.startswith("$"):
            raise ValueError(f"bad JSON path {text!r}: must start with '$'")
        try:
            compiled = _JSONPATH.compile(text)
        except JSONPathError as exc:
            raise ValueError(f"bad JSON path {text!r}: {_reason(exc)} (RFC 9535 JSONPath, e.g. "
                             "$.results[*].id)") from None
        if not isinstance(compiled, JSONPath):  # a union; strict mode does not parse one, but never guess
            raise ValueError(f"bad JSON path {text!r}: one path only, no unions")
        head = len(compiled.segments)
        while head and not JSONPath(env=_JSONPATH, segments=compiled.segments[:head]).singular_query():
            head -= 1
        return cls(text, compiled, _plain_steps(compiled), head)

    def prefix_found(self, doc: Any) -> bool:
        """Whether the longest one-value prefix of a list-valued path reaches a list or object (a wildcard
        path over a missing key is a misconfiguration, not an empty result)."""
        prefix = JSONPath(env=_JSONPATH, segments=self.compiled.segments[:self.head])
        steps = _plain_steps(prefix)  # a one-value prefix is names and indexes only
        head = _walk(steps, doc) if steps is not None else _find(prefix, doc)
        return bool(head) and (not self.multi or all(isinstance(v, list | dict) for v in head))

    def find(self, doc: Any) -> list[Any]:
        """Every value the path reaches, in document order (missing keys and indexes reach nothing)."""
        if self.steps is not None:
            return _walk(self.steps, doc)
        return _find(self.compiled, doc)


def _plain_steps(path: JSONPath) -> tuple[tuple[str, Any], ...] | None:
    """``(("name", "results"), ("all", None), ("name", "id"))`` for ``$.results[*].id``; None when the path has
    a step that is not one name, one index or the wildcard (descendants, slices, filters, several selectors)."""
    steps: list[tuple[str, Any]] = []
    for segment in path.segments:
        if type(segment) is not JSONPathChildSegment or len(segment.selectors) != 1:
            return None
        sel = segment.selectors[0]
        if type(sel) is NameSelector:
            steps.append(("name", sel.name))
        elif type(sel) is IndexSelector:
            steps.append(("index", sel.index))
        elif type(sel) is WildcardSelector:
            steps.append(("all", None))
        else:
            return None
    return tuple(steps)


def _walk(steps: tuple[tuple[str, Any], ...], doc: Any) -> list[Any]:
    """RFC 9535 child steps: a name selects an object member, an index an array element (negative from the
    end), the wildcard every member value or element in order; anything else selects nothing."""
    vals = [doc]
    for kind, arg in steps:
        nxt: list[Any] = []
        for v in vals:
            if kind == "name":
                if isinstance(v, dict) and arg in v:
                    nxt.append(v[arg])
            elif kind == "index":
                if isinstance(v, list) and -len(v) <= arg < len(v):
                    nxt.append(v[arg])
            elif isinstance(v, dict):
                nxt.extend(v.values())
            elif isinstance(v, list):
                nxt.extend(v)
        vals = nxt
    return vals


def _find(path: JSONPath, doc: Any) -> list[Any]:
    if isinstance(doc, str):  # python-jsonpath would parse a str as JSON text; here it is a JSON string value
        return [doc] if not path.segments else []
    try:
        return path.findall(doc)
    except JSONPathError as exc:  # e.g. a filter function given a value it cannot take
        raise ValueError(f"JSON path {str(path)!r} failed on the response: {_reason(exc)}") from None


# -- configuration ---------------------------------------------------------------------------------------

PLACEHOLDERS = frozenset({"namespace", "id", "uid", "text", "timestamp", "timestamp_s", "timestamp_ms", "query", "k",
                          "new_id", "target", "cursor"})
#: the placeholders each operation fills in
PROVIDES: dict[str, frozenset[str]] = {
    "add": frozenset({"namespace", "id", "uid", "text", "timestamp", "timestamp_s", "timestamp_ms"}),
    "search": frozenset({"namespace", "query", "k"}),
    "answer": frozenset({"namespace", "query"}),
    "get": frozenset({"namespace", "id", "uid"}),
    "list": frozenset({"namespace", "cursor"}),  # cursor: the page's (null on the first), with [list] cursor
    "update": frozenset({"namespace", "id", "uid", "new_id", "text", "timestamp", "timestamp_s", "timestamp_ms"}),
    "delete": frozenset({"namespace", "id", "uid"}),
    "snapshot": frozenset({"namespace", "target"}),
    "create": frozenset({"namespace"}),
    "drop": frozenset({"namespace"}),
}
REQUIRED_OPS = ("add", "get", "list")
#: at least one of these: what the product shows of its memory use
USE_OPS = ("search", "answer")
OPTIONAL_OPS = (*USE_OPS, "update", "delete", "snapshot", "create", "drop")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_DEFAULT_METHOD = {"add": "POST", "search": "POST", "answer": "POST", "snapshot": "POST", "create": "POST",
                   "drop": "DELETE", "delete": "DELETE", "update": "PUT"}
#: JSON-path keys per operation: name -> required?
_PATH_KEYS: dict[str, dict[str, bool]] = {
    "add": {"id": False},
    "search": {"ids": True, "texts": False, "scores": False},
    "answer": {"text": True, "cited": False},
    "get": {"text": True, "timestamp": False, "active": False, "id": False},
    "list": {"ids": True, "texts": True, "timestamps": False, "actives": False},
    "update": {"id": False},
    "delete": {},
    "snapshot": {"id": False},
    "create": {"id": False},
    "drop": {},
}
_OTHER_KEYS = {"method", "path", "body", "not_found", "not_found_when", "not_found_values"}
#: the operations that ask whether a memory (or a namespace) is there, and read "not found" (``not_found``,
#: ``not_found_when``) as an answer rather than a fault
_NOT_FOUND_OPS = ("get", "update", "delete", "drop")
#: the flags that may be read negated (``active = "!$.memory.deleted"``: a product that flags what is gone)
_NEGATABLE = ("active", "actives")
#: keys of one operation only
_OWN_KEYS = {"answer": {"abstain_phrases", "abstain_defaults"}, "list": {"next", "cursor", "cursor_param",
                                                                        "max_pages"}, "update": {"policy"},
             "search": {"verbatim"}}
_TOP_KEYS = {"base_url", "name", "timeout", "retries", "retry_backoff", "deterministic", "abstain_threshold", "error_when",
             "headers", "auth", "namespace", *REQUIRED_OPS, *OPTIONAL_OPS}
_TABLES = {"headers", "auth", "namespace", *REQUIRED_OPS, *OPTIONAL_OPS}


@dataclass(frozen=True)
class Operation:
    name: str
    method: str
    path: str
    body: Any = None
    paths: dict[str, JsonPath] = field(default_factory=dict)
    not_found: tuple[int, ...] = (404,)
    policy: str = "rewrite"
    extra: dict[str, Any] = field(default_factory=dict)  # the operation's own keys (_OWN_KEYS), checked
    #: a JSON path whose value (one of ``not_found_values``, when given) marks a successful answer as meaning "no
    #: such memory": a JSON-RPC or GraphQL error at HTTP 200
    not_found_when: JsonPath | None = None
    not_found_values: tuple[Any, ...] | None = None
    negated: frozenset[str] = frozenset()  # path keys read negated (_NEGATABLE)


@dataclass(frozen=True)
class ProductConfig:
    source: str  # file name used in messages
    base_url: str
    name: str
    timeout: float
    retries: int
    retry_backoff: float
    deterministic: bool
    abstain_threshold: float | None
    headers: dict[str, str]
    auth_header: str | None
    auth_env: str | None
    auth_scheme: str
    ns_prefix: str
    ops: dict[str, Operation]
    #: a JSON path whose value in a successful answer makes it an error (a JSON-RPC error at HTTP 200)
    error_when: JsonPath | None = None

    @cached_property
    def base_path(self) -> str:
        """The base URL's own path (``/api`` of ``http://host/api``): what a request's path is sent under, and how
        messages name it."""
        return urllib.parse.urlsplit(self.base_url).path.rstrip("/")


def _placeholders(template: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(template, str):
        for _lit, fname, _spec, _conv in string.Formatter().parse(template):
            if fname is not None:
                found.add(fname)
    elif isinstance(template, dict):
        for k, v in template.items():
            found |= _placeholders(k) | _placeholders(v)
    elif isinstance(template, list):
        for v in template:
            found |= _placeholders(v)
    return found


class _Auth(StrictModel):
    header: Text(200) | None = None
    env: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=200)] | None = None
    scheme: Text(100, blank=True) = "Bearer"


class _Namespace(StrictModel):
    prefix: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.~-]*$", max_length=100)] = "ufuzz-"


class _Operation(StrictModel):
    """Any operation table; which of the JSON-path keys an operation takes is checked per operation."""

    method: str | None = None
    path: str
    body: Any = None
    not_found: list[int] = Field(default_factory=lambda: [404])
    not_found_when: str | None = None
    not_found_values: list[str | int | float | bool] | None = None
    policy: str | None = None
    id: str | None = None
    ids: str | None = None
    texts: str | None = None
    scores: str | None = None
    text: str | None = None
    timestamp: str | None = None
    active: str | None = None
    timestamps: str | None = None
    actives: str | None = None
    cited: str | None = None
    abstain_phrases: list[Text(500)] | None = None
    abstain_defaults: bool | None = None
    verbatim: bool | None = None
    next: str | None = None
    cursor: str | None = None
    cursor_param: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.~-]+$", max_length=100)] | None = None
    max_pages: int | None = Field(default=None, ge=1, le=100000)


class ProductModel(StrictModel):
    """The product TOML's types and ranges (strict: ``timeout = "10"`` or ``= nan`` is refused by key)."""

    base_url: str | None = None
    name: Text(200) = "http-product"
    timeout: float = Field(default=10.0, ge=0.001, le=3600)
    retries: int = Field(default=0, ge=0, le=100)
    retry_backoff: float = Field(default=0.2, ge=0.0, le=600)
    deterministic: bool = True
    abstain_threshold: float | None = None
    error_when: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    auth: _Auth = Field(default_factory=_Auth)
    namespace: _Namespace = Field(default_factory=_Namespace)
    add: _Operation
    search: _Operation | None = None  # [search] and/or [answer]: checked after the types
    answer: _Operation | None = None
    get: _Operation
    list: _Operation
    update: _Operation | None = None
    delete: _Operation | None = None
    snapshot: _Operation | None = None
    create: _Operation | None = None
    drop: _Operation | None = None


def _config_error(src: str, exc: ValidationError) -> ValueError:
    """A pydantic error as ``product.toml: [table] 'key': message``."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(err["loc"])
    table = loc[0] if len(loc) > 1 and loc[0] in _TABLES else None
    key = field_path(loc[1:] if table else loc)
    where = f"[{table}] " if table else ""
    if err["type"] == "missing":
        if table is None and loc and loc[0] in REQUIRED_OPS:
            return ValueError(f"{src}: missing required operation [{loc[0]}]")
        return ValueError(f"{src}: {where}missing '{key}'")
    if err["type"] == "extra_forbidden":
        known = sorted(_TOP_KEYS) if table is None else sorted(
            _OTHER_KEYS | set(_PATH_KEYS[table]) | _OWN_KEYS.get(table, set()) if table in _PATH_KEYS else
            {"auth": {"header", "env", "scheme"}, "namespace": {"prefix"}}.get(table, set()))
        return ValueError(f"{src}: {where}unknown key(s) '{key}'; known: {', '.join(known)}")
    _field, message = first_error(exc)
    return ValueError(f"{src}: {where}'{key}': {message}")


def load_config(path: str | Path, base_url: str | None = None) -> ProductConfig:
    """Read and validate a product TOML file; every problem is a ValueError naming file and key."""
    p = Path(path)
    src = p.name
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{p}: config file not found") from None
    except IsADirectoryError:
        raise ValueError(f"{p}: is a directory, not a config file") from None
    except UnicodeDecodeError:
        raise ValueError(f"{p}: not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"{p}: cannot read config file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"\s*\(at line (\d+), column (\d+)\)$", str(exc))
        if at is None:
            raise ValueError(f"{p}: invalid TOML: {exc}") from None
        raise ValueError(f"{p}:{at.group(1)}: invalid TOML: {str(exc)[:at.start()]} (column {at.group(2)})") from None
    try:
        return parse_config(raw, src, base_url)
    except ValueError as exc:
        # said with the path as given (a walkthrough's bad/unknown_key.toml was named unknown_key.toml:28); the
        # config itself keeps the file's name as its source (recorded with every campaign: no machine path)
        said = _with_line(str(exc), src, p.read_text(encoding="utf-8"))
        raise ValueError(f"{p}{said[len(src):]}" if said.startswith(f"{src}:") else said) from None


def _with_line(message: str, src: str, text: str) -> str:
    """``product.toml: [t] 'key': …`` as ``product.toml:LINE: [t] 'key': …`` where the key (in table ``t``)
    is written, so that an editor jumps to it; the message as it was when the key is not found."""
    head = f"{src}: "
    if not message.startswith(head):
        return message
    rest = message[len(head):]
    table = re.match(r"\[(\w+)\]", rest)
    key = re.search(r"'([^'.\[\]]+)", rest)
    placeholder = re.search(r"placeholder\(s\) (\w+)", rest)
    if placeholder is not None:  # the first line of the table that uses it
        pattern = re.compile(r"\{" + re.escape(placeholder.group(1)) + r"\}")
    elif key is not None:
        pattern = re.compile(rf"^\s*[\"']?{re.escape(key.group(1))}[\"']?\s*=")
    else:
        return message
    current = None
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(r"^\s*\[\s*([\w.]+)\s*\]", line)
        if header:
            current = header.group(1).split(".")[0]
            continue
        code = line.split("#", 1)[0] if placeholder is not None else line  # a comment is not where it is used
        if pattern.search(code) and current == (table.group(1) if table else None):
            return f"{src}:{number}: {rest}"
    return message


def parse_config(raw: dict[str, Any], src: str = "product.toml", base_url: str | None = None) -> ProductConfig:
    def err(where: str, msg: str) -> ValueError:
        return ValueError(f"{src}: {where}{' ' if where else ''}{msg}")

    try:
        model = ProductModel.model_validate(raw)
    except ValidationError as exc:
        raise _config_error(src, exc) from None
    url = base_url or model.base_url
    if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
        raise err("", "missing or bad 'base_url' (e.g. base_url = \"http://127.0.0.1:8080\")")
    auth, headers = model.auth, model.headers
    if (auth.header is None) != (auth.env is None):
        raise err("[auth]", "needs both 'header' and 'env' (the environment variable holding the secret)")
    bad_ph = _placeholders(headers) - {"namespace"}
    if bad_ph:
        raise err("[headers]", f"uses placeholder(s) {', '.join(sorted(bad_ph))}; headers may use only "
                               "{namespace}")

    ops: dict[str, Operation] = {}
    for name in (*REQUIRED_OPS, *OPTIONAL_OPS):
        if getattr(model, name) is None:
            continue
        ops[name] = _parse_op(name, raw[name], err)
    if not any(op in ops for op in USE_OPS):
        raise err("", "needs [search] (ranked retrieval), [answer] (the product's own response) or both")
    error_when = None
    if model.error_when is not None:
        try:
            error_when = JsonPath.parse(model.error_when)
        except ValueError as exc:
            raise err("", f"'error_when': {exc}") from None
    return ProductConfig(src, url.rstrip("/"), model.name, model.timeout, model.retries, model.retry_backoff,
                         model.deterministic, model.abstain_threshold, dict(headers), auth.header, auth.env,
                         auth.scheme, model.namespace.prefix, ops, error_when)


def _parse_op(name: str, t: dict[str, Any], err: Any) -> Operation:
    where = f"[{name}]"
    keys = _PATH_KEYS[name]
    own = _OWN_KEYS.get(name, set())
    bad = sorted(set(t) - _OTHER_KEYS - set(keys) - own)
    if bad:
        raise err(where, f"unknown key(s) {', '.join(map(repr, bad))}; known: "
                         f"{', '.join(sorted(_OTHER_KEYS | set(keys) | own))}")
    if "path" not in t:
        raise err(where, "missing 'path'")
    path = t["path"]
    if not isinstance(path, str) or not path.startswith("/"):
        raise err(where, f"'path' must be a string starting with '/', got {path!r}")
    method = t.get("method", _DEFAULT_METHOD.get(name, "GET"))
    if not isinstance(method, str) or method.upper() not in METHODS:
        raise err(where, f"'method' must be one of {', '.join(METHODS)}, got {method!r}")
    body = t.get("body")
    try:
        used = _placeholders(path) | _placeholders(body)
    except ValueError as exc:
        raise err(where, f"bad template: {exc}") from None
    bad_ph = used - PLACEHOLDERS
    if bad_ph:
        raise err(where, f"uses unknown placeholder(s) {', '.join(sorted(bad_ph))}; "
                         f"{name} provides: {', '.join(sorted(PROVIDES[name]))}")
    missing = used - PROVIDES[name]
    if missing:
        raise err(where, f"uses placeholder(s) {', '.join(sorted(missing))} that {name} does not provide; "
                         f"it provides: {', '.join(sorted(PROVIDES[name]))}")
    paths: dict[str, JsonPath] = {}
    negated: set[str] = set()
    for key, required in keys.items():
        if key not in t:
            if required:
                raise err(where, f"missing '{key}' (a JSON path such as '$.results[*].{key.rstrip('s')}')")
            continue
        text = t[key]
        if key in _NEGATABLE and isinstance(text, str) and text.startswith("!"):
            negated.add(key)
            text = text[1:].lstrip()
        try:
            jp = JsonPath.parse(text)
        except ValueError as exc:
            raise err(where, f"'{key}': {exc}") from None
        if (name in ("search", "list") or key == "cited") and not jp.multi:
            raise err(where, f"'{key}': {jp.text!r} must select a list with [*] (e.g. '$.results[*].{key.rstrip('s')}')")
        if name == "answer" and key == "text" and jp.multi:
            raise err(where, f"'text': {jp.text!r} must select one value, not a list (no [*])")
        paths[key] = jp
    nf = t.get("not_found", [404])
    if not isinstance(nf, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in nf):
        raise err(where, f"'not_found' must be a list of HTTP status codes, got {nf!r}")
    nf_when = None
    if t.get("not_found_when") is not None:
        try:
            nf_when = JsonPath.parse(t["not_found_when"])
        except ValueError as exc:
            raise err(where, f"'not_found_when': {exc}") from None
    nf_values = t.get("not_found_values")
    if nf_values is not None and nf_when is None:
        raise err(where, "'not_found_values' needs 'not_found_when' (the JSON path of the value, e.g. '$.error.code')")
    if nf_values is not None and not nf_values:
        raise err(where, "'not_found_values' is empty: list the values that mean \"no such memory\" (e.g. [-32004])")
    if nf_when is not None and name not in _NOT_FOUND_OPS:
        raise err(where, f"'not_found_when' is read only by {', '.join(f'[{o}]' for o in _NOT_FOUND_OPS)} (a "
                         "memory or namespace that is not there); for other errors at HTTP 200 use the top-level "
                         "'error_when'")
    policy = t.get("policy", "rewrite")  # [update] only: another table's 'policy' is an unknown key above
    if policy not in ("rewrite", "append"):
        raise err(where, f"'policy' must be 'rewrite' or 'append', got {policy!r}")
    extra = {k: t[k] for k in own if k in t and k != "policy"}
    if "abstain_phrases" in extra:
        if not all(isinstance(p, str) and re.search(r"\w", p) for p in extra["abstain_phrases"]):
            raise err(where, "'abstain_phrases' must be a list of phrases with words in them")
        extra["abstain_phrases"] = tuple(extra["abstain_phrases"])
    if name == "list":
        extra.update(_parse_pagination(extra, path, err))
        extra["cursor_in_request"] = "cursor" in used  # sent as {cursor} in the path or body, not as ?cursor=
    if "cursor" in used and "cursor" not in t:
        raise err(where, "uses {cursor} but has no 'cursor' (a JSON path to the cursor in each page)")
    if "cursor" in used and "cursor_param" in t:
        raise err(where, "'cursor_param' names the query parameter of a cursor the path does not place; with "
                         "{cursor} in the path or body it is not used: remove it")
    return Operation(name, method.upper(), path, body, paths, tuple(nf), policy, extra, nf_when,
                     None if nf_values is None else tuple(nf_values), frozenset(negated))


def _parse_pagination(t: dict[str, Any], path: str, err: Any) -> dict[str, Any]:
    """``[list]`` pagination: ``next`` (a JSON path to the next page's URL or path; absent, null or empty on the
    last page) or ``cursor`` (a JSON path to an opaque cursor, sent back as the query parameter
    ``cursor_param``, default ``cursor``); ``max_pages`` (default 1000) stops a product that never ends."""
    if "next" in t and "cursor" in t:
        raise err("[list]", "give 'next' (a link to the next page) or 'cursor', not both")
    if "cursor_param" in t and "cursor" not in t:
        raise err("[list]", "'cursor_param' needs 'cursor' (a JSON path to the cursor in each page)")
    out: dict[str, Any] = {"max_pages": int(t.get("max_pages", 1000))}
    for key in ("next", "cursor"):
        if key in t:
            try:
                jp = JsonPath.parse(t[key])
            except ValueError as exc:
                raise err("[list]", f"{key}: {exc}") from None
            if jp.multi:
                raise err("[list]", f"{key}: {jp.text!r} must select one value, not a list (no [*])")
            out[key] = jp
    out["cursor_param"] = str(t.get("cursor_param", "cursor"))
    return out


# -- the adapter -------------------------------------------------------------------------------------------


def _not_found_by(found: list[Any], values: Sequence[Any] | None) -> bool:
    """Whether the values an answer holds at ``not_found_when`` say "no such memory": any value when no
    ``not_found_values`` are given, else one equal to a listed value of the same kind (True is not 1). The
    standalone reproducer embeds this function, so that it reads an answer as the campaign did."""
    if values is None:
        return any(v is not None for v in found)
    return any(v == w and isinstance(v, bool) == isinstance(w, bool) for v in found for w in values)


def _times(timestamp: str) -> dict[str, Any]:
    """A memory's timestamp for the request's placeholders: as written (ISO-8601) and as epoch seconds and
    milliseconds (a time without a zone is UTC), for products that take numbers (None where it is no time)."""
    try:
        seconds = utc_time(timestamp).timestamp()
    except (AttributeError, ValueError):
        return {"timestamp": timestamp, "timestamp_s": None, "timestamp_ms": None}
    return {"timestamp": timestamp, "timestamp_s": int(seconds), "timestamp_ms": int(round(seconds * 1000))}


#: a number (or digit string) this large or larger is an epoch time; smaller ones ("20230501", "2023") are not
_EPOCH_MIN = 1e9
#: epoch units by magnitude: seconds below 1e11 (until the year 5138), then milliseconds, microseconds, nanoseconds
_EPOCH_UNITS = ((1e11, 1.0), (1e14, 1e3), (1e17, 1e6), (float("inf"), 1e9))


def _when(raw: Any) -> str:
    """A product's timestamp as ufuzz compares them — ISO-8601, UTC, no zone: an ISO string (a date, a space for
    the ``T``, an offset: all written alike), epoch seconds, milliseconds, microseconds or nanoseconds (a number
    or a digit string of ten digits or more) converted; anything else as its text. Compared as text,
    "1796543065294" (December 2026 in milliseconds) read as older than "2024-02-01T10:00:00" and failed a
    product's conformance check."""
    if raw is None or isinstance(raw, bool):
        return ""
    if isinstance(raw, str) and re.fullmatch(r"\s*-?\d+(?:\.\d+)?\s*", raw) and abs(float(raw)) >= _EPOCH_MIN:
        raw = float(raw)
    if isinstance(raw, (int, float)) and abs(raw) >= _EPOCH_MIN:
        scale = next(unit for limit, unit in _EPOCH_UNITS if abs(raw) < limit)
        try:
            return datetime.fromtimestamp(raw / scale, tz=timezone.utc).replace(tzinfo=None).isoformat()
        except (OverflowError, OSError, ValueError):
            return str(raw)
    text = str(raw)
    try:
        return utc_time(text.strip()).astimezone(timezone.utc).replace(tzinfo=None).isoformat()
    except ValueError:
        return text


def _render(template: Any, values: dict[str, Any], quote: bool = False) -> Any:
    if isinstance(template, str):
        parsed = list(string.Formatter().parse(template))
        if len(parsed) == 1 and parsed[0][0] == "" and parsed[0][1] and not quote:
            return values[parsed[0][1]]  # exactly one placeholder: keep the value's type
        out = []
        for lit, fname, _spec, _conv in parsed:
            out.append(lit)
            if fname is not None:
                v = "" if values.get(fname) is None else str(values[fname])
                out.append(urllib.parse.quote(v, safe="") if quote else v)
        return "".join(out)
    if isinstance(template, dict):
        return {_render(k, values): _render(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [_render(v, values) for v in template]
    return template


def _with_options(cfg: ProductConfig, settings: dict[str, Any]) -> ProductConfig:
    """``cfg`` with the judging settings given as options (``--opt abstain_threshold=0.4``) in place of the
    file's."""
    if settings.get("abstain_threshold") is not None:
        cfg = replace(cfg, abstain_threshold=float(settings["abstain_threshold"]))
    extra: dict[str, Any] = {}
    if settings.get("abstain_phrases") is not None:
        phrases = tuple(p.strip() for p in str(settings["abstain_phrases"]).split("|") if p.strip())
        if not phrases or not all(re.search(r"\w", p) for p in phrases):
            raise ValueError(f"http backend: option abstain_phrases: no phrase with words in "
                             f"{settings['abstain_phrases']!r} (phrases are separated by '|')")
        extra["abstain_phrases"] = phrases
    if settings.get("abstain_defaults") is not None:
        extra["abstain_defaults"] = bool(settings["abstain_defaults"])
    if extra:
        if "answer" not in cfg.ops:
            raise ValueError(f"http backend: option(s) {', '.join(sorted(extra))} need an [answer] operation "
                             f"in {cfg.source} (they say how the product's own answer abstains)")
        ops = dict(cfg.ops)
        ops["answer"] = replace(ops["answer"], extra={**ops["answer"].extra, **extra})
        cfg = replace(cfg, ops=ops)
    return cfg


@dataclass
class _State:
    namespace: str  # ufuzz's name of the state (its handle)
    to_product: dict[str, str] = field(default_factory=dict)  # ufuzz id -> product id
    to_ufuzz: dict[str, str] = field(default_factory=dict)
    #: the product's own id of the namespace, where ``[create] id`` / ``[snapshot] id`` read one from its answer
    product_ns: str | None = None

    @property
    def addr(self) -> str:
        """What ``{namespace}`` is in this state's requests: the product's id of it, else ufuzz's name."""
        return self.product_ns or self.namespace


class _HttpStatus(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(status)
        self.status, self.body = status, body


#: seconds one request may spend in all waiting out 429/503 answers that say when to come back (Retry-After)
RATE_LIMIT_WAIT = 300.0
#: longest single Retry-After wait honoured (a longer one is waited this long, then asked again)
MAX_RETRY_AFTER = 60.0


def _rate_wait(status: int, headers: Any) -> float | None:
    """The wait a 429 or 503 answer asks for (its Retry-After, capped), or None (another status, or none said)."""
    if status not in (429, 503):
        return None
    from ufuzz.llm.client import retry_after_seconds

    seconds = retry_after_seconds(headers.get("Retry-After") if headers is not None else None)
    return None if seconds is None else min(max(seconds, 0.01), MAX_RETRY_AFTER)


class _IOLock:
    """A re-entrant lock that its holder lets go of while it waits on the network (:meth:`released`), so that
    one thread's request does not hold up another's: it guards the adapter's state table, not the product."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._depth = 0

    def __enter__(self) -> _IOLock:
        me = threading.get_ident()
        if self._owner != me:
            self._lock.acquire()
            self._owner = me
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if not self._depth:
            self._owner = None
            self._lock.release()

    @contextlib.contextmanager
    def released(self) -> Iterator[None]:
        """Let go of the lock (if this thread holds it) for the block, then take it back as deep as before."""
        if self._owner != threading.get_ident():
            yield
            return
        depth, self._depth, self._owner = self._depth, 0, None
        self._lock.release()
        try:
            yield
        finally:
            self._lock.acquire()
            self._owner, self._depth = threading.get_ident(), depth


class HttpBackend(MemoryBackend):
    """A memory product reached over HTTP, described by a TOML file (see the module docstring)."""

    name = "http"
    extra = None  # no library of its own beyond the core dependencies
    # calls from several threads overlap (--max-concurrency): the lock guards the state table, never a request
    concurrent_calls = True
    build_checks_listing = True  # _check_listing: a paged listing read as one page is refused at the preflight
    options_spec = (
        Option("config", path=True, required=True, help="path of the product TOML file, set by --config FILE; "
                                             "see examples/product.toml"),
        Option("base_url", url=True, help="overrides the file's base_url"),
        # the judging settings a product TOML holds, so that one file serves every run (--opt overrides it)
        Option("abstain_threshold", float, help="overrides the file's abstain_threshold (the product's own "
                                                "relevance cut-off)"),
        Option("abstain_phrases", help="overrides [answer] abstain_phrases: the product's abstention phrases, "
                                       "separated by '|' (e.g. 'No matching note.|Nothing found')"),
        Option("abstain_defaults", bool, help="overrides [answer] abstain_defaults (false: only the product's "
                                              "own phrases count as abstention)"),
    )

    def __init__(self, workdir: Path, options: dict[str, Any] | None = None) -> None:
        super().__init__(workdir, options)
        self.config_path = Path(self.settings["config"])
        self.config = _with_options(load_config(self.config_path, self.settings["base_url"]), self.settings)
        self._secret: str | None = None
        if self.config.auth_env:
            secret = os.environ.get(self.config.auth_env)
            if not secret:
                raise ValueError(f"{self.config_path}: [auth] env names {self.config.auth_env}, "
                                 "which is not set (or empty)")
            self._secret = secret
        self._run_id = uuid.uuid4().hex[:8]
        self._lock = _IOLock()  # held around the state table; let go while a request waits on the network
        self._transport = Transport()  # each thread's connection to the product kept open between requests
        # a state's handle is its namespace: <prefix><run>-s<n>
        self._states: StateTable[_State] = StateTable("http backend",
                                                      prefix=f"{self.config.ns_prefix}{self._run_id}-s")

    def __repr__(self) -> str:
        return f"HttpBackend(config={str(self.config_path)!r}, base_url={self.config.base_url!r})"

    # -- description -------------------------------------------------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        ops = self.config.ops
        scores = "search" in ops and "scores" in ops["search"].paths
        notes = [f"HTTP product {self.config.name!r} from {self.config.source}"]
        if "answer" in ops:
            notes.append("answers through [answer]" + ("" if "search" in ops else
                                                         "; no [search]: retrieval hidden, responses only"))
        notes.append("fork via [snapshot]" if "snapshot" in ops else
                     "no [snapshot]: fork rebuilt by the executor")
        if "search" in ops and not scores:
            notes.append("no search scores: score = 1/(rank+1)")
        if "update" in ops:
            notes.append(f"update policy {ops['update'].policy}")
        return Capabilities(visible_retrieval="search" in ops, copyable="snapshot" in ops,
                            native_update="update" in ops, native_delete="delete" in ops, observable_state=True,
                            answers="answer" in ops,
                            verbatim_search="search" in ops and ops["search"].extra.get("verbatim", True) is not False,
                            deterministic=self.config.deterministic,
                            relevance_threshold=self.config.abstain_threshold,
                            abstain_phrases=tuple(ops["answer"].extra.get("abstain_phrases", ()))
                            if "answer" in ops else (),
                            abstain_defaults=bool(ops["answer"].extra.get("abstain_defaults", True))
                            if "answer" in ops else True,
                            reader_threshold=self.config.abstain_threshold, notes="; ".join(notes))

    @classmethod
    def static_capabilities(cls) -> Capabilities:
        """What holds for any product config, for ``ufuzz backends`` (the real ones come from the file)."""
        return Capabilities(copyable=False, notes="REST memory product described by --config product.toml "
                                                  "(see examples/product.toml, examples/agent.toml); copyable "
                                                  "only with a [snapshot] operation, update/delete only when "
                                                  "configured; answers with an [answer] operation, retrieval "
                                                  "hidden without [search]")

    def describe(self) -> dict[str, Any]:
        c = self.config
        return {"backend": self.name, "config": str(self.config_path), "product": c.name, "base_url": c.base_url,
                "timeout": c.timeout, "retries": c.retries,
                "auth": ({"header": c.auth_header, "env": c.auth_env} if c.auth_header else None),
                "operations": {n: f"{o.method} {o.path}" for n, o in c.ops.items()},
                "update_policy": c.ops["update"].policy if "update" in c.ops else None}

    @classmethod
    def caveats(cls, options: dict[str, Any] | None) -> list[str]:
        """A ``[search]`` without ``texts``: each result's text is then read with GET, the memory as stored now,
        so a search that returns an old text under a current id (an index an update did not reach, a superseded
        revision) is invisible — a held-out product's stale-update bug gave 0 failures without ``texts`` and 94
        with it."""
        config = (options or {}).get("config")
        if not config:
            return []
        try:
            cfg = load_config(config, (options or {}).get("base_url"))
        except (OSError, ValueError):
            return []  # the config's own errors are reported where it is loaded
        search = cfg.ops.get("search")
        if search is not None and "texts" not in search.paths:
            return [f"{config}: [search] gives no texts path, so each result's text is read with GET (the "
                    "memory as stored now): a search that returns an old text under a current id is not seen; give "
                    "[search] texts where the product's results carry the text"]
        return []

    # -- HTTP plumbing -------------------------------------------------------------------------------------
    def _mask(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "***")
        return text

    def _fail(self, op: str, msg: str, unreachable: bool = False, mismatch: bool = False) -> BackendError:
        """A BackendError naming the config file and operation; BackendUnreachable when no HTTP answer came
        back at all (refused, reset, timed out), so callers can tell a product that is down from one that
        answers wrongly; BackendMismatch when a successful answer has nothing where a JSON path of the config
        points (a path to fix, before a campaign starts)."""
        cls = BackendUnreachable if unreachable else BackendMismatch if mismatch else BackendError
        where = f" at {self.config.base_url}" if unreachable else ""  # which address was down (walkthrough)
        return cls(self._mask(f"http backend ({self.config.source}){where}: {op}: {msg}"))

    def _request(self, op_name: str, values: dict[str, Any], not_found_ok: bool = False,
                 path: str | None = None, refused: tuple[int, ...] = ()) -> tuple[int, Any]:
        """(status, parsed JSON or None). With ``not_found_ok``, a status in the op's ``not_found`` list
        raises _HttpStatus (the caller reports "no such memory"), and so does a status in ``refused`` (the caller
        reports the product's refusal: an add's 409 Conflict); every other failure is a BackendError.
        ``path`` replaces the op's rendered path (a list's next page)."""
        op = self.config.ops[op_name]
        path = _render(op.path, values, quote=True) if path is None else path
        url = self.config.base_url + path
        data = None
        headers = {"Accept": "application/json", "User-Agent": "ufuzz-http-backend"}
        for k, v in self.config.headers.items():
            headers[k] = str(_render(v, values))
        if op.body is not None:
            data = json.dumps(_render(op.body, values)).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.config.auth_header and self._secret:
            scheme = self.config.auth_scheme
            headers[self.config.auth_header] = f"{scheme} {self._secret}" if scheme else self._secret
        what = f"{op.method} {self.config.base_path}{path}"  # as sent
        attempts = 1 + self.config.retries
        last: BackendError | None = None
        attempt, waited = 0, 0.0
        while attempt < attempts:
            if attempt:
                with self._lock.released():
                    time.sleep(self.config.retry_backoff * attempt)
            attempt += 1
            try:
                with self._lock.released():
                    answer = self._transport.send(op.method, url, data, headers, self.config.timeout)
            except TimeoutError:
                last = self._fail(op_name, f"{what} timed out after {self.config.timeout:g}s", unreachable=True)
                continue
            except (OSError, http.client.HTTPException) as exc:  # refused, reset, closed without an answer, ...
                last = self._fail(op_name, f"{what} failed: {type(exc).__name__}: {exc}", unreachable=True)
                continue
            except ValueError as exc:  # a URL that cannot be used
                last = self._fail(op_name, f"{what} failed: {type(exc).__name__}: {exc}")
                continue
            status, raw = answer.status, answer.body
            if status >= 400:
                body = raw.decode("utf-8", "replace")
                if (not_found_ok and status in op.not_found) or status in refused:
                    raise _HttpStatus(status, body)
                last = self._fail(op_name, f"{what} returned HTTP {status}: {body[:300]}")
                wait = _rate_wait(status, answer.headers)
                if wait is not None and waited + wait <= RATE_LIMIT_WAIT:
                    # "too many requests, come back in N s": the request was not done, so it is sent again
                    # after the wait without using up the configured retries (even a POST: nothing was written)
                    waited += wait
                    attempt -= 1
                    with self._lock.released():
                        time.sleep(wait)
                    continue
                if status >= 500 or status == 429:
                    continue
                raise last
            if not raw.strip():
                return status, None
            try:
                doc = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise self._fail(op_name, f"{what} returned HTTP {status} with a body that is not JSON "
                                          f"({exc})") from None
            if not_found_ok and self._says_not_found(op, doc):
                raise _HttpStatus(status, raw.decode("utf-8", "replace"))
            error = self._error_in(op, doc)
            if error is not None:  # an error at HTTP 200: a fault like any other, never success
                raise self._fail(op_name, f"{what} answered an error at HTTP {status} ({error}): "
                                          f"{raw.decode('utf-8', 'replace')[:300]}")
            return status, doc
        assert last is not None
        if attempts > 1:
            raise type(last)(f"{last} (after {attempts} attempts)")
        raise last

    def _error_in(self, op: Operation, doc: Any) -> str | None:
        """What marks a successful answer as an error: a value at the top-level ``error_when``, or one at the op's
        ``not_found_when`` other than its ``not_found_values`` (that error is not "no such memory")."""
        for jp in (self.config.error_when, op.not_found_when):
            if jp is not None and any(v is not None for v in self._find(op.name, jp, doc)):
                return f"{jp.text} is set"
        return None

    def _says_not_found(self, op: Operation, doc: Any) -> bool:
        """Whether a successful answer says there is no such memory (``not_found_when``, ``not_found_values``)."""
        return op.not_found_when is not None and _not_found_by(self._find(op.name, op.not_found_when, doc),
                                                               op.not_found_values)

    def _find(self, op_name: str, jp: JsonPath, doc: Any) -> list[Any]:
        try:
            return jp.find(doc)
        except ValueError as exc:
            raise self._fail(op_name, str(exc)) from None

    def _one(self, op_name: str, key: str, doc: Any, required: bool = True) -> Any:
        jp = self.config.ops[op_name].paths.get(key)
        if jp is None:
            return None
        vals = self._find(op_name, jp, doc)
        if not vals:
            if required:
                raise self._fail(op_name, f"response has no value at {key} = {jp.text!r}: {str(doc)[:200]}",
                                 mismatch=True)
            return None
        return vals if jp.multi else vals[0]

    def _many(self, op_name: str, key: str, doc: Any, n: int | None) -> list[Any] | None:
        jp = self.config.ops[op_name].paths.get(key)
        if jp is None:
            return None
        try:
            found = jp.prefix_found(doc)
        except ValueError as exc:
            raise self._fail(op_name, str(exc)) from None
        if not found:
            raise self._fail(op_name, f"response has no list at {key} = {jp.text!r}: {str(doc)[:200]}",
                             mismatch=True)
        vals = self._find(op_name, jp, doc)
        if n is not None and len(vals) != n:
            raise self._fail(op_name, f"response has {len(vals)} values at {key} = {jp.text!r} "
                                      f"but {n} ids")
        return vals

    def _new_state(self) -> _State:
        ns = self._states.mint()
        return self._states.put(ns, _State(ns))

    # -- states ------------------------------------------------------------------------------------------
    def build(self, checkpoint: Checkpoint) -> StateHandle:
        with self._lock:
            st = self._new_state()
            try:
                if "create" in self.config.ops:
                    _status, doc = self._request("create", {"namespace": st.namespace})
                    made = self._one("create", "id", doc)
                    if made is not None:  # the product names the namespace itself: later requests use its id
                        st.product_ns = str(made)
                for m in checkpoint.memories:
                    res = self._add(st, m)
                    if not res.ok:
                        raise BackendError(f"http backend: build of {checkpoint.id!r}: {res.detail}")
                self._check_listing(st, checkpoint)
            except BackendError:
                self._abandon(st)
                raise
            return st.namespace

    def _check_listing(self, st: _State, checkpoint: Checkpoint) -> None:
        """The listing of a state just built holds every memory the product said it stored. One that does not
        would make every side-effect check read memories as added or gone (a paged listing read as its first
        page: "the delete added p10-m11"), so it is refused — a configuration to fix before a campaign, a fault
        of that build during one — never judged."""
        if "list" not in self.config.ops or not st.to_ufuzz:
            return
        listed = {str(m.metadata.get("product_id")) for m in self.list(st.namespace)}
        missing = [uid for pid, uid in st.to_ufuzz.items() if str(pid) not in listed]
        if not missing:
            return
        op = self.config.ops["list"]
        paged = "next" in op.extra or "cursor" in op.extra
        hint = ("it pages the listing further than [list] max_pages, or lost them" if paged else
                "a product that pages its listing needs [list] next or cursor (docs/product-toml.md), or it lost them")
        raise BackendMismatch(
            f"http backend: [list] of a state built from {checkpoint.id!r} holds {len(st.to_ufuzz) - len(missing)} "
            f"of the {len(st.to_ufuzz)} memories the product said it stored (missing e.g. {sorted(missing)[:3]}): "
            f"{hint}")

    def fork(self, state: StateHandle) -> StateHandle:
        if "snapshot" not in self.config.ops:
            raise NotImplementedError("http backend: no [snapshot] operation configured")
        with self._lock:
            src = self._states.get(state, "fork")
            dst = self._new_state()
            try:
                _status, doc = self._request("snapshot", {"namespace": src.addr, "target": dst.namespace})
                made = self._one("snapshot", "id", doc)
                if made is not None:
                    dst.product_ns = str(made)
            except BackendError:
                self._abandon(dst)
                raise
            dst.to_product = dict(src.to_product)  # a snapshot keeps the product's ids
            dst.to_ufuzz = dict(src.to_ufuzz)
            return dst.namespace

    def _abandon(self, st: _State) -> None:
        """Forget a state whose making failed, and drop whatever of it the product made (best effort): a
        namespace the product named is found by nothing else afterwards."""
        self._states.pop(st.namespace)
        try:
            self._drop(st)
        except BackendError:
            pass  # the failure that brought us here is the one to report

    def release(self, state: StateHandle) -> None:
        with self._lock:
            st = self._states.pop(state)
            if st is not None:
                self._drop(st)

    def _drop(self, st: _State) -> None:
        """``[drop]`` of the state's namespace, where the product has one (one already gone is dropped)."""
        if "drop" not in self.config.ops:
            return
        try:
            self._request("drop", {"namespace": st.addr}, not_found_ok=True)
        except _HttpStatus:
            pass  # already gone

    # -- retrieval -----------------------------------------------------------------------------------------
    def retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        with self._lock:
            st = self._states.get(state, "retrieve")
            if k <= 0 or "search" not in self.config.ops:  # answer-only: its retrieval is not seen
                return []
            _status, doc = self._request("search", {"namespace": st.addr, "query": query, "k": k})
            ids = self._many("search", "ids", doc, None) or []
            texts = self._many("search", "texts", doc, len(ids))
            scores = self._many("search", "scores", doc, len(ids))
            out: list[Retrieved] = []
            for rank, pid in enumerate(ids[:k]):
                uid = st.to_ufuzz.get(str(pid), str(pid))
                if texts is not None:
                    text = "" if texts[rank] is None else str(texts[rank])
                else:
                    got = self._get(st, uid)
                    text = got.text if got else ""
                if scores is not None:
                    try:
                        score = float(scores[rank])
                    except (TypeError, ValueError):
                        raise self._fail("search", f"score {scores[rank]!r} is not a number") from None
                else:
                    score = 1.0 / (rank + 1)
                out.append(Retrieved(uid, text, score, native_id=str(pid)))
            # the product's own order is the order judged: a product that reranks (recency, current revision
            # first) after a first-stage score reports that score; re-sorting by it would judge an order the
            # product never gave. Scores are recorded and shown, never used to re-rank.
            return out

    def answer(self, state: StateHandle, query: str, retrieved: list[Retrieved]) -> Answer | None:
        """The product's own response to ``query`` (``[answer]``), with the memories it cites mapped to ufuzz
        ids (an id the product never reported for this state is kept as the product's id). A JSON null
        response is an empty one, which reads as an abstention; ``retrieved`` is not sent (the product
        retrieves on its own)."""
        if "answer" not in self.config.ops:
            return None
        with self._lock:
            st = self._states.get(state, "answer")
            _status, doc = self._request("answer", {"namespace": st.addr, "query": query})
            text = self._one("answer", "text", doc)
            if text is not None and not isinstance(text, str | int | float):
                raise self._fail("answer", f"response text at {self.config.ops['answer'].paths['text'].text!r} "
                                           f"is not a string: {str(text)[:200]}")
            jp = self.config.ops["answer"].paths.get("cited")  # a product may leave out an empty citation list
            cited = self._find("answer", jp, doc) if jp is not None else []
            return Answer("" if text is None else str(text),
                          tuple(st.to_ufuzz.get(str(pid), str(pid)) for pid in cited if pid is not None))

    # -- native operations -----------------------------------------------------------------------------------
    def add(self, state: StateHandle, memory: Memory) -> OpResult:
        with self._lock:
            return self._add(self._states.get(state, "add"), memory)

    def _add(self, st: _State, memory: Memory) -> OpResult:
        if memory.id in st.to_product:
            return OpResult("add", False, memory.id, detail=f"memory id {memory.id!r} already exists")
        try:  # 409 Conflict: the product refuses the write (a duplicate it keeps once): a refusal, no fault
            _status, doc = self._request("add", {"namespace": st.addr, "id": memory.id, "uid": memory.id,
                                                 "text": memory.text, **_times(memory.timestamp)}, refused=(409,))
        except _HttpStatus as exc:
            return OpResult("add", False, memory.id,
                            detail=f"add of {memory.id!r} returned HTTP {exc.status}: {exc.body[:300]}")
        pid = self._one("add", "id", doc)
        pid = memory.id if pid is None else str(pid)
        st.to_product[memory.id] = pid
        st.to_ufuzz[pid] = memory.id
        return OpResult("add", True, memory.id, written=(memory.id,))

    def update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        if "update" not in self.config.ops:
            raise BackendError(f"http backend ({self.config.source}): no [update] operation configured")
        with self._lock:
            st = self._states.get(state, "update")
            pid = st.to_product.get(memory_id)
            if pid is None:
                return OpResult("update", False, memory_id, detail=f"unknown memory id {memory_id!r}")
            op = self.config.ops["update"]
            if op.policy == "append" and new.id in st.to_product:
                return OpResult("update", False, memory_id, detail=f"new memory id {new.id!r} already exists")
            try:
                _status, doc = self._request("update", {"namespace": st.addr, "id": pid, "uid": memory_id,
                                                        "new_id": new.id, "text": new.text,
                                                        **_times(new.timestamp)}, not_found_ok=True)
            except _HttpStatus as exc:
                return OpResult("update", False, memory_id, detail=f"HTTP {exc.status}")
            if op.policy == "rewrite":
                return OpResult("update", True, memory_id, written=(memory_id,), detail="rewritten in place")
            npid = self._one("update", "id", doc)
            npid = new.id if npid is None else str(npid)
            st.to_product[new.id] = npid
            st.to_ufuzz[npid] = new.id
            return OpResult("update", True, memory_id, written=(new.id,), superseded=(memory_id,),
                            detail="appended a new version")

    def delete(self, state: StateHandle, memory_id: str) -> OpResult:
        if "delete" not in self.config.ops:
            raise BackendError(f"http backend ({self.config.source}): no [delete] operation configured")
        with self._lock:
            st = self._states.get(state, "delete")
            pid = st.to_product.get(memory_id)
            if pid is None:
                return OpResult("delete", False, memory_id, detail=f"unknown memory id {memory_id!r}")
            try:
                self._request("delete", {"namespace": st.addr, "id": pid, "uid": memory_id}, not_found_ok=True)
            except _HttpStatus as exc:
                return OpResult("delete", False, memory_id, detail=f"HTTP {exc.status}")
            return OpResult("delete", True, memory_id, removed=(memory_id,))

    # -- observation -------------------------------------------------------------------------------------------
    def get(self, state: StateHandle, memory_id: str) -> StoredMemory | None:
        with self._lock:
            return self._get(self._states.get(state, "get"), memory_id)

    def _get(self, st: _State, memory_id: str) -> StoredMemory | None:
        pid = st.to_product.get(memory_id)
        if pid is None:
            return None
        try:
            _status, doc = self._request("get", {"namespace": st.addr, "id": pid, "uid": memory_id},
                                         not_found_ok=True)
        except _HttpStatus:
            return None
        text = self._one("get", "text", doc)
        ts = self._one("get", "timestamp", doc, required=False)
        active = self._one("get", "active", doc, required=False)
        if active is not None and "active" in self.config.ops["get"].negated:
            active = not active
        return StoredMemory(memory_id, str(text), _when(ts), True if active is None else bool(active),
                            {"product_id": pid})

    def list(self, state: StateHandle) -> list[StoredMemory]:
        with self._lock:
            st = self._states.get(state, "list")
            ids: list[Any] = []
            texts: list[Any] = []
            stamps: list[Any] | None = [] if "timestamps" in self.config.ops["list"].paths else None
            actives: list[Any] | None = [] if "actives" in self.config.ops["list"].paths else None
            for doc in self._pages(st):
                page = self._many("list", "ids", doc, None) or []
                ids += page
                texts += self._many("list", "texts", doc, len(page)) or []
                if stamps is not None:
                    stamps += self._many("list", "timestamps", doc, len(page)) or []
                if actives is not None:
                    flags = self._many("list", "actives", doc, len(page)) or []
                    negated = "actives" in self.config.ops["list"].negated
                    # a missing (null) flag is an active memory, as [get] active reads it
                    actives += [True if f is None else (not f if negated else bool(f)) for f in flags]
            out = []
            for i, pid in enumerate(ids):
                uid = st.to_ufuzz.get(str(pid))
                meta: dict[str, Any] = {"product_id": str(pid)}
                if uid is None:
                    uid = str(pid)
                    meta["unmapped"] = True  # a memory the product holds that ufuzz never wrote
                out.append(StoredMemory(uid, str(texts[i]), "" if stamps is None else _when(stamps[i]),
                                        True if actives is None else bool(actives[i]), meta))
            return sorted(out, key=lambda m: m.id)

    def _pages(self, st: _State):
        """Every page of ``[list]``: one request without pagination; with ``next``, the link each page gives
        (a path, or a URL on the product's own base URL: the key header is never sent elsewhere); with
        ``cursor``, the path again with ``?cursor_param=<cursor>`` while a page gives one. An empty or null
        link or cursor ends the listing; ``max_pages`` pages at most (then a BackendError: never a partial
        listing, which would read as memories gone)."""
        op = self.config.ops["list"]
        values: dict[str, Any] = {"namespace": st.addr, "cursor": None}
        first = _render(op.path, values, quote=True)
        path: str | None = first
        seen: set[str] = set()
        for _ in range(int(op.extra.get("max_pages", 1))):
            assert path is not None
            seen.add(f"{path} {json.dumps(values['cursor'])}")
            _status, doc = self._request("list", values, path=path)
            yield doc
            if op.extra.get("cursor_in_request"):
                cursor = self._page_link(op, doc)
                values = {**values, "cursor": cursor}
                path = None if cursor is None else _render(op.path, values, quote=True)
            else:
                path = self._next_page(op, doc, first)
            if path is None:
                return
            if f"{path} {json.dumps(values['cursor'])}" in seen:
                raise self._fail("list", f"pagination loops: page {self.config.base_path}{path} (cursor "
                                         f"{values['cursor']!r}) was already read")
        if "next" in op.extra or "cursor" in op.extra:
            raise self._fail("list", f"more than max_pages = {op.extra.get('max_pages')} pages")

    def _page_link(self, op: Operation, doc: Any) -> str | int | None:
        """The next page's link or cursor in ``doc`` (a string or a number as given); None on the last page."""
        jp = op.extra.get("next") or op.extra.get("cursor")
        if jp is None:
            return None
        got = self._find("list", jp, doc)
        value = got[0] if got else None
        if value is None or value == "" or value is False:
            return None
        if not isinstance(value, str | int) or isinstance(value, bool):
            raise self._fail("list", f"page link {jp.text!r} is not a string: {str(value)[:100]}")
        return value

    def _next_page(self, op: Operation, doc: Any, first: str) -> str | None:
        value = self._page_link(op, doc)
        if value is None:
            return None
        value = str(value)
        if "cursor" in op.extra:
            sep = "&" if "?" in first else "?"
            return f"{first}{sep}{urllib.parse.quote(op.extra['cursor_param'])}={urllib.parse.quote(value, safe='')}"
        if value.startswith("/"):
            return value
        base = self.config.base_url
        if value.startswith(base + "/"):
            return value[len(base):]
        raise self._fail("list", f"next page {value[:200]!r} is not a path on {base}: not followed")

    def close(self) -> None:
        with self._lock:
            for h in list(self._states):
                try:
                    self.release(h)
                except BackendError:
                    pass
        self._transport.close()
