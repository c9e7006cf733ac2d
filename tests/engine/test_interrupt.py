"""Ctrl-C stops a campaign cleanly: the summary is written and the store is consistent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 130)], ids=["SIGINT", "SIGTERM"])
def test_signal_writes_summary_and_exits_130(tmp_path, sig, code):
    out = tmp_path / "c"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "ufuzz", "run", "--budget", "100000", "--out", str(out),
                             "--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = out / "campaign.log"
    deadline = time.time() + 240
    while time.time() < deadline:
        if log.exists() and log.read_text().count('"event": "started"') and (out / "corpus.sqlite").exists():
            break
        time.sleep(0.5)
    from ufuzz.reports.status import campaign_status

    live = campaign_status(Path(out))  # another process reads it while it runs
    while time.time() < deadline and not live.get("executions"):  # interrupt it once it has executed something
        time.sleep(0.2)
        live = campaign_status(Path(out))
    assert live["status"] == "running" and live["alive"] is True and live["pid"] == proc.pid
    proc.send_signal(sig)
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == code, output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert 0 < summary["executions"] < 100000
    from ufuzz.reports.status import campaign_status

    st = campaign_status(Path(out))
    assert st["status"] == "interrupted" and st["executions"] == summary["executions"]
