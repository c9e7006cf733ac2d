"""The nightly recipe against one baseline at other seeds and budgets (issue 25.1): green on an unchanged product,
red on a new bug.

The product is the embedded backend with the planted soft-delete defect switched off (``clean-delete-hides``, BM25:
it has the usual ranking failures) and, as the regression, switched on (``planted-delete-hides``,
:mod:`ufuzz.backends.adapters.planted`), in-process so that a campaign costs seconds. The baseline is exported from a
seed-1, budget-500 campaign; each night runs the recipe's own command (examples/ci/nightly.sh: ``ufuzz run
--baseline --match-baseline --fail-on new --junit``) with ``UFUZZ_SEED`` / ``UFUZZ_BUDGET`` set, as a team would
set them. The nights are the fewest that prove the point, cheaply: another seed at the largest budget on the
unchanged product, where it meets failures under keys and causes the baseline never held (the old
key-or-cause matching made such nights red), and one night with the regression switched on at another seed and the smallest budget. The full seeds x
budgets matrix runs the recipe itself against the HTTP test product and is measured outside the suite.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufuzz.backends.adapters import planted
from ufuzz.cli import main
from ufuzz.corpus.campaign import load_campaign
from ufuzz.triage.corpusfile import load_corpus

BASE_SEED, BASE_BUDGET = 1, 500
OPTS = ("--opt", "db=memory", "--opt", "retrieval=bm25", "--quiet")


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    names = planted.register_all()["delete-hides"]
    d = tmp_path_factory.mktemp("matrix")
    r = invoke("run", "--backend", names[1], *OPTS, "--seed", BASE_SEED, "--budget", BASE_BUDGET, "--out", d / "base")
    assert r.exit_code == 0, r.output
    assert invoke("corpus", "export", d / "base", "-o", d / "baseline.jsonl").exit_code == 0
    return d / "baseline.jsonl"


def night(corpus: Path, out: Path, backend: str, seed: int, budget: int):
    """The campaign step of nightly.sh with UFUZZ_SEED and UFUZZ_BUDGET set."""
    return invoke("run", "--backend", backend, *OPTS, "--match-baseline", "--seed", seed, "--budget", budget,
                  "--out", out, "--baseline", corpus, "--fail-on", "new", "--junit", out.with_suffix(".xml"))


def test_an_unchanged_product_is_green_at_another_seed_and_budget(baseline, tmp_path):
    seed, budget = 0, 900  # the largest budget: the most failures the baseline never held
    r = night(baseline, tmp_path / "night", "clean-delete-hides", seed, budget)
    assert r.exit_code == 0, r.output
    assert f"seed {seed} (the baseline's campaign: {BASE_SEED})" in r.output  # said up front
    s = json.loads((tmp_path / "night" / "summary.json").read_text())
    v = s["baseline"]
    records = load_corpus(baseline).records
    keys, causes = {x.failure_key for x in records}, {x.cause_key for x in records}
    unkeyed = [f for f in load_campaign(tmp_path / "night").failures
               if f.origin == "mutant" and f.failure_key not in keys and f.cause_key not in causes]
    assert len(unkeyed) > 10  # matched by key or cause, these would have failed the night
    assert v["new"] == v["worse"] == v["regressed"] == 0 and not v["failed"]
    assert v["known"] + v["unconfirmed"] == s["unique_failures"] > 0
    suite = ET.parse(tmp_path / "night.xml").getroot().find("testsuite")
    assert suite.get("failures") == "0" and int(suite.get("skipped")) == int(suite.get("tests")) > 0


def test_a_new_bug_is_red_at_another_seed_and_budget(baseline, tmp_path):
    r = night(baseline, tmp_path / "night", "planted-delete-hides", 4, 300)
    assert r.exit_code == 1, r.output
    assert re.search(r"\n  NEW +deleted-still-retrieved: a deleted memory is still retrieved\n", r.output)
    v = json.loads((tmp_path / "night" / "summary.json").read_text())["baseline"]
    failing = [b["id"] for b in v["behaviours"] if b["status"] in ("new", "worse", "regressed")]
    assert failing == ["deleted-still-retrieved"] and v["failed"]  # one bug, one red behaviour
    assert {f["kind"] for f in v["new_failures"]} == {"deleted_evidence_retrieved"}
    suite = ET.parse(tmp_path / "night.xml").getroot().find("testsuite")
    red = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name").split(" ")[0] for c in red] == ["deleted-still-retrieved"]
    assert red[0].find("failure").get("type") == "new" and float(red[0].get("time")) > 0
