"""The product TOML of ``--backend http`` as a JSON Schema, built from the very tables the loader validates with.

:func:`ufuzz.backends.adapters.http.config.parse_config` (what ``ufuzz run``, ``ufuzz backends check http`` and every other load
run) checks a product TOML against ``ProductModel`` (types and ranges), the per-operation JSON-path keys
(``_PATH_KEYS``: which are allowed, which required), the placeholders each operation provides (``PROVIDES``),
the methods and the defaults. :func:`product_schema` assembles those same tables into a JSON Schema
(draft 2020-12), with a description for every key — the one source of the docs' product-TOML reference
(``ufuzz backends schema http`` prints it; the docs build renders it). What a JSON Schema cannot say (a
placeholder an operation does not provide, a JSON path that must select a list) the descriptions say, and the
loader checks.
"""

from __future__ import annotations

from typing import Any

from ufuzz.backends.adapters.http import config

__all__ = ["product_schema", "TOP_DOCS", "OP_DOCS", "KEY_DOCS"]

TOP_DOCS: dict[str, str] = {
    "base_url": "The product's URL, e.g. `http://127.0.0.1:8080` (required here or as the backend option "
                "`base_url=...`, which overrides it).",
    "name": "The product's name, shown in reports and tickets.",
    "timeout": "Seconds per request.",
    "retries": "Retries of a request that failed without an answer, or with HTTP 429 or 5xx. Off by default: "
               "retrying a non-idempotent POST may store a memory twice.",
    "retry_backoff": "Seconds between retries (times the attempt number).",
    "deterministic": "The product answers the same request on the same state the same way (then a campaign with "
                     "the same `--seed` gives the same failures).",
    "abstain_threshold": "The product's own relevance cut-off: search results it scores below this are not "
                         "relevant to it. Declaring it makes the selection level judge abstention (a decoy scored "
                         "at or above it is a failure).",
    "error_when": "JSON path of a value that makes a successful answer an error, for every operation (a JSON-RPC "
                  "or GraphQL API that answers errors at HTTP 200, e.g. `$.error`): such an answer is a backend "
                  "fault, never a success.",
    "headers": "Extra request headers (a table of strings; values may use `{namespace}`).",
    "auth": "How the secret is sent: `header` (e.g. `Authorization`), `env` (the environment variable holding "
            "it: never the secret itself) and `scheme` (`Bearer` by default; `\"\"` sends the secret alone). The "
            "secret is masked (`***`) in every message and reproducer transcript.",
    "namespace": "`prefix` of the namespace names ufuzz invents, one per memory state (use `{namespace}` in "
                 "paths, bodies or headers).",
}

OP_DOCS: dict[str, str] = {
    "add": "Store one memory (required). `id`: the JSON path of the product's id of the new memory (without it, "
           "the ufuzz id is the product's id).",
    "search": "Ranked retrieval for `{query}` and `{k}` (this or `[answer]` is required). Without it the product "
              "is answer-only: retrieval is hidden and only responses are judged.",
    "answer": "The product's own response to the question `{query}`: judged at the response level.",
    "get": "Read one memory by the product's `{id}` (required): how ufuzz verifies a state change. A status in "
           "`not_found` (default `[404]`) means the memory is gone.",
    "list": "All memories of a namespace (required).",
    "update": "Change a memory (optional: without it the update operator is off). `policy` = `rewrite` (in "
              "place, the default) or `append` (`{new_id}` is the new version; the old one stays as superseded).",
    "delete": "Delete a memory (optional: without it the delete operator is off).",
    "snapshot": "Copy a namespace into `{target}` (optional: with it forks are native copies). `id`: the JSON "
                "path of the product's own id of the copy, where the product names it (then `{namespace}` is that "
                "id in the copy's requests).",
    "create": "Called when a state's namespace is made (optional). `id`: the JSON path of the product's own id of "
              "the new namespace, for a product that hands out its ids (`POST /spaces` -> `{\"sid\": \"sp_1\"}`): "
              "`{namespace}` is then that id in every later request of the state.",
    "drop": "Called when a state is released (optional): frees its namespace.",
}

