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

Rate limits (:mod:`ufuzz.llm.ratelimit`): a 429, or a 503 with ``Retry-After``, is the server asking to wait,
not a failure: every thread of the client pauses for the time it asked (or an exponential backoff without one),
and the wait does not use up ``max_retries`` — a call rides out a storm of them for up to
``LLMConfig.rate_limit_wait`` seconds in all. ``rpm``/``tpm`` are a client-side limit on top. Token usage is
read from each response's ``usage`` (:meth:`LLMClient.usage`), with an estimated cost where
``LLMConfig.price`` gives the endpoint's prices. One client is thread-safe: many calls may be in flight.
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
from ufuzz.llm.ratelimit import RateLimit

log = logging.getLogger(__name__)

#: Sent when the key's environment variable is unset (local OpenAI-compatible servers ignore it).
PLACEHOLDER_KEY = "ufuzz-no-key"

_EXCERPT = 200
#: longest wait between two attempts, whatever the backoff or a server's Retry-After says
MAX_BACKOFF = 30.0
#: HTTP statuses worth another attempt (the request itself was fine)
RETRY_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
#: statuses that say "too many requests, wait": 429 always, 503 when it says how long (Retry-After)
RATE_STATUSES = frozenset({429, 503})


class LLMError(Exception):
    """An LLM call failed (network, HTTP status, unusable output). The message never holds the key."""


class _Transient(LLMError):
    """A failure another attempt may not have (timeout, connection, 429, 5xx); ``wait`` is the server's
    Retry-After in seconds, when it sent one."""

    def __init__(self, message: str, wait: float | None = None, rate_limited: bool = False) -> None:
        super().__init__(message)
        self.wait = wait
        self.rate_limited = rate_limited  # the server asked us to slow down (429, or 503 with Retry-After)


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    timeout: float = 30
    max_retries: int = 0
    retry_backoff: float = 0.5  # seconds before the first retry; doubled for each further one
    rpm: float | None = None  # client-side limit: requests per minute (None: none)
    tpm: float | None = None  # client-side limit: tokens per minute, where the endpoint reports usage
    rate_limit_wait: float = 600.0  # seconds one call may wait in all on 429/503 before it fails
    price: tuple[float, float] | None = None  # USD per million prompt and completion tokens (for the cost)

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
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value) or value <= 0):
                raise ValueError(f"LLMConfig.{name} must be a positive number, got {value!r}")
        if not 0 <= self.rate_limit_wait <= 86400:
            raise ValueError(f"LLMConfig.rate_limit_wait must be in [0, 86400] seconds, got {self.rate_limit_wait}")
        if self.price is not None and (len(self.price) != 2 or any(not math.isfinite(p) or p < 0
                                                                   for p in self.price)):
            raise ValueError(f"LLMConfig.price must be two non-negative numbers (USD per million prompt and "
                             f"completion tokens), got {self.price!r}")

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
        self.rate_limited = 0  # 429/503 answers waited out (not failures, not retries)
        self.prompt_tokens = 0  # from the responses' usage, where the endpoint reports it
        self.completion_tokens = 0
        self.unreported = 0  # calls answered without usage
        self._sleep = time.sleep
        self._lock = threading.Lock()
        self._openai: Any = None
        self.limit = RateLimit(config.rpm, config.tpm, sleep=lambda s: self._sleep(s))

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
        """One call: up to ``1 + max_retries`` attempts, with backoff after a transient failure; a rate limit
        (429, 503 with Retry-After) is waited out — every thread pauses — for up to ``rate_limit_wait`` s."""
        attempts = 1 + self.config.max_retries
        attempt = 0
        rate_waits, waited = 0, 0.0
        paused = False  # this thread has just waited out the pause it set
        while True:
            self.limit.acquire(pause=not paused)
            paused = False
            try:
                return self._attempt(messages, params)
            except _Transient as exc:
                if exc.rate_limited:
                    wait = exc.wait if exc.wait is not None else self.config.retry_backoff * (2 ** rate_waits)
                    wait = min(max(wait, 0.05), MAX_BACKOFF)
                    if waited + wait <= self.config.rate_limit_wait:
                        rate_waits += 1
                        waited += wait
                        with self._lock:
                            self.rate_limited += 1
                        log.info("llm rate limited (%s); every request waits %.1fs", exc, wait)
                        self.limit.pause(wait)  # every other thread's next request waits too
                        self._sleep(wait)
                        paused = True
                        continue
                    exc = _Transient(f"{exc} (rate limited for {waited:.0f}s, --llm-rate-limit-wait)")
                attempt += 1
                if attempt >= attempts:
                    with self._lock:
                        self.errors += 1
                    suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
                    raise LLMError(f"{exc}{suffix}") from None
                wait = self.config.retry_backoff * (2 ** (attempt - 1))
                if exc.wait is not None:
                    wait = max(wait, exc.wait)
                with self._lock:
                    self.retries += 1
                log.info("llm request failed (%s); retry %d of %d in %.1fs", exc, attempt,
                         self.config.max_retries, min(wait, MAX_BACKOFF))
                self._sleep(min(wait, MAX_BACKOFF))
            except LLMError:
                with self._lock:
                    self.errors += 1
                raise

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
                wait = _retry_after(exc.response)
                rate = exc.status_code == 429 or (exc.status_code in RATE_STATUSES and wait is not None)
                raise _Transient(message, wait, rate_limited=rate) from None
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
        self._count_usage(getattr(resp, "usage", None))
        if content is None:
            raise LLMError(f"LLM server at {self._where()} sent an empty message")
        return str(content)

    def _count_usage(self, usage: Any) -> None:
        """Add a response's reported ``usage`` (prompt and completion tokens) to the counts and the tpm limit."""
        try:
            prompt = int(getattr(usage, "prompt_tokens", None) or 0)
            completion = int(getattr(usage, "completion_tokens", None) or 0)
        except (TypeError, ValueError):
            prompt = completion = 0
        with self._lock:
            if usage is None:
                self.unreported += 1
            self.prompt_tokens += max(0, prompt)
            self.completion_tokens += max(0, completion)
        self.limit.used(prompt + completion)

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

    def usage(self) -> dict[str, Any]:
        """Tokens the server reported using, the estimated cost (USD; None without ``LLMConfig.price``), the
        rate-limit answers waited out and the seconds spent waiting on the client-side limit."""
        with self._lock:
            out: dict[str, Any] = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                                   "total_tokens": self.prompt_tokens + self.completion_tokens,
                                   "calls_without_usage": self.unreported, "rate_limited": self.rate_limited,
                                   "rate_limit_wait_s": round(self.limit.waited, 3)}
        out["cost_usd"] = estimate_cost(out, self.config.price)
        return out

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def estimate_cost(usage: dict[str, Any], price: tuple[float, float] | None) -> float | None:
    """USD for ``usage`` at ``price`` (per million prompt and completion tokens); None without prices."""
    if price is None:
        return None
    return round(usage.get("prompt_tokens", 0) * price[0] / 1e6 + usage.get("completion_tokens", 0) * price[1] / 1e6,
                 6)


