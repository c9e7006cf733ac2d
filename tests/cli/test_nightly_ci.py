"""The README's "nightly CI" recipe and "triage" walkthrough, run for real against a local REST memory product.

The product (tests/support/http_product_server.py) has one planted defect: DELETE only hides a memory from list
and get, search still returns it. A team fuzzes it over ``--backend http``, commits the failures as a baseline
corpus beside its product TOML, triages one (show, reproducer, minimise, report) and runs the nightly check:
the unfixed product passes (known failures), the fixed one passes with good news, a fix that regresses fails
with a JUnit file naming the failure, and a product that is down is told apart (exit 3).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.http_product_server import start_product_server
from ufuzz.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "product.toml"
NIGHTLY = ROOT / "examples" / "ci" / "nightly.sh"
TOKEN = "tok-" + "nightly-5d1e"
ENV = "PRODUCT_API_TOKEN"


def invoke(*args: object) -> object:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _junit(path: Path) -> ET.Element:
    return ET.parse(path).getroot().find("testsuite")


@pytest.fixture(scope="module")
def product():
    old = os.environ.get(ENV)
    os.environ[ENV] = TOKEN
    try:
        with start_product_server(TOKEN, delete_bug=True) as srv:
            yield srv
    finally:
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old


@pytest.fixture
def buggy(product):
    product.delete_bug = True
    yield product
    product.delete_bug = True


@pytest.fixture(scope="module")
def team(product, tmp_path_factory):
    """The team's repository: ci/product.toml and the baseline corpus exported from a first campaign."""
    repo = tmp_path_factory.mktemp("repo")
    (repo / "ci").mkdir()
    cfg = repo / "ci" / "product.toml"
    cfg.write_text(EXAMPLE.read_text().replace('base_url = "http://127.0.0.1:8080"', f'base_url = "{product.base_url}"'))
    camp = repo / "camp"
    r = invoke("run", "--backend", "http", "--config", cfg, "--budget", 200, "--max-time", "5m", "--out", camp, "--quiet")
    assert r.exit_code == 0, r.output
    corpus = repo / "ci" / "ufuzz-baseline.jsonl"
    r = invoke("corpus", "export", camp, "-o", corpus)
    assert r.exit_code == 0, r.output
    return repo, cfg, camp, corpus


def _records(corpus: Path) -> list[dict]:
    return [json.loads(x) for x in corpus.read_text().splitlines() if '"kind":"failure"' in x]


def test_the_baseline_holds_the_planted_defect(team):
    _repo, _cfg, camp, corpus = team
    recs = _records(corpus)
    kinds = {(r["mutant"]["operator"], r["expected"]["kind"]) for r in recs}
    assert ("delete", "deleted_evidence_retrieved") in kinds
    header = json.loads(corpus.read_text().splitlines()[0])
    assert header["backend_options"]["config"] == "product.toml"  # relative to the corpus file
    summary = json.loads((camp / "summary.json").read_text())
    assert summary["status"] == "budget_spent" and summary["errors"] == 0


def test_known_failures_reproduce_exit_0_from_any_folder(team, buggy, tmp_path, monkeypatch):
    _repo, _cfg, _camp, corpus = team
    monkeypatch.chdir(tmp_path)  # the config is found relative to the corpus, not the working directory
    r = invoke("corpus", "check", corpus, "--junit", "junit.xml", "--json", "check.json")
    assert r.exit_code == 0, r.output
    assert "OK: every record still reproduces" in r.output
    suite = _junit(tmp_path / "junit.xml")
    n = len(_records(corpus))
    cases = suite.findall("testcase")  # one per behaviour: the soft-delete bug is one test, however many records
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("0", "0", str(len(cases)))
    deleted = [c for c in cases if c.get("name").startswith("deleted-still-retrieved ")]
    n_deleted = sum(1 for r in _records(corpus) if r["expected"]["kind"] == "deleted_evidence_retrieved")
    assert len(deleted) == 1 and f"({n_deleted} of {n_deleted} records" in deleted[0].find("skipped").get("message")
    assert sum(len(re.findall(r"^line \d+: KNOWN ", c.findtext("system-out") or "", re.M)) for c in cases) == n
    data = json.loads((tmp_path / "check.json").read_text())
    assert data["exit_code"] == 0 and data["outcomes"]["known"] == n


