"""One writer per campaign directory: a lock held for the campaign's whole life.

Two campaigns writing one directory lose data silently: a nightly ``ufuzz run --force --out D`` that starts
while last night's campaign still runs in ``D`` would delete the live campaign's files, and the old campaign
would later overwrite the new one's ``summary.json``. So a campaign takes ``D/.ufuzz.lock`` before it writes
anything there and keeps it until it has recorded its end; ``--force``, a second ``run`` and ``--resume``
refuse a directory whose lock is held (:class:`DirectoryLocked`, exit 3 — the directory is busy, as a locked
store is).

Who holds it is told three ways, as ``ufuzz status`` tells a live campaign from a dead one:

* an ``flock`` on the open lock file — the kernel drops it when its process dies, even by SIGKILL, so a lock
  left by a killed campaign is free at once on this host;
* the pid and host written in the file, for the message and for filesystems without ``flock``;
* a heartbeat: the file's modification time, touched every 30 s by the campaign's heartbeat; a lock of
  another host whose heartbeat is older than :data:`STALE_SECONDS` is taken for dead.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from ufuzz.engine.ending import process_alive

LOCK_NAME = ".ufuzz.lock"
#: a lock of another host whose heartbeat is older than this is stale (as ``ufuzz status`` judges liveness)
STALE_SECONDS = 15 * 60

__all__ = ["LOCK_NAME", "STALE_SECONDS", "DirectoryLocked", "DirectoryLock", "holder"]


class DirectoryLocked(RuntimeError):
    """The campaign directory is in use by a live campaign (``holder`` says whose)."""

    def __init__(self, path: Path, holder: dict[str, Any]) -> None:
        self.path, self.holder = Path(path), holder
        age = holder.get("heartbeat_age_seconds")
        beat = f", heartbeat {age:.0f} s ago" if isinstance(age, (int, float)) else ""
        who = f"process {holder.get('pid', '?')} on {holder.get('host', '?')}{beat}"
        cid = f"campaign {holder['campaign']} " if holder.get("campaign") else "a campaign "
        super().__init__(f"{self.path} is in use: {cid}is running there ({who}); wait for it to end or stop it "
                         "(Ctrl-C or SIGTERM), then try again")


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _flock(fd: int) -> bool | None:
    """Try to take the ``flock``: True taken, False held by another process, None unsupported here."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        return None  # e.g. ENOLCK on a network filesystem: pid, host and heartbeat decide


def _alive_by_record(path: Path, data: dict[str, Any]) -> bool:
    """Without ``flock``: whether the process the lock file names still runs (its heartbeat for another
    host)."""
    if not data.get("pid"):
        return False
    alive = process_alive(data.get("pid"), data.get("host"))
    if alive is not None:
        return alive and int(data["pid"]) != os.getpid()
    try:
        return time.time() - path.stat().st_mtime < STALE_SECONDS
    except OSError:
        return False


def holder(directory: str | Path) -> dict[str, Any] | None:
    """Who holds the directory's lock (pid, host, campaign, heartbeat age), or None when it is free. Reads
    only: it takes the ``flock`` for an instant at most, and writes nothing."""
    path = Path(directory) / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        taken = _flock(fd)
        data = _read(path)
        try:
            data["heartbeat_age_seconds"] = round(time.time() - os.fstat(fd).st_mtime, 1)
        except OSError:
            pass
        if taken is None:
            return data if _alive_by_record(path, data) else None
        if taken:
            if data.get("host") not in (None, socket.gethostname()) and _alive_by_record(path, data):
                return data  # another host's campaign on a shared filesystem whose flock does not reach here
            return None
        return data
    finally:
        os.close(fd)


class DirectoryLock:
    """The lock of one campaign directory, held by this process from :meth:`acquire` to :meth:`release`."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / LOCK_NAME
        self._fd: int | None = None

    @classmethod
    def acquire(cls, directory: str | Path, campaign: str | None = None) -> DirectoryLock:
        """Take the lock of ``directory`` (which must exist), or raise :class:`DirectoryLocked`."""
        lock = cls(directory)
        for _ in range(5):  # the file may be replaced between open and flock (a holder releasing it)
            fd = os.open(lock.path, os.O_RDWR | os.O_CREAT, 0o644)
            taken = _flock(fd)
            data = _read(lock.path)
            if taken is False or (taken is None and _alive_by_record(lock.path, data)) or (
                    taken and data.get("host") not in (None, socket.gethostname())
                    and _alive_by_record(lock.path, data)):
                os.close(fd)
                try:
                    data["heartbeat_age_seconds"] = round(time.time() - lock.path.stat().st_mtime, 1)
                except OSError:
                    pass
                raise DirectoryLocked(Path(directory), data)
            try:
                same = os.fstat(fd).st_ino == os.stat(lock.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            lock._fd = fd
            lock.write(campaign)
            return lock
        raise DirectoryLocked(Path(directory), {})

    def write(self, campaign: str | None) -> None:
        """Name the holder in the file (pid, host, campaign, start time)."""
        if self._fd is None:
            return
        text = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "campaign": campaign,
                           "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}) + "\n"
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, text.encode("utf-8"), 0)

    def beat(self) -> None:
        """The heartbeat: the lock file's modification time is now."""
        if self._fd is not None:
            try:
                os.utime(self._fd)
            except OSError:
                pass

    def moved(self, directory: str | Path) -> None:
        """The directory was renamed (``--force`` sets the old campaign aside): the lock went with it."""
        self.path = Path(directory) / LOCK_NAME

    def release(self) -> None:
        """Remove the lock file and drop the lock (removed first, so that no one takes the old file)."""
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass
        try:
            os.close(self._fd)
        finally:
            self._fd = None

    def __enter__(self) -> DirectoryLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
