"""Nightly CI without false alarms (issue 25): the baseline's seed and budget, JUnit that agrees with the exit
code, and messages that agree with each other — against the local REST product with its planted soft-delete bug
(tests/support/http_product_server.py; ``delete_bug`` off is the fixed build, on again a regression).

The baseline is exported from a campaign on a seed and budget that are not ufuzz's defaults, so a recipe that
ran the defaults would not be quiet: examples/ci/nightly.sh must take them from the corpus header.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.http_product_server import start_product_server
from ufuzz.cli import main
from ufuzz.engine.parallel.batching import SERIAL_BATCH
from ufuzz.triage.baseline import BaselineVerdict

ROOT = Path(__file__).resolve().parents[2]
NIGHTLY = ROOT / "examples" / "ci" / "nightly.sh"
TOKEN = "tok-" + "baseline-3a9f"
ENV = "PRODUCT_API_TOKEN"
SEED, BUDGET = 3, 250


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def suite(path: Path) -> ET.Element:
    return ET.parse(path).getroot().find("testsuite")


def cases(path: Path) -> list[ET.Element]:
    return suite(path).findall("testcase")


@pytest.fixture(scope="module")
def product():
    old = os.environ.get(ENV)
    os.environ[ENV] = TOKEN
    try:
        with start_product_server(TOKEN, delete_bug=False) as srv:
            yield srv
    finally:
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old


def _repo(product, root: Path, *, delete_bug: bool) -> tuple[Path, Path, Path]:
    """A team repository: ci/product.toml and ci/ufuzz-baseline.jsonl from a seed-3, budget-250 campaign."""
    (root / "ci").mkdir(parents=True)
    cfg = root / "ci" / "product.toml"
    cfg.write_text((ROOT / "examples" / "product.toml").read_text()
                   .replace('base_url = "http://127.0.0.1:8080"', f'base_url = "{product.base_url}"'))
    product.delete_bug = delete_bug
    try:
        r = invoke("run", "--backend", "http", "--config", cfg, "--budget", BUDGET, "--seed", SEED,
                   "--out", root / "first", "--quiet")
        assert r.exit_code == 0, r.output
    finally:
        product.delete_bug = False
    corpus = root / "ci" / "ufuzz-baseline.jsonl"
    assert invoke("corpus", "export", root / "first", "-o", corpus).exit_code == 0
    return root, cfg, corpus


@pytest.fixture(scope="module")
def fixed_team(product, tmp_path_factory):
    return _repo(product, tmp_path_factory.mktemp("fixed"), delete_bug=False)


@pytest.fixture(scope="module")
def buggy_team(product, tmp_path_factory):
    return _repo(product, tmp_path_factory.mktemp("buggy"), delete_bug=True)


def nightly(repo: Path, out: Path, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(ROOT), "UFUZZ": f"{sys.executable} -m ufuzz", "UFUZZ_OUT": str(out),
            "UFUZZ_MAX_TIME": "3m", **env}
    return subprocess.run(["bash", str(NIGHTLY)], cwd=repo, env=full, capture_output=True, text=True, timeout=600)


def test_an_unchanged_product_is_green_and_a_new_bug_is_red(product, fixed_team, tmp_path):
    repo, _cfg, corpus = fixed_team
    header = json.loads(corpus.read_text().splitlines()[0])
    assert header["source"]["seed"] == SEED and header["source"]["budget"] == BUDGET and header["judging"]

    res = nightly(repo, tmp_path / "same")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "nothing regressed, nothing new" in res.stdout and "differs from the one baseline" not in res.stderr
    summary = json.loads((tmp_path / "same" / "campaign" / "summary.json").read_text())
    assert summary["budget"] == BUDGET and summary["baseline"]["new"] == 0 and summary["baseline"]["mismatch"] == []
    status = json.loads(invoke("status", tmp_path / "same" / "campaign", "--json").output)
    assert status["seed"] == SEED
    night = cases(tmp_path / "same" / "campaign.xml")
    assert night and all(c.find("skipped") is not None for c in night)  # every cause known: none green, none red
    assert all("known failure" in c.find("skipped").get("message") for c in night)

    product.delete_bug = True  # a new bug ships
    try:
        res = nightly(repo, tmp_path / "new")
    finally:
        product.delete_bug = False
    assert res.returncode == 1, res.stdout + res.stderr
    failed = [c for c in cases(tmp_path / "new" / "campaign.xml") if c.find("failure") is not None]
    assert [c.get("name").split(" ")[0] for c in failed] == ["deleted-still-retrieved"]  # one bug, one test
    assert failed[0].find("failure").get("message").startswith("NEW behaviour (not in the baseline): a deleted")
    assert "selection:deleted_evidence_retrieved" in failed[0].find("failure").text
    assert suite(tmp_path / "new" / "campaign.xml").get("failures") == "1"
    assert re.search(r"\n  NEW +deleted-still-retrieved: a deleted memory is still retrieved\n", res.stdout)
    # after the fact, `status` of the night's campaign says which behaviour made it red (walkthrough)
    st = invoke("status", tmp_path / "new" / "campaign").output
    assert re.search(r"against baseline .*: 0 regressed, 1 new, .* the night fails", st), st
    assert re.search(r"\n  NEW +deleted-still-retrieved: a deleted memory is still retrieved — \d+ unique", st), st


def test_another_seed_or_budget_is_said_up_front(fixed_team, tmp_path):
    _repo_dir, cfg, corpus = fixed_team
    r = invoke("run", "--backend", "http", "--config", cfg, "--budget", 120, "--out", tmp_path / "c",
               "--baseline", corpus, "--batch", 4, "--max-concurrency", 2, "--quiet")
    assert "differs from the one baseline" in r.output and f"seed 0 (the baseline's campaign: {SEED})" in r.output
    assert f"batch 4 (the baseline's campaign: {SERIAL_BATCH})" in r.output  # a schedule of its own; concurrency is none
    assert "concurrency" not in r.output.split("differs from the one baseline")[1].split(". Failures")[0]
    assert f"budget 120 (the baseline's campaign: {BUDGET})" in r.output and "--match-baseline" in r.output
    s = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert any(m.startswith("seed 0") for m in s["baseline"]["mismatch"])
    r = invoke("run", "--backend", "http", "--config", cfg, "--match-baseline", "--out", tmp_path / "d", "--quiet")
    assert r.exit_code == 2 and "--match-baseline needs --baseline" in r.output


def test_junit_known_skipped_fixed_good_news_regressed_red(product, buggy_team, tmp_path):
    """Baseline with the bug; the fix ships (check: fixed records pass, known ones skipped; ok true, exit 0);
    accept keeps guards; the bug comes back (check and run: the guards fail as regressions)."""
    _repo_dir, cfg, corpus = buggy_team
    product.delete_bug = False
    r = invoke("corpus", "check", corpus, "--junit", tmp_path / "fixed.xml", "--json", tmp_path / "fixed.json")
    assert r.exit_code == 0, r.output
    rep = json.loads((tmp_path / "fixed.json").read_text())
    assert rep["ok"] is True and rep["exit_code"] == 0 and rep["as_recorded"] is False
    last = r.output.strip().splitlines()[-2]
    fixed = rep["outcomes"]["fixed"]
    assert fixed > 0 and f"{fixed} fixed (no longer reproduce)" in last and "OK: nothing regressed" in last
    xml = cases(tmp_path / "fixed.xml")  # one case per behaviour: the fixed bug passes, the rest are known
    known = [c for c in xml if c.find("skipped") is not None]
    green = [c for c in xml if c.find("skipped") is None and c.find("failure") is None]
    assert [c.get("name").split(" ")[0] for c in green] == ["deleted-still-retrieved"]
    assert f"FIXED: {fixed} of {fixed} records no longer reproduce" in green[0].findtext("system-out")
    assert all(c.find("skipped").get("message").startswith("known failure, still reproduces") for c in known)
    assert sum((c.findtext("system-out") or "").count(": KNOWN ") for c in known) == rep["outcomes"]["known"]
    assert float(green[0].get("time")) > 0

    assert invoke("corpus", "accept", corpus, "--from", tmp_path / "fixed.json").exit_code == 0
    r = invoke("corpus", "check", corpus, "--json", tmp_path / "after.json")
    after = json.loads((tmp_path / "after.json").read_text())
    assert r.exit_code == 0 and after["ok"] is True and after["as_recorded"] is True
    words = r.output.strip().splitlines()[-1]
    assert f"{fixed} guards of fixed failures still pass" in words and " 0 fixed" not in words
    assert "OK: nothing regressed" in words

    product.delete_bug = True  # the bug comes back
    try:
        r = invoke("corpus", "check", corpus, "--junit", tmp_path / "back.xml")
        run = invoke("run", "--backend", "http", "--config", cfg, "--baseline", corpus, "--match-baseline",
                     "--out", tmp_path / "camp", "--junit", tmp_path / "camp.xml", "--quiet")
    finally:
        product.delete_bug = False
    assert r.exit_code == 1 and "REGRESSION" in r.output
    back = [c for c in cases(tmp_path / "back.xml") if c.find("failure") is not None]
    assert back and all(c.find("failure").get("type") == "regressed" for c in back)
    assert run.exit_code == 1, run.output
    assert re.search(r"\n  REGRESSED +deleted-still-retrieved: a deleted memory is still retrieved\n", run.output)
    assert "selection:deleted_evidence_retrieved" in run.output
    night = cases(tmp_path / "camp.xml")
    red = [c for c in night if c.find("failure") is not None]
    assert red and all(c.find("failure").get("type") == "regressed" for c in red)
    assert all("first found at execution" in c.find("failure").text for c in red)
    assert any(float(c.get("time")) > 0 for c in night)
    s = json.loads((tmp_path / "camp" / "summary.json").read_text())
    assert {f["kind"] for f in s["baseline"]["regressed_failures"]} == {"deleted_evidence_retrieved"}


def test_every_new_behaviour_is_listed_with_operator_and_kind(capsys):
    """24 new unique failures of two behaviours: both behaviours printed, each with its operators, level:kind,
    size and an example; no cap, nothing left out (issue 25.7: NEW keys were silently capped at 20)."""
    from ufuzz.cli.run import _print_baseline

    about = {f"k{i:02d}": ("delete", "deleted_evidence_retrieved") if i < 13 else ("paraphrase", "missing_evidence")
             for i in range(24)}
    v = BaselineVerdict(corpus="b.jsonl", new=list(about)[:13], unconfirmed=list(about)[13:], behaviours={
        "deleted-still-retrieved": {"id": "deleted-still-retrieved", "title": "a deleted memory is still retrieved",
                                    "status": "new", "unique": 13, "causes": 13, "baseline_causes": 0,
                                    "chance": 1e-4, "operators": ["delete"],
                                    "kinds": ["selection:deleted_evidence_retrieved"], "example": "k00"},
        "unrelated-edit-displaces-evidence": {
            "id": "unrelated-edit-displaces-evidence", "status": "unconfirmed", "unique": 11, "causes": 2,
            "title": "an unrelated edit pushes the evidence out of the top-k", "baseline_causes": 0, "chance": 0.25,
            "operators": ["unrelated_edit"], "kinds": ["selection:missing_evidence"], "example": "k13"}})
    _print_baseline(v)
    out = capsys.readouterr().out
    assert "behaviours 0 regressed, 1 new, 0 worse, 1 unconfirmed, 0 known — unique failures 13 new, 11 unconfirmed" \
        in out
    assert re.search(r"\n  NEW +deleted-still-retrieved: a deleted memory is still retrieved\n", out)
    assert "13 unique failures, 13 causes (0 in the baseline); by chance: 0.01%; delete " \
           "selection:deleted_evidence_retrieved; e.g. k00" in out
    assert re.search(r"\n  UNCONFIRMED unrelated-edit-displaces-evidence: an unrelated edit pushes", out)
    assert "11 unique failures, 2 causes (0 in the baseline); the baseline's campaign may have missed it by chance " \
           "(25%): it does not fail the night; unrelated_edit selection:missing_evidence; e.g. k13" in out
    assert "... and" not in out and out.count("\n  ") == 5  # header, two lines per behaviour, the pointer
