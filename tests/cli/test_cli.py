"""The command line as a user drives it: real campaigns, real files, clear errors on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufuzz.cli import main

ROOT = Path(__file__).resolve().parents[2]
LME = ROOT.parent / "shared" / "datasets" / "longmemeval" / "longmemeval_oracle_subset.json"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_run_then_status(tmp_path):
    out = tmp_path / "camp"
    r = invoke("run", "--budget", 120, "--seed", 4, "--out", out, "--quiet")
    assert r.exit_code == 0, r.output
    assert "unique failures:" in r.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["executions"] == 120
    assert (out / "campaign.log").read_text().strip().splitlines()[0].startswith("{")
    st = invoke("status", out)
    assert st.exit_code == 0
    assert "executions 120 of budget 120" in st.output and "coverage" in st.output
    js = json.loads(invoke("status", out, "--json").output)
    assert js["unique_failures"] == summary["unique_failures"]
    # where the budget went: every mutant execution under its operator (new-user walkthrough: not shown)
    by_op = js["executions_by_operator"]
    assert by_op and sum(by_op.values()) == js["mutant_executions"] and set(by_op) <= {
        "paraphrase", "target_change", "unsupported", "update", "delete", "unrelated_edit", "speaker_swap"}
    assert js["execution_seconds"] > 0  # the system's own time per execution: a slow product shows here
    assert f"{js['execution_seconds'] * 1000:.1f} ms on average" in st.output
    line = next(x for x in st.output.splitlines() if x.startswith("  by operator: "))
    assert sorted(line.removeprefix("  by operator: ").split(", ")) == sorted(f"{op} {n}" for op, n in by_op.items())
    again = invoke("run", "--budget", 10, "--out", out, "--quiet")
    assert again.exit_code != 0 and "--force" in again.output


def test_malformed_seed_file_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "header", "schema": 1, "suite": "x"}\n{"kind": "checkpoint", "id": 3}\n')
    out = tmp_path / "c"
    r = invoke("run", "--seeds", bad, "--budget", 10, "--out", out, "--quiet")
    assert r.exit_code != 0
    assert f"{bad}:2" in r.output and "'id'" in r.output
    assert not (out / "corpus.sqlite").exists()


@pytest.mark.parametrize("args, needle", [
    (("--opt", "novalue"), "--opt"),
    (("--opt", "retrieval=sparse"), "retrieval"),
    (("--strategy", "nope"), "--strategy"),
    (("--budget", "0"), "--budget"),
    (("--backend", "nosuch"), "nosuch"),
    (("--llm-uses", "answer"), "--llm-base-url"),
])
def test_bad_flags_name_the_option_and_write_nothing(tmp_path, args, needle):
    out = tmp_path / "c"
    r = invoke("run", "--out", out, "--budget", 5, "--quiet", *args)
    assert r.exit_code != 0
    assert needle in r.output
    assert not out.exists()


def test_seeds_synth_is_deterministic_and_loadable(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert invoke("seeds", "synth", "--personas", 3, "--seed", 11, "-o", a).exit_code == 0
    assert invoke("seeds", "synth", "--personas", 3, "--seed", 11, "-o", b).exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    from ufuzz.seeds.io import load_suite

    assert len(load_suite(a).checkpoints) == 3


@pytest.mark.skipif(not LME.exists(), reason="shared LongMemEval subset not present")
def test_longmemeval_import_runs_in_a_campaign(tmp_path):
    seeds = tmp_path / "lme.jsonl"
    r = invoke("seeds", "import", "longmemeval", LME, "-o", seeds)
    assert r.exit_code == 0, r.output
    assert "dropped" in r.output
    out = tmp_path / "c"
    r = invoke("run", "--seeds", seeds, "--budget", 150, "--out", out, "--quiet", "--opt", "retrieval=bm25")
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["executions"] == 150 and s["mutants_valid"] > 0


def test_import_errors_are_clear(tmp_path):
    r = invoke("seeds", "import", "nosuchformat", tmp_path / "x.json", "-o", tmp_path / "o.jsonl")
    assert r.exit_code != 0 and "FORMAT" in r.output
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    r = invoke("seeds", "import", "longmemeval", broken, "-o", tmp_path / "o.jsonl")
    assert r.exit_code != 0 and "broken.json" in r.output
    assert not (tmp_path / "o.jsonl").exists()


def test_backends_lists_embedded_installed():
    r = invoke("backends")
    assert r.exit_code == 0
    line = next(x for x in r.output.splitlines() if x.startswith("embedded"))
    assert "[installed]" in line
    # each backend's block says where it runs: native libraries in a worker, the embedded one in process
    blocks: dict[str, str] = {}
    for x in r.output.splitlines():
        if x and not x[0].isspace():
            name = x.split()[0]
            blocks[name] = ""
        blocks[name] += x + "\n"
    assert "runs in: the fuzzer's process" in blocks["embedded"]
    for native in ("graphiti", "mem0", "a-mem"):
        assert "runs in: a recyclable worker process" in blocks[native]


def test_cache_stats_on_missing_file(tmp_path):
    r = invoke("cache", "stats", "--path", tmp_path / "none.sqlite")
    assert r.exit_code == 0


def test_status_of_a_directory_on_a_shared_database_is_that_directorys_campaign(tmp_path):
    """Two campaigns in one (team) database: `ufuzz status DIR --db URL` shows DIR's, not the newest."""
    db = f"sqlite:///{tmp_path / 'team.sqlite'}"
    ids = []
    for name, budget in (("a", 12), ("b", 20)):
        r = invoke("run", "--budget", budget, "--out", tmp_path / name, "--db", db, "--quiet", "--opt", "retrieval=bm25")
        assert r.exit_code == 0, r.output
        ids.append(json.loads((tmp_path / name / "campaign.json").read_text())["campaign"])
    assert ids[0] != ids[1]
    for name, cid, budget in (("a", ids[0], 12), ("b", ids[1], 20)):
        st = invoke("status", tmp_path / name, "--db", db, "--json")
        assert st.exit_code == 0, st.output
        got = json.loads(st.output)
        assert (got["campaign"], got["executions"]) == (cid, budget)