def test_fix_passes_accept_keeps_guards_and_a_regression_fails_naming_it(team, buggy, tmp_path):
    _repo, _cfg, _camp, corpus = team
    deletes = [r["expected"]["failure_key"] for r in _records(corpus)
               if r["expected"]["kind"] == "deleted_evidence_retrieved"]
    buggy.delete_bug = False  # the fixed build is deployed
    r = invoke("corpus", "check", corpus, "--changed-only", "--junit", tmp_path / "fixed.xml",
               "--json", tmp_path / "fixed.json")
    assert r.exit_code == 0, r.output
    assert "good news" in r.output and "FIXED" in r.output
    data = json.loads((tmp_path / "fixed.json").read_text())
    fixed = {x["failure_key"] for x in data["results"] if x["outcome"] == "fixed"}
    assert set(deletes) <= fixed
    xml = list(_junit(tmp_path / "fixed.xml").iter("testcase"))
    gone = next(c for c in xml if c.get("name").startswith("deleted-still-retrieved "))
    assert not len(gone.findall("skipped")) and not len(gone.findall("failure"))  # the fixed behaviour passes
    assert f"FIXED: {len(deletes)} of {len(deletes)} records no longer reproduce" in gone.findtext("system-out")
    known = [c for c in xml if c.find("skipped") is not None]  # known failures are skipped (with a message)
    listed = sum((c.findtext("system-out") or "").count("KNOWN ") for c in known)
    assert listed == data["outcomes"]["known"]

    accepted = corpus.with_name("accepted.jsonl")  # beside the TOML, so the relative config still holds
    r = invoke("corpus", "accept", corpus, "--from", tmp_path / "fixed.json", "-o", accepted)
    assert r.exit_code == 0, r.output
    assert f"{len(fixed)} now fixed" in r.output
    guards = {x["expected"]["failure_key"] for x in _records(accepted) if x["expected"]["status"] == "fixed"}
    assert guards == fixed
    r = invoke("corpus", "check", accepted)
    assert r.exit_code == 0, r.output  # the guards pass on the fixed build

    buggy.delete_bug = True  # a later build brings the bug back
    r = invoke("corpus", "check", accepted, "--junit", tmp_path / "regressed.xml")
    assert r.exit_code == 1, r.output
    assert "REGRESSION" in r.output and "REGRESSED" in r.output
    suite = _junit(tmp_path / "regressed.xml")
    failed = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert int(suite.get("failures")) == len(failed) == 1  # one behaviour came back
    fail = failed[0].find("failure")
    assert failed[0].get("name").startswith("deleted-still-retrieved ") and fail.get("type") == "regressed"
    assert fail.get("message").startswith(f"REGRESSED: {len(guards)} regressed of {len(guards)} records")
    assert all(f"REGRESSED {k}" in fail.text for k in guards)  # every guard named in full


