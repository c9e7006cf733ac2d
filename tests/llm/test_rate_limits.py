"""Being a good API citizen: rate limits, Retry-After, token usage and budgets, and many calls in flight.

No assertion is about time: the client-side limiter runs on a stand-in clock that its stand-in sleep advances,
the servers count what they saw, and campaigns are compared record by record.
"""

from __future__ import annotations

import json
from email.utils import formatdate
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engine.test_resume import _corpus
from tests.support.llm_server import RateLimited, RuleBasedResponder, Slow, start_llm_server
from ufuzz.cli import main
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.llm import LLMClient, LLMConfig
from ufuzz.llm.client import estimate_cost, retry_after_seconds
from ufuzz.llm.ratelimit import RateLimit

MSG = [{"role": "user", "content": "hello"}]


class FakeTime:
    """A clock that only the stand-in sleep moves."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@settings(max_examples=50, deadline=None)
@given(rpm=st.floats(min_value=1, max_value=6000), n=st.integers(min_value=1, max_value=30))
def test_requests_start_no_closer_than_the_rpm_spacing(rpm, n):
    t = FakeTime()
    limit = RateLimit(rpm=rpm, clock=t.clock, sleep=t.sleep)
    starts = []
    for _ in range(n):
        limit.acquire()
        starts.append(t.now)
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert all(g >= 60.0 / rpm - 1e-9 for g in gaps)
    assert starts[0] == 1000.0  # the first request does not wait


def test_tokens_per_minute_hold_back_requests_until_the_window_passes():
    t = FakeTime()
    limit = RateLimit(tpm=100, clock=t.clock, sleep=t.sleep)
    limit.acquire()
    limit.used(60)
    limit.acquire()  # 60 < 100: goes at once
    assert t.sleeps == []
    limit.used(50)  # 110 in the last minute
    limit.acquire()
    assert t.now >= 1060.0  # the first answer's tokens left the window


def test_a_pause_holds_every_caller_but_the_one_that_waited_it_out():
    t = FakeTime()
    limit = RateLimit(clock=t.clock, sleep=t.sleep)
    limit.pause(5)
    limit.acquire(pause=False)
    assert t.sleeps == []
    limit.acquire()
    assert t.now == pytest.approx(1005.0)


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("-3") is None
    now = 1_700_000_000.0
    assert retry_after_seconds(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30.0)
    assert retry_after_seconds(formatdate(now - 30, usegmt=True), now=now) == 0.0


def _client(srv, waits: list | None = None, **kw) -> LLMClient:
    """A client whose sleeps are recorded in ``waits`` and pass on a clock of their own: a pause the server asked
    for is over once it is slept, without the test spinning through it in real time."""
    c = LLMClient(LLMConfig(base_url=srv.base_url, model="rule-model", timeout=5, **kw))
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds
        if waits is not None:
            waits.append(seconds)

    c._sleep = sleep
    c.limit = RateLimit(c.config.rpm, c.config.tpm, clock=lambda: now[0], sleep=sleep)
    return c


def test_a_429_storm_is_waited_out_without_using_up_the_retries():
    waits: list[float] = []
    handler = RateLimited(lambda _r: "hi there", storm=6, retry_after="2")
    with start_llm_server(handler) as srv:
        c = _client(srv, waits, max_retries=0)
        assert c.complete(MSG) == "hi there"
        assert srv.count == 7
    assert waits == [2.0] * 6
    assert c.stats() == {"calls_made": 1, "cache_hits": 0, "errors": 0, "retries": 0}
    assert c.usage()["rate_limited"] == 6


def test_429_without_retry_after_backs_off_and_503_with_it_waits_as_asked():
    waits: list[float] = []
    with start_llm_server(RateLimited(lambda _r: "ok", storm=3, retry_after=None)) as srv:
        assert _client(srv, waits, max_retries=0, retry_backoff=0.5).complete(MSG) == "ok"
    assert waits == [0.5, 1.0, 2.0]
    waits.clear()
    with start_llm_server(RateLimited(lambda _r: "ok", storm=2, retry_after="3", status=503)) as srv:
        assert _client(srv, waits, max_retries=0).complete(MSG) == "ok"
    assert waits == [3.0, 3.0]


def test_a_rate_limit_that_never_lifts_fails_the_call_once_its_wait_is_spent():
    from ufuzz.llm import LLMError

    waits: list[float] = []
    with start_llm_server(RateLimited(lambda _r: "ok", storm=10**6, retry_after="10")) as srv:
        c = _client(srv, waits, max_retries=1, rate_limit_wait=35)
        with pytest.raises(LLMError, match="rate limited"):
            c.complete(MSG)
    assert sum(waits[:3]) == 30.0 and c.errors == 1


def test_usage_is_counted_from_responses_and_priced():
    with start_llm_server(lambda _r: "three word answer") as srv:
        c = _client(srv, price=(1.0, 2.0))
        c.complete(MSG)
        c.complete([{"role": "user", "content": "again"}])
    u = c.usage()
    assert u["completion_tokens"] == 6 and u["total_tokens"] == 6 + u["prompt_tokens"]
    assert u["cost_usd"] == estimate_cost(u, (1.0, 2.0)) == pytest.approx(u["prompt_tokens"] * 1e-6 + 12e-6)
    assert _client(srv).usage()["cost_usd"] is None


# -- campaigns --------------------------------------------------------------------------------------------

def _cfg(tmp_path: Path, srv, name: str, **kw) -> CampaignConfig:
    base = dict(backend="embedded", backend_options={"retrieval": "bm25"}, budget=60, seed=3,
                out=str(tmp_path / name), llm_base_url=srv.base_url, llm_model="rule-model",
                llm_uses=("answer", "judge"), llm_cache=str(tmp_path / f"{name}.sqlite"))
    base.update(kw)
    return CampaignConfig(**base)


def test_a_429_storm_during_a_concurrent_campaign_leaves_no_error_record(tmp_path):
    handler = RateLimited(RuleBasedResponder(), storm=20, every=4, retry_after="0.01")
    with start_llm_server(handler) as srv:
        s = Campaign(_cfg(tmp_path, srv, "storm", max_concurrency=4)).run()
    assert handler.limited > 20
    assert s["status"] == "budget_spent" and s["errors"] == 0, s
    assert s["llm"]["errors"] == 0 and s["llm"]["rate_limited"] == handler.limited


def test_concurrency_overlaps_requests_and_gives_the_same_campaign_every_time(tmp_path):
    """Thread lanes keep several LLM requests waiting at once; the results are applied in task order, so the
    same seed and concurrency give the same campaign record by record."""
    slow = Slow(RuleBasedResponder(), 0.05)
    with start_llm_server(slow) as srv:
        first = Campaign(_cfg(tmp_path, srv, "a", max_concurrency=4)).run()
        Campaign(_cfg(tmp_path, srv, "b", max_concurrency=4)).run()
    assert slow.peak >= 2
    assert first["status"] == "budget_spent" and first["errors"] == 0
    a, b = _corpus(tmp_path / "a"), _corpus(tmp_path / "b")
    for part in a:
        assert a[part] == b[part], part
    assert a["failures"] or a["summary"]["baseline_failures"]  # it judged something


def test_concurrency_one_is_the_serial_campaign(tmp_path):
    with start_llm_server() as srv:
        Campaign(_cfg(tmp_path, srv, "serial")).run()
        Campaign(_cfg(tmp_path, srv, "one", max_concurrency=1, llm_cache=str(tmp_path / "x.sqlite"))).run()
    a, b = _corpus(tmp_path / "serial"), _corpus(tmp_path / "one")
    for part in a:
        assert a[part] == b[part], part


def test_the_token_budget_ends_the_campaign_cleanly_with_its_own_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("UFUZZ_CACHE_DIR", str(tmp_path / "cache"))
    with start_llm_server() as srv:
        r = CliRunner().invoke(main, ["run", "--out", str(tmp_path / "c"), "--budget", "200", "--seed", "2",
                                      "--opt", "retrieval=bm25", "--llm-base-url", srv.base_url,
                                      "--llm-model", "rule-model", "--llm-uses", "answer",
                                      "--max-llm-tokens", "40", "--llm-price", "0.5,1.5",
                                      "--quiet"])
    assert r.exit_code == 6, r.output
    summary = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert summary["status"] == "llm_budget_spent" and summary["executions"] < 200
    assert 40 <= summary["llm"]["total_tokens"] and summary["llm"]["cost_usd"] is not None
    assert "--max-llm-tokens" in summary["message"]
    st_ = CliRunner().invoke(main, ["status", str(tmp_path / "c")])
    assert "LLM token budget spent" in st_.output and "tokens" in st_.output and "est. $" in st_.output


@pytest.mark.parametrize("args, needle", [
    (("--max-concurrency", "0"), "--max-concurrency"),
    (("--llm-rpm", "0"), "--llm-rpm"),
    (("--llm-price", "1"), "--llm-price"),
    (("--llm-price", "a,b"), "--llm-price"),
    (("--max-llm-tokens", "5"), "--max-llm-tokens"),  # without --llm-uses
    (("--max-concurrency", "2", "--ray-address", "local"), "--max-concurrency"),
])
def test_bad_limits_are_refused_naming_the_option(tmp_path, args, needle):
    r = CliRunner().invoke(main, ["run", "--out", str(tmp_path / "c"), "--budget", "5", "--quiet", *args])
    assert r.exit_code == 2 and needle in r.output and not (tmp_path / "c").exists()
