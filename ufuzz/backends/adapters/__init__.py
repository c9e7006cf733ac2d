"""The adapters: one module (or one package, for an adapter split by job) per memory system under test, each a named
:class:`~ufuzz.backends.protocol.MemoryBackend` found by :mod:`ufuzz.backends.registry` without a list.

- :mod:`~ufuzz.backends.adapters.embedded` — ufuzz's own offline store (dense, BM25 or hybrid search; update policies)
- :mod:`~ufuzz.backends.adapters.planted` — the embedded store with one known defect planted, and its clean twin
- :mod:`~ufuzz.backends.adapters.mem0`, :mod:`~ufuzz.backends.adapters.memos` — libraries over a local vector store
  (what they share: :mod:`ufuzz.backends.library`)
- :mod:`~ufuzz.backends.adapters.amem` — A-Mem
- :mod:`~ufuzz.backends.adapters.graphiti` — Graphiti on Kuzu (``adapter``, ``clients``, ``driver``, ``storage``)
- :mod:`~ufuzz.backends.adapters.http` — any product over HTTP from a TOML file (``adapter``, ``config``, ``paths``,
  ``schema``)

What every adapter builds on stays one level up, in :mod:`ufuzz.backends`: the protocol, the registry, options,
state tables, the worker process, the transport, the embedder and the conformance kit.
"""
