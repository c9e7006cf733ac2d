"""The committed regression corpus does not rest on floating-point bits that a CPU's kernels decide.

Another CPU (AVX-512, AMX, another BLAS) computes MiniLM vectors that differ from this machine's around the 7th
significant digit (batched against single encodes here: up to 1.2e-7 per component). Each text's vector is
nudged here by noise several times that size, fixed per text, and every committed record must still reproduce:
a record whose verdict sits on a near-tie that kernel noise could flip would fail CI on other hardware, and must
not be committed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from ufuzz.triage.check import check_corpus
from ufuzz.triage.corpusfile import load_corpus

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "corpus" / "embedded-dense.jsonl"
#: per-component noise (standard deviation): ~3x the largest difference two kernels gave here
NOISE = 4e-7


class _OtherCPU:
    """The real model, as another CPU's kernels might compute it: each vector nudged by noise fixed per text."""

    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)

    def encode(self, texts, **kw):
        vecs = np.asarray(self.real.encode(texts, **kw), dtype=np.float64)
        for i, t in enumerate(texts):
            rng = np.random.default_rng(int(hashlib.sha1(t.encode("utf-8")).hexdigest()[:12], 16))
            vecs[i] += rng.normal(0.0, NOISE, vecs.shape[1])
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs.astype(np.float32)


@pytest.fixture
def other_cpu(monkeypatch):
    from ufuzz.backends import embedding

    fake = _OtherCPU(embedding.load_model())
    monkeypatch.setattr(embedding, "load_model", lambda: fake)
    return fake


def test_every_committed_record_reproduces_under_kernel_noise(other_cpu, tmp_path):
    corpus = load_corpus(COMMITTED)
    rep = check_corpus(corpus, options={"embedding_cache": str(tmp_path / "noisy.sqlite")}, workdir=tmp_path / "w")
    assert len(rep.results) == len(corpus.records) >= 40
    moved = [(r.line, r.failure_key, r.status, r.reason) for r in rep.results if r.status != "reproduced"]
    assert not moved, moved[:5]