def test_a_product_that_is_down_exits_3(team, tmp_path):
    _repo, cfg, _camp, corpus = team
    down = f"http://127.0.0.1:{_free_port()}"
    r = invoke("corpus", "check", corpus, "--opt", f"base_url={down}", "--junit", tmp_path / "down.xml")
    assert r.exit_code == 3, r.output
    assert "UNREACHABLE" in r.output and "Connection refused" in r.output
    suite = _junit(tmp_path / "down.xml")
    err = next(c for c in suite.iter("testcase") if c.get("name") == "backend reachable").find("error")
    assert err.get("type") == "unreachable"
    skipped = [c for c in suite.iter("testcase") if c.find("skipped") is not None]  # one per behaviour, not run
    assert int(suite.get("skipped")) == len(skipped) == len(list(suite.iter("testcase"))) - 1
    assert all(c.find("skipped").get("message").startswith("not run: ") for c in skipped)
    assert sum((c.findtext("system-out") or "").count(": NOT_RUN ") for c in skipped) == len(_records(corpus))
    r = invoke("run", "--backend", "http", "--config", cfg, "--opt", f"base_url={down}", "--budget", 20,
               "--out", tmp_path / "c", "--quiet")
    assert r.exit_code == 3 and "unreachable" in r.output


def test_usage_errors_exit_2(team, tmp_path):
    _repo, _cfg, _camp, corpus = team
    r = invoke("corpus", "check", corpus, "--config", tmp_path / "nope.toml")
    assert r.exit_code == 2 and "--config" in r.output
    r = invoke("corpus", "accept", corpus, "--from", tmp_path / "nope.json")
    assert r.exit_code == 2 and "no such file" in r.output


def test_a_fresh_campaign_against_the_baseline_marks_known_and_new(team, buggy, tmp_path):
    _repo, cfg, _camp, corpus = team
    r = invoke("run", "--backend", "http", "--config", cfg, "--budget", 200, "--out", tmp_path / "same",
               "--baseline", corpus, "--quiet")
    assert r.exit_code == 0, r.output  # the same campaign: every failure is known
    s = json.loads((tmp_path / "same" / "summary.json").read_text())
    assert s["baseline"]["new"] == 0 and s["baseline"]["known"] == s["unique_failures"] > 0
    r = invoke("run", "--backend", "http", "--config", cfg, "--budget", 200, "--out", tmp_path / "any",
               "--baseline", corpus, "--fail-on", "any", "--quiet")
    assert r.exit_code == 1, r.output
    r = invoke("run", "--backend", "http", "--config", cfg, "--budget", 300, "--seed", 5, "--out", tmp_path / "other",
               "--baseline", corpus, "--quiet")
    s = json.loads((tmp_path / "other" / "summary.json").read_text())
    b = s["baseline"]
    assert sum(b[st] for st in ("known", "new", "worse", "unconfirmed", "regressed")) == s["unique_failures"]
    assert r.exit_code == (1 if b["failed"] else 0), r.output  # the exit code agrees with the verdict
    listed = invoke("failures", "list", tmp_path / "other", "--json")
    marks = {row["key"]: row["baseline"] for row in json.loads(listed.output)}
    assert sorted(k for k, v in marks.items() if v == "new") == sorted(b["new_keys"])
    # by behaviour class and by cause, each group says what its failures are to the baseline (new first)
    rows = json.loads(listed.output)
    for by, field in (("class", "class"), ("cause", "cause")):
        groups = json.loads(invoke("failures", "list", tmp_path / "other", "--by", by, "--json").output)
        for g in groups:
            own = {r["baseline"] for r in rows if r[field] == g[field]}
            assert g["baseline"] == sorted(own, key=lambda m: (m != "new", m)), (by, g)
        text = invoke("failures", "list", tmp_path / "other", "--by", by).output
        head = text.splitlines()[0].split()
        assert "baseline" in head and head.index("baseline") > head.index("example"), text


