"""Exit codes by class, for every command (``ufuzz/cli/errors.py``): bad input 2, an environment that cannot be
used 3 (a database server that does not answer, a corpus locked by another writer), an interrupt 130 — also
during start-up, for every command — and never click's "Aborted!" (exit 1, which CI reads as "failures found")
nor a traceback. Read-only commands write nothing into a file ufuzz did not create."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ufuzz.cli import main

#: a PostgreSQL URL on a port nothing listens on: the server does not answer
DOWN = "postgresql+psycopg://ufuzz@127.0.0.1:1/corpus"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("camp") / "c"
    r = CliRunner().invoke(main, ["run", "--budget", "30", "--seed", "1", "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    return out


def _invoke(argv: list[str]) -> click.testing.Result:
    return CliRunner().invoke(main, argv, catch_exceptions=False)


def _foreign(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    return path


def _journal_mode(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()


# (command, argv from (tmp, campaign), what the message names)
BAD_INPUT = [
    ("run --config DIR", lambda t, c: ["run", "--budget", "5", "--out", str(t / "o"), "--config", str(t)],
     "is a directory"),
    ("run --seeds", lambda t, c: ["run", "--budget", "5", "--out", str(t / "o"),
                                  "--seeds", str(_write(t / "s.jsonl", '{"kind": "seed"}\n'))], "s.jsonl:1:"),
    ("run --resume", lambda t, c: ["run", "--resume", str(t)], "--resume"),
    ("status", lambda t, c: ["status", str(t / "none")], "CAMPAIGN_DIR"),
    ("replay", lambda t, c: ["replay", str(t / "none")], "CAMPAIGN_DIR"),
    ("failures list", lambda t, c: ["failures", "list", str(t)], "no corpus.sqlite"),
    ("failures show", lambda t, c: ["failures", "show", str(c), "zzzz"], "KEY"),
    ("failures list --kind", lambda t, c: ["failures", "list", str(c), "--kind", "nosuchkind"], "--kind"),
    ("failures list --operator", lambda t, c: ["failures", "list", str(c), "--operator", "nosuchop"],
     "--operator"),
    ("failures list --level", lambda t, c: ["failures", "list", str(c), "--level", "nosuchlevel"], "--level"),
    ("minimise", lambda t, c: ["minimise", str(c), "zzzz"], "zzzz"),
    ("report", lambda t, c: ["report", str(t)], "no corpus.sqlite"),
    ("corpus export", lambda t, c: ["corpus", "export", str(t), "-o", str(t / "x.jsonl")], "no corpus.sqlite"),
    ("corpus check", lambda t, c: ["corpus", "check", str(_write(t / "x.jsonl", "{\n"))], "x.jsonl:1"),
    ("corpus accept", lambda t, c: ["corpus", "accept", str(_write(t / "x.jsonl", "{\n")),
                                    "--from", str(t / "none.json")], "x.jsonl:1"),
    ("seeds check", lambda t, c: ["seeds", "check", str(_write(t / "s.jsonl", "not json\n"))], "s.jsonl:1"),
    ("seeds synth", lambda t, c: ["seeds", "synth", "-o", str(t)], "is a directory"),
    ("seeds import", lambda t, c: ["seeds", "import", "nosuch", str(t / "x")], "FORMAT"),
    ("backends check", lambda t, c: ["backends", "check", "nosuch"], "NAME"),
    ("cache stats", lambda t, c: ["cache", "stats", "--path", str(_write(t / "cache", "garbage" * 300))],
     "not an LLM call cache"),
    ("bench", lambda t, c: ["bench", "--opt", "retrieval=sparse", "--budget", "5", "--out", str(t / "b")],
     "retrieval"),
]


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name, argv, needle", BAD_INPUT, ids=[b[0] for b in BAD_INPUT])
def test_bad_input_exits_2_for_every_command(tmp_path, campaign, name, argv, needle):
    r = _invoke(argv(tmp_path, campaign))
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output


ENVIRONMENT = [
    ("run --db", ["run", "--budget", "5", "--out", "{t}/o", "--db", DOWN]),
    ("status", ["status", "{c}", "--db", DOWN]),
    ("replay", ["replay", "{c}", "--db", DOWN]),
    ("failures list", ["failures", "list", "{c}", "--db", DOWN]),
    ("report", ["report", "{c}", "--db", DOWN, "-o", "{t}/r.html"]),
    ("corpus export", ["corpus", "export", "{c}", "--db", DOWN, "-o", "{t}/x.jsonl"]),
    ("minimise", ["minimise", "{c}", "zzzz", "--db", DOWN]),
]


@pytest.mark.parametrize("name, argv", ENVIRONMENT, ids=[e[0] for e in ENVIRONMENT])
def test_a_database_that_does_not_answer_exits_3(tmp_path, campaign, name, argv):
    r = _invoke([a.format(t=tmp_path, c=campaign) for a in argv])
    assert r.exit_code == 3, r.output
    assert "127.0.0.1" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "o").exists()


@pytest.fixture
def locked(tmp_path, campaign, monkeypatch):
    """A copy of the campaign whose corpus another process holds a write lock on."""
    import shutil

    from ufuzz.corpus import store

    monkeypatch.setattr(store, "BUSY_TIMEOUT_MS", 200)  # the real wait is 10 s
    copy = tmp_path / "locked"
    shutil.copytree(campaign, copy)
    holder = sqlite3.connect(copy / "corpus.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    yield copy
    holder.execute("ROLLBACK")
    holder.close()


def test_a_locked_corpus_exits_3_for_run_and_resume(tmp_path, locked):
    r = _invoke(["run", "--resume", str(locked), "--budget", "40", "--quiet"])
    assert r.exit_code == 3, r.output
    assert "locked" in r.output and "Traceback" not in r.output
    r = _invoke(["run", "--budget", "5", "--out", str(tmp_path / "o"), "--quiet",
                 "--db", f"sqlite:///{locked / 'corpus.sqlite'}"])
    assert r.exit_code == 3, r.output
    assert "locked" in r.output and "Traceback" not in r.output


def test_a_locked_corpus_can_still_be_read(locked):
    r = _invoke(["status", str(locked), "--json"])  # WAL: readers never wait for the writer
    assert r.exit_code == 0, r.output


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            out += _commands(cmd, (*prefix, name))
        else:
            out.append((*prefix, name))
    return out


def _command(path: tuple[str, ...]) -> click.Command:
    cmd: click.Command = main
    for name in path:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    return cmd


@pytest.mark.parametrize("path", _commands(main), ids=" ".join)
def test_an_interrupt_during_start_up_exits_130_for_every_command(path, tmp_path, monkeypatch):
    cmd = _command(path)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cmd, "callback", interrupted)
    (tmp_path / "f").write_text("")
    args = [p.type.choices[0] if isinstance(p.type, click.Choice)
            else str(tmp_path if getattr(p.type, "dir_okay", True) else tmp_path / "f")
            for p in cmd.params if isinstance(p, click.Argument) and p.required]
    options = [x for p in cmd.params if isinstance(p, click.Option) and p.required
               for x in (p.opts[0], str(tmp_path / "x"))]
    r = CliRunner().invoke(main, [*path, *args, *options])
    assert r.exit_code == 130, r.output
    assert "interrupted" in r.output and "Aborted" not in r.output


def test_an_interrupt_while_a_campaign_sets_up_leaves_nothing_and_exits_130(tmp_path, monkeypatch):
    from ufuzz.engine import preflight

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(preflight, "preflight", interrupted)
    out = tmp_path / "o"
    r = _invoke(["run", "--budget", "5", "--out", str(out), "--quiet"])
    assert r.exit_code == 130, r.output
    assert not out.exists()


def test_read_only_commands_write_nothing(tmp_path):
    empty = tmp_path / "c"
    empty.mkdir()
    (empty / "corpus.sqlite").write_bytes(b"")
    for argv in (["run", "--resume", str(empty)], ["status", str(empty)], ["replay", str(empty)]):
        r = _invoke(argv)
        assert r.exit_code == 2, (argv, r.output)
        assert (empty / "corpus.sqlite").stat().st_size == 0, argv  # no schema written into it
    foreign = tmp_path / "f"
    foreign.mkdir()
    _foreign(foreign / "corpus.sqlite")
    before = _journal_mode(foreign / "corpus.sqlite")
    for argv in (["run", "--resume", str(foreign)], ["status", str(foreign)], ["replay", str(foreign)]):
        r = _invoke(argv)
        assert r.exit_code == 2 and "not a ufuzz corpus" in r.output, (argv, r.output)
    assert _journal_mode(foreign / "corpus.sqlite") == before == "delete"  # no switch to WAL
    assert sorted(p.name for p in foreign.iterdir()) == ["corpus.sqlite"]
    cache = tmp_path / "cache.sqlite"
    cache.write_bytes(b"")
    r = _invoke(["cache", "stats", "--path", str(cache)])
    assert r.exit_code == 2 and "not an LLM call cache" in r.output
    assert cache.stat().st_size == 0


def test_report_where_it_cannot_be_written_is_refused_before_the_work(tmp_path, campaign):
    (tmp_path / "afile").write_text("x")
    r = _invoke(["report", str(campaign), "-o", str(tmp_path / "afile" / "r.html")])
    assert r.exit_code == 2 and "'-o' / '--output'" in r.output and "is a file" in r.output, r.output
    assert "Traceback" not in r.output


def test_a_corpus_is_checked_on_another_backend_only_when_asked():
    committed = Path(__file__).resolve().parents[2] / "corpus" / "embedded-dense.jsonl"
    for argv in (["corpus", "check", str(committed), "--backend", "memos"],
                 ["corpus", "accept", str(committed), "--backend", "memos", "-o", "/nonexistent/x.jsonl"]):
        r = _invoke(argv)
        assert r.exit_code == 2, r.output
        assert "recorded on backend 'embedded'" in r.output and "--cross-backend" in r.output, r.output


def test_a_truncated_importer_file_is_refused_unless_partial_is_allowed(tmp_path):
    import json

    fixture = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "importers" / "locomo_sample.json"
    data = json.loads(fixture.read_text())
    whole = tmp_path / "whole.jsonl"
    assert _invoke(["seeds", "import", "locomo", str(fixture), "-o", str(whole)]).exit_code == 0
    for conv in data:  # cut every conversation after its first session; its evidence still points there
        for key in [k for k in conv["conversation"] if k.startswith("session_2")]:
            del conv["conversation"][key]
        conv["qa"] += [{"question": "q?", "answer": "a", "evidence": [f"D2:{i}"], "category": 1} for i in (1, 2, 3)]
    cut = _write(tmp_path / "cut.json", json.dumps(data))
    out = tmp_path / "o.jsonl"
    r = _invoke(["seeds", "import", "locomo", str(cut), "-o", str(out)])
    assert r.exit_code == 2 and "looks truncated" in r.output and "--allow-partial" in r.output, r.output
    assert not out.exists()
    r = _invoke(["seeds", "import", "locomo", str(cut), "-o", str(out), "--allow-partial"])
    assert r.exit_code == 0 and out.is_file() and "evidence_in_missing_session" in r.output, r.output


def test_backends_check_of_a_product_that_is_down_exits_3_naming_its_address(monkeypatch):
    """Walkthrough: with the product stopped, `backends check` printed seven ERROR rows and exited 1 — the code of
    a non-conformant product — where `run` and `corpus check` exit 3; and no message named the address."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("PRODUCT_API_TOKEN", "tok")
    root = Path(__file__).resolve().parents[2]
    r = CliRunner().invoke(main, ["backends", "check", "http", "--config", str(root / "examples" / "product.toml"),
                                  "--opt", f"base_url=http://127.0.0.1:{port}"])
    assert r.exit_code == 3, r.output
    assert "unreachable" in r.output and f"http://127.0.0.1:{port}" in r.output
