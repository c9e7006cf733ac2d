"""Progress for people and CI, the time limit, plot data written during the run, `ufuzz strategies`."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ufuzz.cli import main
from ufuzz.cli.progress import PlainProgress, format_duration, parse_duration, progress_line
from ufuzz.corpus.store import CorpusStore
from ufuzz.engine.plotdata import COLUMNS, read_plot_data
from ufuzz.engine.strategies import strategy_names


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("text, seconds", [("600", 600), ("90s", 90), ("30m", 1800), ("2h", 7200),
                                           ("1h30m", 5400), ("0.5", 0.5), (" 2M ", 120)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "abc", "10x", "-5", "0", "1h30", "m"])
def test_parse_duration_rejects(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


@given(st.integers(0, 10 ** 6))
def test_format_duration_round_trips_through_parse(n):
    text = format_duration(n)
    assert n == 0 or abs(parse_duration(text) - n) < 60  # minutes are kept above an hour


def _progress(n: int, budget: int = 100) -> SimpleNamespace:
    return SimpleNamespace(executions=n, budget=budget, coverage=n // 2, coverage_total=50, unique_failures=n // 10,
                           causes=n // 20, errors=0)


def test_plain_progress_every_10_seconds_or_n_executions():
    now = [0.0]
    out = io.StringIO()
    plain = PlainProgress(out, every_s=10, every_n=25, clock=lambda: now[0])
    for n in range(1, 101):
        now[0] = n * 0.3  # 30 s for 100 executions
        plain.update(_progress(n))
    plain.finish(_progress(100))
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("[ufuzz] execs 100/100 (100%)")
    execs = [int(line.split()[2].split("/")[0]) for line in lines]
    assert execs == sorted(execs) and execs[-1] == 100
    assert all(b - a <= 25 for a, b in zip([0, *execs], execs))  # never more than N executions apart
    assert len(lines) <= 100 // 25 + 30 // 10 + 1


def test_progress_line_has_rate_elapsed_eta_failures_and_causes():
    line = progress_line(_progress(40), elapsed=20.0, max_time=60.0)
    for part in ("execs 40/100 (40%)", "2.0/s", "elapsed 20s/1m00s", "ETA 30s", "unique failures 4", "causes 2",
                 "coverage 20/50", "errors 0"):
        assert part in line
    assert "ETA 5s" in progress_line(_progress(40), elapsed=55.0, max_time=60.0)  # the time limit comes first


def test_max_time_stops_cleanly_with_status_time_limit(tmp_path):
    out = tmp_path / "c"
    r = invoke("run", "--budget", 1000000, "--max-time", "3s", "--out", out, "--opt", "retrieval=bm25",
               "--progress-every", 50)
    assert r.exit_code == 5, r.output  # the exit code of a campaign that ran out of time
    assert "time limit" in r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["status"] == "time_limit" and 0 < s["executions"] < 1000000
    store = CorpusStore(f"sqlite:///{out / 'corpus.sqlite'}")
    try:
        assert store.campaign(s["campaign"]).status == "time_limit"
    finally:
        store.close()
    rows = read_plot_data(out / "plot_data.csv")
    assert rows and list(rows[0]) == list(COLUMNS)
    last = rows[-1]
    assert (last["executions"], last["unique_failures"], last["coverage"]) == \
        (s["executions"], s["unique_failures"], s["coverage"])
    for a, b in zip(rows, rows[1:]):
        assert b["executions"] >= a["executions"] and b["unique_failures"] >= a["unique_failures"]
        assert b["elapsed_s"] >= a["elapsed_s"]
    r = invoke("run", "--max-time", "soon", "--out", tmp_path / "x", "--quiet")
    assert r.exit_code == 2 and "--max-time" in r.output and not (tmp_path / "x").exists()


def test_without_a_terminal_progress_goes_to_stderr(tmp_path):
    runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()
    r = runner.invoke(main, ["run", "--budget", "120", "--out", str(tmp_path / "c"), "--opt", "retrieval=bm25",
                             "--progress-every", "40"])
    assert r.exit_code == 0, r.output
    err = r.stderr
    lines = [x for x in err.splitlines() if x.startswith("[ufuzz] execs")]
    assert len(lines) >= 3 and lines[-1].startswith("[ufuzz] execs 120/120")
    assert "[ufuzz]" not in r.stdout


def test_strategies_lists_every_strategy_and_ablation():
    r = invoke("strategies")
    assert r.exit_code == 0
    for name in strategy_names():
        assert any(line.split()[:1] == [name] for line in r.output.splitlines())
    rows = json.loads(invoke("strategies", "--json").output)
    assert [x["name"] for x in rows] == strategy_names()
    groups = {x["name"]: x["group"] for x in rows}
    assert groups["full"] == "strategy" and groups["random"] == "baseline" and groups["no-paraphrase"] == "ablation"
    assert "ufuzz strategies" in invoke("run", "--help").output
