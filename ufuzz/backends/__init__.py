"""The memory systems under test and what every adapter builds on.

- :mod:`~ufuzz.backends.protocol` — the backend protocol (``build``, ``fork``, ``retrieve``, ``answer``, native
  ``add`` / ``update`` / ``delete``, ``get`` / ``list``) and its result types
- :mod:`~ufuzz.backends.adapters` — one adapter per memory system (embedded, mem0, MemOS, A-Mem, Graphiti, HTTP)
- :mod:`~ufuzz.backends.registry` — ``--backend NAME`` to an adapter class (built-ins and entry points)
- :mod:`~ufuzz.backends.conformance` — the conformance kit an adapter is checked with
- the kit adapters share: :mod:`~ufuzz.backends.options` (declared options), :mod:`~ufuzz.backends.states` (state
  handles), :mod:`~ufuzz.backends.library` (in-process libraries over a local vector store), :mod:`~ufuzz.backends.worker`
  (an adapter in a child process), :mod:`~ufuzz.backends.transport` (kept-alive HTTP), :mod:`~ufuzz.backends.embedding`
  and :mod:`~ufuzz.backends.bm25` (the offline model and index), :mod:`~ufuzz.backends.files`,
  :mod:`~ufuzz.backends.packages`, :mod:`~ufuzz.backends.llmclient`
- :mod:`~ufuzz.backends.responders` — what turns retrieved memories into a response where the system gives none
"""
