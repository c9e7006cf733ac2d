"""``ufuzz seeds``: synthesize or import seed suites."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ufuzz.cli.errors import BadInput, Unavailable
from ufuzz.cli.options import SEED, Finite, check_output_file


@click.group()
def seeds() -> None:
    """Build or import seed suites."""


@seeds.command("synth")
@click.option("--personas", type=click.IntRange(min=1, max=10000), default=12, show_default=True)
@click.option("--seed", "rng_seed", type=SEED, default=7, show_default=True)
@click.option("--queries", type=click.IntRange(min=1, max=100), default=8, show_default=True,
              help="Queries per persona.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
def seeds_synth(personas: int, rng_seed: int, queries: int, output: str) -> None:
    """Synthetic persona checkpoints with templated queries and references."""
    from ufuzz.seeds.io import write_suite
    from ufuzz.seeds.synth import header, synthesize

    check_output_file(output)
    suite = synthesize(personas=personas, seed=rng_seed, queries_per_persona=queries)
    _write(lambda: write_suite(suite, output, header=header(personas, rng_seed, queries)), output)
    click.echo(f"wrote {len(suite.seeds)} seeds over {len(suite.checkpoints)} checkpoints to {output}")


@seeds.command("import")
@click.argument("fmt", metavar="FORMAT")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
@click.option("--llm-base-url", default=None, help="OpenAI-compatible endpoint for the LLM field extractor.")
@click.option("--llm-model", default=None, help="Model name for the LLM field extractor.")
@click.option("--llm-api-key-env", default="OPENAI_API_KEY", show_default=True)
@click.option("--llm-timeout", type=Finite(min=0, max=3600, min_open=True), default=30, show_default=True,
              help="Seconds one LLM request may take.")
@click.option("--llm-retries", type=click.IntRange(min=0, max=10), default=2, show_default=True,
              help="Retries of a failed LLM request, with exponential backoff.")
@click.option("--allow-partial", is_flag=True,
              help="Import a file that looks truncated (evidence pointing to sessions it does not hold); "
                   "without it such a file is refused (exit 2).")
def seeds_import(fmt: str, file: str, output: str, llm_base_url: str | None, llm_model: str | None,
                 llm_api_key_env: str, llm_timeout: float, llm_retries: int, allow_partial: bool) -> None:
    """Import a benchmark file as a seed suite (FORMAT: one of the importers, e.g. locomo or longmemeval; an
    unknown one is answered with the full list)."""
    from ufuzz.seeds.importers import import_file, importers
    from ufuzz.seeds.io import write_suite

    known = importers()
    if fmt not in known:
        raise click.BadParameter(f"unknown format {fmt!r}; one of: {', '.join(sorted(known))}",
                                 param_hint="'FORMAT'")
    if not Path(file).is_file():
        raise click.BadParameter(f"no such file: {file}", param_hint="'FILE'")
    check_output_file(output)
    extractor = None
    if llm_base_url:
        from ufuzz.llm import CallCache, LLMClient, LLMConfig
        from ufuzz.llm.uses import FieldExtractor

        config = LLMConfig(base_url=llm_base_url, model=llm_model or "default", api_key_env=llm_api_key_env,
                           timeout=llm_timeout, max_retries=llm_retries)
        extractor = FieldExtractor(LLMClient(config, CallCache()))
    try:
        result = import_file(fmt, file, extractor=extractor)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    partial = {w: result.warnings[w] for w in PARTIAL_WARNINGS if result.warnings.get(w, 0) >= PARTIAL_AT}
    if partial and not allow_partial:
        raise BadInput(f"{file}: looks truncated: {', '.join(f'{w}: {n}' for w, n in partial.items())} "
                       "(evidence points to sessions the file does not hold); nothing written — pass "
                       "--allow-partial to import what is there")
    if not result.suite.seeds:
        raise BadInput(f"{file}: no seed could be imported (dropped: {dict(result.dropped)})")
    _write(lambda: write_suite(result.suite, output, header={"generator": f"ufuzz seeds import {fmt}",
                                                             "source": Path(file).name}), output)
    click.echo(f"wrote {len(result.suite.seeds)} seeds over {len(result.suite.checkpoints)} checkpoints to {output}")
    for what, n in sorted(result.warnings.items()):
        click.echo(f"  warning: {what}: {n}")
    for what, n in sorted(result.dropped.items()):
        click.echo(f"  dropped: {what}: {n}")


@seeds.command("schema")
def seeds_schema() -> None:
    """Print the JSON Schema of a seed file's lines (the committed copy is seeds/schema.json)."""
    from ufuzz.seeds.schema import json_schema

    click.echo(json.dumps(json_schema(), indent=2, sort_keys=True))


@seeds.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
def seeds_check(file: str) -> None:
    """Validate a seed file: each line against its schema, and the links between lines (exit 2 if bad)."""
    from ufuzz.operators import names
    from ufuzz.seeds.io import SeedFileError, load_suite

    try:
        suite = load_suite(file, memory_ops=names("state"))
    except SeedFileError as exc:
        raise BadInput(str(exc)) from None
    memories = sum(len(c.memories) for c in suite.checkpoints.values())
    click.echo(f"{file}: ok — {len(suite.seeds)} seeds, {len(suite.checkpoints)} checkpoints, {memories} memories")


#: importer warnings that say the file was cut short: refused unless --allow-partial
PARTIAL_WARNINGS = ("evidence_in_missing_session",)
#: from this many on (a stray id or two is an annotation slip, and stays a warning)
PARTIAL_AT = 3


def _write(write, output: str) -> None:
    """Run ``write`` (an atomic write of ``output``); an OS error is a clear message, not a traceback."""
    try:
        write()
    except OSError as exc:
        raise Unavailable(f"cannot write {output}: {exc.strerror or exc}") from None