KEY_DOCS: dict[str, str] = {
    "method": "HTTP method.",
    "path": "URL path template starting with `/`, e.g. `/v1/{namespace}/memories/{id}`; values are URL-quoted.",
    "body": "A TOML value sent as JSON; a string that is exactly one placeholder (`\"{k}\"`) keeps the value's type "
            "(`\"{timestamp_ms}\"` is sent as a number: epoch milliseconds; `{timestamp_s}` seconds; `{timestamp}` "
            "ISO-8601).",
    "not_found": "HTTP statuses that mean \"no such memory\" (`[get]`).",
    "not_found_when": "`[get]`, `[update]`, `[delete]`, `[drop]`: JSON path of a value that marks a successful "
                      "answer as \"no such memory\" (a JSON-RPC or GraphQL error at HTTP 200, e.g. "
                      "`$.error.code`); with `not_found_values`, only those values do (give them: otherwise any "
                      "error there, a passing fault included, reads as a missing memory).",
    "not_found_values": "The values at `not_found_when` that mean \"no such memory\" (e.g. `[-32004]`); any "
                        "other value there makes the answer an error (a fault, never success).",
    "policy": "`[update]` only: `rewrite` or `append`.",
    "id": "JSON path of the product's id of the written memory (`[create]`, `[snapshot]`: of the namespace).",
    "ids": "JSON path (a list, with `[*]`) of the product's ids.",
    "texts": "JSON path (a list) of the memory texts.",
    "scores": "JSON path (a list) of the scores (without it: 1/(rank+1)).",
    "text": "JSON path of the text (`[answer]`: the response; one value, no `[*]`).",
    "timestamp": "JSON path of the memory's timestamp: ISO-8601, or epoch seconds or milliseconds (a number or a "
                 "digit string), read as UTC; optional (without it nothing is ordered by the product's times).",
    "active": "JSON path of whether the memory is active (false: superseded or soft-deleted); `!` before the path "
              "reads a flag that is true when the memory is deleted (`\"!$.memory.deleted\"`).",
    "timestamps": "JSON path (a list) of the timestamps, read as `[get] timestamp` is.",
    "actives": "JSON path (a list) of the active flags (`!` before it as for `[get] active`).",
    "cited": "JSON path (a list) of the product ids the response cites (recorded, never judged).",
    "abstain_phrases": "`[answer]` only: what the product says when it has no answer (e.g. `[\"No matching "
                       "note.\"]`), matched as whole words; also `--opt abstain_phrases='a|b'`.",
    "abstain_defaults": "`[answer]` only: whether the built-in abstention phrases (`ufuzz/oracles/matching.py`) "
                        "count too (default true; false for a product whose answers may say \"unknown\").",
    "next": "`[list]` only: JSON path (one value) of the next page's path or URL on `base_url`; null or empty "
            "ends the listing.",
    "cursor": "`[list]` only: JSON path (one value) of an opaque cursor (a string or a number), sent back as "
              "`?{cursor_param}=...` on the list path (`&{cursor_param}=...` where the path has a query string "
              "already) — or, where the list's path or body uses the `{cursor}` placeholder, there (on the first "
              "page null as a whole body value, `offset = \"{cursor}\"`, and empty in a path); null or empty ends "
              "the listing.",
    "cursor_param": "`[list]` only: the query parameter the cursor is sent back in (default `cursor`).",
    "max_pages": "`[list]` only: pages read at most (default 1000); more is an error, never a partial listing.",
    "verbatim": "`[search]` only: whether results are the stored memories themselves (default true). Then every "
                "verified add or update is read back: a copy of the state gets a fresh memory of the written text "
                "and time, and a search for that text must find the written memory beside it (kind "
                "`write_not_found`; `ufuzz run --no-readback` turns it off). False for a product whose search "
                "returns derived facts, chunks or summaries.",
}

