"""One OpenAI-compatible chat client with a persistent call cache.

Every LLM use in ufuzz goes through :class:`LLMClient`: the ``openai`` package's ``OpenAI`` client pointed at
a configurable base URL (any OpenAI-compatible server: a hosted API, vLLM, llama.cpp, Ollama …). The API
key is read from an environment variable at call time and never logged, stored or put into an error
message; with the variable unset a placeholder key is sent (local servers do not check it).

Responses are looked up in a :class:`~ufuzz.llm.cache.CallCache` first, so a re-run or a replay makes no
call at all; ``calls_made`` and ``cache_hits`` count both paths.

Each request waits at most ``LLMConfig.timeout`` seconds. A request that fails in a way that may pass
(a timeout, a refused or dropped connection, HTTP 408/409/429 or 5xx) is retried ``max_retries`` times, after
``retry_backoff`` × 2^attempt seconds (capped; a server's ``Retry-After`` is honoured up to the cap); other
failures (HTTP 400/401/404, a reply that is not a chat completion) are not. ``errors`` counts calls that
failed for good and ``retries`` the repeated requests: a caller turns a failed call into an error record,
never into a finding.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ufuzz.llm.cache import CallCache, cache_key, canonical_request

log = logging.getLogger(__name__)

#: Sent when the key's environment variable is unset (local OpenAI-compatible servers ignore it).
PLACEHOLDER_KEY = "ufuzz-no-key"

_EXCERPT = 200
#: longest wait between two attempts, whatever the backoff or a server's Retry-After says
MAX_BACKOFF = 30.0
#: HTTP statuses worth another attempt (the request itself was fine)
RETRY_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))


class LLMError(Exception):
    """An LLM call failed (network, HTTP status, unusable output). The message never holds the key."""


class _Transient(LLMError):
    """A failure another attempt may not have (timeout, connection, 429, 5xx); ``wait`` is the server's
    Retry-After in seconds, when it sent one."""

    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    timeout: float = 30
    max_retries: int = 0
    retry_backoff: float = 0.5  # seconds before the first retry; doubled for each further one

    def __post_init__(self) -> None:
        if not str(self.base_url).strip():
            raise ValueError("LLMConfig.base_url must be a non-empty URL (e.g. http://127.0.0.1:8000/v1)")
        if not str(self.model).strip():
            raise ValueError("LLMConfig.model must be a non-empty model name")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) \
                or not 0 <= self.max_retries <= 100:
            raise ValueError(f"LLMConfig.max_retries must be an integer in [0, 100], got {self.max_retries!r}")
        for name in ("timeout", "retry_backoff", "temperature"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"LLMConfig.{name} must be a finite number, got {value!r}")
        if not 0 < self.timeout <= 86400:
            raise ValueError(f"LLMConfig.timeout must be > 0 (seconds), got {self.timeout}")
        if not 0 <= self.retry_backoff <= MAX_BACKOFF:
            raise ValueError(f"LLMConfig.retry_backoff must be in [0, {MAX_BACKOFF:g}] seconds, "
                             f"got {self.retry_backoff}")

    @classmethod
    def from_env(cls, prefix: str = "UFUZZ_LLM_") -> LLMConfig | None:
        """``{prefix}BASE_URL`` and ``{prefix}MODEL`` (both required, else ``None``), optional
        ``{prefix}API_KEY_ENV``, ``{prefix}TEMPERATURE``, ``{prefix}TIMEOUT``, ``{prefix}MAX_RETRIES``,
        ``{prefix}RETRY_BACKOFF``."""
        env = os.environ
        base_url, model = env.get(prefix + "BASE_URL"), env.get(prefix + "MODEL")
        if not base_url or not model:
            return None
        kw: dict[str, Any] = {}
        for name, conv in (("API_KEY_ENV", str), ("TEMPERATURE", float), ("TIMEOUT", float),
                           ("MAX_RETRIES", int), ("RETRY_BACKOFF", float)):
            raw = env.get(prefix + name)
            if raw is None or raw == "":
                continue
            try:
                kw[name.lower()] = conv(raw)
            except ValueError as exc:
                raise ValueError(f"environment variable {prefix + name}={raw!r}: {exc}") from None
        return cls(base_url=base_url, model=model, **kw)


def _excerpt(text: str, n: int = _EXCERPT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n] + "…"


_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?\s*```\s*$", re.S)

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "boolean": (bool,), "integer": (int,), "number": (int, float),
    "object": (dict,), "array": (list,), "null": (type(None),),
}


def _type_ok(value: Any, spec: Any) -> bool:
    types = spec if isinstance(spec, list) else [spec]
    for t in types:
        py = _JSON_TYPES.get(t)
        if py is None:
            return True  # unknown type name: do not reject
        if isinstance(value, bool) and t in ("integer", "number"):
            continue
        if isinstance(value, py):
            return True
    return False


def check_against_schema(obj: Any, schema: dict[str, Any]) -> str | None:
    """A shallow check of a parsed JSON object against ``schema``: object type, required keys, and each
    present property's ``type`` and ``enum``. Returns a problem description or ``None``."""
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    missing = [k for k in schema.get("required", []) if k not in obj]
    if missing:
        return f"missing required key(s) {missing}"
    for name, prop in (schema.get("properties") or {}).items():
        if name not in obj or not isinstance(prop, dict):
            continue
        if "type" in prop and not _type_ok(obj[name], prop["type"]):
            return f"key {name!r} should be of type {prop['type']}, got {type(obj[name]).__name__}"
        if "enum" in prop and obj[name] not in prop["enum"]:
            return f"key {name!r} should be one of {prop['enum']}, got {obj[name]!r}"
    return None


