"""`ufuzz bench`: the strategy comparison's numbers, files and plot, checked against the run campaigns."""

from __future__ import annotations

import json
import statistics
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufuzz.cli import main
from ufuzz.corpus.failures import FailureStore
from ufuzz.corpus.store import CorpusStore
from ufuzz.oracles.classes import class_of
from ufuzz.reports.bench import BenchConfig, budgets_of, compare, parse_strategies, render_table, run_bench
from ufuzz.reports.plot import Panel, Series, inline_svg, line_chart_svg

SVG = "{http://www.w3.org/2000/svg}"
BUDGET = 150


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "out"
    cfg = BenchConfig(backend="embedded", budget=BUDGET, runs=2, strategies=("full", "random"), out=str(out))
    lines: list[str] = []
    result = run_bench(cfg, echo=lines.append)
    return result, out, lines


def test_budgets():
    assert budgets_of(150) == [37, 75, 112, 150]
    assert budgets_of(8000) == [2000, 4000, 6000, 8000]
    assert budgets_of(2) == [1, 2]


def test_parse_strategies():
    from ufuzz.engine.strategies import strategy_names

    assert parse_strategies("full, random,full") == ("full", "random")
    assert parse_strategies("all") == tuple(strategy_names())
    with pytest.raises(ValueError, match="'bogus'"):
        parse_strategies("full,bogus")


def test_shape_of_the_result(bench):
    result, out, lines = bench
    assert set(result["strategies"]) == {"full", "random"}
    assert len(result["runs"]) == 4 and len(lines) == 4
    assert [(r["strategy"], r["seed"]) for r in result["runs"]] == [("full", 0), ("random", 0), ("full", 1),
                                                                    ("random", 1)]
    assert list(result["strategies"]) == ["full", "random"]
    assert result["config"]["budgets"] == [37, 75, 112, 150]
    assert result["partial"] is False and result["interrupted"] is False
    on_disk = json.loads((out / "bench.json").read_text())
    assert on_disk["strategies"].keys() == result["strategies"].keys()
    assert on_disk["runs"][0]["at"] == result["runs"][0]["at"]


def test_run_numbers_agree_with_the_run_campaigns(bench):
    result, _, _ = bench
    for r in result["runs"]:
        d = Path(r["dir"])
        summary = json.loads((d / "summary.json").read_text())
        url = f"sqlite:///{d / 'corpus.sqlite'}"
        assert summary["campaign"] == r["campaign"]
        assert r["executions"] == summary["executions"] == BUDGET
        assert r["unique_failures"] == summary["unique_failures"]
        with FailureStore(url, r["campaign"]) as fs:
            recorded = fs.failures()
        failures = [f for f in recorded if f.origin == "mutant" and f.counts]
        assert len(failures) == r["unique_failures"]
        assert len({f.cause_key for f in failures}) == r["causes"] == summary["causes"]
        classes = {class_of(f.operator, f.stage, f.kind).id for f in failures}
        assert r["classes"] == len(classes) == len(r["by_class"]) and set(r["by_class"]) == classes
        assert sum(c["unique"] for c in r["by_class"].values()) == r["unique_failures"]
        assert sum(c["causes"] for c in r["by_class"].values()) == r["causes"]
        assert sum(1 for f in recorded if f.origin == "baseline") == r["baseline_failures"]
        for b in budgets_of(BUDGET):  # UF@b = failures first seen within b executions
            assert r["at"][str(b)]["unique_failures"] == sum(1 for f in failures if f.first_seq <= b)
        store = CorpusStore(url)
        cov = store.summary(r["campaign"])["coverage"]
        store.close()
        assert r["coverage_total"] == cov["total"] == result["suite"]["memories"]
        assert r["at"][str(BUDGET)]["coverage_reached"] == r["coverage_reached"] == cov["reached"]
        assert r["at"][str(BUDGET)]["coverage"] == pytest.approx(cov["ratio"])
        ufs = [r["at"][str(b)]["unique_failures"] for b in budgets_of(BUDGET)]
        covs = [r["at"][str(b)]["coverage"] for b in budgets_of(BUDGET)]
        assert ufs == sorted(ufs) and covs == sorted(covs) and 0 < covs[0] and covs[-1] <= 1
        # replay of every unique failure (deterministic backend: all of them)
        assert r["replay"]["total"] == len(recorded)
        assert r["replay"]["reproduced"] == r["replay"]["total"]


