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

from ufuzz.backends.adapters.http.adapter import HttpBackend
from ufuzz.backends.adapters.http.config import Operation, ProductConfig, load_config, parse_config
from ufuzz.backends.adapters.http.paths import JsonPath

__all__ = ["HttpBackend", "JsonPath", "Operation", "ProductConfig", "load_config", "parse_config"]
