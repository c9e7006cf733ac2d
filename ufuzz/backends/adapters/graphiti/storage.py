"""Where a Graphiti state's Kuzu database files live: a private RAM directory when there is room (every fork is
a file copy), else the working directory."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

#: a RAM scratch directory is used for state files only with at least this much free space there.
_SHM = Path("/dev/shm")
_SHM_MIN_FREE = 4 << 30


def state_root(workdir: Path, state_dir: str) -> Path:
    """Where state databases live. ``auto``: a private directory in RAM (``/dev/shm``, when it is a writable
    directory with room), linked from ``<workdir>/graphiti`` — every fork is a file copy, which would otherwise
    write ~13 MB to disk per mutant; ``disk``: ``<workdir>/graphiti``; any other value: a private directory
    under that path. A directory outside the working directory is removed on close, at exit, and by the worker's
    parent when a worker dies (it follows the link)."""
    link = workdir / "graphiti"
    base: Path | None = None
    if state_dir == "auto":
        try:
            if _SHM.is_dir() and os.access(_SHM, os.W_OK) and shutil.disk_usage(_SHM).free >= _SHM_MIN_FREE:
                base = _SHM
        except OSError:
            base = None
    elif state_dir != "disk":
        base = Path(state_dir).expanduser()
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"graphiti option state_dir={state_dir!r}: cannot create it ({exc})") from exc
    if link.is_symlink():
        link.unlink()
    elif base is not None and link.is_dir():  # stale states of an earlier run in this working directory
        shutil.rmtree(link)
    if base is None:
        link.mkdir(parents=True, exist_ok=True)
        return link
    workdir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="ufuzz-graphiti-", dir=base))
    try:
        link.symlink_to(root, target_is_directory=True)
    except OSError:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return root


def remove_root(workdir: Path, root: Path) -> None:
    link = workdir / "graphiti"
    if link.is_symlink():
        shutil.rmtree(root, ignore_errors=True)
        link.unlink(missing_ok=True)


