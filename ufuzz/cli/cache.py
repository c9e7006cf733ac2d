"""``ufuzz cache``: the persistent LLM call cache."""

from __future__ import annotations

import json

import click


@click.group()
def cache() -> None:
    """The persistent LLM call cache."""


@cache.command("stats")
@click.option("--path", default=None, help="Cache file (default: $UFUZZ_CACHE_DIR/llm_calls.sqlite).")
def cache_stats_cmd(path: str | None) -> None:
    from ufuzz.cli.errors import BadInput
    from ufuzz.llm.cache import cache_stats

    try:
        stats = cache_stats(path)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    click.echo(json.dumps(stats, indent=2, sort_keys=True, default=str))


@cache.command("clear")
@click.option("--path", default=None)
def cache_clear_cmd(path: str | None) -> None:
    from ufuzz.cli.errors import Unavailable
    from ufuzz.llm.cache import cache_clear

    try:
        n = cache_clear(path)
    except OSError as exc:
        raise Unavailable(str(exc)) from None
    click.echo(f"removed {n} cached calls")
