"""Kill and resume: a campaign SIGKILLed at 20 points and resumed each time is the uninterrupted campaign.

The campaign runs in a child process on the embedded backend (BM25, no model) over a small synthetic suite. The
kill points are drawn once from a fixed seed: at a given backend call (mid-step: between a fork and its
validation, inside a retrieval ...) or at a given corpus commit (before its transaction, inside it, right after
it). Snapshots are taken every other window, so some kills lose committed records that the resume rolls back
and redoes. Nothing here depends on timing: where each kill strikes is decided by the counts, and the final
comparison is of the two corpora, record by record.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ufuzz.corpus.failures import FailureStore
from ufuzz.corpus.store import CorpusStore, default_url

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 300
SEED = 5
KILLS = 20

_CHILD = r"""
import json, os, signal, sys
from ufuzz.backends import registry
from ufuzz.corpus import window as W
from ufuzz.engine import campaign as C, journal as J
from tests.support.faulty_backends import KillingBackend

registry.register("killing", KillingBackend)
mode, out, seeds, budget, seed, spec = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), \
    json.loads(sys.argv[6])
windows = [0]


def every_other_window(self):  # deterministic snapshot cadence, so that some kills roll records back
    windows[0] += 1
    return windows[0] % 2 == 0


J.Journal.snapshot_due = every_other_window
if spec.get("flush"):
    k, where, flushes = spec["flush"], spec["where"], [0]
    original = W.WriteWindow.flush

    def die(conn=None, payloads=None):
        os.kill(os.getpid(), signal.SIGKILL)

    def flush(self, extra=None):
        flushes[0] += 1
        if flushes[0] == k and where == "before":
            die()
        if flushes[0] == k and where == "inside":  # after the window's inserts, before its commit
            extra = list(extra or ()) + [(die, None)]
        done = original(self, extra)
        if flushes[0] == k and where == "after":
            die()
        return done

    W.WriteWindow.flush = flush
options = {"retrieval": "bm25", "kill_at": spec.get("call", 0)}
if mode == "fresh":
    config = C.CampaignConfig(backend="killing", backend_options=options, seeds=seeds, budget=budget, seed=seed,
                              out=out, window_records=24)
    summary = C.Campaign(config).run()
else:
    summary = C.Campaign.resume(out, backend_options=options).run()
print("RESULT " + json.dumps({"status": summary["status"], "executions": summary["executions"]}))
"""


def _child(mode: str, out: Path, seeds: Path, spec: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", _CHILD, mode, str(out), str(seeds), str(BUDGET), str(SEED),
                           json.dumps(spec)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _kill_points() -> list[dict]:
    """20 kill points from a fixed seed: half at a backend call, half at a corpus commit."""
    rng = random.Random(20260211)
    points = []
    for i in range(KILLS):
        if i % 2 == 0:
            points.append({"call": rng.randrange(20, 140)})
        else:
            points.append({"flush": rng.randrange(1, 5), "where": rng.choice(["before", "inside", "after"])})
    return points


def _corpus(out: Path) -> dict:
    """Everything a campaign recorded, in a form two campaigns can be compared by."""
    url = default_url(out)
    cid = json.loads((out / "campaign.json").read_text())["campaign"]
    with CorpusStore(url) as s:
        execs = [(r.seq, r.is_parent, r.checkpoint_id, r.execution.case_id, r.execution.state_key,
                  r.execution.query, r.execution.top_ids, r.execution.top_scores, r.execution.response,
                  r.execution.abstained, r.execution.error) for r in s.executions(cid)]
        mutants = [(m.case_id, m.parent_id, m.operator, m.target, m.valid, m.rejection_reason, m.created_seq,
                    m.query.to_dict() if m.query else None, [o.to_dict() for o in m.ops], m.depth, m.detail)
                   for m in s.mutants(cid)]
        feedback = sorted((f.seq, f.case_id, sorted(f.signals.items()), f.retained) for f in s.feedback(cid))
        errors = [(e.seq, e.case_id, e.operation, e.message) for e in s.errors(cid)]
        seeds = [x.id for x in s.seeds(cid)]
        checkpoints = sorted(s.checkpoints(cid))
        status = s.campaign(cid).status
    with FailureStore(url, cid) as f:
        failures = sorted((r.failure_key, r.case_id, r.seed_id, r.operator, r.kind, r.stage, r.count, r.first_seq,
                           r.cause_key, r.origin, r.responder) for r in f.failures())
        references = {k: v.to_dict() for k, v in f.references().items()}
    summary = json.loads((out / "summary.json").read_text())
    keep = ("status", "executions", "budget", "mutants_valid", "mutants_rejected", "retained", "coverage",
            "unique_failures", "causes", "baseline_failures", "errors", "failures", "obligations_covered")
    return {"executions": execs, "mutants": mutants, "feedback": feedback, "errors": errors, "seeds": seeds,
            "checkpoints": checkpoints, "failures": failures, "references": references, "status": status,
            "summary": {k: summary[k] for k in keep}}


@pytest.fixture(scope="module")
def seeds_file(tmp_path_factory) -> Path:
    from ufuzz.seeds.io import write_suite
    from ufuzz.seeds.synth import synthesize

    return write_suite(synthesize(personas=3, seed=11), tmp_path_factory.mktemp("seeds") / "suite.jsonl")


def test_killed_at_20_points_and_resumed_is_the_uninterrupted_campaign(tmp_path, seeds_file):
    ref = tmp_path / "ref"
    done = _child("fresh", ref, seeds_file, {})
    assert done.returncode == 0, done.stderr[-3000:]
    expected = _corpus(ref)
    assert expected["status"] == "budget_spent" and len(expected["executions"]) == BUDGET
    assert expected["failures"] and any(m[4] for m in expected["mutants"])

    out = tmp_path / "killed"
    kills, mode, finished = 0, "fresh", False
    for point in _kill_points():
        run = _child(mode, out, seeds_file, point)
        mode = "resume"
        if run.returncode == 0:  # the campaign finished before this point struck
            finished = True
            break
        assert run.returncode == -9, (point, run.stderr[-3000:])
        kills += 1
        if kills == 1 and (out / "campaign.json").exists():  # the store still says running: status knows better
            from ufuzz.reports.status import campaign_status

            st = campaign_status(out)
            assert st["status"] == "dead" and st["recorded_status"] == "running" and st["alive"] is False
    assert kills >= 15, f"only {kills} kill points struck before the campaign finished"
    if not finished:
        last = _child("resume", out, seeds_file, {})
        assert last.returncode == 0, last.stderr[-3000:]
    got = _corpus(out)
    for part in expected:
        assert got[part] == expected[part], part
