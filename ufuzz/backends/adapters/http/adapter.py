"""The HTTP adapter: a :class:`ProductConfig` turned into a :class:`~ufuzz.backends.protocol.MemoryBackend` — requests
rendered from the operation templates, answers read through their JSON paths, one namespace per state."""


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
from pathlib import Path
from typing import Any

from ufuzz.backends.adapters.http.config import Operation, ProductConfig, load_config
from ufuzz.backends.adapters.http.paths import JsonPath
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
