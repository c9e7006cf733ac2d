"""The Embedder: real all-MiniLM-L6-v2 vectors, in-memory and persistent caches."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from ufuzz.backends.embedding import DIM, MODEL_NAME, Embedder, default_cache_path, default_embedder

TEXTS = ["My sister Lena lives in Velmora.", "Our dog Pip loves the beach at Orrin Bay.",
         "I usually go to the gym on Thursdays."]


@pytest.fixture
def cache_file(tmp_path):
    return tmp_path / "embeddings.sqlite"


def test_encode_shape_dtype_and_normalized(tmp_path):
    emb = Embedder(tmp_path / "c.sqlite")
    vecs = emb.encode(TEXTS)
    assert vecs.shape == (3, DIM) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert emb.encode([]).shape == (0, DIM)
    # rows follow the input order, duplicates included
    again = emb.encode([TEXTS[2], TEXTS[0], TEXTS[2]])
    assert np.array_equal(again[0], vecs[2]) and np.array_equal(again[1], vecs[0])
    assert np.array_equal(again[2], vecs[2])


def test_vectors_are_semantic(tmp_path):
    emb = Embedder(tmp_path / "c.sqlite")
    q, near, far = emb.encode(["Where does Lena live?", TEXTS[0], "The stock market fell sharply today."])
    assert float(q @ near) > float(q @ far) + 0.3


def test_cache_hits_and_persistent_reuse(cache_file):
    emb = Embedder(cache_file)
    first = emb.encode(TEXTS)
    assert emb.model_calls == 1 and emb.texts_embedded == 3
    second = emb.encode(list(reversed(TEXTS)))
    assert emb.model_calls == 1, "second call on the same texts must not reach the model"
    assert np.array_equal(second[::-1], first)
    emb.encode([TEXTS[0], "A brand new sentence about kites."])
    assert emb.model_calls == 2 and emb.texts_embedded == 4  # only the new text went to the model
    emb.close()

    fresh = Embedder(cache_file)  # a new instance (new process, same file): served from disk
    vecs = fresh.encode(TEXTS)
    assert fresh.model_calls == 0 and fresh.disk_hits == 3
    assert np.array_equal(vecs, first)
    fresh.close()

    with sqlite3.connect(cache_file) as db:
        (n,) = db.execute("SELECT COUNT(*) FROM embeddings").fetchone()
        (blob,) = db.execute("SELECT vec FROM embeddings LIMIT 1").fetchone()
    assert n == 4 and len(blob) == DIM * 4


def test_cache_key_includes_model_name(cache_file):
    Embedder(cache_file).encode(TEXTS)
    other = Embedder(cache_file, model_name=MODEL_NAME + "-other")
    assert other._disk_lookup(TEXTS) == {}
    assert len(Embedder(cache_file)._disk_lookup(TEXTS)) == 3


def test_non_persistent_writes_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("UFUZZ_CACHE_DIR", str(tmp_path / "cache"))
    emb = Embedder(persistent=False)
    emb.encode(TEXTS[:1])
    emb.encode(TEXTS[:1])
    assert emb.model_calls == 1
    assert not (tmp_path / "cache").exists()


def test_default_cache_path(monkeypatch, tmp_path):
    monkeypatch.setenv("UFUZZ_CACHE_DIR", str(tmp_path))
    assert default_cache_path() == tmp_path / "embeddings.sqlite"
    monkeypatch.delenv("UFUZZ_CACHE_DIR")
    assert default_cache_path().parts[-3:] == (".cache", "ufuzz", "embeddings.sqlite")
    assert default_embedder(tmp_path / "x.sqlite") is default_embedder(tmp_path / "x.sqlite")


class _BatchSensitiveModel:
    """The real model, as seen on a CPU whose kernels make a batched vector differ from the single-text one:
    every text of a batch of several is nudged (far more than any real kernel does, so any batching shows)."""

    def __init__(self, real):
        self.real, self.batches = real, []

    def __getattr__(self, name):
        return getattr(self.real, name)

    def encode(self, texts, **kw):
        self.batches.append(len(texts))
        vecs = np.asarray(self.real.encode(texts, **kw), dtype=np.float32)
        if len(texts) > 1:
            vecs = vecs + np.float32(1e-3) * np.arange(1, len(texts) + 1, dtype=np.float32)[:, None]
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs


@pytest.fixture
def batch_sensitive(monkeypatch):
    from ufuzz.backends import embedding

    fake = _BatchSensitiveModel(embedding.load_model())
    monkeypatch.setattr(embedding, "load_model", lambda: fake)
    return fake


def test_the_model_only_ever_sees_one_text_at_a_time(batch_sensitive):
    """The design that makes a vector a function of its text: one text per model call, whatever the caller
    asks for at once (a checkpoint's memories, warming, a list with duplicates)."""
    texts = ["Where does Lena live now?", "Which city is Pip's beach in?", "How many dogs does Ana have?",
             *TEXTS]
    emb = Embedder(persistent=False)
    emb.encode(texts)
    emb.warm([*texts, "A brand new sentence about kites.", "And one more, a little longer than that."])
    assert batch_sensitive.batches and set(batch_sensitive.batches) == {1}
    assert emb.texts_embedded == len(batch_sensitive.batches) == len(texts) + 2


def test_a_vector_does_not_depend_on_what_was_embedded_with_it(batch_sensitive):
    """Texts embedded together, in another order, by warming, or each in a fresh embedder get the very same
    vectors (on the batch-sensitive model above, any batched encode would differ by ~1e-3)."""
    texts = ["Where does Lena live now?", "Which city is Pip's beach in?", "What does Ana do for work?",
             "When did Ana move to Porto?", "Who is Lena's sister?", "How many dogs does Ana have these days?",
             *TEXTS]
    together = Embedder(persistent=False).encode(texts)
    backwards = Embedder(persistent=False).encode(texts[::-1])[::-1]
    warmed = Embedder(persistent=False)
    assert warmed.warm(texts) == len(texts) and warmed.warm(texts) == 0  # all cached now
    for i, t in enumerate(texts):
        alone = Embedder(persistent=False).encode([t])[0]
        assert np.array_equal(together[i], alone) and np.array_equal(backwards[i], alone), t
        assert np.array_equal(warmed.encode([t])[0], alone), t


def test_vectors_cached_by_another_encoding_scheme_are_not_reused(cache_file):
    """The cache key names the encoding scheme: vectors an earlier version computed in batches (other last
    bits) are never mixed with single-text ones."""
    import hashlib

    old_key = hashlib.sha1((MODEL_NAME + "\x00" + TEXTS[0]).encode("utf-8")).hexdigest()
    with sqlite3.connect(cache_file) as db:
        db.execute("CREATE TABLE embeddings (key TEXT PRIMARY KEY, dim INTEGER NOT NULL, vec BLOB NOT NULL)")
        db.execute("INSERT INTO embeddings VALUES (?, ?, ?)", (old_key, DIM, np.ones(DIM, np.float32).tobytes()))
    emb = Embedder(cache_file)
    assert emb._disk_lookup([TEXTS[0]]) == {}
    vec = emb.encode([TEXTS[0]])[0]
    assert emb.model_calls == 1 and not np.allclose(vec, np.ones(DIM) / np.sqrt(DIM))
