"""`ufuzz report`: one self-contained HTML file, opened in a real headless browser (Debian's chromium).

The campaign runs on a suite whose memory texts carry script payloads: memory text is untrusted input, so the
page must show them as text and run none of them — with its Content-Security-Policy and, tested apart, without.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from click.testing import CliRunner

from tests.support.browser import SKIP_REASON, chromium, dump_dom
from ufuzz.cli import main
from ufuzz.model import Checkpoint, SeedSuite
from ufuzz.seeds.io import write_suite

PAYLOADS = (
    "<script>document.body.setAttribute('data-pwned','script')</script>",
    "<img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">",
    "'\"><svg onload=document.body.setAttribute('data-pwned','svg')>",
    "</q></td></table><iframe srcdoc=\"<script>parent.document.body.setAttribute('data-pwned','frame')</script>\">",
)
needs_browser = pytest.mark.skipif(chromium() is None, reason=SKIP_REASON)


def _hostile(suite: SeedSuite, n: int = 3) -> SeedSuite:
    """The first ``n`` checkpoints of ``suite`` with a payload appended to every memory text."""
    cps = list(suite.checkpoints.values())[:n]
    keep = {c.id for c in cps}
    hostile = {c.id: Checkpoint(id=c.id, facts=c.facts, entities=c.entities, memories=tuple(
        replace(m, text=f"{m.text} {PAYLOADS[i % len(PAYLOADS)]}") for i, m in enumerate(c.memories)))
        for c in cps}
    seeds = [s for s in suite.seeds if s.checkpoint_id in keep]
    refs = {s.query.id: suite.references[s.query.id] for s in seeds}
    return SeedSuite(name="hostile", checkpoints=hostile, seeds=seeds, references=refs)


@pytest.fixture(scope="module")
def report(default_suite, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("html")
    seeds = write_suite(_hostile(default_suite), tmp / "hostile.jsonl")
    camp = tmp / "camp"
    r = CliRunner().invoke(main, ["run", "--seeds", str(seeds), "--budget", "150", "--seed", "2", "--out", str(camp),
                                  "--opt", "retrieval=bm25", "--quiet"])
    assert r.exit_code == 0, r.output
    out = tmp / "report.html"
    r = CliRunner().invoke(main, ["report", str(camp), "-o", str(out)])
    assert r.exit_code == 0, r.output
    return camp, out, json.loads((camp / "summary.json").read_text())


def test_the_report_is_one_file_that_loads_nothing(report):
    _camp, out, summary = report
    page = out.read_text(encoding="utf-8")
    assert summary["unique_failures"] > 0
    assert page.count("<details class='failure'") == summary["unique_failures"]
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # no resource from anywhere: no src/href to a URL, no stylesheet or script files
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page, re.I)
    assert "<link" not in page and "<script src" not in page
    # every payload is in the page only escaped
    for p in PAYLOADS:
        assert p not in page
    assert "&lt;script&gt;document.body.setAttribute(" in page
    assert page.count("<svg") == 5  # four curves (failures over executions, over time, executions/s, coverage) and the yields, inline
    assert "<h2 id='classes'>Behaviour classes</h2>" in page


@needs_browser
def test_the_browser_renders_the_report_and_runs_no_memory_text(report):
    _camp, out, summary = report
    dom = dump_dom(out)
    body = re.search(r"<body[^>]*>", dom).group(0)
    assert 'data-report-ready="1"' in body  # the report's own script ran (allowed by its hash)
    assert "data-pwned" not in body
    n = summary["unique_failures"]
    assert f"{n} of {n} shown" in dom  # the failure browser's filter initialised
    assert dom.count('class="failure"') == n
    assert "&lt;script&gt;document.body.setAttribute('data-pwned','script')&lt;/script&gt;" in dom
    assert "<img" not in dom and "<iframe" not in dom
    assert not re.search(r"<[a-zA-Z][^>]*\son(load|error)\s*=", dom)  # no element got an event handler
    assert "Unique failures and causes" in dom and "Yields per operator" in dom


@needs_browser
def test_escaping_alone_keeps_memory_text_inert(report, tmp_path):
    """Without the Content-Security-Policy (a browser that ignores it): still nothing runs."""
    _camp, out, _summary = report
    page = re.sub(r"<meta http-equiv='Content-Security-Policy'[^>]*>", "", out.read_text(encoding="utf-8"))
    assert "Content-Security-Policy" not in page
    bare = tmp_path / "bare.html"
    bare.write_text(page, encoding="utf-8")
    body = re.search(r"<body[^>]*>", dump_dom(bare)).group(0)
    assert 'data-report-ready="1"' in body and "data-pwned" not in body


def test_report_bad_input(tmp_path):
    r = CliRunner().invoke(main, ["report", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no such campaign directory" in r.output
    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(main, ["report", str(tmp_path / "empty"), "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 2 and "no corpus.sqlite" in r.output
    assert not (tmp_path / "r.html").exists()


def test_a_campaign_without_plot_data_still_gets_its_failure_curve(report, tmp_path):
    import shutil

    camp, _out, summary = report
    old = tmp_path / "old"
    shutil.copytree(camp, old)
    (old / "plot_data.csv").unlink()
    r = CliRunner().invoke(main, ["report", str(old), "-o", str(tmp_path / "old.html")])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "old.html").read_text(encoding="utf-8")
    assert "No plot_data.csv" in page and page.count("<details class='failure'") == summary["unique_failures"]
