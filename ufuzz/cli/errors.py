"""Exit codes by class, the same for every command.

======  ======================================================================================================
exit    meaning
======  ======================================================================================================
0       done (``ufuzz run``: the budget was spent)
1       what the command was asked to find: ``--fail-on`` failures (``run``), a regression (``corpus check``),
        a failure that does not reproduce (``replay``), a preflight that failed (``backends check``)
2       bad input: an option, an argument or a file (named as ``file:line`` or the option); nothing is written
3       the environment: a backend, an LLM endpoint or a database that cannot be reached or used, a corpus
        locked by another writer, a campaign directory in use by a live campaign (:mod:`ufuzz.engine.dirlock`)
4, 5    ``ufuzz run`` only: the campaign was exhausted (4) or hit ``--max-time`` (5)
6       ``ufuzz run`` only: ``--max-llm-tokens`` spent
70      ``ufuzz run`` only: the campaign ended on a fault of ufuzz's own (a bug to report; never the system's)
130     interrupted (Ctrl-C, SIGTERM), also during start-up
======  ======================================================================================================

:class:`BadInput` and :class:`Unavailable` are click exceptions with those codes (click's own usage errors
exit 2 already); a click exception with neither class exits 1, which only the "found" results above may use.
"""

from __future__ import annotations

import click

BAD_INPUT = 2
ENVIRONMENT = 3
INTERRUPTED = 130

__all__ = ["BAD_INPUT", "ENVIRONMENT", "INTERRUPTED", "BadInput", "Unavailable", "read_error", "read_errors"]


class BadInput(click.ClickException):
    """Bad input that is not one option's value (a file's content, a campaign directory's): exit 2."""

    exit_code = BAD_INPUT


class Unavailable(click.ClickException):
    """A backend, endpoint, database or directory that cannot be used now: exit 3."""

    exit_code = ENVIRONMENT


def read_error(exc: BaseException) -> click.ClickException:
    """What a command that reads a campaign or a file says about ``exc``: a corpus database locked by another
    writer or not answering is the environment (3); a directory, file or database that is not what it should
    be (missing, damaged, another program's, naming an unknown campaign) is bad input (2)."""
    from sqlalchemy.exc import SQLAlchemyError

    from ufuzz.corpus.store import CorpusDatabaseError
    from ufuzz.engine.ending import describe

    if isinstance(exc, CorpusDatabaseError) and exc.environment:
        return Unavailable(str(exc))
    if isinstance(exc, SQLAlchemyError):
        return Unavailable(f"corpus database: {describe(exc)}")
    if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
        return Unavailable(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))
    return BadInput(str(exc).strip("'\""))


#: what reading a campaign can raise (see :func:`read_error`)
def read_errors() -> tuple[type[BaseException], ...]:
    from sqlalchemy.exc import SQLAlchemyError

    return (FileNotFoundError, ValueError, KeyError, SQLAlchemyError)
