"""Option parsing shared by the commands: ``--opt KEY=VALUE`` values, ``--config`` TOML files, bounded
numbers, and output files checked before anything is written.

Every numeric flag has bounds (:data:`SEED`, :data:`BUDGET` …): ``--budget 10**30`` is a usage error naming
the option, never an overflow deep in the database. Floats are finite (:class:`Finite`): click's own
``FloatRange`` lets ``nan`` through, since every comparison with NaN is false.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

#: 64-bit signed: what the corpus store keeps a campaign seed in
SEED = click.IntRange(min=-(2**63), max=2**63 - 1)
#: executions per campaign
BUDGET = click.IntRange(min=1, max=10**9)
#: a count that may be 0 (worker recycling, retries) but not absurd
COUNT = click.IntRange(min=0, max=10**9)


class Finite(click.FloatRange):
    """A ``FloatRange`` that refuses NaN and ±Infinity."""

    name = "finite float range"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        rv = super().convert(value, param, ctx)
        if isinstance(rv, float) and not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


def _parse_value(raw: str) -> Any:
    """``true``/``false``, an integer, a finite float, else the string itself (``nan`` and ``inf`` stay
    strings, so that a backend expecting a number refuses them by name)."""
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        value = float(raw)
    except ValueError:
        return raw
    return value if math.isfinite(value) else raw


def parse_opts(values: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for v in values:
        key, sep, raw = v.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {v!r}", param_hint="'--opt'")
        out[key.strip()] = _parse_value(raw.strip())
    return out


def backend_options(opts: tuple[str, ...], config_file: str | None, *, resolve: bool = False) -> dict[str, Any]:
    """The backend options of ``--opt`` and ``--config``, as every command that starts a backend reads them: the
    config file must be a file (a clear usage error otherwise, before anything starts), given once (``--config`` and
    a different ``--opt config=`` are refused); ``resolve``: stored as an absolute path (a corpus check or minimise
    run from elsewhere later)."""
    options = parse_opts(opts)
    if not config_file:
        return options
    p = Path(config_file)
    if not p.is_file():
        raise click.BadParameter(f"{config_file} is a directory, not a TOML file" if p.is_dir()
                                 else f"no such file: {config_file}", param_hint="'--config'")
    given = options.get("config")
    if given is not None and Path(str(given)).resolve() != p.resolve():
        raise click.BadParameter(f"two config files: --config {config_file} and --opt config={given}; give one",
                                 param_hint="'--config'")
    options["config"] = str(p.resolve()) if resolve else (given if given is not None else config_file)
    return options


def output_file_problem(path: str | Path) -> str | None:
    """Why the file ``path`` cannot be written (a directory is in the way, its folder is not writable), or
    None. Checked before the work that produces it, so that a long import is not lost at the last step."""
    from ufuzz.engine.startup import directory_problem

    p = Path(path)
    if p.is_dir():
        return f"{p} is a directory"
    return directory_problem(p.parent)


def check_output_file(path: str | Path, hint: str = "'-o' / '--output'") -> None:
    """:func:`output_file_problem` as a usage error naming the option."""
    problem = output_file_problem(path)
    if problem:
        raise click.BadParameter(f"cannot write {path}: {problem}", param_hint=hint)
