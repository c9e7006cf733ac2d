"""The product TOML: its tables and keys, checked and read into a :class:`ProductConfig` (errors name the file, the
line and the key)."""


from __future__ import annotations

import re
import string
import urllib.parse
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

import tomllib
from pydantic import Field, StringConstraints, ValidationError

from ufuzz._util.strict import StrictModel, Text, field_path, first_error
from ufuzz.backends.adapters.http.paths import JsonPath

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


