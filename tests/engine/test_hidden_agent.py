"""Hidden-retrieval fuzzing of a product that only answers: the test agent and its planted defects.

The agent (tests/support/agent_server.py) retrieves internally and answers by rule; ufuzz sees only its answers
(``--backend http --config examples/agent.toml``: an [answer] endpoint and no [search]). Each planted defect
must be found as its own class — the operator that exposes it and the response kind — and the fixed build
must show nothing at all. Retention runs on new responses, replay and corpus check judge the same way.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.agent_server import DEFECTS, start_agent_server
from ufuzz.cli import main
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.seeds.io import write_suite
from ufuzz.seeds.synth import synthesize
from ufuzz.triage.check import check_corpus
from ufuzz.triage.corpusfile import export_campaign
from ufuzz.triage.replay import replay_campaign

AGENT = str(Path(__file__).resolve().parents[2] / "examples" / "agent.toml")
BUDGET = 250

#: defect -> (operator, target prefix, the kinds it may show, the kind it must show)
CLASSES = {
    "answers_deleted": ("delete", "all", {"stale_answer"}, "stale_answer"),
    "keeps_old_value": ("update", "value=", {"stale_answer"}, "stale_answer"),
    # asked about an absent person, the agent answers about someone else: an unsupported answer (the parent's
    # value is not out of date, so it is no stale answer)
    "answers_unknown_person": ("unsupported", "entity=", {"unsupported_answer"}, "unsupported_answer"),
}


@pytest.fixture(scope="module")
def suite():
    return synthesize(personas=3, seed=5, queries_per_persona=6)


def run(tmp_path: Path, suite, defects=(), seed: int = 1, replay: bool = True, **cfg):
    """A campaign against a fresh agent with ``defects``; returns (campaign, summary, replay report)."""
    out = tmp_path / ("-".join(defects) or "fixed") / f"s{seed}"
    with start_agent_server(defects) as agent:
        c = Campaign(CampaignConfig(backend="http", backend_options={"config": AGENT, "base_url": agent.base_url},
                                    budget=BUDGET, seed=seed, out=str(out), **cfg), suite=suite)
        s = c.run()
        report = replay_campaign(out) if replay and s["unique_failures"] else None
    return c, s, report


def test_fixed_build_shows_nothing_and_retention_runs_on_responses(tmp_path, suite):
    c, s, _ = run(tmp_path, suite)
    assert s["status"] == "budget_spent" and s["executions"] == BUDGET and s["errors"] == 0
    assert s["judging"] == {"selection": False, "retrieval": "hidden by the backend", "relevance_threshold": None,
                            "responder": "backend", "judge": "text", "readback": False}  # hidden: nothing read back
    assert s["unique_failures"] == 0 and s["baseline_failures"] == 0
    execs = [e.execution for e in c.store.executions(c.campaign_id)]
    assert execs and all(not e.top_ids and not e.top_scores and e.response for e in execs)
    fb = c.store.feedback(c.campaign_id)
    kept = [f for f in fb if f.retained]
    # kept for a new response: no coverage, no ranking measured
    assert kept and all(f.signals["novelty"] and f.signals["coverage"] == 0 and f.signals["divergence"] is None
                        for f in kept)
    assert s["retained"] == len(kept) and s["coverage"] == 0  # nothing of retrieval is observed


@pytest.mark.parametrize("defect", DEFECTS)
def test_each_planted_defect_is_found_as_its_own_class(tmp_path, suite, defect):
    operator, target, kinds, must = CLASSES[defect]
    c, s, report = run(tmp_path, suite, (defect,))
    found = [f for _, f in c.failure_log]
    assert found, f"{defect} not found"
    assert {f.level for f in found} == {"response"}
    wrong = [(f.operator, f.target, f.kind) for f in found
             if f.operator != operator or not f.target.startswith(target) or f.kind not in kinds]
    assert not wrong, f"{defect}: failures outside its class: {wrong[:5]}"
    assert must in Counter(f.kind for f in found)
    assert report is not None and report.reproduced == report.total, \
        [r.reason for r in report.results if not r.reproduced][:3]
    mutants = {m.case_id: m for m in c.store.mutants(c.campaign_id)}
    for f in found:  # the memories the agent cited localise the defect; they were never judged
        cited = set(f.detail.get("cited_ids", ()))
        assert cited, f
        mutant = mutants[f.case_id]
        touched = {op.target for op in mutant.ops}
        if operator in ("delete", "update"):
            assert cited & touched, (cited, touched)  # answered from the deleted / the updated memory
        else:  # about somebody else: a memory that does not mention the absent person
            absent = f.target.partition("=")[2]
            assert all(absent not in m.text for m in c.suite.checkpoints[mutant.checkpoint_id].memories
                       if m.id in cited)


def test_same_seed_same_failures_in_hidden_mode(tmp_path, suite):
    _, s1, _ = run(tmp_path / "a", suite, DEFECTS, seed=3, replay=False)
    _, s2, _ = run(tmp_path / "b", suite, DEFECTS, seed=3, replay=False)
    assert s1["unique_failures"] > 0 and s1["failures"] == s2["failures"]


def test_corpus_of_a_hidden_campaign_checks_clean_and_stays_hidden(tmp_path, suite):
    out = tmp_path / "c"
    with start_agent_server(DEFECTS) as agent:
        c = Campaign(CampaignConfig(backend="http", backend_options={"config": AGENT, "base_url": agent.base_url},
                                    budget=150, seed=2, out=str(out)), suite=suite)
        assert c.run()["unique_failures"] > 0
        export_campaign(out, tmp_path / "agent.jsonl")
        header = json.loads((tmp_path / "agent.jsonl").read_text().splitlines()[0])
        assert header["judging"]["retrieval"] == "auto"  # hidden by the backend itself
        report = check_corpus(tmp_path / "agent.jsonl")
    assert report.results and report.ok, [r.reason for r in report.results if r.status != "reproduced"][:3]


def test_cli_run_and_status_against_an_answer_only_product(tmp_path, suite):
    seeds = tmp_path / "suite.jsonl"
    write_suite(suite, seeds)
    runner = CliRunner()
    with start_agent_server(DEFECTS) as agent:
        res = runner.invoke(main, ["run", "--backend", "http", "--config", AGENT, "--opt",
                                   f"base_url={agent.base_url}", "--seeds", str(seeds), "--budget", "120",
                                   "--out", str(tmp_path / "c"), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "unique failures:" in res.output and "unique failures: 0" not in res.output
    st = runner.invoke(main, ["status", str(tmp_path / "c")])
    assert st.exit_code == 0, st.output
    assert "no selection (retrieval hidden by the backend); response by backend, judged by text" in st.output
    bad = runner.invoke(main, ["run", "--backend", "http", "--config", AGENT, "--opt", "base_url=http://127.0.0.1:9",
                               "--seeds", str(seeds), "--budget", "5", "--retrieval-visibility", "visible",
                               "--out", str(tmp_path / "v"), "--quiet"])
    assert bad.exit_code != 0 and "exposes no retrieval" in bad.output and not (tmp_path / "v").exists()
