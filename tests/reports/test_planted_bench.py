"""`ufuzz bench --planted`: strategies measured on the planted defects (ufuzz.backends.adapters.planted) — what it reports
is what the campaigns on the defective builds and their clean twins recorded."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from ufuzz.backends.adapters.planted import CLASSES
from ufuzz.cli import main
from ufuzz.corpus.failures import FailureStore
from ufuzz.corpus.store import CorpusStore
from ufuzz.reports.planted import PlantedConfig, render_planted, run_planted

PAIRS = ("delete-hides", "low-threshold")


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    out = tmp_path_factory.mktemp("planted") / "out"
    cfg = PlantedConfig(budget=120, runs=1, strategies=("full", "state-only"), out=str(out), pairs=PAIRS)
    lines: list[str] = []
    return run_planted(cfg, echo=lines.append), out, lines


def _class_failures(run_dir: Path, pair: str) -> list:
    """The planted class's failures a campaign directory recorded, read back from its store."""
    summary = json.loads((run_dir / "summary.json").read_text())
    url = f"sqlite:///{run_dir / 'corpus.sqlite'}"
    store = CorpusStore(url)
    targets = {m.case_id: m.target for m in store.mutants(summary["campaign"])}
    store.close()
    with FailureStore(url, summary["campaign"]) as fs:
        mine = [f for f in fs.failures() if f.origin == "mutant" and f.counts]
    return [f for f in mine if CLASSES[pair].holds(SimpleNamespace(kind=f.kind, operator=f.operator,
                                                                   target=targets.get(f.case_id) or ""))]


def test_what_it_reports_is_what_the_campaigns_recorded(planted):
    result, out, lines = planted
    assert len(result["runs"]) == 4 and len(lines) == 4
    for r in result["runs"]:
        base = out / "runs" / r["pair"] / r["strategy"]
        bad, good = base / f"planted-r0-s{r['seed']}", base / f"clean-r0-s{r['seed']}"
        found = _class_failures(bad, r["pair"])
        assert r["found"] == bool(found)
        if found:
            assert r["first"] == min(f.first_seq for f in found)
        assert r["false_findings"] == len(_class_failures(good, r["pair"])) == 0
    full = result["strategies"]["full"]
    # the full method finds both planted bugs within 120 executions; state-only cannot ask an unsupported question
    assert full["bugs_found"] == {"mean": 2.0, "min": 2, "of": 2} and full["false_findings"] == 0
    assert result["strategies"]["state-only"]["classes"]["low-threshold"]["found_runs"] == 0
    assert result["strategies"]["state-only"]["classes"]["delete-hides"]["found_runs"] == 1


def test_table_and_files(planted):
    result, out, _ = planted
    table = render_planted(result).splitlines()
    assert table[0].split()[:5] == ["strategy", "runs", "bugs", "found", "delete-hides"]
    assert table[2].startswith("full") and "2.0 of 2" in table[2] and table[2].endswith("0")
    on_disk = json.loads((out / "planted.json").read_text())
    assert on_disk["strategies"] == json.loads(json.dumps(result["strategies"]))
    md = (out / "planted.md").read_text().splitlines()
    assert [line for line in md if line.startswith("| full |")]


def test_the_package_does_not_import_the_tests():
    root = Path(__file__).resolve().parents[2] / "ufuzz"
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n == "tests" or n.startswith("tests.") for n in names), path


def test_cli_planted_bad_input(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["bench", "--planted", "--seeds", "x.jsonl", "--out", str(tmp_path / "p")])
    assert res.exit_code == 2 and "--planted runs its own backends" in res.output and "--seeds" in res.output
    res = runner.invoke(main, ["bench", "--planted", "--strategies", "full,bogus", "--out", str(tmp_path / "p")])
    assert res.exit_code == 2 and "'bogus'" in res.output
