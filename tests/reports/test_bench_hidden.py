"""`ufuzz bench` in hidden mode: on a product that only answers, the table shows responses instead of coverage."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tests.support.agent_server import DEFECTS, start_agent_server
from ufuzz.cli import main
from ufuzz.seeds.io import write_suite
from ufuzz.seeds.synth import synthesize

AGENT = str(Path(__file__).resolve().parents[2] / "examples" / "agent.toml")


def test_bench_on_an_answer_only_agent(tmp_path):
    seeds = tmp_path / "suite.jsonl"
    write_suite(synthesize(personas=2, seed=5, queries_per_persona=5), seeds)
    out = tmp_path / "bench"
    with start_agent_server(DEFECTS) as agent:
        res = CliRunner().invoke(main, ["bench", "--backend", "http", "--config", AGENT, "--opt",
                                        f"base_url={agent.base_url}", "--seeds", str(seeds), "--budget", "80",
                                        "--runs", "1", "--strategies", "full,no-feedback", "--out", str(out)])
    assert res.exit_code == 0, res.output
    head = next(line for line in res.output.splitlines() if line.startswith("strategy"))
    assert "responses" in head and "Cov@" not in head
    assert "distinct responses" in res.output and "coverage" not in res.output
    md = (out / "bench.md").read_text()
    assert "retrieval hidden: responses only are observed and judged" in md


def test_bench_refuses_settings_that_do_not_fit(tmp_path):
    res = CliRunner().invoke(main, ["bench", "--retrieval-visibility", "hidden", "--llm-uses", "answer",
                                    "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "--llm-uses needs --llm-base-url" in res.output
    assert not (tmp_path / "b").exists()