def client_for(cfg: Any, share: int = 1) -> LLMClient | None:
    """The client of a campaign's configuration (``llm_*`` fields of a CampaignConfig) — one for every LLM use
    it configures (paraphrase, answer, judge) — or None when it configures none. ``share``: how many processes
    call the endpoint with their own client (process lanes), each getting that share of the rate limits."""
    if not cfg.llm_uses:
        return None
    rpm, tpm = getattr(cfg, "llm_rpm", None), getattr(cfg, "llm_tpm", None)
    share = max(1, int(share))
    price = getattr(cfg, "llm_price", None)
    return LLMClient(LLMConfig(base_url=cfg.llm_base_url, model=cfg.llm_model or "default",
                               api_key_env=cfg.llm_api_key_env, timeout=cfg.llm_timeout,
                               max_retries=cfg.llm_retries, rpm=None if rpm is None else rpm / share,
                               tpm=None if tpm is None else tpm / share,
                               rate_limit_wait=getattr(cfg, "llm_rate_limit_wait", 600.0),
                               price=None if price is None else (float(price[0]), float(price[1]))),
                     CallCache(cfg.llm_cache))


def _retry_after(response: Any) -> float | None:
    """A response's ``Retry-After`` in seconds (delta-seconds or an HTTP date), or None."""
    try:
        return retry_after_seconds(response.headers.get("retry-after"))
    except AttributeError:
        return None


def retry_after_seconds(value: Any, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds from now: a number of seconds or an HTTP date (RFC 9110); None if absent or
    unreadable."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(str(value))
        except (TypeError, ValueError, IndexError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
        return max(0.0, seconds)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
