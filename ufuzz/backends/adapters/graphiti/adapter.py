"""The Graphiti adapter (:mod:`ufuzz.backends.adapters.graphiti`): states, the two write modes, retrieval, the
native operations and the live budget of open databases."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import threading
import uuid as uuidlib
import warnings
import weakref
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ufuzz.backends.adapters.graphiti.clients import ThroughClient, make_clients, prompt_digest
from ufuzz.backends.adapters.graphiti.driver import driver_class
from ufuzz.backends.adapters.graphiti.storage import remove_root, state_root
from ufuzz.backends.files import clone_file, resident_mb, trim_heap
from ufuzz.backends.llmclient import llm_options
from ufuzz.backends.options import Option, Requires
from ufuzz.backends.protocol import (
    BackendError,
    BackendUnavailable,
    Capabilities,
    MemoryBackend,
    OpResult,
    Retrieved,
    StateHandle,
    StoredMemory,
)
from ufuzz.backends.states import StateTable
from ufuzz.model import Checkpoint, Memory
from ufuzz.model.memory import utc_time

INSTALL_HINT = "pip install 'ufuzz[graphiti]'"
_NS = uuidlib.UUID("6b1d3c8e-5a52-4c1e-9a4f-2f0f4d6b7a11")
_USER = "user"
_NOTES = "user notes"
_GROUP = "ufuzz"
#: the Kuzu node table Graphiti stores entity edges in (its FTS index is what edge BM25 search queries)
_EDGE_TABLE = "RelatesToNode_"
_RERANKERS = ("cross_encoder", "rrf", "mmr")
_WRITE_MODES = ("direct", "episode")
#: MiniLM cosine below which the offline reader should abstain (cross_encoder reranker scores only).
DEFAULT_ABSTAIN = 0.3
#: default resident budget (MB) past which open states are closed: the model and torch take ~0.6 GB, each
#: open Kuzu database ~130 MB, so about 14 databases stay open under 2.5 GB.
DEFAULT_LIVE_BUDGET_MB = 2500
#: a state's Kuzu connection is replaced after this many backend calls: a connection keeps ~0.1-0.9 MB of
#: native memory per query it ran (0.85 MB per search_) until it is closed, so a state that serves thousands
#: of calls would grow by gigabytes.
_RENEW_CONNECTION_EVERY = 32


def _uuid(kind: str, key: str) -> str:
    return str(uuidlib.uuid5(_NS, f"{kind}:{key}"))


def _checkpoint_key(ck: Checkpoint) -> str:
    """Content key of a checkpoint (its id alone could name different contents in different suites)."""
    return hashlib.sha1(repr(ck).encode("utf-8")).hexdigest()


def _parse_ts(ts: str) -> datetime:
    try:
        return utc_time(ts)
    except ValueError as exc:
        raise BackendError(f"graphiti: memory timestamp {ts!r} is not ISO-8601") from exc


def _fmt_ts(dt: datetime | None) -> str:
    if dt is None:
        return ""
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc).replace(tzinfo=None)
    return dt.isoformat()


async def _quiesce() -> None:
    """Wait (at most 30 s) for every other task on the backend's event loop: after a failed search, the
    sub-queries it ran alongside the failing one, before the database they use is closed."""
    me = asyncio.current_task()
    rest = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    if rest:
        await asyncio.wait(rest, timeout=30)


@dataclass
class _State:
    dir: Path
    #: the open database; both None while the state is closed (its checkpointed file stays in ``dir``)
    driver: Any
    graphiti: Any
    #: ufuzz memory id -> native uuid (edge uuid in direct mode, episode uuid in episode mode)
    ids: dict[str, str] = field(default_factory=dict)
    #: entity name -> node uuid (direct mode)
    nodes: dict[str, str] = field(default_factory=dict)
    #: backend calls on the current connection
    calls: int = 0
    #: content key of the checkpoint this state holds exactly (built from it, or a copy of such a state, and
    #: never written since); None once a memory operation ran on it
    pristine: str | None = None
    #: this database's Kuzu buffer pool (MB): the backend's ``buffer_pool_mb``, grown for a state that needs more
    pool_mb: int = 0


class GraphitiBackend(MemoryBackend):
    name = "graphiti"
    extra = "graphiti"
    isolate = True  # native library: run in a recyclable worker process
    options_spec = (
        Option("write_mode", choices=_WRITE_MODES, default="direct",
               help="direct: one EntityEdge per memory, no LLM; episode: Graphiti's add_episode with an LLM"),
        Option("reranker", choices=_RERANKERS, default="cross_encoder",
               help="Graphiti's edge reranker (cross_encoder = MiniLM cosine stand-in)"),
        Option("filter_invalid", bool, default=False, help="search only edges neither invalid nor expired"),
        Option("sim_min_score", float, default=0.6, nullable=True, help="Graphiti's minimum cosine of the "
                                                                         "edge search (empty: Graphiti's own)"),
        Option("abstain_threshold", float, help=f"score below which the opt-in top-evidence reader abstains "
                                                f"(unset: {DEFAULT_ABSTAIN} with reranker=cross_encoder, none "
                                                "otherwise)"),
        Option("state_dir", default="auto", nullable=True, help="where state databases live: auto (RAM under /dev/shm when it "
                                                 "has room, else disk), disk (the working directory) or a path"),
        Option("live_budget_mb", float, default=float(DEFAULT_LIVE_BUDGET_MB), min=0, nullable=True,
               help="resident MB past which the least recently used databases are closed (0: never)"),
        Option("buffer_pool_mb", int, default=64, min=1, help="Kuzu buffer pool of each state's database"),
        Option("max_db_mb", int, default=1024, min=1, help="Kuzu size limit of each state's database"),
        *llm_options("OpenAI-compatible endpoint for write_mode=episode", "write_mode=episode"),
    )
    option_rules = (Requires("write_mode", ("llm_base_url", "llm_model"), "episode"),)

    def __init__(self, workdir: Path, options: dict[str, Any] | None = None) -> None:
        super().__init__(workdir, options)
        o = self.settings
        self.write_mode, self.reranker = o["write_mode"], o["reranker"]
        self.filter_invalid, self.sim_min_score = o["filter_invalid"], o["sim_min_score"]
        default_abstain = DEFAULT_ABSTAIN if self.reranker == "cross_encoder" else None
        self.abstain_threshold = o["abstain_threshold"] if "abstain_threshold" in self.options else default_abstain
        self.buffer_pool_mb, self.max_db_mb = o["buffer_pool_mb"], o["max_db_mb"]
        #: resident-memory budget (MB) of this process for open Kuzu databases: past it, the least recently used
        #: states are closed (their files stay) and reopened on next use. 0 = no budget.
        self.live_budget_mb = float(o["live_budget_mb"] or 0)
        state_dir = o["state_dir"] or "auto"
        self.llm_base_url, self.llm_model, self.llm_api_key_env = (o["llm_base_url"], o["llm_model"],
                                                                   o["llm_api_key_env"])
        ok, hint = self.dependencies_installed()
        if not ok:
            raise BackendUnavailable("graphiti backend needs graphiti-core and kuzu", hint)
        os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")
        self.root = state_root(self.workdir, state_dir)
        self.remove_root = weakref.finalize(self, remove_root, self.workdir, self.root)  # also at exit
        self._states: StateTable[_State] = StateTable("graphiti", prefix="g", width=5)  # least recently used first
        self.spills = 0  # databases closed by the live budget (reopened on next use)
        self.pool_growths = 0  # databases reopened with a larger buffer pool (a read did not fit)
        self._embedder, self._ranker, self._nollm_cls = make_clients()
        self._llm: Any = None  # the OpenAIGenericClient of write_mode=episode, made on first use
        self._calls: Any = None  # ufuzz's LLM client (cache first) that its requests go through
        self._driver_cls = driver_class()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="ufuzz-graphiti-loop", daemon=True)
        self._thread.start()
        self._closed = False

    # -- description -----------------------------------------------------------------------------------
    @classmethod
    def dependencies_installed(cls) -> tuple[bool, str]:
        try:
            import graphiti_core  # noqa: F401
            import kuzu  # noqa: F401
        except ImportError:
            return False, INSTALL_HINT
        return True, ""

    @classmethod
    def static_capabilities(cls) -> Capabilities:
        """Capabilities with default options, for ``ufuzz backends``."""
        return Capabilities(notes="graphiti-core on Kuzu; offline direct writes (write_mode=episode with an LLM); "
                                  "update = invalid_at/expired_at on the old edge; invalidated edges still rank "
                                  "unless filter_invalid=true; fork = CHECKPOINT + file copy")

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            visible_retrieval=True, copyable=True, native_update=True, native_delete=True,
            observable_state=True, answers=False, deterministic=self.write_mode == "direct",
            reader_threshold=self.abstain_threshold,
            notes=(f"graphiti-core on Kuzu; write_mode={self.write_mode}; reranker={self.reranker} "
                   f"(cross_encoder = MiniLM cosine stand-in); filter_invalid={self.filter_invalid}; "
                   "fork = CHECKPOINT + database file copy"),
        )

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        try:
            from importlib.metadata import version

            d["graphiti_core"] = version("graphiti-core")
            d["kuzu"] = version("kuzu")
        except Exception:  # noqa: BLE001
            pass
        d.update(write_mode=self.write_mode, reranker=self.reranker, filter_invalid=self.filter_invalid,
                 sim_min_score=self.sim_min_score, embedder="all-MiniLM-L6-v2 (384)",
                 cross_encoder="MiniLM cosine (no local cross-encoder model)")
        if self.write_mode == "episode":
            d.update(llm="graphiti's add_episode/remove_episode prompts through ufuzz's client and cache",
                     llm_base_url=self.llm_base_url, llm_model=self.llm_model,
                     llm_sampling={"temperature": 0.0, "response_format": "json_schema (graphiti's models)"},
                     llm_prompts_sha256=prompt_digest())
            if self._calls is not None:
                d["llm_calls"] = self._calls.stats()
        return d

    # -- plumbing --------------------------------------------------------------------------------------
    def _run(self, op: str, coro: Coroutine[Any, Any, Any]) -> Any:
        if self._closed:
            coro.close()
            raise BackendError(f"graphiti {op}: backend is closed")
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return fut.result()
        except BackendError as exc:
            raise BackendError(f"graphiti {op}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - every library fault becomes a BackendError
            raise BackendError(f"graphiti {op}: {type(exc).__name__}: {exc}") from exc

    def _state(self, state: StateHandle, op: str) -> _State:
        """The state, its database open (reopened from its file if the live budget closed it)."""
        st = self._states.get(state, op)
        self._states.touch(state)
        if st.driver is None:
            st.driver, st.graphiti = self._open_db(st.dir, op, st.pool_mb)
            st.calls = 0
            self._within_budget(keep=state)
        st.calls += 1
        if st.calls > _RENEW_CONNECTION_EVERY:
            st.driver.renew_connection()
            st.calls = 1
        return st

    def _within_budget(self, keep: StateHandle) -> None:
        """Close least recently used databases while this process is over ``live_budget_mb``. Every open Kuzu
        database costs ~130 MB resident whatever its buffer pool (hash indexes of ~20 tables, FTS index
        structures, one allocator arena per database thread), so the number open at once is what bounds
        memory; a closed state keeps its checkpointed file and reopens in ~50 ms."""
        if not self.live_budget_mb or resident_mb() <= self.live_budget_mb:
            return
        for handle in list(self._states):
            st = self._states[handle]
            if handle == keep or st.driver is None:
                continue
            st.driver.shutdown()  # checkpoints: the reopened file needs no WAL replay
            st.driver = st.graphiti = None
            self.spills += 1
            trim_heap()
            if resident_mb() <= self.live_budget_mb:
                return

    def _new_dir(self) -> tuple[StateHandle, Path]:
        handle = self._states.mint()
        d = self.root / handle
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        return handle, d

    def _open(self, d: Path, op: str, pool_mb: int) -> _State:
        driver, g = self._open_db(d, op, pool_mb)
        return _State(dir=d, driver=driver, graphiti=g, pool_mb=pool_mb)

    def _read(self, state: StateHandle, op: str, make: Callable[[_State], Coroutine[Any, Any, Any]]) -> Any:
        """A read of ``state`` (``make`` builds its coroutine on the open state), once more on a database reopened
        with twice the buffer pool while Kuzu says its pool is full, up to ``max_db_mb``: a 400-turn LoCoMo
        conversation's searches did not fit the 64 MB that the shipped suite's states run in, and every
        execution of a campaign on it was an error ("Buffer manager exception: … The buffer pool is full")."""
        while True:
            st = self._state(state, op)
            try:
                return self._run(op, make(st))
            except BackendError as exc:
                if "buffer pool is full" not in str(exc).lower() or st.pool_mb * 2 > self.max_db_mb:
                    raise
            self._run(op, _quiesce())  # a search's other sub-queries may still be running on this database
            st.driver.shutdown()
            st.driver = st.graphiti = None
            st.pool_mb *= 2
            self.pool_growths += 1
            try:
                self._state(state, op)  # reopened with the larger pool now, so that a failure to is said as such
            except BackendError:
                st.pool_mb //= 2  # not left at a size that cannot be opened
                raise

    def _open_db(self, d: Path, op: str, pool_mb: int) -> tuple[Any, Any]:
        from graphiti_core import Graphiti

        llm = self._llm_client()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                path = d / "graph.kuzu"
                driver = self._driver_cls(str(path), buffer_pool_size=pool_mb << 20,
                                          max_db_size=self.max_db_mb << 20, threads=1, schema=not path.exists())
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"graphiti {op}: cannot open Kuzu database in {d.name}: {exc}") from exc
        g = Graphiti(graph_driver=driver, llm_client=llm, embedder=self._embedder, cross_encoder=self._ranker)
        return driver, g

    def _llm_client(self) -> Any:
        if self.write_mode != "episode":
            return self._nollm_cls()
        if self._llm is None:  # one client for every state of this backend
            from graphiti_core.llm_client.config import LLMConfig
            from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient

            from ufuzz.backends.llmclient import llm_client

            self._calls = llm_client(self.settings)
            cfg = LLMConfig(api_key="unused", model=self.llm_model, small_model=self.llm_model,
                            base_url=self.llm_base_url, temperature=0.0)
            self._llm = OpenAIGenericClient(config=cfg, client=ThroughClient(self._calls),
                                            structured_output_mode="json_schema")
        return self._llm

    # -- states ----------------------------------------------------------------------------------------
    def build(self, checkpoint: Checkpoint) -> StateHandle:
        """A state holding ``checkpoint``. In direct mode a live state that holds exactly this checkpoint (built
        from it and never written since) is copied instead: a rebuild is deterministic, so the copy holds the
        same graph, for the price of a fork (~0.06 s CPU) rather than ~40 node/edge saves and an FTS index
        build (~0.9 s). A long campaign rebuilds evicted mutant states from their checkpoints hundreds of times
        (914 builds in a budget-3000 run of the shipped suite)."""
        key = _checkpoint_key(checkpoint) if self.write_mode == "direct" else None
        twin = next((h for h in self._states if key is not None and self._states[h].pristine == key), None)
        if twin is not None:
            return self.fork(twin)
        handle, d = self._new_dir()
        st = self._open(d, "build", self.buffer_pool_mb)
        self._states.put(handle, st)
        self._within_budget(keep=handle)
        try:
            self._run("build", self._build_indices(st))
            if self.write_mode == "direct":
                self._run("build", self._ingest_direct(st, checkpoint))
            else:
                for m in sorted(checkpoint.memories, key=lambda m: (m.timestamp, m.id)):
                    self._run("build", self._add_episode(st, m))
        except BaseException:
            self.release(handle)
            raise
        st.pristine = key
        return handle

    async def _build_indices(self, st: _State) -> None:
        """Known bug 2: KuzuDriver.build_indices_and_constraints is a no-op, so the FTS indexes that BM25
        search queries are never created; the graph-ops implementation creates them. Direct mode creates only
        the one its searches query (edges: ``RelatesToNode_``, Graphiti's own statement): nothing reads the
        episode, entity and community indexes there, and each costs ~12 MB resident and ~9 ms on every open
        of every state (a fork opens a database). Episode mode needs them all (add_episode searches nodes)."""
        from graphiti_core.driver.driver import GraphProvider
        from graphiti_core.graph_queries import get_fulltext_indices

        if self.write_mode != "direct":
            await st.driver.graph_ops.build_indices_and_constraints(st.driver)
            return
        for q in get_fulltext_indices(GraphProvider.KUZU):
            if f"'{_EDGE_TABLE}'" in q:
                await st.driver.execute_query(q)

    def fork(self, state: StateHandle) -> StateHandle:
        """CHECKPOINT (writes only what the WAL holds) and clone the database file: a reflink where the file
        system has them, else a sparse copy (about half of a Kuzu file is zero pages). A closed source is
        already checkpointed and is copied without being opened."""
        src = self._states.get(state, "fork")
        self._states.touch(state)
        if src.driver is not None:
            self._run("fork", src.driver.execute_query("CHECKPOINT;"))
        handle, d = self._new_dir()
        for f in sorted(src.dir.iterdir()):
            if f.is_file():
                clone_file(f, d / f.name)
        st = self._open(d, "fork", src.pool_mb)  # a copy needs what its source grew to
        st.ids = dict(src.ids)
        st.nodes = dict(src.nodes)
        st.pristine = src.pristine
        self._states.put(handle, st)
        self._within_budget(keep=handle)
        return handle

    def release(self, state: StateHandle) -> None:
        st = self._states.pop(state)
        if st is None:
            return
        if st.driver is not None:
            st.driver.shutdown(checkpoint=False)
        shutil.rmtree(st.dir, ignore_errors=True)

    def close(self) -> None:
        if self._closed:
            return
        for h in list(self._states):
            self.release(h)
        if self._llm is not None:  # the episode-mode HTTP client's connection pool
            try:
                self._run("close", self._llm.client.close())
            except BackendError:
                pass
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        self.remove_root()

    # -- direct-mode writes -------------------------------------------------------------------------------
    async def _node(self, st: _State, name: str, created: datetime, label: str | None = None) -> str:
        from graphiti_core.nodes import EntityNode

        if name in st.nodes:
            return st.nodes[name]
        node = EntityNode(uuid=_uuid("node", name), name=name, group_id=_GROUP, created_at=created,
                          labels=[label] if label else [], summary="")
        await node.generate_name_embedding(self._embedder)
        await node.save(st.driver)
        st.nodes[name] = node.uuid
        return node.uuid

    def _edge(self, m: Memory, src: str, dst: str, name: str, extra: dict[str, Any] | None = None) -> Any:
        from graphiti_core.edges import EntityEdge

        ts = _parse_ts(m.timestamp)
        attrs = {"ufuzz_id": m.id, **(extra or {})}
        return EntityEdge(uuid=_uuid("edge", m.id), group_id=_GROUP, source_node_uuid=src, target_node_uuid=dst,
                          created_at=ts, name=name, fact=m.text, episodes=[], valid_at=ts, reference_time=ts,
                          attributes=attrs)

    async def _save_edge(self, st: _State, edge: Any) -> None:
        await edge.generate_embedding(self._embedder)
        await edge.save(st.driver)
        st.ids[edge.attributes["ufuzz_id"]] = edge.uuid

    async def _ingest_direct(self, st: _State, ck: Checkpoint) -> None:
        types = {e.name: e.type for e in ck.entities}
        fact_of: dict[str, Any] = {}
        for f in ck.facts:
            for mid in f.evidence:
                fact_of.setdefault(mid, f)
        first_ts = min((m.timestamp for m in ck.memories), default="1970-01-01T00:00:00")
        created = _parse_ts(first_ts)
        names = [x for f in ck.facts for x in (f.entity, f.value)] + [e.name for e in ck.entities]
        await self._embedder.create_batch([m.text for m in ck.memories] + names)  # every text up front, each alone
        await self._node(st, _USER, created, "Person")
        await self._node(st, _NOTES, created)
        for f in ck.facts:  # every entity and value of the provenance is a node, facts first
            await self._node(st, f.entity, created, types.get(f.entity, "").capitalize() or None)
            await self._node(st, f.value, created)
        for e in ck.entities:
            await self._node(st, e.name, created, e.type.capitalize() or None)
        for m in ck.memories:
            f = fact_of.get(m.id)
            if f is None:
                edge = self._edge(m, st.nodes[_USER], self._attach(st, m), "MENTIONED")
            else:
                name = re.sub(r"\W+", "_", f.attribute).upper().strip("_") or "RELATES_TO"
                edge = self._edge(m, st.nodes[f.entity], st.nodes[f.value], name)
            await self._save_edge(st, edge)

    def _attach(self, st: _State, m: Memory) -> str:
        """Target node of a memory without a fact: ``metadata['entity']``, else the longest known node name
        that occurs in the text, else the ``user notes`` sink. (Edges always leave ``user``; no self-edges,
        so Graphiti's BFS stays acyclic.)"""
        want = m.metadata.get("entity") if m.metadata else None
        if want and want in st.nodes and want != _USER:
            return st.nodes[want]
        for name in sorted(st.nodes, key=lambda n: (-len(n), n)):
            if name not in (_USER, _NOTES) and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", m.text):
                return st.nodes[name]
        return st.nodes[_NOTES]

    async def _load_edge(self, st: _State, memory_id: str) -> Any | None:
        from graphiti_core.edges import EntityEdge
        from graphiti_core.errors import EdgeNotFoundError

        native = st.ids.get(memory_id)
        if native is None:
            return None
        try:
            return await EntityEdge.get_by_uuid(st.driver, native)
        except EdgeNotFoundError:
            return None

    # -- episode-mode writes -----------------------------------------------------------------------------
    async def _add_episode(self, st: _State, m: Memory) -> Any:
        from graphiti_core.nodes import EpisodeType

        # No uuid= here: add_episode treats a given uuid as "re-process this stored episode" and loads it with
        # EpisodicNode.get_by_uuid (graphiti-core 0.31.2 graphiti.py:1448-1449), so a fresh uuid raises
        # NodeNotFoundError. Graphiti mints the uuid; the memory id is the episode's name and the map below.
        res = await st.graphiti.add_episode(name=m.id, episode_body=m.text, source_description="ufuzz memory",
                                            reference_time=_parse_ts(m.timestamp), source=EpisodeType.message,
                                            group_id=_GROUP)
        st.ids[m.id] = res.episode.uuid
        return res

    async def _episode(self, st: _State, memory_id: str) -> Any | None:
        from graphiti_core.errors import NodeNotFoundError
        from graphiti_core.nodes import EpisodicNode

        native = st.ids.get(memory_id)
        if native is None:
            return None
        try:
            return await EpisodicNode.get_by_uuid(st.driver, native)
        except NodeNotFoundError:
            return None

    async def _episode_edges(self, st: _State, ep: Any) -> list[Any]:
        """The edges the episode asserted. ``ep.entity_edges`` also lists the older edges the episode
        invalidated (add_episode stores ``resolved_edges + invalidated_edges``, graphiti-core 0.31.2
        graphiti.py:1507 and :1033); those carry other episodes and are not this memory's."""
        from graphiti_core.edges import EntityEdge

        edges = await EntityEdge.get_by_uuids(st.driver, list(ep.entity_edges or []))
        return [e for e in edges if ep.uuid in (e.episodes or [])]

    # -- memory use ------------------------------------------------------------------------------------
    def _search_config(self, k: int) -> Any:
        from graphiti_core.search import search_config_recipes as recipes

        base = {"cross_encoder": recipes.EDGE_HYBRID_SEARCH_CROSS_ENCODER, "rrf": recipes.EDGE_HYBRID_SEARCH_RRF,
                "mmr": recipes.EDGE_HYBRID_SEARCH_MMR}[self.reranker]
        cfg = base.model_copy(deep=True)  # never mutate graphiti's module-level recipes
        cfg.limit = k
        if self.sim_min_score is not None and cfg.edge_config is not None:
            cfg.edge_config.sim_min_score = self.sim_min_score
        return cfg

    def _search_filter(self) -> Any:
        from graphiti_core.search.search_filters import ComparisonOperator, DateFilter, SearchFilters

        if not self.filter_invalid:
            return SearchFilters()
        null = [[DateFilter(comparison_operator=ComparisonOperator.is_null)]]
        return SearchFilters(invalid_at=null, expired_at=null)

    def retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        if k <= 0 or not query.strip():
            self._state(state, "retrieve")
            return []
        res = self._read(state, "retrieve", lambda s: s.graphiti.search_(
            query, config=self._search_config(k), group_ids=[_GROUP], search_filter=self._search_filter()))
        st = self._states.get(state, "retrieve")
        scores = list(res.edge_reranker_scores)
        if len(scores) < len(res.edges):
            scores += [0.0] * (len(res.edges) - len(scores))
        by_episode = {v: key for key, v in st.ids.items()}
        out: list[tuple[float, int, str, str]] = []
        seen: set[str] = set()
        for rank, (edge, score) in enumerate(zip(res.edges, scores, strict=False)):
            if self.write_mode == "direct":
                mid = edge.attributes.get("ufuzz_id") if edge.attributes else None
                text = edge.fact
            else:
                mid = next((by_episode[e] for e in edge.episodes if e in by_episode), None)
                text = edge.fact
            if mid is None or mid in seen:
                continue
            seen.add(mid)
            out.append((float(score), rank, mid, text))
        # Graphiti's order is kept; equal scores are ordered by memory id (deterministic, copy-independent).
        out.sort(key=lambda t: (-t[0], t[2]))
        return [Retrieved(id=mid, text=text, score=score) for score, _, mid, text in out[:k]]

    # -- native memory operations ------------------------------------------------------------------------
    def add(self, state: StateHandle, memory: Memory) -> OpResult:
        st = self._state(state, "add")
        st.pristine = None
        if memory.id in st.ids:
            raise BackendError(f"graphiti add: memory id {memory.id!r} already exists")
        if self.write_mode == "episode":
            self._run("add", self._add_episode(st, memory))
            return OpResult("add", True, target=None, written=(memory.id,), detail="add_episode")

        async def go() -> None:
            await self._save_edge(st, self._edge(memory, st.nodes[_USER], self._attach(st, memory), "MENTIONED"))

        self._run("add", go())
        return OpResult("add", True, target=None, written=(memory.id,), detail="EntityEdge saved")

    def update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        st = self._state(state, "update")
        st.pristine = None
        if new.id in st.ids:
            raise BackendError(f"graphiti update: new memory id {new.id!r} already exists")
        if self.write_mode == "episode":
            return self._update_episode(st, memory_id, new)

        async def go() -> OpResult:
            old = await self._load_edge(st, memory_id)
            if old is None:
                return OpResult("update", False, target=memory_id, detail=f"no memory {memory_id!r}")
            ts = _parse_ts(new.timestamp)
            # Graphiti's temporal model: the old edge stops being valid when the new fact starts.
            await old.load_fact_embedding(st.driver)  # save() writes every column, embedding included
            old.invalid_at = ts
            old.expired_at = ts
            old.attributes = {**old.attributes, "superseded_by": new.id}
            await old.save(st.driver)
            edge = self._edge(new, old.source_node_uuid, old.target_node_uuid, old.name,
                              {"supersedes": memory_id})
            await self._save_edge(st, edge)
            return OpResult("update", True, target=memory_id, written=(new.id,), superseded=(memory_id,),
                            detail="old edge invalid_at/expired_at set; new EntityEdge saved")

        return self._run("update", go())

    def _update_episode(self, st: _State, memory_id: str, new: Memory) -> OpResult:
        if memory_id not in st.ids:
            return OpResult("update", False, target=memory_id, detail=f"no memory {memory_id!r}")
        self._run("update", self._add_episode(st, new))

        async def invalidated() -> bool:
            ep = await self._episode(st, memory_id)
            if ep is None:
                return False
            return any(e.invalid_at or e.expired_at for e in await self._episode_edges(st, ep))

        sup = (memory_id,) if self._run("update", invalidated()) else ()
        return OpResult("update", True, target=memory_id, written=(new.id,), superseded=sup,
                        detail="add_episode; " + ("old edges invalidated by graphiti" if sup else
                                                  "graphiti invalidated no edge of the old episode"))

    def delete(self, state: StateHandle, memory_id: str) -> OpResult:
        st = self._state(state, "delete")
        st.pristine = None
        if self.write_mode == "episode":
            native = st.ids.get(memory_id)
            if native is None:
                return OpResult("delete", False, target=memory_id, detail=f"no memory {memory_id!r}")
            self._run("delete", st.graphiti.remove_episode(native))
            st.ids.pop(memory_id, None)
            return OpResult("delete", True, target=memory_id, removed=(memory_id,), detail="remove_episode")

        async def go() -> OpResult:
            edge = await self._load_edge(st, memory_id)
            if edge is None:
                return OpResult("delete", False, target=memory_id, detail=f"no memory {memory_id!r}")
            await edge.delete(st.driver)
            st.ids.pop(memory_id, None)
            return OpResult("delete", True, target=memory_id, removed=(memory_id,), detail="EntityEdge deleted")

        return self._run("delete", go())

    # -- observation ------------------------------------------------------------------------------------
    def _stored_edge(self, mid: str, e: Any) -> StoredMemory:
        active = e.invalid_at is None and e.expired_at is None
        meta = {"edge_uuid": e.uuid, "edge_name": e.name, "invalid_at": _fmt_ts(e.invalid_at) or None,
                "expired_at": _fmt_ts(e.expired_at) or None,
                **{k: v for k, v in (e.attributes or {}).items() if k != "ufuzz_id"}}
        return StoredMemory(id=mid, text=e.fact, timestamp=_fmt_ts(e.valid_at or e.created_at), active=active,
                            metadata=meta)

    async def _stored_episode(self, st: _State, mid: str, ep: Any) -> StoredMemory:
        edges = await self._episode_edges(st, ep)
        active = not edges or any(e.invalid_at is None and e.expired_at is None for e in edges)
        return StoredMemory(id=mid, text=ep.content, timestamp=_fmt_ts(ep.valid_at), active=active,
                            metadata={"episode_uuid": ep.uuid, "edges": sorted(e.fact for e in edges)})

    def get(self, state: StateHandle, memory_id: str) -> StoredMemory | None:
        async def go(st: _State) -> StoredMemory | None:
            if self.write_mode == "episode":
                ep = await self._episode(st, memory_id)
                return None if ep is None else await self._stored_episode(st, memory_id, ep)
            e = await self._load_edge(st, memory_id)
            return None if e is None else self._stored_edge(memory_id, e)

        return self._read(state, "get", go)

    def list(self, state: StateHandle) -> list[StoredMemory]:
        async def go(st: _State) -> list[StoredMemory]:
            from graphiti_core.edges import EntityEdge
            from graphiti_core.errors import GroupsEdgesNotFoundError
            from graphiti_core.nodes import EpisodicNode

            if self.write_mode == "episode":
                eps = await EpisodicNode.get_by_group_ids(st.driver, [_GROUP])
                back = {v: key for key, v in st.ids.items()}
                return [await self._stored_episode(st, back[ep.uuid], ep) for ep in eps if ep.uuid in back]
            try:
                edges = await EntityEdge.get_by_group_ids(st.driver, [_GROUP])
            except GroupsEdgesNotFoundError:
                edges = []
            out = []
            for e in edges:
                mid = (e.attributes or {}).get("ufuzz_id")
                if mid is not None:
                    out.append(self._stored_edge(mid, e))
            return out

        return sorted(self._read(state, "list", go), key=lambda m: (m.timestamp, m.id))

    def stored_files(self, state: StateHandle) -> list[Path]:
        """The database file(s) of a state (for benchmarks and inspection)."""
        return sorted(p for p in self._state(state, "stored_files").dir.iterdir() if p.is_file())


__all__ = ["GraphitiBackend", "INSTALL_HINT", "DEFAULT_ABSTAIN"]
