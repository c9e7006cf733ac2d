"""Starting a campaign so that a failed start leaves nothing behind.

Before anything is created, :func:`check_start` checks what a user can get wrong about where a campaign
writes: the campaign directory must be creatable and writable, and the corpus database URL usable
(:func:`ufuzz.corpus.store.check_database`: it parses, its driver is installed, a server answers, an SQLite
file is empty or a ufuzz corpus). Whatever fails later in the set-up (a backend that refuses its options, a
disk that fills) is undone by :func:`undo_on_failure`: it closes what was opened and removes every file and
folder the start created in the campaign directory — the directory itself when the start created it — so
that the directory is as it was and ``ufuzz run`` accepts it again.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ufuzz.corpus.store import CorpusDatabaseError, check_database

__all__ = ["LARGE_CHECKPOINT", "MAX_CHECKPOINT", "StartError", "check_start", "directory_problem", "size_notes",
           "undo_on_failure"]

#: memories in one checkpoint from which the set-up says what it does (building a state adds or embeds every
#: memory on the backend, once per state the campaign needs, and recording it writes every one)
LARGE_CHECKPOINT = 10_000
#: memories in one checkpoint ufuzz refuses to fuzz: every parent state and every fork is a copy of them
MAX_CHECKPOINT = 1_000_000


class StartError(ValueError):
    """A campaign cannot start where it was told to write; ``option`` names the option at fault (``--out``,
    ``--db``)."""

    def __init__(self, option: str, message: str, *, environment: bool = False) -> None:
        super().__init__(message)
        self.option = option
        self.environment = environment  # the option is right but what it names cannot be used now (exit 3)


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def directory_problem(path: Path) -> str | None:
    """Why files cannot be written in the directory ``path`` (created if missing), or None when they can.

    Checked by creating and removing one probe file in the directory, or in its nearest existing parent when
    it does not exist yet: permission bits alone say nothing on a read-only mount or for root."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        return f"{path} is a file, not a directory"
    target = path if path.exists() else _nearest_existing(path)
    if not target.is_dir():
        return f"{target} is a file, so {path} cannot be created"
    if not os.access(target, os.W_OK | os.X_OK):
        return f"{target} is not writable"
    try:
        fd, probe = tempfile.mkstemp(prefix=".ufuzz-probe-", dir=target)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"cannot write in {target}: {exc.strerror or exc}"
    return None


def check_start(out: Path, db: str | None) -> None:
    """Raise :class:`StartError` unless a campaign can write ``out`` and keep its corpus at ``db`` (None: the
    SQLite file in ``out``). Creates nothing."""
    problem = directory_problem(out)
    if problem:
        raise StartError("--out", f"cannot write the campaign directory: {problem}")
    if db is not None:
        try:
            check_database(db)
        except CorpusDatabaseError as exc:
            raise StartError("--db", str(exc), environment=exc.environment) from None


def size_notes(checkpoints: dict) -> list[str]:
    """What a user should be told before a campaign over large checkpoints starts (nothing for small ones).
    Raises :class:`StartError` (``--seeds``) for a checkpoint past :data:`MAX_CHECKPOINT`."""
    if not checkpoints:
        return []
    sizes = {cid: len(cp.memories) for cid, cp in checkpoints.items()}
    largest = max(sizes, key=lambda c: sizes[c])
    if sizes[largest] > MAX_CHECKPOINT:
        raise StartError("--seeds", f"checkpoint {largest!r} holds {sizes[largest]:,} memories; ufuzz fuzzes "
                                    f"checkpoints of at most {MAX_CHECKPOINT:,} (every state is a copy of them): "
                                    "split it or sample it")
    if sizes[largest] < LARGE_CHECKPOINT:
        return []
    total = sum(sizes.values())
    return [f"large checkpoints: {len(sizes)} holding {total:,} memories, the largest {largest!r} {sizes[largest]:,}; "
            "recording them and building each state the campaign needs (every memory added, and embedded where "
            "the backend embeds) comes before the first execution and may take minutes"]


@contextmanager
def undo_on_failure(out: Path, close: Callable[[], None]) -> Iterator[None]:
    """Run a campaign's set-up; if it raises, call ``close`` (best effort) and remove what the set-up created
    in ``out``: the whole directory (and any missing parent it created) when it did not exist before, else the
    entries that are new."""
    out = Path(out)
    existed = out.exists()
    before = set(out.iterdir()) if existed else set()
    top = out.absolute()  # the outermost folder the set-up will create
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    try:
        yield
    except BaseException:
        try:
            close()
        except Exception:  # noqa: BLE001 - undoing is best effort; the set-up's own error is what matters
            pass
        from ufuzz.engine.dirlock import DirectoryLocked

        if isinstance(sys.exc_info()[1], DirectoryLocked):
            raise  # the directory is a live campaign's: what is new in it is that campaign's, not this set-up's
        if not existed:
            shutil.rmtree(top, ignore_errors=True)
        elif out.is_dir():
            for entry in set(out.iterdir()) - before:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        raise
