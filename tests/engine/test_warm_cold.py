"""Warm and cold embedding caches give the same campaign, record by record.

The model here is the real MiniLM seen as on a CPU whose kernels make a batched vector differ from the
single-text one (the AVX-512/AMX case of issue 20, exaggerated to ~1e-3 so that any batching shows in the
results): a campaign may only ever encode one text per model call, so a cache filled in any order, or by any
other job, must change nothing — neither the rankings of memories chosen to be near ties nor the campaign.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.backends.test_embedding import _BatchSensitiveModel
from ufuzz.backends.adapters.embedded import EmbeddedBackend
from ufuzz.backends.embedding import Embedder
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.model.memory import Checkpoint, Memory
from ufuzz.seeds.io import load_suite

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 150

#: memories that score within 0.01 of each other for QUERY (two 4e-5 apart, two exactly tied: the model is
#: uncased), found by scoring variants of one sentence
NEAR_TIES = ["Lena is living in Velmora now.", "Lena lives in Velmora now.", "lena lives in velmora now.",
             "Lena lives in Velmora now;", "Lena resides in Velmora now.", "Lena lives in Velmora now..",
             "Lena lives in Velmora these days."]
QUERY = "Where does Lena live now?"


@pytest.fixture
def batch_sensitive(monkeypatch):
    from ufuzz.backends import embedding

    fake = _BatchSensitiveModel(embedding.load_model())
    monkeypatch.setattr(embedding, "load_model", lambda: fake)
    return fake


def _ranking(workdir: Path, cache: Path) -> list[tuple[str, float]]:
    b = EmbeddedBackend(workdir, {"embedding_cache": str(cache)}, embedder=Embedder(cache))
    ck = Checkpoint("c", tuple(Memory(f"m{i}", t, f"2024-01-{i + 1:02d}T00:00:00") for i, t in enumerate(NEAR_TIES)),
                    ())
    try:
        return [(r.id, r.score) for r in b.retrieve(b.build(ck), QUERY, len(NEAR_TIES))]
    finally:
        b.close()


def test_near_ties_rank_the_same_on_a_cold_and_a_warmed_cache(batch_sensitive, tmp_path):
    cold = _ranking(tmp_path / "a", tmp_path / "cold.sqlite")
    warm_cache = tmp_path / "warm.sqlite"
    Embedder(warm_cache).encode([QUERY, *NEAR_TIES][::-1])  # filled beforehand, all at once, in another order
    warm = _ranking(tmp_path / "b", warm_cache)
    scores = sorted(s for _, s in cold)
    assert len(cold) == len(NEAR_TIES) and scores[-1] - scores[0] < 0.01  # near ties, as chosen
    assert 0 < sorted(np.diff(scores))[1] < 1e-4
    assert warm == cold


def _campaign(out: Path, cache: Path) -> dict:
    c = Campaign(CampaignConfig(backend="embedded", budget=BUDGET, seed=11, out=str(out),
                                backend_options={"embedding_cache": str(cache)}))
    summary = c.run()
    runs = [(r.seq, r.execution.case_id, r.execution.top_ids, r.execution.top_scores)
            for r in c.store.executions(c.campaign_id)]
    mutants = [(m.case_id, m.operator, m.target, m.valid) for m in c.store.mutants(c.campaign_id)]
    return {"failures": summary["failures"], "executions": runs, "mutants": mutants}


def test_a_campaign_on_a_warm_cache_is_the_campaign_on_a_cold_one(batch_sensitive, tmp_path):
    cold = _campaign(tmp_path / "cold", tmp_path / "cold.sqlite")
    suite = load_suite(ROOT / "seeds" / "default.jsonl")
    texts = [m.text for ck in suite.checkpoints.values() for m in ck.memories]
    texts += [s.query.text for s in suite.seeds]
    warm_cache = tmp_path / "warm.sqlite"
    Embedder(warm_cache).encode(texts[::-1])  # another job's order: the whole suite in one call
    warm = _campaign(tmp_path / "warm", warm_cache)
    assert len(cold["executions"]) >= BUDGET and cold["failures"]
    assert warm == cold
    assert set(batch_sensitive.batches) == {1}