def test_aggregates_are_mean_and_sample_std_of_the_runs(bench):
    result, _, _ = bench
    for name, agg in result["strategies"].items():
        rs = [r for r in result["runs"] if r["strategy"] == name]
        assert agg["runs"] == 2
        for b in budgets_of(BUDGET):
            uf = [r["at"][str(b)]["unique_failures"] for r in rs]
            cov = [r["at"][str(b)]["coverage"] for r in rs]
            assert agg[f"uf@{b}"]["mean"] == pytest.approx(statistics.fmean(uf))
            assert agg[f"uf@{b}"]["std"] == pytest.approx(statistics.stdev(uf))
            assert agg[f"cov@{b}"]["mean"] == pytest.approx(statistics.fmean(cov))
            assert agg[f"cov@{b}"]["std"] == pytest.approx(statistics.stdev(cov))
        assert agg["reproduced"]["total"] == sum(r["replay"]["total"] for r in rs)
        assert agg["causes"]["mean"] == pytest.approx(statistics.fmean(r["causes"] for r in rs))
        curve = agg["curve"]
        assert curve["executions"][0] == 0 and curve["executions"][-1] == BUDGET
        assert curve["unique_failures"][0] == 0
        assert curve["unique_failures"][-1] == pytest.approx(agg[f"uf@{BUDGET}"]["mean"])
        assert curve["coverage"][-1] == pytest.approx(agg[f"cov@{BUDGET}"]["mean"])
        assert curve["unique_failures"] == sorted(curve["unique_failures"])


def test_sharing_the_backend_does_not_change_a_run(bench, tmp_path):
    """A run of the bench (one backend shared by all runs) equals the same campaign on its own backend."""
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.engine.strategies import apply_strategy

    result, _, _ = bench
    rec = next(r for r in result["runs"] if r["strategy"] == "random" and r["seed"] == 1)
    cfg = apply_strategy(CampaignConfig(backend="embedded", budget=BUDGET, seed=1, out=str(tmp_path / "alone")),
                         "random")
    alone = Campaign(cfg).run()
    shared = json.loads((Path(rec["dir"]) / "summary.json").read_text())
    assert alone["failures"] == shared["failures"]
    assert alone["coverage"] == shared["coverage"]


def test_table_and_markdown(bench):
    result, out, _ = bench
    text = render_table(result).splitlines()
    table = text[:4]
    assert table[0].split()[:6] == ["strategy", "runs", "UF@37", "UF@75", "UF@112", "UF@150"]
    assert "classes" in table[0].split() and not text[4]
    assert table[2].startswith("full") and table[3].startswith("random")
    assert text[-1].startswith("Mann-Whitney U / A12: not computed (2 run(s) of 'full'")
    assert result["tests"] == {"skipped": "2 run(s) of 'full': the test needs at least 5"}
    agg = result["strategies"]["full"]
    assert f"{agg['uf@150']['mean']:.1f} ± {agg['uf@150']['std']:.1f}" in table[2]
    md = (out / "bench.md").read_text().splitlines()
    rows = [line for line in md if line.startswith("|")]
    assert len(rows) == 4 and md[-1].startswith("Mann-Whitney U / A12: not computed")
    assert rows[0] == "| " + " | ".join(table[0].split()) + " |"
    assert {row.count("|") for row in rows} == {rows[0].count("|")}
    assert rows[2].startswith("| full | 2 |") and rows[3].startswith("| random | 2 |")


def _points(g) -> list[tuple[float, float]]:
    """The vertices of a series group's path (matplotlib writes ``M x y L x y ...``)."""
    path = g.find(f"{SVG}path")
    nums = [float(t) for t in path.get("d").replace("M", " ").replace("L", " ").split()]
    return list(zip(nums[0::2], nums[1::2]))