_OWN_SCHEMA: dict[str, dict[str, Any]] = {
    "abstain_phrases": {"type": "array", "items": {"type": "string", "pattern": "\\w"}},
    "abstain_defaults": {"type": "boolean", "default": True},
    "next": {"type": "string", "pattern": r"^\$"},
    "cursor": {"type": "string", "pattern": r"^\$"},
    "cursor_param": {"type": "string", "pattern": "^[A-Za-z0-9_.~-]+$", "default": "cursor"},
    "max_pages": {"type": "integer", "minimum": 1, "maximum": 100000, "default": 1000},
    "verbatim": {"type": "boolean", "default": True},
}


def _top_properties() -> dict[str, Any]:
    """Top-level scalar keys from ProductModel's own JSON Schema (types, ranges, defaults)."""
    model = config.ProductModel.model_json_schema()
    out = {}
    for key in ("base_url", "name", "timeout", "retries", "retry_backoff", "deterministic", "abstain_threshold",
                "error_when", "headers"):
        prop = dict(model["properties"][key])
        prop.pop("title", None)
        prop["description"] = TOP_DOCS[key]
        out[key] = prop
    out["auth"] = {"type": "object", "additionalProperties": False, "description": TOP_DOCS["auth"],
                   "properties": {"header": {"type": "string", "maxLength": 200},
                                  "env": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                                  "scheme": {"type": "string", "default": "Bearer"}},
                   "dependentRequired": {"header": ["env"], "env": ["header"]}}
    out["namespace"] = {"type": "object", "additionalProperties": False, "description": TOP_DOCS["namespace"],
                        "properties": {"prefix": {"type": "string", "pattern": "^[A-Za-z0-9_.~-]*$",
                                                  "default": "ufuzz-"}}}
    return out


def _operation(name: str) -> dict[str, Any]:
    keys = config._PATH_KEYS[name]
    props: dict[str, Any] = {
        "method": {"enum": [*config.METHODS, *(m.lower() for m in config.METHODS)],
                   "default": config._DEFAULT_METHOD.get(name, "GET"), "description": KEY_DOCS["method"]},
        "path": {"type": "string", "pattern": "^/", "description": KEY_DOCS["path"]},
        "body": {"description": KEY_DOCS["body"]},
        "not_found": {"type": "array", "items": {"type": "integer"}, "default": [404],
                      "description": KEY_DOCS["not_found"]},
        "not_found_when": {"type": "string", "pattern": r"^\$", "description": KEY_DOCS["not_found_when"]},
        "not_found_values": {"type": "array", "items": {"type": ["string", "number", "boolean"]},
                             "description": KEY_DOCS["not_found_values"]},
    }
    if name == "update":
        props["policy"] = {"enum": ["rewrite", "append"], "default": "rewrite", "description": KEY_DOCS["policy"]}
    for key in keys:
        pattern = r"^!?\s*\$" if key in config._NEGATABLE else r"^\$"
        props[key] = {"type": "string", "pattern": pattern, "description": KEY_DOCS[key]}
    for key in sorted(config._OWN_KEYS.get(name, set()) - {"policy"}):  # policy: above, with its enum
        props[key] = {**_OWN_SCHEMA[key], "description": KEY_DOCS[key]}
    provides = ", ".join(f"`{{{p}}}`" for p in sorted(config.PROVIDES[name]))
    return {"type": "object", "additionalProperties": False, "properties": props,
            "required": ["path", *(k for k, req in keys.items() if req)],
            "description": f"{OP_DOCS[name]} Placeholders it provides: {provides}."}


def product_schema() -> dict[str, Any]:
    """The JSON Schema of a product TOML (as parsed: a JSON object)."""
    props = _top_properties()
    for name in (*config.REQUIRED_OPS, *config.OPTIONAL_OPS):
        props[name] = _operation(name)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "ufuzz product TOML",
            "description": "A memory product's HTTP API for `ufuzz run --backend http --config product.toml`.",
            "type": "object", "additionalProperties": False, "properties": props,
            "required": list(config.REQUIRED_OPS),
            "anyOf": [{"required": [op]} for op in config.USE_OPS]}
