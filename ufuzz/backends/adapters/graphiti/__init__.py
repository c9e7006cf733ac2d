"""Graphiti (graphiti-core 0.31.2) on an embedded Kuzu database file.

Every ufuzz state is one Kuzu database file under ``<workdir>/graphiti/<handle>/graph.kuzu`` opened by a
Graphiti ``KuzuDriver``. Graphiti is used for real: its node/edge models and save/delete/get queries, its
temporal edge model (``invalid_at``/``expired_at``) for updates and its own hybrid ``search_`` (BM25 over the
Kuzu FTS index + cosine over fact embeddings, then a reranker) for retrieval.

Write modes (option ``write_mode``):

``direct`` (default, offline)
    Each memory becomes one ``EntityEdge`` whose ``fact`` is the memory text, saved without an LLM. The
    checkpoint provenance picks the endpoints: a memory that evidences a ``Fact`` links the entity node to a
    value node (edge name = the attribute); a memory without facts (and any later ``add``) is an edge from
    the per-state ``user`` node to the entity named in ``metadata['entity']`` or in the text, else to a
    ``user notes`` node. No self-edges: Graphiti's BFS (walk semantics, depth 6 through Kuzu's edge nodes)
    explodes on cycles. The ufuzz id is kept in the edge attributes (``ufuzz_id``); node and edge uuids
    are uuid5 of the names/ids, so rebuilding a checkpoint gives the same graph.
``episode`` (native, needs an OpenAI-compatible LLM: options ``llm_base_url``, ``llm_model``,
    ``llm_api_key_env``)
    Each memory is an ``add_episode`` call through ``OpenAIGenericClient`` (json_schema structured output;
    with the default prompts about three requests per memory: entity extraction, fact extraction and, once
    the graph holds candidates, one dedupe/invalidation prompt per fact). The episode's name is the memory
    id (Graphiti mints its uuid); retrieved edges map back to memories through the edge's ``episodes``
    (an edge several memories asserted maps to the first). A memory is active while one of the edges its
    episode asserted is neither invalid nor expired (a memory without edges stays active). update = a
    later episode; Graphiti's LLM decides what it invalidates, and only an invalidated edge of the old
    memory makes it ``superseded`` (otherwise nothing is reported superseded). delete = ``remove_episode``
    (edges and nodes only that episode supports go; summaries of the rest are rebuilt by the LLM); it does
    not undo invalidations the episode made, so deleting an update leaves the old memory inactive.

Retrieval options: ``reranker`` (``cross_encoder`` default, ``rrf``, ``mmr``), ``filter_invalid`` (default
false: Graphiti's default search also returns invalidated/expired edges; true adds ``invalid_at IS NULL``
and ``expired_at IS NULL`` search filters), ``sim_min_score`` (Graphiti's default 0.6).

Storage options: ``state_dir`` (``auto`` default: state files in a private RAM directory under ``/dev/shm``
when it has room, else on disk; ``disk``; or a path), ``live_budget_mb`` (default 2500; past this resident
size the least recently used databases are closed — files kept, reopened on next use; 0 = never),
``buffer_pool_mb`` (default 64 per database; doubled for a state whose reads do not fit, see ``_read``),
``max_db_mb`` (default 1024). A fork checkpoints the source
and clones its file (reflink where the file system has them, else a sparse copy); a released state is
closed without a checkpoint. In direct mode a build of a checkpoint that a live, never-written state already
holds is such a fork of that state (a rebuild gives the same graph: 0.86 s vs 0.06 s CPU for 37 memories).

No cross-encoder model ships offline, so the ``CrossEncoderClient`` here ranks passages by MiniLM cosine
similarity (scores in [-1, 1]); the ``rrf``/``mmr`` rerankers give rank-fusion/MMR scores instead.

graphiti is async: its coroutines run on one private event loop in a private thread.
"""

from ufuzz.backends.adapters.graphiti.adapter import DEFAULT_ABSTAIN, INSTALL_HINT, GraphitiBackend

__all__ = ["GraphitiBackend", "INSTALL_HINT", "DEFAULT_ABSTAIN"]