def test_curves_svg_is_well_formed_with_one_line_per_strategy_and_panel(bench):
    _, out, _ = bench
    root = ET.parse(out / "curves.svg").getroot()
    assert root.tag == f"{SVG}svg"
    groups = {g.get("id"): g for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith("series-")}
    # two panels (unique failures, coverage), one series per strategy in each, strategies in bench order
    assert sorted(groups) == ["series-0-0", "series-0-1", "series-1-0", "series-1-1"]
    for g in groups.values():
        pts = _points(g)
        assert len(pts) == BUDGET + 1  # the mean curve's grid: every execution up to 150
        xs = [x for x, _ in pts]
        assert xs == sorted(xs)
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert {"full", "random", "Unique failures", "Coverage"} <= texts  # legend and titles stay text
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_svg_writer_escapes_scales_and_is_deterministic():
    panels = [Panel("a < b & c", "x", "y", [Series('s"1<$x$', [0, 1, 2], [0, 5, 3])])]
    svg = line_chart_svg(panels, title="t&t")
    assert svg == line_chart_svg(panels, title="t&t")  # no date, fixed hash salt
    root = ET.fromstring(svg)
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert {"a < b & c", 's"1<$x$', "t&t"} <= texts  # escaped by the writer, no mathtext for '$'
    g = next(g for g in root.iter(f"{SVG}g") if g.get("id") == "series-0-0")
    ys = [y for _, y in _points(g)]
    assert ys[1] < ys[2] < ys[0]  # SVG y grows downwards: the largest value is highest
    inline = inline_svg(svg, "c1")
    assert inline.startswith("<svg") and 'id="c1-series-0-0"' in inline
    ids = [i for i in ET.fromstring(inline).iter() if i.get("id")]
    assert all(i.get("id").startswith("c1-") for i in ids)


def test_cli_bench_smoke_and_bad_input(tmp_path):
    runner = CliRunner()
    out = tmp_path / "b"
    res = runner.invoke(main, ["bench", "--budget", "30", "--runs", "1", "--strategies", "full,state-only",
                               "--no-replay", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "UF@30" in res.output and "state-only" in res.output
    data = json.loads((out / "bench.json").read_text())
    assert data["config"]["replay"] is False and all(r["replay"] is None for r in data["runs"])
    assert (out / "bench.md").is_file() and (out / "curves.svg").is_file()
    res = runner.invoke(main, ["bench", "--strategies", "full,bogus", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "'bogus'" in res.output
    res = runner.invoke(main, ["bench", "--seeds", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "none.jsonl" in res.output
    res = runner.invoke(main, ["bench", "--opt", "retrieval=sparse", "--budget", "5", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "retrieval" in res.output


def _fake(strategy: str, uf: int, causes: int, classes: int, cov: float, seed: int) -> dict:
    return {"strategy": strategy, "seed": seed, "causes": causes, "classes": classes,
            "at": {"100": {"unique_failures": uf, "coverage": cov}}}


def test_compare_full_against_each_baseline():
    runs = [_fake("full", 10 + i, 8 + i, 3, 0.5, i) for i in range(5)]
    runs += [_fake("random", i, i, 3, 0.6, i) for i in range(5)]
    runs += [_fake("state-only", 0, 0, 0, 0.5, i) for i in range(4)]  # too few runs to test
    tests = compare(runs, 100)
    assert set(tests) == {"random"}
    row = tests["random"]
    assert row["uf"]["a12"] == 1.0 and row["uf"]["p"] == pytest.approx(2 / 252)  # every full run beats every random
    assert row["causes"]["a12"] == 1.0
    assert row["classes"] == {"a12": 0.5, "p": 1.0, "u": 12.5, "runs": [5, 5]}  # all equal: no difference
    assert row["cov"]["a12"] == 0.0  # random reaches more: A12 of full is 0
    assert compare(runs[5:], 100) == {"skipped": "no 'full' runs to compare against"}
    result = {"config": {"budget": 100, "strategies": ["full", "random"]}, "tests": tests,
              "strategies": {"full": {}, "random": {}}}
    from ufuzz.reports.bench import _test_rows

    head, rows = _test_rows(result)
    assert head == ["full vs", "UF@100 A12 (p)", "causes A12 (p)", "classes A12 (p)", "Cov@100 A12 (p)"]
    assert rows == [["random", "1.00 (0.008)", "1.00 (0.008)", "0.50 (1.000)", "0.00 (0.008)"]]
