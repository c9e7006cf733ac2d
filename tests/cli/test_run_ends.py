"""`ufuzz run` tells how a campaign ended by its exit code and a message, never a traceback; a failed
preflight spends nothing; `--resume` continues what ended early and refuses what it cannot continue."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufuzz.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "product.toml"
BM25 = ["--opt", "retrieval=bm25"]


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_an_unreachable_http_product_fails_its_preflight_and_spends_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PRODUCT_API_TOKEN", "t0k3n")
    out = tmp_path / "camp"
    res = CliRunner().invoke(main, ["run", "--backend", "http", "--config", str(EXAMPLE), "--opt",
                                    f"base_url=http://127.0.0.1:{_closed_port()}", "--budget", "50", "--out",
                                    str(out), "--quiet"])
    assert res.exit_code == 3, res.output
    assert "unreachable or broken: its preflight round trip failed" in res.output
    assert "building a 2-memory scratch checkpoint failed" in res.output and "Connection refused" in res.output
    assert "Traceback" not in res.output
    assert not out.exists()  # nothing recorded, nothing left behind


def test_a_json_path_the_products_answers_do_not_have_is_bad_input_not_a_broken_product(tmp_path, monkeypatch):
    """Held-out product walkthrough: a typo in a search path exited 3, the code of a product that is down."""
    from tests.support.http_product_server import start_product_server

    monkeypatch.setenv("PRODUCT_API_TOKEN", "t0k3n")
    typo = tmp_path / "product.toml"
    typo.write_text(EXAMPLE.read_text().replace('ids = "$.results[*].id"', 'ids = "$.result[*].id"'))
    assert typo.read_text() != EXAMPLE.read_text()
    out = tmp_path / "camp"
    with start_product_server("t0k3n") as srv:
        res = CliRunner().invoke(main, ["run", "--backend", "http", "--config", str(typo), "--opt",
                                        f"base_url={srv.base_url}", "--budget", "20", "--out", str(out), "--quiet"])
    assert res.exit_code == 2, res.output
    assert "answers in another shape than its configuration describes" in res.output
    assert "$.result[*].id" in res.output and "searching failed" in res.output and "Traceback" not in res.output
    assert not out.exists()


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_a_listing_that_pages_without_its_config_saying_how_is_bad_input_at_the_preflight(tmp_path, monkeypatch,
                                                                                          isolation):
    """Walkthrough leftover: the preflight's two-memory state fits in any page, so a product that pages its listing
    (here 10 a page) passed it and the campaign then spent itself on errors, exit 3. The preflight builds the
    campaign's largest checkpoint too: exit 2, saying what to configure, nothing left behind — also through the
    worker process of ``--isolation process``."""
    from tests.support.http_product_server import start_product_server

    monkeypatch.setenv("PRODUCT_API_TOKEN", "t0k3n")
    out = tmp_path / "camp"
    with start_product_server("t0k3n") as srv:
        srv.page_size = 10  # the shipped suite's checkpoints hold 30 memories and more
        res = CliRunner().invoke(main, ["run", "--backend", "http", "--config", str(EXAMPLE), "--opt",
                                        f"base_url={srv.base_url}", "--budget", "20", "--out", str(out), "--quiet",
                                        "--isolation", isolation])
    assert res.exit_code == 2, res.output
    assert "building the largest checkpoint" in res.output and "[list] next or cursor" in res.output
    assert "compare the JSON path" not in res.output and "Traceback" not in res.output
    assert not out.exists()


def test_a_product_whose_copy_gives_memories_new_ids_is_refused_at_the_preflight(tmp_path, monkeypatch):
    """Product walkthrough: a correct product whose snapshot stored the copy under ids it minted anew ran to the end
    (exit 0) and reported 25 memories "removed" by each unrelated add — every state operation addressed ids the copy
    no longer had. The preflight lists the copy: exit 3 saying what the copy did, nothing left behind; the same
    product without [snapshot] (states rebuilt) runs."""
    from tests.support.http_product_server import start_product_server

    monkeypatch.setenv("PRODUCT_API_TOKEN", "t0k3n")
    out = tmp_path / "camp"
    with start_product_server("t0k3n", snapshot_new_ids=True) as srv:
        res = CliRunner().invoke(main, ["run", "--backend", "http", "--config", str(EXAMPLE), "--opt",
                                        f"base_url={srv.base_url}", "--budget", "20", "--out", str(out), "--quiet"])
        assert res.exit_code == 3, res.output
        assert "does not hold the original's memories under their ids" in res.output
        assert "remove [snapshot]" in res.output and "Traceback" not in res.output
        assert not out.exists()
        rebuilt = tmp_path / "product.toml"
        text = EXAMPLE.read_text()
        start = text.index("[snapshot]")
        rebuilt.write_text(text[:start] + text[text.index("\n[", start + 1) + 1:])
        assert "[snapshot]" not in rebuilt.read_text()
        res = CliRunner().invoke(main, ["run", "--backend", "http", "--config", str(rebuilt), "--opt",
                                        f"base_url={srv.base_url}", "--budget", "20", "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output


def test_an_unreachable_llm_endpoint_fails_the_preflight(tmp_path):
    out = tmp_path / "camp"
    res = CliRunner().invoke(main, ["run", "--budget", "20", "--out", str(out), "--quiet", *BM25,
                                    "--llm-base-url", f"http://127.0.0.1:{_closed_port()}/v1", "--llm-model", "m",
                                    "--llm-uses", "answer"])
    assert res.exit_code == 3, res.output
    assert "reaching the LLM endpoint" in res.output and "cannot reach LLM server" in res.output
    assert not out.exists() and "Traceback" not in res.output


def test_a_campaign_ending_in_ufuzzs_own_error_exits_70_with_its_message_and_no_traceback(tmp_path, monkeypatch):
    """A fault of ufuzz's own is not "the environment" (3, which a nightly job reads as a product that is down):
    it exits 70, says it is a bug of ufuzz's and where the traceback is (new-user walkthrough: an RBO error on a
    product's repeated results exited 3 and the CI job reported the product unreachable)."""
    from ufuzz.oracles import oracle as oracle_mod

    calls = [0]
    original = oracle_mod.judge_case

    def judge_case(*args, **kw):
        calls[0] += 1
        if calls[0] == 5:
            raise TypeError("unsupported operand type(s) for +: 'float' and 'str'")
        return original(*args, **kw)

    monkeypatch.setattr(oracle_mod, "judge_case", judge_case)
    out = tmp_path / "camp"
    res = CliRunner().invoke(main, ["run", "--budget", "40", "--out", str(out), "--quiet", *BM25])
    assert res.exit_code == 70, res.output
    assert "error: internal error (a bug in ufuzz, not the system under test): TypeError: unsupported operand " \
           "type(s) for +: 'float' and 'str'" in res.output
    assert f"please report it with {out / 'campaign.log'}" in res.output
    assert f"continue with: ufuzz run --resume {out}" in res.output
    assert "Traceback" not in res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "error" and summary["exit_code"] == 70
    monkeypatch.undo()
    res = CliRunner().invoke(main, ["run", "--resume", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "budget spent: 40 executions" in res.output


_FAULTY = r"""
import sys
from ufuzz.backends import registry
from ufuzz.cli import main
from tests.support.faulty_backends import FaultyBackend

registry.register("faulty", FaultyBackend)
main(sys.argv[1:])
"""


def _ufuzz(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", _FAULTY, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_consecutive_backend_errors_stop_the_campaign_then_it_resumes(tmp_path):
    out = tmp_path / "camp"
    # the preflight searches twice (the state, and the original after writes to its copy): faults come after
    run = _ufuzz("run", "--backend", "faulty", "--opt", "retrieval=bm25", "--opt", "fail_op=retrieve",
                 "--opt", "fail_after=2", "--budget", "200", "--max-consecutive-errors", "7", "--out", str(out),
                 "--quiet")
    assert run.returncode == 3, run.stderr
    assert "backend errors in a row (--max-consecutive-errors 7); the last: BackendError: injected fault in " \
           "retrieve" in run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    status = _ufuzz("status", str(out))
    assert re.search(r"ended in error: \d+ backend errors in a row", status.stdout)  # 7 or more: checked per batch
    # the backend is fixed: the same campaign goes on to its budget
    again = _ufuzz("run", "--resume", str(out), "--opt", "fail_op=none", "--quiet")
    assert again.returncode == 0, again.stderr
    assert "budget spent: 200 executions" in again.stdout
    status = _ufuzz("status", str(out))
    assert "ended: budget spent; resumed 1 time(s)" in status.stdout


def test_resume_refuses_what_it_cannot_continue(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["run", "--resume", str(tmp_path / "nothing"), "--quiet"])
    assert res.exit_code == 2 and "no such campaign directory" in res.output
    empty = tmp_path / "empty"
    empty.mkdir()
    res = runner.invoke(main, ["run", "--resume", str(empty), "--quiet"])
    assert res.exit_code == 2 and "no campaign to resume here" in res.output
    out = tmp_path / "camp"
    assert runner.invoke(main, ["run", "--budget", "15", "--out", str(out), "--quiet", *BM25]).exit_code == 0
    res = runner.invoke(main, ["run", "--resume", str(out), "--quiet"])
    assert res.exit_code == 2 and "already spent its budget of 15 executions" in res.output
    res = runner.invoke(main, ["run", "--resume", str(out), "--seed", "3", "--strategy", "random"])
    assert res.exit_code == 2 and "--seed, --strategy cannot be changed" in res.output
    res = runner.invoke(main, ["run", "--resume", str(out), "--budget", "25", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "budget spent: 25 executions" in res.output
