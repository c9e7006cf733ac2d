"""A real headless browser for the HTML report's tests: Debian's chromium (scripts/install_chromium.sh).

:func:`chromium` finds it (``$UFUZZ_CHROMIUM``, ``chromium``, ``chromium-browser``) or returns None with the
reason a test skips with; :func:`dump_dom` loads a local file with the flags known to work on a machine without
a network (no background networking, no sandbox as root) and returns the DOM after the page's scripts ran.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SKIP_REASON = ("no chromium: the HTML report's browser tests need Debian's chromium "
               "(bash scripts/install_chromium.sh, or apt-get install -y --no-install-recommends chromium)")

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio")


def chromium() -> str | None:
    for name in (os.environ.get("UFUZZ_CHROMIUM"), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    binary = chromium()
    if binary is None:
        raise RuntimeError(SKIP_REASON)
    with tempfile.TemporaryDirectory(prefix="ufuzz-chromium-") as profile:
        return subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=timeout, check=False)


def dump_dom(page: Path, *, budget_ms: int = 3000, timeout: float = 120) -> str:
    """The serialised DOM of ``page`` after ``budget_ms`` of virtual time (its scripts have run)."""
    res = _run([f"--virtual-time-budget={budget_ms}", "--dump-dom", page.resolve().as_uri()], timeout)
    if res.returncode != 0 or "<html" not in res.stdout:
        raise RuntimeError(f"chromium failed ({res.returncode}): {res.stderr[-800:]}")
    return res.stdout


def screenshot(page: Path, out: Path, *, size: str = "1280,2000", timeout: float = 120) -> Path:
    res = _run([f"--window-size={size}", f"--screenshot={out}", page.resolve().as_uri()], timeout)
    if res.returncode != 0 or not out.is_file():
        raise RuntimeError(f"chromium screenshot failed ({res.returncode}): {res.stderr[-800:]}")
    return out
