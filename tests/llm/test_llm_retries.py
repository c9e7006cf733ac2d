"""LLM timeouts and retries against a local OpenAI-compatible server that hangs or fails on purpose.

No assertion is about time: a hanging server is released by the test, backoff waits are recorded by a stand-in
``sleep``, and what is asserted is how many requests the server saw and what the client counted.
"""

from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner

from tests.support.llm_server import RawReply, start_llm_server
from ufuzz.cli import main
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.llm import LLMClient, LLMConfig, LLMError

MSG = [{"role": "user", "content": "hello"}]


def client(server, *, retries: int, timeout: float = 5, waits: list | None = None) -> LLMClient:
    c = LLMClient(LLMConfig(base_url=server.base_url, model="rule-model", timeout=timeout, max_retries=retries,
                            retry_backoff=0.5))
    c._sleep = (waits.append if waits is not None else (lambda s: None))  # record the backoff, do not wait
    return c


def failing_first(n: int, status: int = 503, headers=()):
    """A server reply that fails the first ``n`` requests with ``status``, then answers."""
    seen = []

    def handler(_req):
        seen.append(1)
        if len(seen) <= n:
            return RawReply(status, json.dumps({"error": {"message": "busy"}}), headers=headers)
        return "hi there"

    return handler


def test_transient_failures_are_retried_with_exponential_backoff():
    waits: list[float] = []
    with start_llm_server(failing_first(2)) as srv:
        c = client(srv, retries=3, waits=waits)
        assert c.complete(MSG) == "hi there"
        assert srv.count == 3
    assert waits == [0.5, 1.0]  # backoff × 2^attempt
    assert c.stats() == {"calls_made": 1, "cache_hits": 0, "errors": 0, "retries": 2}


def test_a_call_that_keeps_failing_is_one_counted_error_after_every_attempt():
    with start_llm_server(failing_first(99, status=500)) as srv:
        c = client(srv, retries=2)
        with pytest.raises(LLMError, match=r"HTTP 500.*\(after 3 attempts\)"):
            c.complete(MSG)
        assert srv.count == 3
    assert (c.errors, c.retries) == (1, 2)


def test_a_request_error_is_not_retried():
    with start_llm_server(failing_first(99, status=400)) as srv:
        c = client(srv, retries=4)
        with pytest.raises(LLMError, match="HTTP 400"):
            c.complete(MSG)
        assert srv.count == 1
    assert (c.errors, c.retries) == (1, 0)


def test_retry_after_is_honoured_up_to_the_cap():
    waits: list[float] = []
    with start_llm_server(failing_first(2, status=429, headers=(("Retry-After", "7"),))) as srv:
        assert client(srv, retries=2, waits=waits).complete(MSG) == "hi there"
    assert waits == [7.0, 7.0]
    waits.clear()
    with start_llm_server(failing_first(1, status=429, headers=(("Retry-After", "9999"),))) as srv:
        client(srv, retries=1, waits=waits).complete(MSG)
    assert waits == [30.0]


def test_a_hanging_server_times_out_on_every_attempt():
    release = threading.Event()

    def hang(_req):
        release.wait(30)  # longer than the client waits; released when the test ends
        return "too late"

    try:
        with start_llm_server(hang) as srv:
            c = client(srv, retries=1, timeout=0.3)
            with pytest.raises(LLMError, match=r"timed out after 0.3s \(after 2 attempts\)"):
                c.complete(MSG)
            assert srv.count == 2
            assert (c.errors, c.retries) == (1, 1)
    finally:
        release.set()


def test_campaign_counts_llm_errors_and_never_reports_them_as_failures(tmp_path):
    """A server that always fails: every answer is an error record, the LLM errors are counted in the
    summary, and no failure is reported."""
    with start_llm_server(failing_first(10**6, status=503)) as srv:
        cfg = CampaignConfig(budget=6, seed=1, out=str(tmp_path / "c"), llm_base_url=srv.base_url,
                             llm_model="rule-model", llm_uses=("answer",), llm_cache=str(tmp_path / "x.sqlite"),
                             llm_retries=1)
        camp = Campaign(cfg)
        s = camp.run()
    assert s["errors"] > 0 and s["unique_failures"] == 0
    assert s["llm"]["errors"] == s["llm"]["calls_made"] > 0 and s["llm"]["retries"] == s["llm"]["errors"]


@pytest.mark.parametrize("args, needle", [
    (("--llm-timeout", "0"), "--llm-timeout"),
    (("--llm-timeout", "nan"), "--llm-timeout"),
    (("--llm-timeout", "1e9"), "--llm-timeout"),
    (("--llm-retries", "11"), "--llm-retries"),
    (("--llm-retries", "-1"), "--llm-retries"),
])
def test_llm_flags_are_bounded(tmp_path, args, needle):
    r = CliRunner().invoke(main, ["run", "--out", str(tmp_path / "c"), "--budget", "5", "--quiet", *args])
    assert r.exit_code == 2 and needle in r.output and not (tmp_path / "c").exists()


def test_a_failing_llm_judge_is_an_error_record_never_a_failure_or_a_crash(tmp_path):
    """The judge's endpoint answers 400 to everything: each verdict it was asked for (the parent's first) is an
    error record, never a failure; with every step failing, the campaign stops as an error after
    ``max_consecutive_errors`` in a row and says why."""
    from ufuzz.engine.campaign import Campaign, CampaignConfig

    with start_llm_server(failing_first(10**6, status=400)) as srv:
        cfg = CampaignConfig(backend="embedded", backend_options={"retrieval": "bm25"}, budget=40, seed=1,
                             out=str(tmp_path / "c"), reader="top-evidence", llm_base_url=srv.base_url,
                             llm_model="rule-model", llm_uses=("judge",), llm_retries=0,
                             llm_cache=str(tmp_path / "cache.sqlite"), max_consecutive_errors=5,
                             search="walk")  # 96 seeds > budget 40 would spread: every step a parent here
        c = Campaign(cfg)
        summary = c.run()
    # the run of errors is checked between batches: the batch in which it reached 5 is finished first
    assert summary["status"] == "error" and summary["errors"] >= 5 and summary["executions"] < 40
    assert "backend errors in a row (--max-consecutive-errors 5)" in summary["message"] and "judge" in summary["message"]
    assert summary["unique_failures"] == 0 and summary["reader_failures"] == 0
    assert any(e.operation == "judge" for e in c.store.errors(c.campaign_id))