def parse_json_reply(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Parse a model's JSON reply (tolerating a Markdown code fence) and check it against ``schema``.

    Raises :class:`LLMError` with a short excerpt of the reply when it is not valid JSON or does not fit.
    """
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1).strip()
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        raise LLMError(f"model reply is not valid JSON ({exc.msg} at char {exc.pos}): "
                       f"{_excerpt(text)!r}") from None
    problem = check_against_schema(obj, schema)
    if problem:
        raise LLMError(f"model reply does not match the JSON schema: {problem}: {_excerpt(text)!r}")
    return obj


class LLMClient:
    """Chat completions through the ``openai`` client, cache first.

    ``complete(messages, **params) -> str`` and ``complete_json(messages, schema, **params) -> dict``.
    ``params`` are passed to ``chat.completions.create`` (``temperature`` defaults to the config's) and are
    part of the cache key. ``calls_made`` counts calls sent to the server (``retries`` the extra requests a
    transient failure cost), ``cache_hits`` answers from cache, ``errors`` calls that failed for good.
    """

    def __init__(self, config: LLMConfig, cache: CallCache | None = None) -> None:
        self.config = config
        self.cache = cache
        self.calls_made = 0
        self.cache_hits = 0
        self.errors = 0  # calls that failed for good (after their retries)
        self.retries = 0  # requests repeated after a transient failure
        self._sleep = time.sleep
        self._lock = threading.Lock()
        self._openai: Any = None

    def __repr__(self) -> str:
        return f"LLMClient(base_url={self.config.base_url!r}, model={self.config.model!r}, cache={self.cache!r})"

    # -- the openai client ----------------------------------------------------------------------------
    def _client(self) -> Any:
        with self._lock:
            return self._client_locked()

    def _client_locked(self) -> Any:
        if self._openai is None:
            try:
                from openai import OpenAI
            except ImportError as exc:  # pragma: no cover - openai is a core dependency
                raise LLMError("the 'openai' package is required for LLM calls") from exc
            # The real key goes per request in a header (read at call time, never kept here).
            # retries are this client's own (counted, with its backoff), never the openai client's
            self._openai = OpenAI(base_url=self.config.base_url, api_key=PLACEHOLDER_KEY,
                                  timeout=self.config.timeout, max_retries=0)
        return self._openai

    def _where(self) -> str:
        return f"base URL {self.config.base_url} (model {self.config.model})"

    def _request(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
        """One call: up to ``1 + max_retries`` attempts, with backoff after a transient failure."""
        attempts = 1 + self.config.max_retries
        for attempt in range(attempts):
            try:
                return self._attempt(messages, params)
            except _Transient as exc:
                if attempt + 1 >= attempts:
                    with self._lock:
                        self.errors += 1
                    suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
                    raise LLMError(f"{exc}{suffix}") from None
                wait = self.config.retry_backoff * (2 ** attempt)
                if exc.wait is not None:
                    wait = max(wait, exc.wait)
                with self._lock:
                    self.retries += 1
                log.info("llm request failed (%s); retry %d of %d in %.1fs", exc, attempt + 1,
                         self.config.max_retries, min(wait, MAX_BACKOFF))
                self._sleep(min(wait, MAX_BACKOFF))
            except LLMError:
                with self._lock:
                    self.errors += 1
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
        import openai

        key = os.environ.get(self.config.api_key_env) or PLACEHOLDER_KEY

        def scrub(s: str) -> str:
            return s.replace(key, "***") if key != PLACEHOLDER_KEY and key else s

        try:
            resp = self._client().chat.completions.create(
                model=self.config.model, messages=messages,
                extra_headers={"Authorization": f"Bearer {key}"}, **params)
        except openai.APIStatusError as exc:
            body = ""
            try:
                body = exc.response.text
            except Exception:  # noqa: BLE001 - best effort excerpt only
                body = ""
            message = scrub(f"LLM request to {self._where()} failed: HTTP {exc.status_code}"
                            + (f": {_excerpt(body)}" if body else ""))
            if exc.status_code in RETRY_STATUSES:
                raise _Transient(message, _retry_after(exc.response)) from None
            raise LLMError(message) from None
        except openai.APITimeoutError:
            raise _Transient(f"LLM request to {self._where()} timed out after {self.config.timeout:g}s") from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise _Transient(scrub(f"cannot reach LLM server at {self._where()}: "
                                   f"{type(cause).__name__}: {_excerpt(str(cause))}")) from None
        except openai.OpenAIError as exc:
            raise LLMError(scrub(f"LLM request to {self._where()} failed: {type(exc).__name__}: "
                                 f"{_excerpt(str(exc))}")) from None
        except (ValueError, KeyError, TypeError) as exc:  # a body that is not a chat completion
            raise LLMError(scrub(f"LLM server at {self._where()} sent a malformed reply: "
                                 f"{type(exc).__name__}: {_excerpt(str(exc))}")) from None
        if isinstance(resp, str):  # some servers reply with a non-JSON body the client passes through
            raise LLMError(scrub(f"LLM server at {self._where()} sent a non-JSON reply: {_excerpt(resp)!r}"))
        try:
            content = resp.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            raise LLMError(f"LLM server at {self._where()} sent a reply without choices[0].message") from None
        if content is None:
            raise LLMError(f"LLM server at {self._where()} sent an empty message")
        return str(content)

    # -- public ---------------------------------------------------------------------------------------
    def _complete(self, messages: list[dict[str, Any]], params: dict[str, Any],
                  accept: Callable[[str], Any] | None = None) -> tuple[str, Any]:
        messages = [dict(m) for m in messages]
        if not messages:
            raise ValueError("messages must not be empty")
        params = {k: v for k, v in params.items() if v is not None}
        params.setdefault("temperature", self.config.temperature)
        key = cache_key(self.config.model, messages, params)
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                try:
                    accepted = accept(cached) if accept else cached
                except LLMError:
                    log.warning("ignoring cached LLM reply %s that no longer validates", key[:12])
                else:
                    with self._lock:
                        self.cache_hits += 1
                    log.debug("llm cache hit %s model=%s", key[:12], self.config.model)
                    return cached, accepted
        with self._lock:
            self.calls_made += 1
        log.debug("llm call %s model=%s base_url=%s", key[:12], self.config.model, self.config.base_url)
        text = self._request(messages, params)
        try:
            accepted = accept(text) if accept else text  # raises LLMError before anything is cached
        except LLMError:
            with self._lock:
                self.errors += 1
            raise
        if self.cache is not None:
            self.cache.put(key, self.config.model, canonical_request(self.config.model, messages, params), text)
        return text, accepted

    def complete(self, messages: list[dict[str, Any]], **params: Any) -> str:
        """The assistant message text for ``messages``."""
        return self._complete(messages, params)[0]

    def complete_json(self, messages: list[dict[str, Any]], schema: dict[str, Any], *,
                      schema_name: str = "response", **params: Any) -> dict[str, Any]:
        """Request a JSON reply that fits ``schema`` (``response_format`` json_schema), parse and check it.

        Raises :class:`LLMError` with an excerpt when the reply is not valid JSON or misses required keys.
        A reply that fails the check is not cached.
        """
        params = dict(params)
        params["response_format"] = {"type": "json_schema",
                                     "json_schema": {"name": schema_name, "schema": schema, "strict": True}}
        return self._complete(messages, params, accept=lambda t: parse_json_reply(t, schema))[1]

    def ping(self) -> None:
        """Check that the endpoint answers (``GET /models``, not a chat request: nothing is cached or counted).
        An HTTP error other than 401/403 still shows a live server; no answer at all raises :class:`LLMError`."""
        import openai

        key = os.environ.get(self.config.api_key_env) or PLACEHOLDER_KEY
        try:
            self._client().with_options(max_retries=0).models.list(extra_headers={"Authorization": f"Bearer {key}"})
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise LLMError(f"LLM server at {self._where()} refused the API key from "
                               f"${self.config.api_key_env} (HTTP {exc.status_code})") from None
        except openai.APITimeoutError:
            raise LLMError(f"LLM server at {self._where()} did not answer within {self.config.timeout}s") from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise LLMError(f"cannot reach LLM server at {self._where()}: {type(cause).__name__}: "
                           f"{_excerpt(str(cause))}") from None
        except openai.OpenAIError as exc:
            raise LLMError(f"LLM server at {self._where()} failed: {type(exc).__name__}") from None

    def stats(self) -> dict[str, int]:
        return {"calls_made": self.calls_made, "cache_hits": self.cache_hits, "errors": self.errors,
                "retries": self.retries}


def client_for(cfg: Any) -> LLMClient | None:
    """The client of a campaign's configuration (``llm_*`` fields of a CampaignConfig) — one for every LLM use
    it configures (paraphrase, answer, judge) — or None when it configures none."""
    if not cfg.llm_uses:
        return None
    return LLMClient(LLMConfig(base_url=cfg.llm_base_url, model=cfg.llm_model or "default",
                               api_key_env=cfg.llm_api_key_env, timeout=cfg.llm_timeout,
                               max_retries=cfg.llm_retries), CallCache(cfg.llm_cache))


def _retry_after(response: Any) -> float | None:
    """A response's ``Retry-After`` in seconds (the number form only), or None."""
    try:
        value = float(response.headers.get("retry-after"))
    except (AttributeError, TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None
