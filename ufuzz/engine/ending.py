"""How a campaign ended: its exit reason, the exit code that says it, and the summary file that records it.

A campaign never lies about how it ended. It ends for exactly one of these reasons, recorded in the corpus
store (``campaigns.status``, with ``message`` for an error), in ``summary.json`` and in ``ufuzz status``, and
given as the exit code of ``ufuzz run``:

==============  ====  ===========================================================================================
reason          exit  meaning
==============  ====  ===========================================================================================
budget_spent       0  every execution of the budget was spent
exhausted          4  nothing was left to try before the budget was spent (no obligation, no pool entry)
time_limit         5  the wall-time limit was reached first
error              3  the campaign could not go on: the backend failed its preflight or kept failing
                      (``--max-consecutive-errors``), the corpus could not be written (a full disk, a database
                      locked by another writer), or ufuzz itself failed; ``message`` says which
interrupted      130  Ctrl-C or SIGTERM
llm_budget_spent   6  the LLM token budget (``--max-llm-tokens``) was used up (the calls in flight finish first)
==============  ====  ===========================================================================================

(exit 1 is left to ``--fail-on``, 2 to bad usage.) Killed, interrupted and errored campaigns continue with
``ufuzz run --resume DIR``.

``summary.json`` (:class:`ufuzz.corpus.summary.CampaignSummary`) is versioned (:data:`SUMMARY_VERSION`) and
written atomically — to a temporary file in the
same directory, flushed to disk, then renamed over the old one — so a reader sees the old summary or the new
one, never half of one, even when the disk fills up.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ufuzz.corpus.summary import SUMMARY_VERSION

BUDGET_SPENT = "budget_spent"
EXHAUSTED = "exhausted"
TIME_LIMIT = "time_limit"
INTERRUPTED = "interrupted"
ERROR = "error"
LLM_BUDGET_SPENT = "llm_budget_spent"
RUNNING = "running"

#: exit code of ``ufuzz run`` per reason
EXIT_CODES = {BUDGET_SPENT: 0, EXHAUSTED: 4, TIME_LIMIT: 5, ERROR: 3, INTERRUPTED: 130, LLM_BUDGET_SPENT: 6}
REASONS = tuple(EXIT_CODES)


__all__ = ["BUDGET_SPENT", "EXHAUSTED", "TIME_LIMIT", "INTERRUPTED", "ERROR", "LLM_BUDGET_SPENT", "RUNNING",
           "EXIT_CODES", "INTERNAL_ERROR", "environmental",
           "REASONS", "SUMMARY_VERSION", "write_atomic", "write_summary", "describe", "process_alive"]


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step: a temporary file beside it, fsync'ed, then renamed. On any
    error the old file is left as it was and the temporary file is removed."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n")


def process_alive(pid: int | None, host: str | None) -> bool | None:
    """Whether process ``pid`` on ``host`` still runs: True/False on this host, None when it cannot be told
    (another host, or no pid recorded)."""
    import socket

    if not pid or not host or host != socket.gethostname():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's process
        return True
    except (OSError, ValueError, OverflowError):
        return None
    try:  # a zombie (killed, not yet reaped by its parent) runs no more
        with open(f"/proc/{int(pid)}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


#: the exit code of a campaign ended by a fault of ufuzz's own (an exception that is no backend's, endpoint's,
#: database's or file system's): not "the environment" (3), which a nightly job reads as "the product is down"
INTERNAL_ERROR = 70


def environmental(exc: BaseException) -> bool:
    """Whether ``exc`` is the environment's (a backend, an LLM endpoint, a database, the file system: exit 3),
    rather than a fault of ufuzz's own (exit :data:`INTERNAL_ERROR`)."""
    from ufuzz.backends.protocol import BackendError
    from ufuzz.llm.client import LLMError

    if isinstance(exc, (BackendError, LLMError, OSError)):  # OSError: the file system, sockets, timeouts
        return True
    # a database driver's error, wrapped by SQLAlchemy (its module is sqlalchemy.exc) or raised as is
    return any(c.__module__.split(".")[0] in ("sqlalchemy", "sqlite3", "psycopg", "psycopg2")
               for c in type(exc).__mro__)


def describe(exc: BaseException) -> str:
    """One line for a user about ``exc``: its type and first line, with a database driver's own error
    instead of SQLAlchemy's wrapper (which appends the statement and its parameters)."""
    orig = getattr(exc, "orig", None)
    inner = orig if isinstance(orig, BaseException) else exc
    text = str(inner).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(inner).__name__}: {first}" if first else type(inner).__name__
