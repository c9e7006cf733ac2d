"""The ``ufuzz`` command line: one module per command (group), registered on :func:`main` here."""

from __future__ import annotations

import os

import click

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from ufuzz.cli import (  # noqa: E402
    backends,
    bench,
    cache,
    corpus,
    failures,
    minimise,
    replay,
    report,
    run,
    seeds,
    status,
    strategies,
)
from ufuzz.cli.options import load_config_file, parse_opts  # noqa: E402

__all__ = ["main", "parse_opts", "load_config_file"]


@click.group()
@click.version_option(package_name="ufuzz")
def main() -> None:
    """ufuzz — a coverage-guided fuzzer for the persistent memory of LLM agents."""


main.add_command(run.run)
main.add_command(status.status)
main.add_command(seeds.seeds)
main.add_command(backends.backends)
main.add_command(cache.cache)
main.add_command(replay.replay)
main.add_command(bench.bench)
main.add_command(corpus.corpus)
main.add_command(strategies.strategies)
main.add_command(failures.failures)
main.add_command(minimise.minimise)
main.add_command(report.report)
