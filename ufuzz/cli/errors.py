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

__all__ = ["BAD_INPUT", "ENVIRONMENT", "INTERRUPTED", "BadInput", "Unavailable"]


class BadInput(click.ClickException):
    """Bad input that is not one option's value (a file's content, a campaign directory's): exit 2."""

    exit_code = BAD_INPUT


class Unavailable(click.ClickException):
    """A backend, endpoint, database or directory that cannot be used now: exit 3."""

    exit_code = ENVIRONMENT
