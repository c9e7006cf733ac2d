"""State-level failures end to end (issue 23, item 2): a REST product whose unrelated adds evict its oldest
memory, fuzzed over ``--backend http``; ``status``, ``failures list/show``, the HTML report, ``replay`` and
``corpus check`` all show the side effect, and the fixed build (no eviction) checks as fixed."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.oracles.test_http_ground_truth import TOKEN, _config
from tests.support.http_product_server import start_product_server
from tests.support.planted_world import PATH as WORLD
from ufuzz.cli import main


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def evicted(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("PRODUCT_API_TOKEN", TOKEN)
    tmp = tmp_path_factory.mktemp("evict")
    with start_product_server(TOKEN, capacity=5) as srv:
        cfg = _config(tmp, srv.base_url, "")
        r = invoke("run", "--backend", "http", "--config", cfg, "--seeds", WORLD, "--budget", 150, "--seed", 1,
                   "--out", tmp / "c", "--quiet")
        assert r.exit_code == 0, r.output
        yield tmp, cfg
    mp.undo()


def test_status_shows_state_failures_and_rejection_reasons(evicted):
    tmp, _ = evicted
    st = json.loads(invoke("status", tmp / "c", "--json").output)
    groups = [g for g in st["failure_groups"] if g["stage"] == "state"]
    assert groups and groups[0]["kind"] == "collateral_removal" and groups[0]["operator"] == "unrelated_edit"
    assert st["failures_by_kind"].get("state:collateral_removal", 0) == groups[0]["unique"]
    rej = st["rejections"]
    assert rej and rej[0]["state_failure"] and rej[0]["reason"] == "the add changed more than it asked: … removed"
    assert sum(r["count"] for r in rej) == st["mutants"]["rejected"]
    text = invoke("status", tmp / "c").output
    assert "state      collateral_removal" in text and "[state failure]" in text


def test_failures_show_and_report_say_what_else_changed(evicted):
    tmp, _ = evicted
    listed = invoke("failures", "list", tmp / "c", "--json").output
    rows = json.loads(listed)
    rows = rows if isinstance(rows, list) else rows["failures"]
    key = next(r["key"] for r in rows if r["kind"] == "collateral_removal")
    shown = invoke("failures", "show", tmp / "c", key[:12]).output
    assert "what else changed" in shown and " removed  was " in shown
    assert "not executed: its operation changed more than it asked" in shown
    out = tmp / "r.html"
    assert invoke("report", tmp / "c", "-o", out).exit_code == 0
    assert "what else changed" in out.read_text()


def test_replay_and_corpus_check_rerun_the_side_effect(evicted, monkeypatch):
    tmp, cfg = evicted
    monkeypatch.setenv("PRODUCT_API_TOKEN", TOKEN)
    corpus = tmp / "state.jsonl"
    assert invoke("corpus", "export", tmp / "c", "-o", corpus).exit_code == 0
    with start_product_server(TOKEN, capacity=5) as srv:  # the product restarted on another port
        r = invoke("corpus", "check", corpus, "--backend", "http", "--config", cfg, "--opt",
                   f"base_url={srv.base_url}")
        assert r.exit_code == 0 and "OK: every record still reproduces" in r.output, r.output
        rp = invoke("replay", tmp / "c", "--opt", f"base_url={srv.base_url}", "--json")
        assert rp.exit_code == 0, rp.output
        rep = json.loads(rp.output)
        assert rep["total"] > 0 and rep["reproduced"] == rep["total"]
    with start_product_server(TOKEN) as srv:  # the fixed build
        r = invoke("corpus", "check", corpus, "--backend", "http", "--config", cfg, "--opt",
                   f"base_url={srv.base_url}")
        assert r.exit_code == 0 and "the operation changes nothing else now" in r.output, r.output
        assert "fixed (no longer reproduce)" in r.output and "reproduced" not in r.output.split("records:")[-1]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_replay_of_an_unreachable_product_exits_3_as_corpus_check(evicted, monkeypatch):
    tmp, cfg = evicted
    monkeypatch.setenv("PRODUCT_API_TOKEN", TOKEN)
    down = f"http://127.0.0.1:{_free_port()}"
    r = invoke("replay", tmp / "c", "--opt", f"base_url={down}")
    assert r.exit_code == 3, r.output
    assert "unreachable" in r.output and "not replayed" in r.output
    corpus = tmp / "state-down.jsonl"
    assert invoke("corpus", "export", tmp / "c", "-o", corpus).exit_code == 0
    assert invoke("corpus", "check", corpus, "--config", cfg, "--opt", f"base_url={down}").exit_code == 3
    # --config names the product file for replay as for corpus check
    assert invoke("replay", tmp / "c", "--config", cfg, "--opt", f"base_url={down}").exit_code == 3
