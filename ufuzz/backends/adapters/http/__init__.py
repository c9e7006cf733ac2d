"""A generic adapter for a memory product's REST API (``--backend http --config product.toml``).

Everything product-specific lives in a TOML file (``options["config"]``; ``examples/product.toml``): the product's
URL and auth, and one table per operation — ``add``, ``get``, ``list`` (required), ``search`` and/or ``answer``,
``update``, ``delete``, ``snapshot``, ``create``, ``drop`` — each a method, a path template, a body and the JSON paths
(RFC 9535) of the response's fields. Every key is described once, in the JSON Schema the loader's own tables make
(:mod:`~ufuzz.backends.adapters.http.schema`: ``ufuzz backends schema http``; rendered as docs/product-toml.md).

A product with ``[answer]`` answers on its own and its responses are judged; without ``[search]`` retrieval is
hidden (only responses are observed, memory operations still checked through ``[get]`` / ``[list]``). Malformed
configuration raises ``ValueError`` naming the file, the line and the key; HTTP errors, timeouts, unreadable
responses and errors answered at HTTP 200 (``error_when``) raise ``BackendError`` naming the operation.

- :mod:`~ufuzz.backends.adapters.http.adapter` — the backend: requests rendered, answers read, one namespace a state
- :mod:`~ufuzz.backends.adapters.http.config` — the TOML checked and read into a :class:`ProductConfig`
- :mod:`~ufuzz.backends.adapters.http.paths` — JSON paths (python-jsonpath, with a fast walk of plain steps)
- :mod:`~ufuzz.backends.adapters.http.schema` — the TOML's JSON Schema, from the loader's tables
"""

from ufuzz.backends.adapters.http.adapter import HttpBackend
from ufuzz.backends.adapters.http.config import Operation, ProductConfig, load_config, parse_config
from ufuzz.backends.adapters.http.paths import JsonPath

__all__ = ["HttpBackend", "JsonPath", "Operation", "ProductConfig", "load_config", "parse_config"]
