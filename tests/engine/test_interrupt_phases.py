"""One and two Ctrl-C at every phase of a step never change the campaign.

A campaign runs in a child process on the embedded backend (BM25, no model) and sends SIGINT to itself at a
chosen call of a chosen phase — recording the seeds, drawing a batch of tasks (the scheduler has drawn them), a
lane's job (the proposal), an execution, a corpus commit, a snapshot, the summary — once ("stop after this
step") or twice at the same instant ("stop now, resume later"). Each interrupted campaign must end interrupted (exit 130 semantics: status
``interrupted``, summary and store agreeing) — or, at the summary, as it would have ended anyway — and, resumed,
give the uninterrupted campaign record by record. Nothing here depends on timing: the signal is raised by the
process itself at a counted call, and Python runs its handler before the next bytecode of that call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.test_resume import _corpus

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 120
SEED = 3

_CHILD = r"""
import json, os, signal, sys
from ufuzz.backends import registry
from ufuzz.corpus import store as S, window as W
from ufuzz.engine import campaign as C, ending as E, executor as X, journal as J, step as ST
from ufuzz.engine.parallel import core as L
mode, out, seeds, budget, seed, spec = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), \
    json.loads(sys.argv[6])
windows = [0]


def every_other_window(self):  # deterministic snapshot cadence
    windows[0] += 1
    return windows[0] % 2 == 0


J.Journal.snapshot_due = every_other_window
calls = [0]
if spec.get("phase"):
    owner = {"seeding": (S.CorpusStore, "record_seed"), "proposal": (L.LaneCore, "_work"),
             "draw": (ST.Steps, "draw"), "apply": (ST.Steps, "apply"),
             "execution": (X.Executor, "execute"), "commit": (W.WriteWindow, "flush"),
             "snapshot": (J.Journal, "snapshot"), "summary": (E, "write_summary")}[spec["phase"]]
    original = getattr(*owner)

    def interrupting(*args, **kwargs):
        calls[0] += 1
        if calls[0] == spec["at"]:
            for _ in range(spec["times"]):
                os.kill(os.getpid(), signal.SIGINT)  # the handler runs before the next bytecode
        return original(*args, **kwargs)

    if owner[0] is E:  # a module function: replace it where the campaign looks it up
        E.write_summary = interrupting
    else:
        setattr(owner[0], owner[1], interrupting)
options = {"retrieval": "bm25"}
if mode == "fresh":
    config = C.CampaignConfig(backend="embedded", backend_options=options, seeds=seeds, budget=budget, seed=seed,
                              out=out, window_records=24, workers=spec.get("workers", 1))
    summary = C.Campaign(config).run()
else:
    summary = C.Campaign.resume(out, backend_options=options).run()
print("RESULT " + json.dumps({"status": summary["status"], "executions": summary["executions"],
                              "calls": calls[0]}))
"""


def _child(mode: str, out: Path, seeds: Path, spec: dict, workers: int = 1) -> dict:
    spec = {**spec, "workers": workers}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-c", _CHILD, mode, str(out), str(seeds), str(BUDGET), str(SEED),
                          json.dumps(spec)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(x for x in run.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module")
def seeds_file(tmp_path_factory) -> Path:
    from ufuzz.seeds.io import write_suite
    from ufuzz.seeds.synth import synthesize

    return write_suite(synthesize(personas=3, seed=11), tmp_path_factory.mktemp("seeds") / "suite.jsonl")


def _reference(tmp_path_factory, seeds_file, workers: int) -> dict:
    ref = tmp_path_factory.mktemp("ref") / "c"
    done = _child("fresh", ref, seeds_file, {}, workers)
    assert done["status"] == "budget_spent"
    corpus = _corpus(ref)
    assert len(corpus["executions"]) == BUDGET and corpus["failures"]
    return corpus


@pytest.fixture(scope="module")
def expected(tmp_path_factory, seeds_file) -> dict:
    return _reference(tmp_path_factory, seeds_file, 1)


@pytest.fixture(scope="module")
def expected_parallel(tmp_path_factory, seeds_file) -> dict:
    return _reference(tmp_path_factory, seeds_file, 2)


#: (phase, the call of it that is interrupted); seeding: while the seeds are recorded, before the first snapshot
#: (the campaign then has none, and its resume starts over); a draw is a batch of one task here, a proposal a job of
#: the campaign's one lane (in its own thread); a snapshot every other window
PHASES = [("seeding", 1), ("draw", 3), ("proposal", 40), ("execution", 90), ("commit", 4), ("snapshot", 3),
          ("summary", 1)]


@pytest.mark.parametrize("times", [1, 2], ids=["one", "two"])
@pytest.mark.parametrize("phase, at", PHASES, ids=[p for p, _ in PHASES])
def test_interrupts_at_every_phase_resume_to_the_uninterrupted_campaign(tmp_path, seeds_file, expected, phase, at,
                                                                         times):
    _interrupt_and_resume(tmp_path, seeds_file, expected, phase, at, times, workers=1)


#: a parallel campaign (two lanes): drawing a batch, applying one, committing
PARALLEL_PHASES = [("draw", 4), ("apply", 3), ("commit", 4)]


@pytest.mark.parametrize("times", [1, 2], ids=["one", "two"])
@pytest.mark.parametrize("phase, at", PARALLEL_PHASES, ids=[p for p, _ in PARALLEL_PHASES])
def test_interrupts_of_a_parallel_campaign_resume_to_the_uninterrupted_one(tmp_path, seeds_file, expected_parallel,
                                                                           phase, at, times):
    _interrupt_and_resume(tmp_path, seeds_file, expected_parallel, phase, at, times, workers=2)


def _interrupt_and_resume(tmp_path, seeds_file, expected, phase, at, times, workers):
    out = tmp_path / "c"
    got = _child("fresh", out, seeds_file, {"phase": phase, "at": at, "times": times}, workers)
    assert got["calls"] >= at, f"the {phase} phase ran {got['calls']} times only: the interrupt never struck"
    summary = json.loads((out / "summary.json").read_text())
    from ufuzz.reports.status import campaign_status

    st = campaign_status(out)
    assert st["status"] == summary["status"] == got["status"]
    assert st["executions"] == summary["executions"]  # the summary says what the store holds
    assert not list(out.glob(".summary.json.*.tmp")) and not (out / ".ufuzz.lock").exists()
    if phase == "summary":  # the campaign was already over: it ends as it would have, unchanged
        assert got["status"] == "budget_spent"
    else:
        assert got["status"] == "interrupted" and got["executions"] < BUDGET
        resumed = _child("resume", out, seeds_file, {}, workers)
        assert resumed["status"] == "budget_spent"
    corpus = _corpus(out)
    for part in expected:
        assert corpus[part] == expected[part], part
