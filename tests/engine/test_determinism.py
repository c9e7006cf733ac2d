"""Campaign determinism: the same seed gives the same failures and the same mutants in the same order (also in
another process with another string-hash seed); another seed gives another mutant sequence."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.operator_kit import ROOT
from ufuzz.engine.campaign import Campaign, CampaignConfig

BUDGET = 300


def run(out, seed: int, budget: int = BUDGET) -> dict:
    c = Campaign(CampaignConfig(backend="embedded", budget=budget, seed=seed, out=str(out)))
    summary = c.run()
    mutants = c.store.mutants(c.campaign_id)
    return {"failures": summary["failures"], "executions": summary["executions"],
            "queries": [m.query.text for m in mutants],
            "mutants": [(m.case_id, m.operator, m.target, m.valid, [o.to_dict() for o in m.ops]) for m in mutants]}


_CHILD = """
import json, sys
from tests.engine.test_determinism import run
print("RESULT" + json.dumps(run(sys.argv[1], int(sys.argv[2]))))
"""


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    return run(tmp_path_factory.mktemp("det-a"), seed=7)


def test_same_seed_same_failures_and_mutant_sequence(first, tmp_path):
    assert first["executions"] == BUDGET and len(first["queries"]) > 100 and first["failures"]
    again = run(tmp_path, seed=7)
    assert again["failures"] == first["failures"]
    assert again["queries"] == first["queries"]
    assert again["mutants"] == first["mutants"]


def test_same_seed_in_another_process_with_another_hash_seed(first, tmp_path):
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path), "7"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT"))
    other = json.loads(line[len("RESULT"):])
    assert other["failures"] == first["failures"]
    assert other["queries"] == first["queries"]
    assert [list(map(_jsonish, m)) for m in first["mutants"]] == [list(map(_jsonish, m)) for m in other["mutants"]]


def _jsonish(x):
    return json.loads(json.dumps(x))


def test_another_seed_gives_another_mutant_sequence(first, tmp_path):
    other = run(tmp_path, seed=8, budget=120)
    n = len(other["queries"])
    assert n > 30
    assert other["queries"] != first["queries"][:n]
