"""The HTML report as a product team reads it (issue 25.5), checked in a real headless browser (chromium).

A campaign against the REST product with its planted soft-delete bug, run against a baseline exported from a
campaign on the fixed product (so the delete failures are new and the rest known); a hidden-retrieval campaign
against the answer-only agent; and ``--compare`` of the two product campaigns.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.agent_server import DEFECTS, start_agent_server
from tests.support.browser import SKIP_REASON, chromium, dump_dom, screenshot
from tests.support.http_product_server import start_product_server
from ufuzz.cli import main
from ufuzz.reports.html import _rate, last_new_find

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "tok-" + "html-4e21"
ENV = "PRODUCT_API_TOKEN"
needs_browser = pytest.mark.skipif(chromium() is None, reason=SKIP_REASON)


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def product_runs(tmp_path_factory):
    old = os.environ.get(ENV)
    os.environ[ENV] = TOKEN
    d = tmp_path_factory.mktemp("html-product")
    try:
        with start_product_server(TOKEN, delete_bug=False) as srv:
            cfg = d / "product.toml"
            cfg.write_text((ROOT / "examples" / "product.toml").read_text()
                           .replace('base_url = "http://127.0.0.1:8080"', f'base_url = "{srv.base_url}"'))
            assert invoke("run", "--backend", "http", "--config", cfg, "--budget", 200, "--out", d / "fixed",
                          "--quiet").exit_code == 0
            assert invoke("corpus", "export", d / "fixed", "-o", d / "baseline.jsonl").exit_code == 0
            srv.delete_bug = True
            r = invoke("run", "--backend", "http", "--config", cfg, "--budget", 200, "--out", d / "buggy",
                       "--baseline", d / "baseline.jsonl", "--quiet")
            assert r.exit_code == 1, r.output  # the delete bug is new
        r = invoke("report", d / "buggy", "-o", d / "buggy.html", "--compare", d / "fixed")
        assert r.exit_code == 0, r.output
        yield d
    finally:
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old


@pytest.fixture(scope="module")
def hidden_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("html-agent")
    with start_agent_server(DEFECTS) as srv:
        assert invoke("run", "--backend", "http", "--config", ROOT / "examples" / "agent.toml", "--opt",
                      f"base_url={srv.base_url}", "--budget", 120, "--out", d / "camp", "--quiet").exit_code == 0
    assert invoke("report", d / "camp", "-o", d / "report.html").exit_code == 0
    return d


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@needs_browser
def test_baseline_marks_judging_facts_and_charts(product_runs):
    d = product_runs
    dom = dump_dom(d / "buggy.html")
    text = _text(dom)
    assert "judging selection (no relevance threshold: no abstention check); no response level" in text
    assert "Backend facts" in dom and "{'" not in text  # a table, not a dict repr
    assert re.search(r"<td>add</td><td><code>POST /v1/ns/\{namespace\}/memories</code>", dom)
    assert re.search(r"wall time [\d.]+ s, [\d.]+ executions/s", text)
    assert re.search(r"last new find at execution \d+ \([\d.]+ s\)", text)
    for title in ("Unique failures and causes over executions", "Unique failures and causes over time",
                  "Executions per second", "Coverage"):
        assert title in dom
    assert "Baseline failures" in dom and "questions fail their own reference as asked" in text
    marks = re.findall(r"data-baseline=\"(\w*)\"", dom)
    assert "new" in marks and "known" in marks
    assert "<option value=\"new\">new</option>" in dom and "<option value=\"known\">known</option>" in dom


@needs_browser
def test_the_baseline_filter_shows_only_new_failures(product_runs, tmp_path):
    """The filter script run by the browser with the select preset to "new" (as a user's choice would)."""
    page = (product_runs / "buggy.html").read_text(encoding="utf-8")
    n_all = page.count("<details class='failure'")
    n_new = page.count("data-baseline='new'")
    assert 0 < n_new < n_all
    preset = page.replace("<option value='new'>new</option>", "<option value='new' selected>new</option>", 1)
    (tmp_path / "new.html").write_text(preset, encoding="utf-8")
    dom = dump_dom(tmp_path / "new.html")
    assert f"{n_new} of {n_all} shown" in dom
    shown = re.findall(r'<details class="failure"[^>]*data-baseline="(\w*)"(?![^>]*hidden)[^>]*>', dom)
    assert shown and set(shown) == {"new"}


@needs_browser
def test_compare_says_new_still_and_gone(product_runs):
    dom = dump_dom(product_runs / "buggy.html")
    text = _text(dom)
    m = re.search(r"(\d+) new\s*, (\d+) still failing, (\d+) gone \(fixed or not met\) causes", text)
    assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0
    new_part = dom[dom.index("New in A"):dom.index("Still failing")]
    assert "deleted_evidence_retrieved" in new_part  # the shipped bug is what is new
    still = dom[dom.index("Still failing"):dom.index("Gone since B")]
    assert "deleted_evidence_retrieved" not in still
    assert "most likely fixed" not in text and "replay B's failure on A's product" in text
    r = invoke("report", product_runs / "buggy", "--compare", product_runs / "nope")
    assert r.exit_code == 2 and "--compare" in r.output


def test_a_gone_cause_is_said_fixed_only_where_the_same_test_passed(product_runs):
    """Product walkthrough: comparing a campaign on a buggy build with one on the correct build (same seed, budget
    and strategy) said every gone cause was "most likely fixed"; 11 of 11 still reproduced — the product changed, so
    the search did. Now a gone cause passes in A only where A's own executions of the very test that failed in B
    pass when judged again with B's reference. The correct build compared with the buggy one: the soft-delete bug
    is gone, and A ran tests that failed it in B; the other way round, no delete cause is gone (it is new)."""
    from ufuzz.reports.html import build_report

    page, _ = build_report(product_runs / "fixed", compare=product_runs / "buggy")
    gone = page[page.index("Gone since B"):]
    rows = re.findall(r"<tr>(.*?)</tr>", gone, flags=re.S)
    delete_rows = [r for r in rows if "deleted_evidence_retrieved" in r]
    assert delete_rows and not any("still fails in A" in r for r in delete_rows)
    assert any("passes in A (the same test, judged again)" in r for r in delete_rows)
    m = re.search(r"Of the (\d+) gone causes, (\d+) pass in A .*?; (\d+) still fail in A .*?; (\d+) were not met",
                  _text(gone))
    assert m and int(m.group(2)) > 0 and sum(map(int, m.groups()[1:])) == int(m.group(1))
    page, _ = build_report(product_runs / "buggy", compare=product_runs / "fixed")
    assert "most likely fixed" not in page
    gone = page[page.index("Gone since B"):]
    assert "deleted_evidence_retrieved" not in gone.split("</table>")[0]


@needs_browser
def test_hidden_retrieval_is_said_as_such(hidden_run, tmp_path):
    dom = dump_dom(hidden_run / "report.html")
    text = _text(dom)
    assert "coverage not observed: retrieval hidden by the backend" in text
    assert re.search(r"(\d+) distinct responses seen", text) and "0/418" not in text
    assert "Distinct responses (retrieval hidden: no coverage)" in dom
    assert "nothing retrieved" not in text and "retrieval hidden: the campaign observes only the response" in text
    status = invoke("status", hidden_run / "camp").output
    assert "coverage   not observed: retrieval hidden" in status and "0/418" not in status
    backend = next(line for line in status.splitlines() if line.startswith("backend "))
    assert len(backend) <= 200 and "operations=[add, get, list, answer" in backend  # not ~600 characters
    shot = screenshot(hidden_run / "report.html", tmp_path / "hidden.png", size="1280,1800")
    assert shot.stat().st_size > 20_000


def test_rate_and_last_find_read_the_plot_data():
    plot = [{"elapsed_s": t, "executions": e, "unique_failures": u} for t, e, u in
            ((0.0, 0, 0), (1.0, 10, 1), (2.0, 30, 1), (3.0, 60, 4), (4.0, 70, 4))]
    xs, ys = _rate(plot, points=4)
    assert xs == [1.0, 2.0, 3.0, 4.0] and ys == [10.0, 20.0, 30.0, 10.0]
    assert last_new_find(plot) == (60, 3.0)
    assert last_new_find(plot[:1]) is None


def test_the_progress_line_says_coverage_is_hidden(tmp_path):
    with start_agent_server(DEFECTS) as srv:
        r = invoke("run", "--backend", "http", "--config", ROOT / "examples" / "agent.toml", "--opt",
                   f"base_url={srv.base_url}", "--budget", 40, "--out", tmp_path / "c", "--progress-every", 10,
                   "--batch", 8)  # a line comes between batches: several within the budget
    assert r.exit_code == 0, r.output
    lines = [x for x in r.stderr.splitlines() if x.startswith("[ufuzz] execs")]
    assert len(lines) >= 2 and all("coverage hidden" in x for x in lines[1:]) and "coverage 0/" not in r.stderr
    assert "coverage not observed (retrieval hidden)" in r.stdout


def test_the_report_names_the_behaviour_that_fails_the_night(product_runs):
    """Walkthrough: the report said "1 new … the night fails" and named nothing: each behaviour that is not known
    is listed by status, id and title, before anything else."""
    page = (product_runs / "buggy.html").read_text(encoding="utf-8")
    head = page.split("<h2", 1)[0]
    assert "the night fails" in head
    assert re.search(r"<li><b>NEW</b> <code>deleted-still-retrieved[^<]*</code>: a deleted memory is still retrieved"
                     r" — \d+ unique failures, \d+ causes</li>", head), _text(head)