def _nightly(env_extra: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "UFUZZ": f"{sys.executable} -m ufuzz", **env_extra}
    return subprocess.run(["bash", str(NIGHTLY)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_nightly_recipe_runs_for_real(team, buggy, tmp_path):
    """examples/ci/nightly.sh (what the GitHub Actions and GitLab jobs run), from the team's repository."""
    repo, _cfg, _camp, corpus = team
    env = {"UFUZZ_BUDGET": "150", "UFUZZ_MAX_TIME": "3m", "UFUZZ_OUT": str(tmp_path / "out")}
    res = _nightly(env, repo)
    assert res.returncode == 0, res.stdout + res.stderr
    out = tmp_path / "out"
    for name in ("corpus-check.xml", "corpus-check.json", "report.html", "causes.txt", "campaign/summary.json",
                 "campaign/plot_data.csv"):
        assert (out / name).is_file(), name
    assert _junit(out / "corpus-check.xml").get("failures") == "0"
    assert "nothing regressed, nothing new" in res.stdout
    assert "[ufuzz] execs" in res.stderr  # progress lines without a terminal
    down = _nightly({**env, "UFUZZ_BASE_URL": f"http://127.0.0.1:{_free_port()}",
                     "UFUZZ_OUT": str(tmp_path / "down")}, repo)
    assert down.returncode == 3, down.stdout + down.stderr
    for job in ("github-actions.yml", "gitlab-ci.yml"):
        text = (NIGHTLY.parent / job).read_text()
        assert "examples/ci/nightly.sh" in text and ("ufuzz-out/*.xml" in text or "ufuzz-out/campaign.xml" in text)


def test_the_triage_walkthrough(team, buggy, tmp_path):
    """README "triage": status, failures by cause, show one (the product's ids), its reproducer against the
    product, minimise it, check the minimised record, and the HTML report."""
    _repo, _cfg, camp, _corpus = team
    assert invoke("status", camp).exit_code == 0
    causes = invoke("failures", "list", camp, "--by", "cause", "--kind", "deleted_evidence_retrieved", "--json")
    groups = json.loads(causes.output)
    assert groups and all(g["kind"] == "deleted_evidence_retrieved" for g in groups)
    key = groups[0]["example"]
    shown = invoke("failures", "show", camp, key[:10], "--reproducer", tmp_path / "repro.py", "--json")
    assert shown.exit_code == 0, shown.output
    view = json.loads(shown.output)
    top = view["mutant"]["execution"]["top"]
    offending = [t for t in top if "offending" in t["marks"]]
    assert offending and all(t["native_id"].startswith("mem-") for t in top)  # the product's own ids
    assert {"deleted", "offending"} <= set(offending[0]["marks"])
    assert view["state_change"][0]["op"] == "delete"
    text = invoke("failures", "show", camp, key[:10]).output
    assert f"[{offending[0]['native_id']}]" in text and "ufuzz replay" in text

    env = {**os.environ, ENV: TOKEN}
    repro = subprocess.run([sys.executable, str(tmp_path / "repro.py"), "--quiet"], capture_output=True, text=True,
                           env=env, timeout=120)
    assert repro.returncode == 0 and "REPRODUCED selection:deleted_evidence_retrieved" in repro.stdout, repro.stdout
    assert "mem-" in repro.stdout
    buggy.delete_bug = False
    repro = subprocess.run([sys.executable, str(tmp_path / "repro.py"), "--quiet"], capture_output=True, text=True,
                           env=env, timeout=120)
    assert repro.returncode == 1 and "NOT REPRODUCED" in repro.stdout, repro.stdout
    buggy.delete_bug = True
    assert TOKEN not in (tmp_path / "repro.py").read_text()  # the secret comes from the environment

    assert invoke("replay", camp, "--key", key[:10]).exit_code == 0
    mini = invoke("minimise", camp, key[:10], "-o", tmp_path / "min.jsonl")
    assert mini.exit_code == 0, mini.output
    rec = _records(tmp_path / "min.jsonl")[0]
    cp = json.loads((tmp_path / "min.jsonl").read_text().splitlines()[1])
    assert rec["expected"]["failure_key"] == key and len(cp["memories"]) < view["checkpoint_memories"]
    assert invoke("corpus", "check", tmp_path / "min.jsonl").exit_code == 0
    r = invoke("report", camp, "-o", tmp_path / "report.html")
    assert r.exit_code == 0 and (tmp_path / "report.html").stat().st_size > 0
