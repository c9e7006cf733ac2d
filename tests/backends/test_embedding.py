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


def test_warming_in_batches_gives_bitwise_the_vectors_of_single_encodes(tmp_path):
    """Batches mix only texts of one token length (no padding), so a warmed vector is exactly the one an
    encode of the text alone computes: warming ahead changes no score and no ranking."""
    texts = ["Where does Lena live now?", "Which city is Pip's beach in?", "What does Ana do for work?",
             "When did Ana move to Porto?", "Who is Lena's sister?", "How many dogs does Ana have these days?",
             *TEXTS]
    alone = Embedder(persistent=False)
    single = {t: alone.encode([t])[0] for t in texts}
    warm = Embedder(persistent=False)
    assert warm.warm(texts) == len(texts) and warm.model_calls < len(texts)
    assert warm.warm(texts) == 0  # all cached now
    for t in texts:
        assert np.array_equal(warm.encode([t])[0], single[t]), t
