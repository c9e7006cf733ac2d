"""One writer per campaign directory, with two real processes: a second ``run``, ``run --force`` and
``--resume`` refuse a directory a live campaign writes (exit 3, nothing touched); once it has ended — or been
SIGKILLed, leaving its lock file behind — the directory is free again."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ufuzz.engine.dirlock import LOCK_NAME, DirectoryLock, DirectoryLocked, holder

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def _ufuzz(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ufuzz", *args], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=300)


def _start(out: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "ufuzz", "run", "--budget", "1000000", "--out", str(out),
                             "--quiet", "--no-preflight"], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 240
    while time.time() < deadline:
        log = out / "campaign.log"
        if log.exists() and '"event": "started"' in log.read_text():
            return proc
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.3)
    proc.kill()
    raise AssertionError("the campaign did not start")


def _files(out: Path) -> dict[str, int]:
    return {p.name: p.stat().st_ino for p in out.iterdir()}


def test_a_live_campaign_directory_is_refused_by_force_run_and_resume(tmp_path):
    out = tmp_path / "night"
    live = _start(out)
    try:
        who = holder(out)
        assert who is not None and who["pid"] == live.pid and who["campaign"]
        before = _files(out)
        for argv in (["run", "--budget", "5", "--out", str(out), "--force", "--quiet"],
                     ["run", "--budget", "5", "--out", str(out), "--quiet"],
                     ["run", "--resume", str(out), "--quiet"]):
            got = _ufuzz(*argv)
            assert got.returncode == 3, (argv, got.stdout, got.stderr)
            assert "is in use" in got.stderr and str(live.pid) in got.stderr, got.stderr
            assert "Traceback" not in got.stderr
        assert live.poll() is None  # still running, in its own files
        assert {k: v for k, v in _files(out).items() if k in before} == before
        assert not list(tmp_path.glob(".night.replaced-*"))
    finally:
        live.send_signal(signal.SIGINT)
        live.communicate(timeout=300)
    assert live.returncode == 130
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted" and holder(out) is None and not (out / LOCK_NAME).exists()
    # ended: it resumes, and the store and summary.json agree on it
    again = _ufuzz("run", "--resume", str(out), "--budget", str(summary["executions"] + 5), "--quiet")
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "summary.json").read_text())["executions"] == summary["executions"] + 5


def test_the_lock_of_a_killed_campaign_is_stale_and_force_replaces_it(tmp_path):
    out = tmp_path / "night"
    live = _start(out)
    live.send_signal(signal.SIGKILL)
    live.communicate(timeout=60)
    assert (out / LOCK_NAME).exists()  # left behind, but no process holds it
    assert holder(out) is None
    got = _ufuzz("run", "--budget", "5", "--out", str(out), "--force", "--quiet", "--no-preflight")
    assert got.returncode == 0, got.stderr
    assert json.loads((out / "summary.json").read_text())["executions"] == 5


def test_the_lock_is_exclusive_within_one_host(tmp_path):
    with DirectoryLock.acquire(tmp_path, "c1") as mine:
        assert holder(tmp_path)["campaign"] == "c1"
        child = subprocess.run([sys.executable, "-c", "import sys; from ufuzz.engine.dirlock import DirectoryLock\n"
                                "try:\n    DirectoryLock.acquire(sys.argv[1])\nexcept Exception as e:\n"
                                "    print(type(e).__name__, e)\n", str(tmp_path)],
                               env=ENV, capture_output=True, text=True, timeout=60)
        assert child.stdout.startswith("DirectoryLocked") and f"process {os.getpid()}" in child.stdout
        mine.beat()
    assert holder(tmp_path) is None and not (tmp_path / LOCK_NAME).exists()
    with DirectoryLock.acquire(tmp_path):  # free again
        pass


def test_another_hosts_lock_is_live_until_its_heartbeat_is_stale(tmp_path):
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": 1, "host": "elsewhere.example", "campaign": "c9"}))
    with pytest.raises(DirectoryLocked, match="elsewhere.example"):
        DirectoryLock.acquire(tmp_path)
    old = time.time() - 16 * 60
    os.utime(tmp_path / LOCK_NAME, (old, old))
    assert holder(tmp_path) is None
    with DirectoryLock.acquire(tmp_path, "mine"):
        assert holder(tmp_path)["campaign"] == "mine"


_IN_UFUZZ = re.compile(r"^import time:.*\|\s+ufuzz\.")  # a submodule: ufuzz/__main__.py is running


@pytest.mark.parametrize("inherited", ["default", "ignored"])
@pytest.mark.parametrize("delay", [0.0, 0.25, 0.8])
def test_ctrl_c_during_start_up_exits_130_without_aborted(tmp_path, delay, inherited):
    """A real SIGINT while the command is still starting (imports, seed loading): exit 130, one line — also
    when CPython has seen the interrupt pass through its import machinery (it would exit by SIGINT, -2), and
    when the command was started with SIGINT ignored (a background job of a non-interactive shell: CPython then
    installs no handler, and the interrupt was lost — the campaign ran to its budget).

    The delay counts from the first module of the command line imported (``-X importtime`` tells when): an
    interrupt that lands while CPython itself is still starting, or before ``ufuzz/__main__.py`` runs, ends in
    CPython's own message and exit 1 or -2, which no code of ufuzz's can change. The budget is one the campaign
    cannot spend before the interrupt lands, however late this process reads its output."""
    out = tmp_path / "c"
    disposition = signal.SIG_IGN if inherited == "ignored" else signal.SIG_DFL
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "ufuzz", "run", "--budget", "100000",
                             "--out", str(out), "--quiet"], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, disposition))
    seen = []
    for line in proc.stdout:  # import-time lines until ufuzz's own code runs
        seen.append(line)
        if _IN_UFUZZ.search(line):
            break
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    try:
        rest, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the interrupt was lost: the campaign ran on for two minutes")
    output = "".join(line for line in [*seen, *rest.splitlines(True)] if not line.startswith("import time:"))
    assert any(_IN_UFUZZ.search(line) for line in seen), output
    assert proc.returncode == 130, output
    assert "Aborted" not in output and "Traceback" not in output, output
    assert not (out / LOCK_NAME).exists()


def test_a_start_that_loses_the_race_for_the_lock_removes_nothing_of_the_winner(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from ufuzz.cli import main
    from ufuzz.engine import dirlock

    out = tmp_path / "night"

    def lost(directory, campaign=None):  # the other campaign took the lock and wrote its first files meanwhile
        (Path(directory) / "corpus.sqlite").write_text("theirs")
        (Path(directory) / LOCK_NAME).write_text(json.dumps({"pid": 4242, "host": "h", "campaign": "other"}))
        raise DirectoryLocked(Path(directory), {"pid": 4242, "host": "h", "campaign": "other"})

    monkeypatch.setattr(dirlock.DirectoryLock, "acquire", classmethod(lambda cls, d, c=None: lost(d, c)))
    r = CliRunner().invoke(main, ["run", "--budget", "5", "--out", str(out), "--quiet", "--no-preflight"])
    assert r.exit_code == 3 and "is in use" in r.output and "4242" in r.output, r.output
    assert (out / "corpus.sqlite").read_text() == "theirs" and (out / LOCK_NAME).exists()
