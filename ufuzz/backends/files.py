"""File and memory helpers for adapters whose states are database files or directories (Graphiti on Kuzu; mem0 and
MemOS over a local vector store).

A state fork copies a database file (:func:`clone_file`) or a state directory (:func:`copy_state_dir`, SQLite files by
online backup). Where the file system can share extents (btrfs, XFS, bcachefs: the ``FICLONE`` ioctl) a file's copy
is a reflink and writes nothing; elsewhere (ext4, tmpfs) it is a *sparse* copy that skips all-zero blocks — about
half of a Kuzu file — so those blocks are neither written nor stored.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

_FICLONE = 0x40049409  # _IOW(0x94, 9, int), linux/fs.h
_BLOCK = 1 << 16
_ZERO = bytes(_BLOCK)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_LIBC: Any = None


def _reflink(src: Path, dst: Path) -> bool:
    try:
        import fcntl
    except ImportError:  # not on Linux
        return False
    with open(src, "rb") as fs, open(dst, "wb") as fd:
        try:
            fcntl.ioctl(fd.fileno(), _FICLONE, fs.fileno())
            return True
        except OSError:
            return False


def _sparse_copy(src: Path, dst: Path) -> None:
    """Copy ``src`` block by block, seeking over all-zero blocks (the file keeps its size; holes read as 0)."""
    with open(src, "rb") as fs, open(dst, "wb") as fd:
        while True:
            block = fs.read(_BLOCK)
            if not block:
                break
            if block == _ZERO[: len(block)]:
                fd.seek(len(block), os.SEEK_CUR)
            else:
                fd.write(block)
        fd.truncate()  # a trailing hole still counts in the size


def clone_file(src: Path, dst: Path) -> str:
    """Copy ``src`` to ``dst`` as cheaply as the file system allows; returns "reflink" or "sparse"."""
    if _reflink(src, dst):
        shutil.copystat(src, dst)
        return "reflink"
    _sparse_copy(src, dst)
    shutil.copystat(src, dst)
    return "sparse"


def resident_mb() -> float:
    """Resident memory of this process in MB (0 where /proc is missing)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * _PAGE / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def trim_heap() -> None:
    """Give freed heap back to the system (glibc keeps freed native memory of closed databases in its arenas,
    so the resident size would track the most databases ever open, not the ones open now)."""
    global _LIBC
    if _LIBC is None:
        try:
            import ctypes

            _LIBC = ctypes.CDLL("libc.so.6")
            _LIBC.malloc_trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)


def remove_linked_dirs(folder: Path) -> None:
    """Remove the directories that symbolic links directly inside ``folder`` point to (scratch directories an
    adapter keeps outside its working directory, e.g. in RAM), so deleting ``folder`` leaves nothing behind."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for p in entries:
        if p.is_symlink():
            target = Path(os.path.realpath(p))
            if target.is_dir():
                shutil.rmtree(target, ignore_errors=True)
            p.unlink(missing_ok=True)


def copy_state_dir(src: Path, dst: Path) -> None:
    """Copy a state directory: SQLite files by online backup (a consistent snapshot), others plainly; lock, journal
    and WAL files are left behind."""
    for root, _dirs, files in os.walk(src):
        rel = Path(root).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            if name == ".lock" or name.endswith(("-journal", "-wal", "-shm")):
                continue
            s, d = Path(root) / name, dst / rel / name
            if _is_sqlite(s):
                source = sqlite3.connect(f"file:{s}?mode=ro", uri=True)
                target = sqlite3.connect(d)
                try:
                    source.backup(target)
                finally:
                    target.close()
                    source.close()
            else:
                shutil.copy2(s, d)


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False
