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
    from ufuzz.llm.cache import cache_stats

    click.echo(json.dumps(cache_stats(path), indent=2, sort_keys=True, default=str))


@cache.command("clear")
@click.option("--path", default=None)
def cache_clear_cmd(path: str | None) -> None:
    from ufuzz.llm.cache import cache_clear

    click.echo(f"removed {cache_clear(path)} cached calls")
