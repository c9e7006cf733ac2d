"""`ufuzz status` says how many searches gave back fewer than k memories (held-out product walkthrough: a search
that returned one result too few whenever it had more was in 812 of 1,000 executions, and nothing said so)."""

from __future__ import annotations

from ufuzz.backends.adapters.embedded import EmbeddedBackend
from ufuzz.engine.campaign import Campaign
from ufuzz.engine.config import CampaignConfig
from ufuzz.reports.status import campaign_status, render_status
from ufuzz.seeds.synth import synthesize


class OneShort(EmbeddedBackend):
    """A search that gives back one memory fewer than asked for."""

    def retrieve(self, state, query, k):
        return super().retrieve(state, query, k)[: max(k - 1, 0)]


def _run(tmp_path, backend=None):
    out = tmp_path / "c"
    config = CampaignConfig(backend="embedded", backend_options={"retrieval": "bm25"}, budget=30, seed=1,
                            out=str(out))
    Campaign(config, suite=synthesize(personas=1, seed=3), backend=backend).run()
    return campaign_status(out)


def test_a_search_that_returns_too_few_is_said(tmp_path):
    backend = OneShort(tmp_path / "b", {"retrieval": "bm25"})
    try:
        st = _run(tmp_path, backend)
    finally:
        backend.close()
    assert st["short_results"] == {"k": 5, "short": st["executions"], "executions": st["executions"]}
    assert f"short results: {st['executions']} of {st['executions']} executions got fewer than k=5" \
        in render_status(st)


def test_full_result_lists_say_nothing(tmp_path):
    st = _run(tmp_path)
    assert st["short_results"] is None and "short results" not in render_status(st)
